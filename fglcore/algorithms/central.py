"""Centralised training: one model on all the federation's data (the upper reference of FGL tables).

Node task, option ``graph``:

* ``"whole"`` (default): the global graph ``federation.data`` with every
  edge, cross-client edges included; training, validation and test nodes are
  the union of the clients' splits mapped to global ids. This is the
  "centralized"/"global" row of FedStruct and O-pFGL.
* ``"union"``: the disjoint union of the client subgraphs -- the same nodes
  and splits but no cross-client edges, i.e. what the clients hold together.

Graph task: one model on the pooled training graphs of all clients; this
needs every client to have the same feature width and classes (not the case
for federations of different TU datasets, which raise an error).

Each round trains ``config.local_epochs`` epochs with one optimizer kept for
the whole run, so histories align with federated runs of the same config.
The central model is evaluated on each client's validation and test samples
(one :class:`CentralView` per client), so per-client rows and every
``metric_aggregation`` mean the same as in federated runs; ``minority``
nodes are those whose label differs from *their client's* majority training
class, as for federated methods. No message is sent.
"""
from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch_geometric.data import Data

from fglcore.algorithms.base import Algorithm, graph_split, register_algorithm
from fglcore.algorithms.training import EVAL_SPLITS, GraphTrainer, NodeTrainer, client_seed, collate_in_batches
from fglcore.config import ConfigError
from fglcore.fl.channel import Channel
from fglcore.fl.engine import Client
from fglcore.metrics import Prediction, minority_mask
from fglcore.runtime import set_seed


def whole_graph(full: Data, clients: list[Data]) -> tuple[Data, list[Tensor]]:
    """The global graph ``full`` with the clients' splits mapped to global ids; node ids of each client."""
    num_nodes = int(full.num_nodes)
    masks = {s: torch.zeros(num_nodes, dtype=torch.bool) for s in ("train", *EVAL_SPLITS)}
    node_ids = []
    for c in clients:
        ids = c.global_id.long().cpu()
        for split, mask in masks.items():
            mask[ids[getattr(c, f"{split}_mask")]] = True
        node_ids.append(ids)
    data = Data(x=full.x, edge_index=full.edge_index, y=full.y, num_nodes=num_nodes)
    for split, mask in masks.items():
        data[f"{split}_mask"] = mask
    return data, node_ids


class CentralNodeLearner:
    """The central node classifier; trains once per round however many views ask, predicts once per state."""

    def __init__(self, trainer: NodeTrainer, epochs: int, client_nodes: list[dict[str, Tensor]]):
        self.trainer = trainer
        self.epochs = epochs
        self.client_nodes = client_nodes
        self._trained_round = 0
        self._logits: Tensor | None = None

    def train_round(self, round: int) -> None:
        if round != self._trained_round:
            self.trainer.train_epochs(self.epochs)
            self._trained_round = round
            self._logits = None

    def predict(self, cid: int) -> dict[str, Prediction]:
        if self._logits is None:
            self._logits = self.trainer.logits()
        t = self.trainer
        return {
            split: Prediction(self._logits[idx], t.y[idx], t.minority[idx])
            for split, idx in self.client_nodes[cid].items()
        }


class CentralGraphLearner:
    """The central graph classifier on pooled training graphs, scoring each client's own val/test graphs."""

    def __init__(self, trainer: GraphTrainer, epochs: int, client_batches: list[dict[str, list]]):
        self.trainer = trainer
        self.epochs = epochs
        self.client_batches = client_batches
        self._trained_round = 0

    def train_round(self, round: int) -> None:
        if round != self._trained_round:
            self.trainer.train_epochs(self.epochs)
            self._trained_round = round

    def predict(self, cid: int) -> dict[str, Prediction]:
        return {split: self.trainer.predict_batches(b) for split, b in self.client_batches[cid].items()}


class CentralView(Client):
    """Client ``cid``'s seat at a learner that trains every client's data at once (the central model, or
    FedStruct's fused simulation): it triggers the round's training and scores its own samples.

    ``learner`` has ``train_round(round)`` and ``predict(cid)``.
    """

    def __init__(self, cid: int, num_samples: int, learner: Any):
        super().__init__(cid, num_samples)
        self.learner = learner

    def fit(self, round: int) -> None:
        self.learner.train_round(round)
        return None

    def evaluate(self) -> dict[str, Prediction]:
        return self.learner.predict(self.cid)


@register_algorithm
class Central(Algorithm):
    """One model trained on all data; option ``graph`` = ``"whole"`` or ``"union"`` (node task)."""

    name = "central"
    tasks = ("node", "graph")
    default_options = {"graph": "whole"}
    option_choices = {"graph": ("whole", "union")}
    citation = "Centralised training reference (no federation)"
    honours_model_options = True

    def build(self, channel: Channel) -> tuple[None, list[Client]]:
        learner = self._node_learner() if self.task == "node" else self._graph_learner()
        sizes = [
            int(c.train_mask.sum()) if self.task == "node" else len(c.train_idx) for c in self.clients_data
        ]
        return None, [CentralView(cid, n, learner) for cid, n in enumerate(sizes)]

    def _node_learner(self) -> CentralNodeLearner:
        clients = self.clients_data
        if self.options.get("graph", "whole") == "whole":  # the mini-batch subclasses: always the whole graph
            data, node_ids = self._whole_graph(clients)
        else:
            data, node_ids = self._union_graph(clients)
        minority = torch.zeros(data.num_nodes, dtype=torch.bool)
        for c, ids in zip(clients, node_ids):
            minority[ids] = minority_mask(c.y, c.y[c.train_mask])
        trainer = self.central_trainer(data, minority)
        client_nodes = [
            {split: ids[getattr(c, f"{split}_mask")].to(self.device) for split in EVAL_SPLITS}
            for c, ids in zip(clients, node_ids)
        ]
        return CentralNodeLearner(trainer, self.config.local_epochs, client_nodes)

    def central_trainer(self, data: Data, minority: Tensor) -> NodeTrainer:
        """The trainer of the central node model on ``data`` (full batch; the mini-batch baselines
        :mod:`~fglcore.algorithms.graphsage` and :mod:`~fglcore.algorithms.graphsaint` override it)."""
        set_seed(self.config.seed)
        model = self.make_model(int(self.federation.num_features), int(self.federation.num_classes))
        return NodeTrainer(model, data, self.config, self.device, minority=minority)

    def _whole_graph(self, clients: list[Data]) -> tuple[Data, list[Tensor]]:
        return whole_graph(self.federation.data, clients)

    @staticmethod
    def _union_graph(clients: list[Data]) -> tuple[Data, list[Tensor]]:
        """The disjoint union of the client subgraphs (no cross-client edges); node ids of each client in it."""
        sizes = [int(c.num_nodes) for c in clients]
        offsets = [sum(sizes[:k]) for k in range(len(sizes))]
        data = Data(
            x=torch.cat([c.x for c in clients]),
            y=torch.cat([c.y for c in clients]),
            edge_index=torch.cat([c.edge_index + off for c, off in zip(clients, offsets)], dim=1),
            num_nodes=sum(sizes),
        )
        for split in ("train", *EVAL_SPLITS):
            data[f"{split}_mask"] = torch.cat([getattr(c, f"{split}_mask") for c in clients])
        return data, [torch.arange(off, off + n) for off, n in zip(offsets, sizes)]

    def _graph_learner(self) -> CentralGraphLearner:
        clients = self.clients_data
        shapes = {(int(c.num_features), int(c.num_classes)) for c in clients}
        if len(shapes) > 1:
            found = ", ".join(f"{c.name} ({c.num_features} features, {c.num_classes} classes)" for c in clients)
            raise ConfigError(
                "algorithm 'central' on a graph federation pools every client's training graphs into one model, "
                f"which needs one feature width and one class count; got {found}"
            )
        (in_channels, out_channels), = shapes
        set_seed(self.config.seed)
        model = self.make_model(in_channels, out_channels)
        pooled = [g for c in clients for g in graph_split(c, "train")]
        trainer = GraphTrainer(model, pooled, {}, self.config, self.device, seed=client_seed(self.config.seed, 0))
        batches = [
            {split: collate_in_batches(graph_split(c, split), self.config.batch_size, self.device) for split in EVAL_SPLITS}
            for c in clients
        ]
        return CentralGraphLearner(trainer, self.config.local_epochs, batches)
