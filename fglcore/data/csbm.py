r"""Contextual stochastic block models (CSBM): the local-bias paper's **substitutes** for Reddit and ogbn-products.

Zhang et al., "Tackling the Local Bias in Federated Graph Learning" (arXiv
2110.12906) evaluate on Reddit (232,965 nodes, 41 classes) and ogbn-products
(2.45M nodes, 47 classes). Neither is available offline here, and both are far
too large for two CPU cores at the paper's settings. The digest (§6.2) asks
for scaled-down synthetic graphs that keep what makes the experiments
meaningful:

(a) homophily with informative but imperfect features, so cross-client edges
    matter (an MLP well below a GCN);
(b) imbalanced classes (Reddit-like: Zipf-sized; Products-like: power-law
    sized), so label-guided sampling has something to balance;
(c)-(e) the sampling fraction, random partition and depth are set by the
    notebooks' plans (``fglcore.papers.localbias``), not here.

:func:`contextual_sbm` draws one graph from a seed with numpy only:

* class sizes :math:`n_c \propto (c+1)^{-\alpha}` (at least ``min_class``
  nodes each), labels shuffled over node ids;
* ``num_nodes * avg_degree / 2`` undirected edges: a uniform source node,
  then with probability ``homophily`` a uniform target of the same class,
  otherwise a uniform target of any class (self-loops and duplicates are
  dropped, so the realised degree is slightly lower);
* features :math:`x_i = \mu_{y_i} + \sigma \varepsilon_i`, class means
  :math:`\mu_c \sim \mathcal N(0, I_d)` scaled to norm ``mean_norm``,
  :math:`\varepsilon_i \sim \mathcal N(0, I_d)`, :math:`\sigma` =
  ``noise``;
* then a fraction ``label_noise`` of the nodes get a label drawn uniformly
  over the classes (their edges and features keep the class they were drawn
  with): an irreducible error, so that a GCN tops out near the paper's levels
  (Reddit 93-97 %, ogbn-products 75-79 %) instead of at 100 % -- averaging
  over ~45 neighbours otherwise removes all feature noise.

Calibration (nearest class mean, a third of the nodes): with ``noise`` 0.4
the raw features give about 62 % (Reddit-like) and 61 % (Products-like)
before label noise, the neighbour-averaged features 100 %: features are
informative but imperfect and the edges carry most of the signal, so
dropping cross-client edges (FedAvg) costs accuracy, property (a).

PyG's ``StochasticBlockModelDataset`` draws every node pair (:math:`O(N^2)`
Bernoulli trials, 900M at 30,000 nodes) and has no class-size skew, so it is
not used; ``torch_geometric.utils.to_undirected``/``coalesce`` clean the edges.

The two registered substitutes (:data:`SUBSTITUTES`; names ``Reddit-like``
and ``Products-like``, listed by ``fgl datasets``) are cached under the data
root (``CSBM/<name>/processed``) after the first build. They have no split of
their own: the plans use the global random split with the digest's ratios
(:data:`SUBSTITUTE_SPLITS`: Reddit's 66/10/24, ogbn-products' 8/1.6/90.4).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data, InMemoryDataset
from torch_geometric.utils import coalesce, remove_self_loops, to_undirected

from fglcore.config import ConfigError


@dataclass(frozen=True)
class CSBMSpec:
    """Parameters of one contextual SBM (see :func:`contextual_sbm`)."""

    num_nodes: int
    num_classes: int
    avg_degree: float
    homophily: float
    num_features: int
    class_exponent: float
    min_class: int
    mean_norm: float
    noise: float
    seed: int
    label_noise: float = 0.0

    def check(self) -> None:
        bad = []
        if self.num_nodes < 2:
            bad.append(f"num_nodes={self.num_nodes!r} (accepted: >= 2)")
        if not 1 <= self.num_classes <= self.num_nodes:
            bad.append(f"num_classes={self.num_classes!r} (accepted: 1..num_nodes)")
        if self.min_class < 1 or self.min_class * self.num_classes > self.num_nodes:
            bad.append(f"min_class={self.min_class!r} (accepted: >= 1 and min_class * num_classes <= num_nodes)")
        if not 0 < self.avg_degree < self.num_nodes:
            bad.append(f"avg_degree={self.avg_degree!r} (accepted: 0 < avg_degree < num_nodes)")
        if not 0 <= self.homophily <= 1:
            bad.append(f"homophily={self.homophily!r} (accepted: 0..1)")
        if self.num_features < 1:
            bad.append(f"num_features={self.num_features!r} (accepted: >= 1)")
        if not 0 <= self.label_noise <= 1:
            bad.append(f"label_noise={self.label_noise!r} (accepted: 0..1)")
        if self.class_exponent < 0 or self.mean_norm < 0 or self.noise < 0:
            bad.append("class_exponent, mean_norm and noise must be >= 0, got "
                       f"{self.class_exponent!r}, {self.mean_norm!r}, {self.noise!r}")
        if bad:
            raise ConfigError("contextual_sbm: " + "; ".join(bad))


def class_sizes(num_nodes: int, num_classes: int, exponent: float, min_class: int) -> np.ndarray:
    r"""Sizes :math:`n_c \propto (c+1)^{-\alpha}`, each at least ``min_class``, summing to ``num_nodes``
    (largest class first; the rounding remainder goes to the largest)."""
    weights = (np.arange(num_classes) + 1.0) ** (-exponent)
    spare = num_nodes - min_class * num_classes
    sizes = min_class + np.floor(spare * weights / weights.sum()).astype(np.int64)
    sizes[0] += num_nodes - int(sizes.sum())
    return sizes


def contextual_sbm(spec: CSBMSpec) -> Data:
    """One CSBM graph (undirected ``edge_index``, float ``x``, ``y``); the same ``spec`` gives the same graph."""
    spec.check()
    rng = np.random.default_rng(spec.seed)
    n, c = spec.num_nodes, spec.num_classes
    y = np.repeat(np.arange(c), class_sizes(n, c, spec.class_exponent, spec.min_class))
    y = y[rng.permutation(n)]
    members = [np.flatnonzero(y == k) for k in range(c)]
    m = int(round(n * spec.avg_degree / 2))
    src = rng.integers(0, n, size=m)
    same = rng.random(m) < spec.homophily
    dst = rng.integers(0, n, size=m)  # the non-homophilous targets: any class
    for k in range(c):
        pick = same & (y[src] == k)
        dst[pick] = members[k][rng.integers(0, members[k].size, size=int(pick.sum()))]
    edge_index = torch.from_numpy(np.stack([src, dst])).long()
    edge_index, _ = remove_self_loops(edge_index)
    edge_index = coalesce(to_undirected(edge_index, num_nodes=n), num_nodes=n)
    means = rng.standard_normal((c, spec.num_features))
    means *= spec.mean_norm / np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-12)
    x = means[y] + spec.noise * rng.standard_normal((n, spec.num_features))
    flip = rng.random(n) < spec.label_noise
    y = y.copy()
    y[flip] = rng.integers(0, c, size=int(flip.sum()))
    return Data(x=torch.from_numpy(x).float(), edge_index=edge_index, y=torch.from_numpy(y).long(), num_nodes=n)


SUBSTITUTES: dict[str, CSBMSpec] = {
    # Reddit: 232,965 nodes, 41 classes, 602 features, average degree ~100 (GraphSAINT's Reddit ~50 per direction)
    "Reddit-like": CSBMSpec(num_nodes=30_000, num_classes=41, avg_degree=45.0, homophily=0.75, num_features=64,
                            class_exponent=1.0, min_class=60, mean_norm=1.0, noise=0.4, seed=2110, label_noise=0.05),
    # ogbn-products: 2,449,029 nodes, 47 classes, 100 features, average degree ~50, power-law class sizes
    "Products-like": CSBMSpec(num_nodes=50_000, num_classes=47, avg_degree=50.0, homophily=0.8, num_features=100,
                              class_exponent=1.5, min_class=20, mean_norm=1.0, noise=0.4, seed=12906, label_noise=0.2),
}
"""The digest's §6.2 substitutes: **synthetic** stand-ins, not the paper's data (names end in ``-like``)."""

SUBSTITUTE_FOR = {"Reddit-like": "Reddit", "Products-like": "ogbn-products"}
"""Which of the paper's datasets each substitute stands in for."""

SUBSTITUTE_SPLITS: dict[str, list[float]] = {"Reddit-like": [0.66, 0.10, 0.24],
                                             "Products-like": [0.08, 0.016, 0.904]}
"""Train/val/test fractions of the paper's dataset each substitute stands in for (digest §3.1, §6.2)."""


class CSBMDataset(InMemoryDataset):
    """A registered CSBM substitute, generated once into ``<root>/processed`` (no raw files, no download)."""

    def __init__(self, root: str | Path, name: str):
        if name not in SUBSTITUTES:
            raise ConfigError(f"dataset: {name!r} is not a CSBM substitute; accepted: {', '.join(SUBSTITUTES)}")
        self.name = name
        self.spec = SUBSTITUTES[name]
        super().__init__(str(root))
        self.load(self.processed_paths[0])

    @property
    def raw_file_names(self) -> list[str]:
        return []

    @property
    def processed_file_names(self) -> list[str]:
        # the parameters are in the file name: a changed spec is rebuilt, never read stale
        key = "_".join(f"{v:g}" if isinstance(v, float) else str(v) for v in asdict(self.spec).values())
        return [f"csbm_{key}.pt"]

    def download(self) -> None:  # pragma: no cover - nothing to download
        pass

    def process(self) -> None:
        self.save([contextual_sbm(self.spec)], self.processed_paths[0])
