"""FedStar's motivation: degree distributions, their Jensen-Shannon divergence, dataset statistics, Figure 1(a).

Tan et al., "Federated Learning on Non-IID Graphs via Structural Knowledge
Sharing", AAAI 2023, Figure 1 and Appendix Tables 5-8.

* **Figure 1(b)** is a heatmap of the Jensen-Shannon divergence (JSD) of
  the degree distributions of "six real-world graph datasets from different
  domains and random graphs ... generated with Erdos-Renyi model"; the claim
  is that real graphs share structural properties across domains that random
  graphs lack. The paper names neither the datasets nor the ER parameters
  (FedStar digest, ambiguity A17), so both are explicit arguments here. The
  official code leaves the divergence (``lib/setupGC.py``, ``js_diver``):
  ``0.5 * entropy(P, M, base=2) + 0.5 * entropy(Q, M, base=2)`` with
  ``M = P + Q`` renormalised by scipy, i.e. the standard JSD in bits, in
  ``[0, 1]`` (:func:`jensen_shannon_divergence`).
  A degree distribution pools the node degrees of every graph of a dataset
  into ``num_bins`` bins, ``0 .. num_bins - 2`` and an overflow bin for
  larger degrees (:func:`degree_histogram`; the digest's recipe, 64 bins).
  Random graphs come from PyG's ``erdos_renyi_graph(n, p)``, seeded
  (:func:`erdos_renyi_degree_distribution`); their exact distribution is
  ``Binomial(n - 1, p)`` (:func:`binomial_degree_distribution`).
  Whether the claim holds depends on the ER density
  (:func:`er_density_sweep`, :func:`claim_by_density`): dense ER graphs are
  far from every real dataset, sparse ones can be closer to molecules than
  other real datasets are.
* **Tables 5-8** list, per dataset, the training graphs and the mean number
  of nodes of a training graph; :func:`dataset_statistics` recomputes them
  with the project's ``graph_stratified`` split (FedStar's stratified 80/10/10,
  seed 123) together with the TU collection's reference columns, and
  :func:`statistics_comparison` sets them beside :data:`PAPER_STATISTICS`.
* **Figure 1(a)** (Local vs FedAvg vs GCFL) is drawn from Table 1's runs:
  :func:`figure1a_configs` builds them with
  :func:`fglcore.papers.fedstar.tables.table1_config`, so under the full
  profile they *are* the Table 1 runs (same ``config_id``), and
  :func:`figure1a_table` summarises them.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import torch
from matplotlib.figure import Figure
from scipy.special import rel_entr
from scipy.stats import binom
from torch import Tensor
from torch_geometric.data import Data

from fglcore.config import ConfigError

DEFAULT_BINS = 64
"""Degree bins of the digest's recipe: degrees 0..62 and one overflow bin (>= 63)."""

FIGURE1B_DATASETS = ("MUTAG", "NCI1", "PROTEINS", "ENZYMES", "IMDB-BINARY", "Letter-high")
"""Six datasets, two molecule (CHEM), two bioinformatics (BIO), one social (SN), one vision (CV): the digest's choice."""

DOMAINS = {
    **dict.fromkeys(("MUTAG", "BZR", "COX2", "DHFR", "PTC_MR", "AIDS", "NCI1"), "CHEM"),
    **dict.fromkeys(("ENZYMES", "DD", "PROTEINS"), "BIO"),
    **dict.fromkeys(("COLLAB", "IMDB-BINARY", "IMDB-MULTI"), "SN"),
    **dict.fromkeys(("Letter-low", "Letter-high", "Letter-med"), "CV"),
}
"""Domain of each FedStar dataset (Tables 5-8)."""

FIGURE1A_METHODS = ("local", "fedavg", "gcfl")
"""The bars of Figure 1(a): Local, FedAvg (McMahan et al. 2017) and GCFL (Xie et al. 2021)."""

FIGURE1A_SETTINGS = ("biochem", "biochemsn", "biosncv")
"""Figure 1(a)'s "three cross-dataset/domain settings" are unnamed; the digest's reading (A18): the three
settings of the ablations. CHEM is an optional fourth."""

STAT_COLUMNS = ("graphs", "train_graphs", "avg_nodes", "avg_edges", "train_avg_nodes", "classes", "features")

PAPER_STATISTICS = pd.DataFrame(
    [
        # dataset, graphs, train_graphs, avg_nodes, avg_edges, train_avg_nodes, classes, features
        ("MUTAG", 188, 150, 17.93, 19.79, 17.95, 2, 7),
        ("BZR", 405, 324, 35.75, 38.36, 35.87, 2, 53),
        ("COX2", 467, 373, 41.22, 43.45, 41.14, 2, 35),
        ("DHFR", 756, 604, 42.43, 44.54, 42.43, 2, 53),
        ("PTC_MR", 344, 275, 14.29, 14.69, 14.19, 2, 18),
        ("AIDS", 2000, 1600, 15.69, 16.20, 15.75, 2, 38),
        ("NCI1", 4110, 3288, 29.87, 32.30, 29.98, 2, 37),
        ("ENZYMES", 600, 480, 32.63, 62.14, 33.19, 6, 3),
        ("DD", 1178, 942, 284.32, 715.66, 280.94, 2, 89),
        ("PROTEINS", 1113, 890, 39.06, 72.82, 38.07, 2, 3),
        ("COLLAB", 5000, 4000, 74.49, 2457.78, 73.92, 3, 492),
        ("IMDB-BINARY", 1000, 800, 19.77, 96.53, 19.84, 2, 136),
        ("IMDB-MULTI", 1500, 1200, 13.00, 65.94, 13.03, 3, 89),
        ("Letter-low", 2250, 1800, 4.68, 3.13, 4.65, 15, 2),
        ("Letter-high", 2250, 1800, 4.67, 4.50, 4.68, 15, 2),
        ("Letter-med", 2250, 1800, 4.67, 3.21, 4.70, 15, 2),
    ],
    columns=["dataset", *STAT_COLUMNS],
).set_index("dataset")
"""Reference statistics per dataset. ``train_graphs`` and ``train_avg_nodes`` are FedStar's Appendix
Tables 5-8 ("# of graphs for training per client", "# of nodes per graph"). ``graphs``, ``classes``,
``avg_nodes`` and ``avg_edges`` are the TU collection's (Morris et al. 2020; Letter-med's edges as PyG
loads them, 3.21 -- the TU web table prints 4.50), and ``features`` the node-feature width of the official
code's loaders (FedStar digest Sec. 4.1); the paper prints neither."""

PAPER_COLUMNS = ("train_graphs", "train_avg_nodes")
"""Columns printed in the paper itself (Tables 5-8); the others are reference values of the TU collection."""


# --------------------------------------------------------------------------- degree distributions


def _check_bins(num_bins: int) -> None:
    if isinstance(num_bins, bool) or not isinstance(num_bins, int) or num_bins < 2:
        raise ValueError(f"num_bins: must be an integer >= 2 (degrees 0..num_bins-2 and an overflow bin), "
                         f"got {num_bins!r}")


def node_degrees(graph: Data) -> Tensor:
    """Degree of every node of an undirected PyG graph (``edge_index`` holds both directions), isolated nodes 0."""
    if graph.num_nodes is None:
        raise ValueError("node_degrees: the graph has no num_nodes (and no node features)")
    n = int(graph.num_nodes)
    return torch.bincount(graph.edge_index[0].cpu(), minlength=n)[:n]


def degree_histogram(graphs: Iterable[Data], num_bins: int = DEFAULT_BINS) -> np.ndarray:
    """Pooled degree distribution of ``graphs``: ``float64[num_bins]`` summing to 1.

    Bin ``d < num_bins - 1`` is the share of nodes of degree ``d`` over all
    graphs; the last bin holds every degree ``>= num_bins - 1``.
    """
    _check_bins(num_bins)
    counts = torch.zeros(num_bins, dtype=torch.long)
    for graph in graphs:
        counts += torch.bincount(node_degrees(graph).clamp(max=num_bins - 1), minlength=num_bins)
    total = int(counts.sum())
    if total == 0:
        raise ValueError("degree_histogram: the graphs have no node")
    return counts.double().numpy() / total


def dataset_degree_distribution(name: str, num_bins: int = DEFAULT_BINS) -> np.ndarray:
    """:func:`degree_histogram` of every graph of TU dataset ``name`` (loaded as FedStar loads it)."""
    from fglcore.data.datasets import load_graph_dataset

    return degree_histogram(load_graph_dataset(name), num_bins)


def erdos_renyi_graphs(num_nodes: int, p: float, num_graphs: int, seed: int = 0) -> list[Data]:
    """``num_graphs`` undirected ``G(num_nodes, p)`` graphs from PyG's ``erdos_renyi_graph``, seeded.

    The global torch RNG is left as it was.
    """
    from torch_geometric.utils import erdos_renyi_graph

    if isinstance(num_nodes, bool) or not isinstance(num_nodes, int) or num_nodes < 1:
        raise ValueError(f"num_nodes: must be an integer >= 1, got {num_nodes!r}")
    if isinstance(num_graphs, bool) or not isinstance(num_graphs, int) or num_graphs < 1:
        raise ValueError(f"num_graphs: must be an integer >= 1, got {num_graphs!r}")
    if not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"p: an edge probability must be in [0, 1], got {p!r}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return [Data(edge_index=erdos_renyi_graph(num_nodes, float(p)), num_nodes=num_nodes)
                for _ in range(num_graphs)]


def erdos_renyi_degree_distribution(num_nodes: int, p: float, num_graphs: int = 200, seed: int = 0,
                                    num_bins: int = DEFAULT_BINS) -> np.ndarray:
    """:func:`degree_histogram` of :func:`erdos_renyi_graphs` (a sample of ``Binomial(n - 1, p)``)."""
    return degree_histogram(erdos_renyi_graphs(num_nodes, p, num_graphs, seed), num_bins)


def binomial_degree_distribution(num_nodes: int, p: float, num_bins: int = DEFAULT_BINS) -> np.ndarray:
    """The exact degree distribution of ``G(num_nodes, p)``, ``Binomial(num_nodes - 1, p)``, binned as
    :func:`degree_histogram` bins degrees."""
    _check_bins(num_bins)
    if not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"p: an edge probability must be in [0, 1], got {p!r}")
    pmf = binom.pmf(np.arange(num_bins - 1), num_nodes - 1, p)
    return np.append(pmf, max(0.0, 1.0 - pmf.sum()))


def matched_erdos_renyi_graphs(graphs: Iterable[Data], seed: int = 0) -> list[Data]:
    """One ``G(n, p)`` graph per input graph, with its node count ``n`` and ``p = 2m / (n (n - 1))``.

    ``m`` counts the undirected edges, so each random twin has the real
    graph's size and, in expectation, its edges: the density-matched null
    model, free of any choice of ``n`` and ``p``.
    """
    from torch_geometric.utils import erdos_renyi_graph

    out = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for graph in graphs:
            n = int(graph.num_nodes)
            m = int(graph.edge_index.size(1)) / 2
            p = min(1.0, 2 * m / (n * (n - 1))) if n > 1 else 0.0
            out.append(Data(edge_index=erdos_renyi_graph(n, p), num_nodes=n))
    return out


# --------------------------------------------------------------------------- divergences


def jensen_shannon_divergence(p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray,
                              base: float = 2.0) -> float:
    """``JSD(P, Q) = KL(P || M) / 2 + KL(Q || M) / 2`` with ``M = (P + Q) / 2`` (official ``js_diver``).

    ``p`` and ``q`` are non-negative weights of the same length, normalised
    here (as scipy's ``entropy`` normalises them in the code). In bits
    (``base=2``) the value lies in ``[0, 1]``: 0 for equal distributions, 1
    for disjoint supports.
    """
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    if p.ndim != 1 or p.shape != q.shape:
        raise ValueError(f"jensen_shannon_divergence: p and q must be 1-d of the same length, "
                         f"got shapes {p.shape} and {q.shape}")
    for label, v in (("p", p), ("q", q)):
        if not np.all(np.isfinite(v)) or np.any(v < 0) or v.sum() <= 0:
            raise ValueError(f"jensen_shannon_divergence: {label} must be finite, non-negative and not all zero")
    if base <= 0 or base == 1:
        raise ValueError(f"base: must be positive and != 1, got {base!r}")
    p, q = p / p.sum(), q / q.sum()
    m = (p + q) / 2
    value = 0.5 * rel_entr(p, m).sum() + 0.5 * rel_entr(q, m).sum()
    return float(max(0.0, value) / math.log(base))


def jsd_matrix(distributions: Mapping[str, np.ndarray], base: float = 2.0) -> pd.DataFrame:
    """Symmetric table of :func:`jensen_shannon_divergence` between every pair of ``distributions``."""
    names = list(distributions)
    if not names:
        raise ValueError("jsd_matrix: no distribution given")
    values = np.zeros((len(names), len(names)))
    for i, a in enumerate(names):
        for j in range(i + 1, len(names)):
            values[i, j] = values[j, i] = jensen_shannon_divergence(distributions[a], distributions[names[j]], base)
    return pd.DataFrame(values, index=names, columns=names)


def er_label(num_nodes: int, p: float) -> str:
    """Name of an ER reference in tables: ``ER(n=30, p=0.1)``."""
    return f"ER(n={num_nodes}, p={p:g})"


def _real_neighbours(real: Mapping[str, np.ndarray], domains: Mapping[str, str]) -> pd.DataFrame:
    """Per real dataset: JSD to the nearest other one, to the nearest one of another domain, and the mean."""
    if len(real) < 2:
        raise ValueError(f"needs at least two real datasets, got {list(real)}")
    between = jsd_matrix(real)
    rows = {}
    for name in real:
        others = between.loc[name].drop(name)
        foreign = others[[domains.get(o, o) != domains.get(name, name) for o in others.index]]
        rows[name] = {"nearest_real_jsd": others.min(),
                      "nearest_other_domain_jsd": foreign.min() if len(foreign) else math.nan,
                      "mean_real_jsd": others.mean()}
    return pd.DataFrame.from_dict(rows, orient="index")


def er_density_sweep(real: Mapping[str, np.ndarray], num_nodes: int, densities: Sequence[float],
                     num_graphs: int = 200, seed: int = 0, num_bins: int = DEFAULT_BINS,
                     domains: Mapping[str, str] = DOMAINS) -> pd.DataFrame:
    """JSD of every real distribution to ``G(num_nodes, p)`` for each ``p`` in ``densities``.

    Long format: ``dataset``, ``p``, ``mean_degree`` (``(n - 1) p``),
    ``jsd_to_er``, and three references that do not depend on ``p``: the JSD
    to the closest other real dataset (``nearest_real_jsd``), to the closest
    real dataset of *another domain* (``nearest_other_domain_jsd``, by
    ``domains``; NaN if none) and the mean JSD to the other real datasets
    (``mean_real_jsd``).
    """
    neighbours = _real_neighbours(real, domains)
    rows = []
    for p in densities:
        er = erdos_renyi_degree_distribution(num_nodes, p, num_graphs, seed, num_bins)
        for name, dist in real.items():
            rows.append({"dataset": name, "p": float(p), "mean_degree": (num_nodes - 1) * float(p),
                         "jsd_to_er": jensen_shannon_divergence(dist, er), **neighbours.loc[name].to_dict()})
    return pd.DataFrame(rows)


CLAIM_READINGS = {
    "nearest": "nearest_real_jsd",
    "cross_domain": "nearest_other_domain_jsd",
    "on_average": "mean_real_jsd",
}
"""Readings of Figure 1(b)'s claim for one real dataset: the random graphs are farther than its nearest
real dataset (``nearest``), than its nearest real dataset of another domain (``cross_domain``), or than
the real datasets on average (``on_average``, the impression a heatmap gives)."""


def claim_by_density(sweep: pd.DataFrame) -> pd.DataFrame:
    """Per ER density of an :func:`er_density_sweep`: for how many real datasets each reading of the claim holds.

    Figure 1(b)'s claim: "compared with random graphs, real-world graphs
    share more inherent structural properties even if they are from
    different domains". Columns ``p``, ``mean_degree``, ``datasets``, one
    count per :data:`CLAIM_READINGS` (``holds_<reading>``: the random graphs
    are strictly farther than the reference), and ``fails_on_average``
    (the datasets for which random graphs are as close as the real ones on average).
    """
    rows = []
    for p, group in sweep.groupby("p", sort=True):
        row = {"p": p, "mean_degree": group["mean_degree"].iloc[0], "datasets": len(group),
               "mean_jsd_to_er": group["jsd_to_er"].mean()}
        for reading, column in CLAIM_READINGS.items():
            row[f"holds_{reading}"] = int((group["jsd_to_er"] > group[column]).sum())
        row["fails_on_average"] = ", ".join(group.loc[group["jsd_to_er"] <= group["mean_real_jsd"], "dataset"])
        rows.append(row)
    return pd.DataFrame(rows)


def real_vs_random_summary(matrix: pd.DataFrame, real: Sequence[str], random: Sequence[str],
                           domains: Mapping[str, str] = DOMAINS) -> pd.DataFrame:
    """Per real dataset of a :func:`jsd_matrix`: its real neighbours, the nearest random reference, the claim.

    Columns ``nearest_real`` and its JSD, ``nearest_other_domain_jsd``,
    ``mean_real_jsd``, ``nearest_random`` and its JSD, and one boolean
    ``claim_<reading>`` per :data:`CLAIM_READINGS` (the nearest random
    reference is strictly farther than the reading's reference).
    """
    unknown = [n for n in [*real, *random] if n not in matrix.index]
    if unknown:
        raise ValueError(f"real_vs_random_summary: {unknown} not in the matrix; it has {list(matrix.index)}")
    if len(real) < 2 or not random:
        raise ValueError("real_vs_random_summary: needs at least two real datasets and one random reference")
    rows = []
    for name in real:
        others = matrix.loc[name, [r for r in real if r != name]]
        foreign = others[[domains.get(o, o) != domains.get(name, name) for o in others.index]]
        randoms = matrix.loc[name, list(random)]
        row = {"dataset": name, "nearest_real": others.idxmin(), "nearest_real_jsd": others.min(),
               "nearest_other_domain_jsd": foreign.min() if len(foreign) else math.nan,
               "mean_real_jsd": others.mean(), "nearest_random": randoms.idxmin(),
               "nearest_random_jsd": randoms.min()}
        for reading, column in CLAIM_READINGS.items():
            row[f"claim_{reading}"] = bool(randoms.min() > row[column])
        rows.append(row)
    return pd.DataFrame(rows).set_index("dataset")


# --------------------------------------------------------------------------- figures


def jsd_heatmap(matrix: pd.DataFrame, title: str = "Jensen-Shannon divergence of degree distributions (bits)"
                ) -> Figure:
    """Annotated heatmap of a :func:`jsd_matrix` on a fixed 0-1 colour scale (Figure 1(b))."""
    import seaborn as sns

    from fglcore import plotting

    n = len(matrix)
    with plotting.styled():
        fig, (ax,) = plotting.new_figure()
        fig.set_size_inches(max(plotting.FIGSIZE[0], 0.9 * n + 2.5), max(plotting.FIGSIZE[1], 0.75 * n + 1.5))
        sns.heatmap(matrix.astype(float), vmin=0.0, vmax=1.0, cmap="viridis", annot=True, fmt=".2f",
                    annot_kws={"fontsize": "x-small"}, square=True, cbar_kws={"label": "JSD (bits)"}, ax=ax)
        ax.tick_params(axis="x", labelrotation=45)
        ax.set_title(title)
    return fig


def density_sweep_plot(sweep: pd.DataFrame, title: str = "Distance to Erdős–Rényi graphs vs their density"
                       ) -> Figure:
    """JSD to ``G(n, p)`` against the ER mean degree, one line per dataset; dashed: its nearest real dataset."""
    from fglcore import plotting

    names = list(dict.fromkeys(sweep["dataset"]))
    with plotting.styled():
        fig, (ax,) = plotting.new_figure()
        for color, name in zip(plotting.colors(len(names)), names):
            rows = sweep[sweep["dataset"] == name].sort_values("mean_degree")
            ax.plot(rows["mean_degree"], rows["jsd_to_er"], marker="o", color=color, label=name)
            ax.axhline(rows["nearest_real_jsd"].iloc[0], color=color, linestyle="--", linewidth=1)
        ax.set_xlabel("mean degree of the ER graphs, (n - 1) p")
        ax.set_ylabel("JSD (bits)")
        ax.set_ylim(0, 1.02)
        ax.set_title(title)
        ax.legend(title="solid: to ER; dashed: to nearest real", fontsize="x-small", title_fontsize="x-small",
                  bbox_to_anchor=(1.01, 1), loc="upper left")
    return fig


def degree_distribution_plot(distributions: Mapping[str, np.ndarray], max_degree: int = 20,
                             title: str = "Degree distributions") -> Figure:
    """Share of nodes per degree ``0..max_degree`` (the rest summed in ``>max_degree``), one line each.

    Names starting with ``ER(`` (:func:`er_label`) are drawn dashed.
    """
    if isinstance(max_degree, bool) or not isinstance(max_degree, int) or max_degree < 1:
        raise ValueError(f"max_degree: must be an integer >= 1, got {max_degree!r}")
    from fglcore import plotting

    with plotting.styled():
        fig, (ax,) = plotting.new_figure()
        for color, (name, dist) in zip(plotting.colors(len(distributions)), distributions.items()):
            head = np.append(dist[: max_degree + 1], dist[max_degree + 1:].sum())
            ax.plot(np.arange(max_degree + 2), head, marker=".", color=color, label=name,
                    linestyle="--" if name.startswith("ER(") else "-")
        ticks = [*range(0, max_degree + 1, 2), max_degree + 1]
        ax.set_xticks(ticks, [*map(str, ticks[:-1]), f">{max_degree}"])
        ax.set_xlabel("node degree")
        ax.set_ylabel("share of nodes")
        ax.set_title(title)
        ax.legend(fontsize="x-small", bbox_to_anchor=(1.01, 1), loc="upper left")
    return fig


# --------------------------------------------------------------------------- dataset statistics (Tables 5-8)


def dataset_statistics(names: Sequence[str], split_ratios: Sequence[float] = (0.8, 0.1, 0.1),
                       split_seed: int = 123) -> pd.DataFrame:
    """Per TU dataset: the columns :data:`STAT_COLUMNS`, as FedStar's code loads and splits it.

    ``graphs``, ``classes`` and ``features`` (node-feature width); mean
    ``avg_nodes`` and undirected ``avg_edges`` per graph over all graphs;
    ``train_graphs`` and their mean node count ``train_avg_nodes`` under the
    ``graph_stratified`` split (:func:`fglcore.data.splits.graph_split_indices`,
    stratified 80/10/10 with seed 123 as the official ``split_data``) --
    the two numbers of the paper's Tables 5-8.
    """
    from fglcore.data.datasets import group_members, load_graph_dataset
    from fglcore.data.splits import graph_split_indices

    rows = []
    for name in names:
        if len(group_members(name)) != 1:
            raise ValueError(f"dataset_statistics: {name!r} is a group; pass its members {group_members(name)}")
        dataset = load_graph_dataset(name)
        nodes = torch.tensor([int(g.num_nodes) for g in dataset], dtype=torch.float64)
        edges = torch.tensor([g.edge_index.size(1) / 2 for g in dataset], dtype=torch.float64)
        train, _, _ = graph_split_indices(dataset.y.view(-1), list(split_ratios), split_seed)
        rows.append({"dataset": name, "domain": DOMAINS.get(name, ""), "graphs": len(dataset),
                     "train_graphs": int(train.numel()), "avg_nodes": nodes.mean().item(),
                     "avg_edges": edges.mean().item(), "train_avg_nodes": nodes[train].mean().item(),
                     "classes": int(dataset.num_classes), "features": int(dataset.num_features)})
    return pd.DataFrame(rows, columns=["dataset", "domain", *STAT_COLUMNS]).set_index("dataset")


def statistics_comparison(ours: pd.DataFrame, reference: pd.DataFrame = PAPER_STATISTICS,
                          decimals: int = 2) -> pd.DataFrame:
    """Ours next to the reference, one row per dataset and statistic.

    Columns ``dataset``, ``statistic``, ``source`` (``paper`` for Tables 5-8's
    columns, ``TU`` for the collection's reference values), ``reference``,
    ``ours``, ``delta`` and ``match`` (equal after rounding half up to
    ``decimals``, the precision the paper prints). Datasets without a reference row are
    left out.
    """
    missing = [c for c in STAT_COLUMNS if c not in ours.columns]
    if missing:
        raise ValueError(f"statistics_comparison: ours lacks columns {missing}; expected {list(STAT_COLUMNS)}")
    rows = []
    for name in ours.index:
        if name not in reference.index:
            continue
        for stat in STAT_COLUMNS:
            ref, mine = float(reference.loc[name, stat]), float(ours.loc[name, stat])
            rows.append({"dataset": name, "statistic": stat, "source": "paper" if stat in PAPER_COLUMNS else "TU",
                         "reference": ref, "ours": mine, "delta": mine - ref,
                         "match": _round_half_up(mine, decimals) == _round_half_up(ref, decimals)})
    return pd.DataFrame(rows, columns=["dataset", "statistic", "source", "reference", "ours", "delta", "match"])


def _round_half_up(value: float, decimals: int) -> float:
    """``value`` rounded to ``decimals`` with halves away from zero (15.745 -> 15.75, as the paper prints it);
    ``1e-9`` absorbs binary noise such as ``15.745 = 15.74499999...``."""
    scale = 10 ** decimals
    return math.copysign(math.floor(abs(value) * scale + 0.5 + 1e-9), value) / scale


def paper_vs_ours(ours: pd.DataFrame, reference: pd.DataFrame = PAPER_STATISTICS,
                  columns: Sequence[str] = PAPER_COLUMNS) -> pd.DataFrame:
    """A wide ``paper | ours`` table of ``columns`` for the datasets of ``ours`` (NaN where no reference)."""
    parts = {}
    for column in columns:
        parts[(column, "paper")] = reference[column].reindex(ours.index)
        parts[(column, "ours")] = ours[column]
    return pd.DataFrame(parts)


# --------------------------------------------------------------------------- Figure 1(a)


def figure1a_configs(settings: Sequence[str], methods: Sequence[str], seeds: Sequence[int],
                     members: Sequence[str] | None = None, **overrides: Any) -> list[dict[str, Any]]:
    """The Table 1 configurations of Figure 1(a): ``table1_config(setting, method, seed, **overrides)``.

    ``members`` (a smoke-sized run) keeps, in each setting, only the listed
    datasets that belong to it; ``None`` keeps the whole setting. With no
    members and no overrides (the full profile) these are Table 1's own
    runs, so a shared results file runs them once.
    """
    from fglcore.data.datasets import group_members
    from fglcore.papers.fedstar.tables import table1_config

    if not settings or not methods or not seeds:
        raise ValueError("figure1a_configs: settings, methods and seeds must each name at least one value")
    configs = []
    for setting in settings:
        kwargs = dict(overrides)
        if members is not None:
            chosen = [m for m in group_members(setting) if m in members]
            if not chosen:
                raise ValueError(f"figure1a_configs: none of {list(members)} is in setting {setting!r} "
                                 f"({', '.join(group_members(setting))})")
            kwargs["members"] = chosen
        configs += [table1_config(setting, m, seed, **kwargs) for m in methods for seed in seeds]
    return configs


def figure1a_table(results: pd.DataFrame, reference: str = "local") -> pd.DataFrame:
    """Mean accuracy over seeds per ``dataset`` (setting) and ``method``, and each method's gap to ``reference``.

    ``results`` are tidy rows (:mod:`fglcore.results`); only ``metric ==
    "accuracy"`` rows are read. Returns one row per setting and method with
    ``mean``, ``std`` (over seeds, population), ``n_seeds`` and
    ``gap_to_<reference>`` (NaN where the reference did not run).
    """
    from fglcore.results import summarize

    rows = results[results["metric"] == "accuracy"]
    if rows.empty:
        raise ValueError("figure1a_table: no 'accuracy' rows in the results")
    table = summarize(rows, by=["dataset", "method"])
    ref = table[table["method"] == reference].set_index("dataset")["mean"]
    table[f"gap_to_{reference}"] = table["mean"] - table["dataset"].map(ref)
    return table


def plan(jsd_datasets: Sequence[str], degree_bins: int, er_nodes: int, er_heatmap_densities: Sequence[float],
         er_sweep_densities: Sequence[float], er_graphs: int, er_seed: int, statistics_datasets: Sequence[str],
         figure1a_settings: Sequence[str], figure1a_methods: Sequence[str], figure1a_members: Sequence[str],
         figure1a_rounds: int, seeds: Sequence[int]) -> dict[str, Any]:
    """What ``notebooks/fedstar/1_motivation`` computes: ``{"figure1a"}``, Figure 1(a)'s validated configs,
    after checking the datasets, histogram and Erdős–Rényi parameters. Called by the notebook and ``fgl run``."""
    from fglcore import experiment
    from fglcore.checks import POSITIVE, PROBABILITY, SEED, Bounds
    from fglcore.config import ExperimentConfig

    experiment.check_lists(jsd_datasets=jsd_datasets, er_heatmap_densities=er_heatmap_densities,
                           er_sweep_densities=er_sweep_densities, statistics_datasets=statistics_datasets,
                           figure1a_settings=figure1a_settings, figure1a_methods=figure1a_methods, seeds=seeds)
    experiment.check_datasets("jsd_datasets", jsd_datasets, "graph")
    experiment.check_datasets("statistics_datasets", statistics_datasets, "graph")
    Bounds(minimum=2).check("parameter 'degree_bins'", degree_bins)
    Bounds(minimum=2).check("parameter 'er_nodes'", er_nodes)
    PROBABILITY.check("parameter 'er_heatmap_densities'", list(er_heatmap_densities))
    PROBABILITY.check("parameter 'er_sweep_densities'", list(er_sweep_densities))
    POSITIVE.check("parameter 'er_graphs'", er_graphs)
    SEED.check("parameter 'er_seed'", er_seed)
    names = {"setting": "figure1a_settings", "method": "figure1a_methods", "algorithm": "figure1a_methods",
             "members": "figure1a_members", "rounds": "figure1a_rounds", "seed": "seeds"}
    with experiment.parameters_named(names):
        try:
            configs = figure1a_configs(figure1a_settings, figure1a_methods, seeds, members=figure1a_members or None,
                                       rounds=figure1a_rounds, progress=False)
        except ValueError as err:
            if isinstance(err, ConfigError):
                raise
            raise ConfigError(f"members: {err}") from None
        figure1a = [ExperimentConfig.from_dict(c) for c in configs]
    return {"figure1a": figure1a}
