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

These runs need the models' test logits, which ``results.csv`` does not hold:
they run here (:func:`run_with_logits`), not through
:func:`fglcore.experiment.sweep`. Given the notebook's results store,
:func:`bias_study` stores each finished run as a sweep does -- its rows with
the per-epoch curve (``curve=True``, table ``"motivation"``, which no
comparison or claim of ``params/localbias/paper.yaml`` reads) and its run
id, seconds and provenance in the run index -- and its test logits in
:data:`LOGITS_FOLDER` beside the store (:func:`save_logits`), so an
interrupted study resumes and a second one computes nothing. The notebook
writes the table to ``1_local_bias.csv``. Every run of this study keeps its
**last** epoch (``selection="last"``: the model a client would hold), the
reference its last epoch too; one learning rate for all (``lr``, no search).
"""
from __future__ import annotations

import hashlib
import os
import pickle
import time
import uuid
import zipfile
from pathlib import Path
from typing import Any, Sequence

import pandas as pd
import torch

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
"""Folder beside the results store holding each stored run's test logits, ``<config_id>.pt`` (:func:`save_logits`)."""


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


def run_with_logits(config: ExperimentConfig) -> tuple[Any, torch.Tensor, torch.Tensor]:
    """Run ``config`` (as :func:`fglcore.experiment.run_full`) and return ``(result, test ids, test logits)``
    with the test nodes' global ids ascending. Local-bias runs give the logits of their selected epoch; the
    others those of their clients' final models (use ``selection="last"``)."""
    from fglcore import runtime
    from fglcore.algorithms import ALGORITHMS
    from fglcore.data.federation import build_federation
    from fglcore.experiment import as_config

    config = as_config(config)
    if config.algorithm != "localbias" and config.selection != "last":
        raise ConfigError(f"selection: run_with_logits reads the clients' final models; {config.selection!r} "
                          "would score another epoch; accepted: 'last'")
    cls = ALGORITHMS.get(config.algorithm)
    runtime.set_seed(config.seed)
    runtime.set_flush_denormal()
    federation = build_federation(config, keep_cross_edges=cls.needs_cross_edges)
    algorithm = cls(config, federation, runtime.get_device(config.device))
    result = algorithm.run()
    if config.algorithm == "localbias":
        test = result.extras["localbias"]["test_logits"]
        return result, test["global_id"], test["logits"]
    ids, logits = [], []
    for client, data in zip(algorithm.clients, federation.clients):
        prediction = client.evaluate()["test"]
        mine = data.global_id[data.test_mask]
        if prediction.logits.shape[0] != mine.numel() or not torch.equal(prediction.y.cpu(), federation.data.y[mine]):
            raise RuntimeError(f"{config.algorithm}: client {client.cid}'s test predictions are not its test nodes "
                               "in order; local bias cannot be aligned")
        ids.append(mine)
        logits.append(prediction.logits.detach().cpu())
    ids, logits = torch.cat(ids), torch.cat(logits)
    order = torch.argsort(ids)
    return result, ids[order], logits[order]


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
    with experiment.parameters_named({"seed": "seeds", "num_clients": "bias_clients", "dataset": "bias_datasets",
                                      "partition": "partitions"}):
        for dataset in ready:
            for partition in partitions:
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


def logits_path(store: str | os.PathLike[str], config: ExperimentConfig) -> Path:
    """Where :func:`bias_study` keeps the test logits of ``config`` stored in ``store``:
    ``<store folder>/.logits/<config_id>.pt``."""
    from fglcore.results import ResultStore, config_id

    return ResultStore(store).path.parent / LOGITS_FOLDER / f"{config_id(config)}.pt"


def rows_fingerprint(rows: pd.DataFrame) -> str:
    """sha256 of one run's stored ``metric``/``value`` rows as the results CSV writes them: ties a logits file
    to the rows it was saved with."""
    frame = (pd.DataFrame(rows)[["metric", "value"]].astype({"metric": str, "value": float})
             .sort_values("metric", kind="stable"))
    return hashlib.sha256(frame.to_csv(index=False, lineterminator="\n").encode()).hexdigest()


def save_logits(path: str | os.PathLike[str], config_id: str, fingerprint: str, ids: torch.Tensor,
                logits: torch.Tensor) -> None:
    """Write one run's test node ids (int64, ascending) and logits (float32) to ``path`` atomically
    (a temporary file in the same folder, then :func:`os.replace`), with its ``config_id`` and the
    :func:`rows_fingerprint` of the rows stored for it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex}.part")
    payload = {"config_id": config_id, "fingerprint": fingerprint, "global_id": ids.detach().cpu().to(torch.int64),
               "logits": logits.detach().cpu().to(torch.float32).contiguous()}
    try:
        torch.save(payload, partial)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def load_logits(path: str | os.PathLike[str], config_id: str, fingerprint: str
                ) -> tuple[torch.Tensor, torch.Tensor] | None:
    """``(test ids, logits)`` saved by :func:`save_logits`, or ``None`` when the file is missing, unreadable
    (partly written, damaged), or not the one of these stored rows: another ``config_id``, another
    ``fingerprint`` (the run was stored again since), ids not ascending int64, logits not float32 with a
    row per id."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        saved = torch.load(path, weights_only=True)
    except (OSError, EOFError, RuntimeError, ValueError, pickle.UnpicklingError, zipfile.BadZipFile):
        return None
    if not isinstance(saved, dict) or saved.get("config_id") != config_id or saved.get("fingerprint") != fingerprint:
        return None
    ids, logits = saved.get("global_id"), saved.get("logits")
    if not (isinstance(ids, torch.Tensor) and isinstance(logits, torch.Tensor) and ids.dtype == torch.int64
            and ids.dim() == 1 and logits.dtype == torch.float32 and logits.dim() == 2
            and logits.shape[0] == ids.numel() and bool((ids[1:] > ids[:-1]).all())):
        return None
    return ids, logits


def _stored_run(logits_file: Path, cid: str, rows: pd.DataFrame
                ) -> tuple[pd.DataFrame, torch.Tensor, torch.Tensor] | None:
    """A run stored with its curve and trusted logits: ``(rows, ids, logits)``; else ``None``."""
    mine = rows[rows["config_id"] == cid]
    if mine.empty or not mine["metric"].str.contains("[round=", regex=False).any():
        return None
    loaded = load_logits(logits_file, cid, rows_fingerprint(mine))
    return None if loaded is None else (mine.reset_index(drop=True), *loaded)


def bias_study(runs: Sequence[tuple[str, ExperimentConfig]], store: str | os.PathLike[str] | None = None,
               progress: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run the study of :func:`plan`: ``(table, curves)``.

    ``table``: one row per method run (and one ``noise floor`` row per reference): dataset, partition,
    clients, seed, method label, test accuracy (%), local bias of logits and of probabilities against the
    reference of the same dataset, partition, K and seed. ``curves``: test accuracy (%) per epoch.

    ``store`` (the notebook's ``results.csv``; ``None`` keeps everything in memory): each run is computed
    only when the store lacks its rows (with the curve) or its logits file (:func:`logits_path`) is missing
    or not trusted (:func:`load_logits`); a computed run's logits are written first, then its rows
    (:func:`fglcore.results.rows_from_result` with ``curve=True``) with its run id, seconds and provenance,
    as :func:`fglcore.experiment.sweep` stores a run. An interrupted study loses only the run in progress;
    a stop request (:func:`fglcore.experiment.request_stop`, ``fgl stop``) ends it before its next computed
    run with :class:`~fglcore.experiment.SweepStopped`. Several processes may run the study over one store
    (``fgl run --workers``): as a sweep, each claims a run before computing it (:mod:`fglcore.claims`),
    skips runs others have claimed and then waits for them, so every process returns the same frames.
    Both ways give the same frames: the table and curves are read from the runs' result rows.
    """
    from tqdm.auto import tqdm

    from fglcore import experiment, runtime
    from fglcore.claims import CLAIM_FOLDER, RunClaims
    from fglcore.metrics import local_bias
    from fglcore.provenance import run_record
    from fglcore.results import ResultStore, config_id, curve_values, rows_from_result, run_id

    runs = [(kind, experiment.as_config(config)) for kind, config in runs]  # all valid before any runs
    keys = [(config.dataset, config.setting.split("partition=")[1], config.num_clients,
             config.seed - 1000 if kind == "floor" else config.seed, kind) for kind, config in runs]
    outputs: dict[tuple, tuple[pd.DataFrame, torch.Tensor, torch.Tensor]] = {}

    def compute(config: ExperimentConfig) -> tuple[pd.DataFrame, torch.Tensor, torch.Tensor]:
        start = time.perf_counter()
        result, ids, logits = run_with_logits(config)
        seconds = round(time.perf_counter() - start, 2)
        rows = pd.DataFrame(rows_from_result(config, result, curve=True))
        if store is not None:  # the logits first: rows in the store always had their logits written
            save_logits(logits_path(store, config), config_id(config), rows_fingerprint(rows), ids, logits)
            results.append(rows.to_dict("records"), run_id=run_id(config), seconds=seconds,
                           provenance=run_record(runtime.get_device(config.device)))
        return rows, ids, logits.detach().cpu().to(torch.float32)

    if store is None:
        for key, (_, config) in tqdm(list(zip(keys, runs)), disable=not progress, desc="local bias"):
            outputs[key] = compute(config)
    else:
        results = ResultStore(store)
        stop = results.path.parent / experiment.STOP_FILE
        waiting = list(zip(keys, runs))
        with tqdm(total=len(waiting), disable=not progress, desc="local bias") as bar, \
                RunClaims(results.path.parent / CLAIM_FOLDER) as claims:
            stored = results.read()
            while waiting:
                left = []
                for key, (kind, config) in waiting:
                    found = _stored_run(logits_path(store, config), config_id(config), stored)
                    if found is None:
                        if stop.exists():
                            raise experiment.SweepStopped(
                                f"local bias: stopped before {kind} {' '.join(map(str, key[:4]))}, as {stop} asks; "
                                "every finished run is stored. Delete the file (fgl run does) and run again to "
                                "resume.")
                        rid = run_id(config)
                        if not claims.acquire(rid):  # another worker computes it: come back to it
                            left.append((key, (kind, config)))
                            continue
                        found = _stored_run(logits_path(store, config), config_id(config), results.read())
                        if found is None:  # not stored by another worker since the last look
                            bar.set_postfix_str(f"{kind} {' '.join(map(str, key[:4]))}")
                            found = compute(config)
                        claims.release(rid, stored=True)
                    outputs[key] = found
                    bar.update()
                if left:
                    bar.set_postfix_str(f"waiting for {len(left)} run(s) of other workers")
                    time.sleep(experiment.CLAIM_POLL_SECONDS)
                    stored = results.read()
                waiting = left
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


__all__ = ["edge_share_table", "run_with_logits", "bias_config", "plan", "bias_study", "summary", "logits_path",
           "save_logits", "load_logits", "rows_fingerprint", "PAPER_DATASETS", "BIAS_ROWS", "PARTITIONS",
           "EDGE_SHARE_CLIENTS", "PAPER_EDGE_SHARE", "LOGITS_FOLDER"]
