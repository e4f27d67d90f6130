"""The local-bias paper's CSBM substitutes and its non-i.i.d. partition (digest §6.2, A12)."""
import numpy as np
import pytest
import torch

from fglcore.config import ConfigError
from fglcore.data import datasets
from fglcore.data.csbm import SUBSTITUTE_FOR, SUBSTITUTE_SPLITS, SUBSTITUTES, CSBMSpec, class_sizes, contextual_sbm
from fglcore.data.partition import partition_nodes
from fglcore.metrics import edge_homophily

SMALL = CSBMSpec(num_nodes=600, num_classes=6, avg_degree=12.0, homophily=0.8, num_features=8,
                 class_exponent=1.0, min_class=20, mean_norm=1.0, noise=1.0, seed=3)


def test_same_spec_same_graph_other_seed_other_graph():
    a, b = contextual_sbm(SMALL), contextual_sbm(SMALL)
    assert torch.equal(a.edge_index, b.edge_index) and torch.equal(a.x, b.x) and torch.equal(a.y, b.y)
    c = contextual_sbm(CSBMSpec(**{**SMALL.__dict__, "seed": 4}))
    assert not torch.equal(a.y, c.y)


def test_sizes_degree_homophily_and_imbalance():
    data = contextual_sbm(SMALL)
    assert data.num_nodes == 600 and data.x.shape == (600, 8)
    assert data.is_undirected() and not data.has_self_loops()
    degree = data.edge_index.shape[1] / data.num_nodes
    assert 10.0 < degree <= 12.0  # duplicates and self-loops dropped: slightly below the target
    # a same-class target with probability 0.8, else a uniform one (same class by chance ~ sum of squared shares)
    shares = torch.bincount(data.y).double() / 600
    expected = 0.8 + 0.2 * float((shares ** 2).sum())
    assert abs(edge_homophily(data.edge_index, data.y) - expected) < 0.05
    counts = torch.bincount(data.y, minlength=6)
    assert counts.min() >= 20 and counts[0] > 2 * counts[-1]  # Zipf-sized: the largest class dominates


def test_class_sizes_sum_and_floor():
    sizes = class_sizes(1000, 7, 1.5, 10)
    assert sizes.sum() == 1000 and sizes.min() >= 10 and list(sizes) == sorted(sizes, reverse=True)


def test_features_carry_the_class_but_imperfectly():
    data = contextual_sbm(SMALL)
    means = torch.stack([data.x[data.y == k].mean(0) for k in range(6)])
    nearest = torch.cdist(data.x, means).argmin(1)
    acc = float((nearest == data.y).float().mean())
    assert 1 / 6 + 0.05 < acc < 0.95  # informative, not separable


def test_bad_spec_names_the_field():
    with pytest.raises(ConfigError, match="homophily"):
        contextual_sbm(CSBMSpec(**{**SMALL.__dict__, "homophily": 1.5}))
    with pytest.raises(ConfigError, match="min_class"):
        contextual_sbm(CSBMSpec(**{**SMALL.__dict__, "min_class": 200}))


def test_substitutes_are_registered_and_labelled():
    names = datasets.dataset_names("node")
    for name, spec in SUBSTITUTES.items():
        assert name.endswith("-like") and name in names
        assert "SYNTHETIC substitute" in datasets.dataset_info(name).description
        assert datasets.NODE_COUNTS[name] == spec.num_nodes
        assert name in SUBSTITUTE_FOR and abs(sum(SUBSTITUTE_SPLITS[name]) - 1) < 1e-9
    assert SUBSTITUTES["Reddit-like"].num_classes == 41 and SUBSTITUTES["Products-like"].num_classes == 47


def test_favoured_classes_partition_is_equal_size_and_skewed():
    data = contextual_sbm(CSBMSpec(**{**SMALL.__dict__, "class_exponent": 0.0}))  # balanced classes
    a = partition_nodes(data, "favoured_classes", 4, seed=1)
    assert torch.equal(a, partition_nodes(data, "favoured_classes", 4, seed=1))
    sizes = torch.bincount(a, minlength=4)
    assert sizes.tolist() == [150, 150, 150, 150]
    # the first client (drawn from every node) holds its two favoured classes about 10/(10*2+4) each
    hist = torch.bincount(data.y[a == 0], minlength=6).double() / 150
    assert hist.max() > 0.3 and hist.sort().values[:2].sum() < 0.15
    uniform = partition_nodes(data, "random", 4, seed=1, equal_size=True)
    flat = torch.bincount(data.y[uniform == 0], minlength=6).double() / 150
    assert flat.max() < 0.3


def test_favoured_classes_rejects_bad_options():
    data = contextual_sbm(SMALL)
    with pytest.raises(ConfigError, match="weight"):
        partition_nodes(data, "favoured_classes", 4, seed=1, weight=0.0)
    with pytest.raises(ConfigError, match="favoured"):
        partition_nodes(data, "favoured_classes", 4, seed=1, favoured=9)


def test_label_noise_redraws_that_share_of_labels():
    clean = contextual_sbm(SMALL)
    noisy = contextual_sbm(CSBMSpec(**{**SMALL.__dict__, "label_noise": 0.3}))
    assert torch.equal(clean.edge_index, noisy.edge_index) and torch.equal(clean.x, noisy.x)
    changed = float((clean.y != noisy.y).float().mean())
    assert abs(changed - 0.3 * 5 / 6) < 0.06  # a redrawn label keeps its class with probability 1/6
    with pytest.raises(ConfigError, match="label_noise"):
        contextual_sbm(CSBMSpec(**{**SMALL.__dict__, "label_noise": -0.1}))
