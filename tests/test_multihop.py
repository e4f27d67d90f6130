"""FedStruct's multi-hop adjacency against dense computations on small graphs."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch_geometric.utils import erdos_renyi_graph, to_undirected

from fglcore.config import ConfigError
from fglcore.data.multihop import multihop_adjacency, normalized_adjacency, prune_top, to_torch_sparse


def random_graph(n: int = 40, p: float = 0.12, seed: int = 0) -> torch.Tensor:
    torch.manual_seed(seed)
    return to_undirected(erdos_renyi_graph(n, p), num_nodes=n)


def dense_a_hat(edge_index: torch.Tensor, n: int) -> np.ndarray:
    a = np.zeros((n, n))
    a[edge_index[0].numpy(), edge_index[1].numpy()] = 1.0
    a += np.eye(n)
    return a / a.sum(axis=1, keepdims=True)


def dense_prune(m: np.ndarray, keep: int) -> np.ndarray:
    values = np.sort(m[m != 0])[::-1]
    if values.size <= keep:
        return m
    return np.where(m >= values[keep - 1], m, 0.0)


def test_normalized_adjacency_uses_global_degrees_with_self_loops():
    edge_index = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    a_hat = normalized_adjacency(edge_index, 4).toarray()
    assert np.allclose(a_hat, [[1 / 2, 1 / 2, 0, 0], [1 / 3, 1 / 3, 1 / 3, 0], [0, 1 / 2, 1 / 2, 0], [0, 0, 0, 1]])


@pytest.mark.parametrize("hops", [1, 2, 5])
def test_full_power_matches_dense(hops):
    edge_index, n = random_graph(), 40
    ours = multihop_adjacency(edge_index, n, hops, pruning="none").toarray()
    expected = np.linalg.matrix_power(dense_a_hat(edge_index, n), hops)
    assert np.allclose(ours, expected, atol=1e-12)
    assert np.allclose(ours.sum(axis=1), 1.0)  # row-stochastic


@pytest.mark.parametrize("p", [1, 3])
def test_global_pruning_matches_dense_pruning_after_every_product(p):
    edge_index, n, hops = random_graph(), 40, 4
    a_hat = dense_a_hat(edge_index, n)
    expected = dense_prune(a_hat, p * n)
    for _ in range(hops - 1):
        expected = dense_prune(a_hat @ expected, p * n)
    ours = multihop_adjacency(edge_index, n, hops, pruning="global", p=p)
    assert np.allclose(ours.toarray(), expected, atol=1e-12)
    assert ours.nnz >= p * n  # at least p*n kept (ties at the threshold are all kept) ...
    full = multihop_adjacency(edge_index, n, hops, pruning="none")
    assert ours.nnz < full.nnz  # ... and pruning removed something
    assert (ours.toarray().sum(axis=1) <= 1 + 1e-12).all()  # no renormalisation


def test_block_pruning_matches_dense_blocks():
    edge_index, n, hops, p = random_graph(), 40, 3, 4
    assignment = torch.as_tensor(np.random.default_rng(1).integers(0, 3, n))
    a = np.zeros((n, n))
    a[edge_index[0].numpy(), edge_index[1].numpy()] = 1.0
    a += np.eye(n)
    inv_deg = 1.0 / a.sum(axis=1)
    members = [np.flatnonzero(assignment.numpy() == k) for k in range(3)]
    power = inv_deg[:, None] * a
    for _ in range(hops - 1):
        new = np.zeros((n, n))
        for nodes_i in members:
            total = sum(dense_prune(a[np.ix_(nodes_i, nodes_k)] @ power[nodes_k], math.ceil(p / 3) * nodes_i.size)
                        for nodes_k in members)
            new[nodes_i] = inv_deg[nodes_i, None] * total
        power = new
    ours = multihop_adjacency(edge_index, n, hops, pruning="block", p=p, assignment=assignment)
    assert np.allclose(ours.toarray(), power, atol=1e-12)
    unpruned = multihop_adjacency(edge_index, n, hops, pruning="block", p=100, assignment=assignment)
    assert np.allclose(unpruned.toarray(), multihop_adjacency(edge_index, n, hops, pruning="none").toarray())


def test_prune_top_keeps_ties_and_to_torch_sparse_round_trips():
    import scipy.sparse as sp

    m = sp.csr_matrix(np.array([[0.5, 0.2, 0.2], [0.1, 0.0, 0.9]]))
    assert prune_top(m, 2).toarray().tolist() == [[0.5, 0.0, 0.0], [0.0, 0.0, 0.9]]
    assert prune_top(m, 3).nnz == 4  # the two 0.2 tie at the threshold: both kept
    t = to_torch_sparse(m)
    assert torch.allclose(t.to_dense(), torch.tensor(m.toarray(), dtype=torch.float32))


def test_bad_settings_are_config_errors():
    edge_index = random_graph()
    with pytest.raises(ConfigError, match="pruning: 'top'"):
        multihop_adjacency(edge_index, 40, 2, pruning="top")
    with pytest.raises(ConfigError, match="prune_p"):
        multihop_adjacency(edge_index, 40, 2, p=0)
    with pytest.raises(ConfigError, match="structure_hops"):
        multihop_adjacency(edge_index, 40, 0)
