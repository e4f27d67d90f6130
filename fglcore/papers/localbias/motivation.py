r"""The local-bias paper's motivation (Sec. 4.2, RQ1/RQ2): cross-client edges, accuracy and local bias.

Zhang et al., arXiv 2110.12906. A random equal-size partition into K clients
leaves a share :math:`\approx 1 - 1/K` of the edges between clients (the paper:
74.86 / 87.33 / 93.56 / 96.68 % at K = 4, 8, 16, 32; digest A14):
:func:`edge_share_table`. FedAvg drops those edges, FedAvg+nc copies 20 % of
the cross-client neighbours (A13), ours uses all of them; the *local bias*
(Sec. 4.2, A11) is the mean Euclidean distance between the test logits of
the FGL model and of a centralised GCN trained with the same
hyperparameters; the centralised model against itself with another seed is
the noise floor (:func:`bias_table`). The normal partition is the random
equal-size one; the non-i.i.d. one favours a few classes per client ten
times (``favoured_classes``, A12).

These runs need the models' test logits, which ``results.csv`` does not hold.
Given the notebook's results store, :func:`bias_study` runs them as a
:func:`fglcore.experiment.sweep` that keeps each run's test logits as its
artifact (:class:`TestLogits`, in :data:`LOGITS_FOLDER` beside the store)
besides its rows with the per-epoch curve (``curve=True``, table
``"motivation"``, which no comparison or claim of
``params/localbias/paper.yaml`` reads), so an interrupted study resumes and a
second one computes nothing; without a store they run in memory
(:func:`run_with_logits`). The notebook
writes the table to ``1_local_bias.csv``. Every run of this study keeps its
**last** epoch (``selection="last"``: the model a client would hold), the
reference its last epoch too; one learning rate for all (``lr``, no search).
"""
from __future__ import annotations

import os
from typing import Any, Sequence

import pandas as pd
import torch

from fglcore.artifacts import RunArtifact
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.data.datasets import available
from fglcore.papers.localbias.tables import (PAPER_DATASETS, ROWS, dataset_role, row_fields,
                                             split_rows)

EDGE_SHARE_CLIENTS = [4, 8, 16, 32]
PAPER_EDGE_SHARE = {4: 74.86, 8: 87.33, 16: 93.56, 32: 96.68}
"""Sec. 4.2's cross-client edge proportions (%) at K = 4, 8, 16, 32 (dataset not stated; digest A14)."""

BIAS_ROWS = ["fedavg", "fedavg_nc", "ours_gcn"]
"""The methods of Sec. 4.2's figures: FedAvg, FedAvg with neighbour collection (20 %), ours."""

PARTITIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "normal": ("random", {"equal_size": True}),
    "non-iid": ("favoured_classes", {}),
}
"""Sec. 4.2's two settings: the random equal-size partition and the class-favouring one (A12)."""

LOGITS_FOLDER = ".logits"
"""Folder beside the results store holding each stored run's test logits, ``<config_id>.pt`` (:class:`TestLogits`)."""


def edge_share_table(datasets: Sequence[str], num_clients: Sequence[int] = EDGE_SHARE_CLIENTS,
                     seed: int = 0) -> pd.DataFrame:
    """Per dataset and K: the share of edges between clients under the random equal-size partition (%),
    :math:`1 - 1/K`, the paper's share, and the boundary nodes (client, external node) pairs."""
    from fglcore.data.datasets import load_node_data
    from fglcore.data.federation import build_clients, interconnection_summary
    from fglcore.data.partition import partition_nodes

    rows = []
    for dataset in datasets:
        data = load_node_data(dataset)
        for k in num_clients:
            assignment = partition_nodes(data, "random", int(k), seed, equal_size=True)
            total = interconnection_summary(build_clients(data, assignment, keep_cross_edges=True)).iloc[-1]
            rows.append({"dataset": dataset, "clients": int(k),
                         "cross-client edges (%)": round(100 * float(total["cross_share"]), 2),
                         "1 - 1/K (%)": round(100 * (1 - 1 / int(k)), 2),
                         "paper (%)": PAPER_EDGE_SHARE.get(int(k)),
                         "boundary pairs": int(total["external_nodes"])})
    return pd.DataFrame(rows)


class TestLogits(RunArtifact):
    """A run's test logits (float32) and their nodes' global ids (int64, ascending), kept beside the store in
    :data:`LOGITS_FOLDER`. Local-bias runs give the logits of their selected epoch; the others those of their
    clients' final models (they run with ``selection="last"``, :func:`check_selection`)."""

    folder = LOGITS_FOLDER

    def collect(self, algorithm: Any, result: Any) -> dict[str, torch.Tensor]:
        if algorithm.config.algorithm == "localbias":
            test = result.extras["localbias"]["test_logits"]
            return {"global_id": test["global_id"], "logits": test["logits"].detach().cpu().to(torch.float32)}
        federation = algorithm.federation
        ids, logits = [], []
        for client, data in zip(algorithm.clients, federation.clients):
            prediction = client.evaluate()["test"]
            mine = data.global_id[data.test_mask]
            if prediction.logits.shape[0] != mine.numel() or not torch.equal(prediction.y.cpu(),
                                                                             federation.data.y[mine]):
                raise RuntimeError(f"{algorithm.config.algorithm}: client {client.cid}'s test predictions are not "
                                   "its test nodes in order; local bias cannot be aligned")
            ids.append(mine)
            logits.append(prediction.logits.detach().cpu())
        ids, logits = torch.cat(ids), torch.cat(logits)
        order = torch.argsort(ids)
        return {"global_id": ids[order], "logits": logits[order].to(torch.float32)}

    def check(self, payload: dict[str, Any]) -> bool:
        ids, logits = payload.get("global_id"), payload.get("logits")
        return (isinstance(ids, torch.Tensor) and isinstance(logits, torch.Tensor) and ids.dtype == torch.int64
                and ids.dim() == 1 and logits.dtype == torch.float32 and logits.dim() == 2
                and logits.shape[0] == ids.numel() and bool((ids[1:] > ids[:-1]).all()))


TEST_LOGITS = TestLogits()
"""The artifact :func:`bias_study` keeps of each stored run (:class:`TestLogits`)."""


def check_selection(config: ExperimentConfig) -> None:
    """Runs other than ``localbias`` are scored on their clients' final models: they need ``selection="last"``."""
    if config.algorithm != "localbias" and config.selection != "last":
        raise ConfigError(f"selection: the local-bias study reads the clients' final models; {config.selection!r} "
                          "would score another epoch; accepted: 'last'")


def run_with_logits(config: ExperimentConfig) -> tuple[Any, torch.Tensor, torch.Tensor]:
    """Run ``config`` (:func:`fglcore.experiment.prepare`) and return ``(result, test ids, test logits)``
    as :class:`TestLogits` collects them."""
    from fglcore.experiment import as_config, prepare

    config = as_config(config)
    check_selection(config)
    algorithm = prepare(config)
    result = algorithm.run()
    kept = TEST_LOGITS.collect(algorithm, result)
    return result, kept["global_id"], kept["logits"]


def bias_config(row_id: str, dataset: str, partition: str, num_clients: int, seed: int, rounds: int,
                lr: float) -> ExperimentConfig:
    """One run of the local-bias study: ``row_id`` (or ``"central"``/the reference GCN) on ``partition``."""
    if partition not in PARTITIONS:
        raise ConfigError(f"partitions: {partition!r} is not accepted; accepted: {', '.join(PARTITIONS)}")
    name, options = PARTITIONS[partition]
    fields = row_fields("gcn" if row_id == "central" else row_id, dataset, num_clients, seed, lr, rounds,
                        "motivation", evaluate_every=1)
    fields.update(partition=name, partition_options=options, selection="last",
                  setting=", ".join(p for p in (fields["setting"], f"partition={partition}") if p))
    return ExperimentConfig.from_dict(fields)


def plan(datasets: Sequence[str], edge_clients: Sequence[int], bias_datasets: Sequence[str],
         bias_clients: Sequence[int], methods: Sequence[str], partitions: Sequence[str], noniid_clients: int,
         seeds: Sequence[int], rounds: int, lr: float) -> dict[str, Any]:
    """What ``notebooks/localbias/1_motivation`` builds: ``{"edge_ready", "runs", "not_implemented"}``.

    ``runs``: a list of ``(kind, config)``: per available dataset of ``bias_datasets``, seed and
    partition (``normal`` at every K of ``bias_clients``, ``non-iid`` at ``noniid_clients``), each
    implemented row of ``methods``, the reference GCN (``reference``) and, for the noise floor, the reference
    with seed + 1000 (``floor``). Called by the notebook and by ``fgl run``.
    """
    from fglcore import experiment
    from fglcore.checks import POSITIVE, Bounds

    experiment.check_lists(datasets=datasets, edge_clients=edge_clients, bias_datasets=bias_datasets,
                           bias_clients=bias_clients, methods=methods, partitions=partitions, seeds=seeds)
    experiment.check_datasets("datasets", datasets, "node")
    experiment.check_datasets("bias_datasets", bias_datasets, "node")
    POSITIVE.check("parameter 'edge_clients'", list(edge_clients))
    POSITIVE.check("parameter 'bias_clients'", list(bias_clients))
    POSITIVE.check("parameter 'noniid_clients'", noniid_clients)
    POSITIVE.check("parameter 'rounds'", rounds)
    Bounds(above=0).check("parameter 'lr'", lr)
    for name, value in (("datasets", datasets), ("bias_datasets", bias_datasets)):
        with experiment.parameters_named({"dataset": name}):
            for d in value:
                dataset_role(d)
    with experiment.parameters_named({"rows": "methods"}):
        run_rows, missing = split_rows(methods)
    ready = available(bias_datasets)
    runs = []
    for dataset in ready:
        for partition in partitions:
            clients = "bias_clients" if partition == "normal" else "noniid_clients"  # the parameter K came from
            with experiment.parameters_named({"seed": "seeds", "num_clients": clients, "dataset": "bias_datasets",
                                              "partition": "partitions"}):
                for k in (bias_clients if partition == "normal" else [noniid_clients]):
                    for seed in seeds:
                        for row_id in run_rows:
                            runs.append((row_id, bias_config(row_id, dataset, partition, int(k), seed, rounds, lr)))
                        runs.append(("reference", bias_config("central", dataset, partition, int(k), seed, rounds,
                                                              lr)))
                        runs.append(("floor", bias_config("central", dataset, partition, int(k), seed + 1000,
                                                          rounds, lr)))
    return {"edge_ready": available(datasets), "runs": runs,
            "not_implemented": missing, "bias_ready": ready}


def bias_study(runs: Sequence[tuple[str, ExperimentConfig]], store: str | os.PathLike[str] | None = None,
               progress: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run the study of :func:`plan`: ``(table, curves)``.

    ``table``: one row per method run (and one ``noise floor`` row per reference): dataset, partition,
    clients, seed, method label, test accuracy (%), local bias of logits and of probabilities against the
    reference of the same dataset, partition, K and seed. ``curves``: test accuracy (%) per epoch.

    ``store`` (the notebook's ``results.csv``; ``None`` keeps everything in memory): the runs go through
    :func:`fglcore.experiment.sweep` with the per-epoch curve and :data:`TEST_LOGITS` as the artifact, so
    a run is computed only when the store lacks its rows or its logits file is missing or not trusted, the
    logits are written before the rows, and the study resumes, honours ``fgl stop`` and shares its runs
    between ``--workers`` as any sweep. Both ways give the same frames: the table and curves are read from
    the runs' result rows.
    """
    from tqdm.auto import tqdm

    from fglcore import experiment
    from fglcore.metrics import local_bias
    from fglcore.results import config_id, curve_values, rows_from_result

    runs = [(kind, experiment.as_config(config)) for kind, config in runs]  # all valid before any runs
    for _, config in runs:
        check_selection(config)
    keys = [(config.dataset, config.setting.split("partition=")[1], config.num_clients,
             config.seed - 1000 if kind == "floor" else config.seed, kind) for kind, config in runs]
    outputs: dict[tuple, tuple[pd.DataFrame, torch.Tensor, torch.Tensor]] = {}
    if store is None:
        for key, (_, config) in tqdm(list(zip(keys, runs)), disable=not progress, desc="local bias"):
            result, ids, logits = run_with_logits(config)
            outputs[key] = pd.DataFrame(rows_from_result(config, result, curve=True)), ids, logits
    else:
        rows = experiment.sweep([config for _, config in runs], store, progress=progress, desc="local bias",
                                curve=True, artifact=TEST_LOGITS)
        for key, (_, config) in zip(keys, runs):
            cid = config_id(config)
            mine = rows[rows["config_id"] == cid].reset_index(drop=True)
            kept = TEST_LOGITS.load(store, cid, mine)
            if kept is None:
                raise RuntimeError(f"local bias: the logits of {cid} went missing or stale after the sweep stored "
                                   "them (another process stored the run again?); run the study again")
            outputs[key] = mine, kept["global_id"], kept["logits"]
    outputs = {key: outputs[key] for key in keys}  # in the order of ``runs``
    table, curves = [], []
    for (dataset, partition, k, seed, kind), (rows, ids, logits) in outputs.items():
        if kind == "reference":
            continue
        _, ref_ids, ref = outputs[(dataset, partition, k, seed, "reference")]
        if not torch.equal(ids, ref_ids):
            raise RuntimeError("local bias: the run and its reference scored different test nodes")
        label = "noise floor (central GCN, other seed)" if kind == "floor" else ROWS[kind].label
        values = dict(zip(rows["metric"], rows["value"]))
        table.append({"dataset": dataset, "partition": partition, "clients": k, "seed": seed, "method": label,
                      "accuracy": float(values["accuracy"]),
                      "local bias (logits)": local_bias(logits, ref, "logits"),
                      "local bias (probabilities)": local_bias(logits, ref, "probabilities")})
        curve = curve_values(rows)
        for epoch, accuracy in zip(curve["round"], curve["value"]):
            curves.append({"dataset": dataset, "partition": partition, "clients": k, "seed": seed,
                           "method": label, "epoch": int(epoch), "accuracy": float(accuracy)})
    return pd.DataFrame(table), pd.DataFrame(curves)


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Mean ± population std over seeds per dataset, partition, K and method."""
    if table.empty:
        return table
    keys = ["dataset", "partition", "clients", "method"]
    values = ["accuracy", "local bias (logits)", "local bias (probabilities)"]
    grouped = table.groupby(keys, sort=False)[values]
    mean, std = grouped.mean(), grouped.std(ddof=0)
    out = mean.copy()
    for v in values:
        digits = 2 if v == "accuracy" else 3
        out[v] = [f"{m:.{digits}f} ± {s:.{digits}f}" for m, s in zip(mean[v], std[v])]
    out["seeds"] = grouped.size()
    return out.reset_index()


__all__ = ["edge_share_table", "run_with_logits", "bias_config", "plan", "bias_study", "summary", "check_selection",
           "TestLogits", "TEST_LOGITS", "PAPER_DATASETS", "BIAS_ROWS", "PARTITIONS",
           "EDGE_SHARE_CLIENTS", "PAPER_EDGE_SHARE", "LOGITS_FOLDER"]
