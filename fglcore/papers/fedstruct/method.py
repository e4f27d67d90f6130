"""FedStruct's method step by step: the runs ``notebooks/fedstruct/2_method`` traces and the pictures it draws.

Aliakbari, Östman and Graell i Amat, ICLR 2025: the decoupled GCN as a
graph filter (Sec. 5.2, Eqs. 11-12), the multi-hop adjacency
:math:`\\bar A = \\hat A^{L_s}` and its pruning (Sec. 5.3, Fig. 3), the node
structure features (Sec. 5.1), what crosses the channel (Alg. 1-3) and the
FedSGD ↔ centralised equivalence (digest §2.8). The notebook writes the
teaching code out in its cells and checks it against :mod:`fglcore`; this
module only builds the runs (:func:`plan`) and draws.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from fglcore.config import ExperimentConfig
from fglcore.papers.fedstruct.tables import PROTOCOL, row_fields


def plan(dataset: str, num_clients: int, structure_hops: int, prune_p: int, rounds: int, seed: int) -> dict[str, Any]:
    """What ``notebooks/fedstruct/2_method`` runs: ``{"clients", "fused", "fedsgd", "central"}``.

    ``clients`` / ``fused``: FedStruct (H2V) run client by client through the channel and as the fused
    simulation, without dropout (so the two follow one trajectory); ``fedsgd`` / ``central``: the FedSGD
    GraphSAGE baseline with weights :math:`|\\tilde V_i|/|\\tilde V|` and GraphSAGE trained centrally on the
    disjoint union of the client subgraphs, also without dropout. Called by the notebook and by ``fgl run``.
    """
    from fglcore import experiment

    experiment.check_datasets("dataset", dataset, "node")
    base = {**PROTOCOL, "table": "method", "dataset": dataset, "num_clients": num_clients, "seed": seed}
    configs: dict[str, ExperimentConfig] = {}
    with experiment.parameters_named({"algorithm_options.structure_hops": "structure_hops",
                                      "algorithm_options.prune_p": "prune_p"}):
        for name, simulation in (("clients", "clients"), ("fused", "fused")):
            fields = row_fields("fedstruct_h2v", dataset)
            fields["algorithm_options"].update(structure_hops=structure_hops, prune_p=prune_p, simulation=simulation,
                                               weighting="labelled")
            configs[name] = ExperimentConfig.from_dict({**base, **fields, "rounds": rounds, "dropout": 0.0})
        for name, algorithm, options in (("fedsgd", "fedsgd", {"weighting": "labelled"}),
                                         ("central", "central", {"graph": "union"})):
            fields = row_fields("fedsgd", dataset)
            configs[name] = ExperimentConfig.from_dict({**base, **fields, "algorithm": algorithm, "rounds": rounds,
                                                        "dropout": 0.0, "algorithm_options": options})
    return configs


def label_order(y: np.ndarray) -> np.ndarray:
    """Node order by label (stable), so that a matrix shows its class blocks."""
    return np.argsort(y, kind="stable")


def same_label_mass(matrix: sp.csr_matrix, y: np.ndarray) -> float:
    """Share of the matrix's total weight on entries joining two nodes of the same label."""
    coo = matrix.tocoo()
    total = float(coo.data.sum())
    return float(coo.data[y[coo.row] == y[coo.col]].sum()) / total if total else float("nan")


def abar_figure(dense: sp.csr_matrix, pruned: sp.csr_matrix, y: np.ndarray, title: str):
    """Fig. 3: the multi-hop adjacency full and pruned, nodes ordered by label, log colour scale."""
    from matplotlib.colors import LogNorm
    from matplotlib.figure import Figure

    from fglcore import plotting

    plotting.set_style()
    order = label_order(y)
    fig = Figure(figsize=(10, 4.6))
    axes = fig.subplots(1, 2)
    for ax, matrix, name in ((axes[0], dense, "full"), (axes[1], pruned, "pruned")):
        m = matrix[order][:, order].toarray()
        positive = m[m > 0]
        vmin = max(float(positive.min()), 1e-6) if positive.size else 1e-6
        image = ax.imshow(np.where(m > 0, m, np.nan), norm=LogNorm(vmin=vmin, vmax=float(m.max())),
                          cmap="viridis", interpolation="nearest")
        ax.set_title(f"{name}: {matrix.nnz:,} non-zeros")
        ax.set_xlabel("node (ordered by label)")
        ax.set_ylabel("node (ordered by label)")
        fig.colorbar(image, ax=ax, shrink=0.8)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def ledger_by_message(ledger_frame: pd.DataFrame) -> pd.DataFrame:
    """Bytes and messages per (phase, direction, name): ``pre-training`` (round 0) or ``per round`` (the mean over
    the rounds that carried the name; the final model download comes after the last round)."""
    frame = ledger_frame.copy()
    frame["phase"] = np.where(frame["round"] == 0, "pre-training", "per round")
    frame["direction"] = np.where(frame["receiver"] == "server", "client → server",
                                  np.where(frame["sender"] == "server", "server → client", "client → client"))
    grouped = frame.groupby(["phase", "direction", "name"], sort=False).agg(
        messages=("nbytes", "size"), bytes=("nbytes", "sum"), rounds=("round", "nunique")).reset_index()
    per_round = grouped["phase"] == "per round"  # mean over the rounds that carried the message
    grouped[["messages", "bytes"]] = grouped[["messages", "bytes"]].astype(float)
    grouped.loc[per_round, ["messages", "bytes"]] = grouped.loc[per_round, ["messages", "bytes"]].div(
        grouped.loc[per_round, "rounds"], axis=0)
    return grouped.drop(columns="rounds")
