"""FED-PUB's masked GCN: GCN layers and a linear classifier whose weights are multiplied by learnable masks.

Baek, Jeong, Jin, Yoon and Hwang, "Personalized Subgraph Federated
Learning", ICML 2023 (arXiv 2206.10206), Sec. "Personalized sparse masks":
each client's effective weights are :math:`\\theta_i \\odot \\mu_i`, the
(personalised, downloaded) weights :math:`\\theta_i` times a local,
real-valued mask :math:`\\mu_i` of the same shape, which the L1 term of the
local objective drives towards sparsity. The layout follows the official
code (``JinheonBaek/FED-PUB``, ``models/nets.py`` ``MaskedGCN`` and
``models/layers.py``; OpenFGL's ``flcore/fedpub/maskedgcn.py`` is a copy):

.. math::
    H^{(1)} = \\mathrm{ReLU}(\\hat A X (W^{(1)} \\odot M^{(1)})^\\top + b^{(1)}),\\quad
    H^{(\\ell)} = \\hat A\\, \\mathrm{dropout}(H^{(\\ell-1)}) (W^{(\\ell)} \\odot M^{(\\ell)})^\\top + b^{(\\ell)},

    \\hat Y = \\mathrm{dropout}(\\mathrm{ReLU}(H^{(L)})) (W^{(c)} \\odot M^{(c)})^\\top + b^{(c)},

with :math:`\\hat A = \\tilde D^{-1/2}(A + I)\\tilde D^{-1/2}` (PyG's
``GCNConv``), ``num_layers`` masked GCN layers (the code: 2, in -> hidden ->
hidden; ReLU and dropout between them) and a masked linear classifier. The
last GCN layer's output :math:`H^{(L)}` (before its ReLU) is what
:meth:`MaskedGCN.embed` returns: averaged over a random graph's nodes it is
the client's *functional embedding* (the code's ``is_proxy=True`` forward).

In eval mode every mask entry with :math:`|\\mu| <` ``prune_threshold`` is
set to 0 (the code's ``prune``, threshold = its ``l1`` coefficient, 1e-3);
training uses the masks as they are. Masks start at 1 (``mask_init="ones"``,
the code's ``--laye-mask-one --clsf-mask-one``, used by its scripts and by
OpenFGL) or Glorot-uniform (``"glorot"``, the code's parser default).
Initialisation of the weights as the code: GCN weights Glorot, GCN biases 0,
classifier weight and bias Glorot-uniform (the bias as a ``(1, C)`` matrix,
i.e. uniform in :math:`\\pm\\sqrt{6/(1+C)}`).
"""
from __future__ import annotations

from typing import Iterator

import torch.nn.functional as F
from torch import Tensor, nn

from fglcore.models.masked_gcn_conv import MaskedGCNConv
from fglcore.models.masked_linear import MASK_INITS, MaskedLinear
from fglcore.models.operators import GraphOperators, apply_conv

__all__ = ["MASK_INITS", "MaskedGCN"]


class MaskedGCN(nn.Module):
    r"""FED-PUB's client model (Baek et al., ICML 2023; see :mod:`fglcore.models.masked_gcn`).

    ``num_layers`` :class:`MaskedGCNConv` layers (``in -> hidden -> ... -> hidden``)
    and a :class:`MaskedLinear` classifier ``hidden -> out``. The GCN layers
    do not cache :math:`\hat A`: the same model also runs on the server's
    random graph (:meth:`embed`). Like :class:`~fglcore.models.stacked.StackedGNN`
    it accepts, in place of ``edge_index``, the graph's sparse operators
    (:class:`~fglcore.models.operators.GraphOperators`; the trainers' fast
    path), with which each layer is one CSR product, the same numbers as PyG's
    scatter (:mod:`fglcore.models.operators`).

    Args:
        in_channels (int): node feature width :math:`F`.
        hidden_channels (int): hidden width (the code's ``n_dims``).
        out_channels (int): number of classes :math:`C`.
        num_layers (int): masked GCN layers (the code: 2).
        dropout (float): dropout rate after each hidden ReLU (the code: 0.5).
        mask_init (str): ``"ones"`` (the code's scripts) or ``"glorot"``.
        prune_threshold (float): eval-mode mask pruning threshold (the code: its ``l1``, 1e-3).

    Shapes:
        - **input:** node features :math:`(|\mathcal{V}|, F)`, edge indices :math:`(2, |\mathcal{E}|)`
          (or the graph's :class:`~fglcore.models.operators.GraphOperators`)
        - **output:** logits :math:`(|\mathcal{V}|, C)`; :meth:`embed`: :math:`(|\mathcal{V}|, \mathrm{hidden})`
    """

    accepts_graph_operators = True

    def __init__(self, in_channels: int, hidden_channels: int, out_channels: int, num_layers: int = 2,
                 dropout: float = 0.5, mask_init: str = "ones", prune_threshold: float = 1e-3):
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"num_layers: must be >= 1, got {num_layers}")
        widths = [in_channels] + [hidden_channels] * num_layers
        self.convs = nn.ModuleList(
            MaskedGCNConv(a, b, mask_init=mask_init, prune_threshold=prune_threshold)
            for a, b in zip(widths[:-1], widths[1:]))
        self.classifier = MaskedLinear(hidden_channels, out_channels, mask_init=mask_init,
                                       prune_threshold=prune_threshold, bias_init="glorot")
        self.dropout = float(dropout)

    def reset_parameters(self) -> None:
        for conv in self.convs:
            conv.reset_parameters()
        self.classifier.reset_parameters()

    def masked_layers(self) -> Iterator[MaskedLinear]:
        """Every :class:`MaskedLinear` (the GCN layers' and the classifier)."""
        return (m for m in self.modules() if isinstance(m, MaskedLinear))

    def masks(self) -> list[nn.Parameter]:
        """The mask parameters :math:`\\mu`, in layer order."""
        return [m.mask for m in self.masked_layers()]

    def sparsity(self) -> float:
        """Share of mask entries that eval-mode pruning zeroes (the code's ``get_sparsity``)."""
        pruned = sum(int((m.mask.detach().abs() < m.prune_threshold).sum()) for m in self.masked_layers())
        total = sum(m.mask.numel() for m in self.masked_layers())
        return pruned / total

    def embed(self, x: Tensor, graph: Tensor | GraphOperators) -> Tensor:
        """The last GCN layer's output, before its ReLU (the code's ``is_proxy=True`` forward)."""
        for i, conv in enumerate(self.convs):
            if i > 0:
                x = F.dropout(F.relu(x), p=self.dropout, training=self.training)
            x = apply_conv(conv, x, graph)
        return x

    def forward(self, x: Tensor, graph: Tensor | GraphOperators) -> Tensor:
        h = F.dropout(F.relu(self.embed(x, graph)), p=self.dropout, training=self.training)
        return self.classifier(h)
