"""One training run of the distributed GNN, simulated in this process or on one Gloo process per client.

:func:`simulate` and :func:`run_on_gloo` run the same loop (:func:`run_epochs`
over a :class:`~fglcore.distributed.trainer.DistributedTrainer`); only the
:class:`~fglcore.distributed.exchange.Exchange` differs (all clients in one
process, or one per process on ``torch.distributed``'s Gloo backend, see
:mod:`fglcore.distributed.launch`). Both return one :class:`ClientRecord`
per client: its validation and test logits at every evaluated epoch, its
share of each epoch's loss, its seconds per training epoch (and how many of
them it spent inside collectives) and the messages it sent (:class:`~fglcore.fl.channel.Message`). ``tests/test_localbias_gloo.py``
checks that the two give the same numbers.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from torch import Tensor
from torch_geometric.data import Data

from fglcore.config import ExperimentConfig
from fglcore.distributed.exchange import Exchange, GlooExchange, LocalExchange, client_name
from fglcore.distributed.shard import Shard
from fglcore.distributed.trainer import DistributedTrainer, SamplingOptions
from fglcore.fl.channel import Ledger, Message
from fglcore.models.distributed_gnn import DistributedGNN

EVAL_SPLITS = ("val", "test")


@dataclass
class RunSpec:
    """Everything a client process needs besides its data: the model's shape and initial weights, the
    training config, the sampling options, the epochs and which of them to evaluate."""

    config: ExperimentConfig
    options: SamplingOptions
    backbone: str
    dims: tuple[int, int, int, int]  # in, hidden, out, layers
    input_dropout: bool
    initial_state: dict[str, Tensor]
    rounds: int
    evaluate: tuple[int, ...]

    def model(self) -> DistributedGNN:
        d_in, hidden, out, layers = self.dims
        model = DistributedGNN(self.backbone, d_in, hidden, out, layers, self.config.dropout, self.input_dropout)
        model.load_state_dict(self.initial_state)
        return model


@dataclass
class ClientRecord:
    """What one client observed during a run (see the module docstring)."""

    cid: int
    logits: dict[int, dict[str, Tensor]] = field(default_factory=dict)  # epoch -> split -> logits
    loss: list[float] = field(default_factory=list)
    epoch_seconds: list[float] = field(default_factory=list)
    exchange_seconds: list[float] = field(default_factory=list)  # of each epoch's seconds, inside collectives
    messages: list[Message] = field(default_factory=list)
    final_state: dict[str, Tensor] | None = None

    def sent(self) -> list[Message]:
        return [m for m in self.messages if m.sender == client_name(self.cid)]


def run_epochs(trainer: DistributedTrainer, spec: RunSpec) -> list[ClientRecord]:
    """Train ``spec.rounds`` epochs, evaluating (full distributed inference) after those in ``spec.evaluate``."""
    records = {s.cid: ClientRecord(s.cid) for s in trainer.shards}
    masks = {s.cid: {split: s.masks[split] for split in EVAL_SPLITS} for s in trainer.shards}
    evaluate = set(spec.evaluate)
    for epoch in range(1, spec.rounds + 1):
        for cid, part in trainer.train_epoch(epoch).items():
            records[cid].loss.append(part)
        if epoch in evaluate:
            for cid, logits in trainer.logits().items():
                records[cid].logits[epoch] = {split: logits[m].clone() for split, m in masks[cid].items()}
    state = {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}
    for record in records.values():
        record.epoch_seconds = list(trainer.epoch_seconds)
        record.exchange_seconds = list(trainer.exchange_seconds)
        record.messages = [m for m in trainer.exchange.ledger.messages
                           if client_name(record.cid) in (m.sender, m.receiver)]
        record.final_state = state
    return [records[cid] for cid in sorted(records)]


def _trainer(shards: list[Shard], exchange: Exchange, spec: RunSpec) -> DistributedTrainer:
    return DistributedTrainer(shards, exchange, spec.model(), spec.config, spec.options)


def simulate(clients: Sequence[Data], spec: RunSpec) -> list[ClientRecord]:
    """Every client in this process (:class:`~fglcore.distributed.exchange.LocalExchange`, one shared model)."""
    shards = [Shard(k, c, spec.backbone) for k, c in enumerate(clients)]
    return run_epochs(_trainer(shards, LocalExchange(len(shards)), spec), spec)


def gloo_client(rank: int, payload: tuple[Data, int, RunSpec]) -> ClientRecord:
    """The body of client ``rank``'s Gloo process."""
    client, num_clients, spec = payload
    shard = Shard(rank, client, spec.backbone)
    (record,) = run_epochs(_trainer([shard], GlooExchange(rank, num_clients), spec), spec)
    return record


def full_graph_pass(trainer: DistributedTrainer) -> dict[str, Any]:
    """Eqs. 2-4 once on the whole graph, no step: each hosted client's logits, the loss and the summed weight
    gradients (what a centralised model's forward and backward give; the equivalence check, digest §6.5)."""
    logits, parts = trainer.gradients(trainer.full_plans())
    grads = {name: p.grad.detach().clone() for name, p in trainer.model.named_parameters()}
    return {"logits": logits, "loss": parts, "grads": grads}


def simulate_full_graph_pass(clients: Sequence[Data], spec: RunSpec) -> dict[str, Any]:
    shards = [Shard(k, c, spec.backbone) for k, c in enumerate(clients)]
    return full_graph_pass(_trainer(shards, LocalExchange(len(shards)), spec))


def gloo_full_graph_pass_client(rank: int, payload: tuple[Data, int, RunSpec]) -> dict[str, Any]:
    client, num_clients, spec = payload
    return full_graph_pass(_trainer([Shard(rank, client, spec.backbone)], GlooExchange(rank, num_clients), spec))


def gloo_full_graph_pass(clients: Sequence[Data], spec: RunSpec, *, timeout: float = 120.0) -> list[dict[str, Any]]:
    """:func:`full_graph_pass` with one Gloo process per client; one result per client (rank order)."""
    from fglcore.distributed.launch import run_gloo

    k = len(clients)
    return run_gloo(gloo_full_graph_pass_client, [(c, k, spec) for c in clients], timeout=timeout)


def run_on_gloo(clients: Sequence[Data], spec: RunSpec, *, timeout: float = 300.0) -> list[ClientRecord]:
    """One Gloo process per client (:func:`~fglcore.distributed.launch.run_gloo`)."""
    from fglcore.distributed.launch import run_gloo

    k = len(clients)
    return run_gloo(gloo_client, [(c, k, spec) for c in clients], timeout=timeout)


def merged_ledger(records: Sequence[ClientRecord]) -> Ledger:
    """One ledger of every message any client sent, plus the server's downloads (each recorded once)."""
    ledger = Ledger()
    for record in records:
        me = client_name(record.cid)
        for m in record.messages:
            if m.sender == me or (m.receiver == me and m.sender == "server"):
                ledger.record(m)
    return ledger
