"""``cached=True``: a node model bound to the one graph it caches something of."""
from __future__ import annotations

from torch import Tensor

from fglcore.models.operators import GraphOperators


class CachedGraphGuard:
    """Mixin of the node models that accept ``cached=True`` (GCN, SGC, decoupled GCN, FedStar's node model).

    Each client keeps its own model for its own subgraph in full-batch
    training, so a model may cache what depends only on the graph: GCN the
    normalised adjacency, SGC the propagated features :math:`S^K X`, the
    decoupled GCN its propagation weights. A cached model remembers the
    number of nodes and edges of the first graph it sees and refuses any
    other; :meth:`forget_graph` (called by the models' ``reset_parameters()``)
    unbinds it. ``cached`` is ``False`` unless the model sets it.
    """

    cached: bool = False
    _bound_graph: tuple[int, int] | None = None

    def check_graph(self, x: Tensor, edge_index: Tensor | GraphOperators | None) -> None:
        """Bind to the graph of ``(x, edge_index)`` on first use; raise ``ValueError`` for another graph later."""
        if not self.cached:
            return
        if isinstance(edge_index, GraphOperators):
            edge_index = edge_index.edge_index
        graph = (int(x.size(0)), int(edge_index.size(1)))
        if self._bound_graph is None:
            self._bound_graph = graph
        elif graph != self._bound_graph:
            raise ValueError(
                f"{type(self).__name__} was built with cached=True and is bound to a graph with "
                f"{self._bound_graph[0]} nodes and {self._bound_graph[1]} edges, but got {graph[0]} nodes and "
                f"{graph[1]} edges; build one model per graph, call reset_parameters(), or use cached=False"
            )

    def forget_graph(self) -> None:
        self._bound_graph = None
