"""Node classifiers: ``forward(x, edge_index) -> logits [num_nodes, num_classes]``.

Every model is built from PyTorch Geometric layers, returns raw logits (no
softmax) and has ``reset_parameters()``. Conventions shared by the stacked
models (GCN, GraphSAGE, GAT, GIN, MLP):

* ``num_layers`` counts the layers that transform features; the last one maps
  to the classes and is followed by no activation;
* dropout acts on the hidden representations after each activation (PyG's
  ``BasicGNN`` convention, also that of OpenFGL and FedStar's code). Kipf &
  Welling (2017) and Veličković et al. (2018) also drop the input features;
  ``input_dropout=True`` adds that.

``cached=True`` binds a model to one fixed graph (each client keeps its own
model for its own subgraph in full-batch training): GCN caches the normalised
adjacency, SGC the propagated features :math:`S^K X`, the decoupled GCN its
propagation weights. A cached model refuses a graph with a different number
of nodes or edges than the first one it saw; ``reset_parameters()`` forgets it.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import GATConv, GCNConv, GINConv, MessagePassing, SAGEConv, SGConv
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.nn.inits import reset
from torch_geometric.utils import add_remaining_self_loops, degree

from fglcore.models import sparse_input
from fglcore.models.operators import GraphOperators, apply_conv

NORMALIZATIONS = ("sym", "rw")


def reset_children(module: nn.Module) -> None:
    """Reset every direct child the way PyG does (``reset_parameters`` or recurse)."""
    for child in module.children():
        reset(child)


class CachedGraphGuard(nn.Module):
    """Remembers the graph a ``cached=True`` model was first run on and refuses any other."""

    def __init__(self, cached: bool):
        super().__init__()
        self.cached = cached
        self._bound_graph: tuple[int, int] | None = None

    def check_graph(self, x: Tensor, edge_index: Tensor | GraphOperators) -> None:
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


class StackedGNN(CachedGraphGuard):
    """Layers in ``convs`` with an activation and dropout between them (none after the last)."""

    activation = staticmethod(F.relu)
    #: ``forward`` takes a graph's sparse operators in place of its ``edge_index`` (see ``layer``).
    accepts_graph_operators = True

    def __init__(self, convs: list[nn.Module], dropout: float, input_dropout: bool = False, cached: bool = False):
        super().__init__(cached)
        self.convs = nn.ModuleList(convs)
        self.dropout = dropout
        self.input_dropout = input_dropout

    def reset_parameters(self) -> None:
        reset_children(self)
        self.forget_graph()

    def forward(self, x: Tensor, edge_index: Tensor | GraphOperators) -> Tensor:
        self.check_graph(x, edge_index)
        if self.input_dropout:
            x = F.dropout(x, self.dropout, self.training)
        last = len(self.convs) - 1
        for i in range(len(self.convs)):
            x = self.layer(i, x, edge_index)
            if i < last:
                x = F.dropout(self.activation(x), self.dropout, self.training)
        return x

    def layer(self, i: int, x: Tensor, graph: Tensor | GraphOperators) -> Tensor:
        """Layer ``i`` on its input ``x``; ``graph`` is an ``edge_index`` or the graph's sparse operators."""
        return apply_conv(self.convs[i], x, graph)


def layer_widths(in_channels: int, hidden_channels: int, out_channels: int, num_layers: int) -> list[tuple[int, int]]:
    """``(in, out)`` of each of ``num_layers`` layers: in -> hidden -> ... -> hidden -> out."""
    widths = [in_channels] + [hidden_channels] * (num_layers - 1) + [out_channels]
    return list(zip(widths[:-1], widths[1:]))


class GCN(StackedGNN):
    """Graph convolutional network (Kipf & Welling, ICLR 2017, Eq. 9).

    ``GCNConv`` layers with symmetric normalisation
    :math:`\\tilde D^{-1/2}(A+I)\\tilde D^{-1/2}` and ReLU between layers.
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
        widths = layer_widths(in_channels, hidden_channels, out_channels, num_layers)
        convs = [GCNConv(i, o, cached=cached) for i, o in widths]
        super().__init__(convs, dropout, input_dropout, cached)


class SGC(CachedGraphGuard):
    """Simplified graph convolution (Wu et al., ICML 2019, Eq. 8): :math:`S^K X \\Theta`.

    ``K`` propagation steps with :math:`S=\\tilde D^{-1/2}(A+I)\\tilde D^{-1/2}`
    followed by one linear layer straight to the classes; there is no hidden
    layer, no nonlinearity and no dropout. This is also FedSpray's code
    (``SGConv(d_x, C, K=2)``). With ``cached=True`` the propagated features are
    computed once, which is exact while the features stay fixed.
    """

    def __init__(self, in_channels: int, out_channels: int, K: int = 2, cached: bool = False):
        super().__init__(cached)
        self.conv = SGConv(in_channels, out_channels, K=K, cached=cached)

    def reset_parameters(self) -> None:
        self.conv.reset_parameters()
        self.forget_graph()

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        self.check_graph(x, edge_index)
        return self.conv(x, edge_index)


class GraphSAGE(StackedGNN):
    """GraphSAGE (Hamilton et al., NeurIPS 2017, Alg. 1) full-batch, without neighbour sampling.

    ``SAGEConv`` with a root weight, :math:`W_1 x_v + W_2\\,\\mathrm{aggr}_{u\\in N(v)} x_u`;
    ``aggr`` is ``"mean"`` (the paper's mean aggregator, used by FedSpray and
    FedStruct) or any PyG aggregation name (``"max"``, ``"sum"``, ...). The
    paper's per-layer L2 normalisation of embeddings is not applied (as in
    PyG's and the FGL papers' code).
    """

    def __init__(
        self,
        in_channels: int,
        hidden_channels: int,
        out_channels: int,
        num_layers: int = 2,
        dropout: float = 0.5,
        aggr: str = "mean",
        input_dropout: bool = False,
    ):
        widths = layer_widths(in_channels, hidden_channels, out_channels, num_layers)
        convs = [SAGEConv(i, o, aggr=aggr) for i, o in widths]
        super().__init__(convs, dropout, input_dropout)

    def layer(self, i: int, x: Tensor, graph: Tensor | GraphOperators) -> Tensor:
        """``SAGEConv`` as PyG computes it; on registered constant features the first layer aggregates once.

        The aggregation of fixed features over a fixed graph does not change
        during training, so it is computed by the layer's own ``propagate``
        once and reused (:func:`fglcore.models.sparse_input.derived_constant`);
        the values are those of every call.
        """
        conv = self.convs[i]
        if i > 0 or conv.project or not sparse_input.is_registered(x):
            return apply_conv(conv, x, graph)
        edge_index = graph.edge_index if isinstance(graph, GraphOperators) else graph
        aggregated = sparse_input.derived_constant(
            x, f"sage_aggregation:{conv.aggr_module!r}", edge_index,
            lambda: conv.propagate(edge_index, x=(x, x), size=None),
        )
        out = conv.lin_l(aggregated)
        if conv.root_weight:
            out = out + conv.lin_r(x)
        return F.normalize(out, p=2.0, dim=-1) if conv.normalize else out


def gat_head_width(hidden_channels: int, heads: int, hidden_per_head: bool) -> int:
    """Features per attention head in a hidden GAT layer.

    By default ``hidden_channels`` is the concatenated width, split evenly over
    the heads as in the GAT paper (Cora: 8 heads x 8 features = 64). With
    ``hidden_per_head=True`` every head has ``hidden_channels`` features
    (PyG's ``examples/gat.py``).
    """
    if hidden_per_head:
        return hidden_channels
    if hidden_channels % heads:
        raise ValueError(
            f"GAT: hidden_channels={hidden_channels} is split over heads={heads} and must be divisible by it; "
            f"change one of them or pass hidden_per_head=True"
        )
    return hidden_channels // heads


class GAT(StackedGNN):
    """Graph attention network (Veličković et al., ICLR 2018, Eqs. 3-6).

    Hidden layers: ``GATConv`` with ``heads`` heads (default 8) whose outputs
    are concatenated, ELU activation (as in the paper). The output layer has
    ``output_heads`` heads (default 1, the paper's Cora/CiteSeer model; the
    paper's PubMed model uses 8) that are averaged. The hidden width is split
    over the heads unless ``hidden_per_head`` (see :func:`gat_head_width`).
    ``attention_dropout`` (dropout on the attention coefficients) defaults to
    ``dropout``, since the paper uses one rate for both.
    """

    activation = staticmethod(F.elu)

    def __init__(
        self,
        in_channels: int,
        hidden_channels: int,
        out_channels: int,
        num_layers: int = 2,
        dropout: float = 0.5,
        heads: int = 8,
        output_heads: int = 1,
        hidden_per_head: bool = False,
        attention_dropout: float | None = None,
        input_dropout: bool = False,
    ):
        if heads < 1 or output_heads < 1:
            raise ValueError(f"GAT: heads and output_heads must be >= 1, got {heads} and {output_heads}")
        att = dropout if attention_dropout is None else attention_dropout
        head_width = gat_head_width(hidden_channels, heads, hidden_per_head)
        convs: list[nn.Module] = []
        width = in_channels
        for _ in range(num_layers - 1):
            convs.append(GATConv(width, head_width, heads=heads, concat=True, dropout=att))
            width = head_width * heads
        convs.append(GATConv(width, out_channels, heads=output_heads, concat=False, dropout=att))
        super().__init__(convs, dropout, input_dropout)


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
    """Graph isomorphism network (Xu et al., ICLR 2019, Eq. 4.1) for node classification.

    Each layer is :math:`\\mathrm{MLP}((1+\\epsilon) h_v + \\sum_{u\\in N(v)} h_u)` with the
    two-layer :func:`gin_mlp` (width ``hidden_channels``); the last layer's MLP
    ends in the classes. :math:`\\epsilon = 0` fixed (GIN-0) unless ``train_eps``.
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
        convs = [
            GINConv(gin_mlp(i, hidden_channels, o, mlp_batch_norm), train_eps=train_eps)
            for i, o in layer_widths(in_channels, hidden_channels, out_channels, num_layers)
        ]
        super().__init__(convs, dropout, input_dropout)


class NodeWiseLinear(nn.Linear):
    """A linear layer with a message-passing signature; it ignores the graph."""

    def forward(self, x: Tensor, edge_index: Tensor | None = None) -> Tensor:  # noqa: ARG002
        return sparse_input.linear(x, self.weight, self.bias)


class MLP(StackedGNN):
    """Multi-layer perceptron on node features; ``edge_index`` is accepted and ignored.

    ``input_layer_norm=True`` puts a LayerNorm on the input features, as
    FedStruct's code does for all its MLPs.
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
        convs = [NodeWiseLinear(i, o) for i, o in layer_widths(in_channels, hidden_channels, out_channels, num_layers)]
        super().__init__(convs, dropout, input_dropout)
        self.input_norm = nn.LayerNorm(in_channels) if input_layer_norm else None

    def forward(self, x: Tensor, edge_index: Tensor | None = None) -> Tensor:
        if self.input_norm is not None:
            x = self.input_norm(x)
        if self.input_dropout:
            x = F.dropout(x, self.dropout, self.training)
        last = len(self.convs) - 1
        for i, layer in enumerate(self.convs):
            x = layer(x)
            if i < last:
                x = F.dropout(F.relu(x), self.dropout, self.training)
        return x


class Propagation(MessagePassing):
    """``K`` parameter-free propagation steps :math:`X \\leftarrow (1-\\alpha)\\hat A X + \\alpha H`.

    With ``alpha = 0`` this is :math:`\\hat A^K H`; with ``alpha > 0`` it is
    APPNP's approximate personalised PageRank (Klicpera et al., ICLR 2019,
    Eq. 8). :math:`\\hat A` adds self-loops and is normalised symmetrically,
    :math:`\\tilde D^{-1/2}\\tilde A\\tilde D^{-1/2}` (``"sym"``, GCN/APPNP), or by
    rows, :math:`\\tilde D^{-1}\\tilde A` (``"rw"``, FedStruct's
    :math:`\\hat A`, Aliakbari et al. 2025, §3). ``cached`` keeps the
    normalised edge weights of the first graph.
    """

    def __init__(self, K: int, alpha: float = 0.0, normalization: str = "sym", cached: bool = False):
        super().__init__(aggr="add")
        if K < 0:
            raise ValueError(f"propagation steps K must be >= 0, got {K}")
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"teleport probability alpha must be in [0, 1], got {alpha}")
        if normalization not in NORMALIZATIONS:
            raise ValueError(f"unknown normalization {normalization!r}; accepted: {', '.join(NORMALIZATIONS)}")
        self.K, self.alpha, self.normalization, self.cached = K, alpha, normalization, cached
        self._cache: tuple[Tensor, Tensor] | None = None

    def reset_parameters(self) -> None:
        self._cache = None

    def normalized_edges(self, edge_index: Tensor, num_nodes: int, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        if self.cached and self._cache is not None:
            return self._cache
        if self.normalization == "sym":
            edge_index, weight = gcn_norm(edge_index, None, num_nodes, add_self_loops=True, dtype=dtype)
        else:
            edge_index, _ = add_remaining_self_loops(edge_index, num_nodes=num_nodes)
            in_degree = degree(edge_index[1], num_nodes, dtype=dtype)
            weight = in_degree.reciprocal()[edge_index[1]]
        if self.cached:
            self._cache = (edge_index, weight)
        return edge_index, weight

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        edge_index, weight = self.normalized_edges(edge_index, x.size(0), x.dtype)
        h = x
        for _ in range(self.K):
            x = self.propagate(edge_index, x=x, weight=weight)
            if self.alpha > 0:
                x = (1 - self.alpha) * x + self.alpha * h
        return x

    def message(self, x_j: Tensor, weight: Tensor) -> Tensor:
        return weight.view(-1, 1) * x_j

    def __repr__(self) -> str:
        return f"{type(self).__name__}(K={self.K}, alpha={self.alpha}, normalization={self.normalization!r})"


class DecoupledGCN(CachedGraphGuard):
    """Decoupled GCN / predict-then-propagate: :math:`\\hat A^K\\,\\mathrm{MLP}(X)`.

    An :class:`MLP` maps each node's features to class logits, then
    :class:`Propagation` smooths them over the graph without parameters
    (FedStruct's feature and structure models, Aliakbari et al., ICLR 2025,
    Eqs. 1-2 with :math:`\\beta_K = 1`; Dong et al., "On the equivalence of
    decoupled graph convolution network and label propagation", WWW 2021).
    ``alpha > 0`` gives APPNP (Klicpera et al., ICLR 2019). Defaults: ``K=10``,
    ``alpha=0``, symmetric normalisation; FedStruct's paper normalises by rows
    (``normalization="rw"``) and its code puts a LayerNorm on the MLP input
    (``input_layer_norm=True``).
    """

    def __init__(
        self,
        in_channels: int,
        hidden_channels: int,
        out_channels: int,
        num_layers: int = 2,
        dropout: float = 0.5,
        K: int = 10,
        alpha: float = 0.0,
        normalization: str = "sym",
        cached: bool = False,
        input_layer_norm: bool = False,
        input_dropout: bool = False,
    ):
        super().__init__(cached)
        self.mlp = MLP(in_channels, hidden_channels, out_channels, num_layers, dropout, input_layer_norm, input_dropout)
        self.propagation = Propagation(K, alpha, normalization, cached)

    def reset_parameters(self) -> None:
        self.mlp.reset_parameters()
        self.propagation.reset_parameters()
        self.forget_graph()

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        self.check_graph(x, edge_index)
        return self.propagation(self.mlp(x), edge_index)
