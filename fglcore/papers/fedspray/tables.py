"""FedSpray's results tables: the experiment grids of Tables 2, 3 and 5, Figs. 4 and 5.

Fu, Chen, Zhang, Chen and Li, "Federated Graph Learning with Structure Proxy
Alignment", KDD 2024 (code: github.com/xbfu/FedSpray at d3e591a). The
notebooks ``notebooks/fedspray/3_results`` and ``4_ablations`` call these
builders; every configuration they return is a validated
:class:`~fglcore.config.ExperimentConfig`, tagged ``paper="fedspray"`` and
with the table it belongs to, so :mod:`fglcore.compare` can set it next to
``params/fedspray/paper.yaml``.

The protocol (:data:`PROTOCOL`, paper §5.1 and the official code, see the
digest §5.5): a 2-layer backbone with 64 hidden units (SGC: one
``SGConv(K=2)``, as in the code), Adam with lr 0.003, 300 rounds of E = 5
local epochs, no dropout and no weight decay; inside each client a random
40/30/30 train/val/test split drawn anew for each of the 5 seeds while the
partition stays fixed; the reported round is the one with the lowest pooled
validation loss, and accuracies are pooled over all clients' test nodes
(micro), overall and on *minority* nodes (every class but the client's
majority class of training labels). λ1 = 1, as the code runs (the paper's
§5.1.3 states 5; the authors' λ1 curves reproduce Table 2 at 1).

Two readings of FedSpray are run side by side, told apart by the
``setting`` column (:data:`VARIANTS`):

* ``""`` -- the paper's Algorithm 1 (``fedspray``'s defaults): labeled
  nodes restart from their class's global proxy every round, the GNN
  distils on all nodes (Eq. 6), the projector starts from the global
  :math:`g_q`, PyG initialisation;
* ``"code"`` -- the official code's behaviour (:data:`CODE_OPTIONS`):
  persistent per-node proxies, distillation on training plus confident
  nodes (> 0.7), projector from the global classifier, ``U[0,1)`` GNN and
  the code's encoder initialisation.

Datasets. The paper's PubMed (7 clients), WikiCS, Physics (12) and Flickr
(20) use the official partition files (``partition="files"``,
``FedSpray/partition`` in the mirror); they run whenever
:func:`fglcore.data.datasets.availability` finds them. Offline, Cora,
CiteSeer and Chameleon stand in, partitioned as the paper describes (the
``K`` largest Louvain communities, ``louvain_largest``) with ``K = 7`` as
PubMed, the dataset of the paper's motivation: Cora's 7 largest
communities hold 158-390 nodes, enough for about 50-120 test nodes each,
while the 10th largest would leave some clients with a dozen minority test
nodes.

O-pFGL's FedSpray rows (its Tables 1, 6, 9, 10) are run by O-pFGL's own
notebook, under its protocol (:mod:`fglcore.papers.opfgl.tables`).
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from fglcore.compare import format_mean_std, ours_cells, paper_entries
from fglcore.config import ConfigError, ExperimentConfig

PAPER = "fedspray"

PROTOCOL: dict[str, Any] = {
    "paper": PAPER,
    "split": "per_client_random",
    "split_ratios": [0.4, 0.3, 0.3],
    "partition_seed": 0,
    "model": "gcn",
    "hidden": 64,
    "num_layers": 2,
    "dropout": 0.0,
    "weight_decay": 0.0,
    "optimizer": "adam",
    "lr": 0.003,
    "rounds": 300,
    "local_epochs": 5,
    "selection": "best_val",
    "selection_metric": "val_loss",
    "metric_aggregation": "micro",
}
"""FedSpray §5.1 and the official code (digest §5.5): the settings every FedSpray-table run shares."""

SEEDS = [0, 1, 2, 3, 4]
"""Five repetitions (paper §5.1); the seed draws the split and the initialisation, not the partition."""

PAPER_DATASETS: dict[str, int] = {"PubMed": 7, "WikiCS": 12, "Physics": 12, "Flickr": 20}
"""The paper's datasets and their numbers of clients (Table 4)."""
STAND_INS: dict[str, int] = {"Cora": 7, "CiteSeer": 7, "Chameleon": 7}
"""Offline stand-ins and their numbers of clients (the 7 largest Louvain communities, as PubMed's 7)."""
PARTITION_FILES = "FedSpray/partition"
"""Folder of the official partition files, relative to ``FGL_DATA_MIRROR`` or ``FGL_DATA``."""

BACKBONES = ["gcn", "sgc", "sage"]
TABLE2_METHODS = ["local", "fedavg", "apfl", "gcfl", "fedstar_node", "fedlit", "fedspray"]
"""Table 2's rows, in the paper's order (FedStar adapted to node classification)."""

CODE_OPTIONS: dict[str, Any] = {
    "labeled_proxies": "persistent",
    "kd_nodes": "confident",
    "projector_from": "classifier",
    "gnn_init": "official",
    "encoder_init": "official",
}
"""``fedspray`` options that reproduce the official code where it departs from the paper (digest §3.8)."""
VARIANTS: dict[str, dict[str, Any]] = {"": {}, "code": CODE_OPTIONS}
"""FedSpray readings by ``setting`` label: the paper's (``""``) and the official code's (``"code"``)."""

LAMBDA1_VALUES = [0.1, 1.0, 5.0, 10.0, 20.0]
"""Fig. 4's grid (the text names 0.1, 1, 5 and 10; 20 is on the authors' curves)."""
PROXY_DIMS = [16, 32, 64, 128]
"""Fig. 5's grid of :math:`d_s` (the paper gives no grid; 64 is the default)."""
LOCAL_EPOCHS = [3, 5, 10]
"""Table 5's local epochs."""

ROUNDS_METHODS = ["local", "fedavg", "fedspray"]
"""The rows :func:`longer_runs_configs` runs again at the official code's rounds by default: FedSpray and the two
baselines of its minority-node argument."""
CODE_ROUNDS = 500
"""The official code's number of rounds (``main.py``: ``server.train(rounds=500)``; the paper, §5.1: 300)."""

METRICS = ["accuracy", "minority_accuracy"]
METRIC_NAMES = {"accuracy": "Overall", "minority_accuracy": "Minority", "macro_f1": "F1"}


# ----------------------------------------------------------------------------- datasets


def dataset_setup(dataset: str, stand_in_clients: int | None = None) -> dict[str, Any]:
    """Partition settings of ``dataset``: official files for the paper's datasets, else the K largest Louvain communities.

    ``stand_in_clients`` overrides a stand-in's client count (default
    :data:`STAND_INS`, 7); the paper's datasets always have as many clients
    as official partition files.
    """
    if stand_in_clients is not None and (isinstance(stand_in_clients, bool) or not isinstance(stand_in_clients, int)
                                         or stand_in_clients < 1):
        raise ConfigError(f"stand_in_clients: expected an int >= 1 or None, got {stand_in_clients!r}")
    if dataset in PAPER_DATASETS:
        return {
            "dataset": dataset,
            "partition": "files",
            "num_clients": PAPER_DATASETS[dataset],
            "partition_options": {"path": PARTITION_FILES, "prefix": dataset},
        }
    return {
        "dataset": dataset,
        "partition": "louvain_largest",
        "num_clients": stand_in_clients or STAND_INS.get(dataset, 7),
        "partition_options": {},
    }


def dataset_availability(datasets: Iterable[str], stand_in_clients: int | None = None) -> pd.DataFrame:
    """Per dataset: paper dataset or stand-in, whether a run can load it here
    (:func:`fglcore.data.datasets.availability`), and its partition."""
    from fglcore.data.datasets import availability

    rows = []
    for name in datasets:
        setup = dataset_setup(name, stand_in_clients)
        rows.append({"dataset": name, "role": "paper" if name in PAPER_DATASETS else "stand-in",
                     "available": availability(name) == "available", "partition": setup["partition"],
                     "num_clients": setup["num_clients"]})
    return pd.DataFrame(rows, columns=["dataset", "role", "available", "partition", "num_clients"])


# ----------------------------------------------------------------------------- methods and settings


def setting_label(variant: str, extra: str = "") -> str:
    """``"code"`` and ``"E=3"`` -> ``"code, E=3"``; empty parts are left out."""
    return ", ".join(part for part in (variant, extra) if part)


def check_variants(variants: Iterable[str]) -> list[str]:
    variants = list(variants)
    for v in variants:
        if v not in VARIANTS:
            raise ConfigError(f"variants: {v!r} is not accepted; accepted: {', '.join(map(repr, VARIANTS))}")
    return variants


def method_runs(
    method: str, variants: Iterable[str] = ("", "code"), options: Mapping[str, Any] | None = None, extra: str = ""
) -> list[dict[str, Any]]:
    """Config fields of ``method``: one run per FedSpray reading for ``fedspray``, else one.

    ``options`` are FedSpray options added to every reading (e.g.
    ``{"zero_proxies": True}``), ``extra`` a label appended to the setting.
    """
    if method != "fedspray":
        return [{"algorithm": method, "algorithm_options": {}, "setting": extra}]
    return [
        {
            "algorithm": "fedspray",
            "algorithm_options": {**VARIANTS[v], **(options or {})},
            "setting": setting_label(v, extra),
        }
        for v in check_variants(variants)
    ]


def _configs(
    table: str,
    datasets: Iterable[str],
    models: Iterable[str],
    runs: Sequence[Mapping[str, Any]],
    seeds: Iterable[int],
    overrides: Mapping[str, Any],
) -> list[ExperimentConfig]:
    overrides = dict(overrides)
    stand_in_clients = overrides.pop("stand_in_clients", None)
    if "num_clients" in overrides:
        raise ConfigError("num_clients: set stand_in_clients instead; the paper's datasets keep their official clients")
    configs = []
    for dataset in datasets:
        for model in models:
            for run in runs:
                for seed in seeds:
                    fields = {
                        **PROTOCOL,
                        **dataset_setup(dataset, stand_in_clients),
                        "table": table,
                        "model": model,
                        "seed": seed,
                        **overrides,
                        **run,
                    }
                    configs.append(ExperimentConfig.from_dict(fields))
    return configs


# ----------------------------------------------------------------------------- the tables


def table2_configs(
    datasets: Iterable[str],
    models: Iterable[str] = BACKBONES,
    methods: Iterable[str] = TABLE2_METHODS,
    seeds: Iterable[int] = SEEDS,
    variants: Iterable[str] = ("", "code"),
    **overrides: Any,
) -> list[ExperimentConfig]:
    """Table 2: every method and backbone on every dataset; FedSpray once per reading.

    ``overrides`` replace :data:`PROTOCOL` fields (e.g. ``rounds`` for a
    quick run); ``stand_in_clients`` sets the stand-ins' client count.
    """
    runs = [run for m in methods for run in method_runs(m, variants)]
    return _configs("2", datasets, models, runs, list(seeds), overrides)


def table3_configs(
    datasets: Iterable[str], seeds: Iterable[int] = SEEDS, variants: Iterable[str] = ("", "code"), **overrides: Any
) -> list[ExperimentConfig]:
    """Table 3: FedSpray with and without structure proxies, GCN, in both readings of "S = 0": every proxy
    zero (``S=0``, option ``zero_proxies``) and only the class-wise S zero, the labeled nodes' proxies still
    trained (``S=0 class-wise``, option ``zero_global_proxies``)."""
    runs = (method_runs("fedspray", variants) + method_runs("fedspray", variants, {"zero_proxies": True}, "S=0")
            + method_runs("fedspray", variants, {"zero_global_proxies": True}, "S=0 class-wise"))
    return _configs("3", datasets, ["gcn"], runs, list(seeds), overrides)


def lambda1_configs(
    datasets: Iterable[str],
    models: Iterable[str] = ("sage",),
    values: Iterable[float] = LAMBDA1_VALUES,
    seeds: Iterable[int] = SEEDS,
    variants: Iterable[str] = ("", "code"),
    **overrides: Any,
) -> list[ExperimentConfig]:
    """Fig. 4: FedSpray for each :math:`\\lambda_1` (GraphSAGE in the paper); setting ``"lambda1=<v>"``."""
    runs = [
        run
        for v in values
        for run in method_runs("fedspray", variants, {"lambda1": float(v)}, f"lambda1={lambda1_text(v)}")
    ]
    return _configs("fig4", datasets, list(models), runs, list(seeds), overrides)


def lambda1_text(value: float) -> str:
    """``1.0`` -> ``"1"``, ``0.1`` -> ``"0.1"``: the λ1 in setting labels."""
    value = float(value)
    return str(int(value)) if value.is_integer() else repr(value)


def proxy_dim_configs(
    datasets: Iterable[str],
    dims: Iterable[int] = PROXY_DIMS,
    seeds: Iterable[int] = SEEDS,
    variants: Iterable[str] = ("", "code"),
    **overrides: Any,
) -> list[ExperimentConfig]:
    """Fig. 5: FedSpray with proxy (and feature-embedding) width :math:`d_s`, GCN with 64 hidden; setting ``"d_s=<d>"``."""
    runs = [run for d in dims for run in method_runs("fedspray", variants, {"proxy_dim": int(d)}, f"d_s={d}")]
    return _configs("fig5", datasets, ["gcn"], runs, list(seeds), overrides)


def table5_configs(
    datasets: Iterable[str],
    epochs: Iterable[int] = LOCAL_EPOCHS,
    seeds: Iterable[int] = SEEDS,
    variants: Iterable[str] = ("", "code"),
    **overrides: Any,
) -> list[ExperimentConfig]:
    """Table 5: FedAvg and FedSpray with E local epochs (WikiCS, GCN in the paper); setting ``"E=<E>"``."""
    configs = []
    for e in epochs:
        runs = method_runs("fedavg", extra=f"E={e}") + method_runs("fedspray", variants, extra=f"E={e}")
        configs += _configs("5", datasets, ["gcn"], runs, list(seeds), {**overrides, "local_epochs": int(e)})
    return configs


def reading_steps_configs(datasets: Iterable[str], models: Iterable[str] = ("gcn",), seeds: Iterable[int] = SEEDS,
                          **overrides: Any) -> list[ExperimentConfig]:
    """The gap between FedSpray's two readings, one official-code option (:data:`CODE_OPTIONS`) at a time.

    Per dataset, backbone and seed: the paper's reading (setting ``"paper"``) and the code's
    (``"code"``) -- the same computations as Table 2's FedSpray rows, which the store copies -- the
    paper's reading with one option switched to the code's value (``"paper+<option>"``) and the
    code's with one switched back to the paper's default (``"code-<option>"``). Table ``"readings"``
    (not a paper table).
    """
    runs = [{"algorithm": "fedspray", "algorithm_options": {}, "setting": "paper"},
            {"algorithm": "fedspray", "algorithm_options": dict(CODE_OPTIONS), "setting": "code"}]
    for option, value in CODE_OPTIONS.items():
        runs.append({"algorithm": "fedspray", "algorithm_options": {option: value}, "setting": f"paper+{option}"})
        runs.append({"algorithm": "fedspray", "algorithm_options": {k: v for k, v in CODE_OPTIONS.items() if k != option},
                     "setting": f"code-{option}"})
    return _configs("readings", datasets, list(models), runs, list(seeds), overrides)


def longer_runs_configs(datasets: Iterable[str], models: Iterable[str], rounds: Iterable[int] = (CODE_ROUNDS,),
                        methods: Iterable[str] = ROUNDS_METHODS, seeds: Iterable[int] = SEEDS,
                        variants: Iterable[str] = ("", "code"), **overrides: Any) -> list[ExperimentConfig]:
    """Table 2's runs of ``methods`` again with each number of ``rounds`` (default :data:`CODE_ROUNDS`, the
    official code's), everything else equal: table ``"rounds=<R>"`` (not a paper table).

    A run read at its last round (its pooled validation loss still falling) has not converged; these runs
    show how such a cell moves with the length of training, and what it would be with the code's rounds.
    """
    runs = [run for m in methods for run in method_runs(m, variants)]
    return [config for r in rounds
            for config in _configs(f"rounds={r}", datasets, list(models), runs, list(seeds), {**overrides, "rounds": r})]


def rounds_effect(results: pd.DataFrame, rounds: int, paper: pd.DataFrame | None = None,
                  metrics: Sequence[str] = METRICS) -> pd.DataFrame:
    """The cells that also ran longer (:func:`longer_runs_configs`, tables ``"rounds=<R>"``) next to Table 2's
    (table ``"2"``, ``rounds`` rounds): one row per dataset, backbone, method and number of rounds, with the
    mean over seeds of each metric, the mean selected round and the number of seeds; ``paper``
    (:func:`~fglcore.compare.paper_entries` of Table 2) adds the paper's numbers, ``rounds`` ``"paper"``."""
    keys = ["dataset", "model", "label"]
    columns = [*keys, "rounds", *metrics, "selected_round", "seeds"]
    rows = results[results["metric"].isin(metrics)].copy()
    rows["rounds"] = rows["table"].map(lambda t: str(rounds) if t == "2" else t.removeprefix("rounds=")
                                       if t.startswith("rounds=") else None)
    rows = rows.dropna(subset=["rounds"])
    rows["label"] = [method_label(m, s) for m, s in zip(rows["method"], rows["setting"].fillna(""))]
    rows = rows.merge(rows.loc[rows["table"] != "2", keys].drop_duplicates(), on=keys)
    if rows.empty:
        return pd.DataFrame(columns=columns)
    out = rows.pivot_table(index=[*keys, "rounds"], columns="metric", values="value", aggfunc="mean")
    runs = rows.drop_duplicates([*keys, "rounds", "seed"]).groupby([*keys, "rounds"])
    out["selected_round"] = runs["selected_round"].mean()
    out["seeds"] = runs["seed"].nunique()
    frames = [out.reset_index()]
    if paper is not None and not paper.empty:
        reported = paper[paper["metric"].isin(metrics)].copy()
        reported["label"] = [method_label(m, s) for m, s in zip(reported["method"], reported["setting"])]
        reported = reported.pivot_table(index=keys, columns="metric", values="mean").reset_index()
        frames.append(reported.merge(frames[0][keys].drop_duplicates(), on=keys).assign(rounds="paper"))
    out = pd.concat(frames, ignore_index=True)
    order = out["rounds"].map(lambda r: float("inf") if r == "paper" else int(r))
    out = out.assign(order=order, seeds=out["seeds"].astype("Int64"))  # the paper's rows have none
    out = out.sort_values([*keys, "order"], kind="stable", ignore_index=True)
    return out[columns]


def proxy_ablation_effect(results: pd.DataFrame, paper: pd.DataFrame | None = None,
                          metrics: Sequence[str] = METRICS) -> pd.DataFrame:
    """Table 3 as changes: for each dataset, FedSpray reading (``paper``, ``code``), reading of S = 0
    (``S=0``, ``S=0 class-wise``) and metric, the mean over seeds with proxies and without, the change
    (points, mean of the per-seed paired differences), its population std over seeds, the number of seeds,
    and with ``paper`` (:func:`~fglcore.compare.paper_entries` of Table 3) the paper's change."""
    columns = ["dataset", "reading", "ablation", "metric", "with proxies", "without", "change", "change std",
               "seeds", "paper change"]
    rows = results[(results["table"].astype(str) == "3") & results["metric"].isin(metrics)].copy()
    if rows.empty:
        return pd.DataFrame(columns=columns)
    setting = rows["setting"].fillna("")
    rows["reading"] = ["code" if s.startswith("code") else "paper" for s in setting]
    rows["ablation"] = [s.removeprefix("code").strip(", ") or "proxies" for s in setting]
    keys = ["dataset", "reading", "metric"]
    wide = rows.pivot_table(index=[*keys, "seed"], columns="ablation", values="value", aggfunc="mean")
    reported = {}
    if paper is not None and not paper.empty:
        p = paper[paper["metric"].isin(metrics) & (paper["setting"].isin(["", "S=0"]))]
        p = p.pivot_table(index=["dataset", "metric"], columns="setting", values="mean")
        reported = (p["S=0"] - p[""]).to_dict()
    frames = []
    for ablation in [c for c in wide.columns if c != "proxies"]:
        pair = wide[["proxies", ablation]].dropna()
        by = pair.groupby(level=keys)
        change = (pair[ablation] - pair["proxies"]).groupby(level=keys)
        frame = pd.DataFrame({"with proxies": by["proxies"].mean(), "without": by[ablation].mean(),
                              "change": change.mean(), "change std": change.std(ddof=0),
                              "seeds": change.size()}).reset_index().assign(ablation=ablation)
        frame["paper change"] = [reported.get((d, m), float("nan")) for d, m in zip(frame["dataset"], frame["metric"])]
        frames.append(frame)
    out = pd.concat(frames, ignore_index=True)
    return out.sort_values(["dataset", "metric", "reading", "ablation"], ignore_index=True)[columns]


def reading_steps(results: pd.DataFrame, metrics: Sequence[str] = METRICS) -> pd.DataFrame:
    """:func:`reading_steps_configs`' runs: one row per dataset, backbone and setting, the mean over seeds
    of each metric and its change (points) against the reading it starts from (``against``: ``paper`` for
    ``paper+X``, ``code`` for ``code-X``).

    ``paper+X`` up: option X of the code alone moves the paper's reading (towards the code's);
    ``code-X`` down: the code's reading needs X.
    """
    rows = results[(results["table"] == "readings") & results["metric"].isin(metrics)]
    means = rows.groupby(["dataset", "model", "setting", "metric"], sort=False)["value"].mean().unstack("metric")
    out = []
    for (dataset, model), group in means.groupby(level=["dataset", "model"], sort=False):
        group = group.droplevel(["dataset", "model"])
        for setting, values in group.iterrows():
            base = "code" if setting.startswith("code") else "paper"
            row = {"dataset": dataset, "model": model, "setting": setting, "against": base}
            for metric in metrics:
                row[metric] = float(values[metric])
            for metric in metrics:
                row[f"{metric}_change"] = float(values[metric] - group.loc[base, metric]) if base in group.index else math.nan
            out.append(row)
    return pd.DataFrame(out)


def results_plan(datasets: Sequence[str], stand_in_clients: int, models: Sequence[str], methods: Sequence[str],
                 variants: Sequence[str], rounds: int, seeds: Sequence[int],
                 reading_datasets: Sequence[str] = (), longer_rounds: Sequence[int] = (CODE_ROUNDS,),
                 longer_datasets: Sequence[str] = (), longer_models: Sequence[str] = ("sgc",)) -> dict[str, Any]:
    """What ``notebooks/fedspray/3_results`` runs: ``{"ready", "table2", "readings", "longer"}``, the
    datasets of ``datasets`` available here (a missing one is skipped, as the notebook says), Table 2's configs
    on them, the one-option-at-a-time comparison of FedSpray's readings (:func:`reading_steps_configs`, GCN) on
    the available ``reading_datasets``, and Table 2's :data:`ROUNDS_METHODS` among ``methods`` again with each
    of ``longer_rounds`` (:func:`longer_runs_configs`) on the available ``longer_datasets`` with
    ``longer_models``.

    The notebook calls it, and ``fgl run`` before the kernel starts; a :class:`ConfigError` names the
    parameter.
    """
    from fglcore import experiment
    from fglcore.checks import POSITIVE
    from fglcore.data.datasets import available

    experiment.check_lists(datasets=datasets, models=models, methods=methods, variants=variants, seeds=seeds,
                           longer_rounds=longer_rounds, longer_models=longer_models)
    experiment.check_datasets("datasets", datasets, "node")
    experiment.check_datasets("reading_datasets", reading_datasets, "node")
    experiment.check_datasets("longer_datasets", longer_datasets, "node")
    POSITIVE.check("parameter 'stand_in_clients'", stand_in_clients)
    POSITIVE.check("parameter 'longer_rounds'", list(longer_rounds))
    ready = available(datasets)
    if not ready:
        raise ConfigError(f"parameter 'datasets': none of {', '.join(map(str, datasets))} is available here "
                          f"(fgl datasets shows what is); accepted: at least one available dataset, e.g. "
                          f"{', '.join(available(list(STAND_INS)))}")
    with experiment.parameters_named({"num_clients": "stand_in_clients", "model": "models", "algorithm": "methods",
                                      "seed": "seeds", "dataset": "datasets"}):
        table2 = table2_configs(ready, models, methods, seeds, variants, rounds=rounds,
                                stand_in_clients=stand_in_clients)
    with experiment.parameters_named({"num_clients": "stand_in_clients", "seed": "seeds",
                                      "dataset": "reading_datasets"}):
        readings = reading_steps_configs(available(reading_datasets), seeds=seeds, rounds=rounds,
                                         stand_in_clients=stand_in_clients)
    with experiment.parameters_named({"num_clients": "stand_in_clients", "model": "longer_models",
                                      "algorithm": "methods", "seed": "seeds", "rounds": "longer_rounds",
                                      "dataset": "longer_datasets"}):
        longer = longer_runs_configs(available(longer_datasets), longer_models, longer_rounds,
                                     [m for m in ROUNDS_METHODS if m in methods], seeds, variants,
                                     stand_in_clients=stand_in_clients)
    return {"ready": ready, "table2": table2, "readings": readings, "longer": longer}


def ablations_plan(datasets: Sequence[str], stand_in_clients: int, variants: Sequence[str], rounds: int,
                   seeds: Sequence[int], table3_datasets: Sequence[str], lambda1_datasets: Sequence[str],
                   lambda1_models: Sequence[str], lambda1_values: Sequence[float], proxy_datasets: Sequence[str],
                   proxy_dims: Sequence[int], epochs_datasets: Sequence[str], local_epochs: Sequence[int]
                   ) -> dict[str, Any]:
    """What ``notebooks/fedspray/4_ablations`` runs: ``{"ready", "table3", "lambda1", "proxy_dim", "table5"}``.

    Each table runs on its datasets that are among ``datasets`` and available here (``ready``); a table left
    without any runs no dataset. The notebook calls it, and ``fgl run`` before the kernel starts.
    """
    from fglcore import experiment
    from fglcore.checks import POSITIVE, Bounds
    from fglcore.data.datasets import available

    experiment.check_lists(datasets=datasets, variants=variants, seeds=seeds, lambda1_models=lambda1_models,
                           lambda1_values=lambda1_values, proxy_dims=proxy_dims, local_epochs=local_epochs)
    for name, value in (("datasets", datasets), ("table3_datasets", table3_datasets),
                        ("lambda1_datasets", lambda1_datasets), ("proxy_datasets", proxy_datasets),
                        ("epochs_datasets", epochs_datasets)):
        experiment.check_datasets(name, value, "node")
    POSITIVE.check("parameter 'stand_in_clients'", stand_in_clients)
    Bounds(minimum=0).check("parameter 'lambda1_values'", list(lambda1_values))
    POSITIVE.check("parameter 'proxy_dims'", list(proxy_dims))
    POSITIVE.check("parameter 'local_epochs'", list(local_epochs))
    ready = available(datasets)

    def usable(names: Sequence[str]) -> list[str]:
        return [d for d in names if d in ready]

    common = {"rounds": rounds, "stand_in_clients": stand_in_clients}
    names = {"num_clients": "stand_in_clients", "seed": "seeds"}
    with experiment.parameters_named({**names, "dataset": "table3_datasets"}):
        table3 = table3_configs(usable(table3_datasets), seeds, variants, **common)
    with experiment.parameters_named({**names, "model": "lambda1_models", "algorithm_options": "lambda1_values",
                                      "dataset": "lambda1_datasets"}):
        lambda1 = lambda1_configs(usable(lambda1_datasets), lambda1_models, lambda1_values, seeds, variants, **common)
    with experiment.parameters_named({**names, "algorithm_options": "proxy_dims", "dataset": "proxy_datasets"}):
        proxy = proxy_dim_configs(usable(proxy_datasets), proxy_dims, seeds, variants, **common)
    with experiment.parameters_named({**names, "local_epochs": "local_epochs", "dataset": "epochs_datasets"}):
        table5 = table5_configs(usable(epochs_datasets), local_epochs, seeds, variants, **common)
    return {"ready": ready, "table3": table3, "lambda1": lambda1, "proxy_dim": proxy, "table5": table5}


def method_plan(dataset: str, num_clients: int, model: str, proxy_dim: int, lambda1: float, lambda2: float,
                local_epochs: int, rounds: int, lr: float, seed: int) -> dict[str, Any]:
    """What ``notebooks/fedspray/2_method`` builds: ``{"config"}``, the FedSpray run it traces (the
    ``dataset``'s ``num_clients`` largest Louvain communities). Called by the notebook and by ``fgl run``."""
    from fglcore import experiment

    experiment.check_datasets("dataset", dataset, "node")
    with experiment.parameters_named({"algorithm_options.proxy_dim": "proxy_dim", "algorithm_options.lambda1": "lambda1",
                                      "algorithm_options.lambda2": "lambda2"}):
        config = ExperimentConfig.from_dict(dict(
            paper="fedspray", table="method", dataset=dataset, partition="louvain_largest", num_clients=num_clients,
            algorithm="fedspray", model=model, hidden=64, dropout=0.0, weight_decay=0.0, lr=lr, rounds=rounds,
            local_epochs=local_epochs, selection_metric="val_loss", seed=seed,
            algorithm_options={"proxy_dim": proxy_dim, "lambda1": lambda1, "lambda2": lambda2}))
    return {"config": config}


def count_runs(configs: Sequence[ExperimentConfig]) -> pd.DataFrame:
    """Runs and total rounds per table and method: what a grid costs before it runs."""
    frame = pd.DataFrame(
        [{"table": c.table, "method": c.algorithm, "rounds": c.rounds, "epochs": c.rounds * c.local_epochs}
         for c in configs],
        columns=["table", "method", "rounds", "epochs"],
    )
    return frame.groupby(["table", "method"], sort=False).agg(runs=("rounds", "size"), rounds=("rounds", "sum"),
                                                              epochs=("epochs", "sum")).reset_index()


# ----------------------------------------------------------------------------- tables for display


def method_label(method: str, setting: str) -> str:
    """``fedspray`` and ``"code"`` -> ``"fedspray [code]"``."""
    return f"{method} [{setting}]" if setting else method


def layout(
    results: pd.DataFrame,
    index: Sequence[str] = ("dataset", "method"),
    columns: Sequence[str] = ("model", "metric"),
    metrics: Sequence[str] = METRICS,
    row_order: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Our cells (:func:`fglcore.compare.ours_cells`: mean ± std over seeds, as ``paper.yaml`` declares) in the
    paper's layout: ``index`` rows, ``columns`` columns.

    The ``method`` column shows the setting in brackets (``fedspray [code]``).
    ``row_order`` orders the methods (e.g. :data:`TABLE2_METHODS`); a method
    absent from it goes last.
    """
    cells = ours_cells(results, PAPER, metrics=list(metrics))
    if cells.empty:
        return pd.DataFrame()
    if "setting" not in index and "setting" not in columns:
        cells["method"] = [method_label(m, s) for m, s in zip(cells["method"], cells["setting"])]
    by = list(dict.fromkeys([*index, *columns]))
    cells["cell"] = [format_mean_std(m, s) for m, s in zip(cells["mean"], cells["std"])]
    if "metric" in by:
        cells["metric"] = cells["metric"].map(lambda m: METRIC_NAMES.get(m, m))
    table = cells.pivot_table(index=list(index), columns=list(columns), values="cell", aggfunc="first", sort=False)
    table = table[_column_order(table.columns, cells, list(columns))]
    return _order_rows(table, list(index), row_order).fillna("—")


def _column_order(present: pd.Index, frame: pd.DataFrame, columns: list[str]) -> list:
    """Columns in first-seen order of each level, metrics as in :data:`METRIC_NAMES` (Overall before Minority)."""
    metric_rank = {name: i for i, name in enumerate(METRIC_NAMES.values())}
    seen = {c: {v: i for i, v in enumerate(dict.fromkeys(frame[c]))} for c in columns}

    def rank(key):
        values = key if isinstance(key, tuple) else (key,)
        return tuple(metric_rank.get(v, len(metric_rank)) if c == "metric" else seen[c].get(v, 0)
                     for c, v in zip(columns, values))

    return sorted(present, key=rank)


def labelled(comparison: pd.DataFrame) -> pd.DataFrame:
    """A :func:`fglcore.compare.compare` frame with FedSpray's labels: ``fedspray [code]``, ``Overall`` / ``Minority``.

    For :func:`fglcore.compare.side_by_side` (e.g. ``rows=("dataset", "method", "model"), columns="metric"``).
    """
    frame = comparison.copy()
    frame["method"] = [method_label(m, s) for m, s in zip(frame["method"], frame["setting"].fillna(""))]
    frame["metric"] = frame["metric"].map(lambda m: METRIC_NAMES.get(m, m))
    return frame


def gaps(results: pd.DataFrame, reference: Mapping[str, Any], by: Sequence[str] = ("dataset", "model", "metric"),
         metrics: Sequence[str] = METRICS) -> pd.DataFrame:
    """Mean difference (points) of every method/setting to ``reference`` (e.g. ``{"method": "fedavg"}``).

    One row per ``by`` group and method label; a positive gap means better
    than the reference.
    """
    rows = results[results["metric"].isin(metrics)].copy()
    rows["label"] = [method_label(m, s) for m, s in zip(rows["method"], rows["setting"])]
    means = rows.groupby([*by, "label"], sort=False)["value"].mean()
    mask = pd.Series(True, index=rows.index)
    for column, value in reference.items():
        mask &= rows[column] == value
    ref_rows = rows[mask]
    if ref_rows.empty:
        raise ValueError(f"gaps: no rows for the reference {dict(reference)}")
    ref = ref_rows.groupby(list(by), sort=False)["value"].mean()
    frame = means.reset_index()
    frame["reference"] = [ref.get(tuple(r[c] for c in by), math.nan) if len(by) > 1 else ref.get(r[by[0]], math.nan)
                          for _, r in frame.iterrows()]
    frame["gap"] = frame["value"] - frame["reference"]
    return frame.pivot_table(index=[c for c in by if c != "metric"] + ["label"], columns="metric", values="gap",
                             sort=False)


def fedspray_margins(results: pd.DataFrame, metrics: Sequence[str] = METRICS) -> pd.DataFrame:
    """FedSpray's lead over the best other method, per dataset, backbone and FedSpray reading (points).

    One row per ``(dataset, model, label)`` with FedSpray's reading in
    ``label`` (``fedspray``, ``fedspray [code]``); per metric, FedSpray's mean
    over seeds minus the highest mean of the methods other than FedSpray, and
    that method's name in ``best_other_<metric>``. Positive: FedSpray wins, as
    Table 2 claims.
    """
    rows = results[results["metric"].isin(metrics)].copy()
    rows["label"] = [method_label(m, s) for m, s in zip(rows["method"], rows["setting"])]
    means = rows.groupby(["dataset", "model", "metric", "method", "label"], sort=False)["value"].mean().reset_index()
    out = []
    for (dataset, model), group in means.groupby(["dataset", "model"], sort=False):
        others = group[group["method"] != "fedspray"]
        for label in group.loc[group["method"] == "fedspray", "label"].unique():
            row: dict[str, Any] = {"dataset": dataset, "model": model, "label": label}
            for metric in metrics:
                mine = group[(group["label"] == label) & (group["metric"] == metric)]["value"]
                rivals = others[others["metric"] == metric]
                if mine.empty or rivals.empty:
                    row[metric], row[f"best_other_{metric}"] = math.nan, ""
                    continue
                best = rivals.loc[rivals["value"].idxmax()]
                row[metric], row[f"best_other_{metric}"] = float(mine.iloc[0] - best["value"]), best["label"]
            out.append(row)
    return pd.DataFrame(out)


def majority_node_accuracy(rows: pd.DataFrame, profiles: pd.DataFrame) -> pd.DataFrame:
    r"""Accuracy on *majority* nodes implied by pooled overall and minority accuracy (points).

    Pooled accuracy is :math:`O = (1-m)\,A_{maj} + m\,A_{min}` with :math:`m` the minority share of the
    test nodes, so :math:`A_{maj} = (O - m A_{min})/(1-m)`; :math:`m` is taken from ``profiles``'
    ``minority_share_pooled`` (all nodes of the partition: the random 30 % test split has the same share in
    expectation). A model that predicts each client's majority class everywhere has :math:`A_{maj}=100`,
    :math:`A_{min}=0`. ``rows``: the paper's entries or our results (``dataset, method, model, setting,
    metric, value``; seeds are averaged), for the datasets of ``profiles``.
    """
    columns = ["dataset", "model", "label", "accuracy", "minority_accuracy", "majority_accuracy"]
    share = profiles.set_index("dataset")["minority_share_pooled"]
    rows = rows[rows["metric"].isin(METRICS) & rows["dataset"].isin(share.index)].copy()
    if rows.empty:
        return pd.DataFrame(columns=columns).astype({c: float for c in columns[3:]})
    rows["label"] = [method_label(m, s) for m, s in zip(rows["method"], rows["setting"])]
    wide = rows.groupby(["dataset", "model", "label", "metric"], sort=False)["value"].mean().unstack("metric")
    wide = wide.dropna(subset=METRICS).reset_index()
    m = wide["dataset"].map(share)
    wide["majority_accuracy"] = (wide["accuracy"] - m * wide["minority_accuracy"]) / (1 - m)
    return wide[columns]


def selected_rounds(results: pd.DataFrame, by: Sequence[str] = ("dataset", "model")) -> pd.DataFrame:
    """The reported round of each method (lowest pooled validation loss): mean, min and max over seeds."""
    rows = results[results["metric"] == "accuracy"].copy()
    rows["label"] = [method_label(m, s) for m, s in zip(rows["method"], rows["setting"])]
    rounds = rows.groupby([*by, "label"], sort=False)["selected_round"]
    return pd.DataFrame({"mean": rounds.mean().round(1), "min": rounds.min(), "max": rounds.max()})


def same_as(results: pd.DataFrame, reference: str = "fedavg", by: Sequence[str] = ("dataset", "model")) -> pd.DataFrame:
    """Methods whose accuracy and minority accuracy equal ``reference``'s exactly in every seed, per ``by`` group.

    GCFL is FedAvg until its first cluster split, so it reports FedAvg's
    numbers whenever the selected round comes before any split.
    """
    rows = results[results["metric"].isin(["accuracy", "minority_accuracy"])].copy()
    rows["label"] = [method_label(m, s) for m, s in zip(rows["method"], rows["setting"])]
    keys = [*by, "metric", "seed"]
    is_reference = rows["label"] == method_label(reference, "")
    ref = rows[is_reference].set_index(keys)["value"]
    found = []
    for group, frame in rows[~is_reference].groupby([*by, "label"], sort=False):
        values = frame.set_index(keys)["value"]
        if values.index.isin(ref.index).all() and (values == ref[values.index]).all():
            found.append({**dict(zip([*by, "method"], group)), "seeds": frame["seed"].nunique()})
    return pd.DataFrame(found, columns=[*by, "method", "seeds"])


def sensitivity_frame(results: pd.DataFrame, parameter: str) -> pd.DataFrame:
    """Rows of a sweep with the swept value parsed from the setting (``"code, lambda1=5"`` -> 5.0)."""
    frame = results.copy()
    values, variants = [], []
    for setting in frame["setting"].astype(str):
        parts = [p.strip() for p in setting.split(",") if p.strip()]
        found = [p for p in parts if p.startswith(f"{parameter}=")]
        if len(found) != 1:
            raise ValueError(f"sensitivity_frame: setting {setting!r} names no single {parameter}=<value>")
        values.append(float(found[0].split("=", 1)[1]))
        variants.append(", ".join(p for p in parts if p not in found) or "paper")
    frame[parameter] = values
    frame["variant"] = variants
    return frame


def lambda1_against_rivals(lambda1_results: pd.DataFrame, table2: pd.DataFrame,
                           metric: str = "minority_accuracy") -> pd.DataFrame:
    """FedSpray's ``metric`` at each :math:`\\lambda_1` of Fig. 4 against the best other method of Table 2 on
    the same dataset and backbone (means over seeds): one row per dataset, backbone, FedSpray reading and
    :math:`\\lambda_1`, with the rival's name and FedSpray's margin over it (points). Table 2 runs FedSpray at
    the code's :math:`\\lambda_1 = 1`; this asks whether another value would change a claim's verdict."""
    columns = ["dataset", "model", "reading", "lambda1", "fedspray", "seeds", "best other", "other", "margin"]
    sweep = sensitivity_frame(lambda1_results[lambda1_results["metric"] == metric], "lambda1")
    others = table2[(table2["metric"] == metric) & (table2["method"] != "fedspray")]
    if sweep.empty or others.empty:
        return pd.DataFrame(columns=columns)
    best = (others.groupby(["dataset", "model", "method"])["value"].mean().reset_index()
            .sort_values("value", ascending=False, kind="stable").drop_duplicates(["dataset", "model"])
            .rename(columns={"method": "best other", "value": "other"}))
    out = (sweep.groupby(["dataset", "model", "variant", "lambda1"])
           .agg(fedspray=("value", "mean"), seeds=("seed", "nunique")).reset_index()
           .rename(columns={"variant": "reading"}).merge(best, on=["dataset", "model"]))
    out["margin"] = out["fedspray"] - out["other"]
    return out.sort_values(["dataset", "model", "reading", "lambda1"], ignore_index=True)[columns]


def sensitivity_figure(results: pd.DataFrame, parameter: str, log_x: bool = False, title: str | None = None):
    """Mean ± std over seeds of overall and minority accuracy against ``parameter``; one panel per dataset and model."""
    import seaborn as sns
    from matplotlib.figure import Figure

    from fglcore import plotting

    frame = sensitivity_frame(results[results["metric"].isin(METRICS)], parameter)
    frame["metric"] = frame["metric"].map(METRIC_NAMES)
    frame["panel"] = frame["dataset"] + ", " + frame["model"]
    panels = list(dict.fromkeys(frame["panel"]))
    plotting.set_style()
    fig = Figure(figsize=(4.2 * len(panels), 3.4))  # not registered with pyplot: shown once, by display()
    axes = fig.subplots(1, len(panels), squeeze=False)
    for ax, panel in zip(axes[0], panels):
        sns.lineplot(data=frame[frame["panel"] == panel], x=parameter, y="value", hue="metric", style="variant",
                     markers=True, errorbar="sd", estimator="mean", ax=ax)
        if log_x:
            ax.set_xscale("log", base=2 if parameter == "d_s" else 10)
        ax.set_xticks(sorted(frame[parameter].unique()))
        ax.set_xticklabels([lambda1_text(v) for v in sorted(frame[parameter].unique())])
        ax.set_title(panel)
        ax.set_ylabel("accuracy (%)")
        ax.legend(fontsize="small")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def paper_table(
    paper: Mapping[str, Any] | str,
    table: str,
    index: Sequence[str] = ("dataset", "method"),
    columns: Sequence[str] = ("model", "metric"),
    settings: Sequence[str] | None = ("",),
    row_order: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The paper's own numbers of ``table`` (from ``paper.yaml``) in the same layout as :func:`layout`.

    ``settings`` keeps the entries with these setting labels (``None``: all),
    e.g. ``("",)`` drops the duplicates that face the official-code reading.
    """
    entries = paper_entries(paper, table)
    rows = pd.DataFrame({k: entries[k].fillna("").astype(object) if k != "setting" else entries[k]
                         for k in ("dataset", "method", "model", "setting", "metric", "partition", "num_clients")})
    rows["value"], rows["std"] = entries["mean"], entries["std"]
    if settings is not None:
        rows = rows[rows["setting"].isin(list(settings))]
    if "setting" not in index and "setting" not in columns:
        rows["method"] = [method_label(m, s) for m, s in zip(rows["method"], rows["setting"])]
    rows["metric"] = rows["metric"].map(lambda m: METRIC_NAMES.get(m, m))
    rows["cell"] = [format_mean_std(m, s) for m, s in zip(rows["value"], rows["std"])]
    out = rows.pivot_table(index=list(index), columns=list(columns), values="cell", aggfunc="first", sort=False)
    out = out[_column_order(out.columns, rows, list(columns))]
    return _order_rows(out, list(index), row_order)


def _order_rows(table: pd.DataFrame, index: list[str], row_order: Sequence[str] | None) -> pd.DataFrame:
    """Rows in first-seen order of every level but ``method``, which follows ``row_order`` (labels' base names)."""
    if row_order is None or "method" not in index or table.empty:
        return table
    order = {m: i for i, m in enumerate(row_order)}
    keys = list(table.index)
    first_seen = {}
    for key in keys:
        for level, value in zip(index, key if isinstance(key, tuple) else (key,)):
            first_seen.setdefault((level, value), len(first_seen))

    def rank(key):
        values = key if isinstance(key, tuple) else (key,)
        return tuple(
            (order.get(str(v).split(" [")[0], len(order)), str(v)) if level == "method" else (first_seen[(level, v)], "")
            for level, v in zip(index, values)
        )

    return table.loc[sorted(keys, key=rank)]
