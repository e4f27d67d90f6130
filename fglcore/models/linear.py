"""A node-wise linear layer with a message-passing signature (the ``mlp`` model's layers)."""
from __future__ import annotations

from torch import Tensor, nn

from fglcore.models import sparse_input


class NodeWiseLinear(nn.Linear):
    r"""``nn.Linear`` applied to every node, :math:`h_v' = W h_v + b`, called as ``layer(x, edge_index)``.

    The graph is accepted and ignored, so the layer stands wherever a
    message-passing layer does: in :class:`~fglcore.models.mlp.MLP` and as the
    graph-free ``mlp`` backbone of a graph classifier (:func:`linear_conv`).
    On registered constant sparse features it multiplies sparsely
    (:func:`fglcore.models.sparse_input.linear`). ``reset_parameters()`` is
    ``nn.Linear``'s.

    Args:
        in_features (int): input width :math:`F_{in}`.
        out_features (int): output width :math:`F_{out}`.

    Shapes:
        - **input:** node features :math:`(|\mathcal{V}|, F_{in})`, optional edge indices (ignored)
        - **output:** node features :math:`(|\mathcal{V}|, F_{out})`
    """

    def forward(self, x: Tensor, edge_index: Tensor | None = None) -> Tensor:  # noqa: ARG002
        return sparse_input.linear(x, self.weight, self.bias)


def linear_conv(hidden_channels: int, dropout: float) -> nn.Module:
    """A node-wise linear layer hidden -> hidden: the graph-free ``mlp`` backbone (DeepSets-style)."""
    return NodeWiseLinear(hidden_channels, hidden_channels)
