"""GIN (Xu et al., ICLR 2019): the node model, its update MLP, and one ``GINConv`` for graph classifiers."""
from __future__ import annotations

from torch import nn
from torch_geometric.nn import GINConv

from fglcore.models.stacked import StackedGNN


def gin_mlp(in_channels: int, hidden_channels: int, out_channels: int, batch_norm: bool = False) -> nn.Sequential:
    """GIN's update MLP: Linear -> [BatchNorm] -> ReLU -> Linear (two layers, Xu et al. 2019, §4.1).

    The paper puts batch normalisation in the MLP; GCFL's and FedStar's code
    (the baselines of FedStar's tables) do not, hence ``batch_norm=False`` by default.
    """
    layers: list[nn.Module] = [nn.Linear(in_channels, hidden_channels)]
    if batch_norm:
        layers.append(nn.BatchNorm1d(hidden_channels))
    layers += [nn.ReLU(), nn.Linear(hidden_channels, out_channels)]
    return nn.Sequential(*layers)


class GIN(StackedGNN):
    r"""Graph isomorphism network (Xu et al., "How Powerful are Graph Neural Networks?", ICLR 2019,
    Eq. 4.1) for node classification. Each layer is

    .. math::
        h_v' = \mathrm{MLP}\Big((1 + \epsilon)\, h_v + \sum_{u \in \mathcal N(v)} h_u\Big)

    with the two-layer :func:`gin_mlp` of width ``hidden_channels``; the last
    layer's MLP ends in the classes. :math:`\epsilon = 0` fixed (GIN-0)
    unless ``train_eps``.

    Built on PyG's ``BasicGNN`` (:class:`~fglcore.models.stacked.StackedGNN`)
    but not PyG's :class:`torch_geometric.nn.models.GIN`, whose MLPs are
    ``[in, out, out]`` (the output layer's hidden width would be the number
    of classes) with PyG's ``MLP`` (different parameter names and order).

    Args:
        in_channels (int): node feature width :math:`F`.
        hidden_channels (int): hidden width (also inside each MLP).
        out_channels (int): number of classes :math:`C`.
        num_layers (int): number of ``GINConv`` layers (default 2).
        dropout (float): dropout rate after each hidden ReLU (default 0.5).
        train_eps (bool): learn :math:`\epsilon`.
        mlp_batch_norm (bool): batch normalisation inside the MLPs (the paper's).
        input_dropout (bool): also drop the input features.

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
        train_eps: bool = False,
        mlp_batch_norm: bool = False,
        input_dropout: bool = False,
    ):
        super().__init__(in_channels, hidden_channels, out_channels, num_layers, dropout,
                         input_dropout=input_dropout, train_eps=train_eps, mlp_batch_norm=mlp_batch_norm)

    def init_conv(self, in_channels: int, out_channels: int, *, train_eps: bool, mlp_batch_norm: bool) -> nn.Module:
        return GINConv(gin_mlp(in_channels, self.hidden_channels, out_channels, mlp_batch_norm), train_eps=train_eps)


def gin_conv(hidden_channels: int, dropout: float, train_eps: bool = False, mlp_batch_norm: bool = False) -> nn.Module:
    """GIN layer (Xu et al., ICLR 2019) with the two-layer MLP hidden -> hidden -> hidden of GCFL/FedStar:
    the default graph classifier backbone."""
    return GINConv(gin_mlp(hidden_channels, hidden_channels, hidden_channels, mlp_batch_norm), train_eps=train_eps)
