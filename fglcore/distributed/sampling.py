r"""Label-guided node sampling of the local-bias paper (Zhang et al., arXiv 2110.12906, Sec. 3.2, Eq. 5).

The paper's formulas were lost in the text; this follows the digest's
readings (``localbias.digest.md`` §2.4, §6.4 A1-A2):

* **Draw distribution** (A1, A2) on client :math:`k` with :math:`n_k` nodes,
  :math:`n^{tr}_k` of them training nodes with :math:`c_k` distinct training
  labels and :math:`n^{(y)}_k` training nodes of label :math:`y`:
  :math:`P_k(i) = \frac{n^{tr}_k}{n_k}\cdot\frac{1}{c_k\, n^{(y(i))}_k}` for a
  training node and :math:`P_k(i) = 1/n_k` for any other node (one
  "unlabelled" stratum sampled uniformly). The training strata thus get
  their share :math:`n^{tr}_k/n_k` of the draws, split equally over the
  classes: the sample is label-balanced whatever the client's label mix.
  ``label_source="all"`` uses every node's label instead,
  :math:`P_k(i) = 1/(c_k n^{(y(i))}_k)` over all nodes -- probably what the
  paper did, but it reads validation and test labels, so it is a flag,
  never the default.
* **Budget**: :math:`s_k = s\, n_k / N`, i.e. the same ratio
  ``sample_ratio`` :math:`= s/N` on every client (rounded, at least 1).
* **Scheme** (A1): ``"draws"`` -- :math:`s_k` i.i.d. draws from :math:`P_k`
  with replacement, duplicates kept once, inclusion probability
  :math:`p_i = 1-(1-P_k(i))^{s_k}`; ``"poisson"`` -- each node kept
  independently with :math:`p_i = \min(1, s_k P_k(i))` (exact
  Horvitz-Thompson unbiasedness).

:math:`p_i` is what Eq. 5 divides the hidden embedding by
(:mod:`fglcore.distributed.shard`).
"""
from __future__ import annotations

import torch
from torch import Tensor

SCHEMES = ("draws", "poisson")
LABEL_SOURCES = ("train", "all")


def budget(num_nodes: int, sample_ratio: float) -> int:
    """:math:`s_k = s\\,n_k/N` with :math:`s = ` ``sample_ratio`` :math:`\\cdot N`: at least one node."""
    return max(1, int(round(sample_ratio * num_nodes)))


def draw_distribution(y: Tensor, train_mask: Tensor, label_source: str = "train") -> Tensor:
    """:math:`P_k` over the client's nodes (sums to 1); see the module docstring."""
    if label_source not in LABEL_SOURCES:
        raise ValueError(f"label_source: {label_source!r} is not accepted; accepted: {', '.join(LABEL_SOURCES)}")
    n = int(y.numel())
    labelled = torch.ones(n, dtype=torch.bool) if label_source == "all" else train_mask.bool().cpu()
    y = y.long().cpu()
    probs = torch.full((n,), 1.0 / n, dtype=torch.float64)
    n_lab = int(labelled.sum())
    if n_lab == 0:
        return probs
    counts = torch.bincount(y[labelled])
    classes = int((counts > 0).sum())
    probs[labelled] = (n_lab / n) / (classes * counts[y[labelled]].double())
    return probs


def sample_nodes(probs: Tensor, size: int, scheme: str, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """The sampled local ids (ascending) and their inclusion probabilities :math:`p_i`."""
    if scheme == "draws":
        draws = torch.multinomial(probs, size, replacement=True, generator=generator)
        nodes = torch.unique(draws)
        inclusion = 1.0 - torch.pow(1.0 - probs, size)
    elif scheme == "poisson":
        inclusion = torch.clamp(size * probs, max=1.0)
        nodes = torch.nonzero(torch.rand(probs.shape, generator=generator, dtype=torch.float64) < inclusion).view(-1)
    else:
        raise ValueError(f"sampling: {scheme!r} is not accepted; accepted: {', '.join(SCHEMES)}")
    return nodes, inclusion[nodes]
