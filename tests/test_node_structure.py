"""Node structure features that need the global graph: Node2Vec (FedStruct Table 8, App. H)."""
from __future__ import annotations

import pytest
import torch

from fglcore.config import ConfigError
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
