"""Evaluation metrics used across the five papers.

All metric functions return plain floats in ``[0, 1]`` (not percent); result
rows convert to percent (see :mod:`fglcore.results`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

AGGREGATIONS = ("micro", "client_weighted", "client_mean")


@dataclass
class Prediction:
    """One client's outputs on one split.

    ``minority`` marks samples whose label is not the client's majority
    training class (FedSpray's "minority nodes"); ``None`` when not defined.
    ``weight`` is the client's weight under ``client_weighted`` aggregation;
    ``None`` weights by :attr:`num_samples` (the split's size). O-pFGL's code
    weights every client by its number of local nodes, all splits together
    (digest A13), and sets it so.
    """

    logits: Tensor
    y: Tensor
    minority: Tensor | None = None
    weight: float | None = None

    @property
    def num_samples(self) -> int:
        return int(self.y.numel())


def accuracy(pred: Tensor, y: Tensor) -> float:
    """Fraction of correct predictions; ``pred`` may be logits ``[n, C]`` or labels ``[n]``."""
    if y.numel() == 0:
        return math.nan
    if pred.dim() == 2:
        pred = pred.argmax(dim=-1)
    return (pred == y).float().mean().item()


def macro_f1(pred: Tensor, y: Tensor, num_classes: int) -> float:
    """Macro-F1 over *all* ``num_classes`` classes.

    A class with no true and no predicted sample scores F1 = 0, as in O-pFGL's
    evaluation (``sklearn.f1_score(labels=range(C), average='macro')``, which
    sets undefined F1 to 0).
    """
    if y.numel() == 0:
        return math.nan
    if pred.dim() == 2:
        pred = pred.argmax(dim=-1)
    pred, y = pred.long().cpu(), y.long().cpu()
    # Labels >= num_classes count for no class (sklearn's ``labels=``): a stray prediction is a miss, not a crash.
    tp = torch.bincount(y[pred == y], minlength=num_classes)[:num_classes].double()
    pred_count = torch.bincount(pred, minlength=num_classes)[:num_classes].double()
    true_count = torch.bincount(y, minlength=num_classes)[:num_classes].double()
    denom = pred_count + true_count
    f1 = torch.where(denom > 0, 2 * tp / denom.clamp(min=1), torch.zeros_like(tp))
    return f1.mean().item()


def majority_class(y_train: Tensor) -> int:
    """The most frequent training label (smallest label on ties)."""
    if y_train.numel() == 0:
        return -1
    return int(torch.bincount(y_train.long()).argmax())


def minority_mask(y: Tensor, y_train: Tensor) -> Tensor:
    """Samples whose label differs from the majority class of ``y_train``."""
    return y != majority_class(y_train)


def minority_accuracy(pred: Tensor, y: Tensor, minority: Tensor) -> float:
    """Accuracy on minority samples only (NaN when there are none)."""
    if not bool(minority.any()):
        return math.nan
    return accuracy(pred[minority], y[minority])


def cross_entropy(logits: Tensor, y: Tensor) -> float:
    if y.numel() == 0:
        return math.nan
    return F.cross_entropy(logits.float(), y.long()).item()


def _client_metrics(p: Prediction, num_classes: int) -> dict[str, float]:
    metrics = {
        "loss": cross_entropy(p.logits, p.y),
        "accuracy": accuracy(p.logits, p.y),
        "macro_f1": macro_f1(p.logits, p.y, num_classes),
    }
    if p.minority is not None:
        metrics["minority_accuracy"] = minority_accuracy(p.logits, p.y, p.minority)
    return metrics


def summarize_predictions(
    predictions: Sequence[Prediction], num_classes: int, aggregation: str = "micro"
) -> dict[str, float]:
    """Combine clients' predictions into one set of metrics.

    * ``micro``: pool every client's samples (FedSpray's micro-averaged accuracy);
    * ``client_weighted``: per-client metrics averaged with weights =
      :attr:`Prediction.weight`, by default the split's samples (FedStruct;
      O-pFGL with weight = local nodes);
    * ``client_mean``: plain mean over clients (FedStar).
    """
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"unknown metric aggregation {aggregation!r}; accepted: {', '.join(AGGREGATIONS)}")
    predictions = [p for p in predictions if p.num_samples > 0]
    if not predictions:
        return {}
    if aggregation == "micro":
        pooled = Prediction(
            torch.cat([p.logits.detach().cpu() for p in predictions]),
            torch.cat([p.y.cpu() for p in predictions]),
            None
            if any(p.minority is None for p in predictions)
            else torch.cat([p.minority.cpu() for p in predictions]),
        )
        return _client_metrics(pooled, num_classes)
    per_client = [_client_metrics(p, num_classes) for p in predictions]
    weights = [(p.num_samples if p.weight is None else p.weight) if aggregation == "client_weighted" else 1.0
               for p in predictions]
    summary = {}
    for key in per_client[0]:
        pairs = [(m[key], w) for m, w in zip(per_client, weights) if key in m and not math.isnan(m[key])]
        total = sum(w for _, w in pairs)
        summary[key] = sum(v * w for v, w in pairs) / total if total else math.nan
    return summary


def node_homophily(edge_index: Tensor, y: Tensor) -> float:
    """Mean over nodes with neighbours of the share of neighbours with the same label.

    This is the node homophily of Pei et al. (Geom-GCN), the measure of
    FedSpray's Table 1 when applied to a client's induced subgraph.
    """
    src, dst = edge_index
    if src.numel() == 0:
        return math.nan
    same = (y[src] == y[dst]).float()
    n = y.numel()
    deg = torch.zeros(n).index_add_(0, dst.cpu(), torch.ones(dst.numel()))
    agree = torch.zeros(n).index_add_(0, dst.cpu(), same.cpu())
    has = deg > 0
    return (agree[has] / deg[has]).mean().item()


def edge_homophily(edge_index: Tensor, y: Tensor) -> float:
    """Share of edges joining two nodes of the same label."""
    src, dst = edge_index
    if src.numel() == 0:
        return math.nan
    return (y[src] == y[dst]).float().mean().item()


LOCAL_BIAS_SPACES = ("logits", "probabilities")


def local_bias(logits: Tensor, reference: Tensor, space: str = "logits") -> float:
    r"""Local bias (Zhang et al., "Tackling the Local Bias in FGL", arXiv 2110.12906, Sec. 4.2): the mean
    Euclidean distance :math:`\frac1n\sum_i \lVert z_i - z_i^{\mathrm{central}}\rVert_2` between an FGL
    model's outputs and a centralised model's on the same nodes (rows aligned).

    ``space="logits"`` compares raw outputs (the paper's words); ``"probabilities"`` their softmax
    (scale-free; digest reading A11 asks for both).
    """
    if logits.shape != reference.shape:
        raise ValueError(f"local_bias: shapes differ, {tuple(logits.shape)} vs {tuple(reference.shape)}")
    if space not in LOCAL_BIAS_SPACES:
        raise ValueError(f"local_bias: space {space!r} is not accepted; accepted: {', '.join(LOCAL_BIAS_SPACES)}")
    if logits.shape[0] == 0:
        return math.nan
    a, b = logits.double(), reference.double()
    if space == "probabilities":
        a, b = a.softmax(-1), b.softmax(-1)
    return (a - b).norm(dim=-1).mean().item()
