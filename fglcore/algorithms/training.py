"""Local trainers shared by the algorithms.

A trainer binds one model to one client's data on a device and owns its
optimizer, so that a federated round is "load the global weights, call
:meth:`train_epochs`, read the weights back" with nothing rebuilt:

* :class:`NodeTrainer` -- full-batch node classification on a client
  subgraph (cross-entropy on the training nodes), for ``cached=True`` models
  whose normalised adjacency is computed once;
* :class:`GraphTrainer` -- mini-batch graph classification; the training
  graphs are collated once on the device and each mini-batch is sliced out of
  that collation (:class:`GraphBatcher`), the validation and test graphs are
  collated once into fixed batches.

**Fast path.** With ``fast=True`` (the default; ``FGL_GRAPH_FAST=0`` or
``fast=False`` selects the plain path) a :class:`NodeTrainer` hands its
model the whole client graph's CSR operators, and a :class:`GraphTrainer` its
model, in place of each mini-batch's ``edge_index``, the batch's CSR
adjacency matrices (:class:`~fglcore.models.operators.GraphOperators`),
sliced out of per-client matrices built once. Message passing is then one
sparse-dense product per layer instead of a gather and a scatter over the
edges (:mod:`fglcore.models.operators`); the batches, their order, the
initial weights and the dropout masks are those of the plain path, and
the products round as PyG's scatter-add does, so the two give the same
numbers bit for bit (:mod:`fglcore.models.operators`,
``tests/test_fast_graph.py``, ``benchmarks/fedstar_speed.py``).

``train_epochs(n, extra_loss=None)`` lets an algorithm add a term to every
local objective without copying the loop: ``extra_loss(output)`` receives
the model's output of the current step (all nodes of the subgraph for a node
trainer, the mini-batch's graphs for a graph trainer) and returns a scalar
added to the loss. FedProx's proximal term is one.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.data import Batch, Data
from torch_geometric.nn.conv.gcn_conv import gcn_norm

from fglcore.config import ExperimentConfig
from fglcore.metrics import Prediction, minority_mask
from fglcore.models.operators import GCN, SUM, GraphOperators, SparseOperator, required_operators
from fglcore.models.sparse_input import accept_constant_features, constant_features
from fglcore.settings import SETTINGS, setting

ExtraLoss = Callable[[Tensor], Tensor]
TrainLoss = Callable[[Tensor, Tensor], Tensor]
"""A training loss: the training nodes' outputs ``[N, C]`` and labels ``[N]`` -> a scalar."""


class WeightedCrossEntropy:
    r""":math:`\frac1{N}\sum_i w_i\,\mathrm{CE}_i` over the training nodes, one weight per node in the
    order of the trainer's ``train_idx`` (ReNode's re-weighted loss, :mod:`fglcore.algorithms.renode`).

    Shapes: ``weight`` :math:`(N,)`; called on logits :math:`(N, C)` and labels :math:`(N,)` -> scalar.
    """

    def __init__(self, weight: Tensor):
        self.weight = weight

    def __call__(self, logits: Tensor, target: Tensor) -> Tensor:
        return (F.cross_entropy(logits, target, reduction="none") * self.weight).mean()
EVAL_SPLITS = ("val", "test")
FAST_ENV = SETTINGS["graph_fast"].variable


def fast_graph_default() -> bool:
    """Whether graph trainers use sparse operators by default: ``FGL_GRAPH_FAST`` (default on; :mod:`fglcore.settings`)."""
    return setting("graph_fast")


def make_optimizer(parameters: Iterable[nn.Parameter], config: ExperimentConfig) -> torch.optim.Optimizer:
    """Adam or plain SGD (``config.optimizer``) with ``config.lr`` and ``config.weight_decay``.

    Adam uses PyTorch's fused kernel: the same update rule in one call per
    step instead of one per parameter, which makes many small client
    optimisers about 30% cheaper (``benchmarks/simulation_overhead.py``).
    """
    parameters = [p for p in parameters if p.requires_grad]
    if config.optimizer == "adam":
        return torch.optim.Adam(parameters, lr=config.lr, weight_decay=config.weight_decay, fused=True)
    if config.optimizer == "sgd":
        return torch.optim.SGD(parameters, lr=config.lr, weight_decay=config.weight_decay)
    raise ValueError(f"unknown optimizer {config.optimizer!r}; accepted: adam, sgd")


def client_seed(seed: int, cid: int) -> int:
    """A seed for client ``cid``'s private generator, independent across (seed, client) pairs."""
    return int(np.random.SeedSequence([seed, cid]).generate_state(1)[0])


class NodeTrainer:
    """Full-batch node classification of one model on one graph.

    ``data`` needs ``x``, ``edge_index``, ``y`` and boolean ``train_mask``,
    ``val_mask``, ``test_mask``; it is moved to ``device`` once. ``minority``
    marks FedSpray's minority nodes (label differs from the client's majority
    training class); by default it is computed from ``data`` itself.

    ``fast`` (default :func:`fast_graph_default`) hands a model that declares
    ``accepts_graph_operators`` (:class:`~fglcore.models.stacked.StackedGNN`:
    GCN, GraphSAGE, GIN, GAT, and APFL's mixture of one) the
    client graph's sparse operators, built once, instead of its
    ``edge_index``: bit for bit the same numbers (see the module
    docstring). The first layer
    multiplies the features sparsely when they are sparse
    (:mod:`fglcore.models.sparse_input`).
    """

    def __init__(
        self,
        model: nn.Module,
        data: Data,
        config: ExperimentConfig,
        device: torch.device,
        *,
        minority: Tensor | None = None,
        fast: bool | None = None,
    ):
        self.model = accept_constant_features(model.to(device))
        self.config = config
        self.device = device
        self.x = constant_features(data.x.to(device))
        self.edge_index = data.edge_index.to(device)
        self.fast = fast_graph_default() if fast is None else bool(fast)
        accepts = getattr(self.model, "accepts_graph_operators", False)
        kinds = required_operators(self.model) if self.fast and accepts else frozenset()
        self.graph = whole_graph_operators(self.edge_index, data.num_nodes, kinds, self.x.dtype) if kinds \
            else self.edge_index
        self.y = data.y.to(device)
        self.train_idx = data.train_mask.nonzero().view(-1).to(device)
        self.y_train = self.y[self.train_idx]
        self.eval_idx = {s: getattr(data, f"{s}_mask").nonzero().view(-1).to(device) for s in EVAL_SPLITS}
        if minority is None:
            minority = minority_mask(data.y, data.y[data.train_mask])
        self.minority = minority.to(device)
        self.optimizer = make_optimizer(self.model.parameters(), config)
        self.train_loss: TrainLoss = F.cross_entropy
        """The loss on the training nodes (:data:`TrainLoss`; default the mean cross-entropy); see :meth:`backward`."""

    @property
    def num_train_samples(self) -> int:
        return int(self.train_idx.numel())

    def __setstate__(self, state: dict) -> None:
        # A trainer loaded from a checkpoint holds new tensors: register its features again.
        state = {key: value for key, value in state.items() if key != "train_weight"}  # saved before train_loss
        self.__dict__.update({"train_loss": F.cross_entropy, **state})
        constant_features(self.x)

    def reset_optimizer(self) -> None:
        """Forget the optimizer's state (Adam moments, step counts)."""
        self.optimizer.state.clear()

    def forward(self) -> Tensor:
        return self.model(self.x, self.graph)

    def backward(self, extra_loss: ExtraLoss | None = None) -> Tensor:
        """One full-batch gradient, no step: clears the gradients, then back-propagates :attr:`train_loss`
        over the training nodes (plus ``extra_loss(output)``) in train mode; returns the loss, detached.

        Algorithms set :attr:`train_loss` for another loss: ReNode's :class:`WeightedCrossEntropy`
        (:mod:`fglcore.algorithms.renode`), O-pFGL's focal loss (``stage2="ft_focal"``).

        A step of :meth:`train_epochs`; FedSGD clients upload the gradients it leaves
        (:mod:`fglcore.algorithms.fedsgd`).
        """
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        out = self.forward()
        loss = self.train_loss(out[self.train_idx], self.y_train)
        if extra_loss is not None:
            loss = loss + extra_loss(out)
        loss.backward()
        return loss.detach()

    def train_epochs(self, epochs: int, extra_loss: ExtraLoss | None = None) -> float:
        """``epochs`` full-batch steps (:meth:`backward`, then an optimizer step); returns the last step's loss."""
        loss = torch.zeros((), device=self.device)
        for _ in range(epochs):
            loss = self.backward(extra_loss)
            self.optimizer.step()
        return float(loss)

    @torch.no_grad()
    def logits(self) -> Tensor:
        """Outputs for every node, in eval mode (dropout off)."""
        self.model.eval()
        return self.forward()

    def predict(self) -> dict[str, Prediction]:
        out = self.logits()
        return {
            split: Prediction(out[idx], self.y[idx], self.minority[idx]) for split, idx in self.eval_idx.items()
        }


class MiniBatchNodeTrainer(NodeTrainer):
    """A :class:`NodeTrainer` whose epoch is one pass over sampled mini-batches; evaluation stays full-batch.

    Subclasses give :meth:`batches` (the mini-batches of one epoch, sampled
    lazily, so each is drawn just before its step) and :meth:`batch_loss`;
    every batch is one optimizer step. GraphSAGE's neighbour sampling
    (:mod:`fglcore.algorithms.graphsage`) and GraphSAINT's subgraphs
    (:mod:`fglcore.algorithms.graphsaint`) train this way.
    """

    def batches(self) -> Iterator[Any]:
        raise NotImplementedError

    def batch_loss(self, batch: Any) -> Tensor:
        """The training loss on one mini-batch, in train mode (the caller back-propagates it)."""
        raise NotImplementedError

    def train_epochs(self, epochs: int, extra_loss: ExtraLoss | None = None) -> float:
        """``epochs`` passes over :meth:`batches`, one optimizer step each; returns the last step's loss."""
        if extra_loss is not None:
            raise ValueError(f"{type(self).__name__} trains on sampled mini-batches and takes no extra loss")
        loss = torch.zeros(())
        for _ in range(epochs):
            for batch in self.batches():
                self.model.train()
                self.optimizer.zero_grad(set_to_none=True)
                loss = self.batch_loss(batch)
                loss.backward()
                self.optimizer.step()
        return float(loss.detach())


def _exclusive_cumsum(sizes: Tensor) -> Tensor:
    return torch.cumsum(sizes, 0) - sizes


def _ranges(starts: Tensor, sizes: Tensor) -> Tensor:
    """Concatenation of ``arange(start, start + size)`` for each pair, without a Python loop."""
    total = int(sizes.sum())
    offsets = torch.repeat_interleave(starts - _exclusive_cumsum(sizes), sizes, output_size=total)
    return offsets + torch.arange(total, device=starts.device)


class _BlockCSR:
    """A block-diagonal sparse matrix (one block per graph) from which any list of blocks is assembled as CSR.

    ``row``, ``col``, ``value`` are the entries of the whole matrix over the
    collated nodes; ``node_ptr`` delimits the graphs. The entries of a row
    keep their order in the input (a stable sort by row; duplicates are kept),
    so a row is summed in the order PyG's scatter sums it over the edge list.
    :meth:`select` returns the block-diagonal matrix of the chosen graphs, in
    the chosen order, with a few vectorised index operations.
    """

    def __init__(self, row: Tensor, col: Tensor, value: Tensor, node_ptr: Tensor):
        n = int(node_ptr[-1])
        rows, order = torch.sort(row, stable=True)
        cols, self.values = col[order], value[order]
        self.row_counts = torch.bincount(rows, minlength=n)
        row_ptr = torch.cat([self.row_counts.new_zeros(1), torch.cumsum(self.row_counts, 0)])
        graph_of_node = torch.repeat_interleave(torch.arange(node_ptr.numel() - 1, device=row.device),
                                                node_ptr[1:] - node_ptr[:-1])
        self.local_cols = cols - node_ptr[graph_of_node[rows]] if rows.numel() else cols
        self.edge_starts = row_ptr[node_ptr[:-1]]
        self.edge_sizes = row_ptr[node_ptr[1:]] - self.edge_starts
        self.entries = (rows, cols)

    def select(self, idx: Tensor, node_ids: Tensor, new_starts: Tensor) -> Tensor:
        """CSR matrix of graphs ``idx``; ``node_ids`` their nodes in order, ``new_starts`` each graph's first row."""
        sizes = self.edge_sizes[idx]
        edges = _ranges(self.edge_starts[idx], sizes)
        cols = self.local_cols[edges] + torch.repeat_interleave(new_starts, sizes, output_size=edges.numel())
        counts = self.row_counts[node_ids]
        crow = torch.cat([counts.new_zeros(1), torch.cumsum(counts, 0)])
        m = node_ids.numel()
        return torch.sparse_csr_tensor(crow, cols, self.values[edges], (m, m), check_invariants=False)

    def same_entries(self, other: "_BlockCSR") -> bool:
        """Whether both hold the same entries in the same order (then one serves as the other)."""
        return all(map(torch.equal, (*self.entries, self.values), (*other.entries, other.values)))


class _OperatorBlocks:
    """The sparse operators (:mod:`fglcore.models.operators`) of a collated set of graphs, by block."""

    def __init__(self, edge_index: Tensor, node_ptr: Tensor, kinds: frozenset[str], dtype: torch.dtype):
        self.kinds = kinds
        n = int(node_ptr[-1])
        source, target = edge_index[0], edge_index[1]
        self.blocks: dict[str, tuple[_BlockCSR, _BlockCSR | None]] = {}
        if SUM in kinds:
            ones = torch.ones(source.numel(), dtype=dtype, device=source.device)
            self.blocks[SUM] = self._pair(target, source, ones, node_ptr)
            self.in_degree = torch.bincount(target, minlength=n)
        if GCN in kinds:
            gcn_edges, weight = gcn_norm(edge_index, None, n, False, True, "source_to_target", dtype)
            self.blocks[GCN] = self._pair(gcn_edges[1], gcn_edges[0], weight, node_ptr)

    @staticmethod
    def _pair(row: Tensor, col: Tensor, value: Tensor, node_ptr: Tensor) -> tuple[_BlockCSR, _BlockCSR | None]:
        """The matrix and its transpose (``None`` when the matrix is symmetric, as for undirected graphs)."""
        matrix, transpose = _BlockCSR(row, col, value, node_ptr), _BlockCSR(col, row, value, node_ptr)
        return matrix, None if matrix.same_entries(transpose) else transpose

    def select(self, edge_index: Tensor, idx: Tensor, node_ids: Tensor, new_starts: Tensor) -> GraphOperators:
        ops: dict[str, SparseOperator] = {}
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")
            for kind, (matrix, transpose) in self.blocks.items():
                selected = matrix.select(idx, node_ids, new_starts)
                selected_t = selected if transpose is None else transpose.select(idx, node_ids, new_starts)
                ops[kind] = SparseOperator(selected, selected_t)
        return GraphOperators(
            edge_index,
            node_ids.numel(),
            adjacency=ops.get(SUM),
            gcn=ops.get(GCN),
            in_degree=self.in_degree[node_ids] if SUM in ops else None,
        )


def whole_graph_operators(edge_index: Tensor, num_nodes: int, kinds: frozenset[str],
                          dtype: torch.dtype) -> GraphOperators:
    """The sparse operators of one whole graph (a node-classification client), built once."""
    device = edge_index.device
    first = torch.zeros(1, dtype=torch.long, device=device)
    blocks = _OperatorBlocks(edge_index, torch.tensor([0, num_nodes], device=device), kinds, dtype)
    return blocks.select(edge_index, first, torch.arange(num_nodes, device=device), first)


class GraphBatcher:
    """Graphs collated once on the device; :meth:`select` returns any subset as one mini-batch.

    ``select(idx)`` equals ``Batch.from_data_list([graphs[i] for i in idx])``
    on every tensor attribute (``edge_index`` and other incremented
    attributes are re-offset) plus ``batch``, but costs a few vectorised
    index operations instead of a Python collation per mini-batch.

    ``operators`` (kinds of :mod:`fglcore.models.operators`, e.g. from
    :func:`~fglcore.models.operators.required_operators`) adds the batch's
    sparse adjacency matrices as ``batch.operators``, assembled from
    per-graph blocks built once here.
    """

    def __init__(self, graphs: Sequence[Data], device: torch.device, operators: Iterable[str] = ()):
        graphs = list(graphs)
        if not graphs:
            raise ValueError("GraphBatcher needs at least one graph")
        collated = Batch.from_data_list(graphs).to(device)
        self.num_graphs = len(graphs)
        self.device = device
        self.num_nodes = (collated.ptr[1:] - collated.ptr[:-1]).to(device)
        self.node_starts = collated.ptr[:-1].to(device)
        self.values: dict[str, Tensor] = {}
        self.cat_dims: dict[str, int] = {}
        self.starts: dict[str, Tensor] = {}
        self.sizes: dict[str, Tensor] = {}
        self.increments: dict[str, tuple[Tensor, Tensor]] = {}
        for key, value in collated.to_dict().items():
            if key in ("batch", "ptr") or not torch.is_tensor(value):
                continue
            cat_dim = graphs[0].__cat_dim__(key, graphs[0][key])
            self.values[key] = value
            self.cat_dims[key] = 0 if cat_dim is None else cat_dim % max(value.dim(), 1)
            slices = collated._slice_dict[key].to(device)
            self.starts[key] = slices[:-1]
            self.sizes[key] = slices[1:] - slices[:-1]
            amounts = [g.__inc__(key, g[key]) for g in graphs]
            if any(torch.is_tensor(a) and a.numel() != 1 for a in amounts):
                raise ValueError(f"GraphBatcher cannot re-offset attribute {key!r} with a non-scalar increment")
            amounts = torch.tensor([int(a) for a in amounts], device=device)
            if bool((amounts != 0).any()):
                self.increments[key] = (collated._inc_dict[key].to(device).view(-1), amounts)
        kinds = frozenset(operators)
        self.operators: _OperatorBlocks | None = None
        if kinds:
            if "edge_index" not in self.values:
                raise ValueError("GraphBatcher: sparse operators need graphs with an 'edge_index'")
            x = self.values.get("x")
            dtype = x.dtype if x is not None and x.is_floating_point() else torch.float32
            self.operators = _OperatorBlocks(self.values["edge_index"], collated.ptr.to(device), kinds, dtype)

    def select(self, idx: Tensor) -> Data:
        """The graphs ``idx`` (in that order) as one mini-batch with a ``batch`` vector."""
        idx = idx.to(self.device)
        out = {}
        for key, value in self.values.items():
            dim = self.cat_dims[key]
            sizes = self.sizes[key][idx]
            part = value.index_select(dim, _ranges(self.starts[key][idx], sizes))
            if key in self.increments:
                old, amounts = self.increments[key]
                shift = _exclusive_cumsum(amounts[idx]) - old[idx]
                shape = [1] * part.dim()
                shape[dim] = -1
                part = part + torch.repeat_interleave(shift, sizes).view(shape).to(part.dtype)
            out[key] = part
        num_nodes = self.num_nodes[idx]
        out["batch"] = torch.repeat_interleave(torch.arange(idx.numel(), device=self.device), num_nodes)
        batch = Data(**out, num_nodes=int(num_nodes.sum()))
        if self.operators is not None:
            node_ids = _ranges(self.node_starts[idx], num_nodes)
            batch.operators = self.operators.select(out["edge_index"], idx, node_ids, _exclusive_cumsum(num_nodes))
        return batch

    def chunks(self, batch_size: int) -> list[Data]:
        """Consecutive chunks of ``batch_size`` graphs, in order (as :func:`collate_in_batches`)."""
        return [
            self.select(torch.arange(i, min(i + batch_size, self.num_graphs), device=self.device))
            for i in range(0, self.num_graphs, batch_size)
        ]


def collate_in_batches(graphs: Sequence[Data], batch_size: int, device: torch.device) -> list[Batch]:
    """Consecutive chunks of ``batch_size`` graphs, collated once and moved to ``device``."""
    graphs = list(graphs)
    return [Batch.from_data_list(graphs[i : i + batch_size]).to(device) for i in range(0, len(graphs), batch_size)]


class GraphTrainer:
    """Mini-batch graph classification of one model.

    Each epoch shuffles the training graphs with a private generator seeded
    by ``seed`` and visits them in mini-batches of ``config.batch_size`` (the
    last one may be smaller, as PyG's ``DataLoader(shuffle=True)`` in
    GCFL/FedStar). ``eval_graphs`` maps ``val``/``test`` to the graphs
    :meth:`predict` scores. Graph-level predictions carry no ``minority``
    mask (a node-level notion).

    ``fast`` (default :func:`fast_graph_default`, i.e. on unless
    ``FGL_GRAPH_FAST=0``) passes the model each batch's sparse operators
    instead of its ``edge_index`` (see the module docstring); models whose
    layers have no sparse form get the ``edge_index`` as before.
    """

    def __init__(
        self,
        model: nn.Module,
        train_graphs: Sequence[Data],
        eval_graphs: Mapping[str, Sequence[Data]],
        config: ExperimentConfig,
        device: torch.device,
        *,
        seed: int,
        fast: bool | None = None,
    ):
        self.model = model.to(device)
        self.config = config
        self.device = device
        self.batch_size = config.batch_size
        self.fast = fast_graph_default() if fast is None else bool(fast)
        kinds = required_operators(self.model) if self.fast else frozenset()
        self.train_set = GraphBatcher(train_graphs, device, kinds)
        if kinds:
            self.eval_batches = {
                split: GraphBatcher(g, device, kinds).chunks(config.batch_size) if len(g) else []
                for split, g in eval_graphs.items()
            }
        else:
            self.eval_batches = {
                split: collate_in_batches(g, config.batch_size, device) for split, g in eval_graphs.items()
            }
        self.generator = torch.Generator().manual_seed(seed)
        self.optimizer = make_optimizer(self.model.parameters(), config)

    @property
    def num_train_samples(self) -> int:
        return self.train_set.num_graphs

    def reset_optimizer(self) -> None:
        """Forget the optimizer's state (Adam moments, step counts)."""
        self.optimizer.state.clear()

    @staticmethod
    def graph_of(batch: Data | Batch) -> Tensor | GraphOperators:
        """What the model's layers propagate over: the batch's sparse operators, else its ``edge_index``."""
        operators = getattr(batch, "operators", None)
        return batch.edge_index if operators is None else operators

    def forward(self, batch: Data) -> Tensor:
        return self.model(batch.x, self.graph_of(batch), batch.batch)

    def train_epochs(self, epochs: int, extra_loss: ExtraLoss | None = None) -> float:
        """``epochs`` passes over the shuffled training graphs; returns the mean loss of the last epoch."""
        self.model.train()
        n, total, steps = self.train_set.num_graphs, torch.zeros((), device=self.device), 0
        for _ in range(epochs):
            order = torch.randperm(n, generator=self.generator).to(self.device)
            total, steps = torch.zeros((), device=self.device), 0
            for start in range(0, n, self.batch_size):
                batch = self.train_set.select(order[start : start + self.batch_size])
                self.optimizer.zero_grad(set_to_none=True)
                out = self.forward(batch)
                loss = F.cross_entropy(out, batch.y.view(-1))
                if extra_loss is not None:
                    loss = loss + extra_loss(out)
                loss.backward()
                self.optimizer.step()
                total, steps = total + loss.detach(), steps + 1
        return float(total) / steps if steps else math.nan

    @torch.no_grad()
    def predict_batches(self, batches: Sequence[Batch]) -> Prediction:
        """Scores of the model on pre-collated ``batches``, in eval mode (dropout off)."""
        self.model.eval()
        if not batches:
            return Prediction(torch.zeros(0, 0, device=self.device), torch.zeros(0, dtype=torch.long, device=self.device))
        logits = torch.cat([self.forward(b) for b in batches])
        return Prediction(logits, torch.cat([b.y.view(-1) for b in batches]))

    def predict(self) -> dict[str, Prediction]:
        return {split: self.predict_batches(batches) for split, batches in self.eval_batches.items()}
