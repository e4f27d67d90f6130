"""Typed, validated configuration of one experiment.

``ExperimentConfig.from_dict`` rejects an unknown key, a wrong type, an
unknown name (dataset, partitioner, split, model, algorithm) or an
out-of-range value with a :class:`ConfigError` naming the key and what it
accepts -- before any data is loaded.
"""
from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping


class ConfigError(ValueError):
    """A configuration value is not accepted; the message says which and why."""


def _type_name(tp: Any) -> str:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(tp))
    if tp is type(None):
        return "None"
    return getattr(tp, "__name__", str(tp))


def check_type(key: str, value: Any, expected: Any) -> Any:
    """Return ``value`` (ints widened to float where a float is expected) or raise :class:`ConfigError`."""
    origin = typing.get_origin(expected)
    if origin in (typing.Union, types.UnionType):
        for option in typing.get_args(expected):
            try:
                return check_type(key, value, option)
            except ConfigError:
                pass
        raise ConfigError(f"{key}: expected {_type_name(expected)}, got {type(value).__name__} {value!r}")
    if expected is Any:
        return value
    if expected is type(None):
        if value is None:
            return value
    elif origin in (list, tuple):
        if isinstance(value, (list, tuple)):
            (item_type, *_) = typing.get_args(expected) or (Any,)
            return [check_type(f"{key}[{i}]", v, item_type) for i, v in enumerate(value)]
    elif origin is dict or expected is dict:
        if isinstance(value, dict):
            return dict(value)
    elif expected is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif expected is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif isinstance(value, expected):
        return value
    raise ConfigError(f"{key}: expected {_type_name(expected)}, got {type(value).__name__} {value!r}")


def check_choice(key: str, value: Any, accepted: list[str]) -> None:
    values = value if isinstance(value, (list, tuple)) else [value]
    for v in values:
        if v not in accepted:
            close = difflib.get_close_matches(str(v), accepted, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"{key}: {v!r} is not accepted{hint}; accepted: {', '.join(accepted)}")


def check_unknown_keys(given: Mapping[str, Any], known: list[str], what: str) -> None:
    for key in given:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"unknown {what} {key!r}{hint}; accepted: {', '.join(sorted(known))}")


def registry_choices() -> dict[str, Callable[[], list[str]]]:
    """Keys whose values must be registered names, with where to look them up."""
    from fglcore.algorithms import ALGORITHMS
    from fglcore.data.datasets import DATASETS
    from fglcore.data.partition import PARTITIONERS
    from fglcore.data.splits import SPLITS
    from fglcore.models import MODELS

    return {
        "dataset": DATASETS.names,  # or a path to a user's graph: check_value defers to check_dataset
        "datasets": DATASETS.names,
        "partition": PARTITIONERS.names,
        "partitions": PARTITIONERS.names,
        "split": SPLITS.names,
        "model": MODELS.names,
        "models": MODELS.names,
        "backbone": MODELS.names,
        "backbones": MODELS.names,
        "algorithm": ALGORITHMS.names,
        "algorithms": ALGORITHMS.names,
        "method": ALGORITHMS.names,
        "methods": ALGORITHMS.names,
    }


FIXED_CHOICES: dict[str, list[str]] = {
    "selection": ["best_val", "last"],
    "selection_metric": ["val_accuracy", "val_loss", "val_macro_f1"],
    "metric_aggregation": ["micro", "client_weighted", "client_mean"],
    "device": ["auto", "cpu", "cuda"],
    "optimizer": ["adam", "sgd"],
    "profile": ["smoke", "quick", "full"],
}

POSITIVE = {"num_clients", "rounds", "local_epochs", "hidden", "num_layers", "batch_size", "evaluate_every", "num_seeds"}
NON_NEGATIVE = {"seed", "patience", "weight_decay", "lr"}
UNIT_INTERVAL = {"dropout"}


def check_range(key: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    if key in POSITIVE and value < 1:
        raise ConfigError(f"{key}: must be >= 1, got {value}")
    if key in NON_NEGATIVE and value < 0:
        raise ConfigError(f"{key}: must be >= 0, got {value}")
    if key in UNIT_INTERVAL and not 0 <= value < 1:
        raise ConfigError(f"{key}: must be in [0, 1), got {value}")


DATASET_KEYS = ("dataset", "datasets")
"""Keys whose values are registered dataset names or paths to a user's graph (checked by ``check_dataset``)."""


def check_value(key: str, value: Any) -> None:
    """Choice and range checks shared by configs and notebook parameters."""
    base = key.split(".")[-1]
    choices = registry_choices()
    if base in DATASET_KEYS:
        from fglcore.data.datasets import check_dataset

        for v in value if isinstance(value, (list, tuple)) else [value]:
            try:
                check_dataset(v)
            except ConfigError as err:
                raise type(err)(f"{key}: {err}") from None
    elif base in choices:
        check_choice(key, value, choices[base]())
    elif base in FIXED_CHOICES:
        check_choice(key, value, FIXED_CHOICES[base])
    for v in value if isinstance(value, (list, tuple)) else [value]:
        check_range(base, v)


@dataclass
class ExperimentConfig:
    """One federated run: data, partition, split, algorithm, model and training.

    Defaults follow common FGL practice (OpenFGL / FedAvg); each paper's
    parameter files set the values its paper or official code uses.
    """

    # what the rows are tagged with
    paper: str = ""
    table: str = ""
    setting: str = ""  # free label of a variant within a table cell, e.g. "E=5" or "S=0"
    # data and federation
    dataset: str = "Cora"
    partition: str = "louvain"
    num_clients: int = 10
    partition_options: dict = field(default_factory=dict)
    partition_seed: int | None = None
    split: str = "per_client_random"
    split_ratios: list[float] = field(default_factory=lambda: [0.4, 0.3, 0.3])
    split_seed: int | None = None
    # algorithm and model
    algorithm: str = "fedavg"
    algorithm_options: dict = field(default_factory=dict)
    model: str = "gcn"
    hidden: int = 64
    num_layers: int = 2
    dropout: float = 0.5
    # training
    rounds: int = 100
    local_epochs: int = 3
    optimizer: str = "adam"
    lr: float = 0.01
    weight_decay: float = 5e-4
    batch_size: int = 128
    # evaluation and selection
    evaluate_every: int = 1
    selection: str = "best_val"
    selection_metric: str = "val_accuracy"
    patience: int = 0
    metric_aggregation: str = "micro"
    # runtime
    seed: int = 0
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
        clean = {}
        for key, value in values.items():
            clean[key] = check_type(key, value, types_[key])
            check_value(key, clean[key])
        config = cls(**clean)
        config.validate()
        return config

    def validate(self) -> None:
        for key, value in dataclasses.asdict(self).items():
            check_value(key, value)
        ratios = self.split_ratios
        if len(ratios) != 3 or any(r < 0 for r in ratios) or abs(sum(ratios) - 1) > 1e-6:
            raise ConfigError(f"split_ratios: expected three non-negative fractions summing to 1 (train, val, test), got {ratios}")
        from fglcore.algorithms import ALGORITHMS
        from fglcore.data.datasets import dataset_info
        from fglcore.data.partition import PARTITIONERS
        from fglcore.data.splits import SPLITS

        task = dataset_info(self.dataset).task
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
        partitioner.validate_options(self.partition_options)

        if SPLITS.get(self.split).task != task:
            raise ConfigError(
                f"split: {self.split!r} splits {SPLITS.get(self.split).task}-level data, "
                f"but dataset {self.dataset!r} is a {task} task; accepted: "
                + ", ".join(n for n in SPLITS.names() if SPLITS.get(n).task == task)
            )
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
