"""Partitioners: coverage, sizes, determinism, edges, cache, options, files and graph-level shards."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from fglcore.config import ConfigError
from fglcore.data import partition as P
from fglcore.data.datasets import load_node_data
from fglcore.data.federation import build_clients
from fglcore.registry import UnknownNameError

K = 10


@pytest.fixture(scope="module")
def cora() -> Data:
    return load_node_data("Cora")


@pytest.fixture(scope="module")
def cora_parts(cora):
    """Cora assignments, computed once per (method, seed, options) for the whole module."""
    memo: dict = {}

    def get(method: str, seed: int = 0, **options) -> torch.Tensor:
        key = (method, seed, tuple(sorted(options.items())))
        if key not in memo:
            memo[key] = P.partition_nodes(cora, method, K, seed, **options)
        return memo[key]

    return get


def clustered_graph(num_clusters: int = 6, size: int = 12, num_classes: int = 3, seed: int = 0) -> Data:
    """Dense clusters joined in a ring, features = noisy one-hot of the cluster, label = cluster % num_classes."""
    rng = np.random.default_rng(seed)
    edges = []
    for c in range(num_clusters):
        nodes = np.arange(c * size, (c + 1) * size)
        edges += [(u, v) for i, u in enumerate(nodes) for v in nodes[i + 1:] if rng.random() < 0.6]
        edges.append((nodes[-1], ((c + 1) % num_clusters) * size))
    e = torch.tensor(edges, dtype=torch.long).t()
    n = num_clusters * size
    cluster = torch.arange(n) // size
    x = torch.nn.functional.one_hot(cluster, num_clusters).float() + 0.05 * torch.as_tensor(
        rng.standard_normal((n, num_clusters)), dtype=torch.float)
    return Data(x=x, y=cluster % num_classes, edge_index=torch.cat([e, e.flip(0)], dim=1), num_nodes=n)


# Cheap configurations for every node-level partitioner except `files` (tested on its own below).
CORA_METHODS = [
    ("louvain", {}), ("louvain", {"cap": "plus"}), ("louvain_largest", {}), ("louvain_plus", {}),
    ("metis_plus", {}), ("metis", {}), ("random", {}), ("random", {"equal_size": True}), ("label_dirichlet", {}),
]
SMALL_METHODS = [  # on clustered_graph(): 72 nodes, 6 clusters
    ("kmeans", {"delta": 2}), ("kmeans", {"balance": False}),
    ("louvain_plus", {"num_communities": 12, "delta": 0, "kmeans_n_init": 2}),
    ("metis_plus", {"num_communities": 12}),
]


def check_partition(data: Data, assignment: torch.Tensor, num_clients: int, may_drop: bool) -> list[Data]:
    """Every kept node in exactly one client, no empty client; returns the clients."""
    assert assignment.dtype == torch.long and assignment.shape == (data.num_nodes,)
    assert int(assignment.min()) >= (-1 if may_drop else 0) and int(assignment.max()) == num_clients - 1
    clients = build_clients(data, assignment)
    ids = torch.cat([c.global_id for c in clients])
    assert ids.unique().numel() == ids.numel()  # no node twice
    assert torch.equal(ids.sort().values, torch.nonzero(assignment >= 0).view(-1))  # no kept node lost
    assert all(c.num_nodes > 0 for c in clients)
    return clients


def test_registry_lists_every_partitioner():
    assert set(P.partitioner_names("node")) == {"louvain", "louvain_largest", "louvain_plus", "metis_plus", "metis",
                                                "random", "kmeans", "label_dirichlet", "favoured_classes", "files"}
    assert set(P.partitioner_names("graph")) == {"by_dataset", "label_skew", "dataset_chunks"}
    for name in P.PARTITIONERS:
        spec = P.PARTITIONERS.get(name)
        assert spec.description and spec.fn.__doc__


@pytest.mark.parametrize("method,options", CORA_METHODS)
def test_cora_partitions_cover_nodes_once_and_are_deterministic(cora, cora_parts, method, options):
    assignment = cora_parts(method, **options)
    check_partition(cora, assignment, K, may_drop=method == "louvain_largest")
    again = P.partition_nodes(cora, method, K, 0, **options)
    assert torch.equal(assignment, again)


@pytest.mark.parametrize("method,options", SMALL_METHODS)
def test_small_graph_partitions_cover_nodes_once_and_are_deterministic(method, options):
    data = clustered_graph()
    assignment = P.partition_nodes(data, method, 3, 0, **options)
    check_partition(data, assignment, 3, may_drop=False)
    assert torch.equal(assignment, P.partition_nodes(data, method, 3, 0, **options))


@pytest.mark.parametrize("method,options", [("louvain", {}), ("metis", {}), ("random", {}),
                                            ("random", {"equal_size": True}), ("label_dirichlet", {})])
def test_random_partitioners_change_with_the_seed(cora, cora_parts, method, options):
    assert not torch.equal(cora_parts(method, 0, **options), cora_parts(method, 2, **options))


def test_only_dropping_methods_drop(cora, cora_parts):
    for method, options in CORA_METHODS:
        dropped = int((cora_parts(method, **options) < 0).sum())
        assert (dropped > 0) == (method == "louvain_largest"), method


def test_louvain_sizes_respect_the_fedsage_cap(cora, cora_parts):
    n, delta = cora.num_nodes, 20
    sizes = P.client_sizes(cora_parts("louvain"), K)
    # FedSage packing: an owner takes a group only while size + group < N//K + delta
    assert int(sizes.max()) < n // K + delta
    assert int(sizes.sum()) == n
    plus = P.client_sizes(cora_parts("louvain", cap="plus"), K)
    assert int(plus.max()) <= n // K + delta  # FedStruct: size + group <= N//K + delta


def test_louvain_chops_communities_at_the_cap(cora, monkeypatch):
    seen = {}
    original = P.split_large_groups

    def spy(groups, max_len):
        seen["max_len"] = max_len
        out = original(groups, max_len)
        seen["largest"] = max(len(g) for g in out)
        return out

    monkeypatch.setattr(P, "split_large_groups", spy)
    P.partition_nodes(cora, "louvain", K, 0)
    assert seen["max_len"] == cora.num_nodes // K - 20 and seen["largest"] <= seen["max_len"]
    P.partition_nodes(cora, "louvain", K, 0, cap="plus", delta=5)
    assert seen["max_len"] == cora.num_nodes // K + 5


def test_louvain_largest_keeps_the_k_largest_communities(cora, cora_parts):
    assignment = cora_parts("louvain_largest")
    communities = P.louvain_communities(cora, 0)
    expected = sorted((len(c) for c in communities), reverse=True)[:K]
    assert P.client_sizes(assignment, K).tolist() == expected
    for k in range(K):  # each client is exactly one community
        nodes = set(torch.nonzero(assignment == k).view(-1).tolist())
        assert any(nodes == set(c) for c in communities)


def test_plus_partitions_make_label_skewed_clients(cora, cora_parts):
    """KMeans on label histograms: clients are far more label-skewed than under random assignment."""
    def mean_majority_share(assignment):
        shares = []
        for k in range(K):
            y = cora.y[assignment == k]
            shares.append(float(torch.bincount(y).max()) / y.numel())
        return sum(shares) / K

    base = mean_majority_share(cora_parts("random"))  # about 0.30, Cora's largest class share
    # Louvain+ packs 7-node chunks of different communities into each of its 100 groups (N // 100 - 20 = 7),
    # so its groups, and clients, are less pure than METIS parts.
    assert mean_majority_share(cora_parts("louvain_plus")) > base + 0.1
    assert mean_majority_share(cora_parts("metis_plus")) > base + 0.3


def test_label_dirichlet_sizes_and_skew(cora):
    near_iid = P.partition_nodes(cora, "label_dirichlet", K, 0, alpha=1e5)
    sizes = P.client_sizes(near_iid, K).float()
    # each class is cut in near-equal shares, at most one node off per class
    assert (sizes - cora.num_nodes / K).abs().max() <= cora.num_classes + 1
    skewed = P.partition_nodes(cora, "label_dirichlet", K, 0, alpha=0.1, min_size=3)
    assert int(P.client_sizes(skewed, K).min()) >= 3

    def class_spread(assignment):  # mean over classes of the largest client share
        return np.mean([float(torch.bincount(assignment[cora.y == c], minlength=K).max()) / int((cora.y == c).sum())
                        for c in range(cora.num_classes)])

    assert class_spread(skewed) > class_spread(near_iid) + 0.3


def test_label_dirichlet_fails_clearly_when_min_size_is_unreachable(tiny_graph):
    with pytest.raises(ConfigError, match="need more than 6 nodes"):
        P.partition_nodes(tiny_graph, "label_dirichlet", 2, 0)  # 2 clients x 5 nodes > 6
    with pytest.raises(ValueError, match="no draw in 3 tries"):
        P.partition_nodes(tiny_graph, "label_dirichlet", 3, 0, min_size=2, alpha=0.01, max_tries=3)


def test_random_equal_size_is_balanced(cora, cora_parts):
    sizes = P.client_sizes(cora_parts("random", equal_size=True), K)
    assert int(sizes.max() - sizes.min()) <= 1


# --------------------------------------------------------------------------- packing rules, by hand


def numbered_groups(sizes):
    groups, start = [], 0
    for s in sizes:
        groups.append(list(range(start, start + s)))
        start += s
    return groups


def test_split_large_groups_cuts_in_fedsage_order():
    out = P.split_large_groups([[0, 1, 2, 3, 4, 5, 6], [7, 8]], 3)
    assert out == [[0, 1, 2], [7, 8], [3, 4, 5], [6]]  # remainders appended, cut again in turn
    with pytest.raises(ValueError):
        P.split_large_groups([[0]], 0)


def test_pack_groups_fedsage_by_hand():
    # N=20, K=4, delta=2: owners close at 5 nodes, a group fits while size + group < 7.
    groups = numbered_groups([4, 4, 3, 3, 2, 2, 1, 1])
    owners = P.pack_groups_fedsage(groups, 20, 4, 2)
    assert owners == [groups[0] + groups[7], groups[1], groups[2] + groups[3], groups[4] + groups[5] + groups[6]]


def test_pack_groups_fedstruct_by_hand():
    # N=20, K=4, delta=2: skip owners with >= 5 nodes or that would exceed 7.
    groups = numbered_groups([4, 4, 3, 3, 2, 2, 1, 1])
    owners = P.pack_groups_fedstruct(groups, 20, 4, 2)
    assert owners == [groups[0], groups[1] + groups[2], groups[3] + groups[4], groups[5] + groups[6] + groups[7]]


def test_fedstruct_cap_falls_back_to_the_papers_cap_only_where_the_codes_leaves_a_client_empty():
    # two clusters of 1000 nodes, 20 clients: the code's cap N//K + 20 = 120 gives 16 pieces of 120 and two of 40,
    # which fill 17 owners and leave 3 empty; the paper's cap N//K = 100 gives every owner one piece of 100
    clusters = [list(range(1000)), list(range(1000, 2000))]
    codes = P.pack_groups_fedstruct(P.split_large_groups(clusters, 120), 2000, 20, 20)
    assert sum(1 for o in codes if not o) == 3
    owners = P.cap_and_pack_fedstruct(clusters, 2000, 20, 20)
    assert [len(o) for o in owners] == [100] * 20 and sorted(sum(owners, [])) == list(range(2000))
    # where the code's packing fills every owner, it is returned unchanged
    groups = numbered_groups([4, 4, 3, 3, 2, 2, 1, 1])
    assert P.cap_and_pack_fedstruct(groups, 20, 4, 2) == P.pack_groups_fedstruct(groups, 20, 4, 2)


@pytest.mark.parametrize("pack", [P.pack_groups_fedsage, P.pack_groups_fedstruct])
def test_packing_never_loses_a_group_when_nothing_fits(pack):
    groups = numbered_groups([6, 5, 5])  # no owner can take these within N//K + delta = 5
    owners = pack(groups, 10, 2, 0)
    assert sorted(sum(owners, [])) == list(range(16))
    assert all(owners)


# --------------------------------------------------------------------------- edges


@pytest.mark.parametrize("method", ["louvain", "louvain_largest", "random"])
def test_client_edges_are_intra_and_cross_edges_are_counted(cora, cora_parts, method):
    assignment = cora_parts(method)
    clients = build_clients(cora, assignment, keep_cross_edges=True)
    src, dst = assignment[cora.edge_index[0]], assignment[cora.edge_index[1]]
    edge_set = set(map(tuple, cora.edge_index.t().tolist()))
    intra_total = cross_total = 0
    for k, client in enumerate(clients):
        local = client.edge_index
        assert int(local.max()) < client.num_nodes
        global_edges = client.global_id[local]
        assert bool((assignment[global_edges] == k).all())
        assert set(map(tuple, global_edges.t().tolist())) <= edge_set
        assert torch.equal(client.x, cora.x[client.global_id]) and torch.equal(client.y, cora.y[client.global_id])
        cross = client.cross_edge_index
        assert bool((assignment[cross[0]] == k).all())
        assert bool(((assignment[cross[1]] != k) & (assignment[cross[1]] >= 0)).all())
        intra_total += local.size(1)
        cross_total += cross.size(1)
    assert intra_total == int(((src == dst) & (src >= 0)).sum())
    assert cross_total == int(((src != dst) & (src >= 0) & (dst >= 0)).sum())
    if method == "random":
        assert cross_total > intra_total  # uniform assignment cuts most edges


# --------------------------------------------------------------------------- cache


def test_cache_is_written_then_hit(cora, tmp_path, monkeypatch):
    monkeypatch.setenv("FGL_DATA", str(tmp_path))
    calls = []
    original = P.louvain_communities
    monkeypatch.setattr(P, "louvain_communities", lambda *a, **k: calls.append(1) or original(*a, **k))

    first = P.cached_partition(cora, "louvain", K, 0)
    path = P.partition_cache_path(cora, "louvain", K, 0)
    assert path.is_file() and path.parent == tmp_path / "_fglcore_cache" / "partitions"
    assert path.name == P.partition_cache_key(cora, "louvain", K, 0) + ".pt"
    second = P.cached_partition(cora, "louvain", K, 0, delta=20)  # the default, given explicitly: same key
    assert len(calls) == 1 and torch.equal(first, second)
    assert torch.equal(first, P.partition_nodes(cora, "louvain", K, 0))
    path.write_bytes(b"damaged")  # a damaged cache file is recomputed and replaced
    assert torch.equal(P.cached_partition(cora, "louvain", K, 0), first) and len(calls) == 3
    assert torch.equal(torch.load(path, weights_only=True), first)


def test_cache_key_changes_with_every_parameter(cora):
    base = P.partition_cache_key(cora, "louvain", K, 0)
    assert base == P.partition_cache_key(cora, "louvain", K, 0, delta=20, resolution=1.0, cap="minus")
    changed = [
        P.partition_cache_key(cora, "metis", K, 0),
        P.partition_cache_key(cora, "louvain", K + 1, 0),
        P.partition_cache_key(cora, "louvain", K, 1),
        P.partition_cache_key(cora, "louvain", K, 0, delta=10),
        P.partition_cache_key(cora, "louvain", K, 0, resolution=0.5),
        P.partition_cache_key(cora, "louvain", K, 0, cap="plus"),
    ]
    other = cora.clone()
    other.y = other.y.clone()
    other.y[0] = (other.y[0] + 1) % 7
    changed.append(P.partition_cache_key(other, "louvain", K, 0))
    assert len({base, *changed}) == len(changed) + 1


# --------------------------------------------------------------------------- validation


def test_options_are_validated_before_work(tiny_graph):
    spec = P.PARTITIONERS.get("louvain")
    assert spec.validate_options({"delta": 5}) == {"delta": 5, "resolution": 1.0, "cap": "minus"}
    with pytest.raises(ConfigError, match=r"unknown option 'dlta'.*did you mean 'delta'.*accepted: cap, delta"):
        spec.validate_options({"dlta": 5})
    with pytest.raises(ConfigError, match=r"partition_options.delta: expected int, got float"):
        spec.validate_options({"delta": 2.5})
    with pytest.raises(ConfigError, match=r"partition_options.cap: 'mid' is not accepted; accepted: minus, plus"):
        spec.validate_options({"cap": "mid"})
    with pytest.raises(UnknownNameError, match="did you mean 'louvain'"):
        P.partition_nodes(tiny_graph, "lovain", 2, 0)
    with pytest.raises(ConfigError, match="node-level partitioners"):
        P.partition_nodes(tiny_graph, "by_dataset", 2, 0)
    with pytest.raises(ConfigError, match="num_clients: 7 clients for 6 nodes"):
        P.partition_nodes(tiny_graph, "random", 7, 0)
    with pytest.raises(ConfigError, match="cap N // K - delta = 6 // 2 - 20 = -17"):
        P.partition_nodes(tiny_graph, "louvain", 2, 0)


def test_louvain_on_the_tiny_graph_finds_the_two_triangles(tiny_graph):
    assignment = P.partition_nodes(tiny_graph, "louvain", 2, 0, delta=0)
    assert sorted(P.client_sizes(assignment, 2).tolist()) == [3, 3]
    assert assignment[0] == assignment[1] == assignment[2] != assignment[3]


def test_empty_clients_are_an_error(tiny_graph):
    with pytest.raises(ValueError, match=r"without nodes"):
        P.check_assignment(torch.tensor([0, 0, 0, 2, 2, 2]), 6, 3, "x")


# --------------------------------------------------------------------------- files


def write_lists(folder, lists, prefix="Toy"):
    folder.mkdir(parents=True, exist_ok=True)
    for i, ids in lists.items():
        (folder / f"{prefix}_{i:02d}.txt").write_text("".join(f"{float(v)}\n" for v in ids))


def test_files_partitioner_reads_node_lists(tiny_graph, tmp_path):
    write_lists(tmp_path, {3: [4, 3], 1: [0, 2]})  # sorted file order: _01 is client 0, _03 client 1
    assignment = P.partition_nodes(tiny_graph, "files", 2, 0, path=str(tmp_path), prefix="Toy")
    assert assignment.tolist() == [0, -1, 0, 1, 1, -1]
    same = P.cached_partition(tiny_graph, "files", 2, 0, path=str(tmp_path), pattern="Toy_*.txt")
    assert torch.equal(assignment, same)


def test_files_partitioner_errors(tiny_graph, tmp_path):
    write_lists(tmp_path, {0: [0, 1], 1: [2]})
    with pytest.raises(ConfigError, match="so num_clients must be 2, got 3"):
        P.partition_nodes(tiny_graph, "files", 3, 0, path=str(tmp_path), prefix="Toy")
    with pytest.raises(ConfigError, match="no file matches"):
        P.partition_nodes(tiny_graph, "files", 2, 0, path=str(tmp_path), prefix="Other")
    with pytest.raises(ConfigError, match="needs the folder"):
        P.partition_nodes(tiny_graph, "files", 2, 0)
    with pytest.raises(ConfigError, match="no name to fill"):
        P.partition_nodes(tiny_graph, "files", 2, 0, path=str(tmp_path))
    write_lists(tmp_path / "dup", {0: [0, 1], 1: [1]})
    with pytest.raises(ValueError, match="more than one file"):
        P.partition_nodes(tiny_graph, "files", 2, 0, path=str(tmp_path / "dup"), prefix="Toy")
    write_lists(tmp_path / "range", {0: [0, 9]})
    with pytest.raises(ValueError, match=r"must lie in 0\.\.5"):
        P.partition_nodes(tiny_graph, "files", 1, 0, path=str(tmp_path / "range"), prefix="Toy")
    (tmp_path / "frac").mkdir()
    (tmp_path / "frac" / "Toy_00.txt").write_text("1.5\n")
    with pytest.raises(ValueError, match="whole numbers"):
        P.partition_nodes(tiny_graph, "files", 1, 0, path=str(tmp_path / "frac"), prefix="Toy")


def test_files_relative_path_resolves_in_the_mirror(tiny_graph, tmp_path, monkeypatch):
    write_lists(tmp_path / "mirror" / "Lists", {0: [0, 1, 2], 1: [3, 4, 5]})
    monkeypatch.setenv("FGL_DATA_MIRROR", str(tmp_path / "mirror"))
    tiny_graph.name = "Toy"  # prefix defaults to the dataset's name
    assignment = P.partition_nodes(tiny_graph, "files", 2, 0, path="Lists")
    assert assignment.tolist() == [0, 0, 0, 1, 1, 1]
    with pytest.raises(ConfigError, match="found neither in the mirror"):
        P.partition_nodes(tiny_graph, "files", 2, 0, path="Nowhere")


def test_fedspray_pubmed_partition_files():
    """FedSpray's official PubMed partition: 7 clients, 11,258 of 19,717 nodes (FedSpray Table 4)."""
    pubmed = Data(edge_index=torch.empty(2, 0, dtype=torch.long), num_nodes=19717)
    pubmed.name = "PubMed"
    assignment = P.partition_nodes(pubmed, "files", 7, 0, path="FedSpray/partition")
    sizes = P.client_sizes(assignment, 7)
    assert int(sizes.sum()) == 11258
    assert sorted(sizes.tolist()) == [1300, 1333, 1401, 1415, 1754, 1768, 2287]


# --------------------------------------------------------------------------- graph level


def test_by_dataset_gives_one_client_per_member():
    shards = P.partition_graphs("MUTAG", "by_dataset", 1, 0)
    assert len(shards) == 1 and shards[0].dataset == "MUTAG"
    assert torch.equal(shards[0].indices, torch.arange(188))
    with pytest.raises(ConfigError, match=r"one client per member of 'chem' \(7: MUTAG, BZR"):
        P.partition_graphs("chem", "by_dataset", 3, 0)


def test_label_skew_splits_one_dataset():
    shards = P.partition_graphs("MUTAG", "label_skew", 3, 0, alpha=1.0)
    ids = torch.cat([s.indices for s in shards])
    assert ids.numel() == 188 and ids.unique().numel() == 188
    assert all(s.dataset == "MUTAG" and s.indices.numel() >= 5 for s in shards)
    again = P.partition_graphs("MUTAG", "label_skew", 3, 0, alpha=1.0)
    assert all(torch.equal(a.indices, b.indices) for a, b in zip(shards, again))
    other = P.partition_graphs("MUTAG", "label_skew", 3, 1, alpha=1.0)
    assert any(not torch.equal(a.indices, b.indices) for a, b in zip(shards, other))
    with pytest.raises(ConfigError, match="label_skew splits one TU dataset"):
        P.partition_graphs("chem", "label_skew", 3, 0)
    with pytest.raises(ConfigError, match="graph-level partitioners"):
        P.partition_graphs("MUTAG", "louvain", 3, 0)


def test_fedstruct_partitioners_on_cora(cora, cora_parts):
    """FedStruct's three partitionings (Aliakbari et al., ICLR 2025, Sec. 6 and App. F; digest §4.3, §7.2 items 12-13)."""
    n, delta = cora.num_nodes, 20
    # random: i.i.d. uniform client per node, so sizes vary (binomial, sd = sqrt(n p (1-p)) ~ 15.6 for K=10)
    sizes = P.client_sizes(cora_parts("random"), K)
    assert int(sizes.sum()) == n and int(sizes.max() - sizes.min()) > 2
    assert float(sizes.double().std()) < 4 * (n / K * 0.9) ** 0.5
    # louvain with FedStruct's cap N//K + delta, and K-means on features with the same cap and packing
    for method, options in (("louvain", {"cap": "plus"}), ("kmeans", {})):
        assignment = cora_parts(method, **options)
        sizes = P.client_sizes(assignment, K)
        assert int(sizes.sum()) == n and int(sizes.max()) <= n // K + delta, method
        assert int(sizes.min()) > 0
    # K-means ignores topology: many more cut edges than Louvain
    src, dst = cora.edge_index
    cut = {m: float((cora_parts(m, **o)[src] != cora_parts(m, **o)[dst]).float().mean())
           for m, o in (("louvain", {"cap": "plus"}), ("kmeans", {}), ("random", {}))}
    assert cut["louvain"] < cut["kmeans"] < cut["random"]


def test_plus_step_clusters_whole_groups_by_label_histogram():
    """O-pFGL's "+" step: groups are never cut, and groups with the same label histogram share a client."""
    y = torch.tensor([0] * 40 + [1] * 40 + [2] * 40)
    data = Data(y=y, num_nodes=120, edge_index=torch.zeros(2, 0, dtype=torch.long))
    # 12 groups of 10 nodes: 4 pure class-0, 4 pure class-1, 4 pure class-2, interleaved in the list
    groups = [list(range(c * 40 + i * 10, c * 40 + (i + 1) * 10)) for i in range(4) for c in range(3)]
    assignment = P.cluster_groups_by_labels(groups, data, 3, seed=42, n_init=10)
    for g in groups:  # each group lies in one client
        assert assignment[g].unique().numel() == 1
    for c in range(3):  # the four groups of a class form one client, alone
        owners = assignment[y == c].unique()
        assert owners.numel() == 1
    assert sorted(assignment.unique().tolist()) == [0, 1, 2]
    assert torch.equal(assignment, P.cluster_groups_by_labels(groups, data, 3, seed=42, n_init=10))


def test_louvain_plus_with_the_authors_settings_on_cora(cora):
    """100 groups, delta 20, seed 42 (digest A14): every node in one of K clients, reproducible, K = 10 and 20."""
    for k in (10, 20):
        assignment = P.partition_nodes(cora, "louvain_plus", k, 42)
        check_partition(cora, assignment, k, may_drop=False)
        assert torch.equal(assignment, P.partition_nodes(cora, "louvain_plus", k, 42))
