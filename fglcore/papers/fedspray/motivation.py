"""FedSpray's motivation (Fu et al., KDD 2024, §3): Table 1, Figure 2 and Proposition 3.1.

* **Table 1** -- per client, the majority class, the number of majority and
  minority nodes and the average node homophily (Eq. 1) of each group, on the
  client's *induced* subgraph over all its nodes (:func:`table1`,
  :func:`official_partition_clients`, :func:`match_paper_clients`,
  :func:`compare_table1`; the paper's numbers come from ``paper.yaml``, :func:`paper_table1`).
* **Figure 2** -- per-client minority accuracy of FedAvg-MLP vs FedAvg-GCN,
  from the per-client rows of :func:`fglcore.experiment.sweep` with
  ``per_client=True`` (:func:`client_metrics`); :func:`fig2_table` averages
  them over seeds.
* **Proposition 3.1** -- the two-class random-graph model
  :math:`\\mathrm{Gen}(\\mu_1,\\mu_2,p^{(k)},q^{(k)})` (§3.2, App. A):
  :func:`sample_client`, :func:`theoretical_distances` (Eq. 20 and Eq. 26),
  :func:`global_class_information` (Eqs. 21-22), :func:`class_mean_distance`,
  :func:`linear_accuracy` and the whole experiment :func:`simulate_proposition`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd
import torch
from matplotlib.figure import Figure
from torch import Tensor
from torch_geometric.data import Data

from fglcore import compare, plotting
from fglcore.data.federation import build_clients
from fglcore.data.partition import partition_nodes, resolve_partition_folder
from fglcore.data.statistics import client_statistics
from fglcore.results import CLIENT_METRIC_SOURCES, client_values, config_id

PARTITION_FOLDER = "FedSpray/partition"
"""FedSpray's official client node lists (github xbfu/FedSpray ``partition/``), relative to the mirror."""

TABLE1_COLUMNS = ["majority_class", "majority_nodes", "minority_nodes", "majority_homophily", "minority_homophily"]

TABLE1_COUNTS = ["majority_class", "majority_nodes", "minority_nodes"]


def paper_table1(paper: str = "fedspray") -> pd.DataFrame:
    """FedSpray's Table 1 as printed (PubMed, 7 clients; homophily to two decimals).

    Read from the ``table: "1"`` entries of ``params/<paper>/paper.yaml``
    (method ``data``, setting ``client=<k>`` in the paper's numbering), so the
    paper's numbers are typed in one place only.
    """
    entries = [e for e in compare.load_paper(paper)["results"] if str(e["table"]) == "1"]
    if not entries:
        raise ValueError(f"params/{paper}/paper.yaml has no table 1 entries")
    long = pd.DataFrame(entries)
    long["client"] = long["setting"].str.removeprefix("client=").astype(int)
    wide = long.pivot(index="client", columns="metric", values="mean").reset_index()
    wide.columns.name = None
    for column in TABLE1_COUNTS:
        wide[column] = wide[column].astype(int)
    return wide[["client", *TABLE1_COLUMNS]]


def table1_rows(comparison: pd.DataFrame, dataset: str = "PubMed", partition: str = "files",
                paper: str = "fedspray") -> list[dict]:
    """Our Table 1 values as result rows (:data:`fglcore.results.RESULT_COLUMNS`) in the paper's client numbering.

    ``comparison`` is :func:`compare_table1`'s frame. The rows mirror the
    ``paper.yaml`` entries (method ``data``, setting ``client=<k>``, one metric
    per column) so :func:`fglcore.compare.compare` puts them next to the paper.
    """
    num_clients = len(comparison)
    cid = config_id({"paper": paper, "table": "1", "dataset": dataset, "partition": partition,
                     "num_clients": num_clients})
    rows = []
    for record in comparison.to_dict("records"):
        for column in TABLE1_COLUMNS:
            rows.append({
                "paper": paper, "table": "1", "dataset": dataset, "partition": partition,
                "num_clients": num_clients, "method": "data", "model": "", "setting": f"client={record['client']}",
                "metric": column, "seed": 0, "value": float(record[f"{column}_ours"]), "selected_round": 0,
                "config_id": cid,
            })
    return rows

# --------------------------------------------------------------------------- Table 1


def official_partition_clients(data: Data, folder: str = PARTITION_FOLDER) -> list[Data]:
    """The clients of FedSpray's official partition files ``<folder>/<data.name>_*.txt`` (induced subgraphs).

    Client ``k`` is the ``k``-th file in name order (``PubMed_01.txt`` first).
    ``folder`` is absolute or relative to ``FGL_DATA_MIRROR`` / ``FGL_DATA``.
    """
    name = getattr(data, "name", None)
    if not name:
        raise ValueError("official_partition_clients: data.name must name the dataset (e.g. 'PubMed')")
    files = sorted(resolve_partition_folder(folder).glob(f"{name}_*.txt"))
    if not files:
        raise FileNotFoundError(f"no partition file {name}_*.txt in {resolve_partition_folder(folder)}")
    assignment = partition_nodes(data, "files", len(files), 0, path=folder)
    return build_clients(data, assignment)


def louvain_clients(data: Data, num_clients: int, seed: int = 0) -> list[Data]:
    """FedSpray's recipe on any graph: the ``num_clients`` largest Louvain communities (``louvain_largest``)."""
    return build_clients(data, partition_nodes(data, "louvain_largest", num_clients, seed))


def client_profiles(datasets: Sequence[str], stand_in_clients: int | None = None) -> pd.DataFrame:
    """Per dataset, how its FedSpray clients look: the conditions under which the paper says proxies help.

    FedSpray's argument (§3, Table 1) needs clients dominated by one class
    whose minority nodes sit among majority neighbours. For each dataset,
    partitioned as the tables run it (:func:`fglcore.papers.fedspray.tables.dataset_setup`:
    official files for the paper's datasets, else the K largest Louvain
    communities), the columns are means over its clients of: the majority
    class's share of the client's nodes (label skew), the share of minority
    nodes, and the average node homophily of majority and of minority nodes
    (Eq. 1, on the client's induced subgraph); plus the graph's own node
    homophily before partitioning and the minority share of all clients'
    nodes pooled (``minority_share_pooled``, the weight of minority nodes in
    pooled accuracy).
    """
    from fglcore.data.datasets import load_structure
    from fglcore.metrics import node_homophily
    from fglcore.papers.fedspray.tables import PAPER_DATASETS, dataset_setup

    rows = []
    for name in datasets:
        setup = dataset_setup(name, stand_in_clients)
        graph = load_structure(name)
        assignment = partition_nodes(graph, setup["partition"], setup["num_clients"], 0, **setup["partition_options"])
        stats = client_statistics(build_clients(graph, assignment), graph.num_classes)
        rows.append({
            "dataset": name,
            "role": "paper" if name in PAPER_DATASETS else "stand-in",
            "clients": len(stats),
            "graph_homophily": float(node_homophily(graph.edge_index, graph.y)),
            "majority_share": float((stats["majority_nodes"] / stats["nodes"]).mean()),
            "minority_share": float((stats["minority_nodes"] / stats["nodes"]).mean()),
            "minority_share_pooled": float(stats["minority_nodes"].sum() / stats["nodes"].sum()),
            "majority_homophily": float(stats["majority_homophily"].mean()),
            "minority_homophily": float(stats["minority_homophily"].mean()),
        })
    return pd.DataFrame(rows)


def table1(clients: Sequence[Data], num_classes: int) -> pd.DataFrame:
    """Table 1's columns for each client (numbered from 1), plus its node and undirected edge counts.

    Majority class = most frequent label among *all* the client's nodes;
    homophily (Eq. 1) on the induced subgraph, averaged over the nodes of
    each group that have neighbours (:func:`fglcore.data.statistics.client_statistics`).
    """
    stats = client_statistics(clients, num_classes)
    frame = stats[["nodes", "edges", *TABLE1_COLUMNS]].copy()
    frame.insert(0, "client", stats["client"] + 1)
    return frame.reset_index(drop=True)


def match_paper_clients(ours: pd.DataFrame, paper: pd.DataFrame | None = None) -> list[int]:
    """For each paper row, the row of ``ours`` with the same majority class and node counts.

    The paper numbers its clients in its own order; the partition files are
    in file-name order. Raises ``ValueError`` if a paper row matches no row
    or several rows of ``ours``. ``paper`` defaults to :func:`paper_table1`.
    """
    paper = paper_table1() if paper is None else paper
    keys = TABLE1_COUNTS
    for frame, what in ((ours, "ours"), (paper, "paper")):
        missing = [k for k in keys if k not in frame.columns]
        if missing:
            raise ValueError(f"match_paper_clients: {what} lacks columns {missing}; needs {keys}")
    order = []
    for _, row in paper.iterrows():
        hits = np.flatnonzero(np.all([ours[k].to_numpy() == row[k] for k in keys], axis=0))
        if len(hits) != 1:
            raise ValueError(f"paper client {row.get('client', '?')} ({', '.join(f'{k}={row[k]}' for k in keys)}) "
                             f"matches {len(hits)} of our clients; expected exactly one")
        order.append(int(hits[0]))
    return order


def compare_table1(ours: pd.DataFrame, paper: pd.DataFrame | None = None, decimals: int = 2) -> pd.DataFrame:
    """Paper and ours side by side, ours re-ordered to the paper's clients (:func:`match_paper_clients`).

    One row per paper client with ``<column>_paper``, ``<column>_ours`` for
    every Table 1 column, and ``exact``: every count equal and every
    homophily equal after rounding to ``decimals`` (the paper prints two).
    ``paper`` defaults to :func:`paper_table1`.
    """
    paper = paper_table1() if paper is None else paper
    order = match_paper_clients(ours, paper)
    mine = ours.iloc[order].reset_index(drop=True)
    out = pd.DataFrame({"client": paper["client"].to_numpy(), "our_client": mine["client"].to_numpy()})
    exact = np.ones(len(paper), dtype=bool)
    for column in TABLE1_COLUMNS:
        out[f"{column}_paper"] = paper[column].to_numpy()
        out[f"{column}_ours"] = mine[column].to_numpy()
        if column.endswith("homophily"):
            exact &= np.round(mine[column].to_numpy().astype(float), decimals) == np.round(
                paper[column].to_numpy().astype(float), decimals)
        else:
            exact &= mine[column].to_numpy() == paper[column].to_numpy()
    out["exact"] = exact
    return out


def homophily_long(table: pd.DataFrame) -> pd.DataFrame:
    """Table 1's two homophily columns as long rows (``client``, ``group``, ``value``) for bar plots."""
    long = table.melt(id_vars="client", value_vars=["majority_homophily", "minority_homophily"],
                      var_name="group", value_name="value")
    long["group"] = long["group"].str.replace("_homophily", "", regex=False)
    return long


# --------------------------------------------------------------------------- Figure 2


def client_metrics(results: pd.DataFrame, metric: str = "minority_accuracy") -> pd.DataFrame:
    """Each client's ``metric`` at the selected round (rows of ``sweep(..., per_client=True)``), clients from 1."""
    if metric not in CLIENT_METRIC_SOURCES:
        raise ValueError(f"unknown metric {metric!r}; accepted: {', '.join(CLIENT_METRIC_SOURCES)}")
    values = client_values(results, metric)
    values["client"] = values["client"] + 1
    return values


def fig2_table(results: pd.DataFrame, metric: str = "minority_accuracy") -> pd.DataFrame:
    """Mean over seeds of each client's ``metric`` per dataset and client, one column per model (Figure 2's bars)."""
    values = client_metrics(results, metric)
    table = values.groupby(["dataset", "client", "model"], sort=True)["value"].mean().unstack("model")
    table.columns.name = None
    return table


def share_of_clients_where(table: pd.DataFrame, better: str, worse: str) -> pd.Series:
    """Per dataset, the share of clients (with both values) where column ``better`` exceeds ``worse``."""
    for column in (better, worse):
        if column not in table.columns:
            raise ValueError(f"share_of_clients_where: no column {column!r}; columns are {list(table.columns)}")
    valid = table[[better, worse]].dropna()
    return (valid[better] > valid[worse]).groupby(level="dataset").mean()


# --------------------------------------------------------------------------- Proposition 3.1


@dataclass
class GenClient:
    """One client drawn from :math:`\\mathrm{Gen}(\\mu_1,\\mu_2,p,q)`.

    ``x`` node features, ``y`` labels (0 = :math:`c_1`, 1 = :math:`c_2`),
    ``h`` each node's mean neighbour feature, ``majority`` the client's
    majority class, ``p`` and ``q`` its parameters.
    """

    x: Tensor
    y: Tensor
    h: Tensor
    majority: int
    p: float
    q: float

    @property
    def minority(self) -> Tensor:
        return self.y != self.majority


def class_means(dim: int, mean_distance: float) -> Tensor:
    """:math:`\\mu_1=-\\mu_2=\\frac{\\delta}{2\\sqrt d}\\mathbf 1`, so :math:`\\lVert\\mu_1-\\mu_2\\rVert=\\delta`; ``[2, dim]``."""
    if dim < 1 or mean_distance <= 0:
        raise ValueError(f"class_means: dim must be >= 1 and mean_distance > 0, got {dim} and {mean_distance}")
    mu = torch.full((dim,), mean_distance / (2 * math.sqrt(dim)), dtype=torch.float64)
    return torch.stack([mu, -mu])


def sample_client(mu: Tensor, majority: int, p: float, q: float, num_nodes: int, degree: int,
                  generator: torch.Generator) -> GenClient:
    """Draw one client of the random-graph model of §3.2.

    ``round(num_nodes / (1 + q))`` nodes of the majority class, the rest of
    the other (minority:majority ratio :math:`\\approx q`). Features
    :math:`x_i\\sim N(\\mu_{y_i}, I)`. Each of a node's ``degree``
    neighbours belongs to the client's majority class with probability
    :math:`p`, *whatever the node's own class*, and has features drawn from
    its class's Gaussian; ``h`` is their mean (Eqs. 16-17, covariance
    :math:`I/|\\mathcal N|`).
    """
    if not 0.5 < p < 1 or not 0 < q < 1:
        raise ValueError(f"sample_client: the proposition assumes 1/2 < p < 1 and 0 < q < 1, got p={p}, q={q}")
    if majority not in (0, 1) or num_nodes < 2 or degree < 1:
        raise ValueError(f"sample_client: majority must be 0 or 1, num_nodes >= 2 and degree >= 1; got "
                         f"{majority}, {num_nodes}, {degree}")
    if mu.dim() != 2 or mu.size(0) != 2:
        raise ValueError(f"sample_client: mu must be [2, dim], got {tuple(mu.shape)}")
    dim = mu.size(1)
    n_major = int(round(num_nodes / (1 + q)))
    y = torch.full((num_nodes,), majority, dtype=torch.long)
    y[n_major:] = 1 - majority
    y = y[torch.randperm(num_nodes, generator=generator)]
    x = mu[y] + torch.randn(num_nodes, dim, generator=generator, dtype=mu.dtype)
    from_major = torch.rand(num_nodes, degree, generator=generator) < p
    neighbour_class = torch.where(from_major, majority, 1 - majority)
    neighbours = mu[neighbour_class] + torch.randn(num_nodes, degree, dim, generator=generator, dtype=mu.dtype)
    return GenClient(x, y, neighbours.mean(dim=1), majority, p, q)


def theoretical_distances(mu: Tensor, ps: Sequence[float], qs: Sequence[float]) -> tuple[float, float]:
    """:math:`dist=\\lVert\\mu_1-\\mu_2\\rVert/2` (Eq. 20) and
    :math:`dist'=(1+\\sum_k(1-q^{(k)})(p^{(k)}-\\tfrac12))\\,dist` (Eq. 26)."""
    if len(ps) != len(qs) or not ps:
        raise ValueError(f"theoretical_distances: one p and one q per client, got {len(ps)} and {len(qs)}")
    dist = float(torch.linalg.vector_norm(mu[0] - mu[1])) / 2
    return dist, (1 + sum((1 - q) * (p - 0.5) for p, q in zip(ps, qs))) * dist


def global_class_information(clients: Sequence[GenClient]) -> Tensor:
    """The global class-wise neighbourhood information of Eqs. 21-22, ``[2, dim]``.

    :math:`s_c=\\sum_{k:\\,c\\text{ majority}}\\bar h^{(k)}+\\sum_{k:\\,c\\text{ minority}}q^{(k)}\\bar h^{(k)}`,
    with :math:`\\bar h^{(k)}` client :math:`k`'s mean neighbour feature and
    :math:`q^{(k)}` its measured minority:majority ratio: each client
    contributes in proportion to its share of class :math:`c` -- an
    unnormalised sum, as in the proof.
    """
    if not clients:
        raise ValueError("global_class_information: no clients")
    s = torch.zeros(2, clients[0].h.size(1), dtype=clients[0].h.dtype)
    for client in clients:
        n_major = int((client.y == client.majority).sum())
        ratio = (client.y.numel() - n_major) / max(n_major, 1)
        mean_h = client.h.mean(dim=0)
        s[client.majority] += mean_h
        s[1 - client.majority] += ratio * mean_h
    return s


def class_mean_distance(z: Tensor, y: Tensor) -> float:
    """Half the distance between the two class means of ``z``: each class's distance to the
    hyperplane that bisects the means (the paper's :math:`dist`, Eqs. 19-20 and 25-26)."""
    if set(torch.unique(y).tolist()) != {0, 1}:
        raise ValueError("class_mean_distance: y must hold both classes 0 and 1")
    return float(torch.linalg.vector_norm(z[y == 0].mean(0) - z[y == 1].mean(0))) / 2


def linear_accuracy(z_train: Tensor, y_train: Tensor, z_test: Tensor, y_test: Tensor,
                    minority_test: Tensor) -> tuple[float, float]:
    """Overall and minority test accuracy (%) of one logistic-regression classifier fitted on ``z_train``.

    scikit-learn's ``LogisticRegression`` (L-BFGS, C = 1): deterministic.
    """
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(max_iter=1000).fit(z_train.numpy(), y_train.numpy())
    correct = torch.from_numpy(model.predict(z_test.numpy())) == y_test
    minority = float(correct[minority_test].double().mean()) if bool(minority_test.any()) else math.nan
    return 100.0 * float(correct.double().mean()), 100.0 * minority


def soft_class_weights(x_train: Tensor, y_train: Tensor, x: Tensor) -> Tensor:
    """:math:`q_i`: class probabilities of a feature-only logistic regression (FedSpray's projector, Eq. 10)."""
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(max_iter=1000).fit(x_train.numpy(), y_train.numpy())
    return torch.from_numpy(model.predict_proba(x.numpy())).to(x.dtype)


PROPOSITION_REPRESENTATIONS = ("features", "local", "global_oracle", "global_soft")


def simulate_proposition(p_values: Sequence[float], q: float = 0.25, num_clients: int = 4, num_nodes: int = 400,
                         degree: int = 5, dim: int = 16, mean_distance: float = 1.0, seed: int = 0) -> pd.DataFrame:
    """Proposition 3.1 on simulated clients, one row per ``p`` (the same :math:`p, q` in every client).

    ``num_clients`` (even) clients, half with majority :math:`c_1`, half with
    :math:`c_2`, so the global class distribution is balanced, as the proof
    needs. Half of each client's nodes train one linear classifier shared by
    all clients (pooled, as FedAvg's optimum), the other half test it, on
    four node representations:

    * ``features``: :math:`x_i` alone;
    * ``local``: :math:`x_i+h_i`, the client's own neighbourhood mean (a GNN layer);
    * ``global_oracle``: :math:`x_i+s_{y_i}` with the global class
      information of Eqs. 21-22 (:func:`global_class_information`, from the
      training nodes) -- the setting of Prop. 3.1, which uses the node's class;
    * ``global_soft``: :math:`x_i+\\sum_c q_{ic}s_c` with :math:`q_i` from a
      feature-only classifier -- how FedSpray gives unlabeled nodes a proxy (§4.2.2).

    Columns: ``p``, ``dist`` and ``dist_prime`` (theory, Eqs. 20/26),
    ``dist_<repr>`` (:func:`class_mean_distance` on each client's test nodes, averaged over
    clients: the proof compares class means *within* a client), and
    ``accuracy_<repr>`` / ``minority_accuracy_<repr>`` (%).
    """
    if num_clients < 2 or num_clients % 2:
        raise ValueError(f"simulate_proposition: num_clients must be even (a balanced global class distribution, "
                         f"App. A), got {num_clients}")
    mu = class_means(dim, mean_distance)
    rows = []
    for p in p_values:
        generator = torch.Generator().manual_seed(seed)
        clients = [sample_client(mu, k % 2, p, q, num_nodes, degree, generator) for k in range(num_clients)]
        train_masks = [torch.randperm(num_nodes, generator=generator) < num_nodes // 2 for _ in clients]
        trained = [GenClient(c.x[m], c.y[m], c.h[m], c.majority, p, q) for c, m in zip(clients, train_masks)]
        s = global_class_information(trained)
        x = torch.cat([c.x for c in clients])
        y = torch.cat([c.y for c in clients])
        h = torch.cat([c.h for c in clients])
        train = torch.cat(train_masks)
        minority = torch.cat([c.minority for c in clients])
        soft = soft_class_weights(x[train], y[train], x) @ s
        views = {"features": x, "local": x + h, "global_oracle": x + s[y], "global_soft": x + soft}
        dist, dist_prime = theoretical_distances(mu, [p] * num_clients, [q] * num_clients)
        row = {"p": p, "dist": dist, "dist_prime": dist_prime}
        client_of = torch.arange(num_clients).repeat_interleave(num_nodes)
        for name, z in views.items():
            row[f"dist_{name}"] = float(np.mean([class_mean_distance(z[(client_of == k) & ~train],
                                                                     y[(client_of == k) & ~train])
                                                 for k in range(num_clients)]))
            row[f"accuracy_{name}"], row[f"minority_accuracy_{name}"] = linear_accuracy(
                z[train], y[train], z[~train], y[~train], minority[~train])
        rows.append(row)
    return pd.DataFrame(rows)


def plot_proposition(frame: pd.DataFrame) -> Figure:
    """Two panels over :math:`p`: distances (theory vs simulation) and minority accuracy per representation."""
    import matplotlib.pyplot as plt

    plotting.set_style()
    fig, (left, right) = plt.subplots(1, 2, figsize=(2 * plotting.FIGSIZE[0], plotting.FIGSIZE[1]),
                                      dpi=plotting.DPI)
    left.plot(frame["p"], frame["dist"], "k--", label="dist (Eq. 20)")
    left.plot(frame["p"], frame["dist_prime"], "k:", label="dist' (Eq. 26)")
    for name in ("local", "global_oracle"):
        left.plot(frame["p"], frame[f"dist_{name}"], "o-", label=f"simulated, {name}")
    left.set_xlabel("p (share of neighbours from the client's majority class)")
    left.set_ylabel("class-mean distance to the boundary")
    left.legend(fontsize="small")
    for name in PROPOSITION_REPRESENTATIONS:
        right.plot(frame["p"], frame[f"minority_accuracy_{name}"], "o-", label=name)
    right.set_xlabel("p")
    right.set_ylabel("minority test accuracy (%)")
    right.legend(fontsize="small")
    fig.tight_layout()
    return fig


def plan(table1_dataset: str, louvain_datasets: Sequence[str], num_clients: int, louvain_seed: int,
         fig2_datasets: Sequence[str], models: Sequence[str], rounds: int, local_epochs: int, lr: float,
         seeds: Sequence[int], p_values: Sequence[float], q: float, sim_clients: int, sim_nodes: int, degree: int,
         dim: int, mean_distance: float) -> dict[str, Any]:
    """What ``notebooks/fedspray/1_motivation`` computes: ``{"fig2"}``, Figure 2's validated configs, after
    checking the Table 1 and Louvain datasets and Proposition 3.1's simulation parameters. Called by the
    notebook and by ``fgl run`` before the kernel starts."""
    from fglcore import experiment
    from fglcore.checks import POSITIVE, SEED, Bounds
    from fglcore.config import ExperimentConfig

    experiment.check_lists(louvain_datasets=louvain_datasets, fig2_datasets=fig2_datasets, models=models, seeds=seeds,
                           p_values=p_values)
    experiment.check_datasets("table1_dataset", table1_dataset, "node")
    experiment.check_datasets("louvain_datasets", louvain_datasets, "node")
    experiment.check_datasets("fig2_datasets", fig2_datasets, "node")
    SEED.check("parameter 'louvain_seed'", louvain_seed)
    Bounds(above=0.5, maximum=1).check("parameter 'p_values'", list(p_values))
    Bounds(above=0, maximum=1).check("parameter 'q'", q)
    Bounds(minimum=2).check("parameter 'sim_clients'", sim_clients)
    Bounds(minimum=2).check("parameter 'sim_nodes'", sim_nodes)
    Bounds(minimum=1, below=sim_nodes).check(f"parameter 'degree' (below parameter 'sim_nodes' = {sim_nodes})",
                                             degree)
    POSITIVE.check("parameter 'dim'", dim)
    Bounds(minimum=0).check("parameter 'mean_distance'", mean_distance)
    from fglcore.papers.fedspray.tables import dataset_setup

    base = dict(paper="fedspray", table="fig2", partition="louvain_largest", num_clients=num_clients,
                partition_seed=louvain_seed, algorithm="fedavg", hidden=64, num_layers=2, dropout=0.0,
                weight_decay=0.0, lr=lr, rounds=rounds, local_epochs=local_epochs, selection_metric="val_loss",
                metric_aggregation="micro", progress=False)
    with experiment.parameters_named({"dataset": "fig2_datasets", "model": "models", "seed": "seeds",
                                      "stand_in_clients": "num_clients"}):
        # The paper's datasets (PubMed) keep their official partition files; others take the Louvain recipe.
        fig2 = [config for name in fig2_datasets
                for config in experiment.grid({**base, **dataset_setup(name, num_clients)}, model=models, seed=seeds)]
    with experiment.parameters_named({"dataset": "louvain_datasets"}):
        for name in louvain_datasets:
            ExperimentConfig.from_dict({**base, "dataset": name})
    return {"fig2": fig2}
