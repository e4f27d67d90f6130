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

``train_epochs(n, extra_loss=None)`` lets an algorithm add a term to every
local objective without copying the loop: ``extra_loss(output)`` receives
the model's output of the current step (all nodes of the subgraph for a node
trainer, the mini-batch's graphs for a graph trainer) and returns a scalar
added to the loss. FedProx's proximal term is one.
"""
from __future__ import annotations

import math
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.data import Batch, Data

from fglcore.config import ExperimentConfig
from fglcore.metrics import Prediction, minority_mask

ExtraLoss = Callable[[Tensor], Tensor]
EVAL_SPLITS = ("val", "test")


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
    """

    def __init__(
        self,
        model: nn.Module,
        data: Data,
        config: ExperimentConfig,
        device: torch.device,
        *,
        minority: Tensor | None = None,
    ):
        self.model = model.to(device)
        self.config = config
        self.device = device
        self.x = data.x.to(device)
        self.edge_index = data.edge_index.to(device)
        self.y = data.y.to(device)
        self.train_idx = data.train_mask.nonzero().view(-1).to(device)
        self.y_train = self.y[self.train_idx]
        self.eval_idx = {s: getattr(data, f"{s}_mask").nonzero().view(-1).to(device) for s in EVAL_SPLITS}
        if minority is None:
            minority = minority_mask(data.y, data.y[data.train_mask])
        self.minority = minority.to(device)
        self.optimizer = make_optimizer(self.model.parameters(), config)

    @property
    def num_train_samples(self) -> int:
        return int(self.train_idx.numel())

    def reset_optimizer(self) -> None:
        """Forget the optimizer's state (Adam moments, step counts)."""
        self.optimizer.state.clear()

    def forward(self) -> Tensor:
        return self.model(self.x, self.edge_index)

    def train_epochs(self, epochs: int, extra_loss: ExtraLoss | None = None) -> float:
        """``epochs`` full-batch steps; returns the last step's loss."""
        self.model.train()
        loss = torch.zeros((), device=self.device)
        for _ in range(epochs):
            self.optimizer.zero_grad(set_to_none=True)
            out = self.forward()
            loss = F.cross_entropy(out[self.train_idx], self.y_train)
            if extra_loss is not None:
                loss = loss + extra_loss(out)
            loss.backward()
            self.optimizer.step()
        return float(loss.detach())

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


def _exclusive_cumsum(sizes: Tensor) -> Tensor:
    return torch.cumsum(sizes, 0) - sizes


def _ranges(starts: Tensor, sizes: Tensor) -> Tensor:
    """Concatenation of ``arange(start, start + size)`` for each pair, without a Python loop."""
    total = int(sizes.sum())
    offsets = torch.repeat_interleave(starts - _exclusive_cumsum(sizes), sizes, output_size=total)
    return offsets + torch.arange(total, device=starts.device)


class GraphBatcher:
    """Graphs collated once on the device; :meth:`select` returns any subset as one mini-batch.

    ``select(idx)`` equals ``Batch.from_data_list([graphs[i] for i in idx])``
    on every tensor attribute (``edge_index`` and other incremented
    attributes are re-offset) plus ``batch``, but costs a few vectorised
    index operations instead of a Python collation per mini-batch.
    """

    def __init__(self, graphs: Sequence[Data], device: torch.device):
        graphs = list(graphs)
        if not graphs:
            raise ValueError("GraphBatcher needs at least one graph")
        collated = Batch.from_data_list(graphs).to(device)
        self.num_graphs = len(graphs)
        self.device = device
        self.num_nodes = (collated.ptr[1:] - collated.ptr[:-1]).to(device)
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
        return Data(**out, num_nodes=int(num_nodes.sum()))


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
    ):
        self.model = model.to(device)
        self.config = config
        self.device = device
        self.batch_size = config.batch_size
        self.train_set = GraphBatcher(train_graphs, device)
        self.eval_batches = {split: collate_in_batches(g, config.batch_size, device) for split, g in eval_graphs.items()}
        self.generator = torch.Generator().manual_seed(seed)
        self.optimizer = make_optimizer(self.model.parameters(), config)

    @property
    def num_train_samples(self) -> int:
        return self.train_set.num_graphs

    def reset_optimizer(self) -> None:
        """Forget the optimizer's state (Adam moments, step counts)."""
        self.optimizer.state.clear()

    def forward(self, batch: Data) -> Tensor:
        return self.model(batch.x, batch.edge_index, batch.batch)

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
