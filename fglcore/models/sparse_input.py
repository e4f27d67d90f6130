"""Linear layers on fixed, sparse node features, as CSR sparse-dense products.

The node-classification datasets of the FGL papers carry bag-of-words
features: Cora's 1,433 binary columns have about 18 ones per row (1.3%),
CiteSeer's 3,703 about 32 (0.9%). The first layer of every model multiplies
that matrix by a weight matrix, forward and (for the weight's gradient)
backward, and on CPU those two dense products are most of a training step
on a small client. As CSR sparse-dense products they cost nnz instead of
n x d multiply-adds: about 8x less for a Cora client, 10x for CiteSeer,
forward and backward together. GraphSAGE also aggregates the raw features
over the neighbours in its first layer; that aggregation is fixed too and
is computed once (:func:`derived_constant`). Together with CSR message
passing (:mod:`fglcore.models.operators`), FedSpray's Table 2 runs with GCN
and GraphSAGE take 1.5-3x less time, GraphSAGE on Chameleon (2,325
columns, 31k edges) 9-11x less; SGC, whose propagated features PyG already
caches, is unchanged (``make benchmark-node``, one thread).

The features of a client never change during training, so the sparse form
is built once: :func:`constant_features` registers a feature tensor (when
its density is at most :data:`MAX_DENSITY`) and keeps its CSR matrix and the
CSR matrix of its transpose. A model prepared with
:func:`accept_constant_features` computes ``x W^T + b`` with them whenever
it is handed exactly that tensor, unchanged since it was registered (same
object, same ``_version``); any other input (hidden activations, a fresh
slice) takes ``F.linear``. Registration is weak: a tensor that is freed is
forgotten.

Same sums, other order: each output is the sum of the nonzero terms only,
so results differ from the dense product in the last bits (about 1e-6
relative), like results on two BLAS builds. Runs stay deterministic.
``FGL_SPARSE_FEATURES=0`` turns the sparse path off.
"""
from __future__ import annotations

import warnings
import weakref
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.weak import WeakIdKeyDictionary
from torch_geometric.nn import GCNConv, SAGEConv
from torch_geometric.nn.dense.linear import Linear as PyGLinear

from fglcore.models.operators import (
    GraphOperators,
    apply_conv,
    csr_transpose,
    is_plain_gcn,
    is_plain_sage,
    spmm,
    transposed,
)
from fglcore.settings import SETTINGS, setting

SPARSE_ENV = SETTINGS["sparse_features"].variable

#: Densest feature matrix kept in sparse form; past about 10% the dense product is as fast.
MAX_DENSITY = 0.05

_REGISTERED: WeakIdKeyDictionary = WeakIdKeyDictionary()


def sparse_features_enabled() -> bool:
    """Whether :func:`constant_features` registers anything: ``FGL_SPARSE_FEATURES`` (default on; :mod:`fglcore.settings`)."""
    return setting("sparse_features")


def _csr(matrix: Tensor) -> Tensor:
    rows, cols = matrix.nonzero(as_tuple=True)
    counts = torch.bincount(rows, minlength=matrix.size(0))
    crow = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")
        return torch.sparse_csr_tensor(
            crow, cols, matrix[rows, cols], size=tuple(matrix.shape), check_invariants=False
        )


class _Registered:
    __slots__ = ("version", "matrix", "transpose", "derived")

    def __init__(self, x: Tensor):
        self.version = x._version
        self.matrix = _csr(x)
        self.transpose = csr_transpose(self.matrix)
        self.derived: dict[str, tuple[weakref.ref, int, Tensor]] = {}


def constant_features(x: Tensor) -> Tensor:
    """Register ``x`` (a 2-D float tensor that will not change) for sparse first layers; returns ``x``.

    Nothing is registered when the sparse path is off, when ``x`` needs a
    gradient or is not a 2-D floating-point tensor, or when more than
    :data:`MAX_DENSITY` of its entries are nonzero.
    """
    if (
        sparse_features_enabled()
        and x.dim() == 2
        and x.is_floating_point()
        and not x.requires_grad
        and x.layout == torch.strided
        and x.numel() > 0
        and x not in _REGISTERED
        and torch.count_nonzero(x).item() <= MAX_DENSITY * x.numel()
    ):
        _REGISTERED[x] = _Registered(x)
    return x


def registered_csr(x: Tensor) -> Tensor | None:
    """The CSR matrix kept for registered, unchanged ``x`` (``None`` otherwise): what a checkpoint stores of it."""
    entry = _current(x)
    return None if entry is None else entry.matrix


def restore_constant(matrix: Tensor) -> Tensor:
    """The dense tensor of CSR ``matrix`` (a :func:`registered_csr`), registered again with that matrix.

    Densifying keeps every stored value, so the restored features equal the
    registered ones and a resumed run computes what an uninterrupted one does.
    """
    x = matrix.to_dense()
    entry = _Registered.__new__(_Registered)
    entry.version, entry.matrix, entry.transpose, entry.derived = x._version, matrix, csr_transpose(matrix), {}
    _REGISTERED[x] = entry
    return x


def _current(x: Tensor) -> _Registered | None:
    """``x``'s registration if it is unchanged since (same ``_version``), else ``None``."""
    entry = _REGISTERED.get(x)
    return entry if entry is not None and entry.version == x._version else None


def is_registered(x: Tensor) -> bool:
    """Whether ``x`` is registered and unchanged since."""
    return _current(x) is not None


def derived_constant(x: Tensor, name: str, graph: Tensor, compute: Callable[[], Tensor]) -> Tensor:
    """``compute()``, a function of registered ``x`` and ``graph`` alone, evaluated once while both are unchanged.

    Without a registration it is ``compute()`` on every call. The value is
    kept with ``x``'s registration under ``name`` and is itself registered
    (sparse when it is sparse enough); GraphSAGE's first-layer neighbour
    aggregation is one such value.
    """
    entry = _current(x)
    if entry is None:
        return compute()
    kept = entry.derived.get(name)
    if kept is not None and kept[0]() is graph and kept[1] == graph._version:
        return kept[2]
    value = constant_features(compute().detach())
    entry.derived[name] = (weakref.ref(graph), graph._version, value)
    return value


class _SparseLinear(torch.autograd.Function):
    """``matrix @ weight^T`` with the weight's gradient ``(transpose @ grad)^T``."""

    @staticmethod
    def forward(ctx, matrix: Tensor, transpose: Tensor, weight: Tensor) -> Tensor:
        ctx.transpose = transpose
        return spmm(matrix, transposed(weight))

    @staticmethod
    def backward(ctx, grad: Tensor):
        return None, None, transposed(spmm(ctx.transpose, grad.contiguous()))


def linear(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """``F.linear(x, weight, bias)``, as a sparse product when ``x`` is registered and unchanged."""
    entry = _current(x)
    if entry is None or entry.matrix.device != weight.device:
        return F.linear(x, weight, bias)
    out = _SparseLinear.apply(entry.matrix, entry.transpose, weight)
    return out if bias is None else out + bias


def concat_linear(lin: nn.Module, fixed: Tensor, trained: Tensor) -> Tensor:
    """``lin(torch.cat([fixed, trained], -1))`` without building the concatenation.

    ``W [a || b] = W_a a + W_b b``: the registered ``fixed`` block goes
    through :func:`linear`'s sparse product with the weight's leading
    columns, the ``trained`` block through a dense one. FedStar's node
    model feeds ``[x || g]`` to its first feature layer (FedStar Eq. 7); on
    Coauthor Physics (8,415 columns, 0.4% nonzero) the concatenation and
    the dense product on it were most of a FedStar step.
    """
    columns = fixed.size(-1)
    out = linear(fixed, lin.weight[:, :columns], None) + F.linear(trained, lin.weight[:, columns:])
    return out if lin.bias is None else out + lin.bias


def apply_conv_to_concat(conv: nn.Module, fixed: Tensor, trained: Tensor, graph: Tensor | GraphOperators) -> Tensor:
    """``apply_conv(conv, torch.cat([fixed, trained], -1), graph)``, without the concatenation where it can.

    A GCN layer (``Â [a || b] W^T``) or a mean-aggregating GraphSAGE layer
    is linear in its input columns, so with registered ``fixed`` features
    and the trainers' operators the layer runs as :func:`concat_linear`
    (GraphSAGE's mean of ``fixed`` over the neighbours is computed once,
    :func:`derived_constant`). Any other case concatenates. Same sums in
    another order: the last bits differ from the concatenated product.
    """
    if isinstance(graph, GraphOperators) and is_registered(fixed):
        if isinstance(conv, GCNConv) and graph.gcn is not None and is_plain_gcn(conv):
            return graph.gcn.propagate(concat_linear(conv.lin, fixed, trained), bias=conv.bias)
        if isinstance(conv, SAGEConv) and graph.adjacency is not None and is_plain_sage(conv):
            degree = graph.in_degree.clamp(min=1).to(trained.dtype).view(-1, 1)
            mean_fixed = derived_constant(fixed, "mean_aggregation", graph.edge_index,
                                          lambda: (graph.adjacency @ fixed) / degree)
            out = concat_linear(conv.lin_l, mean_fixed, (graph.adjacency @ trained) / degree)
            return out + concat_linear(conv.lin_r, fixed, trained) if conv.root_weight else out
    return apply_conv(conv, torch.cat([fixed, trained], dim=-1), graph)


class SparseInputLinear(nn.Linear):
    """``nn.Linear`` that multiplies registered constant features sparsely (see :func:`linear`)."""

    def forward(self, x: Tensor) -> Tensor:
        return linear(x, self.weight, self.bias)


class SparseInputPyGLinear(PyGLinear):
    """PyG's ``Linear`` (used inside its convolutions) with the same sparse path."""

    def forward(self, x: Tensor) -> Tensor:
        return linear(x, self.weight, self.bias)


_SPARSE_CLASS = {nn.Linear: SparseInputLinear, PyGLinear: SparseInputPyGLinear}


def accept_constant_features(model: nn.Module) -> nn.Module:
    """Let every linear layer of ``model`` use the sparse path; returns ``model``.

    Only the class of each ``nn.Linear`` / PyG ``Linear`` changes (as
    ``torch.nn.utils.parametrize`` does): parameters, their names and the
    random initialisation stay as they were.
    """
    for module in model.modules():
        sparse_class = _SPARSE_CLASS.get(type(module))
        if sparse_class is not None:
            module.__class__ = sparse_class
    return model
