"""Split protocols: ratios, rounding, disjointness, stratification, determinism and seeds."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from fglcore.data import splits as S
from fglcore.data.datasets import load_node_data


def counts(folds) -> list[int]:
    folds = np.asarray(folds)
    return [int((folds == f).sum()) for f in (S.TRAIN, S.VAL, S.TEST)]


def test_registry_documents_every_protocol():
    assert set(S.split_names("node")) == {"per_client_random", "per_client_stratified", "global_random",
                                          "planetoid_public", "planetoid_full"}
    assert S.split_names("graph") == ["graph_stratified"]
    for name in S.SPLITS:
        spec = S.SPLITS.get(name)
        assert spec.paper and spec.description
    assert S.SPLITS.get("per_client_random").paper_ratios == (0.4, 0.3, 0.3)
    assert S.SPLITS.get("per_client_stratified").paper_ratios == (0.2, 0.4, 0.4)
    assert S.SPLITS.get("global_random").paper_ratios == (0.1, 0.1, 0.8)
    assert S.SPLITS.get("graph_stratified").paper_ratios == (0.8, 0.1, 0.1)


@pytest.mark.parametrize("n,expected", [(100, [40, 30, 30]), (7, [2, 2, 3]), (30, [12, 9, 9]), (3, [1, 1, 1]),
                                        (1, [0, 0, 1]), (0, [0, 0, 0])])
def test_random_folds_cut_at_cumulative_floors(n, expected):
    # FedSpray's data.py: train = [:int(0.4 n)], val = [int(0.4 n):int(0.7 n)], test = rest
    folds = S.random_folds(np.zeros(n), (0.4, 0.3, 0.3), np.random.default_rng(0))
    assert counts(folds) == expected


def test_random_folds_are_a_seeded_permutation():
    labels = np.zeros(50)
    a = S.random_folds(labels, (0.4, 0.3, 0.3), np.random.default_rng(1))
    assert np.array_equal(a, S.random_folds(labels, (0.4, 0.3, 0.3), np.random.default_rng(1)))
    assert not np.array_equal(a, S.random_folds(labels, (0.4, 0.3, 0.3), np.random.default_rng(2)))


def test_stratified_folds_round_down_per_class_and_keep_tiny_classes_in_test():
    labels = np.array([0] * 10 + [1] * 5 + [2] * 2 + [3] * 1)
    folds = S.stratified_folds(labels, (0.2, 0.4, 0.4), np.random.default_rng(0))
    per_class = {c: counts(folds[labels == c]) for c in range(4)}
    # O-pFGL: floor(0.2 n_c) train, floor(0.4 n_c) val, the rest test
    assert per_class == {0: [2, 4, 4], 1: [1, 2, 2], 2: [0, 0, 2], 3: [0, 0, 1]}


def test_stratified_folds_respect_class_proportions_on_cora():
    cora = load_node_data("Cora")
    y = cora.y.numpy()
    folds = S.stratified_folds(y, (0.2, 0.4, 0.4), np.random.default_rng(0))
    for c in range(cora.num_classes):
        n_c = int((y == c).sum())
        train, val, test = counts(folds[y == c])
        assert train == int(0.2 * n_c) and val == int(0.4 * n_c) and train + val + test == n_c


def test_ratios_are_checked():
    with pytest.raises(ValueError, match="summing to 1"):
        S.random_folds(np.zeros(4), (0.5, 0.5, 0.5), np.random.default_rng(0))
    with pytest.raises(ValueError, match="three non-negative"):
        S.check_ratios((0.5, 0.5))


def toy_graph(n: int = 60, num_classes: int = 3) -> Data:
    y = torch.arange(n) % num_classes
    return Data(y=y, edge_index=torch.empty(2, 0, dtype=torch.long), num_nodes=n)


@pytest.mark.parametrize("split", ["per_client_random", "per_client_stratified"])
def test_per_client_splits_are_drawn_inside_each_client(split):
    data = toy_graph(60)
    assignment = torch.cat([torch.zeros(30), torch.ones(20), torch.full((10,), -1)]).long()
    folds = S.node_split_folds(split, data, assignment, (0.2, 0.4, 0.4), seed=0)
    assert counts(folds[assignment == -1].numpy()) == [0, 0, 0]
    assert bool((folds[assignment == -1] == S.UNSPLIT).all())
    assert counts(folds[assignment == 0].numpy()) == [6, 12, 12]
    assert counts(folds[assignment == 1].numpy()) == ([4, 8, 8] if split == "per_client_random" else [3, 6, 11])
    # client 0's draw depends on its own nodes and the seed only
    moved = assignment.clone()
    moved[50:] = 1
    again = S.node_split_folds(split, data, moved, (0.2, 0.4, 0.4), seed=0)
    assert torch.equal(again[assignment == 0], folds[assignment == 0])
    assert not torch.equal(S.node_split_folds(split, data, assignment, (0.2, 0.4, 0.4), seed=1), folds)


def test_node_split_masks_are_disjoint():
    data = toy_graph(90)
    assignment = torch.arange(90) % 3
    train, val, test = S.node_split_masks("per_client_random", data, assignment, (0.4, 0.3, 0.3), seed=0)
    assert not bool((train & val).any() | (train & test).any() | (val & test).any())
    assert bool((train | val | test).all())
    assert (int(train.sum()), int(val.sum()), int(test.sum())) == (36, 27, 27)


def test_global_random_split_is_drawn_before_partitioning():
    data = toy_graph(100)
    first = S.node_split_folds("global_random", data, torch.arange(100) % 4, (0.1, 0.1, 0.8), seed=3)
    other_partition = S.node_split_folds("global_random", data, torch.arange(100) % 7, (0.1, 0.1, 0.8), seed=3)
    assert torch.equal(first, other_partition)  # independent of the partition
    assert counts(first.numpy()) == [10, 10, 80]


def test_planetoid_splits_use_the_datasets_masks():
    public = load_node_data("Cora")
    assignment = torch.arange(public.num_nodes) % 5
    train, val, test = S.node_split_masks("planetoid_public", public, assignment, (0.4, 0.3, 0.3), seed=0)
    assert torch.equal(train, public.train_mask) and torch.equal(val, public.val_mask)
    assert torch.equal(test, public.test_mask)
    assert (int(train.sum()), int(val.sum()), int(test.sum())) == (140, 500, 1000)
    assert S.SPLITS.get("planetoid_full").planetoid_split == "full"
    full = load_node_data("Cora", planetoid_split="full")
    train, val, test = S.node_split_masks("planetoid_full", full, assignment, (0.4, 0.3, 0.3), seed=0)
    assert (int(train.sum()), int(val.sum()), int(test.sum())) == (1208, 500, 1000)
    dropped = assignment.clone()
    dropped[:10] = -1
    train, _, _ = S.node_split_masks("planetoid_full", full, dropped, (0.4, 0.3, 0.3), seed=0)
    assert not bool(train[:10].any())


def test_dataset_split_without_masks_is_an_error():
    with pytest.raises(ValueError, match="own train/val/test masks"):
        S.node_split_folds("planetoid_public", toy_graph(6), torch.zeros(6, dtype=torch.long), (0.4, 0.3, 0.3), 0)
    with pytest.raises(ValueError, match="graph classification"):
        S.node_split_folds("graph_stratified", toy_graph(6), torch.zeros(6, dtype=torch.long), (0.8, 0.1, 0.1), 0)


def mutag_like_labels() -> np.ndarray:
    return np.array([1] * 125 + [0] * 63)  # MUTAG's 188 graphs: 125 / 63


def test_graph_split_reproduces_fedstar_counts():
    y = mutag_like_labels()
    train, val, test = S.graph_split_indices(y, (0.8, 0.1, 0.1), seed=123)
    assert (len(train), len(val), len(test)) == (150, 19, 19)  # FedStar's MUTAG train count
    ids = torch.cat([train, val, test])
    assert ids.unique().numel() == len(y)
    for part, size in ((train, 150), (test, 19)):
        share = float((y[part.numpy()] == 1).mean())
        assert abs(share * size - 125 / 188 * size) <= 1  # stratified: class shares kept within one graph
    again = S.graph_split_indices(torch.as_tensor(y), (0.8, 0.1, 0.1), seed=123)
    assert all(torch.equal(a, b) for a, b in zip((train, val, test), again))
    other = S.graph_split_indices(y, (0.8, 0.1, 0.1), seed=124)
    assert not torch.equal(other[0], train)


def test_graph_split_falls_back_when_sklearn_cannot_stratify():
    y = np.array([0] * 12 + [1])  # a class with a single graph
    train, val, test = S.graph_split_indices(y, (0.8, 0.1, 0.1), seed=123)
    assert sorted(torch.cat([train, val, test]).tolist()) == list(range(13))
    assert 12 in test.tolist()  # the single graph of class 1 is test only (per-class floor rule)
    assert (len(train), len(val)) == (9, 1)


def test_graph_split_with_zero_ratios():
    y = mutag_like_labels()
    train, val, test = S.graph_split_indices(y, (0.9, 0.0, 0.1), seed=0)
    assert len(val) == 0 and len(train) + len(test) == len(y)
    train, val, test = S.graph_split_indices(y, (1.0, 0.0, 0.0), seed=0)
    assert len(train) == len(y)


def test_split_seed_resolution():
    assert S.resolve_split_seed("graph_stratified", None, 5) == 123  # FedStar's fixed data seed
    assert S.resolve_split_seed("graph_stratified", 7, 5) == 7
    assert S.resolve_split_seed("per_client_random", None, 5) == 5
    assert S.resolve_split_seed("per_client_random", 2, 5) == 2
