"""MLP on node features: the graph-free baseline, and the first half of the decoupled GCN."""
from __future__ import annotations

from torch import Tensor, nn

from fglcore.models.linear import NodeWiseLinear
from fglcore.models.operators import GraphOperators
from fglcore.models.stacked import StackedGNN


class MLP(StackedGNN):
    r"""Multi-layer perceptron on node features; the graph is accepted and ignored:

    .. math::
        h^{(l)} = \mathrm{dropout}(\mathrm{ReLU}(W^{(l)} h^{(l-1)} + b^{(l)})), \qquad
        \hat Y = W^{(L)} h^{(L-1)} + b^{(L)}.

    ``input_layer_norm=True`` puts a LayerNorm on the input features, as
    FedStruct's code (Aliakbari et al., ICLR 2025) does for all its MLPs.
    Built on PyG's ``BasicGNN`` (:class:`~fglcore.models.stacked.StackedGNN`)
    with :class:`~fglcore.models.linear.NodeWiseLinear` layers, not PyG's
    :class:`torch_geometric.nn.models.MLP`, whose layers take no graph
    argument, have other parameter names (``lins.*``) and no sparse first layer.

    Args:
        in_channels (int): node feature width :math:`F`.
        hidden_channels (int): hidden width.
        out_channels (int): number of classes :math:`C`.
        num_layers (int): number of linear layers :math:`L` (default 2).
        dropout (float): dropout rate after each hidden ReLU (default 0.5).
        input_layer_norm (bool): LayerNorm on the input features.
        input_dropout (bool): also drop the input features.

    Shapes:
        - **input:** node features :math:`(|\mathcal{V}|, F)`, edge indices :math:`(2, |\mathcal{E}|)` or ``None``
        - **output:** logits :math:`(|\mathcal{V}|, C)`
    """

    def __init__(
        self,
        in_channels: int,
        hidden_channels: int,
        out_channels: int,
        num_layers: int = 2,
        dropout: float = 0.5,
        input_layer_norm: bool = False,
        input_dropout: bool = False,
    ):
        super().__init__(in_channels, hidden_channels, out_channels, num_layers, dropout, input_dropout=input_dropout)
        self.input_norm = nn.LayerNorm(in_channels) if input_layer_norm else None

    def init_conv(self, in_channels: int, out_channels: int) -> nn.Module:
        return NodeWiseLinear(in_channels, out_channels)

    def reset_parameters(self) -> None:
        super().reset_parameters()
        if self.input_norm is not None:
            self.input_norm.reset_parameters()

    def forward(self, x: Tensor, edge_index: Tensor | GraphOperators | None = None) -> Tensor:
        if self.input_norm is not None:
            x = self.input_norm(x)
        return super().forward(x, edge_index)
