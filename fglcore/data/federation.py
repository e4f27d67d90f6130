"""Federations: a dataset cut into clients, with their splits, built from a config.

:func:`build_federation` turns an :class:`~fglcore.config.ExperimentConfig`
into either

* a :class:`NodeFederation` (subgraph FL): the dataset's graph, its
  partition and one PyG ``Data`` per client (:func:`build_clients`); or
* a :class:`GraphFederation` (graph FL): one :class:`GraphClient` per client,
  each holding graphs of one TU dataset and the indices of its splits.

It reads ``dataset``, ``partition``, ``num_clients``, ``partition_options``,
``effective_partition_seed``, ``split``, ``split_ratios`` and the split seed
(:func:`~fglcore.data.splits.resolve_split_seed`). Node-level partitions are
cached on disk (:func:`~fglcore.data.partition.cached_partition`), so building
a federation a second time costs loading the dataset and slicing it.

Graph federations also apply the federation options of graph partitioners
(:data:`~fglcore.data.partition.GRAPH_FEDERATION_OPTIONS`):
``structure_input`` appends a structure embedding to every node's features
(:func:`with_structure_input`), so any algorithm can train on ``[x ‖ s]``;
``small_split`` chooses how a client too small to stratify is split
(:func:`split_graph_client`), and each client records whether its split is
stratified (``GraphClient.stratified``).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import torch
from torch import Tensor
from torch_geometric.data import Data, Dataset

if TYPE_CHECKING:
    import pandas as pd

from fglcore.config import ConfigError, ExperimentConfig
from fglcore.data.partition import PARTITIONERS, cached_partition, partition_graphs, partitioner_names
from fglcore.data.splits import SPLITS, graph_split_indices, node_split_masks, resolve_split_seed, split_names


@dataclass
class NodeFederation:
    """A node-classification graph split among clients.

    ``data`` is the whole graph with the federation's global
    ``train_mask``/``val_mask``/``test_mask`` (all ``False`` on nodes no
    client holds); ``assignment[i]`` is node ``i``'s client (``-1``: none);
    ``clients[k]`` is client ``k``'s subgraph (see :func:`build_clients`).
    """

    dataset: str
    data: Data
    clients: list[Data]
    num_classes: int
    num_features: int
    assignment: Tensor
    task: str = "node"

    @property
    def num_clients(self) -> int:
        return len(self.clients)


@dataclass
class GraphClient:
    """One graph-classification client: ``graphs`` of TU dataset ``dataset``.

    ``train_idx``/``val_idx``/``test_idx`` index into ``graphs`` (a PyG
    dataset subset, so ``graphs[train_idx]`` is the training set, or a list
    of ``Data`` when the federation changed the graphs, e.g.
    ``structure_input``). ``stratified`` is ``False`` when the client's
    labels could not be split with stratification and a fallback was used
    (:func:`split_graph_client`).
    """

    name: str
    dataset: str
    graphs: Dataset
    train_idx: Tensor
    val_idx: Tensor
    test_idx: Tensor
    num_features: int
    num_classes: int
    stratified: bool = True


@dataclass
class GraphFederation:
    """Graph-classification clients, e.g. FedStar's ``chem`` group (one TU dataset each)."""

    name: str
    clients: list[GraphClient]
    task: str = "graph"

    @property
    def num_clients(self) -> int:
        return len(self.clients)


def build_clients(data: Data, assignment: Tensor, keep_cross_edges: bool = False) -> list[Data]:
    r"""One PyG ``Data`` per client ``0..assignment.max()``: the subgraph its nodes induce.

    Each client holds, in ascending global-id order, its nodes' ``x``, ``y``
    and every other node-level attribute of ``data`` (e.g. ``train_mask``,
    ``val_mask``, ``test_mask``), plus non-tensor attributes such as
    ``num_classes``; ``edge_index`` holds the intra-client edges only, in
    *local* ids ``0..n_k-1``; ``global_id[j]`` is the global id of local node
    ``j``; ``num_nodes = n_k``.

    With ``keep_cross_edges`` each client also carries its interconnections
    (FedStruct's :math:`\mathcal V_i^*, \mathcal E_i^*`, Aliakbari et al.,
    ICLR 2025, Sec. 4; the local-bias paper's row block
    :math:`[A_{k1}, \dots, A_{kK}]`, Zhang et al., Eq. 1):

    * ``cross_edge_index`` (``LongTensor[2, C_k]``, *global* ids): the edges
      that leave the client; row 0 is one of the client's nodes, row 1 a
      node held by another client. Edges to nodes no client holds (``-1``)
      are in neither. An undirected graph stores each cross edge in both
      directions, so it appears once in each of the two clients;
    * ``external_id`` (``LongTensor[m_k]``, ascending global ids): the
      external nodes, i.e. the other clients' nodes with an edge from this
      client, and ``external_owner`` (``LongTensor[m_k]``) their clients;
    * ``global_degree`` (``LongTensor[n_k]``): each node's degree counting
      intra- and cross-client edges (the degree a client knows of its own
      nodes; FedStruct's :math:`\tilde D^{[i]}` minus the self-loop).

    Only structure crosses the boundary: an external node's features and
    labels stay with its owner. See :func:`interconnection_summary` and
    :func:`cross_blocks` for what algorithms read from these fields.
    """
    n = data.num_nodes
    if assignment.shape != (n,):
        raise ValueError(f"assignment must have one entry per node ({n}), got shape {tuple(assignment.shape)}")
    assignment = assignment.to(torch.long).cpu()
    num_clients = int(assignment.max()) + 1 if n else 0
    members = _nodes_by_client(assignment, num_clients)
    local_id = torch.full((n,), -1, dtype=torch.long)
    for global_id in members:
        local_id[global_id] = torch.arange(global_id.numel())

    edge_index = data.edge_index.cpu()
    src, dst = assignment[edge_index[0]], assignment[edge_index[1]]
    intra = torch.nonzero((src == dst) & (src >= 0)).view(-1)
    intra = intra[torch.argsort(src[intra], stable=True)]  # grouped by client, edge order kept within
    edge_sizes = torch.bincount(src[intra], minlength=num_clients).tolist()
    edge_ids = torch.split(intra, edge_sizes)
    cross = _cross_edges_by_client(edge_index, assignment, num_clients) if keep_cross_edges else None

    clients = []
    for k, global_id in enumerate(members):
        client = Data()
        for key, value in data:
            if key in ("edge_index", "num_nodes"):
                continue
            if data.is_node_attr(key):
                client[key] = value.index_select(data.__cat_dim__(key, value), global_id)
            elif data.is_edge_attr(key):
                client[key] = value.index_select(data.__cat_dim__(key, value), edge_ids[k])
            else:
                client[key] = value
        client.edge_index = local_id[edge_index[:, edge_ids[k]]]
        client.global_id = global_id
        client.num_nodes = int(global_id.numel())
        if cross is not None:
            client.cross_edge_index = cross[k]
            client.external_id = torch.unique(cross[k][1])
            client.external_owner = assignment[client.external_id]
            intra_degree = torch.bincount(client.edge_index[0], minlength=client.num_nodes)
            cross_degree = torch.bincount(local_id[cross[k][0]], minlength=client.num_nodes)
            client.global_degree = intra_degree + cross_degree
        clients.append(client)
    return clients


def interconnection_summary(clients: Sequence[Data]) -> "pd.DataFrame":
    """How strongly the clients are interconnected: one row per client, then a ``total`` row.

    Columns: ``client``, ``nodes``, ``intra_edges`` and ``cross_edges``
    (directed entries of ``edge_index`` and ``cross_edge_index``, so an
    undirected edge counts twice inside a client and once in each of the two
    clients it joins), ``external_nodes`` and ``cross_share`` =
    ``cross / (intra + cross)``, the share of a client's edge ends that leave
    it. On the ``total`` row ``cross_share`` is the share of the graph's
    (held) edges that join two clients; ``external_nodes`` there counts
    (client, external node) pairs. Needs clients built with
    ``keep_cross_edges=True``.
    """
    import pandas as pd

    rows = []
    for k, client in enumerate(clients):
        if not hasattr(client, "cross_edge_index"):
            raise ValueError("interconnection_summary needs clients built with keep_cross_edges=True")
        intra, cross = int(client.edge_index.size(1)), int(client.cross_edge_index.size(1))
        rows.append({"client": str(k), "nodes": int(client.num_nodes), "intra_edges": intra, "cross_edges": cross,
                     "external_nodes": int(client.external_id.numel())})
    frame = pd.DataFrame(rows, columns=["client", "nodes", "intra_edges", "cross_edges", "external_nodes"])
    total = frame.drop(columns="client").sum().to_dict()
    frame = pd.concat([frame, pd.DataFrame([{"client": "total", **total}])], ignore_index=True)
    ends = frame["intra_edges"] + frame["cross_edges"]
    frame["cross_share"] = (frame["cross_edges"] / ends.where(ends > 0)).fillna(0.0)
    return frame


def cross_blocks(client: Data) -> dict[int, Tensor]:
    r"""The client's cross edges grouped by the owner of their far end: ``{j: LongTensor[2, e_kj]}``.

    Row 0 holds the client's *local* ids, row 1 the far end's *global* id;
    block ``j`` is the client's share of the adjacency block :math:`A_{kj}`
    (local-bias paper, Eq. 1) or :math:`\tilde A^{[i]}_j` (FedStruct, App. D),
    which both ends know. Owners appear in ascending order; clients without
    an edge to ``k`` are absent. Needs ``keep_cross_edges=True``.
    """
    if not hasattr(client, "cross_edge_index"):
        raise ValueError("cross_blocks needs a client built with keep_cross_edges=True")
    src, dst = client.cross_edge_index
    local = torch.searchsorted(client.global_id, src)
    owner = client.external_owner[torch.searchsorted(client.external_id, dst)]
    return {int(j): torch.stack([local[owner == j], dst[owner == j]]) for j in torch.unique(owner).tolist()}


def build_federation(config: ExperimentConfig, keep_cross_edges: bool = False) -> NodeFederation | GraphFederation:
    """The federation ``config`` describes: node-level or graph-level, by the dataset's task."""
    from fglcore.data.datasets import dataset_info

    if dataset_info(config.dataset).task == "graph":
        if keep_cross_edges:
            raise ValueError("keep_cross_edges applies to node-level federations only")
        return build_graph_federation(config)
    return build_node_federation(config, keep_cross_edges=keep_cross_edges)


def build_node_federation(config: ExperimentConfig, keep_cross_edges: bool = False) -> NodeFederation:
    """Load the graph, partition it (cached), draw the split and cut the clients."""
    from fglcore.data.datasets import load_node_data

    split = SPLITS.get(config.split)
    if split.task != "node":
        raise ConfigError(f"split: {config.split!r} is a graph-level split; node-level splits: "
                          f"{', '.join(split_names('node'))}")
    partitioner = PARTITIONERS.get(config.partition)
    if partitioner.task != "node":
        raise ConfigError(f"partition: {config.partition!r} is a graph-level partitioner; node-level ones: "
                          f"{', '.join(partitioner_names('node'))}")
    options = partitioner.validate_options(config.partition_options)

    data = load_node_data(config.dataset, planetoid_split=split.planetoid_split)
    assignment = cached_partition(data, config.partition, config.num_clients, config.effective_partition_seed,
                                  **options)
    seed = resolve_split_seed(config.split, config.split_seed, config.seed)
    train, val, test = node_split_masks(config.split, data, assignment, config.split_ratios, seed)

    data = copy.copy(data)  # shallow: the loaded tensors are shared, the masks are this federation's
    data.train_mask, data.val_mask, data.test_mask = train, val, test
    clients = build_clients(data, assignment, keep_cross_edges=keep_cross_edges)
    return NodeFederation(dataset=config.dataset, data=data, clients=clients, num_classes=_num_classes(data),
                          num_features=int(data.num_features), assignment=assignment)


def build_graph_federation(config: ExperimentConfig) -> GraphFederation:
    """Partition graph dataset (or FedStar group) ``config.dataset`` and split every client's graphs."""
    from fglcore.data.datasets import dataset_info, load_graph_dataset

    split = SPLITS.get(config.split)
    if split.task != "graph":
        raise ConfigError(f"split: {config.split!r} is a node-level split; graph datasets use: "
                          f"{', '.join(split_names('graph'))}")
    options = PARTITIONERS.get(config.partition).validate_options(config.partition_options)
    shards = partition_graphs(config.dataset, config.partition, config.num_clients,
                              config.effective_partition_seed, **config.partition_options)
    seed = resolve_split_seed(config.split, config.split_seed, config.seed)
    datasets = {name: load_graph_dataset(name) for name in dict.fromkeys(s.dataset for s in shards)}
    repeated = len(datasets) < len(shards)
    structure = options.get("structure_input", "")
    clients = []
    for k, shard in enumerate(shards):
        dataset = datasets[shard.dataset]
        labels = dataset.y.view(-1)[shard.indices]
        train_idx, val_idx, test_idx, stratified = split_graph_client(
            labels, config.split_ratios, seed, options.get("small_split", "per_class"))
        graphs = dataset[shard.indices]
        num_features = int(dataset.num_features)
        if structure:
            graphs, width = with_structure_input(graphs, structure)
            num_features += width
        clients.append(GraphClient(
            name=f"{k}-{dataset_info(shard.dataset).name}" if repeated else dataset_info(shard.dataset).name,
            dataset=shard.dataset,
            graphs=graphs, train_idx=train_idx, val_idx=val_idx, test_idx=test_idx,
            num_features=num_features, num_classes=int(dataset.num_classes), stratified=stratified))
    return GraphFederation(name=config.dataset, clients=clients)


SMALL_SPLITS = ("per_class", "random")


def split_graph_client(labels: Tensor, ratios: Sequence[float], seed: int,
                       small_split: str = "per_class") -> tuple[Tensor, Tensor, Tensor, bool]:
    """One client's graph split and whether it is stratified.

    Tries FedStar's stratified scikit-learn split
    (:func:`~fglcore.data.splits.graph_split_indices`). Where scikit-learn
    cannot stratify -- a class with a single graph, or fewer held-out graphs
    than classes, as in FedStar's tiny Fig. 4 shards (MUTAG / 12 is 15
    graphs) -- ``small_split`` decides: ``"per_class"`` keeps
    :func:`graph_split_indices`' per-class fallback; ``"random"`` makes the
    same two scikit-learn cuts without ``stratify`` (FedStar digest A14). A
    shard too small even for that falls back to the per-class rule. The
    returned flag is ``False`` whenever a fallback was used.
    """
    from sklearn.model_selection import train_test_split

    if small_split not in SMALL_SPLITS:
        raise ConfigError(f"partition_options.small_split: {small_split!r} is not accepted; "
                          f"accepted: {', '.join(SMALL_SPLITS)}")
    if min(float(r) for r in ratios) <= 1e-9:  # an empty split: nothing to stratify
        return (*graph_split_indices(labels, ratios, seed), True)  # type: ignore[return-value]
    y = labels.view(-1).cpu().numpy()
    stratified = _sklearn_split(train_test_split, y, ratios, seed, stratify=True) is not None
    if not stratified and small_split == "random":
        parts = _sklearn_split(train_test_split, y, ratios, seed, stratify=False)
        if parts is not None:
            return (*(torch.as_tensor(p, dtype=torch.long) for p in parts), False)  # type: ignore[return-value]
    return (*graph_split_indices(labels, ratios, seed), stratified)  # type: ignore[return-value]


def _sklearn_split(train_test_split, y, ratios: Sequence[float], seed: int, *, stratify: bool):
    """FedStar's two scikit-learn cuts (held-out share, then val/test); ``None`` where scikit-learn refuses."""
    import numpy as np

    r_train, r_val, r_test = (float(r) for r in ratios)
    held = r_val + r_test
    idx = np.arange(len(y))
    try:
        train, rest = train_test_split(idx, test_size=held, stratify=y if stratify else None, shuffle=True,
                                       random_state=seed)
        val, test = train_test_split(rest, train_size=r_val / held, test_size=r_test / held,
                                     stratify=y[rest] if stratify else None, shuffle=True, random_state=seed)
    except ValueError:
        return None
    return train, val, test


def with_structure_input(graphs, encoding: str) -> tuple[list[Data], int]:
    """Copies of ``graphs`` whose features are ``[x ‖ s]``, and the width of ``s``.

    ``s`` is FedStar's structure embedding ``encoding`` (Tan et al., AAAI
    2023, Eqs. 5-7; :class:`~fglcore.data.structure.StructureEncoding`,
    computed and cached by :func:`~fglcore.data.structure.structure_encodings`).
    Table 2's rows without decoupling feed a plain GIN this input ("we ...
    concatenate the structure embedding with the raw feature for once";
    digest reading A8). The originals are left untouched.
    """
    from fglcore.data.structure import StructureEncoding, structure_encodings

    spec = StructureEncoding(kind=encoding)
    graphs = [graphs[i] for i in range(len(graphs))]
    out = []
    for graph, s in zip(graphs, structure_encodings(graphs, spec)):
        graph = copy.copy(graph)
        x = graph.x if graph.x is not None else torch.empty(s.shape[0], 0)
        graph.x = torch.cat([x.to(s.dtype), s], dim=1)
        out.append(graph)
    return out, spec.width


def _nodes_by_client(assignment: Tensor, num_clients: int) -> list[Tensor]:
    """Each client's global node ids, ascending."""
    order = torch.argsort(assignment, stable=True)
    sizes = torch.bincount(assignment[assignment >= 0], minlength=num_clients).tolist()
    kept = order[assignment[order] >= 0]
    return list(torch.split(kept, sizes))


def _cross_edges_by_client(edge_index: Tensor, assignment: Tensor, num_clients: int) -> list[Tensor]:
    """Each client's outgoing edges to other clients' nodes, global ids, in ``edge_index`` order."""
    src, dst = assignment[edge_index[0]], assignment[edge_index[1]]
    crossing = (src >= 0) & (dst >= 0) & (src != dst)
    edges, owners = edge_index[:, crossing], src[crossing]
    order = torch.argsort(owners, stable=True)
    sizes = torch.bincount(owners, minlength=num_clients).tolist()
    return list(torch.split(edges[:, order], sizes, dim=1))


def _num_classes(data: Data) -> int:
    num_classes = getattr(data, "num_classes", None)
    return int(num_classes) if num_classes is not None else int(data.y.max()) + 1

