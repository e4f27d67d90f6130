"""fglcore.metrics against scikit-learn, PyG and hand-computed values."""
from __future__ import annotations

import math
import warnings

import pytest
import torch
from sklearn.metrics import accuracy_score, f1_score
from torch_geometric.utils import homophily as pyg_homophily

from fglcore.metrics import (
    Prediction,
    accuracy,
    edge_homophily,
    macro_f1,
    majority_class,
    minority_accuracy,
    minority_mask,
    node_homophily,
    summarize_predictions,
)


def sklearn_macro_f1(pred, y, num_classes):
    with warnings.catch_warnings():  # the default zero_division warns, then scores 0 like zero_division=0
        warnings.simplefilter("ignore")
        default = f1_score(y.numpy(), pred.numpy(), labels=list(range(num_classes)), average="macro")
    explicit = f1_score(y.numpy(), pred.numpy(), labels=list(range(num_classes)), average="macro", zero_division=0)
    assert default == explicit
    return explicit


@pytest.mark.parametrize("seed", range(20))
def test_macro_f1_is_sklearns_over_all_classes(seed):
    generator = torch.Generator().manual_seed(seed)
    num_classes = int(torch.randint(2, 8, (1,), generator=generator))
    n = int(torch.randint(1, 40, (1,), generator=generator))
    # labels drawn from part of the classes only, so some classes are absent from y, from pred, or from both
    y = torch.randint(0, max(1, num_classes - 2), (n,), generator=generator)
    pred = torch.randint(0, num_classes, (n,), generator=generator)
    assert macro_f1(pred, y, num_classes) == pytest.approx(sklearn_macro_f1(pred, y, num_classes), abs=1e-12)


def test_macro_f1_counts_a_class_absent_from_labels_and_predictions_as_zero():
    y = torch.tensor([0, 0, 1, 1])
    pred = torch.tensor([0, 0, 1, 1])
    assert macro_f1(pred, y, 2) == 1.0
    assert macro_f1(pred, y, 4) == pytest.approx(0.5)  # classes 2 and 3: no sample, F1 = 0 (not skipped)
    assert macro_f1(pred, y, 4) == pytest.approx(sklearn_macro_f1(pred, y, 4))


def test_macro_f1_reads_logits_and_ignores_predictions_outside_the_classes():
    y = torch.tensor([0, 1, 2, 2])
    logits = torch.tensor([[3.0, 0, 0], [0, 2.0, 0], [0, 0, 1.0], [0, 5.0, 0]])
    pred = logits.argmax(-1)
    assert macro_f1(logits, y, 3) == macro_f1(pred, y, 3) == pytest.approx(sklearn_macro_f1(pred, y, 3))
    # a predicted label >= num_classes is a miss for the true class and no class's prediction (sklearn's labels=)
    stray = torch.tensor([0, 1, 5, 2])
    assert macro_f1(stray, y, 3) == pytest.approx(sklearn_macro_f1(stray, y, 3))


def test_accuracy_matches_sklearn_and_reads_logits():
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(50, 4, generator=generator)
    y = torch.randint(0, 4, (50,), generator=generator)
    expected = accuracy_score(y.numpy(), logits.argmax(-1).numpy())
    assert accuracy(logits, y) == pytest.approx(expected)
    assert accuracy(logits.argmax(-1), y) == pytest.approx(expected)


def test_empty_inputs_give_nan():
    empty = torch.empty(0, dtype=torch.long)
    assert math.isnan(accuracy(empty, empty))
    assert math.isnan(macro_f1(empty, empty, 3))
    assert math.isnan(minority_accuracy(torch.tensor([0, 1]), torch.tensor([0, 0]), torch.tensor([False, False])))


def test_minority_nodes_and_their_accuracy():
    y_train = torch.tensor([2, 2, 1, 2, 0])
    assert majority_class(y_train) == 2
    assert majority_class(torch.tensor([1, 0])) == 0  # ties: the smallest label
    y = torch.tensor([2, 1, 0, 2, 1])
    minority = minority_mask(y, y_train)
    assert minority.tolist() == [False, True, True, False, True]
    pred = torch.tensor([2, 1, 2, 0, 1])  # minority nodes 1, 2, 4: right, wrong, right
    assert minority_accuracy(pred, y, minority) == pytest.approx(2 / 3)


@pytest.fixture
def path_graph():
    """Path 0-1-2-3-4 (both directions) plus an isolated node 5; labels 0 0 0 1 1 | 1."""
    pairs = [(0, 1), (1, 2), (2, 3), (3, 4)]
    edge_index = torch.tensor([[a for a, b in pairs] + [b for a, b in pairs],
                               [b for a, b in pairs] + [a for a, b in pairs]])
    return edge_index, torch.tensor([0, 0, 0, 1, 1, 1])


def test_node_homophily_by_hand(path_graph):
    edge_index, y = path_graph
    # shares of same-label neighbours: node 0: 1, node 1: 1, node 2: 1/2, node 3: 1/2, node 4: 1; node 5 has none
    assert node_homophily(edge_index, y) == pytest.approx((1 + 1 + 0.5 + 0.5 + 1) / 5)


def test_node_homophily_is_pygs_on_a_graph_without_isolated_nodes(path_graph):
    edge_index, y = path_graph
    y = y[:5]  # PyG counts an isolated node as 0; ours leaves it out
    assert node_homophily(edge_index, y) == pytest.approx(float(pyg_homophily(edge_index, y, method="node")))


def test_edge_homophily_by_hand_and_as_pyg(path_graph):
    edge_index, y = path_graph
    assert edge_homophily(edge_index, y) == pytest.approx(6 / 8)  # edge 2-3 (both directions) joins two labels
    assert edge_homophily(edge_index, y) == pytest.approx(float(pyg_homophily(edge_index, y, method="edge")))
    empty = torch.empty(2, 0, dtype=torch.long)
    assert math.isnan(node_homophily(empty, y)) and math.isnan(edge_homophily(empty, y))


def one_hot_logits(pred, num_classes=3):
    return torch.nn.functional.one_hot(torch.tensor(pred), num_classes).float()


def test_summaries_micro_client_weighted_and_client_mean():
    a = Prediction(one_hot_logits([0, 0, 1, 1]), torch.tensor([0, 0, 1, 0]))  # 3 of 4 right
    b = Prediction(one_hot_logits([2, 2]), torch.tensor([2, 1]))  # 1 of 2 right
    empty = Prediction(torch.empty(0, 3), torch.empty(0, dtype=torch.long))  # ignored
    micro = summarize_predictions([a, b, empty], 3, "micro")
    assert micro["accuracy"] == pytest.approx(4 / 6)
    pooled_pred, pooled_y = torch.tensor([0, 0, 1, 1, 2, 2]), torch.tensor([0, 0, 1, 0, 2, 1])
    assert micro["macro_f1"] == pytest.approx(sklearn_macro_f1(pooled_pred, pooled_y, 3))
    assert summarize_predictions([a, b], 3, "client_weighted")["accuracy"] == pytest.approx((4 * 0.75 + 2 * 0.5) / 6)
    assert summarize_predictions([a, b], 3, "client_mean")["accuracy"] == pytest.approx((0.75 + 0.5) / 2)
    assert "minority_accuracy" not in micro
    assert summarize_predictions([empty], 3) == {}
    with pytest.raises(ValueError, match="accepted: micro, client_weighted, client_mean"):
        summarize_predictions([a], 3, "macro")


def test_client_summaries_skip_clients_without_minority_nodes():
    a = Prediction(one_hot_logits([0, 1]), torch.tensor([0, 1]), minority=torch.tensor([False, True]))  # 1 of 1
    b = Prediction(one_hot_logits([0, 0]), torch.tensor([0, 0]), minority=torch.tensor([False, False]))  # none
    c = Prediction(one_hot_logits([0, 0]), torch.tensor([1, 2]), minority=torch.tensor([True, True]))  # 0 of 2
    summary = summarize_predictions([a, b, c], 3, "client_weighted")
    assert summary["minority_accuracy"] == pytest.approx((2 * 1.0 + 2 * 0.0) / 4)  # b has no minority node
    assert summarize_predictions([a, b, c], 3, "micro")["minority_accuracy"] == pytest.approx(1 / 3)
