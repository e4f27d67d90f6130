"""The stacked node classifiers (GCN, GraphSAGE, GAT, GIN, MLP) as PyG ``BasicGNN`` models.

Conventions shared by these models:

* ``num_layers`` counts the layers that transform features; the last one maps
  to the classes and is followed by no activation; logits are raw (no softmax);
* dropout acts on the hidden representations after each activation (PyG's
  ``BasicGNN`` convention, also that of OpenFGL and FedStar's code). Kipf &
  Welling (2017) and Veličković et al. (2018) also drop the input features;
  ``input_dropout=True`` adds that.
"""
from __future__ import annotations

from typing import Any

from torch import Tensor
from torch_geometric.nn.models.basic_gnn import BasicGNN

from fglcore.models.cached_graph import CachedGraphGuard
from fglcore.models.operators import GraphOperators, apply_conv


class StackedGNN(CachedGraphGuard, BasicGNN):
    r"""PyG's :class:`~torch_geometric.nn.models.basic_gnn.BasicGNN` with this package's forward pass.

    Construction is ``BasicGNN``'s (``init_conv`` per layer, in order, with
    ``**conv_kwargs``; ``dropout`` and ``act`` modules; no norm, no jumping
    knowledge), so a subclass of PyG's :class:`~torch_geometric.nn.models.GCN`
    or :class:`~torch_geometric.nn.models.GraphSAGE` *is* that model, with the
    same parameters drawn in the same order. The forward pass computes what
    ``BasicGNN.forward`` computes,

    .. math::
        h^{(0)} = x, \qquad
        h^{(l)} = \mathrm{dropout}(\sigma(\mathrm{conv}_l(h^{(l-1)}, A))) \ (l < L), \qquad
        \hat y = \mathrm{conv}_L(h^{(L-1)}, A),

    and adds what ``BasicGNN`` has not: the graph may be given as its sparse
    operators (:class:`~fglcore.models.operators.GraphOperators`, the
    trainers' fast path, bit for bit the same numbers, see
    :func:`~fglcore.models.operators.apply_conv`), the input features may be
    dropped (``input_dropout``), and a model whose convs cache the graph
    (``cached=True`` in ``conv_kwargs``) is bound to it
    (:class:`~fglcore.models.cached_graph.CachedGraphGuard`).

    Args:
        in_channels (int): node feature width.
        hidden_channels (int): hidden width.
        out_channels (int): number of classes.
        num_layers (int): number of message-passing layers :math:`L`.
        dropout (float): dropout rate after each hidden activation.
        act (str): activation :math:`\sigma` between layers (PyG's resolver name).
        input_dropout (bool): also drop the input features.
        **conv_kwargs: passed to every ``init_conv`` call.

    Shapes:
        - **input:** node features :math:`(|\mathcal{V}|, F_{in})`,
          edge indices :math:`(2, |\mathcal{E}|)` or the graph's
          :class:`~fglcore.models.operators.GraphOperators`
        - **output:** logits :math:`(|\mathcal{V}|, C)`
    """

    #: ``forward`` takes a graph's sparse operators in place of its ``edge_index`` (see ``layer``).
    accepts_graph_operators = True

    def __init__(
        self,
        in_channels: int,
        hidden_channels: int,
        out_channels: int,
        num_layers: int,
        dropout: float,
        *,
        act: str = "relu",
        input_dropout: bool = False,
        **conv_kwargs: Any,
    ):
        super().__init__(in_channels, hidden_channels, num_layers, out_channels, dropout=dropout, act=act,
                         **conv_kwargs)
        self.input_dropout = input_dropout
        self.cached = bool(conv_kwargs.get("cached", False))

    def reset_parameters(self) -> None:
        super().reset_parameters()
        self.forget_graph()

    def forward(self, x: Tensor, edge_index: Tensor | GraphOperators | None) -> Tensor:  # type: ignore[override]
        self.check_graph(x, edge_index)
        if self.input_dropout:
            x = self.dropout(x)
        last = self.num_layers - 1
        for i in range(self.num_layers):
            x = self.layer(i, x, edge_index)
            if i < last:
                x = self.dropout(self.act(x))
        return x

    def layer(self, i: int, x: Tensor, graph: Tensor | GraphOperators | None) -> Tensor:
        """Layer ``i`` on its input ``x``; ``graph`` is an ``edge_index`` or the graph's sparse operators."""
        return apply_conv(self.convs[i], x, graph)
