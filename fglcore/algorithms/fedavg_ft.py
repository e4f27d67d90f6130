"""One-shot FedAvg with local fine-tuning: O-pFGL's "FedAvg" baseline.

Yan et al., "Towards Federated Graph Learning in One-shot Communication"
(arXiv 2411.11304), Sec. 5.1 and App. A.7: "FedAvg ... we limit the
upload-download communication round to one round. For better performance,
we perform additional finetuning on local graph data after downloading the
global model"; App. A.2: "the number of local training epochs is tuned from
1 to 100". Project digest ``opfgl.digest.md`` §5.5 and reading A16. The
authors' repository (``Youth-49/O-pFGL``) holds no baseline code, so the
details below are readings, named as such.

**One round** (McMahan et al. 2017, Alg. 1, through :class:`~fglcore.algorithms.fedavg.FedAvg`):
every client starts from the same seeded initialisation (a shared seed, not a
message), trains ``E`` local epochs (``config.lr``, ``config.optimizer``,
``config.weight_decay``), uploads its parameters once; the server averages
them weighted by training nodes (FedAvg's ``n_k``; the authors' unused
``Client.train`` would weight by all local nodes, nearly proportional under the
per-client stratified split) and sends the mean once. The ledger holds
exactly one upload and one download per client; ``config.secure_aggregation``
masks the upload as for FedAvg.

**Fine-tuning** (reading A16: the O-pFGL ablation "ft", i.e. its Stage 2
with :math:`\\gamma=0`): each client fine-tunes the downloaded global model on
its local training nodes with cross-entropy and a fresh optimiser of
learning rate ``ft_lr`` (``None``: ``config.lr``), at most ``max_epochs``
steps, evaluating local validation accuracy every ``eval_every`` steps and
keeping the best checkpoint, stopping after ``patience`` evaluations without
a strict improvement: O-pFGL's early stopping (A12,
:func:`fglcore.algorithms.opfgl.train_with_early_stopping`; defaults 3000,
100 and 5 as the authors' code). As there, the candidates are the
fine-tuned checkpoints only (the downloaded model itself is not one). Each
client is evaluated with its own fine-tuned model.

**Choosing E** (reading of "tuned from 1 to 100"): the whole protocol (one
round, then fine-tuning) is run once for every ``E`` in
``local_epochs_grid`` (default 1, 2, 5, 10, 20, 50, 100, a log-spaced grid
over the paper's range), each from the same seed, and the ``E`` whose
fine-tuned models have the best aggregated validation accuracy
(``config.metric_aggregation``; ties go to the smaller ``E``) is reported.
This is hyper-parameter tuning, as the paper's: the reported
:class:`~fglcore.fl.engine.RunResult` (metrics, per-client rows, ledger) is
that of the chosen ``E``'s run alone; ``extras["epochs_search"]`` lists every
candidate's validation and test accuracy before and after fine-tuning.
``local_epochs_grid=[E]`` fixes ``E``. ``config.local_epochs``,
``config.selection`` and ``config.patience`` are not used; ``config.rounds``
must be 1.

The protocol (one round per ``E``, fine-tuning, the choice of ``E``) is the
mixin :class:`OneShotProtocol` with the options :data:`ONE_SHOT_OPTIONS`;
the other baselines O-pFGL runs in one round on FedAvg's participants
(:mod:`fglcore.algorithms.fedgta`, :mod:`fglcore.algorithms.fedtad`) reuse
it. Algorithms with participants of their own reuse its two steps,
:func:`fine_tune_clients` and :func:`search_local_epochs` (FedSpray's option
``one_shot``, checked by :func:`check_one_shot`; FED-PUB).

Under O-pFGL's protocol (:data:`fglcore.algorithms.opfgl.PROTOCOL`,
``metric_aggregation="client_weighted"``) each client's metrics are weighted
by its local node count (A13), as for O-pFGL.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, ClassVar, Mapping, Sequence

from torch import Tensor

from fglcore.algorithms.base import Trainer, register_algorithm
from fglcore.algorithms.fedavg import FedAvg, FedAvgClient, FedAvgServer
from fglcore.algorithms.opfgl import Opfgl, train_with_early_stopping, validation_accuracy, weighted_by_nodes
from fglcore.algorithms.training import make_optimizer
from fglcore.checks import POSITIVE, Bounds
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.fl.channel import Channel
from fglcore.fl.engine import Client, Payload, RunResult, TrainingDiverged, evaluate_clients, per_client_metrics
from fglcore.metrics import Prediction

EPOCHS_GRID = [1, 2, 5, 10, 20, 50, 100]
"""Local epochs tried by default: log-spaced over the paper's range 1-100 (App. A.2)."""

MAX_GRID_EPOCHS = 100


class OneShotServer(FedAvgServer):
    """FedAvg's server without the opening broadcast: clients start from the shared seed, so the only
    download is the average after the single upload."""

    def payload_for(self, client: Client, round: int) -> Payload | None:
        return None if round == 1 else super().payload_for(client, round)


class FineTuneClient(FedAvgClient):
    """A FedAvg client whose metrics are weighted by its local node count (O-pFGL's A13); its fine-tuning is
    :func:`fine_tune_clients`'s."""

    def __init__(self, cid: int, trainer: Trainer, epochs: int, shared: Sequence[str], num_nodes: int):
        super().__init__(cid, trainer, epochs, shared)
        self.num_nodes = num_nodes
        self.report: dict[str, float] = {}

    def evaluate(self) -> dict[str, Prediction]:
        return weighted_by_nodes(self.trainer.predict(), self.num_nodes)


ONE_SHOT_OPTIONS: dict[str, Any] = {
    "local_epochs_grid": list(EPOCHS_GRID),
    "ft_lr": None,
    "max_epochs": Opfgl.default_options["max_epochs"],
    "eval_every": Opfgl.default_options["eval_every"],
    "patience": Opfgl.default_options["patience"],
}
"""The options of O-pFGL's one-shot protocol (see the module docstring), shared by every baseline run under it."""

ONE_SHOT_BOUNDS = {"ft_lr": Bounds(above=0), **dict.fromkeys(("max_epochs", "eval_every", "patience"), POSITIVE)}


def check_epochs_grid(grid: Any, *, optional: bool = False) -> list[int] | None:
    """``local_epochs_grid`` sorted, or a :class:`ConfigError`; ``None`` passes when ``optional``."""
    if grid is None and optional:
        return None
    if not isinstance(grid, list) or not grid or len(set(grid)) != len(grid) or any(
            isinstance(e, bool) or not isinstance(e, int) or not 1 <= e <= MAX_GRID_EPOCHS for e in grid):
        accepted = f"a non-empty list of distinct integers from 1 to {MAX_GRID_EPOCHS}"
        raise ConfigError(f"algorithm_options.local_epochs_grid: {grid!r} is not accepted; accepted: "
                          f"{accepted}{' or null (an ordinary multi-round run)' if optional else ''}")
    return sorted(grid)


def check_one_shot(options: Mapping[str, Any], owner: str) -> dict[str, Any]:
    """``options`` (an algorithm's ``one_shot`` mapping) merged over :class:`FedAvgFT`'s defaults and checked
    by its rules; a :class:`ConfigError` names ``<owner>.<key>``."""
    unknown = [k for k in options if k not in ONE_SHOT_OPTIONS]
    if unknown:
        raise ConfigError(f"algorithm_options.{owner}: unknown key {unknown[0]!r}; accepted: "
                          f"{', '.join(ONE_SHOT_OPTIONS)}")
    try:
        merged = FedAvgFT.check_options(dict(options))
    except ConfigError as err:
        raise ConfigError(str(err).replace("algorithm_options.", f"algorithm_options.{owner}.")) from None
    return {k: merged[k] for k in ONE_SHOT_OPTIONS}


def fine_tune_clients(algorithm: Any, before: RunResult, options: Mapping[str, Any], epochs: int) -> RunResult:
    """Fine-tune every client of ``algorithm`` (after its one-round run ``before``) with O-pFGL's early
    stopping; the :class:`RunResult` of the fine-tuned models, weighted by local node counts (A13).

    Each client's ``trainer`` (its personalised or downloaded model) gets a fresh optimiser of learning rate
    ``options["ft_lr"]`` (``None``: ``config.lr``) and plain cross-entropy on its training nodes.
    """
    config = algorithm.config
    lr = config.lr if options["ft_lr"] is None else options["ft_lr"]
    clients = algorithm.clients
    for client in clients:
        if not hasattr(client, "report"):
            client.report = {}
        client.report["global_val_accuracy"] = validation_accuracy(client.trainer)
        client.trainer.optimizer = make_optimizer(client.model.parameters(), dataclasses.replace(config, lr=lr))
        result = train_with_early_stopping(client.model, client.trainer.train_epochs,
                                           lambda c=client: validation_accuracy(c.trainer), options["max_epochs"],
                                           options["eval_every"], options["patience"])
        client.report.update({"ft_epochs": result["epochs"], "ft_val_accuracy": validation_accuracy(client.trainer)})
    weighted = [_NodeWeighted(c, int(algorithm.clients_data[c.cid].num_nodes)) for c in clients]
    metrics, outputs = evaluate_clients(weighted, algorithm.num_classes, config.metric_aggregation)
    per_client = per_client_metrics(weighted, outputs, algorithm.num_classes)
    for row, client in zip(per_client, clients):
        row.update(client.report)
    extras = {"local_epochs": epochs, "global_metrics": before.metrics}
    return RunResult([{"round": 1, **metrics}], 1, metrics, per_client, before.ledger, False, extras)


class _NodeWeighted:
    """A client seen through its evaluation only, with every split weighted by its local node count (A13)."""

    def __init__(self, client: Any, num_nodes: int):
        self.client, self.num_nodes = client, num_nodes
        self.cid, self.name, self.num_samples = client.cid, client.name, client.num_samples

    def evaluate(self) -> dict[str, Prediction]:
        return weighted_by_nodes(self.client.evaluate(), self.num_nodes)


def search_local_epochs(algorithm: Any, run_one: Callable[[int], RunResult], grid: Sequence[int],
                        channel: Channel | None = None) -> RunResult:
    """O-pFGL's "local epochs tuned from 1 to 100" (App. A.2): ``run_one(E)`` for every ``E`` of ``grid``
    (each a whole run from the same seed, building ``algorithm.server`` and ``algorithm.clients``); the
    result of the ``E`` whose models have the best aggregated validation accuracy (ties go to the smaller
    ``E``), with ``algorithm.server`` and ``algorithm.clients`` set to that run's.

    ``extras["epochs_search"]`` lists every candidate's validation and test
    accuracy (and, when a run reports ``extras["global_metrics"]``, those of
    the downloaded model before fine-tuning); a candidate whose training
    diverged (:class:`~fglcore.fl.engine.TrainingDiverged`) is listed with
    the error under ``diverged`` and cannot be chosen. ``channel`` (when given) records
    the chosen run's messages only.
    """
    best: tuple[RunResult, Any, list] | None = None
    best_value, search = math.nan, []
    for epochs in grid:
        try:
            result = run_one(epochs)
        except TrainingDiverged as error:
            search.append({"local_epochs": epochs, "diverged": str(error)})
            continue
        m = result.metrics
        row = {"local_epochs": epochs}
        if "global_metrics" in result.extras:
            g = result.extras["global_metrics"]
            row.update({"global_val_accuracy": g.get("val_accuracy", math.nan),
                        "global_test_accuracy": g.get("test_accuracy", math.nan)})
        row.update({"val_accuracy": m.get("val_accuracy", math.nan), "test_accuracy": m.get("test_accuracy", math.nan)})
        search.append(row)
        value = m.get("val_accuracy", math.nan)
        if best is None or (not math.isnan(value) and (math.isnan(best_value) or value > best_value)):
            best, best_value = (result, algorithm.server, algorithm.clients), value
    if best is None:
        raise TrainingDiverged(f"every local_epochs candidate {list(grid)} diverged; the first: {search[0]['diverged']}")
    result, algorithm.server, algorithm.clients = best
    if channel is not None:
        for message in result.ledger.messages:
            channel.ledger.record(message)
        result.ledger = channel.ledger
    result.extras["epochs_search"] = search
    return result


class OneShotProtocol:
    """Mixin: O-pFGL's one-shot protocol (module docstring) for an algorithm built on FedAvg's participants.

    Put it before the algorithm's class (``class X(OneShotProtocol, FedAvg)``). The algorithm's
    ``make_client`` builds :class:`FineTuneClient` (sub)classes with :attr:`local_epochs` epochs, and
    its options include :data:`ONE_SHOT_OPTIONS`. With ``local_epochs_grid=None`` (allowed when
    :attr:`one_shot_optional`) the algorithm runs as usual (``config.rounds`` rounds of
    ``config.local_epochs`` epochs); with a grid, one round per ``E``, then fine-tuning when
    :meth:`fine_tunes`, and the ``E`` with the best validation accuracy is reported.
    """

    one_shot_optional: ClassVar[bool] = False

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> dict[str, Any]:
        merged = super().check_options(options)
        merged["local_epochs_grid"] = check_epochs_grid(merged["local_epochs_grid"], optional=cls.one_shot_optional)
        return merged

    @classmethod
    def check_config(cls, config: ExperimentConfig) -> None:
        super().check_config(config)
        if cls.check_options(config.algorithm_options)["local_epochs_grid"] is not None and config.rounds != 1:
            what = "the local_epochs_grid option runs O-pFGL's one-shot protocol" if cls.one_shot_optional \
                else f"{cls.name} is one-shot"
            raise ConfigError(f"rounds: {what} (one upload, one download per client); set rounds to 1, got "
                              f"{config.rounds}")

    @property
    def local_epochs(self) -> int:
        """The local epochs of the run being built: the grid's current ``E``, else ``config.local_epochs``."""
        return getattr(self, "_epochs", self.config.local_epochs)

    def fine_tunes(self) -> bool:
        """Whether the clients fine-tune the downloaded model (always, for FedAvg)."""
        return True

    def opening_broadcast(self) -> bool:
        """Whether the server sends the initial model before round 1 (not in the one-shot protocol: the
        clients start from a shared seed, so the only download is the one after the single upload)."""
        return self.options["local_epochs_grid"] is None

    def run_one(self, epochs: int, channel: Channel | None = None) -> RunResult:
        """One round with ``epochs`` local epochs, then (:meth:`fine_tunes`) every client's fine-tuning."""
        self._epochs = epochs
        before = super().run(channel if channel is not None else Channel())
        if self.fine_tunes():
            return fine_tune_clients(self, before, self.options, epochs)
        extras = {"local_epochs": epochs, "global_metrics": before.metrics}
        return RunResult([{"round": 1, **before.metrics}], 1, before.metrics, before.per_client, before.ledger, False,
                         extras)

    def run(self, channel: Channel | None = None, *, callbacks: Sequence = (), checkpoint: Any = None) -> RunResult:
        """:meth:`run_one` for every ``E`` of the grid; the run of the ``E`` with the best validation accuracy
        (the algorithm's ordinary run when the grid is ``None``).

        In the one-shot protocol ``channel`` (when given) records the chosen run only; ``callbacks`` and
        ``checkpoint`` are accepted for the common interface and not used.
        """
        if self.options["local_epochs_grid"] is None:
            return super().run(channel, callbacks=callbacks, checkpoint=checkpoint)
        return search_local_epochs(self, self.run_one, self.options["local_epochs_grid"], channel)


@register_algorithm
class FedAvgFT(OneShotProtocol, FedAvg):
    """One round of FedAvg, then local fine-tuning; local epochs chosen on validation (O-pFGL's "FedAvg"
    baseline, Yan et al., arXiv 2411.11304, App. A.7); readings in :mod:`fglcore.algorithms.fedavg_ft`."""

    name = "fedavg_ft"
    tasks = ("node",)
    citation = ("McMahan et al., AISTATS 2017, with fine-tuning as in Yan et al., Towards Federated Graph "
                "Learning in One-shot Communication, arXiv 2411.11304")
    default_options: ClassVar[dict[str, Any]] = {"share": "auto", **ONE_SHOT_OPTIONS}
    option_bounds = ONE_SHOT_BOUNDS

    def make_server(self, parameters: dict[str, Tensor]) -> OneShotServer:
        return OneShotServer(parameters)

    def make_client(self, cid: int, trainer: Trainer, shared: Sequence[str]) -> FineTuneClient:
        return FineTuneClient(cid, trainer, self.local_epochs, shared, int(self.clients_data[cid].num_nodes))
