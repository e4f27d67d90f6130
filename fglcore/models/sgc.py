"""SGC (Wu et al., ICML 2019): K propagation steps and one linear layer."""
from __future__ import annotations

from torch import Tensor, nn
from torch_geometric.nn import SGConv

from fglcore.models.cached_graph import CachedGraphGuard
from fglcore.models.operators import GraphOperators, apply_conv


class SGC(CachedGraphGuard, nn.Module):
    r"""Simplified graph convolution (Wu et al., "Simplifying Graph Convolutional Networks", ICML 2019, Eq. 8):

    .. math::
        \hat Y = S^K X \Theta, \qquad S = \tilde D^{-1/2}(A + I)\tilde D^{-1/2}:

    ``K`` propagation steps followed by one linear layer straight to the
    classes; there is no hidden layer, no nonlinearity and no dropout. This is
    also FedSpray's code (``SGConv(d_x, C, K=2)``). PyG has the layer
    (``SGConv``) but no SGC model; this class is that layer with the
    ``cached`` guard: with ``cached=True`` :math:`S^K X` is computed once,
    which is exact while the features stay fixed.

    Args:
        in_channels (int): node feature width :math:`F`.
        out_channels (int): number of classes :math:`C`.
        K (int): propagation steps (default 2).
        cached (bool): cache :math:`S^K X` of the first call (one model per client graph).

    Shapes:
        - **input:** node features :math:`(|\mathcal{V}|, F)`, edge indices :math:`(2, |\mathcal{E}|)`
          (or the graph's :class:`~fglcore.models.operators.GraphOperators`: the same numbers as sparse products)
        - **output:** logits :math:`(|\mathcal{V}|, C)`
    """

    #: ``forward`` also takes the graph's sparse operators (:func:`~fglcore.models.operators.apply_conv`).
    accepts_graph_operators = True

    def __init__(self, in_channels: int, out_channels: int, K: int = 2, cached: bool = False):
        super().__init__()
        self.cached = cached
        self.conv = SGConv(in_channels, out_channels, K=K, cached=cached)

    def reset_parameters(self) -> None:
        self.conv.reset_parameters()
        self.forget_graph()

    def forward(self, x: Tensor, edge_index: Tensor | GraphOperators) -> Tensor:
        self.check_graph(x, edge_index)
        return apply_conv(self.conv, x, edge_index)
