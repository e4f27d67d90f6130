"""Server, clients and the round loop of a federated simulation.

The protocol mirrors a real FL engine (Flower's ``fit``/``evaluate`` split) so
that the same client and server code can later run on one:

1. before round 1 the server sends each client its payload
   (:meth:`Server.payload_for`), which the client takes in with
   :meth:`Client.receive`;
2. in round ``r`` every client trains (:meth:`Client.fit`) and uploads its
   update; the server aggregates (:meth:`Server.aggregate`);
3. the server sends the new payload, clients take it in and evaluate
   (:meth:`Client.evaluate`) -- that same payload is what they train from in
   round ``r + 1``, so it crosses the network once. The payload sent after
   the last round (ledger round ``R + 1``) is the final model the clients
   evaluate and deploy; it is counted, as a real deployment would send it.

Server and clients never share objects: every tensor goes through the
:class:`~fglcore.fl.channel.Channel`, whose ledger is the record of what was
communicated.

**Diverged training is never reported.** A model whose outputs cannot be
read (NaN or +inf logits, or a row without a finite value: its weights have
blown up, and training does not recover from that) gives no result:
:func:`evaluate_clients` raises :class:`TrainingDiverged` naming the clients. :func:`run_rounds` then stops;
under ``best_val`` it reports the best round before the divergence (the same
round the whole run would select, since no later round can be evaluated) and
says so in ``extras["diverged_round"]`` and a warning; with nothing readable to
report (``selection='last'``, or divergence at the first evaluation) the
error reaches the caller, and no number is stored.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import torch
from torch import Tensor
from tqdm.auto import tqdm

from fglcore.fl.channel import Channel, Ledger
from fglcore.fl.checkpoint import RoundCheckpoint
from fglcore.fl.parameters import weighted_mean
from fglcore.fl.secure import SecureAggregator
from fglcore.metrics import Prediction, summarize_predictions

Payload = dict[str, Tensor]
SERVER = "server"
SELECTIONS = ("best_val", "last")


class TrainingDiverged(FloatingPointError):
    """A model's outputs cannot be read (:func:`unreadable`) or a training loss is not finite: the run diverged
    and has no result to report."""


class Client:
    """A federated participant holding private data.

    Subclasses implement :meth:`receive`, :meth:`fit` and :meth:`evaluate`.
    ``num_samples`` is the aggregation weight (training samples by default).
    """

    def __init__(self, cid: int, num_samples: int):
        self.cid = cid
        self.name = f"client{cid}"
        self.num_samples = num_samples

    def receive(self, payload: Payload, round: int) -> None:
        """Take in what the server sent (e.g. load global weights)."""

    def fit(self, round: int) -> Payload | None:
        """Train locally; return the update to upload, or ``None`` to send nothing."""
        raise NotImplementedError

    def evaluate(self) -> dict[str, Prediction]:
        """Predictions of the model this client would deploy, keyed by split (``val``, ``test``)."""
        raise NotImplementedError

    def masked_update(self, update: Payload, secure: SecureAggregator, round: int) -> Tensor:
        """What this client uploads under secure aggregation: its update flattened in ``update``'s order (as
        ``float64``), times its weight ``num_samples``, with the weight appended, masked by
        :meth:`SecureAggregator.mask <fglcore.fl.secure.SecureAggregator.mask>`. Runs where the client runs (on
        its own SuperNode under :mod:`fglcore.fl.flower`)."""
        flat = torch.cat([value.detach().double().flatten() for value in update.values()])
        count = torch.tensor([float(self.num_samples)], dtype=torch.float64, device=flat.device)
        return secure.mask(self.cid, torch.cat([flat * self.num_samples, count]), round)


class Server:
    """The coordinator. It only ever sees what clients upload through the channel."""

    name = SERVER

    def payload_for(self, client: Client, round: int) -> Payload | None:
        """What to send ``client`` for ``round``; ``None`` sends nothing."""
        return None

    def aggregate(self, updates: Mapping[int, Payload], weights: Mapping[int, float], round: int) -> None:
        """Combine uploaded updates. The default is the weighted mean (FedAvg, McMahan et al. 2017, Alg. 1)."""
        order = list(updates)
        mean = weighted_mean([updates[c] for c in order], [weights[c] for c in order])
        self.apply_mean(mean, round)

    def apply_mean(self, mean: Payload, round: int) -> None:
        """Use the weighted mean of the updates; the only hook secure aggregation calls."""
        raise NotImplementedError(f"{type(self).__name__} does not implement apply_mean")


@dataclass
class RunResult:
    """What a federated run produced.

    ``metrics`` are the aggregated metrics (``val_accuracy``, ``test_accuracy``,
    ``test_macro_f1``, ``test_minority_accuracy``, ...) at ``selected_round``,
    chosen by the model-selection rule; ``per_client`` holds each client's
    metrics at that round; ``history`` has one row per evaluated round.
    """

    history: list[dict[str, float]]
    selected_round: int
    metrics: dict[str, float]
    per_client: list[dict[str, float]]
    ledger: Ledger
    stopped_early: bool = False
    extras: dict = field(default_factory=dict)


def _metric_improved(value: float, best: float, metric: str) -> bool:
    if math.isnan(value):
        return False
    if math.isnan(best):
        return True
    return value < best if metric.endswith("loss") else value > best


Outputs = list[dict[str, Prediction]]


def unreadable(logits: Tensor) -> bool:
    """Whether no prediction can be read from ``logits`` ``[n, C]``: a NaN or a +inf anywhere, or a row
    without a finite value. A -inf alone is a class of probability zero in log-probability outputs (FedLoG's
    mixture), not a divergence."""
    return bool(torch.isnan(logits).any() or torch.isposinf(logits).any()
                or not torch.isfinite(logits).any(dim=-1).all())


def evaluate_clients(clients: Sequence[Client], num_classes: int, aggregation: str) -> tuple[dict[str, float], Outputs]:
    """Evaluate every client; return aggregated ``{split}_{metric}`` metrics and the raw predictions.

    Raises :class:`TrainingDiverged` when a client's logits are :func:`unreadable` (argmax of NaN would score
    as a prediction of class 0)."""
    outputs = [c.evaluate() for c in clients]
    diverged = [c.cid for c, out in zip(clients, outputs) if any(unreadable(p.logits) for p in out.values())]
    if diverged:
        raise TrainingDiverged(
            f"the model of client(s) {', '.join(map(str, diverged))} of {len(clients)} outputs NaN or +inf "
            f"logits: training diverged (a smaller learning rate usually avoids it)")
    splits = sorted({s for out in outputs for s in out})
    metrics: dict[str, float] = {}
    for split in splits:
        preds = [out[split] for out in outputs if split in out]
        for key, value in summarize_predictions(preds, num_classes, aggregation).items():
            metrics[f"{split}_{key}"] = value
    return metrics, outputs


def per_client_metrics(clients: Sequence[Client], outputs: Outputs, num_classes: int) -> list[dict[str, float]]:
    """One row of ``{split}_{metric}`` per client (computed only for the selected round)."""
    rows = []
    for client, out in zip(clients, outputs):
        row: dict[str, float] = {"client": client.cid, "num_samples": client.num_samples}
        for split, pred in out.items():
            for key, value in summarize_predictions([pred], num_classes, "micro").items():
                row[f"{split}_{key}"] = value
            row[f"{split}_size"] = pred.num_samples
        rows.append(row)
    return rows


class _Uploader:
    """Client -> server uploads, optionally under secure aggregation."""

    def __init__(self, channel: Channel, secure: SecureAggregator | None):
        self.channel = channel
        self.secure = secure

    def collect(self, server: Server, uploads: dict[int, tuple[Client, Payload]], round: int) -> None:
        if not uploads:
            return
        if self.secure is None:
            updates, weights = {}, {}
            for cid, (client, update) in uploads.items():
                message = dict(update)
                message["num_samples"] = torch.tensor(float(client.num_samples))
                received = self.channel.send(client.name, server.name, message, round)
                weights[cid] = float(received.pop("num_samples"))
                updates[cid] = received
            server.aggregate(updates, weights, round)
            return
        shapes = {k: (v.shape, v.dtype) for k, v in next(iter(uploads.values()))[1].items()}
        masked = []
        for cid, (client, update) in uploads.items():
            secret = client.masked_update({k: update[k] for k in shapes}, self.secure, round)
            masked.append(self.channel.send(client.name, server.name, {"masked_update": secret}, round)["masked_update"])
        total = self.secure.unmask_sum(masked, round)
        flat_mean = total[:-1] / total[-1]
        mean, offset = {}, 0
        for k, (shape, dtype) in shapes.items():
            n = math.prod(shape)
            mean[k] = flat_mean[offset : offset + n].reshape(shape).to(dtype)
            offset += n
        server.apply_mean(mean, round)


def run_rounds(
    server: Server | None,
    clients: Sequence[Client],
    channel: Channel,
    *,
    rounds: int,
    num_classes: int,
    evaluate_every: int = 1,
    selection: str = "best_val",
    selection_metric: str = "val_accuracy",
    patience: int = 0,
    metric_aggregation: str = "micro",
    secure: SecureAggregator | None = None,
    progress: bool = False,
    description: str = "rounds",
    callbacks: Sequence[Callable[[int, dict[str, float]], bool | None]] = (),
    checkpoint: RoundCheckpoint | None = None,
    resume: Mapping | None = None,
) -> RunResult:
    """Run ``rounds`` federated rounds and select the reported round.

    ``selection='best_val'`` reports the round with the best
    ``selection_metric`` (lowest if it ends in ``loss``, else highest);
    ``'last'`` reports the final evaluated round. ``patience > 0`` stops after
    that many evaluations without improvement of ``selection_metric``. A
    callback returning ``True`` stops the run after the current round.

    Divergence (:class:`TrainingDiverged`, see the module docstring) stops the loop: ``best_val`` reports
    the best round before it (``extras["diverged_round"]``), ``last`` has none and raises.

    ``checkpoint`` saves the participants and the loop's state at the end of
    a round whenever it is due (:mod:`fglcore.fl.checkpoint`); ``resume`` is
    the ``loop`` entry of a loaded checkpoint, whose participants are the
    ``server``, ``clients`` and ``channel`` passed in.
    """
    if selection not in SELECTIONS:
        raise ValueError(f"unknown selection {selection!r}; accepted: {', '.join(SELECTIONS)}")
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    uploader = _Uploader(channel, secure)

    def deliver(round: int) -> None:
        if server is None:
            return
        for client in clients:
            payload = server.payload_for(client, round)
            if payload is not None:
                client.receive(channel.send(server.name, client.name, payload, round), round)

    history: list[dict[str, float]] = []
    selected: dict = {"round": 0, "metrics": {}, "outputs": []}
    best_value, since_best, stopped, first = math.nan, 0, False, 1
    extras: dict = {}
    if resume is None:
        deliver(1)
    else:
        history, selected = resume["history"], resume["selected"]
        best_value, since_best, first = resume["best_value"], resume["since_best"], resume["round"] + 1

    def save_if_due(r: int) -> None:
        if checkpoint is not None and r < rounds and checkpoint.due():
            loop = {"round": r, "history": history, "selected": selected, "best_value": best_value,
                    "since_best": since_best}
            checkpoint.save({"server": server, "clients": list(clients), "channel": channel, "loop": loop})

    bar = tqdm(range(first, rounds + 1), desc=description, disable=not progress, leave=False,
               initial=first - 1, total=rounds)
    for r in bar:
        uploads = {}
        for client in clients:
            update = client.fit(r)
            if update is not None:
                uploads[client.cid] = (client, update)
        if server is not None:
            uploader.collect(server, uploads, r)
            deliver(r + 1)
        if r % evaluate_every and r != rounds:
            save_if_due(r)
            continue
        try:
            metrics, outputs = evaluate_clients(clients, num_classes, metric_aggregation)
        except TrainingDiverged as error:
            if selection == "last" or not selected["metrics"]:
                raise TrainingDiverged(f"{description}, round {r} of {rounds}: {error}; no earlier round to "
                                       f"report (selection {selection!r})") from error
            warnings.warn(f"{description}: {error} at round {r} of {rounds}; the run stops and reports round "
                          f"{selected['round']}, the best before it", RuntimeWarning, stacklevel=2)
            extras["diverged_round"], stopped = r, True
            break
        history.append({"round": r, **metrics})
        value = metrics.get(selection_metric, math.nan)
        improved = _metric_improved(value, best_value, selection_metric)
        if improved:
            best_value, since_best = value, 0
        else:
            since_best += 1
        if selection == "last" or improved or not selected["metrics"]:
            selected = {"round": r, "metrics": metrics, "outputs": outputs}
        bar.set_postfix({k: f"{metrics[k]:.3f}" for k in ("val_accuracy", "test_accuracy") if k in metrics})
        if any(cb(r, metrics) for cb in callbacks) or (patience and since_best >= patience):
            stopped = r < rounds
            break
        save_if_due(r)
    bar.close()
    per_client = per_client_metrics(clients, selected["outputs"], num_classes)
    return RunResult(history, selected["round"], selected["metrics"], per_client, channel.ledger, stopped, extras)
