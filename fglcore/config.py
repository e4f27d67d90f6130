"""Typed, validated configuration of one experiment.

``ExperimentConfig.from_dict`` rejects an unknown key, a wrong type, a NaN or
infinite number, an unknown name (dataset, partitioner, split, model,
algorithm), an out-of-range value (each field declares its range,
:class:`~fglcore.checks.Bounds`, in its metadata) or a combination the
library cannot run (a graph method on a node dataset, more clients than the
graph has nodes) with a :class:`ConfigError` naming the key and what it
accepts -- before any data is loaded.
"""
from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, Mapping

from fglcore.checks import (NON_NEGATIVE, POSITIVE, SEED, FRACTION, Bounds, ConfigError, check_choice,
                            check_finite, check_type, check_unknown_keys)

__all__ = ["ConfigError", "ExperimentConfig", "check_choice", "check_type", "check_unknown_keys", "CHOICES"]

CHOICES: dict[str, tuple[str, ...]] = {
    "selection": ("best_val", "last"),
    "selection_metric": ("val_accuracy", "val_loss", "val_macro_f1"),
    "metric_aggregation": ("micro", "client_weighted", "client_mean"),
    "device": ("auto", "cpu", "cuda"),
    "optimizer": ("adam", "sgd"),
}
"""Fields with a fixed set of values."""


def _bounded(default: Any, bounds: Bounds) -> Any:
    return field(default=default, metadata=bounds.metadata())


@dataclass
class ExperimentConfig:
    """One federated run: data, partition, split, algorithm, model and training.

    Defaults follow common FGL practice (OpenFGL / FedAvg); each paper's
    parameter files set the values its paper or official code uses.
    ``model_options`` are the options of ``model`` beyond width, depth and
    dropout (:meth:`fglcore.models.ModelSpec.options`, e.g. the decoupled
    GCN's propagation steps ``K``), checked against the model's accepted
    names, types and ranges; only algorithms that build ``model`` through
    :meth:`fglcore.algorithms.base.Algorithm.make_model` accept them
    (:attr:`~fglcore.algorithms.base.Algorithm.honours_model_options`).
    ``model`` may name a model list (``"hetero"``,
    :mod:`fglcore.models.model_lists`): one architecture per client, each
    with its own width, depth and options (``hidden``, ``num_layers`` and
    ``model_options`` are then not used; ``num_clients`` must equal the
    list's length), accepted only by algorithms that never combine
    parameters across architectures (they exchange none, or distil one
    student per architecture)
    (:attr:`~fglcore.algorithms.base.Algorithm.heterogeneous_models`).
    """

    # what the rows are tagged with
    paper: str = ""
    table: str = ""
    setting: str = ""  # free label of a variant within a table cell, e.g. "E=5" or "S=0"
    # data and federation
    dataset: str = "Cora"
    partition: str = "louvain"
    num_clients: int = _bounded(10, POSITIVE)
    partition_options: dict = field(default_factory=dict)
    partition_seed: int | None = _bounded(None, SEED)
    split: str = "per_client_random"
    split_ratios: list[float] = field(default_factory=lambda: [0.4, 0.3, 0.3])
    split_seed: int | None = _bounded(None, SEED)
    # algorithm and model
    algorithm: str = "fedavg"
    algorithm_options: dict = field(default_factory=dict)
    model: str = "gcn"  # a registered model, or a per-client model list such as "hetero"
    model_options: dict = field(default_factory=dict)  # the model's own options, e.g. {"K": 2} (decoupled_gcn)
    hidden: int = _bounded(64, POSITIVE)
    num_layers: int = _bounded(2, POSITIVE)
    dropout: float = _bounded(0.5, FRACTION)
    # training
    rounds: int = _bounded(100, POSITIVE)
    local_epochs: int = _bounded(3, POSITIVE)
    optimizer: str = "adam"
    lr: float = _bounded(0.01, NON_NEGATIVE)  # 0 is accepted: the model keeps its initialisation
    weight_decay: float = _bounded(5e-4, NON_NEGATIVE)
    batch_size: int = _bounded(128, POSITIVE)
    # evaluation and selection
    evaluate_every: int = _bounded(1, POSITIVE)
    selection: str = "best_val"
    selection_metric: str = "val_accuracy"
    patience: int = _bounded(0, NON_NEGATIVE)
    metric_aggregation: str = "micro"
    # runtime
    seed: int = _bounded(0, SEED)
    device: str = "auto"
    secure_aggregation: bool = False
    progress: bool = False

    @classmethod
    def field_types(cls) -> dict[str, Any]:
        hints = typing.get_type_hints(cls)
        return {f.name: hints[f.name] for f in dataclasses.fields(cls)}

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "ExperimentConfig":
        types_ = cls.field_types()
        check_unknown_keys(values, list(types_), "config key")
        clean = {key: check_type(key, value, types_[key]) for key, value in values.items()}
        config = cls(**clean)
        config.validate()
        return config

    def validate(self) -> None:
        """Every field's type, range and name, then the combination: task of dataset, partition, split and
        algorithm, partition and algorithm options, and at most as many clients as the partitioner can form."""
        types_ = self.field_types()
        for f in dataclasses.fields(self):
            value = check_type(f.name, getattr(self, f.name), types_[f.name])
            check_finite(f.name, value)
            if "bounds" in f.metadata:
                f.metadata["bounds"].check(f.name, value)
            if f.name in CHOICES:
                check_choice(f.name, value, CHOICES[f.name])
        ratios = self.split_ratios
        if len(ratios) != 3 or any(r < 0 for r in ratios) or abs(sum(ratios) - 1) > 1e-6:
            raise ConfigError(f"split_ratios: expected three non-negative fractions summing to 1 (train, val, test), got {ratios}")
        from fglcore.algorithms import ALGORITHMS
        from fglcore.data.datasets import check_dataset, num_nodes
        from fglcore.data.partition import PARTITIONERS
        from fglcore.data.splits import SPLITS
        from fglcore.models import MODELS

        try:
            info = check_dataset(self.dataset)
        except ConfigError as err:
            raise type(err)(f"dataset: {err}") from None
        task = info.task
        for key, registry in (("algorithm", ALGORITHMS), ("partition", PARTITIONERS), ("split", SPLITS),
                              ("model", MODELS)):
            check_choice(key, getattr(self, key), registry.names())
        spec = MODELS.get(self.model)
        if spec.is_list:
            n = len(spec.clients)
            if task not in spec.tasks:
                raise ConfigError(f"model: model list {self.model!r} holds node models, but dataset {self.dataset!r} "
                                  f"is a {task} task")
            if self.model_options:
                raise ConfigError(f"model_options: model list {self.model!r} gives each client its own model and "
                                  f"options ({spec.describe_clients()}); leave model_options empty, got "
                                  f"{self.model_options!r}")
            if self.num_clients != n:
                raise ConfigError(f"num_clients: model list {self.model!r} holds {n} client models "
                                  f"({spec.describe_clients()}); set num_clients to {n}, got {self.num_clients}")
        elif self.model_options:
            spec.check_options(task, self.model_options, prefix="model_options")
        algorithm = ALGORITHMS.get(self.algorithm)
        if task not in algorithm.tasks:
            raise ConfigError(
                f"algorithm: {self.algorithm!r} supports {', '.join(algorithm.tasks)} tasks, "
                f"but dataset {self.dataset!r} is a {task} task{algorithm.task_hints.get(task, '')}"
            )
        partitioner = PARTITIONERS.get(self.partition)
        if partitioner.task != task:
            raise ConfigError(
                f"partition: {self.partition!r} partitions {partitioner.task}-level data, "
                f"but dataset {self.dataset!r} is a {task} task; accepted: "
                + ", ".join(n for n in PARTITIONERS.names() if PARTITIONERS.get(n).task == task)
            )
        options = partitioner.validate_options(self.partition_options)

        if SPLITS.get(self.split).task != task:
            raise ConfigError(
                f"split: {self.split!r} splits {SPLITS.get(self.split).task}-level data, "
                f"but dataset {self.dataset!r} is a {task} task; accepted: "
                + ", ".join(n for n in SPLITS.names() if SPLITS.get(n).task == task)
            )
        if task == "node":
            nodes = num_nodes(self.dataset)
            most = partitioner.max_clients(nodes, options)
            if self.num_clients > most:
                raise ConfigError(
                    f"num_clients: {self.num_clients} is too many for {info.name!r} ({nodes} nodes) partitioned by "
                    f"{self.partition!r}; accepted: 1 to {most}")
        else:
            most = partitioner.max_clients(self.dataset, options)
            if most is not None and self.num_clients > most:
                raise ConfigError(
                    f"num_clients: {self.num_clients} is too many for {info.name!r} partitioned by "
                    f"{self.partition!r} (it would leave clients without graphs); accepted: 1 to {most}")
        algorithm.check_config(self)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def replace(self, **changes: Any) -> "ExperimentConfig":
        return ExperimentConfig.from_dict({**self.to_dict(), **changes})

    @property
    def effective_partition_seed(self) -> int:
        return self.seed if self.partition_seed is None else self.partition_seed

    @property
    def effective_split_seed(self) -> int:
        return self.seed if self.split_seed is None else self.split_seed
