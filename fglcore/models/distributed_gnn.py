r"""The backbones of the local-bias paper's distributed GNN: GCN and 1-GNN layers usable block by block.

Zhang et al., "Tackling the Local Bias in Federated Graph Learning"
(arXiv 2110.12906), Sec. 3.1 (Eq. 2) and Sec. 5 ("Ours+GCN", "Ours+1-GNN"):

* ``"gcn"`` (Kipf & Welling, ICLR 2017): :math:`H^{(l)} = \sigma(\hat L H^{(l-1)} W^{(l)} + b^{(l)})`,
  :math:`\hat L = \hat D^{-1/2}(A+I)\hat D^{-1/2}` -- PyG ``GCNConv``;
* ``"1gnn"`` (Morris et al., AAAI 2019, k-GNN with k = 1; digest A18):
  :math:`H^{(l)} = \sigma(H^{(l-1)} W_1^{(l)} + A H^{(l-1)} W_2^{(l)} + b^{(l)})`,
  sum aggregation -- PyG ``GraphConv(aggr="add")``.

The layers are PyG's own modules (same parameters, same initialisation);
:meth:`DistributedGNN.forward` is the ordinary centralised model on one
graph. The distributed engine (:mod:`fglcore.distributed.trainer`) uses the
same weights through :meth:`neighbour_input`, :meth:`root_term` and
:meth:`finish`: a layer's output is
``finish(l, A_blocks @ neighbour_input(l, h) + root_term(l, h))``, which is
Eq. 2's block decomposition of the layer. Dropout acts on the input of every
layer (digest A16; ``input_dropout=False`` spares the features).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import GCNConv, GraphConv

from fglcore.models.operators import GraphOperators, apply_conv

BACKBONES = ("gcn", "1gnn")


class DistributedGNN(nn.Module):
    r"""``num_layers`` GCN or 1-GNN layers, ReLU between them, raw logits out.

    Args:
        backbone (str): ``"gcn"`` or ``"1gnn"``.
        in_channels (int): feature width :math:`d`.
        hidden_channels (int): hidden width.
        out_channels (int): number of classes :math:`c`.
        num_layers (int): :math:`L`.
        dropout (float): dropout rate on each layer's input.
        input_dropout (bool): drop the input features too (the first layer's input).

    Shapes:
        - **input:** node features :math:`(|\mathcal V|, d)`, edge indices :math:`(2, |\mathcal E|)`
        - **output:** logits :math:`(|\mathcal V|, c)`
    """

    def __init__(self, backbone: str, in_channels: int, hidden_channels: int, out_channels: int,
                 num_layers: int = 2, dropout: float = 0.0, input_dropout: bool = True):
        super().__init__()
        if backbone not in BACKBONES:
            raise ValueError(f"backbone: {backbone!r} is not accepted; accepted: {', '.join(BACKBONES)}")
        self.backbone = backbone
        self.dropout = float(dropout)
        self.input_dropout = bool(input_dropout)
        dims = [in_channels] + [hidden_channels] * (num_layers - 1) + [out_channels]
        if backbone == "gcn":
            convs = [GCNConv(a, b) for a, b in zip(dims[:-1], dims[1:])]
        else:
            convs = [GraphConv(a, b, aggr="add") for a, b in zip(dims[:-1], dims[1:])]
        self.convs = nn.ModuleList(convs)
        self.dims = dims

    @property
    def num_layers(self) -> int:
        return len(self.convs)

    def reset_parameters(self) -> None:
        for conv in self.convs:
            conv.reset_parameters()

    def drops(self, layer: int) -> bool:
        """Whether dropout acts on the input of ``layer``."""
        return self.dropout > 0 and (layer > 0 or self.input_dropout)

    accepts_graph_operators = True
    """A full-batch trainer may pass the graph's sparse operators for ``edge_index``
    (:func:`~fglcore.models.operators.apply_conv`: PyG's numbers bit for bit, GCN and 1-GNN as CSR products)."""

    def forward(self, x: Tensor, edge_index: Tensor | GraphOperators) -> Tensor:
        """The centralised model on one graph (PyG's layers; on :class:`GraphOperators`, the same layers as sparse
        products)."""
        h = x
        for layer, conv in enumerate(self.convs):
            if self.drops(layer):
                h = F.dropout(h, self.dropout, self.training)
            h = apply_conv(conv, h, edge_index)
            if layer < self.num_layers - 1:
                h = h.relu()
        return h

    # -- the block form used by the distributed engine ------------------------------------------------

    def neighbour_input(self, layer: int, h: Tensor) -> Tensor:
        """What the adjacency blocks multiply: :math:`H W` (GCN) or :math:`H W_2` (1-GNN), no bias;
        ``h`` may be a sparse COO matrix (bag-of-words features)."""
        conv = self.convs[layer]
        return _times_transposed(h, conv.lin.weight if self.backbone == "gcn" else conv.lin_rel.weight)

    def root_term(self, layer: int, h: Tensor) -> Tensor | None:
        """The 1-GNN self term :math:`H W_1`; ``None`` for GCN (its self-loop is in :math:`\\hat L`)."""
        if self.backbone == "gcn":
            return None
        return _times_transposed(h, self.convs[layer].lin_root.weight)

    def finish(self, layer: int, z: Tensor) -> Tensor:
        """Add the layer's bias to the aggregated pre-activation."""
        conv = self.convs[layer]
        bias = conv.bias if self.backbone == "gcn" else conv.lin_rel.bias
        return z + bias if bias is not None else z


def _times_transposed(h: Tensor, weight: Tensor) -> Tensor:
    """:math:`h W^\\top` for a dense or sparse ``h``."""
    return torch.sparse.mm(h, weight.t()) if h.is_sparse else F.linear(h, weight)
