"""Node structure features that need the global graph: Node2Vec and GDV (FedStruct Table 8, App. H)."""
from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from fglcore.config import ConfigError
from fglcore.data import graphlets
from fglcore.data import node_structure as ns


def two_cliques(size: int = 12) -> tuple[torch.Tensor, int]:
    """Two cliques joined by one edge, both directions."""
    edges = [(a, b) for block in (0, size) for a in range(block, block + size) for b in range(block, block + size)
             if a != b]
    edges += [(0, size), (size, 0)]
    return torch.tensor(edges).t(), 2 * size


def test_a_uniform_walk_follows_edges_and_an_isolated_node_stays():
    edge_index, n = two_cliques(4)  # nodes 0..7; node 8 has no edge
    row, col = edge_index
    order = torch.argsort(row * (n + 1) + col)
    rowptr = torch.zeros(n + 2, dtype=torch.long)
    rowptr[1:] = torch.cumsum(torch.bincount(row, minlength=n + 1), 0)
    torch.manual_seed(0)
    walks = ns.uniform_random_walk(rowptr, col[order], torch.tensor([0, 5, 8]), 6)
    assert walks.shape == (3, 7) and walks[:, 0].tolist() == [0, 5, 8]
    adjacent = set(zip(row.tolist(), col.tolist()))
    for walk in walks[:2].tolist():
        assert all((a, b) in adjacent for a, b in zip(walk, walk[1:]))
    assert walks[2].tolist() == [8] * 7
    with pytest.raises(ConfigError, match="p, q"):
        ns.uniform_random_walk(rowptr, col, torch.tensor([0]), 3, p=0.5)


@pytest.mark.parametrize("chunk", [1 << 17, 50])
def test_the_chunked_skip_gram_loss_is_pyg_node2vec_loss_bit_for_bit(chunk, monkeypatch):
    """skip_gram_loss gives PyG's Node2Vec.loss and its gradient for the table exactly, on every batch of two
    epochs while the table trains (chunk 50: many uneven chunks of windows)."""
    monkeypatch.setattr(ns, "SKIP_GRAM_CHUNK", chunk)
    generator = torch.Generator().manual_seed(0)
    n = 60
    edge_index = torch.randint(0, n, (2, 300), generator=generator)
    edge_index = torch.cat([edge_index, edge_index.flip(0)], dim=1)
    torch.manual_seed(1)
    model = ns.node2vec_model(edge_index, n, 16, walk_length=7, context_size=4, walks_per_node=3,
                              num_negative_samples=2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    batches = 0
    for _ in range(2):
        for positive, negative in model.loader(batch_size=16, shuffle=True):
            model.zero_grad()
            expected = model.loss(positive, negative)
            expected.backward()
            grad = model.embedding.weight.grad.clone()
            model.zero_grad()
            ours = ns.skip_gram_loss(model, positive, negative)
            ours.backward()
            assert torch.equal(ours, expected) and torch.equal(model.embedding.weight.grad, grad)
            optimizer.step()
            batches += 1
    assert batches == 8


def test_node2vec_features_are_those_of_pyg_loss(monkeypatch):
    """The whole training with skip_gram_loss gives the embeddings training with PyG's loss gives."""
    edge_index, n = two_cliques()
    settings = {"epochs": 5, "walk_length": 6, "context_size": 3, "walks_per_node": 4, "batch_size": 8}
    ours = ns.node2vec_features(edge_index, n, width=8, seed=3, cache=False, **settings)
    monkeypatch.setattr(ns, "skip_gram_loss", lambda model, positive, negative: model.loss(positive, negative))
    assert torch.equal(ours, ns.node2vec_features(edge_index, n, width=8, seed=3, cache=False, **settings))


def test_node2vec_features_are_deterministic_cached_and_place_a_clique_together(tmp_path, monkeypatch):
    monkeypatch.setattr(ns, "cache_root", lambda: tmp_path)
    edge_index, n = two_cliques()
    settings = {"epochs": 60, "walk_length": 6, "context_size": 3, "walks_per_node": 4, "batch_size": 8, "lr": 0.05}
    z = ns.node2vec_features(edge_index, n, width=8, seed=3, cache=False, **settings)
    assert z.shape == (n, 8) and z.dtype == torch.float32
    assert torch.equal(z, ns.node2vec_features(edge_index, n, width=8, seed=3, cache=False, **settings))
    assert not torch.equal(z, ns.node2vec_features(edge_index, n, width=8, seed=4, cache=False, **settings))
    assert torch.equal(ns.node2vec_features(edge_index, n, width=8, seed=3, **settings), z)  # computed, stored
    (stored,) = (tmp_path / "structure").glob("*.pt")
    torch.save(torch.zeros(n, 8), stored)
    assert torch.equal(ns.node2vec_features(edge_index, n, width=8, seed=3, **settings), torch.zeros(n, 8))  # read
    unit = torch.nn.functional.normalize(z, dim=1)
    similarity = unit @ unit.t()
    same = torch.block_diag(torch.ones(n // 2, n // 2), torch.ones(n // 2, n // 2)).bool()
    same.fill_diagonal_(False)
    different = ~torch.block_diag(torch.ones(n // 2, n // 2), torch.ones(n // 2, n // 2)).bool()
    assert similarity[same].mean() > similarity[different].mean() + 0.2  # walks stay inside a clique
    with pytest.raises(ConfigError, match="context_size"):
        ns.node2vec_features(edge_index, n, width=8, cache=False, walk_length=2, context_size=3)
    with pytest.raises(ConfigError, match="p, q"):
        ns.node2vec_features(edge_index, n, width=8, cache=False, q=2.0)


# ----------------------------------------------------------------------------- GDV (graphlet orbit counts)

GRAPHLETS = [  # Pržulj (2007), Fig. 1: G0-G29 as edge lists on nodes 0..k-1, and the orbit of each node
    ([(0, 1)], [0, 0]),
    ([(0, 1), (0, 2)], [2, 1, 1]),
    ([(0, 1), (0, 2), (1, 2)], [3, 3, 3]),
    ([(0, 1), (0, 3), (1, 2)], [5, 5, 4, 4]),
    ([(0, 3), (1, 3), (2, 3)], [6, 6, 6, 7]),
    ([(0, 1), (0, 3), (1, 2), (2, 3)], [8, 8, 8, 8]),
    ([(0, 3), (1, 2), (1, 3), (2, 3)], [9, 10, 10, 11]),
    ([(0, 1), (0, 2), (0, 3), (1, 2), (2, 3)], [13, 12, 13, 12]),
    ([(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)], [14, 14, 14, 14]),
    ([(0, 1), (0, 4), (1, 2), (2, 3)], [16, 17, 16, 15, 15]),
    ([(0, 4), (1, 3), (2, 3), (3, 4)], [18, 19, 19, 21, 20]),
    ([(0, 4), (1, 4), (2, 4), (3, 4)], [22, 22, 22, 22, 23]),
    ([(0, 1), (0, 2), (0, 4), (1, 2), (2, 3)], [26, 25, 26, 24, 24]),
    ([(0, 4), (1, 2), (1, 3), (2, 3), (3, 4)], [27, 29, 29, 30, 28]),
    ([(0, 4), (1, 4), (2, 3), (2, 4), (3, 4)], [31, 31, 32, 32, 33]),
    ([(0, 1), (0, 4), (1, 2), (2, 3), (3, 4)], [34, 34, 34, 34, 34]),
    ([(0, 1), (1, 3), (1, 4), (2, 3), (2, 4)], [35, 38, 36, 37, 37]),
    ([(0, 1), (1, 2), (1, 3), (1, 4), (2, 3), (2, 4)], [39, 42, 41, 40, 40]),
    ([(0, 1), (0, 4), (1, 4), (2, 3), (2, 4), (3, 4)], [43, 43, 43, 43, 44]),
    ([(0, 1), (1, 3), (1, 4), (2, 3), (2, 4), (3, 4)], [45, 47, 46, 48, 48]),
    ([(0, 2), (0, 3), (0, 4), (1, 2), (1, 3), (1, 4)], [50, 50, 49, 49, 49]),
    ([(0, 1), (0, 3), (0, 4), (1, 2), (2, 3), (3, 4)], [53, 51, 51, 53, 52]),
    ([(0, 3), (0, 4), (1, 3), (1, 4), (2, 3), (2, 4), (3, 4)], [54, 54, 54, 55, 55]),
    ([(0, 4), (1, 2), (1, 3), (1, 4), (2, 3), (2, 4), (3, 4)], [56, 57, 57, 57, 58]),
    ([(0, 1), (0, 4), (1, 2), (1, 3), (1, 4), (2, 3), (3, 4)], [59, 61, 59, 60, 60]),
    ([(0, 2), (0, 3), (0, 4), (1, 2), (1, 3), (1, 4), (2, 4)], [63, 63, 64, 62, 64]),
    ([(0, 1), (0, 3), (0, 4), (1, 3), (1, 4), (2, 3), (2, 4), (3, 4)], [66, 66, 65, 67, 67]),
    ([(0, 1), (0, 3), (0, 4), (1, 2), (1, 4), (2, 3), (2, 4), (3, 4)], [68, 68, 68, 68, 69]),
    ([(0, 1), (0, 3), (0, 4), (1, 2), (1, 3), (1, 4), (2, 3), (2, 4), (3, 4)], [70, 71, 70, 71, 71]),
    ([(a, b) for a in range(5) for b in range(a + 1, 5)], [72] * 5),
]


def rooted_form(graph: nx.Graph, root) -> tuple:
    """A canonical form of ``graph`` seen from ``root``: the largest upper-triangle adjacency over the orders
    that put ``root`` first (equal exactly when an isomorphism maps one root onto the other)."""
    others = [v for v in graph if v != root]
    return (len(graph), max(tuple(int(graph.has_edge(order[i], order[j])) for i in range(len(order))
                                  for j in range(i + 1, len(order)))
                            for order in ([root, *p] for p in itertools.permutations(others))))


ORBIT_OF = {rooted_form(nx.Graph(edges), v): orbit for edges, orbits in GRAPHLETS for v, orbit in enumerate(orbits)}


def brute_force_orbits(graph: nx.Graph) -> np.ndarray:
    """Every connected induced subgraph on 2-5 nodes, each of its nodes counted at its orbit."""
    counts = np.zeros((graph.number_of_nodes(), graphlets.NUM_ORBITS), dtype=np.int64)
    for size in range(2, 6):
        for nodes in itertools.combinations(graph.nodes, size):
            sub = graph.subgraph(nodes)
            if nx.is_connected(sub):
                for v in nodes:
                    counts[v, ORBIT_OF[rooted_form(sub, v)]] += 1
    return counts


def orbits_of(graph: nx.Graph) -> np.ndarray:
    edges = torch.tensor(list(graph.edges), dtype=torch.long).reshape(-1, 2).t()
    return graphlets.orbit_counts(torch.cat([edges, edges.flip(0)], dim=1), graph.number_of_nodes())


def test_the_graphlet_table_is_the_30_graphlets_with_their_automorphism_orbits():
    atlas = [g for g in nx.graph_atlas_g() if 2 <= len(g) <= 5 and nx.is_connected(g)]
    tables = [nx.Graph(edges) for edges, _ in GRAPHLETS]
    assert len(atlas) == len(tables) == 30
    assert all(sum(nx.is_isomorphic(g, h) for h in tables) == 1 for g in atlas)
    assert sorted(o for _, orbits in GRAPHLETS for o in set(orbits)) == list(range(73))
    for graph, (_, orbits) in zip(tables, GRAPHLETS):  # same orbit <=> an automorphism maps one node on the other
        for u, v in itertools.combinations(graph.nodes, 2):
            assert (orbits[u] == orbits[v]) == (rooted_form(graph, u) == rooted_form(graph, v))


NAMED = {
    "path": nx.path_graph(7), "star": nx.star_graph(5), "cycle5": nx.cycle_graph(5), "cycle6": nx.cycle_graph(6),
    "clique": nx.complete_graph(6), "triangle with a tail": nx.Graph([(0, 1), (1, 2), (0, 2), (2, 3), (3, 4), (4, 5)]),
    "wheel": nx.wheel_graph(6), "petersen": nx.petersen_graph(), "barbell": nx.barbell_graph(4, 1),
    "wheel W4": nx.wheel_graph(5), "K2,3": nx.complete_multipartite_graph(2, 3),
    **{f"gnp {n} {p}": nx.gnp_random_graph(n, p, seed=n) for n, p in ((10, 0.3), (11, 0.5), (12, 0.7))},
}


@pytest.mark.parametrize("name", list(NAMED))
def test_orbit_counts_of_named_graphs_equal_the_brute_force(name):
    graph = NAMED[name]
    assert np.array_equal(orbits_of(graph), brute_force_orbits(graph))


def test_orbit_counts_by_hand():
    star = orbits_of(nx.star_graph(5))  # centre 0 and 5 leaves
    assert star[0, [0, 2, 7, 23]].tolist() == [5, 10, 10, 5] and star[1, [0, 1, 6, 22]].tolist() == [1, 4, 6, 4]
    path = orbits_of(nx.path_graph(5))
    assert path[:, 15].tolist() == [1, 0, 0, 0, 1] and path[:, 17].tolist() == [0, 0, 1, 0, 0]
    assert orbits_of(nx.cycle_graph(5))[:, 34].tolist() == [1] * 5
    clique = orbits_of(nx.complete_graph(6))
    assert clique[:, [0, 3, 14, 72]].tolist() == [[5, 10, 10, 5]] * 6 and clique[:, 15:72].sum() == 0


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 9).flatmap(lambda n: st.tuples(st.just(n), st.lists(
    st.booleans(), min_size=n * (n - 1) // 2, max_size=n * (n - 1) // 2))))
def test_orbit_counts_of_random_graphs_equal_the_brute_force(graph_spec):
    n, present = graph_spec  # one flag per pair of nodes
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(pair for pair, there in zip(itertools.combinations(range(n), 2), present) if there)
    assert np.array_equal(orbits_of(graph), brute_force_orbits(graph))


def test_orbit_counts_read_any_edge_list_as_a_simple_undirected_graph(monkeypatch):
    graph = nx.gnp_random_graph(11, 0.55, seed=7)
    expected = brute_force_orbits(graph)
    one_way = torch.tensor(list(graph.edges)).t()
    messy = torch.cat([one_way, one_way.flip(0), one_way[:, :5], torch.tensor([[3, 4], [3, 4]])], dim=1)
    assert np.array_equal(graphlets.orbit_counts(one_way, 11), expected)
    assert np.array_equal(graphlets.orbit_counts(messy, 11), expected)  # repeats and self-loops ignored
    monkeypatch.setattr(graphlets, "_CHUNK", 5)  # the chunked enumeration gives the same counts
    assert np.array_equal(graphlets.orbit_counts(messy, 11), expected)
    with_isolated = graphlets.orbit_counts(one_way, 13)
    assert np.array_equal(with_isolated[:11], expected) and not with_isolated[11:].any()
    with pytest.raises(ValueError, match="node ids"):
        graphlets.orbit_counts(one_way, 5)


def test_gdv_features_standardise_the_orbit_counts_and_are_cached(tmp_path, monkeypatch):
    monkeypatch.setattr(ns, "cache_root", lambda: tmp_path)
    graph = nx.barbell_graph(5, 2)
    n = graph.number_of_nodes()
    edge_index = torch.tensor(list(graph.edges)).t()
    counts = graphlets.orbit_counts(edge_index, n).astype(np.float64)
    z = ns.gdv_features(edge_index, n, cache=False)
    assert z.shape == (n, 73) and z.dtype == torch.float32
    varying = counts.std(axis=0) > 0
    assert 0 < varying.sum() < 73  # some orbits occur nowhere in a barbell (e.g. 34, the 5-cycle)
    expected = (counts[:, varying] - counts[:, varying].mean(0)) / counts[:, varying].std(0)
    assert np.allclose(z.numpy()[:, varying], expected, atol=1e-6)
    assert not z[:, torch.from_numpy(~varying)].any()  # a constant column stays 0
    assert torch.allclose(z[:, torch.from_numpy(varying)].std(0, unbiased=False), torch.ones(int(varying.sum())))
    assert torch.equal(ns.gdv_features(edge_index, n), z)  # computed, stored
    (stored,) = (tmp_path / "structure").glob("*.pt")
    torch.save(torch.ones(n, 73), stored)
    assert torch.equal(ns.gdv_features(edge_index, n), torch.ones(n, 73))  # read back
    assert torch.equal(ns.gdv_features(edge_index, n, cache=False), z)


def test_the_named_graphs_hold_every_orbit():
    """So that the brute-force comparison above checks every one of ORCA's equations on a nonzero count."""
    occurring = set()
    for graph in NAMED.values():
        occurring |= set(np.nonzero(orbits_of(graph).sum(axis=0))[0].tolist())
    assert occurring == set(range(73))
