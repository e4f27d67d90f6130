"""FedStar's results tables: the experiment grids, the paper's way of forming a cell, and table layouts.

Tan et al., "Federated Learning on Non-IID Graphs via Structural Knowledge
Sharing", AAAI 2023. Every builder returns the mapping of one
:class:`~fglcore.config.ExperimentConfig` (validate it with
``ExperimentConfig.from_dict`` or hand it to :func:`fglcore.experiment.sweep`)
under the paper's protocol (FedStar digest §4; official code
``main_multiDS.py``):

* one TU dataset per client (``partition="by_dataset"`` on a FedStar group:
  :data:`SETTINGS`), stratified 80/10/10 split with the fixed split seed 123
  (``split="graph_stratified"``);
* 200 rounds of one local epoch, mini-batches of 128 graphs, Adam (lr 1e-3,
  L2 weight decay 5e-4, state kept across rounds), hidden 64, 3 layers,
  dropout 0.5, sum readout;
* no model selection: the test accuracy after the last round
  (``selection="last"``), averaged over clients with equal weights
  (``metric_aggregation="client_mean"``); the test accuracy is logged every
  5 rounds (``evaluate_every=5``) for Figure 3, as the official code logs it;
* seeds 1..5 (:data:`PAPER_SEEDS`, the code README's ``--seed {1..5}``).

Baselines (digest §4.4 and its readings A2-A6):

* ``local``: the plain GIN alone for 200 epochs (``rounds=200``,
  ``local_epochs=1``: the same as 200 epochs, and the curve lines up with
  the federated runs);
* ``fedavg``: the GIN, averaging every parameter whose shape agrees on all
  clients (``share="matching"``, reading A2); ``fedprox`` the same plus the
  proximal term, ``mu = 0.01``; ``fedper`` the GIN convolutions only;
* ``fedsage``: FedAvg (same shared set) of a 3-layer GraphSAGE with mean
  aggregation (reading A6, :mod:`fglcore.algorithms.fedsage`);
* ``gcfl`` / ``gcfl_plus``: GCFL's (epsilon1, epsilon2) per setting
  (:data:`GCFL_EPSILONS`, GCFL's runner; BIO-SN-CV takes the "mix" values,
  reading A5), sequence length 5, updates over the GIN convolutions;
* ``fedstar``: the structure channel shared; the fusion FC is applied per
  node before the sum pooling, as the official code does (reading A10).

COLLAB is not in the offline mirror: the two settings that contain it run
without it (``exclude=("COLLAB",)`` by default; digest §7.1 option (a)), so
their client averages have 12 and 8 terms instead of 13 and 9.

The paper's cells are formed by the official ``aggregateResults.py``: the
mean over clients of each client's mean over seeds, "±" the mean over
clients of each client's std over seeds with ``ddof=1`` (reading A1). That
rule is declared in ``params/fedstar/paper.yaml`` (``aggregation``) and
applied by :func:`fglcore.compare.ours_cells` and
:func:`fglcore.compare.compare`; it needs the per-client accuracies, which
:func:`fglcore.experiment.sweep` stores with ``per_client=True``. The claims
are in ``paper.yaml`` too (:func:`fglcore.compare.check_claims`).
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from fglcore.compare import format_mean_std
from fglcore.config import ConfigError

PAPER = "fedstar"
SETTINGS = ("chem", "biochem", "biochemsn", "biosncv")
"""The four settings of Table 1 (names of the FedStar dataset groups)."""
SETTING_LABELS = {"chem": "CHEM", "biochem": "BIO-CHEM", "biochemsn": "BIO-CHEM-SN", "biosncv": "BIO-SN-CV"}
ABLATION_SETTINGS = ("biochem", "biochemsn", "biosncv")
"""The three cross-domain settings of Tables 2 and 3."""
MISSING_DATASETS = ("COLLAB",)
"""Members of the groups that are not available offline (digest §7.1); left out by default."""
TABLE1_METHODS = ("local", "fedavg", "fedprox", "fedper", "fedsage", "gcfl", "fedstar")
"""Table 1's rows, in the paper's order."""
EXTRA_METHODS = ("gcfl_plus",)
"""Rows we add to Table 1 (GCFL+ is in GCFL's code, not a baseline of FedStar)."""
FIGURE3_METHODS = ("fedavg", "fedprox", "fedper", "fedsage", "gcfl", "fedstar")
"""Figure 3's curves (the five FL/FGL baselines and FedStar; no Local)."""
TABLE4_METHODS = ("fedavg", "gcfl", "fedstar")
FIGURE4_METHODS = ("fedavg", "gcfl", "fedstar")
PAPER_SEEDS = (1, 2, 3, 4, 5)
GCFL_EPSILONS = {
    "chem": (0.07, 0.28),
    "biochem": (0.07, 0.35),
    "biochemsn": (0.08, 0.4),
    "biosncv": (0.08, 0.4),
}
"""GCFL's (epsilon1, epsilon2): GCFL's runner for molecules/biochem/mix; BIO-SN-CV uses "mix" (reading A5)."""
GCFL_SEQ_LENGTH = 5
METHOD_LABELS = {
    "local": "Local",
    "fedavg": "FedAvg",
    "fedprox": "FedProx",
    "fedper": "FedPer",
    "fedsage": "FedSage",
    "gcfl": "GCFL",
    "gcfl_plus": "GCFL+",
    "fedstar": "FedStar",
}

TABLE2_ROWS = (
    ("All", False),
    ("None", False),
    ("All", True),
    ("None", True),
    ("FE", True),
    ("SE", True),
)
"""Table 2's rows (sharing, decoupling) in the paper's order (reading A7/A8 of the ✓ marks)."""
TABLE3_ROWS = ("ones", "dg", "rw", "rw_dg")
"""Table 3's rows: no DSE/RWSE (all-ones), DSE only, RWSE only, both."""
TABLE3_LABELS = {"ones": "– / – (all-ones)", "dg": "DSE ✓ / –", "rw": "– / RWSE ✓", "rw_dg": "DSE ✓ / RWSE ✓"}
TABLE4_EPOCHS = (1, 2, 3, 4)
FIGURE4_SHARDS = (1, 2, 4, 6, 8, 10, 12)
"""Shards per CHEM dataset of Figure 4: 7 k clients (reading A14)."""
FIGURE4_PARTITION_SEED = 123
"""The official code chunks every dataset with its fixed data seed (123)."""
BACKBONES = ("gcn", "gin", "sage")
"""Table 10's backbones, rows FE, columns SE."""

_FEDSTAR_SHARE = {"SE": "structure", "FE": "feature", "All": "all", "None": "none"}

BASE: dict[str, Any] = {
    "paper": PAPER,
    "partition": "by_dataset",
    "split": "graph_stratified",
    "split_ratios": [0.8, 0.1, 0.1],
    "model": "gin",
    "hidden": 64,
    "num_layers": 3,
    "dropout": 0.5,
    "rounds": 200,
    "local_epochs": 1,
    "optimizer": "adam",
    "lr": 1e-3,
    "weight_decay": 5e-4,
    "batch_size": 128,
    "evaluate_every": 5,
    "selection": "last",
    "metric_aggregation": "client_mean",
}
"""The protocol every FedStar run shares (digest §4.5)."""


# ----------------------------------------------------------------------------- configurations


def setting_members(setting: str, members: Sequence[str] | None = None,
                    exclude: Sequence[str] = MISSING_DATASETS) -> list[str]:
    """The datasets (one per client) of ``setting``: ``members`` if given, else the group without ``exclude``."""
    from fglcore.data.datasets import group_members

    if setting not in SETTINGS:
        raise ConfigError(f"setting: {setting!r} is not accepted; accepted: {', '.join(SETTINGS)}")
    group = group_members(setting)
    if members is not None:
        unknown = [m for m in members if m not in group]
        if unknown or not members:
            raise ConfigError(f"members: {unknown or 'an empty list'} not in {setting!r}; accepted: {', '.join(group)}")
        return [m for m in group if m in members]
    return [m for m in group if m not in exclude]


def _partition_options(setting: str, members: Sequence[str] | None, exclude: Sequence[str]) -> dict[str, Any]:
    group = setting_members(setting, exclude=())
    chosen = setting_members(setting, members, exclude)
    if chosen == group:
        return {}
    if members is not None:
        return {"members": list(chosen)}
    return {"exclude": [m for m in group if m not in chosen]}


def _merge(config: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``overrides`` over ``config``; ``algorithm_options`` and ``partition_options`` are merged key by key."""
    out = dict(config)
    for key, value in overrides.items():
        if key in ("algorithm_options", "partition_options") and isinstance(value, Mapping):
            out[key] = {**out.get(key, {}), **value}
        else:
            out[key] = value
    return out


def _base(setting: str, table: str, seed: int, members: Sequence[str] | None,
          exclude: Sequence[str], num_shards: int = 1) -> dict[str, Any]:
    options = _partition_options(setting, members, exclude)
    clients = len(setting_members(setting, members, exclude)) * num_shards
    return {**BASE, "table": table, "dataset": setting, "num_clients": clients,
            "partition_options": options, "seed": seed}


def method_config(setting: str, method: str) -> dict[str, Any]:
    """The algorithm, backbone and algorithm options of Table 1's ``method`` in ``setting``."""
    if method == "local":
        return {"algorithm": "local", "algorithm_options": {}}
    if method in ("fedavg", "fedprox"):
        options: dict[str, Any] = {"share": "matching"}
        if method == "fedprox":
            options["mu"] = 0.01
        return {"algorithm": method, "algorithm_options": options}
    if method == "fedper":
        return {"algorithm": "fedper", "algorithm_options": {"body": "convs"}}
    if method == "fedsage":
        return {"algorithm": "fedsage", "model": "sage", "algorithm_options": {"share": "matching"}}
    if method in ("gcfl", "gcfl_plus"):
        eps1, eps2 = GCFL_EPSILONS[setting]
        options = {"epsilon1": eps1, "epsilon2": eps2, "share": "convs"}
        if method == "gcfl_plus":
            options["seq_length"] = GCFL_SEQ_LENGTH
        return {"algorithm": method, "algorithm_options": options}
    if method == "fedstar":
        return {"algorithm": "fedstar", "algorithm_options": {"fusion_before_pooling": True}}
    raise ConfigError(f"method: {method!r} is not accepted; accepted: {', '.join(TABLE1_METHODS + EXTRA_METHODS)}")


def table1_config(setting: str, method: str, seed: int, *, members: Sequence[str] | None = None,
                  exclude: Sequence[str] = MISSING_DATASETS, **overrides: Any) -> dict[str, Any]:
    """Table 1 cell ``(setting, method)`` for one ``seed`` (also Figure 3's runs).

    ``members`` restricts the setting to some of its datasets (the smoke
    profile); ``exclude`` drops datasets (default: COLLAB, not available).
    ``overrides`` replace config keys (``rounds=3``); ``algorithm_options``
    and ``partition_options`` overrides are merged into the defaults.
    """
    config = {**_base(setting, "1", seed, members, exclude), **method_config(setting, method)}
    return _merge(config, overrides)


def table2_config(setting: str, sharing: str, decoupled: bool, seed: int, *, members: Sequence[str] | None = None,
                  exclude: Sequence[str] = MISSING_DATASETS, **overrides: Any) -> dict[str, Any]:
    """Table 2 row ``(sharing, decoupled)`` in ``setting``.

    Decoupled rows are FedStar's model with ``share`` = structure encoder
    (SE), feature layers and fusion (FE), both (All, reading A7) or nothing
    (None: each client trains it alone). Rows without decoupling (reading
    A8) are the plain GIN reading ``[x ‖ s]`` (the federation option
    ``structure_input``): "All" is FedAvg with the A2 shared set, "None" is
    Local.
    """
    rows = {"All": (False, True), "None": (False, True), "FE": (True,), "SE": (True,)}
    if sharing not in rows:
        raise ConfigError(f"sharing: {sharing!r} is not accepted; accepted: {', '.join(rows)}")
    if decoupled not in rows[sharing]:
        raise ConfigError(f"Table 2 has no row sharing={sharing!r} without decoupling; such rows: All, None")
    config = _base(setting, "2", seed, members, exclude)
    config["setting"] = table2_setting(sharing, decoupled)
    if decoupled:
        config.update(method_config(setting, "fedstar"))
        config["algorithm_options"] = {**config["algorithm_options"], "share": _FEDSTAR_SHARE[sharing]}
    else:
        config.update(method_config(setting, "fedavg" if sharing == "All" else "local"))
        config["partition_options"] = {**config["partition_options"], "structure_input": "rw_dg"}
    return _merge(config, overrides)


TABLE2_LOCAL = "reference=Local"
"""``setting`` label of the Local GIN run that :func:`decomposition` starts from (not a row of Table 2)."""


def table2_local_config(setting: str, seed: int, *, members: Sequence[str] | None = None,
                        exclude: Sequence[str] = MISSING_DATASETS, **overrides: Any) -> dict[str, Any]:
    """Table 1's Local run labelled as Table 2's reference (``setting="reference=Local"``).

    The same training as :func:`table1_config` ``(setting, "local")``, kept
    under Table 2 so the ablation notebook's reference never mixes with
    Table 1 cells run on other datasets or rounds.
    """
    config = table1_config(setting, "local", seed, members=members, exclude=exclude)
    config.update(table="2", setting=TABLE2_LOCAL)
    return _merge(config, overrides)


def table2_setting(sharing: str, decoupled: bool) -> str:
    """The ``setting`` label of a Table 2 row, e.g. ``"share=SE,DC=yes"``."""
    return f"share={sharing},DC={'yes' if decoupled else 'no'}"


def table3_config(setting: str, encoding: str, seed: int, *, members: Sequence[str] | None = None,
                  exclude: Sequence[str] = MISSING_DATASETS, **overrides: Any) -> dict[str, Any]:
    """Table 3 row: FedStar with structure embedding ``encoding`` (``ones``, ``dg``, ``rw`` or ``rw_dg``).

    Single embeddings are 16-d and the all-ones vector is 32-d, so the
    model keeps its architecture (reading A9).
    """
    if encoding not in TABLE3_ROWS:
        raise ConfigError(f"encoding: {encoding!r} is not accepted; accepted: {', '.join(TABLE3_ROWS)}")
    config = {**_base(setting, "3", seed, members, exclude), **method_config(setting, "fedstar")}
    config["algorithm_options"] = {**config["algorithm_options"], "encoding": encoding}
    config["setting"] = f"SE={encoding}"
    return _merge(config, overrides)


def table4_config(method: str, local_epochs: int, seed: int, *, setting: str = "chem",
                  members: Sequence[str] | None = None, **overrides: Any) -> dict[str, Any]:
    """Table 4 cell: ``method`` on CHEM with ``local_epochs`` epochs per round, 200 rounds (reading A15)."""
    if method not in TABLE4_METHODS:
        raise ConfigError(f"method: {method!r} is not in Table 4; accepted: {', '.join(TABLE4_METHODS)}")
    config = {**_base(setting, "4", seed, members, ()), **method_config(setting, method)}
    config["local_epochs"] = local_epochs
    config["setting"] = f"E={local_epochs}"
    return _merge(config, overrides)


def figure4_config(method: str, num_shards: int, seed: int, *, setting: str = "chem",
                   members: Sequence[str] | None = None, **overrides: Any) -> dict[str, Any]:
    """Figure 4 point: ``method`` on CHEM with every dataset cut into ``num_shards`` clients (``_randChunk``).

    The partitioner is ``dataset_chunks`` (:mod:`fglcore.data.partition`)
    with the official data seed 123; shards too small to stratify fall back
    to a random split (``small_split="random"``), recorded on the
    federation's clients (reading A14, :func:`split_fallbacks`).

    One shard of a dataset is all of it, in order, split as in Table 1: at
    ``num_shards=1`` the federation is Table 1's bit for bit (tested), so
    the point is configured as Table 1's partition and a sweep copies
    Table 1's runs instead of repeating them.
    """
    if method not in FIGURE4_METHODS:
        raise ConfigError(f"method: {method!r} is not in Figure 4; accepted: {', '.join(FIGURE4_METHODS)}")
    config = {**_base(setting, "fig4", seed, members, (), num_shards), **method_config(setting, method)}
    config["setting"] = f"shards={num_shards}"
    if num_shards == 1:
        return _merge(config, overrides)
    config["partition"] = "dataset_chunks"
    config["partition_options"] = {**config["partition_options"], "small_split": "random"}
    config["partition_seed"] = FIGURE4_PARTITION_SEED
    return _merge(config, overrides)


def table10_config(feature_conv: str, structure_conv: str, seed: int, *, setting: str = "chem",
                   members: Sequence[str] | None = None, **overrides: Any) -> dict[str, Any]:
    """Table 10 cell: FedStar on CHEM with feature encoder ``feature_conv`` and structure encoder ``structure_conv``."""
    for key, value in (("feature_conv", feature_conv), ("structure_conv", structure_conv)):
        if value not in BACKBONES:
            raise ConfigError(f"{key}: {value!r} is not accepted; accepted: {', '.join(BACKBONES)}")
    config = {**_base(setting, "10", seed, members, ()), **method_config(setting, "fedstar")}
    config["algorithm_options"] = {**config["algorithm_options"], "feature_conv": feature_conv,
                                   "structure_conv": structure_conv}
    config["setting"] = table10_setting(feature_conv, structure_conv)
    return _merge(config, overrides)


def table10_setting(feature_conv: str, structure_conv: str) -> str:
    """The ``setting`` label of a Table 10 cell, e.g. ``"FE=gin,SE=gcn"`` (FedStar's default pair)."""
    return f"FE={feature_conv},SE={structure_conv}"


def table1_configs(settings: Iterable[str], methods: Iterable[str], seeds: Iterable[int],
                   **kwargs: Any) -> list[dict[str, Any]]:
    """:func:`table1_config` for every (setting, method, seed)."""
    return [table1_config(s, m, seed, **kwargs) for s in settings for m in methods for seed in seeds]


def results_plan(settings: Sequence[str], members: Sequence[str], methods: Sequence[str], seeds: Sequence[int],
                 rounds: int) -> dict[str, Any]:
    """What ``notebooks/fedstar/3_results`` runs: ``{"members", "table1"}``, the datasets kept in each setting
    (``members``; an empty list keeps every available one) and every Table 1 run as a validated config.

    The notebook calls it, and ``fgl run`` before the kernel starts; a :class:`ConfigError` names the parameter.
    """
    from fglcore import experiment
    from fglcore.config import ExperimentConfig

    experiment.check_lists(settings=settings, methods=methods, seeds=seeds)
    chosen = list(members) or None
    names = {"setting": "settings", "members": "members", "method": "methods", "algorithm": "methods",
             "seed": "seeds", "model": "methods"}
    with experiment.parameters_named(names):
        kept = {setting: setting_members(setting, chosen) for setting in settings}
        configs = [ExperimentConfig.from_dict(c)
                   for c in table1_configs(settings, methods, seeds, members=chosen, rounds=rounds)]
    return {"members": kept, "table1": configs}


def chosen_in(setting: str, names: Sequence[str]) -> list[str] | None:
    """The requested datasets that belong to ``setting``; ``None`` (all available) when none is requested."""
    if not names:
        return None
    return [m for m in names if m in setting_members(setting, exclude=())]


def ablations_plan(ablation_settings: Sequence[str], members: Sequence[str], encodings: Sequence[str],
                   chem_members: Sequence[str], epochs: Sequence[int], epoch_methods: Sequence[str],
                   shards: Sequence[int], shard_methods: Sequence[str], feature_convs: Sequence[str],
                   structure_convs: Sequence[str], seeds: Sequence[int], rounds: int) -> dict[str, Any]:
    """What ``notebooks/fedstar/4_ablations`` runs: the members kept (``ablation_members`` per setting,
    ``chem``) and the validated configs of Tables 2 (with the Local reference, ``local``), 3, 4, Figure 4 and
    Table 10. The notebook calls it, and ``fgl run`` before the kernel starts."""
    from fglcore import experiment
    from fglcore.config import ExperimentConfig

    experiment.check_lists(ablation_settings=ablation_settings, encodings=encodings, epochs=epochs,
                           epoch_methods=epoch_methods, shards=shards, shard_methods=shard_methods,
                           feature_convs=feature_convs, structure_convs=structure_convs, seeds=seeds)
    names = {"setting": "ablation_settings", "seed": "seeds", "encoding": "encodings", "local_epochs": "epochs",
             "num_shards": "shards", "feature_conv": "feature_convs", "structure_conv": "structure_convs"}

    def build(configs: list[dict[str, Any]]) -> list[ExperimentConfig]:
        return [ExperimentConfig.from_dict(c) for c in configs]

    common = dict(rounds=rounds)
    with experiment.parameters_named(names):
        ablation_members = {s: chosen_in(s, members) for s in ablation_settings}
        for s, kept in ablation_members.items():
            setting_members(s, kept)
    with experiment.parameters_named({**names, "members": "chem_members"}):
        chem = chosen_in("chem", chem_members)
        setting_members("chem", chem)
    with experiment.parameters_named(names):
        table2 = build([table2_config(s, sharing, dc, seed, members=ablation_members[s], **common)
                        for s in ablation_settings for sharing, dc in TABLE2_ROWS for seed in seeds])
        local = build([table2_local_config(s, seed, members=ablation_members[s], **common)
                       for s in ablation_settings for seed in seeds])
        table3 = build([table3_config(s, e, seed, members=ablation_members[s], **common)
                        for s in ablation_settings for e in encodings for seed in seeds])
    with experiment.parameters_named({**names, "method": "epoch_methods"}):
        table4 = build([table4_config(m, e, seed, members=chem, **common)
                        for m in epoch_methods for e in epochs for seed in seeds])
    with experiment.parameters_named({**names, "method": "shard_methods", "num_clients": "shards"}):
        figure4 = build([figure4_config(m, k, seed, members=chem, **common)
                         for m in shard_methods for k in shards for seed in seeds])
    with experiment.parameters_named(names):
        table10 = build([table10_config(fe, se, seed, members=chem, **common)
                         for fe in feature_convs for se in structure_convs for seed in seeds])
    return {"ablation_members": ablation_members, "chem": chem, "table2": table2, "local": local, "table3": table3,
            "table4": table4, "figure4": figure4, "table10": table10}


# ----------------------------------------------------------------------------- our cells in the paper's layout


def gains_over(cells: pd.DataFrame, reference: str = "local", per: Sequence[str] = ("dataset",)) -> pd.Series:
    """Each cell's ``mean`` minus the mean of the ``reference`` method's cell with the same ``per`` labels.

    The paper's "avg. gain" (Table 1; computed before rounding). NaN where
    the reference is missing.
    """
    per = list(per)
    ref = cells[cells["method"] == reference].drop_duplicates(per).set_index(per)["mean"]
    keys = cells[per].apply(tuple, axis=1) if len(per) > 1 else cells[per[0]]
    return pd.Series([m - ref.get(k, math.nan) for m, k in zip(cells["mean"], keys)], index=cells.index)


def _two_levels(columns: pd.Index) -> pd.MultiIndex:
    """``(setting, field)`` column tuples as a MultiIndex; empty when no cell is there yet (a preview)."""
    return pd.MultiIndex.from_tuples(columns) if len(columns) else pd.MultiIndex.from_arrays([[], []])


def ours_table(cells: pd.DataFrame, rows: str = "method", columns: str = "dataset", *, gain_over: str | None = None,
               row_order: Sequence[str] | None = None, row_labels: Mapping[str, str] | None = None,
               column_labels: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Our cells as the paper prints them ("mean ± std", and with ``gain_over`` a gain column per setting)."""
    row_labels = dict(row_labels or {})
    column_labels = dict(column_labels or {})
    cells = cells.copy()
    if gain_over is not None:
        cells["gain"] = gains_over(cells, gain_over, per=[columns])
    order = list(row_order) if row_order is not None else list(dict.fromkeys(cells[rows]))
    out: dict[str, dict] = {}
    for _, c in cells.iterrows():
        if c[rows] not in order:
            continue
        row = out.setdefault(row_labels.get(c[rows], str(c[rows])), {})
        col = column_labels.get(c[columns], str(c[columns]))
        row[(col, "avg.")] = format_mean_std(c["mean"], c["std"])
        if gain_over is not None:
            row[(col, "gain")] = "–" if c[rows] == gain_over or pd.isna(c["gain"]) else f"{c['gain']:+.2f}"
    frame = pd.DataFrame.from_dict(out, orient="index")
    frame = frame.reindex([row_labels.get(r, str(r)) for r in order if row_labels.get(r, str(r)) in out])
    frame.columns = _two_levels(frame.columns)
    return frame


def curves(results: pd.DataFrame, methods: Sequence[str] | None = None) -> pd.DataFrame:
    """Figure 3's points: per (dataset, method, seed, round) the client-averaged test accuracy (reading A13).

    From the ``accuracy[round=R]`` rows (:func:`fglcore.results.curve_values`),
    which Table 1's configs log every 5 rounds with ``client_mean``
    aggregation; columns ``dataset``, ``method``, ``seed``, ``round``,
    ``value``. The plot's band is the std over seeds.
    """
    from fglcore.results import curve_values

    rows = curve_values(results)
    if methods is not None:
        rows = rows[rows["method"].isin(list(methods))]
    return rows[["dataset", "method", "setting", "seed", "round", "value"]].reset_index(drop=True)


def fedavg_readings(comparison: pd.DataFrame) -> pd.DataFrame:
    """The paper's FedAvg next to our two readings of it, per setting (the digest's ambiguity A2).

    Ours (``fedavg``) averages every parameter whose shape agrees on all
    clients, the classifier included where the clients' class counts agree;
    the GCFL code's FedAvg averages only the GIN convolutions, which is our
    ``fedper``. ``closer`` names the reading nearer the paper's FedAvg.
    """
    paper = comparison[comparison["method"] == "fedavg"].set_index("dataset")["paper_mean"]
    ours = comparison.pivot_table(index="dataset", columns="method", values="ours_mean")
    frame = pd.DataFrame({
        "paper FedAvg": paper,
        "FedAvg, same-shape layers": ours.get("fedavg"),
        "FedAvg, convs only (FedPer)": ours.get("fedper"),
    }).dropna()
    gap_all = (frame["FedAvg, same-shape layers"] - frame["paper FedAvg"]).abs()
    gap_convs = (frame["FedAvg, convs only (FedPer)"] - frame["paper FedAvg"]).abs()
    frame["closer"] = ["same-shape layers" if a <= c else "convs only" for a, c in zip(gap_all, gap_convs)]
    return frame.round(2)


def decomposition(table2: pd.DataFrame) -> pd.DataFrame:
    """§5.3's decomposition per setting: Local -> + s input (None –) -> decoupled local (None ✓) -> SE shared.

    ``table2`` holds :func:`fglcore.compare.ours_cells` of Table 2's rows and of its Local
    reference (:func:`table2_local_config`). Each step's accuracy and its
    change over the previous step.
    """
    steps = [
        ("Local GIN", table2, {"setting": TABLE2_LOCAL}),
        ("+ s in the input, local (None –)", table2, {"setting": table2_setting("None", False)}),
        ("decoupled, local (None ✓)", table2, {"setting": table2_setting("None", True)}),
        ("+ SE shared (FedStar)", table2, {"setting": table2_setting("SE", True)}),
    ]
    out = []
    for dataset in dict.fromkeys(table2["dataset"]):
        previous = math.nan
        for label, cells, spec in steps:
            rows = cells[cells["dataset"] == dataset]
            for key, value in spec.items():
                rows = rows[rows[key].astype(str) == value]
            value = float(rows["mean"].iloc[0]) if len(rows) else math.nan
            out.append({"dataset": dataset, "step": label, "accuracy": value, "change": value - previous})
            previous = value
    return pd.DataFrame(out)


def split_fallbacks(config: Mapping[str, Any]) -> pd.DataFrame:
    """Which clients of ``config``'s federation could not be split with stratification (Fig. 4, reading A14)."""
    from fglcore.config import ExperimentConfig
    from fglcore.data.federation import build_graph_federation

    federation = build_graph_federation(ExperimentConfig.from_dict(config))
    return pd.DataFrame([{"client": c.name, "dataset": c.dataset, "graphs": len(c.graphs),
                          "train": len(c.train_idx), "val": len(c.val_idx), "test": len(c.test_idx),
                          "stratified": c.stratified} for c in federation.clients])


TABLE2_ROW_LABELS = {table2_setting(s, d): f"{s} {'✓' if d else '–'}" for s, d in TABLE2_ROWS}
"""Table 2's row names as printed ("All –", "SE ✓", ...), by ``setting`` label."""


def setting_parts(frame: pd.DataFrame, column: str = "setting") -> pd.DataFrame:
    """``frame`` with one column per ``key=value`` part of its ``setting`` labels (``"FE=gin,SE=gcn"``)."""
    parts = frame[column].astype(str).apply(
        lambda text: dict(part.split("=", 1) for part in text.split(",") if "=" in part))
    return frame.join(pd.DataFrame(list(parts), index=frame.index))


def per_seed_means(results: pd.DataFrame, table: str) -> pd.DataFrame:
    """Per run of ``table``: the mean over its clients of the per-client accuracies (one row per seed).

    Columns ``dataset``, ``method``, ``setting``, ``num_clients``, ``seed``, ``value`` -- Figure 4's points
    (the std over seeds gives its band).
    """
    from fglcore.results import client_values

    rows = client_values(results)
    rows = rows[rows["table"].astype(str) == str(table)]
    keys = ["dataset", "method", "setting", "num_clients", "seed"]
    return rows.groupby(keys, sort=False)["value"].mean().reset_index()
