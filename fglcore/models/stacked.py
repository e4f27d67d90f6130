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

import itertools
from typing import Any, Sequence

from torch import Tensor
from torch_geometric.nn.models.basic_gnn import BasicGNN

from fglcore.models.cached_graph import CachedGraphGuard
from fglcore.models.operators import GraphOperators, apply_conv, trim_graph


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

    On a neighbour-sampled mini-batch (nodes listed hop by hop, seeds first;
    edges hop by hop, hop :math:`h`'s into the nodes of hop :math:`h-1`),
    ``num_sampled_nodes_per_hop`` and ``num_sampled_edges_per_hop`` (PyG's
    ``BasicGNN.forward`` arguments, as ``NeighborLoader`` counts them) trim
    the graph before each layer, as PyG's
    :func:`~torch_geometric.utils.trim_to_layer` and Hamilton et al.
    (NeurIPS 2017), Alg. 2: layer :math:`l` (1-based) computes only the
    nodes within :math:`L - l` hops of the seeds, from those within
    :math:`L - l + 1` hops and the edges into the former
    (:func:`~fglcore.models.operators.trim_graph`; PyG's ``trim_to_layer``
    keeps one hop more as targets). The seeds' logits are those of the
    untrimmed graph, up to float rounding (the sums over a node's in-edges are
    the same; dense products over fewer rows may round differently), for
    layers whose output at a node depends only on its in-edges and own
    features (GraphSAGE, GIN, GraphConv, GAT; not GCN's source-degree
    normalisation); dropout then draws masks for the kept rows only, so its
    random stream differs from the untrimmed pass.

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

    def forward(self, x: Tensor, edge_index: Tensor | GraphOperators | None, *,  # type: ignore[override]
                num_sampled_nodes_per_hop: Sequence[int] | None = None,
                num_sampled_edges_per_hop: Sequence[int] | None = None) -> Tensor:
        self.check_graph(x, edge_index)
        if self.input_dropout:
            x = self.dropout(x)
        last = self.num_layers - 1
        trim = num_sampled_nodes_per_hop is not None
        if trim:
            reached = list(itertools.accumulate(num_sampled_nodes_per_hop))  # nodes within h hops
            into = [0, *itertools.accumulate(num_sampled_edges_per_hop)]  # edges into them, hop h's targets
            hops = len(reached) - 1
        for i in range(self.num_layers):
            graph = edge_index
            if trim:
                within = min(last - i, hops)  # layer i's outputs are needed within L - 1 - i hops of the seeds
                sources = reached[min(within + 1, hops)]
                x = x[:sources] if sources < x.size(0) else x
                graph = trim_graph(edge_index, reached[within], sources, into[min(within + 1, hops)])
            x = self.layer(i, x, graph)
            if i < last:
                x = self.dropout(self.act(x))
        return x

    def layer(self, i: int, x: Tensor, graph: Tensor | GraphOperators | None) -> Tensor:
        """Layer ``i`` on its input ``x``; ``graph`` is an ``edge_index`` or the graph's sparse operators."""
        return apply_conv(self.convs[i], x, graph)
