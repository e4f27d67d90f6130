"""Named, seeded, cached partitioners: how a benchmark is cut into clients.

Node level (subgraph FL): a partitioner maps one graph to an *assignment*, a
``LongTensor[num_nodes]`` holding each node's client id in
``0..num_clients-1``, or ``-1`` for a node the method leaves out (only
``louvain_largest`` and ``files`` do). :func:`partition_nodes` runs one,
:func:`cached_partition` stores the result under
``cache_root()/partitions/<key>.pt`` where ``key`` is the sha256 of the method,
every option (defaults filled in), ``num_clients``, the seed and
:func:`~fglcore.data.datasets.data_checksum` of the graph.

Graph level (graph FL): :func:`partition_graphs` returns one
:class:`GraphShard` (a TU dataset name and graph indices) per client.

Registered partitioners (``PARTITIONERS.names()``), with the papers that use them:

* ``louvain`` (node): Louvain communities packed into K size-balanced clients
  -- FedSage+, FS-G, OpenFGL, O-pFGL's inner step; FedStruct with ``cap="plus"``;
* ``louvain_largest`` (node): the K largest Louvain communities as clients,
  the rest dropped -- FedSpray;
* ``louvain_plus`` (node): 100 packed Louvain groups, KMeans on their label
  histograms -- O-pFGL;
* ``metis_plus`` (node): 100 METIS parts, KMeans on their label histograms -- O-pFGL;
* ``metis`` (node): METIS into K parts -- OpenFGL, FedStruct;
* ``random`` (node): uniform node assignment -- FedStruct; equal sizes: the
  local-bias paper;
* ``kmeans`` (node): KMeans on node features, size-capped -- FedStruct;
* ``label_dirichlet`` (node): per-class Dirichlet(alpha) shares -- FedGCN,
  OpenFGL ``label_skew``;
* ``files`` (node): explicit node lists, one file per client -- FedSpray's
  official partitions;
* ``by_dataset`` (graph): one TU dataset per client -- FedStar; options
  ``members`` / ``exclude`` pick some datasets of a group (e.g. without COLLAB,
  which is not available offline);
* ``dataset_chunks`` (graph): every TU dataset of a group cut into
  ``num_clients / len(members)`` shards, one client each -- FedStar's
  many-clients experiment (Fig. 4; GCFL/FedStar ``_randChunk``);
* ``label_skew`` (graph): one TU dataset split by Dirichlet(alpha) over graph
  labels -- OpenFGL.

Graph partitioners also accept the *federation options*
(:data:`GRAPH_FEDERATION_OPTIONS`), which the federation applies to the shards
rather than the partitioner: ``structure_input`` (append a structure embedding
of :mod:`fglcore.data.structure` to every node's features, FedStar Table 2's
rows without decoupling) and ``small_split`` (how a shard too small for a
stratified split is split; see :func:`fglcore.data.federation.split_graph_client`).

Community detection uses networkx ``louvain_communities`` (resolution 1,
seeded) and METIS uses ``pymetis`` (seeded): the official codes use
python-louvain / scikit-network and unseeded METIS, so their exact partitions
cannot be re-created. The packing and clustering steps are ported from the
official code; each function's docstring names its source and any deliberate
difference.
"""
from __future__ import annotations

import difflib
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple, Sequence

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data

from fglcore.config import ConfigError, check_choice, check_type
from fglcore.files import json_key, save_atomic
from fglcore.paths import cache_root, data_root, mirror_root
from fglcore.registry import Registry

TASKS = ("node", "graph")
DROPPED = -1  # assignment value of a node that belongs to no client
PARTITION_CACHE_VERSION = 1  # bump when a partitioner's output changes for the same inputs


@dataclass(frozen=True)
class PartitionerSpec:
    """A registered partitioner.

    ``fn`` is ``fn(data, num_clients, seed, **options) -> LongTensor[num_nodes]``
    for ``task="node"`` and ``fn(name, num_clients, seed, **options) ->
    list[GraphShard]`` for ``task="graph"``. ``defaults`` lists every option
    with its default (its type is the accepted type); ``choices`` restricts
    string options. ``cacheable=False`` skips the on-disk cache (``files``
    reads its input anyway).
    """

    name: str
    task: str
    fn: Callable[..., Any] = field(repr=False)
    defaults: Mapping[str, Any]
    description: str
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    cacheable: bool = True
    client_limit: Callable[[int, Mapping[str, Any]], int] | None = field(default=None, repr=False)

    def max_clients(self, size: Any, options: Mapping[str, Any] | None = None) -> int | None:
        """The most clients this partitioner can form with ``options`` (merged over :attr:`defaults`).

        Node partitioners: ``size`` is the graph's number of nodes, and the answer ``client_limit`` where it is
        declared, else one node per client. Graph partitioners: ``size`` is the dataset (name or path), and
        the answer ``client_limit``'s, ``None`` where it cannot be known before the data loads.
        """
        options = {**self.defaults, **(options or {})}
        if self.task == "graph":
            return None if self.client_limit is None else self.client_limit(size, options)
        if self.client_limit is None:
            return size
        return min(size, self.client_limit(size, options))

    def validate_options(self, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``defaults`` updated by ``options``; unknown keys, wrong types or values raise :class:`ConfigError`."""
        options = dict(options or {})
        for key in options:
            if key not in self.defaults:
                close = difflib.get_close_matches(str(key), list(self.defaults), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                accepted = ", ".join(sorted(self.defaults)) or "none"
                raise ConfigError(f"partition_options: unknown option {key!r} for partitioner {self.name!r}{hint}; "
                                  f"accepted: {accepted}")
        merged = dict(self.defaults)
        for key, value in options.items():
            label = f"partition_options.{key}"
            merged[key] = check_type(label, value, type(self.defaults[key]))
            if key in self.choices:
                check_choice(label, merged[key], list(self.choices[key]))
        return merged


PARTITIONERS: Registry[PartitionerSpec] = Registry("partitioner")


def register_partitioner(name: str, task: str, defaults: Mapping[str, Any], description: str, *,
                         choices: Mapping[str, tuple[str, ...]] | None = None,
                         cacheable: bool = True, client_limit: Callable[[int, Mapping[str, Any]], int] | None = None
                         ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering ``fn`` as a :class:`PartitionerSpec` in :data:`PARTITIONERS`.

    ``client_limit(num_nodes, options)`` is the most clients it can form (default: ``num_nodes``), checked by
    :meth:`fglcore.config.ExperimentConfig.validate` before any data loads."""
    if task not in TASKS:
        raise ValueError(f"partitioner {name!r}: task must be one of {TASKS}, got {task!r}")

    def add(fn: Callable[..., Any]) -> Callable[..., Any]:
        PARTITIONERS.register(name, PartitionerSpec(name, task, fn, dict(defaults), description,
                                                    dict(choices or {}), cacheable, client_limit))
        return fn

    return add


GRAPH_FEDERATION_OPTIONS: dict[str, Any] = {"structure_input": "", "small_split": "per_class"}
"""Options of every graph partitioner that the federation applies (:mod:`fglcore.data.federation`).

``structure_input``: ``""`` (none) or a structure encoding (``"rw_dg"``,
``"rw"``, ``"dg"``, ``"ones"``) appended to the node features.
``small_split``: ``"per_class"`` (the per-class rule of
:func:`~fglcore.data.splits.graph_split_indices`) or ``"random"`` (an
unstratified split; FedStar digest A14) where a shard cannot be stratified.
"""
GRAPH_FEDERATION_CHOICES: dict[str, tuple[str, ...]] = {
    "structure_input": ("", "rw_dg", "rw", "dg", "ones"),
    "small_split": ("per_class", "random"),
}


def register_graph_partitioner(name: str, defaults: Mapping[str, Any], description: str, *,
                               choices: Mapping[str, tuple[str, ...]] | None = None,
                               client_limit: Callable[[str, Mapping[str, Any]], int | None] | None = None
                               ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """:func:`register_partitioner` for a graph partitioner, adding :data:`GRAPH_FEDERATION_OPTIONS`.

    ``client_limit(dataset, options)`` is the most clients it can form from ``dataset`` (``None``: unknown
    before loading), checked by :meth:`fglcore.config.ExperimentConfig.validate`."""
    return register_partitioner(name, "graph", {**defaults, **GRAPH_FEDERATION_OPTIONS}, description,
                                choices={**(choices or {}), **GRAPH_FEDERATION_CHOICES}, client_limit=client_limit)


def _chunks_limit(name: str, options: Mapping[str, Any]) -> int | None:
    """``dataset_chunks``: every chosen dataset cut into as many shards, none empty (graph counts known up front)."""
    from fglcore.data.datasets import GRAPH_COUNTS

    chosen = select_members(name, options["members"], options["exclude"])
    counts = [GRAPH_COUNTS.get(member) for member in chosen]
    return None if None in counts else len(chosen) * min(counts)


class GraphShard(NamedTuple):
    """The graphs one graph-level client holds: ``indices`` into TU dataset ``dataset``."""

    dataset: str
    indices: Tensor


# --------------------------------------------------------------------------- public API


def partition_nodes(data: Data, method: str, num_clients: int, seed: int, **options: Any) -> Tensor:
    """Client id per node (``-1`` for nodes the method drops), computed afresh.

    Raises :class:`ConfigError` for a bad option or ``num_clients`` and
    :class:`ValueError` when the result leaves a client without nodes.
    """
    spec = _node_spec(method)
    merged = spec.validate_options(options)
    _check_num_clients(num_clients, data.num_nodes, method)
    _check_seed(seed)
    assignment = spec.fn(data, num_clients, seed, **merged)
    check_assignment(assignment, data.num_nodes, num_clients, method)
    return assignment


def cached_partition(data: Data, method: str, num_clients: int, seed: int, **options: Any) -> Tensor:
    """:func:`partition_nodes`, stored once under :func:`partition_cache_path` and read back afterwards."""
    spec = _node_spec(method)
    merged = spec.validate_options(options)
    _check_num_clients(num_clients, data.num_nodes, method)
    _check_seed(seed)
    if not spec.cacheable:
        return partition_nodes(data, method, num_clients, seed, **merged)
    path = partition_cache_path(data, method, num_clients, seed, **merged)
    if path.is_file():
        try:
            assignment = torch.load(path, weights_only=True)
            check_assignment(assignment, data.num_nodes, num_clients, method)
            return assignment
        except (OSError, EOFError, RuntimeError, ValueError, pickle.UnpicklingError):
            pass  # an unreadable or damaged file is recomputed and replaced
    assignment = partition_nodes(data, method, num_clients, seed, **merged)
    save_atomic(assignment, path)
    return assignment


def partition_cache_key(data: Data, method: str, num_clients: int, seed: int, **options: Any) -> str:
    """sha256 (hex) of the method, every option (defaults filled in), ``num_clients``, seed and graph checksum."""
    from fglcore.data.datasets import data_checksum

    merged = PARTITIONERS.get(method).validate_options(options)
    payload = {"version": PARTITION_CACHE_VERSION, "method": method, "num_clients": int(num_clients),
               "seed": int(seed), "options": merged, "data": data_checksum(data)}
    return json_key(payload)


def partition_cache_path(data: Data, method: str, num_clients: int, seed: int, **options: Any) -> Path:
    """``cache_root()/partitions/<key>.pt``."""
    return cache_root() / "partitions" / f"{partition_cache_key(data, method, num_clients, seed, **options)}.pt"


def partition_graphs(name: str, method: str, num_clients: int, seed: int, **options: Any) -> list[GraphShard]:
    """One :class:`GraphShard` per client for graph dataset (or FedStar group) ``name``."""
    spec = PARTITIONERS.get(method)
    if spec.task != "graph":
        raise ConfigError(f"partition: {method!r} partitions a node-level graph; graph-level partitioners: "
                          f"{', '.join(partitioner_names('graph'))}")
    merged = spec.validate_options(options)
    if isinstance(num_clients, bool) or not isinstance(num_clients, int) or num_clients < 1:
        raise ConfigError(f"num_clients: must be an integer >= 1, got {num_clients!r}")
    _check_seed(seed)
    own = {k: v for k, v in merged.items() if k not in GRAPH_FEDERATION_OPTIONS}
    shards = spec.fn(name, num_clients, seed, **own)
    for k, shard in enumerate(shards):
        if shard.indices.numel() == 0:
            raise ValueError(f"partitioner {method!r} left client {k} of {name!r} without graphs")
    return shards


def partitioner_names(task: str | None = None) -> list[str]:
    """Registered partitioners, optionally only those of one task."""
    return [n for n in PARTITIONERS.names() if task is None or PARTITIONERS.get(n).task == task]


def check_assignment(assignment: Tensor, num_nodes: int, num_clients: int, method: str = "") -> None:
    """An assignment is a ``LongTensor[num_nodes]`` of ids in ``-1..num_clients-1`` with no empty client."""
    what = f"partitioner {method!r}" if method else "assignment"
    if not isinstance(assignment, Tensor) or assignment.dtype != torch.long or assignment.shape != (num_nodes,):
        raise ValueError(f"{what}: expected a LongTensor of shape ({num_nodes},), got "
                         f"{getattr(assignment, 'dtype', type(assignment))} {tuple(getattr(assignment, 'shape', ()))}")
    if assignment.numel() and (assignment.min() < DROPPED or assignment.max() >= num_clients):
        raise ValueError(f"{what}: client ids must lie in -1..{num_clients - 1}")
    sizes = client_sizes(assignment, num_clients)
    empty = [k for k, size in enumerate(sizes.tolist()) if size == 0]
    if empty:
        raise ValueError(f"{what} left client(s) {empty} without nodes ({num_clients} clients, {num_nodes} nodes); "
                         f"use fewer clients or other partition_options")


def client_sizes(assignment: Tensor, num_clients: int) -> Tensor:
    """Number of nodes per client (dropped nodes not counted)."""
    kept = assignment[assignment >= 0]
    return torch.bincount(kept, minlength=num_clients)


# --------------------------------------------------------------------------- building blocks


def undirected_simple_edges(data: Data) -> np.ndarray:
    """Each undirected edge once as ``(u, v)`` with ``u < v``, self-loops removed, sorted: ``int64[E, 2]``."""
    edge_index = data.edge_index.cpu().numpy()
    u, v = np.minimum(edge_index[0], edge_index[1]), np.maximum(edge_index[0], edge_index[1])
    keep = u != v
    pairs = np.unique(np.stack([u[keep], v[keep]], axis=1), axis=0)
    return pairs.reshape(-1, 2).astype(np.int64)


def csr_adjacency(data: Data) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric adjacency without self-loops in CSR form ``(indptr, indices)``, as METIS wants it."""
    pairs = undirected_simple_edges(data)
    n = data.num_nodes
    rows = np.concatenate([pairs[:, 0], pairs[:, 1]])
    cols = np.concatenate([pairs[:, 1], pairs[:, 0]])
    order = np.lexsort((cols, rows))
    rows, cols = rows[order], cols[order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(indptr, rows + 1, 1)
    return np.cumsum(indptr), cols


def louvain_communities(data: Data, seed: int, resolution: float = 1.0) -> list[list[int]]:
    """Louvain communities (Blondel et al. 2008) of the undirected graph, via networkx.

    Each community is a sorted node list; communities are ordered by their
    smallest node id, which is the order python-louvain's renumbered
    communities appear in when nodes are visited in id order (the order the
    FedSage code's ``groups`` list takes). Isolated nodes are singletons.
    """
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(range(data.num_nodes))
    graph.add_edges_from(undirected_simple_edges(data).tolist())
    communities = nx.community.louvain_communities(graph, resolution=resolution, seed=seed)
    return sorted((sorted(c) for c in communities), key=lambda c: c[0])


def metis_parts(data: Data, num_parts: int, seed: int) -> np.ndarray:
    """METIS k-way partition (``pymetis.part_graph``) with METIS' own seed option set to ``seed``.

    The binding is ``pymetis`` (a dependency in ``pyproject.toml``); PyG's
    ``ClusterData`` would need ``torch-sparse`` or ``pyg-lib`` built with
    METIS, which the CPU environment does not have. Without ``pymetis`` the
    METIS partitioners stop with an ``ImportError`` saying how to install it.
    """
    try:
        import pymetis
    except ImportError as err:  # pragma: no cover - pymetis is a pinned dependency
        raise ImportError("the METIS partitioners (metis, metis_plus) need the 'pymetis' package: "
                          "pip install pymetis (it ships wheels for Linux, macOS and Windows)") from err

    indptr, indices = csr_adjacency(data)
    result = pymetis.part_graph(num_parts, pymetis.CSRAdjacency(indptr, indices),
                                options=pymetis.Options(seed=int(seed)))
    return np.asarray(result.vertex_part, dtype=np.int64)


def split_large_groups(groups: Sequence[Sequence[int]], max_len: int) -> list[list[int]]:
    """Cut every group longer than ``max_len`` into pieces of ``max_len`` (FedSage's chopping step).

    A long group keeps its first ``max_len`` nodes and its remainder is
    appended as a new group, which is cut again when its turn comes -- the
    same order as the ``groups.append(new_grp_i)`` loop of FedSage's
    ``louvain_graph_cut`` and FedStruct's ``make_groups_smaller_than_max``.
    """
    if max_len < 1:
        raise ValueError(f"the group size cap must be >= 1, got {max_len}")
    out = [list(g) for g in groups]
    i = 0
    while i < len(out):
        if len(out[i]) > max_len:
            out.append(out[i][max_len:])
            out[i] = out[i][:max_len]
        i += 1
    return out


def pack_groups_fedsage(groups: Sequence[Sequence[int]], num_nodes: int, num_owners: int,
                        delta: int) -> list[list[int]]:
    """Pack node groups into ``num_owners`` owners, FedSage's way.

    Port of ``louvain_graph_cut`` in FedSage+ (Zhang et al., NeurIPS 2021;
    ``zkhku/fedsage`` ``src/utils/louvain_networkx.py``) as hardened in
    OpenFGL (``openfgl/data/simulation.py``, ``subgraph_fl_louvain``) and
    O-pFGL (``util/base_data_util.py``, ``louvain_partition``). Groups are
    taken largest first (a stable sort, ties in input order). Owners holding
    at least ``num_nodes // num_owners`` nodes are closed while two or more
    are open. From the current owner, going round the open owners, the group
    goes to the first owner whose size plus the group's stays below
    ``num_nodes // num_owners + delta``; the current owner does not advance
    after an assignment.

    When no open owner has room, the references spin 1000 times and then pick
    an owner by a loop that compares the wrong owner (``owner_list[owner_ind]``
    instead of ``owner_list[i]``); FedSage's original loops forever. Here the
    group goes to the smallest open owner, which is what that loop means to do
    (and what FedStruct's paper describes).
    """
    target = num_nodes // num_owners
    owners: list[list[int]] = [[] for _ in range(num_owners)]
    open_owners = list(range(num_owners))
    pos = 0
    for group in sorted(groups, key=len, reverse=True):
        while len(open_owners) >= 2 and len(owners[open_owners[pos]]) >= target:
            open_owners.pop(pos)
            pos %= len(open_owners)
        for _ in range(len(open_owners)):
            if len(owners[open_owners[pos]]) + len(group) < target + delta:
                break
            pos = (pos + 1) % len(open_owners)
        else:
            pos = min(range(len(open_owners)), key=lambda i: len(owners[open_owners[i]]))
        owners[open_owners[pos]].extend(group)
    return owners


def pack_groups_fedstruct(groups: Sequence[Sequence[int]], num_nodes: int, num_owners: int,
                          delta: int) -> list[list[int]]:
    """Pack node groups into ``num_owners`` owners, FedStruct's way.

    Port of ``assign_nodes_to_subgraphs`` in FedStruct (Aliakbari et al.,
    ICLR 2025; ``JavadAliakbari/FedStruct`` ``src/utils/graph_partitioning.py``).
    Groups are taken largest first; cycling through owners from the current
    one, an owner is skipped when it already holds ``num_nodes // num_owners``
    nodes or the group would take it above ``num_nodes // num_owners + delta``.
    After ``num_owners`` skips the official code *returns*, silently dropping
    this group and every later one; here the group goes to the smallest owner
    instead, so no node is lost (the paper's App. F assigns every community).
    """
    target = num_nodes // num_owners
    owners: list[list[int]] = [[] for _ in range(num_owners)]
    pos = 0
    for group in sorted(groups, key=len, reverse=True):
        for _ in range(num_owners):
            size = len(owners[pos])
            if size + len(group) <= target + delta and size < target:
                break
            pos = (pos + 1) % num_owners
        else:
            pos = min(range(num_owners), key=lambda i: len(owners[i]))
        owners[pos].extend(group)
    return owners


def cap_and_pack_fedstruct(groups: Sequence[Sequence[int]], num_nodes: int, num_owners: int,
                           delta: int) -> list[list[int]]:
    """FedStruct's size cap and packing: groups cut at ``num_nodes // num_owners + delta``
    (:func:`split_large_groups`) and packed by :func:`pack_groups_fedstruct` (its code, App. F).

    When that leaves an owner empty, the groups are cut at ``num_nodes // num_owners`` instead, the cap of the
    paper's text, and packed again. This happens when the groups are few and large (K-means clusters of
    bag-of-words features, many clients on a small graph): owners then take one piece of up to
    ``N // K + delta`` nodes each and the last ones get none (Cora, K-means, 20 clients: 18 pieces of 155
    nodes), where FedStruct's code would train clients without nodes. A partition that fills every owner is
    the code's, unchanged.
    """
    owners = pack_groups_fedstruct(split_large_groups(groups, num_nodes // num_owners + delta), num_nodes,
                                   num_owners, delta)
    if all(owners) or delta == 0:
        return owners
    return pack_groups_fedstruct(split_large_groups(groups, max(num_nodes // num_owners, 1)), num_nodes, num_owners,
                                 delta)


def groups_to_assignment(groups: Sequence[Sequence[int]], num_nodes: int) -> Tensor:
    """Client id per node from per-client node lists; nodes in no list get ``-1``."""
    assignment = torch.full((num_nodes,), DROPPED, dtype=torch.long)
    for k, nodes in enumerate(groups):
        if len(nodes):
            index = torch.as_tensor(np.asarray(nodes, dtype=np.int64))
            if (assignment[index] != DROPPED).any():
                raise ValueError(f"node(s) assigned twice while building client {k}")
            assignment[index] = k
    return assignment


def label_histograms(groups: Sequence[Sequence[int]], y: Tensor, num_classes: int) -> np.ndarray:
    """Row-normalised label histogram of each group: ``float64[len(groups), num_classes]``."""
    labels = y.view(-1).cpu().numpy()
    hist = np.zeros((len(groups), num_classes), dtype=np.float64)
    for i, nodes in enumerate(groups):
        hist[i] = np.bincount(labels[np.asarray(nodes, dtype=np.int64)], minlength=num_classes)[:num_classes]
    return hist / np.maximum(hist.sum(axis=1, keepdims=True), 1.0)


def cluster_groups_by_labels(groups: Sequence[Sequence[int]], data: Data, num_clients: int, seed: int,
                             n_init: int) -> Tensor:
    """O-pFGL's "+" step: KMeans(``num_clients``) on the groups' normalised label histograms.

    Each KMeans cluster becomes one client, the union of its groups (client id
    = cluster label). sklearn's ``KMeans`` is seeded with ``random_state=seed``;
    O-pFGL's code leaves it unseeded with sklearn 1.2's default ``n_init=10``.
    """
    from sklearn.cluster import KMeans

    groups = [g for g in groups if len(g)]
    if len(groups) < num_clients:
        raise ValueError(f"only {len(groups)} non-empty groups to cluster into {num_clients} clients; "
                         f"raise partition_options.num_communities or use fewer clients")
    hist = label_histograms(groups, data.y, _num_classes(data))
    labels = KMeans(n_clusters=num_clients, random_state=seed, n_init=n_init).fit(hist).labels_
    clients: list[list[int]] = [[] for _ in range(num_clients)]
    for group, label in zip(groups, labels.tolist()):
        clients[label].extend(group)
    return groups_to_assignment(clients, data.num_nodes)


def dirichlet_label_split(labels: np.ndarray, num_clients: int, alpha: float, min_size: int, max_tries: int,
                          rng: np.random.Generator) -> list[np.ndarray]:
    """Per-class Dirichlet split of items over clients (FedGCN / OpenFGL ``label_skew``).

    For each class ``c`` in turn: shuffle its items, draw proportions
    ``p ~ Dirichlet(alpha * 1_K)``, zero the share of every client already
    holding ``>= N / K`` items, renormalise, and cut the shuffled items at
    ``floor(cumsum(p) * n_c)``. The whole draw is repeated until every client
    holds at least ``min_size`` items, at most ``max_tries`` times (FedGCN's
    ``label_dirichlet_partition``; OpenFGL's ``subgraph_fl_label_skew`` and
    ``graph_fl_label_skew`` with ``least_samples`` and ``dirichlet_try_cnt``).
    Returns each client's item indices, sorted.
    """
    labels = np.asarray(labels).reshape(-1)
    n = len(labels)
    classes = np.unique(labels[labels >= 0])
    for _ in range(max_tries):
        clients: list[list[int]] = [[] for _ in range(num_clients)]
        for c in classes:
            items = rng.permutation(np.flatnonzero(labels == c))
            p = rng.dirichlet(np.full(num_clients, alpha))
            p = p * np.array([len(items_k) < n / num_clients for items_k in clients])
            p = p / p.sum()
            cuts = (np.cumsum(p) * len(items)).astype(int)[:-1]
            for k, part in enumerate(np.split(items, cuts)):
                clients[k].extend(part.tolist())
        if min(len(items_k) for items_k in clients) >= min_size:
            return [np.sort(np.asarray(items_k, dtype=np.int64)) for items_k in clients]
    raise ValueError(f"label Dirichlet split: no draw in {max_tries} tries gave every one of {num_clients} clients "
                     f"at least {min_size} items (alpha={alpha}, {n} items); raise alpha or max_tries, "
                     f"lower min_size or use fewer clients")


def resolve_partition_folder(path: str) -> Path:
    """A folder of partition files: absolute, or relative to ``FGL_DATA_MIRROR`` or ``FGL_DATA`` (in that order)."""
    folder = Path(path).expanduser()
    if folder.is_absolute():
        if folder.is_dir():
            return folder
        raise ConfigError(f"partition_options.path: folder {folder} does not exist")
    tried = []
    for root in (mirror_root(), data_root()):
        if root is None:
            continue
        tried.append(root / folder)
        if (root / folder).is_dir():
            return root / folder
    where = ", ".join(str(p) for p in tried) or "nowhere (FGL_DATA_MIRROR and FGL_DATA unset)"
    raise ConfigError(f"partition_options.path: relative folder {path!r} found neither in the mirror "
                      f"(FGL_DATA_MIRROR) nor in the data root (FGL_DATA); looked at {where}")


def read_node_list(path: Path, num_nodes: int) -> np.ndarray:
    """Global node ids of one partition file: one id per line, written as an integer or a float (``12.0``)."""
    text = path.read_text().split()
    try:
        values = np.asarray([float(token) for token in text], dtype=np.float64)
    except ValueError as exc:
        raise ValueError(f"{path}: every line must be a node id; {exc}") from None
    ids = values.astype(np.int64)
    if (ids != values).any():
        raise ValueError(f"{path}: node ids must be whole numbers, found {values[ids != values][:3].tolist()}")
    if len(ids) and (ids.min() < 0 or ids.max() >= num_nodes):
        raise ValueError(f"{path}: node ids must lie in 0..{num_nodes - 1}, found {ids.min()}..{ids.max()}")
    if len(np.unique(ids)) != len(ids):
        raise ValueError(f"{path}: a node id is listed twice")
    return ids


# --------------------------------------------------------------------------- node-level partitioners


@register_partitioner(
    "louvain", "node", {"delta": 20, "resolution": 1.0, "cap": "minus"},
    "Louvain communities, chopped at a size cap and packed into K clients (FedSage+ packing)",
    choices={"cap": ("minus", "plus")},
    client_limit=lambda n, o: n // (o["delta"] + 1) if o["cap"] == "minus" else n)  # cap N // K - delta >= 1
def louvain_partition(data: Data, num_clients: int, seed: int, *, delta: int, resolution: float,
                      cap: str) -> Tensor:
    """Louvain communities packed into ``num_clients`` clients.

    ``cap="minus"`` (default) is the FedSage+ recipe (Zhang et al., NeurIPS
    2021, Sec. 4; code ``zkhku/fedsage`` ``louvain_graph_cut``) used by FS-G,
    OpenFGL and inside O-pFGL: communities larger than
    ``N // K - delta`` are cut (:func:`split_large_groups`) and the pieces
    packed by :func:`pack_groups_fedsage`. ``cap="plus"`` is FedStruct's code
    (Aliakbari et al., ICLR 2025, App. F; ``louvain_graph_cut`` in
    ``src/utils/graph_partitioning.py``): cap ``N // K + delta`` and
    :func:`pack_groups_fedstruct` (:func:`cap_and_pack_fedstruct`: the cap ``N // K`` where the code's would
    leave a client empty). ``delta`` is 20 in all of them. FedStruct's
    paper text (halving communities above ``N / K``) differs from its code;
    the code's rule is the one implemented.
    """
    _require(delta >= 0, "partition_options.delta: must be >= 0")
    _require(resolution > 0, "partition_options.resolution: must be > 0")
    n = data.num_nodes
    max_len = n // num_clients - delta if cap == "minus" else n // num_clients + delta
    _require(max_len >= 1, f"louvain: the group cap N // K - delta = {n} // {num_clients} - {delta} = {max_len} is "
                           f"below 1; lower partition_options.delta or use fewer clients")
    communities = louvain_communities(data, seed, resolution)
    if cap == "plus":
        return groups_to_assignment(cap_and_pack_fedstruct(communities, n, num_clients, delta), n)
    return groups_to_assignment(pack_groups_fedsage(split_large_groups(communities, max_len), n, num_clients, delta), n)


@register_partitioner(
    "louvain_largest", "node", {"resolution": 1.0},
    "the K largest Louvain communities as clients; nodes of smaller communities are dropped (FedSpray)")
def louvain_largest_partition(data: Data, num_clients: int, seed: int, *, resolution: float) -> Tensor:
    """FedSpray's reading of Louvain (Fu et al., KDD 2024, Sec. 5.1).

    "We synthesize the distributed graph data by splitting each dataset into
    multiple communities via the Louvain algorithm. We retain [K] communities
    with the largest number of nodes; each community is regarded as an entire
    graph in a client." Communities are neither cut nor merged; client ``k``
    is the ``k``-th largest community (ties: smaller first node id first) and
    every other node gets ``-1``. FedSpray's official partitions are
    available as files (use ``files`` for them); one Louvain run cannot
    re-create them.
    """
    _require(resolution > 0, "partition_options.resolution: must be > 0")
    communities = louvain_communities(data, seed, resolution)
    if len(communities) < num_clients:
        raise ValueError(f"louvain_largest: Louvain found only {len(communities)} communities, fewer than "
                         f"num_clients={num_clients}")
    largest = sorted(communities, key=len, reverse=True)[:num_clients]
    return groups_to_assignment(largest, data.num_nodes)


@register_partitioner(
    "louvain_plus", "node", {"num_communities": 100, "delta": 20, "resolution": 1.0, "kmeans_n_init": 10},
    "Louvain packed into 100 groups, then KMeans on the groups' label histograms (O-pFGL Louvain+)",
    client_limit=lambda n, o: o["num_communities"])
def louvain_plus_partition(data: Data, num_clients: int, seed: int, *, num_communities: int, delta: int,
                           resolution: float, kmeans_n_init: int) -> Tensor:
    """O-pFGL's "Louvain+" label-imbalance split (Yan et al., arXiv 2411.11304, Sec. 5.1).

    Official code (``Youth-49/O-pFGL`` ``util/base_data_util.py``,
    ``data_partition(partition="Louvain+")``): FedSage packing of Louvain
    communities into ``num_communities`` (100) groups with
    ``N // 100 - delta`` as cap, then :func:`cluster_groups_by_labels`.
    OpenFGL's ``subgraph_fl_louvain_plus`` clusters the raw communities
    without the packing step; the authors' variant is the one implemented.
    """
    _require(resolution > 0, "partition_options.resolution: must be > 0")
    _require(delta >= 0, "partition_options.delta: must be >= 0")
    _require(num_communities >= num_clients, f"partition_options.num_communities ({num_communities}) must be >= "
                                             f"num_clients ({num_clients})")
    _require(kmeans_n_init >= 1, "partition_options.kmeans_n_init: must be >= 1")
    n = data.num_nodes
    max_len = n // num_communities - delta
    _require(max_len >= 1, f"louvain_plus: the group cap N // num_communities - delta = {n} // {num_communities} - "
                           f"{delta} = {max_len} is below 1; lower delta or num_communities")
    groups = split_large_groups(louvain_communities(data, seed, resolution), max_len)
    packed = pack_groups_fedsage(groups, n, num_communities, delta)
    return cluster_groups_by_labels(packed, data, num_clients, seed, kmeans_n_init)


@register_partitioner(
    "metis_plus", "node", {"num_communities": 100, "kmeans_n_init": 10},
    "METIS into 100 parts, then KMeans on the parts' label histograms (O-pFGL Metis+)",
    client_limit=lambda n, o: o["num_communities"])
def metis_plus_partition(data: Data, num_clients: int, seed: int, *, num_communities: int,
                         kmeans_n_init: int) -> Tensor:
    """O-pFGL's "Metis+" label-imbalance split (Yan et al., arXiv 2411.11304, Sec. 5.1).

    Official code: ``pymetis.part_graph(100, G)`` then the KMeans step of
    :func:`cluster_groups_by_labels` (same as OpenFGL's
    ``subgraph_fl_metis_plus``). Empty METIS parts are skipped (the official
    code would divide by zero on them).
    """
    _require(num_communities >= num_clients, f"partition_options.num_communities ({num_communities}) must be >= "
                                             f"num_clients ({num_clients})")
    _require(num_communities <= data.num_nodes, "partition_options.num_communities: must be <= the number of nodes")
    _require(kmeans_n_init >= 1, "partition_options.kmeans_n_init: must be >= 1")
    parts = metis_parts(data, num_communities, seed)
    groups = [np.flatnonzero(parts == c).tolist() for c in range(num_communities)]
    return cluster_groups_by_labels(groups, data, num_clients, seed, kmeans_n_init)


@register_partitioner("metis", "node", {}, "METIS k-way partition into K clients (OpenFGL, FedStruct)")
def metis_partition(data: Data, num_clients: int, seed: int) -> Tensor:
    """METIS (Karypis & Kumar 1998) into ``num_clients`` parts; part ``k`` is client ``k``.

    As OpenFGL's ``subgraph_fl_metis`` (``pymetis.part_graph(K, G)``); the
    METIS seed option is set to ``seed``.
    """
    return torch.as_tensor(metis_parts(data, num_clients, seed))


@register_partitioner(
    "random", "node", {"equal_size": False},
    "uniform random client per node (FedStruct); equal_size=True: equal-size random subsets (local-bias paper)")
def random_partition(data: Data, num_clients: int, seed: int, *, equal_size: bool) -> Tensor:
    """Random node assignment.

    Default: every node draws its client uniformly and independently, so
    sizes are binomial -- FedStruct's ``random_assign``
    (``np.random.choice(K, n)``; Aliakbari et al., ICLR 2025, Sec. 5).
    ``equal_size=True``: a random permutation cut into ``K`` near-equal parts
    (``np.array_split``), the local-bias paper's "randomly partition all nodes
    into 8 subsets with the same number of nodes" (Zhang et al., Sec. 5.1).
    """
    rng = np.random.default_rng(seed)
    n = data.num_nodes
    if not equal_size:
        return torch.as_tensor(rng.integers(0, num_clients, size=n), dtype=torch.long)
    assignment = np.empty(n, dtype=np.int64)
    for k, part in enumerate(np.array_split(rng.permutation(n), num_clients)):
        assignment[part] = k
    return torch.as_tensor(assignment)


@register_partitioner(
    "kmeans", "node", {"balance": True, "delta": 20},
    "KMeans on node features; clusters capped at N//K + delta and packed as FedStruct does")
def kmeans_partition(data: Data, num_clients: int, seed: int, *, balance: bool, delta: int) -> Tensor:
    """KMeans on the raw node features (FedStruct's ``Kmeans_cut``; Aliakbari et al., ICLR 2025, App. F).

    ``sklearn`` ``KMeans(K, n_init="auto", random_state=seed)`` on ``x``; with
    ``balance`` (FedStruct's code) clusters are cut at ``N // K + delta`` and
    packed by :func:`pack_groups_fedstruct` (:func:`cap_and_pack_fedstruct`, which cuts at ``N // K`` where
    that would leave a client empty), otherwise cluster ``k`` is client ``k`` (which can be very unequal on
    bag-of-words features).
    """
    from sklearn.cluster import KMeans

    _require(delta >= 0, "partition_options.delta: must be >= 0")
    if data.x is None:
        raise ValueError("kmeans partitions by node features, but the graph has no x")
    x = data.x.detach().cpu().float().numpy()
    labels = KMeans(n_clusters=num_clients, n_init="auto", random_state=seed).fit(x).labels_
    clusters = [np.flatnonzero(labels == k).tolist() for k in range(num_clients)]
    if not balance:
        return groups_to_assignment(clusters, data.num_nodes)
    return groups_to_assignment(cap_and_pack_fedstruct(clusters, data.num_nodes, num_clients, delta), data.num_nodes)


@register_partitioner(
    "label_dirichlet", "node", {"alpha": 10.0, "min_size": 5, "max_tries": 100},
    "per class, nodes spread over clients with Dirichlet(alpha) shares (FedGCN, OpenFGL label_skew)",
    client_limit=lambda n, o: n // max(o["min_size"], 1))
def label_dirichlet_partition(data: Data, num_clients: int, seed: int, *, alpha: float, min_size: int,
                              max_tries: int) -> Tensor:
    """Label-skewed node split by :func:`dirichlet_label_split`.

    FedGCN (Yao et al., NeurIPS 2023; ``label_dirichlet_partition``, used by
    FedStruct's FedGCN baseline with ``beta=10000``, i.e. near IID) and
    OpenFGL's ``subgraph_fl_label_skew``. Defaults are OpenFGL's
    (``dirichlet_alpha 10``, ``least_samples 5``, ``dirichlet_try_cnt 100``);
    FedGCN requires 10 nodes per client. Small ``alpha`` means strong skew.
    """
    _require(alpha > 0, "partition_options.alpha: must be > 0")
    _require(min_size >= 0, "partition_options.min_size: must be >= 0")
    _require(max_tries >= 1, "partition_options.max_tries: must be >= 1")
    _require(num_clients * max(min_size, 1) <= data.num_nodes,
             f"label_dirichlet: {num_clients} clients of at least {max(min_size, 1)} nodes need more than "
             f"{data.num_nodes} nodes")
    parts = dirichlet_label_split(data.y.view(-1).cpu().numpy(), num_clients, alpha, min_size, max_tries,
                                  np.random.default_rng(seed))
    return groups_to_assignment(parts, data.num_nodes)


@register_partitioner(
    "favoured_classes", "node", {"favoured": 0, "weight": 10.0},
    "equal-size clients, each drawing its few favoured classes weight times more often (local-bias paper, "
    "non-i.i.d. setting)")
def favoured_classes_partition(data: Data, num_clients: int, seed: int, *, favoured: int, weight: float) -> Tensor:
    """The local-bias paper's non-i.i.d. partition (Zhang et al., arXiv 2110.12906, Sec. 4.2): "we randomly
    choose a few classes from the label domain and make the sampling probability of the nodes in these classes
    ten times more than the other classes in each client".

    Digest reading A12: each client ``k`` picks ``favoured`` classes at random (``0``: 1 for at most 3
    classes, 2 up to 10 classes, else 10 % of the classes, rounded); the clients, in order, then draw their
    ``n/K`` nodes (near-equal sizes, ``np.array_split``) without replacement from the nodes still unassigned,
    a node of a favoured class with ``weight`` times the probability of the others. The last client takes
    what is left.
    """
    _require(favoured >= 0, "partition_options.favoured: must be >= 0 (0: chosen from the number of classes)")
    _require(weight > 0, "partition_options.weight: must be > 0")
    rng = np.random.default_rng(seed)
    y = data.y.view(-1).cpu().numpy()
    num_classes = int(y.max()) + 1
    r = favoured or (1 if num_classes <= 3 else 2 if num_classes <= 10 else max(1, round(0.1 * num_classes)))
    _require(r <= num_classes, f"partition_options.favoured: {r} exceeds the {num_classes} classes")
    sizes = [len(p) for p in np.array_split(np.arange(data.num_nodes), num_clients)]
    left = np.ones(data.num_nodes, dtype=bool)
    assignment = np.empty(data.num_nodes, dtype=np.int64)
    for k, size in enumerate(sizes):
        pool = np.flatnonzero(left)
        if k == num_clients - 1:
            chosen = pool
        else:
            w = np.ones(num_classes)
            w[rng.choice(num_classes, size=r, replace=False)] = weight
            p = w[y[pool]]
            chosen = rng.choice(pool, size=size, replace=False, p=p / p.sum())
        assignment[chosen] = k
        left[chosen] = False
    return torch.as_tensor(assignment)


@register_partitioner(
    "files", "node", {"path": "", "pattern": "{prefix}_*.txt", "prefix": ""},
    "explicit node lists, one file per client in sorted file order (e.g. FedSpray's partition/ files)",
    cacheable=False)
def files_partition(data: Data, num_clients: int, seed: int, *, path: str, pattern: str, prefix: str) -> Tensor:
    """Clients read from files: ``path`` is a folder, ``pattern`` a glob whose ``{prefix}`` is replaced.

    ``prefix`` defaults to the dataset's name (``data.name``), so
    ``{path: "FedSpray/partition"}`` on PubMed reads the mirror's
    ``FedSpray/partition/PubMed_*.txt`` -- FedSpray's official partitions
    (``xbfu/FedSpray`` ``partition/``; Fu et al., KDD 2024). A relative
    ``path`` is looked up in ``FGL_DATA_MIRROR``, then in ``FGL_DATA``.
    Each file lists global node ids, one per line (floats such as ``12.0``
    allowed); files are taken in sorted name order, file ``k`` being client
    ``k``. Nodes in no file get ``-1``; a node in two files is an error.
    ``num_clients`` must equal the number of files. The seed is unused.
    """
    if not path:
        raise ConfigError("partition_options.path: the files partitioner needs the folder holding the node lists")
    name = prefix or getattr(data, "name", None) or ""
    if "{prefix}" in pattern and not name:
        raise ConfigError("partition_options.prefix: the graph has no name to fill '{prefix}' in "
                          f"pattern {pattern!r}; give prefix or a pattern without it")
    folder = resolve_partition_folder(path)
    glob = pattern.replace("{prefix}", name)
    files = sorted(p for p in folder.glob(glob) if p.is_file())
    if not files:
        raise ConfigError(f"partition_options: no file matches {glob!r} in {folder}")
    if len(files) != num_clients:
        raise ConfigError(f"num_clients: {len(files)} files match {glob!r} in {folder} "
                          f"({files[0].name} .. {files[-1].name}), so num_clients must be {len(files)}, "
                          f"got {num_clients}")
    lists = [read_node_list(p, data.num_nodes) for p in files]
    seen = np.zeros(data.num_nodes, dtype=np.int64)
    for ids in lists:
        seen[ids] += 1
    if (seen > 1).any():
        raise ValueError(f"partition files in {folder}: node {int(np.flatnonzero(seen > 1)[0])} "
                         f"is listed in more than one file")
    return groups_to_assignment(lists, data.num_nodes)


# --------------------------------------------------------------------------- graph-level partitioners


@register_graph_partitioner("by_dataset", {"members": [], "exclude": []},
                            "one TU dataset per client: the members of a FedStar group such as 'chem'")
def by_dataset_partition(name: str, num_clients: int, seed: int, *, members: list = (),
                         exclude: list = ()) -> list[GraphShard]:
    """FedStar's cross-dataset setting (Tan et al., AAAI 2023, Sec. 5.1; ``prepareData_multiDS``).

    Client ``k`` holds every graph of member ``k`` of the group (order of
    :func:`~fglcore.data.datasets.group_members`), restricted by
    :func:`select_members` (``members``: only these; ``exclude``: all but
    these). ``num_clients`` must equal the number of chosen members. The
    seed is unused.
    """
    from fglcore.data.datasets import load_graph_dataset

    chosen = select_members(name, members, exclude)
    if num_clients != len(chosen):
        raise ConfigError(f"num_clients: by_dataset gives one client per member of {name!r} "
                          f"({len(chosen)}: {', '.join(chosen)}), got {num_clients}")
    return [GraphShard(m, torch.arange(len(load_graph_dataset(m)), dtype=torch.long)) for m in chosen]


def select_members(name: str, members: Sequence[str] = (), exclude: Sequence[str] = ()) -> list[str]:
    """The datasets of group ``name`` to use, in group order: ``members`` (if any) minus ``exclude``.

    An entry that is not a member of the group, or a selection that leaves
    nothing, is a :class:`ConfigError` listing the group's members.
    """
    from fglcore.data.datasets import group_members

    group = group_members(name)
    for key, values in (("members", members), ("exclude", exclude)):
        unknown = [v for v in values if v not in group]
        if unknown:
            raise ConfigError(f"partition_options.{key}: {unknown} not in {name!r}; its members: {', '.join(group)}")
    chosen = [m for m in group if (not members or m in members) and m not in exclude]
    if not chosen:
        raise ConfigError(f"partition_options: members={list(members)} and exclude={list(exclude)} leave no dataset "
                          f"of {name!r} ({', '.join(group)})")
    return chosen


def rand_chunks(num_graphs: int, num_shards: int, seed: int, max_slice: int = 50) -> list[np.ndarray]:
    """GCFL/FedStar ``_randChunk(graphs, num_shards, overlap=False, seed)``: graph indices of each shard.

    With ``m = min(max_slice, num_graphs // num_shards)``, shard ``i`` first
    takes the contiguous slice ``i*m .. (i+1)*m - 1``; each remaining graph
    then goes to a shard drawn uniformly by ``np.random.seed(seed)`` and
    ``np.random.randint(0, num_shards)`` (here a private
    ``RandomState(seed)``, the same stream). Shards keep ascending order.
    """
    if num_shards < 1 or num_shards > num_graphs:
        raise ConfigError(f"num_shards: must be in 1..{num_graphs} for {num_graphs} graphs, got {num_shards}")
    size = min(max_slice, num_graphs // num_shards)
    shards = [list(range(i * size, (i + 1) * size)) for i in range(num_shards)]
    rng = np.random.RandomState(seed)
    for g in range(num_shards * size, num_graphs):
        shards[int(rng.randint(low=0, high=num_shards, size=1)[0])].append(g)
    return [np.sort(np.asarray(s, dtype=np.int64)) for s in shards]


@register_graph_partitioner("dataset_chunks", {"members": [], "exclude": [], "max_slice": 50},
                            "every TU dataset of a group cut into num_clients/len(members) random chunks "
                            "(FedStar Fig. 4, _randChunk)", client_limit=_chunks_limit)
def dataset_chunks_partition(name: str, num_clients: int, seed: int, *, members: list = (), exclude: list = (),
                             max_slice: int = 50) -> list[GraphShard]:
    """FedStar's many-clients setting (Tan et al., AAAI 2023, Fig. 4; code ``prepareData_multiDS_multi``).

    Each chosen dataset of group ``name`` (:func:`select_members`) is cut by
    :func:`rand_chunks` into ``k = num_clients / len(members)`` shards, one
    client each; clients are ordered dataset by dataset. ``num_clients``
    must be a multiple of the number of datasets. The official code calls
    ``_randChunk`` with the data seed for every dataset; so does this, with
    the partition seed (FedStar's is 123: set ``partition_seed``).
    """
    from fglcore.data.datasets import load_graph_dataset

    _require(max_slice >= 1, "partition_options.max_slice: must be >= 1")
    chosen = select_members(name, members, exclude)
    if num_clients % len(chosen):
        raise ConfigError(f"num_clients: dataset_chunks cuts each of the {len(chosen)} datasets of {name!r} into "
                          f"the same number of shards, so num_clients must be a multiple of {len(chosen)}, "
                          f"got {num_clients}")
    k = num_clients // len(chosen)
    shards = []
    for member in chosen:
        n = len(load_graph_dataset(member))
        if k > n:
            raise ConfigError(f"num_clients: {k} shards of {member} ({n} graphs) would leave shards empty")
        shards += [GraphShard(member, torch.as_tensor(idx)) for idx in rand_chunks(n, k, seed, max_slice)]
    return shards


@register_graph_partitioner("label_skew", {"alpha": 10.0, "min_size": 5, "max_tries": 100},
                      "one TU dataset split over K clients by Dirichlet(alpha) over graph labels (OpenFGL)")
def label_skew_partition(name: str, num_clients: int, seed: int, *, alpha: float, min_size: int,
                         max_tries: int) -> list[GraphShard]:
    """OpenFGL's ``graph_fl_label_skew``: :func:`dirichlet_label_split` over graph labels.

    Defaults are OpenFGL's (``dirichlet_alpha 10``, ``least_samples 5``,
    ``dirichlet_try_cnt 100``). Client ``k`` is named ``"{k}-{name}"`` by the
    federation, as FedStar names the chunks of one dataset.
    """
    from fglcore.data.datasets import group_members, load_graph_dataset

    _require(alpha > 0, "partition_options.alpha: must be > 0")
    _require(min_size >= 0, "partition_options.min_size: must be >= 0")
    _require(max_tries >= 1, "partition_options.max_tries: must be >= 1")
    members = group_members(name)
    if members != [name]:
        raise ConfigError(f"dataset: label_skew splits one TU dataset; {name!r} is a group of {len(members)} "
                          f"({', '.join(members)}); use by_dataset or one member")
    labels = load_graph_dataset(name).y.view(-1).cpu().numpy()
    _require(num_clients * max(min_size, 1) <= len(labels),
             f"label_skew: {num_clients} clients of at least {max(min_size, 1)} graphs need more than "
             f"{len(labels)} graphs")
    parts = dirichlet_label_split(labels, num_clients, alpha, min_size, max_tries, np.random.default_rng(seed))
    return [GraphShard(name, torch.as_tensor(p)) for p in parts]


# --------------------------------------------------------------------------- helpers


def _node_spec(method: str) -> PartitionerSpec:
    spec = PARTITIONERS.get(method)
    if spec.task != "node":
        raise ConfigError(f"partition: {method!r} partitions graph datasets; node-level partitioners: "
                          f"{', '.join(partitioner_names('node'))}")
    return spec


def _check_num_clients(num_clients: int, num_nodes: int, method: str) -> None:
    if isinstance(num_clients, bool) or not isinstance(num_clients, int) or num_clients < 1:
        raise ConfigError(f"num_clients: must be an integer >= 1, got {num_clients!r}")
    if num_clients > num_nodes:
        raise ConfigError(f"num_clients: {num_clients} clients for {num_nodes} nodes ({method})")


def _check_seed(seed: int) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise ConfigError(f"seed: partition seeds must be integers in [0, 2**32), got {seed!r}")


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)


def _num_classes(data: Data) -> int:
    num_classes = getattr(data, "num_classes", None)
    return int(num_classes) if num_classes is not None else int(data.y.max()) + 1
