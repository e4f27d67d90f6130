r"""The local-bias paper's results tables: protocol, datasets, rows, learning-rate search, Table 3's costs.

Zhang, Luo, Feng, Liu, Zhou and Zheng, "Tackling the Local Bias in Federated
Graph Learning" (arXiv 2110.12906 v3; digest ``localbias.digest.md``; no
public code). ``notebooks/localbias/3_results`` calls :func:`results_plan`;
every configuration it returns is a validated
:class:`~fglcore.config.ExperimentConfig` tagged ``paper="localbias"`` and
its table, so :mod:`fglcore.compare` sets it beside
``params/localbias/paper.yaml``.

Protocol (:data:`PROTOCOL`; App. D.1-D.3): a random partition into equal-size
clients (``random`` with ``equal_size=True``), Adam, hidden 128, dropout 0.2
(on the input of every layer, A16), weight decay 0, the test accuracy at the
best-validation evaluation (A8), one local epoch per FedAvg round (A10).
Per dataset (:data:`DATASETS`): the paper's depth, epochs and sampled
fraction :math:`s/N`, and its split. PubMed, Cora and CiteSeer use PyG's
``split="full"`` (PubMed's 18,217 / 500 / 1,000 is exactly that; digest §3.1);
Cora and CiteSeer are extra real graphs in PubMed's role (2 layers, 200
epochs, :math:`s/N = 0.25`). Reddit and ogbn-products are not available:
the **synthetic** CSBM substitutes ``Reddit-like`` and ``Products-like``
(:mod:`fglcore.data.csbm`) take their depth, epochs, sampled fraction and
split ratios (random split, Reddit's 66/10/24, ogbn-products' 8/1.6/90.4).

Learning rate (App. D.3, A17): searched per row and dataset over
:data:`LEARNING_RATES` on validation accuracy. :func:`lr_search_configs`
runs every learning rate (table ``"lr"``, setting token ``lr=<value>``);
:func:`choose_lr` picks, per row and dataset, the one with the best mean
validation accuracy over the seeds (ties: the larger learning rate);
:func:`table_configs` then asks for the chosen runs under their table, which
the store copies from the search (same computation, other labels) instead of
recomputing. The paper reports one run per cell and does not say on how many
runs it searched; ``search_seeds`` of :func:`results_plan` searches on a
subset of the seeds (the ``full`` profile: seed 0), and the tables then
compute the other seeds at the chosen rate only.

Rows (:data:`ROWS`): Table 2's and Table 5's methods, each an algorithm of the
registry with its options and the ``setting`` label ``paper.yaml`` uses. A row
whose algorithm or model is not registered shows as *not implemented*
(:func:`row_status`) and runs as soon as it is; today every row runs. CAGNET computes the same full-batch GCN on
the global graph as ``ours-full`` (A9): its row is ``localbias`` with
``variant=ours-full``.

Table 3 (:func:`cost_configs`, :func:`measure_cost`): seconds per training
epoch, memory per client and bytes per client and epoch, for CAGNET
(``ours-full``), FedAvg+GCN and Ours+GCN at K = 4 and 8. Seconds come from
the runs (``engine="gloo"``: one ``torch.distributed`` process per client,
as the paper; on two cores eight busy processes are oversubscribed, so only
ratios within one run mean anything); memory is the digest's accounting
(§6.3) evaluated from the federation (:func:`memory_mb_per_client`); bytes
are counted from the messages. These numbers vary from run to run and are
not stored in ``results.csv`` (whose smoke rows CI compares to 1e-6): the
notebook writes them to ``3_table3.csv`` and compares them there.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from fglcore.config import ConfigError, ExperimentConfig
from fglcore.data.datasets import availability, available

PAPER = "localbias"

PROTOCOL: dict[str, Any] = {
    "paper": PAPER,
    "partition": "random",
    "partition_options": {"equal_size": True},
    "optimizer": "adam",
    "hidden": 128,
    "dropout": 0.2,
    "weight_decay": 0.0,
    "local_epochs": 1,
    "selection": "best_val",
}
"""Every run of the paper's tables (App. D.1-D.3; A8, A10, A16)."""

LEARNING_RATES = [0.1, 0.01, 0.001]
"""App. D.3: "searched per case over {0.1, 0.01, 0.001}" (A17)."""

TABLE2_CLIENTS = 8
"""K of Table 2 and Table 5 (Sec. 5, A15)."""
TABLE3_CLIENTS = [4, 8]


@dataclass(frozen=True)
class DatasetRole:
    """What a dataset is to the paper and the settings of its role (App. D.3, digest §6.2)."""

    role: str  # "paper" | "extra" | "substitute"
    stands_for: str
    layers: int
    epochs: int
    sample_ratio: float
    split: str
    split_ratios: tuple[float, float, float] = (0.4, 0.3, 0.3)


DATASETS: dict[str, DatasetRole] = {
    "PubMed": DatasetRole("paper", "PubMed", 2, 200, 5000 / 19717, "planetoid_full"),
    "Cora": DatasetRole("extra", "PubMed", 2, 200, 0.25, "planetoid_full"),
    "CiteSeer": DatasetRole("extra", "PubMed", 2, 200, 0.25, "planetoid_full"),
    "Reddit-like": DatasetRole("substitute", "Reddit", 4, 200, 50000 / 232965, "global_random", (0.66, 0.10, 0.24)),
    "Products-like": DatasetRole("substitute", "ogbn-products", 3, 1000, 500000 / 2449029, "global_random",
                                 (0.08, 0.016, 0.904)),
}
"""Datasets this paper's notebooks run on: PubMed (the paper's), Cora and CiteSeer (extra real graphs in
PubMed's role) and the CSBM substitutes for Reddit and ogbn-products (their depth, epochs, s/N and split)."""

PAPER_DATASETS = ["PubMed", "Reddit", "ogbn-products"]
"""Tables 2, 3 and 5's columns (A22)."""


@dataclass(frozen=True)
class Row:
    """One row of a table: the paper's name and how we run it."""

    label: str
    algorithm: str
    model: str = "gcn"
    options: Mapping[str, Any] = field(default_factory=dict)
    setting: str = ""
    centralised: bool = False


def _ours(variant: str, backbone: str = "gcn") -> dict[str, Any]:
    return {"variant": variant, "backbone": backbone}


ROWS: dict[str, Row] = {
    "gcn": Row("GCN [14]", "central", "gcn", {"graph": "whole"}, centralised=True),
    "1gnn": Row("1-GNN [17]", "central", "1gnn", {"graph": "whole"}, centralised=True),
    "graphsage": Row("GraphSAGE [8]", "graphsage", "sage", centralised=True),
    "graphsaint": Row("GraphSAINT [31]", "graphsaint", "gcn", centralised=True),
    "fedavg": Row("FedAvg+GCN", "fedavg", "gcn"),
    "cagnet": Row("CAGNET [23]", "localbias", "gcn", _ours("ours-full"), "variant=ours-full, backbone=gcn"),
    "bns_gcn": Row("BNS-GCN [24]", "bns_gcn", "gcn"),
    "fedsage_plus": Row("FedSAGE+ [32]", "fedsage_plus", "sage"),
    "llcg": Row("LLCG [20]", "llcg", "gcn"),
    "ours_gcn": Row("Ours+GCN", "localbias", "gcn", _ours("ours"), "variant=ours, backbone=gcn"),
    "ours_1gnn": Row("Ours+1-GNN", "localbias", "gcn", _ours("ours", "1gnn"), "variant=ours, backbone=1gnn"),
    "ours_star": Row("ours*", "localbias", "gcn", _ours("ours*"), "variant=ours*, backbone=gcn"),
    "fedavg_nc": Row("FedAvg+nc", "fedavg_nc", "gcn"),
}
"""Every row of Tables 2, 3 and 5 and of the motivation, by row id (the ids the notebooks' parameters use)."""

TABLE2_ROWS = ["gcn", "1gnn", "graphsage", "graphsaint", "fedavg", "cagnet", "bns_gcn", "fedsage_plus", "llcg",
               "ours_gcn", "ours_1gnn"]
TABLE5_ROWS = ["cagnet", "ours_star", "ours_gcn"]
"""Table 5: ours-full (= the CAGNET computation), ours*, ours."""
TABLE3_ROWS = ["cagnet", "fedavg", "ours_gcn"]
TABLE5_LABELS = {"cagnet": "ours-full", "ours_star": "ours*", "ours_gcn": "ours"}


# ----------------------------------------------------------------------------- rows and data


def dataset_role(dataset: str) -> DatasetRole:
    if dataset not in DATASETS:
        raise ConfigError(f"dataset: the local-bias notebooks have no settings for {dataset!r}; accepted: "
                          f"{', '.join(DATASETS)}")
    return DATASETS[dataset]


def row_status(row_id: str) -> str:
    """``"runs"`` when the row's algorithm (and model) is registered, else ``"not implemented"``."""
    from fglcore.algorithms import ALGORITHMS
    from fglcore.models import MODELS

    if row_id not in ROWS:
        raise ConfigError(f"rows: {row_id!r} is not a row of the local-bias tables; accepted: {', '.join(ROWS)}")
    row = ROWS[row_id]
    ok = row.algorithm in ALGORITHMS.names() and (row.algorithm == "localbias" or row.model in MODELS.names())
    return "runs" if ok else "not implemented"


def split_rows(row_ids: Iterable[str]) -> tuple[list[str], list[str]]:
    """``row_ids`` split into those that run here and those not implemented (yet)."""
    run, missing = [], []
    for r in row_ids:
        (run if row_status(r) == "runs" else missing).append(r)
    return run, missing


def row_fields(row_id: str, dataset: str, num_clients: int, seed: int, lr: float, rounds: int = 0,
               table: str = "2", evaluate_every: int = 1) -> dict[str, Any]:
    """The config fields of one run of row ``row_id`` on ``dataset``."""
    row, role = ROWS[row_id], dataset_role(dataset)
    epochs = int(rounds) if rounds else role.epochs
    options = dict(row.options)
    if row.algorithm == "localbias":
        options["sample_ratio"] = float(role.sample_ratio)
    fields: dict[str, Any] = {
        **PROTOCOL, "table": table, "dataset": dataset, "num_clients": int(num_clients), "seed": int(seed),
        "algorithm": row.algorithm, "model": row.model, "num_layers": role.layers, "rounds": epochs,
        "lr": float(lr), "split": role.split, "algorithm_options": options, "setting": row.setting,
        "evaluate_every": min(int(evaluate_every), epochs)}
    if role.split == "global_random":
        fields["split_ratios"] = list(role.split_ratios)
    return fields


def with_lr(setting: str, lr: float) -> str:
    return ", ".join(p for p in (setting, f"lr={lr:g}") if p)


def lr_search_configs(row_ids: Iterable[str], datasets: Iterable[str], seeds: Iterable[int],
                      lrs: Iterable[float], rounds: int = 0, num_clients: int = TABLE2_CLIENTS,
                      evaluate_every: int = 1) -> list[ExperimentConfig]:
    """Every implemented row × dataset × learning rate × seed, table ``"lr"`` (setting ``..., lr=<lr>``).
    A centralised row runs on the same K-client federation (the partition only decides which client scores
    which node; the test accuracy is over all test nodes)."""
    run, _ = split_rows(row_ids)
    configs = []
    for dataset in datasets:
        for row_id in run:
            for lr in lrs:
                for seed in seeds:
                    fields = row_fields(row_id, dataset, num_clients, seed, lr, rounds, "lr", evaluate_every)
                    fields["setting"] = with_lr(fields["setting"], lr)
                    configs.append(ExperimentConfig.from_dict(fields))
    return configs


def row_of(method: str, setting: str, model: str | None = None) -> str | None:
    """The row id of a (method, setting, model) of a results frame (``lr=`` tokens ignored)."""
    base = ", ".join(p.strip() for p in str(setting or "").split(",") if p.strip() and not p.strip().startswith("lr="))
    for row_id, row in ROWS.items():
        if row.algorithm == method and row.setting == base and (model is None or row.model == model
                                                                 or row.algorithm == "localbias"):
            return row_id
    return None


def choose_lr(search: pd.DataFrame) -> pd.DataFrame:
    """Per dataset and row, the learning rate with the best mean validation accuracy over seeds (A17).

    ``search``: rows of :func:`lr_search_configs`' runs. Returns ``dataset, row, lr, val_accuracy, seeds``;
    ties go to the larger learning rate (fewer epochs wasted)."""
    val = search[(search["metric"] == "val_accuracy") & (search["table"] == "lr")].copy()
    if val.empty:
        return pd.DataFrame(columns=["dataset", "row", "lr", "val_accuracy", "seeds"])
    val["row"] = [row_of(m, s, md) for m, s, md in zip(val["method"], val["setting"], val["model"])]
    val["lr"] = [float(s.split("lr=")[1].split(",")[0]) for s in val["setting"]]
    cells = val.groupby(["dataset", "row", "lr"], sort=False)["value"].agg(["mean", "size"]).reset_index()
    cells = cells.sort_values(["dataset", "row", "mean", "lr"], ascending=[True, True, False, False])
    best = cells.groupby(["dataset", "row"], sort=False).head(1)
    return best.rename(columns={"mean": "val_accuracy", "size": "seeds"}).round({"val_accuracy": 2}).reset_index(
        drop=True)[["dataset", "row", "lr", "val_accuracy", "seeds"]]


def table_configs(table: str, row_ids: Iterable[str], chosen: pd.DataFrame, seeds: Iterable[int], rounds: int = 0,
                  num_clients: int = TABLE2_CLIENTS, evaluate_every: int = 1) -> list[ExperimentConfig]:
    """``table``'s runs at each row's chosen learning rate (:func:`choose_lr`); a (dataset, row) with no
    chosen rate is left out. The store copies them from the search runs."""
    configs = []
    wanted = set(split_rows(row_ids)[0])
    for r in chosen.itertuples():
        if r.row not in wanted:
            continue
        for seed in seeds:
            configs.append(ExperimentConfig.from_dict(
                row_fields(r.row, r.dataset, num_clients, seed, r.lr, rounds, table, evaluate_every)))
    return configs


def coverage(tables: Mapping[str, Sequence[str]], datasets: Sequence[str]) -> pd.DataFrame:
    """Per table, paper column and row: ``runs`` (on which dataset), ``not implemented`` or ``data not
    available``. ``tables`` maps a table to its row ids; ``datasets`` are this profile's datasets."""
    rows = []
    for table, row_ids in tables.items():
        for column in PAPER_DATASETS:
            here = [d for d in datasets if dataset_role(d).stands_for == column]
            for row_id in row_ids:
                if row_status(row_id) != "runs":
                    why = "not implemented"
                elif not here:
                    why = "not in this profile"
                else:
                    ready = available(here)
                    why = f"runs on {', '.join(ready)}" if ready else "data not available"
                label = TABLE5_LABELS.get(row_id, ROWS[row_id].label) if table == "5" else ROWS[row_id].label
                rows.append({"table": table, "paper column": column, "row": label, "status": why})
    return pd.DataFrame(rows, columns=["table", "paper column", "row", "status"])


def datasets_table(datasets: Sequence[str]) -> pd.DataFrame:
    """The datasets of this run with their role, what they stand for and the settings of that role."""
    from fglcore.data.datasets import NODE_COUNTS

    out = []
    for d in datasets:
        role = dataset_role(d)
        out.append({"dataset": d, "role": role.role, "for (paper)": role.stands_for, "nodes": NODE_COUNTS.get(d),
                    "layers": role.layers, "epochs": role.epochs, "s/N": round(role.sample_ratio, 4),
                    "split": role.split if role.split != "global_random" else
                    "random " + "/".join(f"{100 * r:g}" for r in role.split_ratios),
                    "status": "available" if availability(d) == "available" else "data not available"})
    return pd.DataFrame(out)


# ----------------------------------------------------------------------------- the plan of 3_results


def results_plan(datasets: Sequence[str], table2_methods: Sequence[str], table5_methods: Sequence[str],
                 seeds: Sequence[int], lrs: Sequence[float], rounds: int, evaluate_every: int,
                 cost_datasets: Sequence[str], cost_clients: Sequence[int], cost_rounds: int,
                 cost_engine: str, search_seeds: Sequence[int] = ()) -> dict[str, Any]:
    """What ``notebooks/localbias/3_results`` runs: ``{"ready", "missing", "search", "after_search",
    "coverage", "cost"}``.

    ``search``: the learning-rate search of every implemented row of Tables 2 and 5 on the available
    datasets, on ``search_seeds`` (empty: all ``seeds``); the tables' own configs follow from it
    (:func:`choose_lr`, :func:`table_configs`; every one is validated here for every learning rate).
    ``after_search``: the runs of the other seeds, which the tables compute at the rate the search
    chooses; they are listed here at the first of ``lrs``, a stand-in for that rate, so that projections
    and data checks count them (same dataset, row, seed and epochs; the notebook never runs them from
    here). ``cost``: Table 3's runs (:func:`cost_configs`). Called by the notebook and by ``fgl run``
    before the kernel starts.
    """
    from fglcore import experiment
    from fglcore.checks import NON_NEGATIVE, POSITIVE, Bounds

    experiment.check_lists(datasets=datasets, table2_methods=table2_methods, table5_methods=table5_methods,
                           seeds=seeds, lrs=lrs)
    outside = [s for s in search_seeds if s not in seeds]
    if outside:
        raise ConfigError(f"parameter 'search_seeds': {outside} not in seeds {list(seeds)}; accepted: a subset of "
                          "seeds, or [] to search on every seed")
    experiment.check_datasets("datasets", datasets, "node")
    experiment.check_datasets("cost_datasets", cost_datasets, "node")
    NON_NEGATIVE.check("parameter 'rounds'", rounds)
    POSITIVE.check("parameter 'evaluate_every'", evaluate_every)
    Bounds(above=0).check("parameter 'lrs'", list(lrs))
    POSITIVE.check("parameter 'cost_clients'", list(cost_clients))
    POSITIVE.check("parameter 'cost_rounds'", cost_rounds)
    for name, value in (("datasets", datasets), ("cost_datasets", cost_datasets)):
        with experiment.parameters_named({"dataset": name}):
            for d in value:
                dataset_role(d)
    with experiment.parameters_named({"rows": "table2_methods"}):
        split_rows(table2_methods)
    with experiment.parameters_named({"rows": "table5_methods"}):
        split_rows(table5_methods)
    ready = available(datasets)
    if not ready:
        raise ConfigError(f"parameter 'datasets': none of {', '.join(datasets)} is available here (fgl datasets "
                          "shows what is); accepted: at least one available dataset, e.g. Cora")
    rows = list(dict.fromkeys([*table2_methods, *table5_methods]))
    with experiment.parameters_named({"seed": "seeds", "lr": "lrs", "rounds": "rounds", "dataset": "datasets"}):
        searched = list(search_seeds) or list(seeds)
        search = lr_search_configs(rows, ready, searched, lrs, rounds, evaluate_every=evaluate_every)
        after_search = lr_search_configs(rows, ready, [s for s in seeds if s not in searched], list(lrs)[:1],
                                         rounds, evaluate_every=evaluate_every)
    cost_ready = available(cost_datasets)
    with experiment.parameters_named({"dataset": "cost_datasets", "num_clients": "cost_clients",
                                      "rounds": "cost_rounds", "algorithm_options.engine": "cost_engine"}):
        cost = cost_configs(cost_ready, cost_clients, cost_rounds, cost_engine)
    return {"ready": ready, "missing": [d for d in datasets if d not in ready], "search": search,
            "after_search": after_search,
            "coverage": coverage({"2": table2_methods, "5": table5_methods, "3": TABLE3_ROWS}, ready),
            "cost": cost}


# ----------------------------------------------------------------------------- Table 3


def cost_configs(datasets: Iterable[str], num_clients: Iterable[int], rounds: int, engine: str,
                 lr: float = 0.01, seed: int = 0) -> list[ExperimentConfig]:
    """Table 3's runs: CAGNET (``ours-full``), FedAvg+GCN and Ours+GCN on each dataset and K, ``rounds``
    epochs, one seed; the local-bias rows on ``engine`` (``"gloo"``: one process per client)."""
    configs = []
    for dataset in datasets:
        for k in num_clients:
            for row_id in TABLE3_ROWS:
                fields = row_fields(row_id, dataset, int(k), seed, lr, rounds, "3", evaluate_every=rounds)
                if ROWS[row_id].algorithm == "localbias":
                    fields["algorithm_options"]["engine"] = engine
                configs.append(ExperimentConfig.from_dict(fields))
    return configs


FLOAT_BYTES = 4
INDEX_BYTES = 8


def memory_mb_per_client(config: ExperimentConfig, federation: Any) -> list[float]:
    r"""Per client, the memory of one training epoch in MB (10^6 bytes; the paper's accounting, App. D.3; digest §6.3):
    node features in the autograd graph + model parameters + the sparse adjacency block.

    For client :math:`k` holding :math:`r_k` rows in an epoch (``ours``/``ours*``: its sample :math:`s_k =
    n_k s/N` rounded; ``ours-full``: :math:`n_k`; FedAvg: its :math:`n_k` local nodes): the input
    features :math:`r_k d` plus one hidden state per hidden layer :math:`r_k d_l` and the logits :math:`r_k
    c` (float32); the parameters :math:`\sum_l (d_{l-1}+1) d_l` (twice the weights for the 1-GNN); the
    adjacency block as COO (two int64 indices and a float32 value per entry): ``ours-full`` the client's
    whole row block (intra- and cross-client edges and self-loops), FedAvg its intra-client edges and
    self-loops, the sampled variants the expected share :math:`(s/N)^2` of the row block's edges (both
    ends sampled) and :math:`r_k` self-loops. This reproduces the paper's PubMed example (3.5 MB for ours at
    K = 4: 2.5 MB of features, 0.64 MB hidden, 0.26 MB of :math:`W^{(1)}`).
    """
    import torch

    from fglcore.distributed.sampling import budget

    data, assignment = federation.data, federation.assignment
    k = federation.num_clients
    d = [int(federation.num_features)] + [config.hidden] * (config.num_layers - 1) + [int(federation.num_classes)]
    options = {**{"variant": "ours", "backbone": "gcn"}, **config.algorithm_options}
    weights = sum((a + 1) * b for a, b in zip(d[:-1], d[1:]))
    if config.algorithm == "localbias" and options["backbone"] == "1gnn":
        weights += sum(a * b for a, b in zip(d[:-1], d[1:]))
    src, dst = data.edge_index
    owner_row, owner_col = assignment[dst], assignment[src]
    row_block = torch.bincount(owner_row, minlength=k)
    intra = torch.bincount(owner_row[owner_row == owner_col], minlength=k)
    sizes = torch.bincount(assignment, minlength=k)
    out = []
    for c in range(k):
        n_c = int(sizes[c])
        if config.algorithm == "localbias" and options["variant"] != "ours-full":
            ratio = float(options.get("sample_ratio", 0.25))
            rows = budget(n_c, ratio)
            entries = float(row_block[c]) * ratio ** 2 + rows
        elif config.algorithm == "localbias":
            rows, entries = n_c, float(row_block[c]) + n_c
        else:
            rows, entries = n_c, float(intra[c]) + n_c
        activations = rows * (sum(d[:-1]) + d[-1])
        total = FLOAT_BYTES * (activations + weights) + entries * (2 * INDEX_BYTES + FLOAT_BYTES)
        out.append(total / 1e6)
    return out


def measure_cost(config: ExperimentConfig) -> dict[str, Any]:
    """One Table 3 run: ``seconds_per_epoch`` (local-bias rows: each client's median epoch, mean over clients;
    on ``engine="simulated"`` one process runs every client, so its epoch is divided by K; FedAvg: the
    in-process engine's wall seconds of training per round divided by K, its one evaluation included), of those
    ``exchange_seconds_per_epoch`` inside collectives (Gloo runs: each client's median, mean over clients; NaN
    otherwise, nothing crossing processes), the mean
    ``memory_mb_per_client`` (:func:`memory_mb_per_client`) and ``bytes_per_client_epoch`` (counted from the
    messages: local-bias sent + received, FedAvg the model up and down)."""
    from fglcore.experiment import prepare

    algorithm = prepare(config)
    memory = statistics.mean(memory_mb_per_client(config, algorithm.federation))
    start = time.perf_counter()  # the training only: loading and partitioning are left out
    result = algorithm.run()
    wall = time.perf_counter() - start
    k = config.num_clients
    exchange = float("nan")
    if config.algorithm == "localbias":
        extras = result.extras["localbias"]
        seconds = statistics.mean(extras["epoch_seconds"])
        engine = config.algorithm_options.get("engine", "simulated")
        if engine == "simulated":
            seconds /= k
        else:
            exchange = statistics.mean(extras["exchange_seconds"])
        traffic = statistics.mean(c["measured_total"] for c in extras["communication"])
    else:
        seconds = wall / config.rounds / k
        traffic = result.ledger.total_bytes() / config.rounds / k
        engine = "in-process"
    return {"seconds_per_epoch": seconds, "exchange_seconds_per_epoch": exchange, "memory_mb_per_client": memory,
            "bytes_per_client_epoch": traffic, "engine": engine, "wall_seconds": wall}


def metric_rows(config: ExperimentConfig, metrics: Mapping[str, float]) -> list[dict[str, Any]]:
    """Rows of the results schema (:data:`fglcore.results.RESULT_COLUMNS`) for ``metrics`` of one run (e.g.
    Table 3's costs), so that :func:`fglcore.compare.compare` sets them beside ``paper.yaml``."""
    from fglcore.data.datasets import dataset_label
    from fglcore.results import config_id

    labels = {"paper": config.paper, "table": config.table, "dataset": dataset_label(config.dataset),
              "partition": config.partition, "num_clients": config.num_clients, "method": config.algorithm,
              "model": config.model, "setting": config.setting}
    return [{**labels, "metric": m, "seed": config.seed, "value": float(v), "selected_round": config.rounds,
             "config_id": config_id(config)} for m, v in metrics.items()]


def cost_table(configs: Sequence[ExperimentConfig], progress: bool = False) -> pd.DataFrame:
    """:func:`measure_cost` of every config, one row each (dataset, K, row, engine and the measures)."""
    from tqdm.auto import tqdm

    out = []
    for config in tqdm(configs, disable=not progress, desc="Table 3"):
        measured = measure_cost(config)
        row = row_of(config.algorithm, config.setting, config.model)
        out.append({"dataset": config.dataset, "clients": config.num_clients, "row": ROWS[row].label,
                    "method": config.algorithm, "setting": config.setting, "model": config.model,
                    "config_id": "", **measured})
    return pd.DataFrame(out)


def cost_result_rows(configs: Sequence[ExperimentConfig], table: pd.DataFrame) -> pd.DataFrame:
    """Table 3's measured seconds and memory as rows of the results schema (for :mod:`fglcore.compare`)."""
    from fglcore.results import empty_results

    rows = []
    for config, (_, m) in zip(configs, table.iterrows()):
        rows += metric_rows(config, {"seconds_per_epoch": m["seconds_per_epoch"],
                                     "memory_mb_per_client": m["memory_mb_per_client"]})
    frame = pd.DataFrame(rows)
    return pd.concat([empty_results(), frame], ignore_index=True) if rows else empty_results()


# ----------------------------------------------------------------------------- layouts


def row_label(method: str, setting: str, model: str | None = None, table: str = "2") -> str:
    row = row_of(method, setting, model)
    if row is None:
        return f"{method} [{setting}]" if setting else method
    return TABLE5_LABELS.get(row, ROWS[row].label) if table == "5" else ROWS[row].label


def labelled(comparison: pd.DataFrame, table: str = "2") -> pd.DataFrame:
    """A :func:`fglcore.compare.compare` frame with the paper's row names in ``row``."""
    frame = comparison.copy()
    frame["row"] = [row_label(m, s if isinstance(s, str) else "", md if isinstance(md, str) else None, table)
                    for m, s, md in zip(frame["method"], frame["setting"], frame["model"])]
    if "num_clients" in frame and table == "3":
        frame["column"] = [f"{d} K={int(k)}" if pd.notna(k) else d
                           for d, k in zip(frame["dataset"], frame["num_clients"])]
    else:
        frame["column"] = frame["dataset"]
    return frame


def paper_and_ours(results: pd.DataFrame, table: str = "2", metric: str = "accuracy") -> pd.DataFrame:
    """``table`` in the paper's layout: one row per paper row, per paper column (PubMed, Reddit,
    ogbn-products) the paper's number, then ours (mean ± population std over seeds, ``n`` seeds) on every
    dataset of this run standing in that column (PubMed itself, Cora, CiteSeer, the substitutes). Stand-in
    cells are other graphs: read orderings down a column, not deltas across."""
    from fglcore.compare import format_mean_std, ours_cells, paper_entries

    frame = results[results["table"] == table] if "table" in results else results
    cells = ours_cells(frame, PAPER, metrics=[metric]) if not frame.empty else pd.DataFrame()
    entries = paper_entries(PAPER, table)
    entries = entries[entries["metric"] == metric]
    out: dict[str, dict[tuple[str, str], str]] = {}
    order = TABLE5_ROWS if table == "5" else TABLE2_ROWS
    for e in entries.itertuples():
        label = row_label(e.method, e.setting, e.model if isinstance(e.model, str) else None, table)
        out.setdefault(label, {})[(e.dataset, "paper")] = format_mean_std(e.mean, None)
    for c in cells.itertuples():
        label = row_label(c.method, c.setting, c.model if isinstance(c.model, str) else None, table)
        column = dataset_role(c.dataset).stands_for if c.dataset in DATASETS else c.dataset
        out.setdefault(label, {})[(column, f"ours {c.dataset}")] = \
            f"{format_mean_std(c.mean, c.std)} (n={int(c.n_seeds)})"
    wide = pd.DataFrame.from_dict(out, orient="index")
    if wide.empty:
        return wide
    columns = sorted(wide.columns, key=lambda col: (PAPER_DATASETS.index(col[0]) if col[0] in PAPER_DATASETS else 9,
                                                    col[1] != "paper", col[1]))
    wide = wide[columns]
    wide.columns = pd.MultiIndex.from_tuples(columns)
    labels = [TABLE5_LABELS.get(r, ROWS[r].label) if table == "5" else ROWS[r].label for r in order]
    return wide.loc[[lab for lab in labels if lab in wide.index] +
                    [lab for lab in wide.index if lab not in labels]].fillna("—")


def paper_cost_table() -> pd.DataFrame:
    """Table 3 as the paper prints it (``paper.yaml``): one row per (dataset, K, row) with
    ``seconds_per_epoch`` and ``memory_mb_per_client``, the layout of :func:`cost_table`."""
    from fglcore.compare import paper_entries

    entries = paper_entries(PAPER, "3")
    entries = entries.assign(row=[row_label(m, s, md if isinstance(md, str) else None, "3")
                                  for m, s, md in zip(entries["method"], entries["setting"], entries["model"])])
    wide = entries.pivot_table(index=["dataset", "num_clients", "row"], columns="metric", values="mean",
                               sort=False).reset_index()
    return wide.rename(columns={"num_clients": "clients"})


def cost_ratios(cost: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, K): Ours+GCN's time, memory (and bytes, where measured) over CAGNET's and FedAvg's --
    the form in which Table 3 can be compared across machines."""
    ours, cagnet, fedavg = ROWS["ours_gcn"].label, ROWS["cagnet"].label, ROWS["fedavg"].label
    measures = [("time", "seconds_per_epoch"), ("memory", "memory_mb_per_client"), ("bytes", "bytes_per_client_epoch")]
    out = []
    for (dataset, k), part in cost.groupby(["dataset", "clients"], sort=False):
        by = part.set_index("row")
        if not {ours, cagnet, fedavg} <= set(by.index):
            continue
        row: dict[str, Any] = {"dataset": dataset, "clients": int(k)}
        for name, column in measures:
            if column in by:
                row[f"{name} ours / CAGNET"] = by.loc[ours, column] / by.loc[cagnet, column]
                row[f"{name} ours / FedAvg"] = by.loc[ours, column] / by.loc[fedavg, column]
        out.append(row)
    return pd.DataFrame(out)
