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
from fglcore.fl.engine import Client, Payload, RunResult, evaluate_clients, per_client_metrics
from fglcore.metrics import Prediction

EPOCHS_GRID = [1, 2, 5, 10, 20, 50, 100]
"""Local epochs tried by default: log-spaced over the paper's range 1-100 (App. A.2)."""

MAX_GRID_EPOCHS = 100


def check_epochs_grid(grid: Any) -> list[int]:
    """``algorithm_options.local_epochs_grid`` sorted, or :class:`ConfigError` unless it is a non-empty list of
    distinct integers from 1 to 100 (the paper's range)."""
    if not isinstance(grid, list) or not grid or len(set(map(repr, grid))) != len(grid) or any(
            isinstance(e, bool) or not isinstance(e, int) or not 1 <= e <= MAX_GRID_EPOCHS for e in grid):
        raise ConfigError(f"algorithm_options.local_epochs_grid: {grid!r} is not accepted; accepted: a "
                          f"non-empty list of distinct integers from 1 to {MAX_GRID_EPOCHS}")
    return sorted(grid)


def choose_local_epochs(grid: Sequence[int], run_one: Callable[[int], tuple[RunResult, Any, dict[str, float]]]
                        ) -> tuple[RunResult, Any, list[dict[str, float]]]:
    """O-pFGL's "local epochs tuned from 1 to 100" (App. A.2) for a one-shot baseline: ``run_one(E)`` for every
    ``E`` of ``grid`` in order, each a whole run from the same seed, returning its result, the state to keep
    (e.g. the trained participants) and extra fields for the search table.

    Returns the result and state of the ``E`` with the best aggregated validation accuracy (ties: the
    earlier ``E``) and one row per ``E`` (``local_epochs``, the extra fields, ``val_accuracy``,
    ``test_accuracy``).
    """
    best: tuple[RunResult, Any] | None = None
    best_value, search = math.nan, []
    for epochs in grid:
        result, state, extra = run_one(epochs)
        m = result.metrics
        search.append({"local_epochs": epochs, **extra, "val_accuracy": m.get("val_accuracy", math.nan),
                       "test_accuracy": m.get("test_accuracy", math.nan)})
        value = m.get("val_accuracy", math.nan)
        if best is None or (not math.isnan(value) and (math.isnan(best_value) or value > best_value)):
            best, best_value = (result, state), value
    return best[0], best[1], search


class OneShotServer(FedAvgServer):
    """FedAvg's server without the opening broadcast: clients start from the shared seed, so the only
    download is the average after the single upload."""

    def payload_for(self, client: Client, round: int) -> Payload | None:
        return None if round == 1 else super().payload_for(client, round)


class FineTuneClient(FedAvgClient):
    """A FedAvg client that fine-tunes the downloaded model with early stopping, and reports metrics
    weighted by its local node count (O-pFGL's A13)."""

    def __init__(self, cid: int, trainer: Trainer, epochs: int, shared: Sequence[str], num_nodes: int):
        super().__init__(cid, trainer, epochs, shared)
        self.num_nodes = num_nodes
        self.report: dict[str, float] = {}

    def fine_tune(self, config: ExperimentConfig, lr: float, max_epochs: int, eval_every: int,
                  patience: int) -> dict[str, float]:
        self.report["global_val_accuracy"] = validation_accuracy(self.trainer)
        self.trainer.optimizer = make_optimizer(self.model.parameters(), dataclasses.replace(config, lr=lr))
        result = train_with_early_stopping(self.model, self.trainer.train_epochs,
                                           lambda: validation_accuracy(self.trainer), max_epochs, eval_every,
                                           patience)
        self.report.update({"ft_epochs": result["epochs"], "ft_val_accuracy": validation_accuracy(self.trainer)})
        return result

    def evaluate(self) -> dict[str, Prediction]:
        return weighted_by_nodes(self.trainer.predict(), self.num_nodes)


@register_algorithm
class FedAvgFT(FedAvg):
    """One round of FedAvg, then local fine-tuning; local epochs chosen on validation (O-pFGL's "FedAvg"
    baseline, Yan et al., arXiv 2411.11304, App. A.7); readings in :mod:`fglcore.algorithms.fedavg_ft`."""

    name = "fedavg_ft"
    tasks = ("node",)
    citation = ("McMahan et al., AISTATS 2017, with fine-tuning as in Yan et al., Towards Federated Graph "
                "Learning in One-shot Communication, arXiv 2411.11304")
    default_options: ClassVar[dict[str, Any]] = {
        "share": "auto",
        "local_epochs_grid": list(EPOCHS_GRID),
        "ft_lr": None,
        "max_epochs": Opfgl.default_options["max_epochs"],
        "eval_every": Opfgl.default_options["eval_every"],
        "patience": Opfgl.default_options["patience"],
    }
    option_bounds = {"ft_lr": Bounds(above=0), **dict.fromkeys(("max_epochs", "eval_every", "patience"), POSITIVE)}

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> dict[str, Any]:
        merged = super().check_options(options)
        merged["local_epochs_grid"] = check_epochs_grid(merged["local_epochs_grid"])
        return merged

    @classmethod
    def check_config(cls, config: ExperimentConfig) -> None:
        super().check_config(config)
        if config.rounds != 1:
            raise ConfigError(f"rounds: fedavg_ft is one-shot (one upload, one download per client); set rounds "
                              f"to 1, got {config.rounds}")

    def make_server(self, parameters: dict[str, Tensor]) -> OneShotServer:
        return OneShotServer(parameters)

    def make_client(self, cid: int, trainer: Trainer, shared: Sequence[str]) -> FineTuneClient:
        return FineTuneClient(cid, trainer, self._epochs, shared, int(self.clients_data[cid].num_nodes))

    def run_one(self, epochs: int, channel: Channel | None = None) -> RunResult:
        """One round with ``epochs`` local epochs, then every client's fine-tuning; metrics of the fine-tuned models."""
        self._epochs = epochs
        before = super().run(channel if channel is not None else Channel())
        o = self.options
        lr = self.config.lr if o["ft_lr"] is None else o["ft_lr"]
        for client in self.clients:
            client.fine_tune(self.config, lr, o["max_epochs"], o["eval_every"], o["patience"])
        metrics, outputs = evaluate_clients(self.clients, self.num_classes, self.config.metric_aggregation)
        per_client = per_client_metrics(self.clients, outputs, self.num_classes)
        for row, client in zip(per_client, self.clients):
            row.update(client.report)
        extras = {"local_epochs": epochs, "global_metrics": before.metrics}
        return RunResult([{"round": 1, **metrics}], 1, metrics, per_client, before.ledger, False, extras)

    def run(self, channel: Channel | None = None, *, callbacks: Sequence = (), checkpoint: Any = None) -> RunResult:
        """:meth:`run_one` for every ``E`` of the grid; the run of the ``E`` with the best validation accuracy.

        ``channel`` (when given) records the chosen run only; ``callbacks`` and
        ``checkpoint`` are accepted for the common interface and not used.
        """
        def one(epochs: int) -> tuple[RunResult, Any, dict[str, float]]:
            result = self.run_one(epochs)
            g = result.extras["global_metrics"]
            return result, (self.server, self.clients), {
                "global_val_accuracy": g.get("val_accuracy", math.nan),
                "global_test_accuracy": g.get("test_accuracy", math.nan)}

        result, (self.server, self.clients), search = choose_local_epochs(self.options["local_epochs_grid"], one)
        if channel is not None:
            for message in result.ledger.messages:
                channel.ledger.record(message)
            result.ledger = channel.ledger
        result.extras["epochs_search"] = search
        return result
