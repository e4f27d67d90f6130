"""FedStar's method, step by step: structure embeddings on a molecule, Table 9's parameters, one round's traffic.

Tan et al., "Federated Learning on Non-IID Graphs via Structural Knowledge
Sharing", AAAI 2023, Sec. "Methodology" (Eqs. 5-9), Appendix Table 9 and
Algorithm 1. The computations themselves live in the library
(:mod:`fglcore.data.structure`, :mod:`fglcore.models.fedstar`,
:mod:`fglcore.algorithms.fedstar`); this module gathers what the method
notebook shows about them:

* :func:`smallest_graph`, :func:`embedding_frame` and
  :func:`draw_graph_with_embeddings`: a real molecule with its DSE (Eq. 5)
  and RWSE (Eq. 6) rows;
* :func:`table9_parameter_counts` (Table 9's layers counted by hand) and
  :func:`model_parameter_counts` (the library model counted), with
  :func:`baseline_parameter_count` for the plain GIN of the baselines;
* :func:`subset_federation`: a few clients holding small subsets of TU
  datasets, for a round that runs in a second;
* :func:`ledger_by_part`: the communication ledger split into the structure
  channel, the feature channel and everything else.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd
import torch
from matplotlib.figure import Figure
from torch import nn
from torch_geometric.data import Data

MUTAG_ATOMS = ("C", "N", "O", "F", "I", "Cl", "Br")
"""MUTAG's node labels 0..6 (the TU collection's README): the atom types of the one-hot features."""

TABLE9_LAYERS = (
    ("feature_encoder", "1", "FC(n_feat, 64)"),
    ("structure_encoder", "1", "FC(32, 64)"),
    ("feature_convs", "2-4", "3 x GIN(128, 64)"),
    ("structure_convs", "2-4", "3 x GCN(64, 64)"),
    ("fusion", "5-6", "FC(128, 64)"),
    ("head", "7-8", "FC(64, 64), FC(64, n_class)"),
)
"""FedStar Table 9 ("eight layers in total"): library module, Table 9 layer(s), Table 9 entry."""


# --------------------------------------------------------------------------- structure embeddings on a molecule


def smallest_graph(dataset: Sequence[Data]) -> tuple[int, Data]:
    """``(index, graph)`` of the graph with the fewest nodes (the first such graph on ties)."""
    sizes = [int(g.num_nodes) for g in dataset]
    if not sizes:
        raise ValueError("smallest_graph: the dataset has no graph")
    index = int(np.argmin(sizes))
    return index, dataset[index]


def embedding_frame(graph: Data, rw_steps: int = 16, degree_slots: int = 16) -> pd.DataFrame:
    """One row per node: its degree, then DSE ``d=1 .. d>=k1`` (Eq. 5) and RWSE ``k=1 .. k2`` (Eq. 6).

    Computed by :class:`fglcore.data.structure.StructureEncoding` (the
    library's ``rw_dg`` order is RWSE first; the columns here follow the
    paper's Eq. 7, DSE first).
    """
    from fglcore.data.structure import StructureEncoding

    n = int(graph.num_nodes)
    s = StructureEncoding("rw_dg", rw_steps=rw_steps, degree_slots=degree_slots)(graph.edge_index, n)
    rw, dg = s[:, :rw_steps], s[:, rw_steps:]
    degree = torch.bincount(graph.edge_index[0], minlength=n)[:n]
    dse_names = [f"DSE d={j}" for j in range(1, degree_slots)] + [f"DSE d>={degree_slots}"]
    frame = pd.DataFrame(torch.cat([dg, rw], 1).numpy(), columns=dse_names + [f"RWSE k={k}" for k in
                                                                              range(1, rw_steps + 1)])
    frame.insert(0, "degree", degree.numpy())
    frame.index.name = "node"
    return frame


def draw_graph_with_embeddings(graph: Data, frame: pd.DataFrame, node_names: Sequence[str] | None = None,
                               title: str = "", seed: int = 0) -> Figure:
    """The graph (left; nodes numbered, ``node_names`` below the numbers) and its DSE and RWSE rows (right).

    ``frame`` is an :func:`embedding_frame` of ``graph``; the layout is
    networkx's Kamada-Kawai (deterministic), falling back to a seeded spring
    layout when scipy is missing.
    """
    import networkx as nx
    import seaborn as sns

    from fglcore import plotting
    from torch_geometric.utils import to_networkx

    if len(frame) != int(graph.num_nodes):
        raise ValueError(f"draw_graph_with_embeddings: frame has {len(frame)} rows, graph {graph.num_nodes} nodes")
    g = to_networkx(graph, to_undirected=True)
    try:
        layout = nx.kamada_kawai_layout(g)
    except ImportError:  # pragma: no cover - scipy is a dependency
        layout = nx.spring_layout(g, seed=seed)
    dse = frame[[c for c in frame.columns if c.startswith("DSE")]]
    rwse = frame[[c for c in frame.columns if c.startswith("RWSE")]]
    with plotting.styled():
        fig, axes = plotting.new_figure(ncols=3)
        fig.set_size_inches(plotting.FIGSIZE[0] * 3, plotting.FIGSIZE[1] * 1.3)
        ax = axes[0]
        labels = {i: f"{i}\n{node_names[i]}" if node_names is not None else str(i) for i in g.nodes}
        nx.draw_networkx(g, layout, ax=ax, labels=labels, node_color="#9ecae1", node_size=520, font_size=8)
        ax.set_axis_off()
        ax.set_title(title or f"graph with {graph.num_nodes} nodes")
        for ax, part, name in ((axes[1], dse, "DSE (Eq. 5): one-hot degree"),
                               (axes[2], rwse, "RWSE (Eq. 6): return probability after k steps")):
            sns.heatmap(part.to_numpy(), vmin=0.0, vmax=1.0, cmap="Blues", ax=ax, cbar=ax is axes[2],
                        xticklabels=[c.split(" ", 1)[1] for c in part.columns], yticklabels=list(frame.index))
            ax.set_xlabel(name)
            ax.set_ylabel("node")
            ax.tick_params(axis="x", labelsize="x-small", labelrotation=90)
            ax.tick_params(axis="y", labelsize="x-small")
    return fig


# --------------------------------------------------------------------------- Table 9 and parameter counts


def table9_parameter_counts(n_feat: int, n_class: int, hidden: int = 64, n_se: int = 32,
                            num_layers: int = 3) -> dict[str, int]:
    """Parameters of each Table 9 component, counted from its layer shapes (weights + biases).

    GIN(128, 64) is the code's MLP ``Linear(128, 64) -> ReLU -> Linear(64, 64)``
    and GCN(64, 64) one weight matrix and one bias. Keys are the modules of
    :class:`~fglcore.models.fedstar.FeatureStructureGNN` (:data:`TABLE9_LAYERS`).
    """
    for key, value in (("n_feat", n_feat), ("n_class", n_class), ("hidden", hidden), ("n_se", n_se),
                       ("num_layers", num_layers)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{key}: must be an integer >= 1, got {value!r}")

    def fc(a: int, b: int) -> int:
        return a * b + b

    return {
        "feature_encoder": fc(n_feat, hidden),
        "structure_encoder": fc(n_se, hidden),
        "feature_convs": num_layers * (fc(2 * hidden, hidden) + fc(hidden, hidden)),
        "structure_convs": num_layers * fc(hidden, hidden),
        "fusion": fc(2 * hidden, hidden),
        "head": fc(hidden, hidden) + fc(hidden, n_class),
    }


def model_parameter_counts(model: nn.Module) -> pd.DataFrame:
    """Parameters of a :class:`~fglcore.models.fedstar.FeatureStructureGNN` per top-level module.

    Columns ``module``, ``table9_layer``, ``table9_entry``, ``parameters``
    and ``shared`` (whether the server averages it under FedStar, by
    :func:`~fglcore.models.fedstar.is_structure_parameter`).
    """
    from fglcore.models.fedstar import is_structure_parameter

    counts: dict[str, int] = {}
    shared: dict[str, bool] = {}
    for name, p in model.named_parameters():
        module = name.split(".", 1)[0]
        counts[module] = counts.get(module, 0) + p.numel()
        shared[module] = shared.get(module, True) and is_structure_parameter(name)
    layers = {m: (layer, entry) for m, layer, entry in TABLE9_LAYERS}
    rows = [{"module": m, "table9_layer": layers.get(m, ("", ""))[0], "table9_entry": layers.get(m, ("", ""))[1],
             "parameters": c, "shared": shared[m]} for m, c in counts.items()]
    return pd.DataFrame(rows, columns=["module", "table9_layer", "table9_entry", "parameters", "shared"])


def baseline_parameter_count(n_feat: int, n_class: int, hidden: int = 64, num_layers: int = 3) -> int:
    """Parameters of the baselines' plain GIN (Local, FedAvg, FedProx, FedPer; ``model="gin"``, graph task)."""
    from fglcore.models import build_model

    model = build_model("gin", n_feat, hidden, n_class, num_layers=num_layers, task="graph")
    return sum(p.numel() for p in model.parameters())


# --------------------------------------------------------------------------- a small federation and its traffic


def subset_federation(names: Sequence[str], graphs_per_client: int, seed: int = 0,
                      split_ratios: Sequence[float] = (0.8, 0.1, 0.1), split_seed: int = 123):
    """One client per TU dataset in ``names``, each holding ``graphs_per_client`` of its graphs.

    The graphs are drawn uniformly without replacement with
    ``torch.Generator().manual_seed(seed)`` (all of them when the dataset is
    smaller) and split as ``graph_stratified`` splits (FedStar's stratified
    80/10/10, seed 123). A teaching-size stand-in for a FedStar setting.
    """
    from fglcore.data.datasets import load_graph_dataset
    from fglcore.data.federation import GraphClient, GraphFederation
    from fglcore.data.splits import graph_split_indices

    if not names:
        raise ValueError("subset_federation: name at least one TU dataset")
    if isinstance(graphs_per_client, bool) or not isinstance(graphs_per_client, int) or graphs_per_client < 10:
        raise ValueError(f"graphs_per_client: must be an integer >= 10 (a stratified 80/10/10 split needs "
                         f"held-out graphs), got {graphs_per_client!r}")
    clients = []
    for name in names:
        dataset = load_graph_dataset(name)
        order = torch.randperm(len(dataset), generator=torch.Generator().manual_seed(seed))
        subset = dataset[order[:graphs_per_client]]
        train, val, test = graph_split_indices(subset.y.view(-1), list(split_ratios), split_seed)
        clients.append(GraphClient(name, name, subset, train, val, test, int(dataset.num_features),
                                   int(dataset.num_classes)))
    return GraphFederation("+".join(names), clients)


def parameter_part(name: str) -> str:
    """``"structure channel"``, ``"feature channel"`` (the rest of a FedStar model) or ``"other"`` for a
    ledger message name (e.g. ``num_samples``, the aggregation weight)."""
    from fglcore.models.fedstar import is_structure_parameter

    module = name.split(".", 1)[0]
    if is_structure_parameter(name):
        return "structure channel"
    if module in ("feature_encoder", "feature_convs", "fusion", "head"):
        return "feature channel"
    return "other"


def ledger_by_part(ledger) -> pd.DataFrame:
    """Messages, elements and bytes per ``round``, ``direction`` and :func:`parameter_part` of a ledger."""
    frame = ledger.to_frame()
    if frame.empty:
        return pd.DataFrame(columns=["round", "direction", "part", "messages", "elements", "bytes"])
    frame["direction"] = [m.direction for m in ledger.messages]
    frame["part"] = frame["name"].map(parameter_part)
    frame["elements"] = frame["shape"].map(lambda s: int(np.prod(s)) if len(s) else 1)
    out = frame.groupby(["round", "direction", "part"], sort=True).agg(
        messages=("name", "size"), elements=("elements", "sum"), bytes=("nbytes", "sum")).reset_index()
    return out


def plan(molecule_dataset: str, rw_steps: int, degree_slots: int, hidden: int, num_layers: int,
         clients: Sequence[str], graphs_per_client: int, batch_size: int, lr: float, seed: int) -> dict[str, Any]:
    """What ``notebooks/fedstar/2_method`` builds: ``{"config"}``, the FedStar round it traces (one client per
    dataset of ``clients``). Called by the notebook and by ``fgl run`` before the kernel starts."""
    from fglcore import experiment
    from fglcore.checks import POSITIVE
    from fglcore.config import ExperimentConfig

    experiment.check_lists(clients=clients)
    experiment.check_datasets("molecule_dataset", molecule_dataset, "graph")
    experiment.check_datasets("clients", clients, "graph")
    POSITIVE.check("parameter 'graphs_per_client'", graphs_per_client)
    names = {"algorithm_options.rw_steps": "rw_steps", "algorithm_options.degree_slots": "degree_slots",
             "dataset": "clients", "num_clients": "clients"}
    with experiment.parameters_named(names):
        config = ExperimentConfig.from_dict(dict(
            paper="fedstar", dataset=clients[0], partition="by_dataset", num_clients=len(clients),
            split="graph_stratified", split_ratios=[0.8, 0.1, 0.1], algorithm="fedstar",
            algorithm_options={"rw_steps": rw_steps, "degree_slots": degree_slots, "fusion_before_pooling": True},
            hidden=hidden, num_layers=num_layers, dropout=0.5, rounds=1, local_epochs=1, lr=lr, weight_decay=5e-4,
            batch_size=batch_size, selection="last", metric_aggregation="client_mean", seed=seed, device="cpu"))
    POSITIVE.check("parameter 'rw_steps'", rw_steps)
    POSITIVE.check("parameter 'degree_slots'", degree_slots)
    return {"config": config}
