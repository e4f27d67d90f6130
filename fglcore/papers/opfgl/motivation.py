"""O-pFGL's motivation (``notebooks/opfgl/1_motivation``): the label-skewed partitions, and per-class gains.

Yan et al., "Towards Federated Graph Learning in One-shot Communication" (arXiv 2411.11304): Sec. 5.1 and
App. A.1 describe Louvain+ / Metis+ as label-imbalanced splits with unequal client sizes; Figure 1(b),
Table 24 and Figure 5 show, on one ≈339-node CiteSeer client (Louvain+, 10 clients), per-class F1,
precision and recall of the methods, and the per-class change of the personalised model against the
generalised (global) one beside the client's class homophily :math:`H(c)` and factors :math:`w(c)`.

:func:`plan` builds the partitions and the three runs the notebook compares: Standalone (``local``), the
generalised model :math:`M_G` alone (O-pFGL with ``stage2="none"``, the code's ``local_strategy=global``)
and O-pFGL. :func:`label_histograms` counts each client's labels; :func:`per_class_report` scores one
client's model per class (sklearn's ``precision_recall_fscore_support`` over all classes, as the paper's
code scores F1).
"""
from __future__ import annotations

from typing import Any, Sequence

import pandas as pd
import torch

from fglcore.config import ConfigError, ExperimentConfig

PARTITIONS = ["louvain_plus", "metis_plus"]


def plan(datasets: Sequence[str], num_clients: int, client_dataset: str, client_nodes: int,
         condense_iterations: int, max_epochs: int, local_rounds: int, seed: int) -> dict[str, Any]:
    """``{"partitions": {(dataset, partition): config}, "runs": {"local", "global", "opfgl": config}}``.

    ``partitions`` hold one config per dataset and partition (the federation the notebook draws);
    ``runs`` are on ``client_dataset`` with Louvain+ (the paper's Figure 1(b) setting), O-pFGL with the
    authors' command for it (``condense_iterations`` and ``max_epochs`` shortened); Standalone trains
    ``local_rounds`` epochs and keeps its last model (``selection="last"``), whose per-class scores the
    notebook reads from the trained clients. ``client_nodes`` (the
    paper's 339) picks the client the notebook zooms in on: the one whose size is closest.
    """
    from fglcore import experiment
    from fglcore.checks import POSITIVE
    from fglcore.papers.opfgl import tables

    experiment.check_lists(datasets=datasets)
    experiment.check_datasets("datasets", datasets, "node")
    experiment.check_datasets("client_dataset", client_dataset, "node")
    for name, value in (("num_clients", num_clients), ("client_nodes", client_nodes), ("max_epochs", max_epochs),
                        ("local_rounds", local_rounds)):
        POSITIVE.check(f"parameter {name!r}", value)
    base = {**tables.paper_protocol(), "table": "motivation", "num_clients": num_clients, "seed": seed}
    with experiment.parameters_named({"algorithm_options.condense_iterations": "condense_iterations",
                                      "algorithm_options.max_epochs": "max_epochs", "num_clients": "num_clients",
                                      "rounds": "local_rounds"}):
        partitions = {(d, p): ExperimentConfig.from_dict({**base, "dataset": d, "partition": p, "algorithm": "local"})
                      for d in datasets for p in PARTITIONS}
        options, _ = tables.opfgl_options(client_dataset, "louvain_plus")
        options = {**options, "condense_iterations": condense_iterations, "max_epochs": max_epochs}
        where = {**base, "dataset": client_dataset, "partition": "louvain_plus"}
        runs = {
            "local": ExperimentConfig.from_dict({**where, "algorithm": "local", **tables.baseline_fields(
                "local", epochs_grid=[1], max_epochs=max_epochs, local_rounds=local_rounds), "selection": "last"}),
            "global": ExperimentConfig.from_dict({**where, "algorithm": "opfgl",
                                                  "algorithm_options": {**options, "stage2": "none"}}),
            "opfgl": ExperimentConfig.from_dict({**where, "algorithm": "opfgl", "algorithm_options": options}),
        }
    return {"partitions": partitions, "runs": runs}


def label_histograms(federation: Any) -> pd.DataFrame:
    """Per client (rows): its node count and how many of its nodes carry each label (columns ``0..C-1``)."""
    C = int(federation.num_classes)
    rows = []
    for k, g in enumerate(federation.clients):
        counts = torch.bincount(g.y.view(-1), minlength=C)[:C].tolist()
        rows.append({"client": k, "nodes": int(g.num_nodes), **{c: n for c, n in enumerate(counts)}})
    return pd.DataFrame(rows).set_index("client")


def skew_summary(histograms: pd.DataFrame) -> dict[str, float]:
    """Sizes and label skew of a partition: smallest and largest client, the mean share of each client's
    largest class, and the mean number of classes holding at least 5% of a client's nodes."""
    counts = histograms.drop(columns="nodes")
    share = counts.div(counts.sum(axis=1), axis=0)
    return {"clients": len(histograms), "smallest": int(histograms["nodes"].min()),
            "largest": int(histograms["nodes"].max()), "top class share": float(share.max(axis=1).mean()),
            "classes >= 5%": float((share >= 0.05).sum(axis=1).mean())}


def closest_client(federation: Any, nodes: int) -> int:
    """The client whose node count is closest to ``nodes`` (ties: the lower id)."""
    sizes = [int(g.num_nodes) for g in federation.clients]
    return min(range(len(sizes)), key=lambda k: (abs(sizes[k] - nodes), k))


def per_class_report(logits: torch.Tensor, y: torch.Tensor, num_classes: int) -> pd.DataFrame:
    """Per class: test support, precision, recall and F1 (%, sklearn, ``zero_division=0``, all classes)."""
    from sklearn.metrics import precision_recall_fscore_support

    if logits.dim() != 2 or logits.size(0) != y.numel():
        raise ConfigError(f"per_class_report: logits {tuple(logits.shape)} do not match {y.numel()} labels")
    pred = logits.argmax(1).cpu().numpy()
    p, r, f, s = precision_recall_fscore_support(y.cpu().numpy(), pred, labels=list(range(num_classes)),
                                                 zero_division=0)
    return pd.DataFrame({"support": s, "precision": 100 * p, "recall": 100 * r, "f1": 100 * f},
                        index=pd.Index(range(num_classes), name="class"))
