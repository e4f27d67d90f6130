"""O-pFGL: one-shot personalised federated graph learning.

Yan, Li, Xie, Zhang, Shen, Fang and Wu, "Towards Federated Graph Learning in
One-shot Communication" (arXiv 2411.11304). Node classification in exactly
one upload and one download per client; every client ends with its own model.
The readings A1-A20 are those of the project digest (``opfgl.digest.md``
§8.4); where the paper and the authors' code (``Youth-49/O-pFGL`` at
b44e24d) differ, the code is the default and the paper an option, as named
below.

**Client, before the upload** (Sec. 4.2, :class:`OpfglClient`):

1. propagated features :math:`X^{prop}=[X \\Vert \\hat AX \\Vert \\dots \\Vert \\hat A^hX]`
   with :math:`\\hat A=\\tilde D^{-1/2}(A+I)\\tilde D^{-1/2}` (Eq. 5, A1; ``hops``
   :math:`h` = 1 as every published command, A2; :func:`propagated_features`);
2. node homophily over labelled neighbours (Eq. 1; 0 without one),
   accumulated class homophily :math:`H(c)` (Eq. 2) and the class-aware
   distillation factors :math:`w(c)=1/(1+\\ln(H(c)+1))` (Eq. 3)
   (:func:`train_node_homophily`, :func:`class_homophily`, :func:`distillation_factors`);
3. label propagation from the training labels (PyG's ``LabelPropagation``:
   :math:`\\hat A = D^{-1/2}AD^{-1/2}` without self-loops, clamp to [0, 1], all-zero
   rows made uniform; ``lp_iterations`` and ``lp_alpha``, A10;
   :func:`label_propagation`);
4. HRE (Eqs. 7-8, :func:`reliable_nodes`): an unlabelled node (val or test)
   joins the statistics under its LP label when its degree is at least
   ``hre_min_degree`` (0: criterion off, as the code's ``d_thres``), its
   normalised LP confidence at least ``hre_confidence`` and its LP class
   among the ``hre_top_k`` classes of largest :math:`H` (0: HRE off, A11);
5. class statistics of :math:`X^{prop}` over the training plus reliable
   nodes: count, mean and unbiased variance (Eqs. 6 and 8) for each class
   with at least ``min_class_count`` (2, A3) nodes.

**The upload** (Sec. 3.5) goes through pairwise-masking secure aggregation
(:class:`~fglcore.fl.secure.SecureAggregator`): each client sends one masked
``int64`` vector holding, per class, the sums that Eq. 9 needs
(:func:`sufficient_statistics`):
:math:`N_k^c`, :math:`N_k^c\\mu_k^c`, :math:`(N_k^c-1)s_k^{2,c}+N_k^c(\\mu_k^c)^2`,
:math:`\\mathbb 1[N_k^c>0]` and the original training count (which sizes the
pseudo-graph when ``node_rate`` is set). The server sees only the masked
vectors and their sum, and computes Eq. 9 from that sum
(:func:`pooled_statistics`); Eq. 13 as printed has typos, the identity
:math:`\\sum_k N_k(\\mu_k-\\mu)^2=\\sum_kN_k\\mu_k^2-N\\mu^2` is used (A5). The
pooled variance divides by :math:`N^c-m_c` (paper and code, ``m_c`` the
clients reporting class c; ``pooled_variance="paper"``) or by
:math:`N^c-1`, the variance of the union of the clients' nodes
(``"exact"``). Secure aggregation is always on for O-pFGL (its Sec. 3.5
claim); ``config.secure_aggregation`` is not consulted. The masked vector
holds :math:`C(2(h+1)F+3)` ``int64`` words (fixed point, 24 fractional
bits): 321,160 bytes per client on Cora with :math:`h=1`, about twice the
paper's float32 count of means, variances and counts (Table 25's
:math:`O(Chf)`).

**Server** (Sec. 4.3, :func:`condense`): ``nodes_per_class`` pseudo-nodes
per class (1 for the Planetoid datasets; ``node_rate`` > 0 uses
:math:`\\lceil p\\,N^c_{orig}\\rceil` instead), features :math:`X'\\sim N(0,1)`,
edges from the link predictor :math:`g_\\theta`
(:class:`~fglcore.models.pge.PseudoGraphEdges`, ``pge="mlp"``; Table 23's
alternatives: ``"direct"``, a free matrix,
:class:`~fglcore.models.pge_direct.FreePseudoAdjacency`, and
``"inner_product"``, the cosine similarity of the pseudo-features,
:class:`~fglcore.models.pge_inner.InnerProductEdges`; neither is in the
authors' code) with weights
:math:`S_{ij}\\ge\\delta` kept as weights (``edge_threshold`` δ = 0.01; the
code ships the weighted graph, the paper's indicator is not
differentiable, A6). Loss :math:`10\\,L_{align}+0.1\\,L_{smt}` (A7):
:math:`L_{align}` (Eq. 11) matches per class the mean and the dispersion of
the propagated pseudo-features with weight :math:`\\lambda_c=N^c/\\sum N`
(MSE over dimensions); the dispersion is the standard deviation
(``dispersion="std"``, code) or the variance (``"variance"``, Eq. 11, A4)
and is dropped for a class with one pseudo-node (code). :math:`L_{smt}`
(Eq. 12) is :math:`\\sum A'_{ij}\\,k(x_i,x_j)/\\sum A'_{ij}` with the code's
kernel, the mean over dimensions of :math:`\\exp(-(x_{id}-x_{jd})^2/2)`
(``smoothness="code"``) or the paper's :math:`\\exp(-\\Vert x_i-x_j\\Vert^2/2)`
(``"paper"``); both are *minimised* as printed, which pushes linked nodes
apart (A8). ``condense_iterations`` (3000) Adam steps, alternating in every
block of 50 iterations 10 steps of :math:`\\theta` (``lr_adj``) and 40 of
:math:`X'` (``lr_feat``) (A7).

**The download**: one tensor ``pseudo_graph`` of shape :math:`[n', F+n'+1]`
holding :math:`X'`, the dense weighted :math:`A'` and the labels
:math:`Y'`, the paper's :math:`O(n'f+n'^2)` (:func:`pack_pseudo_graph`).

**Client, after the download** (Sec. 4.4): Stage 1 trains the generalised
model :math:`M_G` on the pseudo-graph with cross-entropy (Eq. 14; Adam
``stage1_lr``); Stage 2 fine-tunes it on the local graph with
:math:`L_{ce}+\\frac1{N_k}\\sum_i\\gamma_i\\,\\mathrm{KL}(p_{M_G}(i)\\Vert p_{M_k}(i))`
over all local nodes (Eqs. 15-16; Adam ``stage2_lr``), the frozen
:math:`M_G`'s outputs computed once, :math:`\\gamma_i=\\beta\\,\\tilde y_i\\cdot w`
(Eq. 17) from the raw LP output, clamped to [``gamma_min``, ``gamma_max``]
where given (A9, the code's ``reg_min``/``reg_max``; not in the paper).
Both stages run at most ``max_epochs`` (3000) steps, evaluate the local
validation accuracy every ``eval_every`` (100) steps, keep the best model and
stop after ``patience`` evaluations without a strict improvement (A12; the
code starts the best accuracy at 0 and keeps the last model when none
improves on it). ``stage2`` picks the ablations of Figs. 3-4:
``"adaptive"`` (the method), ``"ft"`` (γ = 0), ``"ft_focal"`` (γ = 0 and the
focal loss of Lin et al. in place of cross-entropy, :func:`focal_loss`; the
paper gives no setting and the authors' code lists a ``local_strategy``
``ft_imb`` but implements none, so ``focal_gamma`` is Lin et al.'s 2 and
``focal_alpha`` is ``"none"``, :math:`\\alpha_t=1`, or ``"balanced"``, inverse
class frequency of the local training labels; the paper's O1 blames the
weights being hard to set), ``"fixed"`` (γ = β for all
nodes), ``"none"`` (report :math:`M_G`, the code's ``local_strategy=global``).
Every client starts Stage 1 from the same initial model (homogeneous
setting). ``config.model`` is ``gcn`` (the paper's backbone) or, for
Tables 17/18, ``sgc``, ``sage`` or ``gat``: as in the authors' code, whose
PyG models pass edge weights only to layers that take them, GCN, SGC, SSGC
and APPNP propagate over the pseudo-graph's weighted edges and GraphSAGE and
GAT over its edges unweighted (:func:`pseudo_graph_input`).

**Heterogeneous models** (App. A.3.7, Tables 3 and 11): ``config.model`` may
be a model list (``"hetero"``, :mod:`fglcore.models.model_lists`; 10 clients,
each its own architecture). Nothing but statistics and the pseudo-graph is
exchanged, so nothing else changes: each client trains its own model in
Stages 1 and 2. The authors' code (``--method hete``) re-initialises each
client's model (``reset_parameters``) before Stage 1; here each client's
model is drawn fresh when the run is built (client 0 first, after
``set_seed(config.seed)``) and untouched until Stage 1, which is the same.

**Evaluation** (A13): each client's test accuracy and macro-F1 over all
``C`` classes (a class absent from the test set and never predicted scores
0), averaged over clients with weights = local node counts under
``metric_aggregation="client_weighted"`` (:attr:`fglcore.metrics.Prediction.weight`).

The run is one "round": ``config.rounds`` must be 1; ``config.lr``,
``config.local_epochs``, ``config.selection`` and ``config.patience`` are not
used (the stages have their own options). ``RunResult.extras`` holds the
seconds of each phase (``seconds``: ``statistics``, ``condensation``,
``stage1``, ``stage2``, ``evaluation``), the pseudo-graph and each client's
number of HRE nodes.
"""
from __future__ import annotations

import copy
import functools
import math
import time
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.data import Data
from torch_geometric.nn import LabelPropagation
from torch_geometric.nn.conv.gcn_conv import gcn_norm

from fglcore.algorithms.base import Algorithm, register_algorithm
from fglcore.algorithms.training import NodeTrainer
from fglcore.checks import NON_NEGATIVE, PROBABILITY, Bounds
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.fl.channel import Channel
from fglcore.fl.engine import SERVER, Client, RunResult, Server, evaluate_clients, per_client_metrics
from fglcore.fl.secure import SecureAggregator
from fglcore.metrics import Prediction, accuracy
from fglcore.models import MODELS, build_model
from fglcore.models.operators import GraphOperators, SparseOperator
from fglcore.models.pge import PseudoGraphEdges
from fglcore.models.pge_direct import FreePseudoAdjacency
from fglcore.models.pge_inner import InnerProductEdges
from fglcore.runtime import set_seed

STAGE2_MODES = ("adaptive", "ft", "ft_focal", "fixed", "none")
PGE_MODES = ("mlp", "direct", "inner_product")
FOCAL_ALPHAS = ("none", "balanced")
THETA_STEPS, CYCLE = 10, 50  # A7: per block of 50 iterations, 10 link-predictor steps then 40 feature steps
SUPPORTED_MODELS = ("gcn", "sgc", "sage", "gat", "ssgc", "appnp_mlp")
WEIGHTED_ADJ_T_MODELS = ("sgc", "ssgc", "appnp_mlp")
"""Models whose PyG layer (``SGConv``, ``SSGConv``, ``APPNP``) takes the pseudo-graph as a weighted sparse ``adj_t``."""

CORA_LOUVAIN: dict[str, Any] = {
    "nodes_per_class": 1, "condense_iterations": 3000, "lr_feat": 5e-3, "lr_adj": 1e-3,
    "stage1_lr": 1e-4, "stage2_lr": 5e-5, "beta": 0.2, "gamma_max": 0.15,
    "lp_iterations": 2, "lp_alpha": 0.9, "hre_top_k": 1, "hre_confidence": 1.0, "hre_min_degree": 20,
    "patience": 10, "max_epochs": 3000, "eval_every": 100,
}
"""The authors' command for Cora, Louvain+, 10 clients (``run_main.sh``; digest §5.6), as ``algorithm_options``."""

PROTOCOL: dict[str, Any] = {
    "partition_seed": 42, "split": "per_client_stratified", "split_ratios": [0.2, 0.4, 0.4], "split_seed": 42,
    "model": "gcn", "hidden": 64, "num_layers": 2, "dropout": 0.0, "weight_decay": 0.0, "rounds": 1,
    "metric_aggregation": "client_weighted",
}
"""O-pFGL's evaluation protocol (digest §5.2-5.7, A13-A14): partition and split fixed for all runs,
per-client stratified 20/40/40, 2-layer GCN (64) without dropout or weight decay, clients weighted by
local node count. Ours are drawn at seed 42 (the digest's reading of ``--seed 42``); the official code
(``main.py``, ``util/base_data_util.py`` at 45c8643) never reads ``--seed``: it draws them once, cached
on disk, under ``seed_everything(0)`` of the first run, with python-louvain and an unseeded KMeans, so no
seed reproduces its draw here."""


def cora_louvain_config(seed: int, **changes: Any) -> ExperimentConfig:
    """An :class:`~fglcore.config.ExperimentConfig` of O-pFGL on Cora, Louvain+, 10 clients (the authors' settings).

    ``changes`` are config keys or O-pFGL options (an option name overrides :data:`CORA_LOUVAIN`).
    """
    options = dict(CORA_LOUVAIN)
    fields = {"dataset": "Cora", "partition": "louvain_plus", "num_clients": 10, "paper": "opfgl"}
    for key, value in changes.items():
        if key in Opfgl.default_options:
            options[key] = value
        else:
            fields[key] = value
    return ExperimentConfig.from_dict({**PROTOCOL, **fields, "algorithm": "opfgl", "seed": seed,
                                       "algorithm_options": options})


# --------------------------------------------------------------------------- client-side statistics


PROPAGATION_CHUNK_BYTES = 64 * 2**20
"""Most bytes of gathered neighbour rows one step of :func:`propagated_features` holds (outside autograd)."""


def propagated_features(x: Tensor, edge_index: Tensor, hops: int, edge_weight: Tensor | None = None,
                        rows: Tensor | None = None) -> Tensor:
    """:math:`[X \\Vert \\hat AX \\Vert\\dots\\Vert \\hat A^hX]` with :math:`\\hat A=\\tilde D^{-1/2}(A+I)\\tilde D^{-1/2}` (Eq. 5, A1).

    Edge weights (the pseudo-graph's) enter the normalisation as in PyG's
    ``gcn_norm`` (self-loops of weight 1). Differentiable in ``x`` and
    ``edge_weight``. ``rows`` (sorted distinct node indices; ``None``: all)
    returns only those rows, and the last hop is computed for them alone.

    Each hop adds the weighted neighbour rows into every target row in edge
    order (``index_add``). Outside autograd the edges go in chunks of at most
    :data:`PROPAGATION_CHUNK_BYTES` of gathered rows, in the same order, so
    the sums are bit for bit those of one ``index_add`` over all edges while
    memory stays bounded: gathering all :math:`|E|` rows at once held
    :math:`|E|\\times F` floats twice (the rows and their weighted copy: 15 GB
    for the largest Coauthor Physics client under Louvain+: 232,606 edges with
    self-loops x 8,415 columns x 4 bytes x 2; the run was killed at 8.6 GB).
    Shapes: ``x`` :math:`(N, F)` -> :math:`(N, (h+1)F)` (``rows``: :math:`(|rows|, (h+1)F)`).
    """
    n = x.size(0)
    index, weight = gcn_norm(edge_index, edge_weight, n, False, True, "source_to_target", x.dtype)
    source, target = index
    differentiable = torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad)
    parts, current = [x if rows is None else x[rows]], x
    for hop in range(hops):
        src, tgt, w, size = source, target, weight, n
        if rows is not None and hop == hops - 1:  # the last hop only for the rows asked for
            position = torch.full((n,), -1, dtype=torch.long, device=x.device)
            position[rows] = torch.arange(rows.numel(), device=x.device)
            keep = position[target] >= 0
            src, tgt, w, size = source[keep], position[target[keep]], weight[keep], rows.numel()
        out = current.new_zeros((size, current.size(1)))
        if differentiable:
            out = out.index_add(0, tgt, current[src] * w.view(-1, 1))
        else:
            chunk = max(1, PROPAGATION_CHUNK_BYTES // max(1, current.size(1) * current.element_size()))
            for start in range(0, src.numel(), chunk):
                stop = start + chunk
                out.index_add_(0, tgt[start:stop], current[src[start:stop]] * w[start:stop].view(-1, 1))
        parts.append(out if rows is None or hop == hops - 1 else out[rows])
        current = out
    return torch.cat(parts, dim=1)


def train_node_homophily(edge_index: Tensor, y: Tensor, train_mask: Tensor) -> Tensor:
    """Eq. 1: for each training node, the share of its *training* neighbours with its label (0 without one).

    Other nodes get 0. Multi-edges count as often as they appear (the code
    walks ``edge_index``).
    """
    n = y.numel()
    source, target = edge_index
    both = train_mask[source] & train_mask[target]
    same = both & (y[source] == y[target])
    total = torch.bincount(source[both], minlength=n).double()
    hits = torch.bincount(source[same], minlength=n).double()
    h = torch.where(total > 0, hits / total.clamp(min=1), torch.zeros_like(total))
    return torch.where(train_mask, h, torch.zeros_like(h))


def class_homophily(h: Tensor, y: Tensor, train_mask: Tensor, num_classes: int) -> Tensor:
    """Eq. 2: :math:`H(c)=\\sum_{v\\in\\mathcal V_L, y_v=c} h(v)` (a sum, so it grows with class size)."""
    return torch.zeros(num_classes, dtype=torch.float64).index_add(0, y[train_mask], h[train_mask].double())


def distillation_factors(H: Tensor) -> Tensor:
    """Eq. 3: :math:`w(c)=1/(1+\\ln(H(c)+1))`; a class without labelled nodes gets 1."""
    return 1.0 / (1.0 + torch.log(H + 1.0))


def label_propagation(y: Tensor, edge_index: Tensor, train_mask: Tensor, num_classes: int, iterations: int,
                      alpha: float) -> Tensor:
    """Soft labels :math:`\\tilde Y` of every node from the training labels (A10).

    PyG's :class:`~torch_geometric.nn.LabelPropagation`: :math:`Y^{(0)}` one-hot on
    training nodes, :math:`Y^{(t+1)}=\\mathrm{clamp}(\\alpha D^{-1/2}AD^{-1/2}Y^{(t)}+(1-\\alpha)Y^{(0)},0,1)`;
    rows still all zero become uniform :math:`1/C` (the authors' ``label_prop``).
    Shapes: :math:`(N, C)`, ``float32``.
    """
    onehot = F.one_hot(y.view(-1), num_classes).float()
    out = LabelPropagation(num_layers=iterations, alpha=alpha)(onehot, edge_index, mask=train_mask)
    empty = out.sum(dim=1) == 0
    out[empty] = 1.0 / num_classes
    return out


def reliable_nodes(soft_labels: Tensor, factors: Tensor, train_mask: Tensor, degree: Tensor, top_k: int,
                   confidence: float, min_degree: int) -> tuple[Tensor, Tensor]:
    """HRE (Eq. 7): the unlabelled nodes added to the statistics, and their LP labels.

    A node qualifies when it is not a training node, its LP row normalised
    to sum 1 (plus 1e-9, as the code) peaks at ``>= confidence`` (C2) on a
    class among the ``top_k`` smallest ``factors`` -- the largest :math:`H` (C3)
    -- and, when ``min_degree > 0``, its local degree is ``>= min_degree`` (C1).
    ``top_k = 0`` turns HRE off. Returns a boolean mask and the argmax labels.
    """
    normalised = soft_labels / (soft_labels.sum(dim=1, keepdim=True) + 1e-9)
    value, label = normalised.max(dim=1)
    if top_k <= 0:
        return torch.zeros_like(train_mask), label
    major = torch.topk(factors, k=min(top_k, factors.numel()), largest=False).indices
    mask = (value >= confidence) & torch.isin(label, major.to(label.device)) & ~train_mask
    if min_degree > 0:
        mask &= degree >= min_degree
    return mask, label


@dataclass
class ClassStatistics:
    """Per class: node count, mean and unbiased variance of the propagated features (Eqs. 6, 8, 9)."""

    count: Tensor  # [C] float64
    mean: Tensor  # [C, D] float64
    var: Tensor  # [C, D] float64


STATISTICS_BLOCK_BYTES = 64 * 2**20
"""Most bytes of ``float64`` class rows :func:`class_statistics` holds at once (a block of columns)."""


def column_blocks(columns: int, width: int) -> list[tuple[int, int]]:
    """``(start, stop)`` of about equal blocks of at most ``width`` columns, none of one column unless ``columns`` is 1.

    A one-column block would take torch's whole-tensor variance (another
    summation order), and a narrow block another parallel split (with more
    than one thread): equal blocks of at least ``width / 2`` columns keep the
    per-column reduction of the undivided matrix.
    """
    parts = max(1, min(-(-columns // max(1, width)), columns // 2))
    edges = [columns * i // parts for i in range(parts + 1)]
    return list(zip(edges[:-1], edges[1:]))


def class_statistics(features: Tensor, labels: Tensor, num_classes: int, min_count: int = 2) -> ClassStatistics:
    """Count, mean and unbiased variance per class (Eq. 6), in ``float64``.

    Classes with fewer than ``min_count`` nodes (A3: 2, the unbiased variance
    needs two) are left out: count 0, zero rows. Each class's rows go to
    ``float64`` a block of columns at a time (at most
    :data:`STATISTICS_BLOCK_BYTES`, :func:`column_blocks`): every column's mean
    and variance are reduced over the same rows in the same order, so the
    numbers are those of converting all rows first, while memory stays
    bounded (the training rows of :math:`X^{prop}` in ``float64`` were 0.3 GB
    for the largest Coauthor Physics client).
    """
    d = features.size(1)
    count = torch.bincount(labels, minlength=num_classes)[:num_classes].double()
    mean = torch.zeros(num_classes, d, dtype=torch.float64)
    var = torch.zeros(num_classes, d, dtype=torch.float64)
    for c in range(num_classes):
        if count[c] >= max(min_count, 2):
            members = (labels == c).nonzero().view(-1)
            for start, stop in column_blocks(d, STATISTICS_BLOCK_BYTES // (8 * members.numel())):
                rows = features[:, start:stop][members].double()
                mean[c, start:stop] = rows.mean(dim=0)
                var[c, start:stop] = rows.var(dim=0, unbiased=True)
        else:
            count[c] = 0
    return ClassStatistics(count, mean, var)


def sufficient_statistics(stats: ClassStatistics, original_count: Tensor) -> Tensor:
    """The per-class sums Eq. 9 needs, ``[C, 2D + 3]`` float64 (Sec. 3.5, A5).

    Columns: :math:`N`, :math:`N\\mu` (D), :math:`(N-1)s^2+N\\mu^2` (D),
    :math:`\\mathbb 1[N>0]`, and the class's original training count.
    """
    n = stats.count.view(-1, 1)
    return torch.cat([
        n,
        n * stats.mean,
        (n - 1).clamp(min=0) * stats.var + n * stats.mean ** 2,
        (n > 0).double(),
        original_count.double().view(-1, 1),
    ], dim=1)


@dataclass
class PooledStatistics:
    """Eq. 9's global statistics from the summed :func:`sufficient_statistics`."""

    count: Tensor  # N^c
    mean: Tensor  # mu^c
    var: Tensor  # s^{2,c}
    reporters: Tensor  # m_c, the clients that reported class c
    original_count: Tensor  # summed training counts (sizes the pseudo-graph under node_rate)


def pooled_statistics(total: Tensor, denominator: str = "paper") -> PooledStatistics:
    """Eq. 9 from the element-wise sum over clients of :func:`sufficient_statistics`.

    :math:`\\mu^c=\\sum_kN_k^c\\mu_k^c/N^c`, :math:`s^{2,c}=(\\sum_k[(N_k^c-1)s_k^{2,c}+N_k^c(\\mu_k^c)^2]-N^c(\\mu^c)^2)/(N^c-m_c)`
    (``denominator="paper"``, Eq. 9 and the code) or :math:`/(N^c-1)`
    (``"exact"``: the unbiased variance of the union of the clients' nodes).
    Classes no client reported have count 0 and zero rows. The counts are
    rounded to integers (the sum may carry fixed-point noise).
    """
    d = (total.size(1) - 3) // 2
    count = total[:, 0].round()
    reporters = total[:, 2 * d + 1].round()
    original = total[:, 2 * d + 2].round()
    present = count > 0
    safe = count.clamp(min=1).view(-1, 1)
    mean = torch.where(present.view(-1, 1), total[:, 1:d + 1] / safe, torch.zeros_like(total[:, 1:d + 1]))
    divisor = (count - reporters) if denominator == "paper" else (count - 1)
    squares = total[:, d + 1:2 * d + 1] - count.view(-1, 1) * mean ** 2
    var = torch.where(present.view(-1, 1) & (divisor.view(-1, 1) > 0),
                      squares / divisor.clamp(min=1).view(-1, 1), torch.zeros_like(squares)).clamp(min=0)
    return PooledStatistics(count, mean, var, reporters, original)


# --------------------------------------------------------------------------- server: pseudo-graph generation


@dataclass
class PseudoGraph:
    """:math:`G'=(X', A', Y')`: features ``[n', F]``, dense weighted adjacency ``[n', n']``, labels ``[n']``."""

    x: Tensor
    adj: Tensor
    y: Tensor

    @property
    def edge_index(self) -> Tensor:
        return self.adj.nonzero().t()

    @property
    def edge_weight(self) -> Tensor:
        index = self.edge_index
        return self.adj[index[0], index[1]]


def pack_pseudo_graph(graph: PseudoGraph) -> Tensor:
    """The one download: ``[n', F + n' + 1]`` = :math:`X'\\Vert A'\\Vert Y'` (float32)."""
    return torch.cat([graph.x.float(), graph.adj.float(), graph.y.float().view(-1, 1)], dim=1)


def unpack_pseudo_graph(packed: Tensor, num_features: int) -> PseudoGraph:
    n = packed.size(0)
    return PseudoGraph(packed[:, :num_features].clone(), packed[:, num_features:num_features + n].clone(),
                       packed[:, -1].round().long())


def threshold_edges(adj: Tensor, delta: float) -> Tensor:
    """Eq. 10 as the code applies it: weights below ``delta`` set to 0, the others kept (A6)."""
    return adj * (adj >= delta).to(adj.dtype)


def smoothness_loss(x: Tensor, adj: Tensor, form: str = "code") -> Tensor:
    """Eq. 12 (A8): :math:`\\sum_{ij}A'_{ij}k(x_i,x_j)/\\sum_{ij}A'_{ij}`; 0 when :math:`A'` has no edge.

    ``form="code"``: :math:`k` = mean over dimensions of
    :math:`\\exp(-(x_{id}-x_{jd})^2/2)`; ``"paper"``: :math:`\\exp(-\\Vert x_i-x_j\\Vert^2/2)`.
    """
    index = adj.nonzero().t()
    weight = adj[index[0], index[1]]
    if weight.numel() == 0:
        return adj.sum() * 0.0
    diff = x[index[0]] - x[index[1]]
    kernel = torch.exp(-0.5 * diff ** 2).mean(dim=1) if form == "code" else torch.exp(-0.5 * (diff ** 2).sum(dim=1))
    return torch.dot(weight, kernel) / weight.sum()


def alignment_loss(features: Tensor, labels: Tensor, target: PooledStatistics, dispersion: str = "std") -> Tensor:
    """Eq. 11 (A4): :math:`\\sum_c\\lambda_c[\\mathrm{MSE}(\\mu'^c,\\mu^c)+\\mathrm{MSE}(\\sigma'^c,\\sigma^c)]`.

    :math:`\\lambda_c=N^c/\\sum_cN^c`; classes with :math:`N^c=0` are skipped;
    the dispersion term (std for ``"std"``, the code; variance for
    ``"variance"``, Eq. 11) only for classes with more than one pseudo-node.
    """
    weights = target.count / target.count.sum()
    loss = features.new_zeros(())
    for c in range(target.count.numel()):
        if target.count[c] == 0:
            continue
        rows = features[labels == c]
        if rows.size(0) == 0:
            continue
        term = F.mse_loss(rows.mean(dim=0), target.mean[c].to(features.dtype))
        if rows.size(0) > 1:
            if dispersion == "std":
                term = term + F.mse_loss(rows.std(dim=0), target.var[c].sqrt().to(features.dtype))
            else:
                term = term + F.mse_loss(rows.var(dim=0), target.var[c].to(features.dtype))
        loss = loss + float(weights[c]) * term
    return loss


def pseudo_labels(target: PooledStatistics, nodes_per_class: int, node_rate: float) -> Tensor:
    """:math:`Y'`: ``nodes_per_class`` per class, or :math:`\\lceil p\\,N^c_{orig}\\rceil` when ``node_rate`` > 0."""
    counts = []
    for c in range(target.count.numel()):
        counts.append(math.ceil(float(target.original_count[c]) * node_rate) if node_rate > 0 else nodes_per_class)
    return torch.cat([torch.full((k,), c, dtype=torch.long) for c, k in enumerate(counts)])


def edge_model(kind: str, num_features: int, num_nodes: int, hidden: int) -> nn.Module:
    """The pseudo-graph's :math:`g_\\theta` named by the ``pge`` option (Eq. 10; App. A.3.9, Table 23).

    ``"mlp"``: the link predictor of the paper and code,
    :class:`~fglcore.models.pge.PseudoGraphEdges` (``hidden`` wide);
    ``"direct"``: a free :math:`n'\\times n'` matrix,
    :class:`~fglcore.models.pge_direct.FreePseudoAdjacency`; ``"inner_product"``:
    the cosine similarity of the pseudo-features,
    :class:`~fglcore.models.pge_inner.InnerProductEdges` (no parameter).
    """
    if kind == "mlp":
        return PseudoGraphEdges(num_features, hidden)
    if kind == "direct":
        return FreePseudoAdjacency(num_nodes)
    if kind == "inner_product":
        return InnerProductEdges()
    raise ConfigError(f"algorithm_options.pge: {kind!r} is not accepted; accepted: {', '.join(PGE_MODES)}")


def condense(target: PooledStatistics, num_features: int, options: Mapping[str, Any], generator: torch.Generator,
             history: list[float] | None = None) -> PseudoGraph:
    """Optimise :math:`X'` and :math:`g_\\theta` so the propagated pseudo-features match ``target`` (Sec. 4.3, A6-A8).

    ``options`` are O-pFGL's (:attr:`Opfgl.default_options`); ``pge`` picks
    :math:`g_\\theta` (:func:`edge_model`). :math:`X'` is drawn from
    ``generator``; :math:`g_\\theta` from the global torch RNG. Every variant
    keeps the schedule of A7: with a parameter-free :math:`g` (``"inner_product"``)
    the 10 link-predictor steps of each block of 50 update nothing, so
    :math:`X'` gets the same number of steps as with the MLP and only the way
    :math:`A'` is built differs between Table 23's rows. ``history``, when
    given, receives the total loss of every iteration.
    """
    labels = pseudo_labels(target, options["nodes_per_class"], options["node_rate"])
    n = labels.numel()
    if n == 0:
        raise ValueError("the pseudo-graph would have no node: node_rate * training counts rounds to 0 for every class")
    x = nn.Parameter(torch.randn(n, num_features, generator=generator))
    pge = edge_model(options["pge"], num_features, n, options["pge_hidden"])
    theta = list(pge.parameters())
    opt_x = torch.optim.Adam([x], lr=options["lr_feat"])
    opt_theta = torch.optim.Adam(theta, lr=options["lr_adj"]) if theta else None
    hops, delta = options["hops"], options["edge_threshold"]
    target = PooledStatistics(*(t.float() for t in (target.count, target.mean, target.var, target.reporters,
                                                    target.original_count)))
    for i in range(options["condense_iterations"] + 1):
        opt_x.zero_grad(set_to_none=True)
        if opt_theta is not None:
            opt_theta.zero_grad(set_to_none=True)
        adj = threshold_edges(pge(x), delta)
        smooth = smoothness_loss(x, adj, options["smoothness"])
        index = adj.nonzero().t()
        features = propagated_features(x, index, hops, adj[index[0], index[1]])
        align = alignment_loss(features, labels, target, options["dispersion"])
        loss = options["align_weight"] * align + options["smoothness_weight"] * smooth
        loss.backward()
        if i % CYCLE >= THETA_STEPS:
            opt_x.step()
        elif opt_theta is not None:
            opt_theta.step()
        if history is not None:
            history.append(float(loss.detach()))
    with torch.no_grad():  # the code's PGE.inference: same forward, BatchNorm still in training mode
        adj = threshold_edges(pge(x), delta)
    return PseudoGraph(x.detach().clone(), adj.detach().clone(), labels)


def pseudo_graph_operators(graph: PseudoGraph) -> GraphOperators:
    """The pseudo-graph's GCN operator :math:`\\tilde D^{-1/2}(A'+I)\\tilde D^{-1/2}` with its edge weights.

    Passed to a GCN in place of an ``edge_index`` (:func:`~fglcore.models.operators.apply_conv`),
    so the weighted edges reach every layer as in the code's ``GCN(x, edge_index, edge_weight)``.
    """
    n = graph.x.size(0)
    index, weight = gcn_norm(graph.edge_index, graph.edge_weight.float(), n, False, True, "source_to_target",
                             torch.float32)
    dense = torch.zeros(n, n, device=weight.device)
    dense = dense.index_put((index[1], index[0]), weight, accumulate=True)  # row = target
    return GraphOperators(index, n, gcn=SparseOperator(dense.to_sparse_csr(), dense.t().contiguous().to_sparse_csr()))


def pseudo_graph_input(graph: PseudoGraph, model: str) -> GraphOperators | Tensor:
    """What ``model`` propagates over on the pseudo-graph: GCN the weighted operator
    (:func:`pseudo_graph_operators`), SGC, SSGC and APPNP the weighted adjacency (a sparse CSR ``adj_t``,
    row = target, which ``SGConv``, ``SSGConv`` and ``APPNP`` normalise with the weights as ``gcn_norm``; the
    code passes them ``edge_weight``), GraphSAGE and GAT the ``edge_index`` of the edges
    kept (their layers take no edge weight; the authors' PyG ``GraphSAGE``/``GAT`` drop it likewise)."""
    if model == "gcn":
        return pseudo_graph_operators(graph)
    if model in WEIGHTED_ADJ_T_MODELS:
        n = graph.x.size(0)
        index = graph.edge_index
        return torch.sparse_coo_tensor(torch.stack([index[1], index[0]]), graph.edge_weight.float(), (n, n),
                                       check_invariants=False).coalesce().to_sparse_csr()
    return graph.edge_index


# --------------------------------------------------------------------------- local training with early stopping


def train_with_early_stopping(model: nn.Module, step: Callable[[int], None], val_accuracy: Callable[[], float],
                              max_epochs: int, eval_every: int, patience: int) -> dict[str, float]:
    """The code's stage loop (A12): steps ``j = 0..max_epochs``; after step ``j >= eval_every`` with
    ``j % eval_every == 0`` evaluate; keep the best state (strictly better than the best so far,
    starting at 0) and stop after ``patience`` evaluations without improvement.

    ``step(k)`` runs ``k`` optimisation steps. The model ends with the best
    state, or its last one when no evaluation beat 0. Returns ``epochs`` run
    and ``best_val_accuracy``.
    """
    best, best_state, waited, done, stopped = 0.0, None, 0, 0, False
    chunk = eval_every + 1
    while done + chunk <= max_epochs + 1:
        step(chunk)
        done += chunk
        chunk = eval_every
        value = val_accuracy()
        if value > best:
            best, best_state, waited = value, copy.deepcopy(model.state_dict()), 0
        else:
            waited += 1
            if waited >= patience:
                stopped = True
                break
    if not stopped and done < max_epochs + 1:
        step(max_epochs + 1 - done)  # the steps after the last evaluation (none when eval_every divides max_epochs)
        done = max_epochs + 1
    if best_state is not None:
        model.load_state_dict(best_state)
    return {"epochs": float(done), "best_val_accuracy": best}


def validation_accuracy(trainer: NodeTrainer) -> float:
    """The local validation accuracy that early stopping watches (A12); ``-inf`` without validation nodes."""
    prediction = trainer.predict()["val"]
    value = accuracy(prediction.logits, prediction.y)
    return -math.inf if math.isnan(value) else value


def weighted_by_nodes(predictions: dict[str, Prediction], num_nodes: int) -> dict[str, Prediction]:
    """``predictions`` with every split weighted by the client's local node count (A13, ``client_weighted``)."""
    for prediction in predictions.values():
        prediction.weight = float(num_nodes)
    return predictions


def distillation_term(teacher_logits: Tensor, gamma: Tensor) -> Callable[[Tensor], Tensor]:
    """Eq. 16: :math:`\\frac1{N}\\sum_i\\gamma_i\\,\\mathrm{KL}(p_T(i)\\Vert p_S(i))` over all local nodes, T = 1 (A9)."""
    target = F.softmax(teacher_logits, dim=1)
    weight = gamma.view(-1, 1).to(teacher_logits.dtype)

    def term(student_logits: Tensor) -> Tensor:
        kl = F.kl_div(F.log_softmax(student_logits, dim=1), target, reduction="none")
        return (weight * kl).sum() / student_logits.size(0)

    return term


def focal_loss(logits: Tensor, target: Tensor, gamma: float = 2.0, alpha: Tensor | None = None) -> Tensor:
    """Multi-class focal loss (Lin, Goyal, Girshick, He and Dollár, "Focal Loss for Dense Object Detection",
    ICCV 2017, Eq. 5), the loss of O-pFGL's ablation ``ft(focal)`` (Sec. 5.2.2, App. A.3.3, Figs. 3-4, ref. [39]).

    :math:`\\mathrm{FL}(p_t) = -\\alpha_t\\,(1-p_t)^{\\gamma}\\log p_t` with :math:`p_t` the softmax
    probability of the true class, averaged over the rows: :math:`\\frac1N\\sum_i\\mathrm{FL}_i`.
    :math:`\\gamma=0` and no ``alpha`` give the cross-entropy; a larger :math:`\\gamma` down-weights
    the rows the model already gets right with confidence. ``alpha`` (``[C]``, optional) is
    :math:`\\alpha_t` per class (Lin et al. write it for the binary case, :math:`\\alpha` for the
    foreground; one weight per class is its usual multi-class form). torchvision's ``sigmoid_focal_loss``
    is the binary, per-logit sigmoid form and does not apply to a softmax classifier.
    Shapes: ``logits`` :math:`(N, C)`, ``target`` :math:`(N,)` -> scalar.
    """
    log_p = F.log_softmax(logits, dim=1).gather(1, target.view(-1, 1)).squeeze(1)
    loss = -((1.0 - log_p.exp()) ** gamma) * log_p
    if alpha is not None:
        loss = alpha.to(loss.dtype)[target] * loss
    return loss.mean()


def balanced_class_weights(labels: Tensor, num_classes: int) -> Tensor:
    """:math:`\\alpha_c = N/(C_{present}\\,N_c)` from the training labels (classes absent: 0), the
    "balanced" weights of scikit-learn's ``compute_class_weight``; their mean over the labelled rows is 1."""
    count = torch.bincount(labels, minlength=num_classes)[:num_classes].float()
    present = count > 0
    return torch.where(present, labels.numel() / (present.sum() * count.clamp(min=1)), torch.zeros_like(count))


# --------------------------------------------------------------------------- participants


class OpfglClient(Client):
    """One O-pFGL client: local statistics before the upload, Stages 1 and 2 after the download.

    ``num_samples`` is the number of local nodes (the metric weight, A13). ``model_name`` (default
    ``config.model``) is the registered name of ``model``: a client's entry under a model list.
    """

    def __init__(self, cid: int, data: Data, model: nn.Module, config: ExperimentConfig, device: torch.device,
                 options: Mapping[str, Any], num_classes: int, model_name: str | None = None):
        super().__init__(cid, int(data.num_nodes))
        self.options = dict(options)
        self.config = config
        self.model_name = config.model if model_name is None else model_name  # the registered name of ``model``
        self.num_classes = num_classes
        self.num_features = int(data.x.size(1))
        self.trainer = NodeTrainer(model, data, config, device)
        self.device = device
        y, train = data.y.view(-1).cpu(), data.train_mask.cpu()
        edge_index = data.edge_index.cpu()
        self.homophily = train_node_homophily(edge_index, y, train)
        self.H = class_homophily(self.homophily, y, train, num_classes)
        self.factors = distillation_factors(self.H)
        self.soft_labels = label_propagation(y, edge_index, train, num_classes, options["lp_iterations"],
                                             options["lp_alpha"])
        degree = torch.bincount(edge_index[0], minlength=data.num_nodes)
        self.reliable, lp_label = reliable_nodes(self.soft_labels, self.factors.float(), train, degree,
                                                 options["hre_top_k"], options["hre_confidence"],
                                                 options["hre_min_degree"])
        self.gamma = self.node_gammas()
        selected = train | self.reliable
        labels = torch.where(train, y, lp_label)[selected]
        features = propagated_features(data.x.cpu().float(), edge_index, options["hops"],
                                       rows=selected.nonzero().view(-1))
        self.stats = class_statistics(features, labels, num_classes, options["min_class_count"])
        self.original_count = torch.bincount(y[train], minlength=num_classes)[:num_classes]
        self.pseudo_graph: PseudoGraph | None = None
        self.report: dict[str, float] = {"hre_nodes": float(self.reliable.sum())}

    @property
    def model(self) -> nn.Module:
        return self.trainer.model

    def node_gammas(self) -> Tensor:
        """Eq. 17 with the code's clamp (A9): :math:`\\gamma_i=\\mathrm{clamp}(\\beta\\,\\tilde y_i\\cdot w,\\gamma_{min},\\gamma_{max})`."""
        o = self.options
        if o["stage2"] == "fixed":
            return torch.full((self.soft_labels.size(0),), o["beta"])
        if o["stage2"] in ("ft", "ft_focal", "none"):
            return torch.zeros(self.soft_labels.size(0))
        gamma = o["beta"] * (self.soft_labels.double() @ self.factors)
        if o["gamma_min"] is not None or o["gamma_max"] is not None:
            gamma = gamma.clamp(min=o["gamma_min"], max=o["gamma_max"])
        return gamma.float()

    def statistics(self) -> Tensor:
        """This client's :func:`sufficient_statistics` (before masking)."""
        return sufficient_statistics(self.stats, self.original_count)

    def receive(self, payload: Mapping[str, Tensor], round: int) -> None:
        self.pseudo_graph = unpack_pseudo_graph(payload["pseudo_graph"], self.num_features)

    def val_accuracy(self) -> float:
        return validation_accuracy(self.trainer)

    def stage1(self) -> dict[str, float]:
        """Eq. 14: cross-entropy of the model on the pseudo-graph; early stopping on local validation accuracy."""
        if self.pseudo_graph is None:
            raise RuntimeError(f"client {self.cid}: no pseudo-graph received before Stage 1")
        o, model = self.options, self.model
        graph = PseudoGraph(*(t.to(self.device) for t in (self.pseudo_graph.x, self.pseudo_graph.adj,
                                                           self.pseudo_graph.y)))
        x, y, ops = graph.x, graph.y, pseudo_graph_input(graph, self.model_name)  # all on the model's device
        optimizer = torch.optim.Adam(model.parameters(), lr=o["stage1_lr"], weight_decay=self.config.weight_decay,
                                     fused=True)

        def step(k: int) -> None:
            model.train()
            for _ in range(k):
                optimizer.zero_grad(set_to_none=True)
                F.cross_entropy(model(x, ops), y).backward()
                optimizer.step()

        return train_with_early_stopping(model, step, self.val_accuracy, o["max_epochs"], o["eval_every"],
                                         o["patience"])

    def stage2(self) -> dict[str, float]:
        """Eqs. 15-17: fine-tuning on local data with node-adaptive distillation from the frozen Stage-1 model.

        ``stage2="ft_focal"`` fine-tunes with :func:`focal_loss` over the training nodes alone (no
        distillation); ``focal_alpha="balanced"`` weighs the classes by :func:`balanced_class_weights`
        of the local training labels.
        """
        o = self.options
        if o["stage2"] == "none":
            return {"epochs": 0.0, "best_val_accuracy": self.val_accuracy()}
        self.trainer.optimizer = torch.optim.Adam(self.model.parameters(), lr=o["stage2_lr"],
                                                  weight_decay=self.config.weight_decay, fused=True)
        if o["stage2"] == "ft_focal":
            alpha = balanced_class_weights(self.trainer.y_train, self.num_classes) \
                if o["focal_alpha"] == "balanced" else None
            self.trainer.train_loss = functools.partial(focal_loss, gamma=o["focal_gamma"], alpha=alpha)
            step = self.trainer.train_epochs
        else:
            teacher = self.trainer.logits().detach()
            term = distillation_term(teacher, self.gamma.to(self.device)) if o["stage2"] != "ft" else None

            def step(k: int) -> None:
                self.trainer.train_epochs(k, extra_loss=term)

        return train_with_early_stopping(self.model, step, self.val_accuracy, o["max_epochs"], o["eval_every"],
                                         o["patience"])

    def fit(self, round: int) -> None:
        """Stages 1 and 2 (the client's work after the download); uploads nothing."""
        start = time.perf_counter()
        first = self.stage1()
        middle = time.perf_counter()
        second = self.stage2()
        end = time.perf_counter()
        self.report.update({"stage1_seconds": middle - start, "stage2_seconds": end - middle,
                            "stage1_epochs": first["epochs"], "stage2_epochs": second["epochs"]})
        return None

    def evaluate(self) -> dict[str, Prediction]:
        return weighted_by_nodes(self.trainer.predict(), self.num_samples)


class OpfglServer(Server):
    """Sees only the masked statistics and their sum; builds the pseudo-graph (Sec. 4.3)."""

    def __init__(self, num_features: int, options: Mapping[str, Any], seed: int):
        self.num_features = num_features
        self.options = dict(options)
        self.seed = seed
        self.target: PooledStatistics | None = None
        self.pseudo_graph: PseudoGraph | None = None
        self.loss_history: list[float] = []

    def aggregate_masked(self, masked: Sequence[Tensor], secure: SecureAggregator, client_ids: Sequence[int],
                         shape: tuple[int, int], round: int = 1) -> PooledStatistics:
        """Unmask the sum of the clients' vectors and turn it into Eq. 9's statistics."""
        total = secure.unmask_sum(masked, round, client_ids).view(shape)
        self.target = pooled_statistics(total, self.options["pooled_variance"])
        return self.target

    def condense(self) -> PseudoGraph:
        if self.target is None:
            raise RuntimeError("the server has no aggregated statistics to condense")
        generator = torch.Generator().manual_seed(self.seed)
        self.loss_history = []
        self.pseudo_graph = condense(self.target, self.num_features, self.options, generator, self.loss_history)
        return self.pseudo_graph

    def payload_for(self, client: Client, round: int) -> dict[str, Tensor] | None:
        return None if self.pseudo_graph is None else {"pseudo_graph": pack_pseudo_graph(self.pseudo_graph)}


# --------------------------------------------------------------------------- the algorithm


@register_algorithm
class Opfgl(Algorithm):
    """O-pFGL (Yan et al., arXiv 2411.11304, Eqs. 1-17); options in :mod:`fglcore.algorithms.opfgl`."""

    name = "opfgl"
    tasks = ("node",)
    heterogeneous_models = True  # App. A.3.7: no parameter is exchanged, each client trains its own model
    citation = "Yan et al., Towards Federated Graph Learning in One-shot Communication, arXiv 2411.11304"
    default_options: ClassVar[dict[str, Any]] = {
        # client statistics and HRE (Sec. 4.2)
        "hops": 1,
        "min_class_count": 2,
        "lp_iterations": 2,
        "lp_alpha": 0.9,
        "hre_top_k": 0,
        "hre_confidence": 0.95,
        "hre_min_degree": 0,
        # server aggregation and condensation (Secs. 3.5, 4.3)
        "pooled_variance": "paper",
        "nodes_per_class": 1,
        "node_rate": 0.0,
        "condense_iterations": 3000,
        "lr_feat": 5e-3,
        "lr_adj": 1e-3,
        "edge_threshold": 0.01,
        "align_weight": 10.0,
        "smoothness_weight": 0.1,
        "dispersion": "std",
        "smoothness": "code",
        "pge": "mlp",
        "pge_hidden": 128,
        # two-stage personalised training (Sec. 4.4)
        "stage1_lr": 1e-4,
        "stage2_lr": 1e-4,
        "stage2": "adaptive",
        "beta": 0.2,
        "gamma_min": None,
        "gamma_max": None,
        "focal_gamma": 2.0,
        "focal_alpha": "none",
        "max_epochs": 3000,
        "eval_every": 100,
        "patience": 5,
    }
    option_choices = {
        "pooled_variance": ("paper", "exact"),
        "dispersion": ("std", "variance"),
        "smoothness": ("code", "paper"),
        "stage2": STAGE2_MODES,
        "pge": PGE_MODES,
        "focal_alpha": FOCAL_ALPHAS,
    }
    option_bounds = {
        **{key: Bounds(minimum=low) for key, low in (
            ("hops", 1), ("min_class_count", 2), ("lp_iterations", 1), ("hre_top_k", 0), ("hre_min_degree", 0),
            ("nodes_per_class", 1), ("condense_iterations", 0), ("pge_hidden", 1), ("max_epochs", 1),
            ("eval_every", 1), ("patience", 1))},
        **dict.fromkeys(("lp_alpha", "hre_confidence", "edge_threshold", "node_rate"), PROBABILITY),
        **dict.fromkeys(("lr_feat", "lr_adj", "stage1_lr", "stage2_lr"), Bounds(above=0)),
        **dict.fromkeys(("align_weight", "smoothness_weight", "beta", "gamma_min", "gamma_max", "focal_gamma"),
                         NON_NEGATIVE),
    }

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> dict[str, Any]:
        merged = super().check_options(options)
        if merged["gamma_min"] is not None and merged["gamma_max"] is not None \
                and merged["gamma_min"] > merged["gamma_max"]:
            raise ConfigError(f"algorithm_options.gamma_min ({merged['gamma_min']}) must be <= gamma_max "
                              f"({merged['gamma_max']})")
        return merged

    @classmethod
    def check_config(cls, config: ExperimentConfig) -> None:
        super().check_config(config)
        if config.rounds != 1:
            raise ConfigError(f"rounds: O-pFGL is one-shot (one upload, one download); set rounds to 1, "
                              f"got {config.rounds}")
        spec = MODELS.get(config.model)
        names = [entry.model for entry in spec.clients] if spec.is_list else [config.model]
        for name in names:
            if name not in SUPPORTED_MODELS:
                where = f" (a client model of the list {config.model!r})" if spec.is_list else ""
                raise ConfigError(f"model: O-pFGL trains on a weighted pseudo-graph; accepted: "
                                  f"{', '.join(SUPPORTED_MODELS)} or a model list of them, got {name!r}{where}")
        if config.num_clients < 2:
            raise ConfigError(f"num_clients: O-pFGL's secure aggregation needs at least 2 clients, "
                              f"got {config.num_clients}")

    def build(self, channel: Channel) -> tuple[OpfglServer, list[OpfglClient]]:
        """The server and the clients; every client's model starts from the same initialisation, or, under a
        model list, from its own architecture drawn in client order (:meth:`make_client_model`)."""
        set_seed(self.config.seed)
        c = self.config
        features = int(self.federation.num_features)
        spec = MODELS.get(c.model)
        if spec.is_list:
            models = [self.make_client_model(cid, features, self.num_classes, cached=False)
                      for cid in range(len(self.clients_data))]
            names = [entry.model for entry in spec.clients]
        else:
            reference = build_model(c.model, features, c.hidden, self.num_classes, num_layers=c.num_layers,
                                    dropout=c.dropout, task="node", cached=False)
            models = [copy.deepcopy(reference) for _ in self.clients_data]
            names = [c.model] * len(self.clients_data)
        clients = [OpfglClient(cid, data, model, c, self.device, self.options, self.num_classes, name)
                   for cid, (data, model, name) in enumerate(zip(self.clients_data, models, names))]
        server = OpfglServer(int(self.federation.num_features), self.options, c.seed)
        return server, clients

    def run(self, channel: Channel | None = None, *, callbacks: Sequence = (), checkpoint: Any = None) -> RunResult:
        """The one-shot protocol: masked upload, aggregation and condensation, download, Stages 1-2, evaluation.

        ``callbacks`` and ``checkpoint`` are accepted for the common interface
        and not used (one round, nothing to resume).
        """
        seconds: dict[str, float] = {}
        start = time.perf_counter()
        channel = channel if channel is not None else Channel()
        server, clients = self.build(channel)
        self.server, self.clients = server, clients
        seconds["statistics"] = time.perf_counter() - start
        secure = SecureAggregator([client.cid for client in clients], seed=self.config.seed)
        masked, ids, shape = [], [], None
        for client in clients:  # the one upload of every client
            vector = client.statistics()
            shape = tuple(vector.shape)
            secret = secure.mask(client.cid, vector, round=1)
            masked.append(channel.send(client.name, SERVER, {"masked_statistics": secret}, 1)["masked_statistics"])
            ids.append(client.cid)
        start = time.perf_counter()
        server.aggregate_masked(masked, secure, ids, shape)
        server.condense()
        seconds["condensation"] = time.perf_counter() - start
        for client in clients:  # the one download of every client
            client.receive(channel.send(SERVER, client.name, server.payload_for(client, 1), 1), 1)
        for client in clients:
            client.fit(1)
        seconds["stage1"] = sum(c.report["stage1_seconds"] for c in clients)
        seconds["stage2"] = sum(c.report["stage2_seconds"] for c in clients)
        start = time.perf_counter()
        metrics, outputs = evaluate_clients(clients, self.num_classes, self.config.metric_aggregation)
        per_client = per_client_metrics(clients, outputs, self.num_classes)
        seconds["evaluation"] = time.perf_counter() - start
        for row, client in zip(per_client, clients):
            row.update({k: v for k, v in client.report.items() if not k.endswith("seconds")})
        extras = {"seconds": seconds, "pseudo_graph": server.pseudo_graph, "condensation_loss": server.loss_history,
                  "pooled_statistics": server.target}
        return RunResult([{"round": 1, **metrics}], 1, metrics, per_client, channel.ledger, False, extras)
