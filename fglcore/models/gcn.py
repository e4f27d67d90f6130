"""GCN (Kipf & Welling, ICLR 2017): PyG's ``GCN`` model for nodes, one ``GCNConv`` for graph classifiers."""
from __future__ import annotations

from torch import nn
from torch_geometric.nn import GCNConv
from torch_geometric.nn.models import GCN as PyGGCN

from fglcore.models.stacked import StackedGNN


class GCN(StackedGNN, PyGGCN):
    r"""Graph convolutional network (Kipf & Welling, "Semi-Supervised Classification with Graph
    Convolutional Networks", ICLR 2017, Eq. 9):

    .. math::
        \hat Y = \hat A\, \mathrm{dropout}(\mathrm{ReLU}(\hat A X W^{(0)}))\, W^{(1)},
        \qquad \hat A = \tilde D^{-1/2}(A + I)\tilde D^{-1/2}

    (``num_layers`` ``GCNConv`` layers in general). This is PyG's
    :class:`torch_geometric.nn.models.GCN` (same layers, same parameters in
    the same order, same forward pass; ``tests/test_models.py`` checks it bit
    for bit) with :class:`~fglcore.models.stacked.StackedGNN`'s additions:
    the sparse-operator fast path, ``input_dropout`` and the ``cached`` guard.

    Args:
        in_channels (int): node feature width :math:`F`.
        hidden_channels (int): hidden width.
        out_channels (int): number of classes :math:`C`.
        num_layers (int): number of ``GCNConv`` layers (default 2).
        dropout (float): dropout rate after each hidden ReLU (default 0.5).
        cached (bool): cache :math:`\hat A` of the first graph (one model per client graph).
        input_dropout (bool): also drop the input features (the paper does).

    Shapes:
        - **input:** node features :math:`(|\mathcal{V}|, F)`, edge indices :math:`(2, |\mathcal{E}|)`
        - **output:** logits :math:`(|\mathcal{V}|, C)`
    """

    def __init__(
        self,
        in_channels: int,
        hidden_channels: int,
        out_channels: int,
        num_layers: int = 2,
        dropout: float = 0.5,
        cached: bool = False,
        input_dropout: bool = False,
    ):
        super().__init__(in_channels, hidden_channels, out_channels, num_layers, dropout,
                         input_dropout=input_dropout, cached=cached)


def gcn_conv(hidden_channels: int, dropout: float) -> nn.Module:
    """GCN layer (Kipf & Welling, ICLR 2017) hidden -> hidden, the ``gcn`` backbone of a graph classifier."""
    return GCNConv(hidden_channels, hidden_channels)
