"""Sparse graph operators: message passing as CSR sparse-dense products.

PyG's convolutions on an ``edge_index`` gather one row of ``x`` per edge and
scatter-add it into the target (``x[src]`` then ``scatter_add``), and their
backward pass does the same in reverse. On mini-batches of large graphs
(FedStar's DD client: ~170k nodes and ~860k edges per batch of 128 graphs)
that gather/scatter pair dominates a training step. The same sums can be
computed as one product of a CSR adjacency matrix with ``x``
(:func:`propagate`, a small C kernel), and the backward as one product with
``A^T`` -- ``A`` itself for the undirected graphs of the TU benchmarks.

:class:`GraphOperators` carries the matrices a model needs for one
mini-batch (built by :class:`fglcore.algorithms.training.GraphBatcher`);
:func:`apply_conv` evaluates a PyG layer with them and is exactly
``conv(x, edge_index)`` in exact arithmetic:

* ``GINConv`` (Xu et al., ICLR 2019, Eq. 4.1): ``nn((1 + eps) x + A x)``;
* ``GCNConv`` (Kipf & Welling, ICLR 2017, Eq. 2): ``Â (x W) + b`` with
  ``Â = D^-1/2 (A + I) D^-1/2`` precomputed once per client by PyG's own
  ``gcn_norm`` (the normalisation is per graph, so a batch's ``Â`` is the
  block diagonal of its graphs' blocks);
* ``SAGEConv`` with mean aggregation (Hamilton et al., NeurIPS 2017):
  ``lin_l(A x / deg) + lin_r(x)``;
* ``GraphConv`` with sum aggregation (Morris et al., AAAI 2019, Eq. 5, the
  1-GNN): ``lin_rel(A x) + lin_root(x)``;
* ``SGConv`` (Wu et al., ICML 2019, Eq. 8): ``lin(Â^K x)``, with PyG's
  cache of ``Â^K x`` when the layer is ``cached``;
* ``APPNP`` without edge dropout (Klicpera et al., ICLR 2019, Eq. 8):
  ``x_k = (1 - alpha) Â x_{k-1} + alpha x_0``, K times.

A row's entries keep the order of PyG's edge list (GCN's self-loops last,
where ``gcn_norm`` appends them), and :func:`propagate` rounds each message
``w * x`` before adding it, as PyG's scatter-add does, so every layer above
gives PyG's numbers bit for bit, forward and backward: whole FedStar,
FedAvg and node-classification runs end with identical parameters on both
paths (``tests/test_fast_graph.py``). ``torch.sparse.mm``'s fused
multiply-adds would round GCN's weighted sums differently in the last bit,
which Adam magnifies until long runs drift apart. Any other layer (or a
plain ``edge_index`` tensor) falls back to ``conv(x, edge_index)``.
"""
from __future__ import annotations

import functools
import warnings
import weakref
from dataclasses import dataclass
from typing import Iterable

import torch
from torch import Tensor, nn
from torch_geometric.nn import APPNP, GCNConv, GINConv, GraphConv, SAGEConv, SGConv

from fglcore import native

SUM = "sum"
GCN = "gcn"

FUSED, UNFUSED = "csr_spmm_sum", "csr_spmm_sum_unfused"
"""The C products of ``fglcore/native/spmm.c``: :func:`spmm`'s and :func:`propagate`'s."""


def spmm(matrix: Tensor, dense: Tensor) -> Tensor:
    """``matrix @ dense`` for a CSR ``matrix``: PyTorch's row-reduction kernel on CPU, cuSPARSE elsewhere.

    ``torch.sparse.mm``'s ``reduce`` argument exists only for CSR on CPU. On
    CPU, float32 products go through ``fglcore/native/spmm.c`` when it is
    available and reproduces PyTorch's kernel bit for bit here
    (:func:`native_matches`): the same sums, without PyTorch's separate
    zero-filling pass (about 1.3-1.7x faster on FedStar's DD batches). The
    sparse first layers (:mod:`fglcore.models.sparse_input`) use it.
    """
    return _csr_product(FUSED, matrix, dense)


def propagate(matrix: Tensor, dense: Tensor, row_term: Tensor | None = None, bias: Tensor | None = None) -> Tensor:
    """``matrix @ dense (+ row_term) (+ bias)`` for a CSR ``matrix``, rounded as PyG's message passing rounds it on CPU.

    A PyG layer computes every message ``value * x[source]`` on its own and
    scatter-adds the messages into their targets in edge order
    (:func:`scatter_sum`). Summing fused multiply-adds, as
    ``torch.sparse.mm`` does, rounds GCN's weighted sums differently in the
    last bit; this product does not, so a CSR matrix whose rows keep the
    edge list's order gives PyG's numbers bit for bit. ``row_term`` (GIN's
    own ``x``) and ``bias`` (GCN's) are then added as the layers add them,
    in the same pass. On CPU float32 it runs ``fglcore/native/spmm.c``
    (probed against :func:`scatter_sum` and the two additions at first use),
    elsewhere on CPU :func:`scatter_sum` itself; on a GPU, where PyG's
    scatter has no fixed order either, cuSPARSE.
    """
    return _csr_product(UNFUSED, matrix, dense, row_term, bias)


def scatter_sum(matrix: Tensor, dense: Tensor) -> Tensor:
    """``matrix @ dense`` as PyG's ``scatter(value * x[col], row, reduce="sum")``: products, then ``index_add_`` in entry order."""
    crow, col = matrix.crow_indices(), matrix.col_indices()
    rows = torch.repeat_interleave(torch.arange(matrix.size(0), device=crow.device), crow.diff())
    messages = matrix.values().view(-1, 1) * dense[col]
    return dense.new_zeros(matrix.size(0), dense.size(1)).index_add_(0, rows, messages)


_REFERENCES = {FUSED: lambda matrix, x: torch.sparse.mm(matrix, x, "sum"), UNFUSED: scatter_sum}
"""The C functions of ``spmm.c`` and the PyTorch expressions they reproduce."""


def _plus(out: Tensor, row_term: Tensor | None, bias: Tensor | None) -> Tensor:
    if row_term is not None:
        out = out + row_term
    return out if bias is None else out + bias


def _csr_product(function: str, matrix: Tensor, dense: Tensor, row_term: Tensor | None = None,
                 bias: Tensor | None = None) -> Tensor:
    """cuSPARSE off the CPU; on CPU the C ``function`` where it applies and was probed equal, else its reference."""
    if matrix.device.type != "cpu":
        return _plus(torch.sparse.mm(matrix, dense), row_term, bias)
    if _native_applies(matrix, dense, row_term, bias) and native_matches(function):
        return _native_product(function, matrix, dense, row_term, bias)
    return _plus(_REFERENCES[function](matrix, dense), row_term, bias)


def _native_applies(matrix: Tensor, dense: Tensor, row_term: Tensor | None = None, bias: Tensor | None = None) -> bool:
    rows, width = matrix.size(0), dense.size(-1)
    return (
        matrix.layout == torch.sparse_csr
        and all(t is None or t.device.type == "cpu" for t in (matrix, dense, row_term, bias))  # C reads host memory
        and matrix.dtype == torch.float32
        and dense.dtype == torch.float32
        and dense.dim() == 2
        and dense.is_contiguous()
        and matrix.crow_indices().dtype == torch.int64
        and matrix.col_indices().dtype == torch.int64
        and (row_term is None or (row_term.dtype == torch.float32 and row_term.is_contiguous()
                                  and tuple(row_term.shape) == (rows, width)))
        and (bias is None or (bias.dtype == torch.float32 and bias.is_contiguous() and tuple(bias.shape) == (width,)))
    )


def _native_product(function: str, matrix: Tensor, dense: Tensor, row_term: Tensor | None = None,
                    bias: Tensor | None = None) -> Tensor:
    crow, col, value = matrix.crow_indices().contiguous(), matrix.col_indices().contiguous(), matrix.values().contiguous()
    out = torch.empty(matrix.size(0), dense.size(1), dtype=dense.dtype)
    extras = [None if t is None else t.data_ptr() for t in (row_term, bias)]
    getattr(native.library("spmm"), function)(crow.data_ptr(), col.data_ptr(), value.data_ptr(), dense.data_ptr(),
                                              *extras, out.data_ptr(), matrix.size(0), dense.size(1))
    return out


@functools.lru_cache(maxsize=None)
def native_matches(function: str) -> bool:
    """Whether the C ``function`` (:data:`FUSED`, :data:`UNFUSED`) gives its PyTorch expression bit for bit here,
    alone and followed by the row term and bias additions (probed once, on a weighted matrix)."""
    if native.library("spmm") is None:
        return False
    generator = torch.Generator().manual_seed(0)
    dense_matrix = torch.rand(97, 131, generator=generator)
    dense_matrix[dense_matrix < 0.8] = 0
    matrix = dense_matrix.to_sparse_csr()
    for width in (1, 7, 64, 100, 130):
        x = torch.randn(131, width, generator=generator)
        row_term, bias = torch.randn(97, width, generator=generator), torch.randn(width, generator=generator)
        for extras in ((None, None), (row_term, None), (None, bias)):
            expected = _plus(_REFERENCES[function](matrix, x), *extras)
            got = _native_product(function, matrix, x, *extras)
            if not torch.equal(got.view(torch.int32), expected.view(torch.int32)):
                return False
    return True


def csr_transpose(matrix: Tensor) -> Tensor:
    """The CSR matrix of ``matrix.t()`` for a CSR ``matrix``, its entries in row-major order (the original rows
    ascending within each row of the transpose), as the CSR of a dense ``x.t()`` lists them
    (``tests/test_sparse_input.py`` checks the tensors equal element for element).

    A stable sort of the entries by column, without densifying or scanning a
    strided transpose (about 0.3 s per Coauthor Physics client's 8,415
    feature columns).
    """
    crow, cols = matrix.crow_indices(), matrix.col_indices()
    rows = torch.repeat_interleave(torch.arange(matrix.size(0), device=crow.device), crow.diff())
    order = torch.sort(cols, stable=True).indices
    counts = torch.bincount(cols, minlength=matrix.size(1))
    crow_t = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")
        return torch.sparse_csr_tensor(crow_t, rows[order], matrix.values()[order],
                                       size=(matrix.size(1), matrix.size(0)), check_invariants=False)


def transposed(matrix: Tensor) -> Tensor:
    """``matrix.t().contiguous()`` for a 2-D tensor, by ``fglcore/native/spmm.c``'s tiled copy on CPU float32.

    PyTorch copies a transposed ``64 x 3703`` weight element by element
    across strides, slower than the sparse product that consumes it; the
    tiled copy moves the same 32-bit words several times faster.
    """
    library = native.library("spmm") if _native_transposes(matrix) else None
    if library is None:
        return matrix.t().contiguous()
    out = torch.empty(matrix.size(1), matrix.size(0), dtype=matrix.dtype)
    library.transpose_f32(matrix.data_ptr(), out.data_ptr(), matrix.size(0), matrix.size(1))
    return out


def _native_transposes(matrix: Tensor) -> bool:
    return (matrix.device.type == "cpu" and matrix.dtype == torch.float32 and matrix.dim() == 2
            and matrix.is_contiguous())


class _SpMM(torch.autograd.Function):
    """``matrix @ x (+ x) (+ bias)`` by :func:`propagate`, with the gradients autograd would give the separate sums:
    ``transpose @ grad (+ grad)`` for ``x`` (one pass) and ``grad`` summed over the rows for ``bias``."""

    @staticmethod
    def forward(ctx, operator: "SparseOperator", x: Tensor, add_self: bool, bias: Tensor | None) -> Tensor:
        ctx.operator, ctx.add_self = operator, add_self
        ctx.bias_shape = None if bias is None else bias.shape
        return propagate(operator.matrix, x, x if add_self else None, None if bias is None else bias.contiguous())

    @staticmethod
    def backward(ctx, grad: Tensor):
        grad = grad.contiguous()
        grad_x = None
        if ctx.needs_input_grad[1]:
            grad_x = propagate(ctx.operator.transposed(), grad, grad if ctx.add_self else None)
        grad_bias = grad.sum_to_size(ctx.bias_shape) if ctx.needs_input_grad[3] else None
        return None, grad_x, None, grad_bias


@dataclass
class SparseOperator:
    """A CSR matrix and its transpose (the same object for a symmetric matrix; ``None``: built by
    :func:`csr_transpose` when a gradient first needs it, and kept -- never, for a layer whose input needs no
    gradient)."""

    matrix: Tensor
    transpose: Tensor | None = None

    def __matmul__(self, x: Tensor) -> Tensor:
        return self.propagate(x)

    def propagate(self, x: Tensor, *, add_self: bool = False, bias: Tensor | None = None) -> Tensor:
        """``A @ x``, plus ``x`` itself (GIN with ``eps = 0``) and ``bias`` (GCN) summed in the same pass."""
        return _SpMM.apply(self, x.contiguous(), add_self, bias)

    def transposed(self) -> Tensor:
        """The transpose, built (and kept) at the first call when it was not given."""
        if self.transpose is None:
            self.transpose = csr_transpose(self.matrix)
        return self.transpose


@dataclass
class GraphOperators:
    """The sparse operators of one (mini-batch) graph, passed to a model in place of ``edge_index``.

    ``adjacency[i, j]`` is the number of edges ``j -> i`` (PyG's
    ``source_to_target`` flow), ``gcn`` the GCN-normalised adjacency with
    self-loops (``None`` when no layer needs it), ``in_degree`` the number of
    incoming edges of every node, and ``edge_index`` the batch's edges for
    layers without a sparse form. A trimmed layer's graph (:func:`trim_graph`)
    is bipartite: ``adjacency`` is ``num_targets x num_nodes``, ``in_degree``
    that of the targets.
    """

    edge_index: Tensor
    num_nodes: int
    adjacency: SparseOperator | None = None
    gcn: SparseOperator | None = None
    in_degree: Tensor | None = None
    num_targets: int | None = None
    """A layer computes only the first ``num_targets`` nodes (``None``: all; :func:`trim_graph`)."""


_KINDS_OF_MODEL: "weakref.WeakKeyDictionary[nn.Module, frozenset[str]]" = weakref.WeakKeyDictionary()


def required_operators(model: nn.Module) -> frozenset[str]:
    """The operators (:data:`SUM`, :data:`GCN`) the message-passing layers of ``model`` can use.

    Found once per model (its layers are fixed when it is built) and remembered while the model lives: the
    distillation servers ask for every teacher at every generator step.
    """
    kinds = _KINDS_OF_MODEL.get(model)
    if kinds is None:
        kinds = _KINDS_OF_MODEL[model] = _layer_operators(model)
    return kinds


def _layer_operators(model: nn.Module) -> frozenset[str]:
    kinds = set()
    for module in model.modules():
        if (isinstance(module, GCNConv) and is_plain_gcn(module)) or (
                type(module) is SGConv and module.add_self_loops) or (
                type(module) is APPNP and is_plain_appnp(module)):
            kinds.add(GCN)
        elif isinstance(module, GINConv) or (isinstance(module, SAGEConv) and is_plain_sage(module)) or (
                isinstance(module, GraphConv) and is_plain_graph_conv(module)):
            kinds.add(SUM)
    return frozenset(kinds)


def is_plain_gcn(conv: GCNConv) -> bool:
    # ``cached`` is irrelevant here: the operator passed in is the normalised adjacency of the graph at hand.
    return conv.normalize and conv.add_self_loops and not conv.improved


def is_plain_appnp(conv: APPNP) -> bool:
    # ``cached`` is irrelevant here too; edge dropout (``dropout > 0``) changes the weights at every call.
    return conv.normalize and conv.add_self_loops and conv.dropout == 0


def is_plain_sage(conv: SAGEConv) -> bool:
    return conv.aggr == "mean" and not conv.project and not conv.normalize and not isinstance(conv.lin_l, nn.ModuleList)


def is_plain_graph_conv(conv: GraphConv) -> bool:
    return conv.aggr == "add" and not isinstance(conv.lin_rel, nn.ModuleList)


def apply_conv(conv: nn.Module, x: Tensor, graph: Tensor | GraphOperators) -> Tensor:
    """``conv(x, graph)`` for an ``edge_index``; with :class:`GraphOperators`, the same layer as sparse products
    (on a trimmed graph, :func:`trim_graph`, the rows of its targets)."""
    if not isinstance(graph, GraphOperators):
        return conv(x, graph)
    if isinstance(conv, SAGEConv) and graph.adjacency is not None and is_plain_sage(conv):
        mean = (graph.adjacency @ x) / graph.in_degree.clamp(min=1).to(x.dtype).view(-1, 1)
        out = conv.lin_l(mean)
        if not conv.root_weight:
            return out
        # a trimmed graph: the targets' rows; otherwise x itself (registered constant features keep their sparse path)
        return out + conv.lin_r(x if mean.size(0) == x.size(0) else x[: mean.size(0)])
    if graph.num_targets is not None:  # a trimmed graph (trim_graph) for any other layer: PyG's, the targets' rows
        if isinstance(conv, SAGEConv):  # PyG's bipartite form: only the targets' rows, as the sparse path above
            return conv((x, x[: graph.num_targets]), graph.edge_index)
        return conv(x, graph.edge_index)[: graph.num_targets]
    if isinstance(conv, GINConv) and graph.adjacency is not None:
        if not isinstance(conv.eps, nn.Parameter) and float(conv.eps) == 0.0:
            return conv.nn(graph.adjacency.propagate(x, add_self=True))  # (1 + 0) * x is x, bit for bit
        return conv.nn(graph.adjacency @ x + (1 + conv.eps) * x)
    if isinstance(conv, GCNConv) and graph.gcn is not None and is_plain_gcn(conv):
        return graph.gcn.propagate(conv.lin(x), bias=conv.bias)
    if isinstance(conv, GraphConv) and graph.adjacency is not None and is_plain_graph_conv(conv):
        return conv.lin_rel(graph.adjacency @ x) + conv.lin_root(x)  # PyG's GraphConv.forward, same order
    # PyG's own SGConv and APPNP only: a subclass (PartlyCachedSGConv) has its own forward.
    if type(conv) is SGConv and graph.gcn is not None and conv.add_self_loops:
        return conv.lin(_sgc_propagation(conv, x, graph.gcn))
    if type(conv) is APPNP and graph.gcn is not None and is_plain_appnp(conv):
        h = x
        for _ in range(conv.K):  # PyG's APPNP.forward, same order
            x = graph.gcn @ x
            x = x * (1 - conv.alpha)
            x = x + conv.alpha * h
        return x
    return conv(x, graph.edge_index)


def target_ordered_operators(edge_index: Tensor, num_nodes: int, dtype: torch.dtype) -> GraphOperators:
    """The sum operator (:data:`SUM`) of a graph whose edges are listed by target, ascending, as a neighbour
    sample lists them (:class:`~fglcore.algorithms.graph_sampling.NeighbourSample`): the CSR rows are the edge list
    itself, so nothing is sorted, and the transpose is built only when a gradient needs it. The matrix, degrees
    and (once built) transpose are those of
    :func:`~fglcore.algorithms.training.whole_graph_operators` (``tests/test_localbias_baselines.py``)."""
    source, target = edge_index[0], edge_index[1]
    if target.numel() > 1 and not bool((target[1:] >= target[:-1]).all()):
        raise ValueError("target_ordered_operators: the edges are not listed by target (ascending)")
    in_degree = torch.bincount(target, minlength=num_nodes)
    crow = torch.cat([in_degree.new_zeros(1), torch.cumsum(in_degree, 0)])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")
        matrix = torch.sparse_csr_tensor(crow, source, torch.ones(source.numel(), dtype=dtype, device=source.device),
                                         (num_nodes, num_nodes), check_invariants=False)
    return GraphOperators(edge_index, num_nodes, adjacency=SparseOperator(matrix), in_degree=in_degree)


def trim_graph(graph: Tensor | GraphOperators, num_targets: int, num_sources: int, num_edges: int) -> GraphOperators:
    """The graph of a layer that computes only the first ``num_targets`` nodes, from the first ``num_sources``, on
    the first ``num_edges`` edges -- those into the targets (PyG's ``trim_to_layer``, bipartite).

    On a neighbour sample (:class:`~fglcore.algorithms.graph_sampling.NeighbourSample`) the nodes within ``h``
    hops of the seeds and the edges into them are prefixes, so layer ``i`` of ``L`` needs its outputs on the nodes
    within ``L - 1 - i`` hops only (Hamilton et al., NeurIPS 2017, Alg. 2:
    :class:`~fglcore.models.stacked.StackedGNN`). The sum adjacency becomes its first ``num_targets`` rows
    (``num_targets x num_sources``, views of the CSR arrays), its transpose that of those rows, built when a
    gradient needs it (:func:`csr_transpose`: a source's entries in target order, as in the whole graph's
    transpose, less those of the dropped targets, whose gradients are zero; the first layer's, whose input is
    the features, is never built); a target's row is the same sum as in the whole graph, and
    :func:`apply_conv`'s ``SAGEConv`` gives the same numbers (its root term on the targets' rows; without the
    operators, PyG's bipartite ``conv((x, x[:num_targets]), edge_index)``, so that both paths sum the same rows
    in the weights' gradients -- a sum over extra zero rows rounds differently on some CPUs). Other
    layers run PyG's own on the trimmed ``edge_index`` and keep the targets' rows -- equal for layers whose
    output at a node depends only on its in-edges and own features (``SAGEConv``, ``GINConv``,
    ``GraphConv``, ``GATConv``), not for ``GCNConv``, whose normalisation counts the sources' in-degrees (the
    GCN operator is dropped).
    """
    if not isinstance(graph, GraphOperators):
        return GraphOperators(graph[:, :num_edges], num_sources, num_targets=num_targets)
    adjacency = graph.adjacency
    if adjacency is not None:
        matrix = adjacency.matrix
        crow = matrix.crow_indices()[: num_targets + 1]
        if int(crow[-1]) != num_edges:
            raise ValueError(f"trim_graph: the first {num_edges} edges are not those into the first {num_targets} "
                             f"nodes ({int(crow[-1])} are); the graph's edges must be listed by target")
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")
            rows = torch.sparse_csr_tensor(crow, matrix.col_indices()[:num_edges], matrix.values()[:num_edges],
                                           (num_targets, num_sources), check_invariants=False)
        adjacency = SparseOperator(rows)  # its transpose when a gradient needs it
    in_degree = None if graph.in_degree is None else graph.in_degree[:num_targets]
    return GraphOperators(graph.edge_index[:, :num_edges], num_sources, adjacency=adjacency, in_degree=in_degree,
                          num_targets=num_targets)


def _sgc_propagation(conv: SGConv, x: Tensor, gcn: SparseOperator) -> Tensor:
    """``Â^K x`` as ``SGConv.forward`` computes it, reading and filling the layer's own cache (``cached=True``)."""
    if conv._cached_x is not None:
        return conv._cached_x.detach()
    for _ in range(conv.K):
        x = gcn @ x
        if conv.cached:
            conv._cached_x = x
    return x


def kinds_needed(models: Iterable[nn.Module]) -> frozenset[str]:
    """Union of :func:`required_operators` over ``models``."""
    kinds: set[str] = set()
    for model in models:
        kinds |= required_operators(model)
    return frozenset(kinds)


class _CachedProduct(torch.autograd.Function):
    """``matrix @ x`` by :func:`spmm`, gradient ``transpose @ grad`` by :func:`spmm` (no gradient for the matrix),
    the transpose built at the first backward pass and kept (:meth:`SparseOperator.transposed`)."""

    @staticmethod
    def forward(ctx, x: Tensor, operator: "SparseOperator") -> Tensor:
        ctx.operator = operator
        return spmm(operator.matrix, x.contiguous())

    @staticmethod
    def backward(ctx, grad: Tensor):
        if not ctx.needs_input_grad[0]:
            return None, None
        return spmm(ctx.operator.transposed(), grad.contiguous()), None


_CSR_OF_COO: "torch.utils.weak.WeakIdKeyDictionary | None" = None
COO_PRODUCT_MIN_NNZ = 10_000
"""Below this many entries :func:`coo_product` is ``torch.sparse.mm`` itself (the same numbers): building the CSR
matrix costs more than it saves on a small matrix used for one epoch (Cora's sampled local-bias plans)."""


def coo_product(matrix: Tensor, x: Tensor) -> Tensor:
    """``torch.sparse.mm(matrix, x)`` for a coalesced sparse COO ``matrix`` (a constant) and a dense ``x``, forward
    and backward, as CSR products (:func:`spmm`) with the CSR matrix (and, once a gradient needs it, its
    transpose) built once per ``matrix``.

    PyTorch's COO product adds ``value * x[col]`` over a row's entries in their (row-major) order, as its CSR
    product does, and its gradient is the product with the transposed entries (original rows ascending), as
    :func:`csr_transpose` lists them: the same sums, bit for bit (``tests/test_fast_graph.py`` compares values
    and gradients), without PyTorch's coalescing of the transpose in every backward pass. Off the CPU, or for
    a matrix that is not coalesced, it is ``torch.sparse.mm`` itself.
    """
    global _CSR_OF_COO
    if (matrix.device.type != "cpu" or not matrix.is_sparse or not matrix.is_coalesced() or x.is_sparse
            or matrix._nnz() < COO_PRODUCT_MIN_NNZ):
        return torch.sparse.mm(matrix, x)
    if _CSR_OF_COO is None:
        from torch.utils.weak import WeakIdKeyDictionary

        _CSR_OF_COO = WeakIdKeyDictionary()
    operator = _CSR_OF_COO.get(matrix)
    if operator is None:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")
            operator = SparseOperator(matrix.to_sparse_csr())
        _CSR_OF_COO[matrix] = operator
    return csr_product(operator, x)


def csr_product(operator: "SparseOperator", x: Tensor) -> Tensor:
    """``operator.matrix @ x`` for a constant CSR matrix by :func:`spmm`, with the gradient ``transpose @ grad``;
    the transpose (:meth:`SparseOperator.transposed`) is built at the first backward pass and kept in
    ``operator`` for the next products with the same matrix. Values and gradients are ``torch.sparse.mm``'s bit
    for bit (``tests/test_fast_graph.py``, ``tests/test_fedstar_node.py``), without PyTorch's rebuilding of the
    transpose at every backward pass (:meth:`SparseOperator.propagate` is the same with PyG's rounding)."""
    return _CachedProduct.apply(x, operator)
