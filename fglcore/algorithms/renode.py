"""ReNode: topology-imbalance re-weighting of the labelled nodes, as O-pFGL's Table 7 baseline.

Chen, Lin, Zhao, Ren, Li, Zhou and Sun, "Topology-Imbalance Learning for
Semi-Supervised Node Classification", NeurIPS 2021 (arXiv 2110.04099), Sec. 3;
official code ``victorchen96/ReNode`` (``transductive/load_data.py``,
``get_renode_weight``; ``transductive_run.py``, ``train``). The method has three
formulas, each computed by one function here:

1. **Personalised PageRank** (Sec. 3.2): :math:`P=\\alpha\\,(I-(1-\\alpha)\\hat A)^{-1}` with
   :math:`\\hat A=\\tilde D^{-1/2}(A+I)\\tilde D^{-1/2}` and teleport probability
   :math:`\\alpha` (``pagerank_alpha``; the code's ``pagerank_prob`` = 0.85 is
   :math:`1-\\alpha`, so 0.15) -- :func:`personalized_pagerank`, computed
   exactly (dense inverse) as the code does. :math:`P_{i,x}` is the influence of
   labelled node :math:`i` on node :math:`x`.
2. **Totoro, the conflict score** (Sec. 3.3): for a labelled node :math:`v`,

   .. math:: T_v=\\mathbb E_{x\\sim P_{v,:}}\\Big[\\sum_{j\\ne y_v}\\frac1{|\\mathcal C_j|}\\sum_{i\\in\\mathcal C_j}P_{i,x}\\Big],

   the influence of the *other* classes' labelled nodes :math:`\\mathcal C_j`
   on the nodes that :math:`v` itself reaches -- :func:`totoro`. A class with no
   labelled node has no influence (the code would average an empty set and
   produce NaN; a federated client often lacks classes, so its term is 0 here).
3. **Cosine re-weighting** (Sec. 3.4): labelled nodes are ranked by
   :math:`T_v` from the least conflicting (rank 0) to the most, and

   .. math:: w_v=w_{min}+\\tfrac12(w_{max}-w_{min})\\big(1+\\cos(\\tfrac{\\mathrm{Rank}(T_v)}{D}\\pi)\\big)

   -- :func:`renode_weights`; ``w_min`` = 0.5 and ``w_max`` = 1.5 (the code's
   ``rn_base_weight`` 0.5 and ``rn_base_weight + rn_scale_weight``). The
   denominator :math:`D` is :math:`|\\mathcal L|-1` (``rank_denominator="code"``,
   default: weights span exactly :math:`[w_{min}, w_{max}]`) or the paper's
   :math:`|\\mathcal L|` (``"paper"``). Ties: the paper's :math:`\\mathrm{Rank}`
   says nothing about equal scores; by default tied nodes share their mean rank
   (``ties="average"``, so equal conflict gives equal weight), ``"ordinal"`` is
   the code's stable sort (ties broken by node index).

The training loss is :math:`\\frac1{|\\mathcal L|}\\sum_{v\\in\\mathcal L}w_v\\,\\mathrm{CE}_v`
(Sec. 3.4; the code's ``sum(cls_loss * rn_weight) / len``), set as
the :attr:`~fglcore.algorithms.training.NodeTrainer.train_loss` of each client's trainer
(:class:`~fglcore.algorithms.training.WeightedCrossEntropy`).

**How O-pFGL ran it** (Table 7; the paper says only "we also compare our
method with ReNode ... a representative graph imbalance learning method", and
its repository has no baseline code). Reading: ReNode is the loss of the
one-shot FedAvg baseline -- one round of FedAvg, then local fine-tuning, local
epochs chosen on validation (:mod:`fglcore.algorithms.fedavg_ft`) -- with every
client's training (the round and the fine-tuning) using the ReNode loss on its
own subgraph (``federation="fedavg_ft"``, default). The published numbers
support this over Standalone + ReNode: on PubMed (Louvain+, 10 clients)
ReNode scores 74.64 / 35.59 (accuracy / F1), close to one-shot FedAvg's
78.24 / 42.24 and far from Standalone's 81.74 / 64.61 (Table 1); Metis+ PubMed
likewise (78.81 / 32.94 vs FedAvg 79.26 / 33.75, Standalone 83.24 / 56.61).
``federation="local"`` is the other reading: each client trains alone from the
seeded initial model with the ReNode loss (O-pFGL's early-stopped local
training, no message). PPR and Totoro are computed on each client's own
subgraph (cross-client edges are lost) from its training labels: nothing about
them is sent, so the ledger is fedavg_ft's (one upload, one download per
client) or empty.

Options: fedavg_ft's (``local_epochs_grid``, ``ft_lr``, ``max_epochs``, ``eval_every``, ``patience``,
``share``; the grid is not used with ``federation="local"``) and ``federation``, ``pagerank_alpha``,
``w_min``, ``w_max``, ``rank_denominator``, ``ties`` above. ``extras["renode"]`` lists per client the number of labelled nodes and the
smallest, mean and largest weight.
"""
from __future__ import annotations

import math
from typing import Any, ClassVar, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.utils import to_dense_adj

from fglcore.algorithms.base import Trainer, register_algorithm
from fglcore.algorithms.training import WeightedCrossEntropy
from fglcore.algorithms.fedavg_ft import FedAvgFT, fine_tune_clients
from fglcore.checks import Bounds
from fglcore.config import ConfigError
from fglcore.fl.channel import Channel
from fglcore.fl.engine import RunResult

FEDERATIONS = ("fedavg_ft", "local")
RANK_DENOMINATORS = ("code", "paper")
TIES = ("average", "ordinal")


def personalized_pagerank(edge_index: Tensor, num_nodes: int, alpha: float = 0.15) -> Tensor:
    """ReNode's PPR matrix :math:`P=\\alpha(I-(1-\\alpha)\\hat A)^{-1}`, :math:`\\hat A` the GCN-normalised
    adjacency with self-loops (Sec. 3.2; ``load_processed_data``).

    Row :math:`i` is the stationary distribution of a walk restarting at
    :math:`i`: :math:`P_{i,x}` is node :math:`i`'s influence on :math:`x`.
    Shapes: ``edge_index`` :math:`(2, E)` -> :math:`(N, N)`, float64.
    """
    index, weight = gcn_norm(edge_index, None, num_nodes, False, True, "source_to_target", torch.float64)
    a_hat = to_dense_adj(index, edge_attr=weight, max_num_nodes=num_nodes)[0]
    eye = torch.eye(num_nodes, dtype=torch.float64)
    return alpha * torch.linalg.inv(eye - (1 - alpha) * a_hat)


def totoro(ppr: Tensor, y: Tensor, train_mask: Tensor, num_classes: int) -> Tensor:
    """Totoro :math:`T_v` of every labelled node (Sec. 3.3); ``nan`` for unlabelled nodes.

    ``gpr[x, c]`` is the mean influence on node :math:`x` of class :math:`c`'s
    labelled nodes (0 for a class without any); :math:`T_v=\\sum_x P_{v,x}
    (\\sum_c \\mathrm{gpr}[x,c]-\\mathrm{gpr}[x,y_v])`. Shapes: ``ppr``
    :math:`(N, N)`, ``y`` and ``train_mask`` :math:`(N,)` -> :math:`(N,)`.
    """
    labelled = train_mask.nonzero().view(-1)
    onehot = F.one_hot(y[labelled], num_classes).to(ppr.dtype)  # (|L|, C)
    counts = onehot.sum(0)
    gpr = ppr[labelled].t() @ onehot / counts.clamp(min=1)  # (N, C): class-mean influence, 0 for an absent class
    conflict = ppr @ (gpr.sum(1, keepdim=True) - gpr)  # (N, C): influence of the classes other than c
    out = torch.full((y.numel(),), math.nan, dtype=ppr.dtype)
    out[labelled] = conflict[labelled, y[labelled]]
    return out


SCORE_DECIMALS = 10
"""Decimals at which :func:`conflict_ranks` compares Totoro scores (float64 noise is about 1e-16)."""


def conflict_ranks(scores: Tensor, ties: str = "average") -> Tensor:
    """0-based ranks of ``scores`` in increasing order; tied scores share their mean rank (``"average"``) or
    keep index order (``"ordinal"``, the code's stable ``sorted``). Scores are compared at
    :data:`SCORE_DECIMALS` decimals: nodes in symmetric positions have equal Totoro in exact arithmetic,
    and the inverse behind it differs in its last bits with the number of threads, which would otherwise
    decide their order. Shapes: :math:`(L,)` -> :math:`(L,)`."""
    scores = torch.round(scores, decimals=SCORE_DECIMALS)
    order = torch.sort(scores, stable=True).indices
    ranks = torch.empty_like(scores, dtype=torch.float64)
    ranks[order] = torch.arange(scores.numel(), dtype=torch.float64)
    if ties == "average":
        _, inverse = torch.unique(scores, return_inverse=True)
        total = torch.zeros(int(inverse.max()) + 1 if scores.numel() else 0, dtype=torch.float64)
        count = torch.zeros_like(total)
        total.index_add_(0, inverse, ranks)
        count.index_add_(0, inverse, torch.ones_like(ranks))
        ranks = (total / count)[inverse]
    return ranks


def renode_weights(scores: Tensor, w_min: float = 0.5, w_max: float = 1.5, rank_denominator: str = "code",
                   ties: str = "average") -> Tensor:
    """The cosine weights :math:`w_v` of the labelled nodes' Totoro ``scores`` (Sec. 3.4).

    The least conflicting node gets ``w_max``, the most conflicting
    ``w_min`` (``"code"``: denominator :math:`|L|-1`) or just above it
    (``"paper"``: :math:`|L|`); a single labelled node gets ``w_max``.
    Shapes: :math:`(L,)` -> :math:`(L,)`, float32.
    """
    n = scores.numel()
    denominator = (n - 1 if rank_denominator == "code" else n) or 1
    ranks = conflict_ranks(scores, ties)
    weights = w_min + 0.5 * (w_max - w_min) * (1 + torch.cos(ranks * math.pi / denominator))
    return weights.float()


def client_renode_weights(data: Any, num_classes: int, alpha: float, w_min: float, w_max: float,
                          rank_denominator: str, ties: str) -> Tensor:
    """ReNode weights of one client's training nodes, in the order of its ``train_mask.nonzero()``."""
    ppr = personalized_pagerank(data.edge_index.cpu(), int(data.num_nodes), alpha)
    scores = totoro(ppr, data.y.cpu(), data.train_mask.cpu(), num_classes)
    return renode_weights(scores[data.train_mask.cpu()], w_min, w_max, rank_denominator, ties)


@register_algorithm
class Renode(FedAvgFT):
    """ReNode's Totoro re-weighted loss (Chen et al., NeurIPS 2021, Sec. 3) in O-pFGL's one-shot FedAvg with
    fine-tuning, or in local training; readings in :mod:`fglcore.algorithms.renode`."""

    name = "renode"
    tasks = ("node",)
    citation = ("Chen et al., Topology-Imbalance Learning for Semi-Supervised Node Classification, NeurIPS 2021; "
                "as O-pFGL's Table 7 baseline (Yan et al., arXiv 2411.11304)")
    default_options: ClassVar[dict[str, Any]] = {
        **FedAvgFT.default_options,
        "federation": "fedavg_ft",
        "pagerank_alpha": 0.15,
        "w_min": 0.5,
        "w_max": 1.5,
        "rank_denominator": "code",
        "ties": "average",
    }
    option_choices = {**FedAvgFT.option_choices, "federation": FEDERATIONS, "rank_denominator": RANK_DENOMINATORS,
                      "ties": TIES}
    option_bounds = {**FedAvgFT.option_bounds, "pagerank_alpha": Bounds(above=0, maximum=1),
                     "w_min": Bounds(minimum=0), "w_max": Bounds(minimum=0)}

    @classmethod
    def check_options(cls, options):
        merged = super().check_options(options)
        if merged["w_max"] < merged["w_min"]:
            raise ConfigError(f"algorithm_options.w_max: {merged['w_max']!r} is not accepted; accepted: a number "
                              f">= w_min ({merged['w_min']!r})")
        return merged

    def make_trainer(self, model, cid: int) -> Trainer:
        trainer = super().make_trainer(model, cid)
        o = self.options
        weights = client_renode_weights(self.clients_data[cid], self.num_classes, o["pagerank_alpha"], o["w_min"],
                                        o["w_max"], o["rank_denominator"], o["ties"])
        trainer.train_loss = WeightedCrossEntropy(weights.to(trainer.device))
        return trainer

    def summary(self) -> list[dict[str, float]]:
        rows = []
        for client in self.clients:
            w = client.trainer.train_loss.weight
            rows.append({"client": client.cid, "labelled": int(w.numel()), "w_min": float(w.min()),
                         "w_mean": float(w.mean()), "w_max": float(w.max())})
        return rows

    def run_local(self, channel: Channel) -> RunResult:
        """``federation="local"``: every client trains alone from the seeded initial model with the ReNode loss
        and O-pFGL's early stopping (no server, no message)."""
        self._epochs = 0  # the clients' FedAvg round is never run
        _, self.clients = self.build(channel)
        self.server = None
        nothing_sent = RunResult([], 0, {}, [], channel.ledger, False, {})
        return fine_tune_clients(self, nothing_sent, self.options, 0)

    def run(self, channel: Channel | None = None, *, callbacks: Sequence = (), checkpoint: Any = None) -> RunResult:
        """fedavg_ft's run (one round per candidate ``E``, fine-tuning) or :meth:`run_local`; ReNode weights in
        ``extras["renode"]``."""
        if self.options["federation"] == "local":
            result = self.run_local(channel if channel is not None else Channel())
        else:
            result = super().run(channel, callbacks=callbacks, checkpoint=checkpoint)
        result.extras["renode"] = self.summary()
        return result
