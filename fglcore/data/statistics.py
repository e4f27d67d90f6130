"""Per-client statistics of a federation: sizes, label mix, majority/minority and homophily.

:func:`client_statistics` gives one row per client with the columns of
FedSpray's Table 1 (Fu et al., KDD 2024): majority class, majority and
minority node counts, and the average node homophily of each group, computed
on the client's induced subgraph over *all* its nodes (train, val and test),
the reading under which the digest reproduces Table 1 exactly.
"""
from __future__ import annotations

import math
from typing import Sequence

import pandas as pd
import torch
from torch import Tensor

from fglcore.metrics import node_homophily

CLASS_PREFIX = "class_"


def class_column(c: int) -> str:
    """Name of the column holding the node count of class ``c``."""
    return f"{CLASS_PREFIX}{c}"


def class_columns(frame: pd.DataFrame) -> list[str]:
    """The per-class count columns of a :func:`client_statistics` table, in class order."""
    return [c for c in frame.columns if isinstance(c, str) and c.startswith(CLASS_PREFIX)]


def per_node_homophily(edge_index: Tensor, y: Tensor) -> Tensor:
    """Share of each node's neighbours with its label; NaN for nodes without neighbours.

    Its NaN-ignoring mean is :func:`fglcore.metrics.node_homophily` (Pei et al., ICLR 2020).
    """
    n = y.numel()
    src, dst = edge_index.cpu()
    y = y.cpu()
    deg = torch.zeros(n, dtype=torch.float64).index_add_(0, dst, torch.ones(dst.numel(), dtype=torch.float64))
    same = torch.zeros(n, dtype=torch.float64).index_add_(0, dst, (y[src] == y[dst]).double())
    return torch.where(deg > 0, same / deg.clamp(min=1), torch.full_like(deg, math.nan))


def undirected_edge_count(edge_index: Tensor) -> int:
    """Distinct unordered node pairs joined by an edge, self-loops excluded (FedSpray Table 4's "edges")."""
    src, dst = edge_index.cpu()
    keep = src != dst
    low, high = torch.minimum(src[keep], dst[keep]), torch.maximum(src[keep], dst[keep])
    if low.numel() == 0:
        return 0
    return int(torch.unique(torch.stack([low, high]), dim=1).size(1))


def _nanmean(values: Tensor) -> float:
    values = values[~torch.isnan(values)]
    return values.mean().item() if values.numel() else math.nan


def client_statistics(clients: Sequence, num_classes: int) -> pd.DataFrame:
    """One row per client (PyG ``Data`` with ``y`` and ``edge_index``).

    Columns:

    * ``client``: position in ``clients``;
    * ``nodes``; ``edges`` (undirected, see :func:`undirected_edge_count`);
    * ``class_0 .. class_{C-1}``: node counts per label;
    * ``majority_class`` (most frequent label, smallest on ties; -1 for an
      empty client), ``majority_nodes``, ``minority_nodes`` (all other nodes);
    * ``homophily``: node homophily (:func:`fglcore.metrics.node_homophily`)
      over all nodes with neighbours, and
      ``majority_homophily`` / ``minority_homophily`` over each group
      (NaN where a group has no node with neighbours).
    """
    if num_classes < 1:
        raise ValueError(f"num_classes must be >= 1, got {num_classes}")
    rows = []
    for cid, data in enumerate(clients):
        y = data.y.view(-1).long().cpu()
        if y.numel() and (int(y.min()) < 0 or int(y.max()) >= num_classes):
            raise ValueError(
                f"client {cid} has labels in [{int(y.min())}, {int(y.max())}], outside 0..{num_classes - 1}; "
                f"pass the dataset's number of classes"
            )
        counts = torch.bincount(y, minlength=num_classes)
        majority = int(counts.argmax()) if y.numel() else -1
        homophily = per_node_homophily(data.edge_index, y)
        is_majority = y == majority
        rows.append(
            {
                "client": cid,
                "nodes": int(y.numel()),
                "edges": undirected_edge_count(data.edge_index),
                **{class_column(c): int(counts[c]) for c in range(num_classes)},
                "majority_class": majority,
                "majority_nodes": int(is_majority.sum()),
                "minority_nodes": int((~is_majority).sum()),
                "homophily": node_homophily(data.edge_index.cpu(), y) if y.numel() else math.nan,
                "majority_homophily": _nanmean(homophily[is_majority]),
                "minority_homophily": _nanmean(homophily[~is_majority]),
            }
        )
    columns = [
        "client",
        "nodes",
        "edges",
        *(class_column(c) for c in range(num_classes)),
        "majority_class",
        "majority_nodes",
        "minority_nodes",
        "homophily",
        "majority_homophily",
        "minority_homophily",
    ]
    return pd.DataFrame(rows, columns=columns)
