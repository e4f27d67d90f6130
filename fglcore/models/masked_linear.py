r"""FED-PUB's masked linear map :math:`x (W \odot M)^\top + b` (Baek et al., ICML 2023, Sec. "Personalized
sparse masks"; the official code's ``MaskedLinear`` / ``MaksedGCNLinear``). Used by
:class:`~fglcore.models.masked_gcn_conv.MaskedGCNConv` and :class:`~fglcore.models.masked_gcn.MaskedGCN`."""
from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch_geometric.nn.inits import glorot

from fglcore.models.sparse_input import linear

MASK_INITS = ("ones", "glorot")
"""Mask initialisations: all ones (the code's ``--laye-mask-one --clsf-mask-one``) or Glorot-uniform."""


class MaskedLinear(nn.Module):
    r""":math:`x (W \odot M)^\top + b` with a learnable mask :math:`M` the shape of :math:`W` (FED-PUB).

    In eval mode mask entries with :math:`|M_{ij}| <` ``prune_threshold`` count as 0.

    Args:
        in_channels (int): input width.
        out_channels (int): output width.
        bias (bool): learn an additive bias.
        mask_init (str): ``"ones"`` or ``"glorot"`` (see :mod:`fglcore.models.masked_gcn`).
        prune_threshold (float): eval-mode pruning threshold of the mask.
        bias_init (str): ``"zeros"`` or ``"glorot"`` (Glorot-uniform of a ``(1, out)`` matrix).

    Shapes:
        - **input:** :math:`(*, F_{in})`
        - **output:** :math:`(*, F_{out})`
    """

    def __init__(self, in_channels: int, out_channels: int, bias: bool = True, mask_init: str = "ones",
                 prune_threshold: float = 1e-3, bias_init: str = "zeros"):
        super().__init__()
        if mask_init not in MASK_INITS:
            raise ValueError(f"mask_init: {mask_init!r} is not accepted; accepted: {', '.join(MASK_INITS)}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.mask_init, self.prune_threshold, self.bias_init = mask_init, float(prune_threshold), bias_init
        self.weight = nn.Parameter(torch.empty(out_channels, in_channels))
        self.mask = nn.Parameter(torch.empty(out_channels, in_channels))
        self.bias = nn.Parameter(torch.empty(out_channels)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        glorot(self.weight)
        if self.mask_init == "ones":
            nn.init.ones_(self.mask)
        else:
            glorot(self.mask)
        if self.bias is not None:
            if self.bias_init == "glorot":
                bound = math.sqrt(6.0 / (1 + self.out_channels))
                nn.init.uniform_(self.bias, -bound, bound)
            else:
                nn.init.zeros_(self.bias)

    def effective_mask(self) -> Tensor:
        """The mask, with entries below the threshold zeroed in eval mode (the code's ``prune``)."""
        if self.training:
            return self.mask
        return self.mask.masked_fill(self.mask.abs() < self.prune_threshold, 0.0)

    def forward(self, x: Tensor) -> Tensor:
        # A client's fixed bag-of-words features are multiplied sparsely (fglcore.models.sparse_input).
        return linear(x, self.weight * self.effective_mask(), self.bias)

    def extra_repr(self) -> str:
        return f"{self.in_channels}, {self.out_channels}, bias={self.bias is not None}, mask_init={self.mask_init}"
