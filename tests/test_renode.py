"""renode (ReNode, Chen et al. NeurIPS 2021, as O-pFGL's Table 7 baseline): PPR, Totoro, the cosine weights,
the weighted loss, the ledger, determinism, options."""
from __future__ import annotations

import math
import pytest
import torch
import torch.nn.functional as F
from torch_geometric.utils import to_undirected

from fglcore.algorithms.fedavg_ft import FedAvgFT
from fglcore.algorithms.renode import (Renode, conflict_ranks, personalized_pagerank, renode_weights, totoro)
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.fl.channel import Channel
from tests.test_fedavg_ft import FAST, config as fedavg_ft_config, federation


def path_graph(n: int) -> torch.Tensor:
    return to_undirected(torch.stack([torch.arange(n - 1), torch.arange(1, n)]))


def test_pagerank_solves_its_fixed_point_and_rows_are_distributions():
    edge_index = to_undirected(torch.tensor([[0, 0, 1, 2, 3], [1, 2, 2, 3, 4]]))
    alpha = 0.15
    P = personalized_pagerank(edge_index, 5, alpha)
    deg = torch.bincount(edge_index[0], minlength=5).double() + 1
    A = torch.zeros(5, 5, dtype=torch.float64)
    A[edge_index[0], edge_index[1]] = 1
    A_hat = (A + torch.eye(5, dtype=torch.float64)) / deg.sqrt().outer(deg.sqrt())
    # P = alpha I + (1 - alpha) P A_hat, the PPR fixed point, and P is symmetric for a symmetric A_hat
    assert torch.allclose(P, alpha * torch.eye(5, dtype=torch.float64) + (1 - alpha) * P @ A_hat)
    assert torch.allclose(P, P.t())
    assert bool((P > 0).all())  # connected: every node reaches every node


def test_totoro_is_zero_without_other_classes_and_grows_near_the_class_boundary():
    # a path 0-1-2-3-4-5: labelled 0 and 2 are class 0, labelled 3 and 5 are class 1
    n = 6
    ei = path_graph(n)
    y = torch.tensor([0, 0, 0, 1, 1, 1])
    train = torch.tensor([True, False, True, True, False, True])
    P = personalized_pagerank(ei, n, 0.15)
    T = totoro(P, y, train, 2)
    assert torch.isnan(T[~train]).all()
    # nodes next to the other class (2, 3) conflict more than the far ends (0, 5); the graph is symmetric
    assert T[2] > T[0] and T[3] > T[5]
    assert T[0] == pytest.approx(float(T[5])) and T[2] == pytest.approx(float(T[3]))
    # direct formula: T_v = sum_x P[v, x] * mean_{i in other class} P[i, x]
    other = {0: [3, 5], 2: [3, 5], 3: [0, 2], 5: [0, 2]}
    for v, members in other.items():
        assert T[v] == pytest.approx(float(P[v] @ P[members].mean(0)))
    # one class only: nothing conflicts
    assert torch.allclose(totoro(P, torch.zeros(n, dtype=torch.long), train, 2)[train], torch.zeros(4, dtype=P.dtype))
    # a class without labelled nodes has no influence (no NaN, as the code's empty mean would give)
    assert torch.isfinite(totoro(P, y, train, 5)[train]).all()


def test_weights_follow_the_cosine_schedule_in_the_paper_range():
    scores = torch.tensor([0.3, 0.1, 0.9, 0.5, 0.7])
    w = renode_weights(scores, 0.5, 1.5)
    # least conflicting gets w_max, most conflicting w_min, ordered by conflict in between
    assert w[1] == pytest.approx(1.5) and w[2] == pytest.approx(0.5)
    order = torch.argsort(scores)
    assert bool((w[order][1:] < w[order][:-1]).all())
    ranks = torch.tensor([1.0, 0.0, 4.0, 2.0, 3.0])
    expected = 0.5 + 0.5 * (1 + torch.cos(ranks * math.pi / 4))
    assert torch.allclose(w, expected.float())
    # the paper's denominator |L|: the most conflicting stays above w_min
    wp = renode_weights(scores, 0.5, 1.5, rank_denominator="paper")
    assert wp[2] == pytest.approx(0.5 + 0.5 * (1 + math.cos(4 * math.pi / 5)))
    assert float(wp.min()) > 0.5 and float(wp.max()) == pytest.approx(1.5)


def test_equal_conflict_gives_equal_weights():
    w = renode_weights(torch.full((6,), 0.25), 0.5, 1.5)
    assert torch.allclose(w, torch.ones(6))  # mean rank (|L|-1)/2 -> cos(pi/2) = 0 -> the middle weight
    ties = conflict_ranks(torch.tensor([0.2, 0.1, 0.2, 0.3]))
    assert ties.tolist() == [1.5, 0.0, 1.5, 3.0]
    ordinal = conflict_ranks(torch.tensor([0.2, 0.1, 0.2, 0.3]), "ordinal")  # the code: stable sort
    assert ordinal.tolist() == [1.0, 0.0, 2.0, 3.0]
    assert renode_weights(torch.tensor([0.4]), 0.5, 1.5).tolist() == [1.5]


def mixed_federation():
    """The fedavg_ft toy federation with random edges added between classes, so that Totoro differs by node."""
    fed = federation()
    for k, data in enumerate(fed.clients):
        g = torch.Generator().manual_seed(100 + k)
        extra = torch.randint(0, data.num_nodes, (2, data.num_nodes), generator=g)
        data.edge_index = to_undirected(torch.cat([data.edge_index, extra[:, extra[0] != extra[1]]], 1),
                                        num_nodes=data.num_nodes)
    return fed


def make(seed: int = 0, fed=None, **options) -> Renode:
    cfg = ExperimentConfig.from_dict({
        "algorithm": "renode", "rounds": 1, "num_clients": 3, "seed": seed, "hidden": 16, "dropout": 0.0,
        "weight_decay": 0.0, "lr": 0.05, "metric_aggregation": "client_weighted",
        "algorithm_options": {**FAST, **options}})
    return Renode(cfg, mixed_federation() if fed is None else fed, "cpu")


def test_clients_train_with_the_weighted_loss():
    algorithm = make()
    algorithm._epochs = 1
    _, clients = algorithm.build(Channel())
    for client, data in zip(clients, mixed_federation().clients):
        trainer = client.trainer
        w = trainer.train_loss.weight
        assert w.shape == (int(data.train_mask.sum()),)
        assert float(w.min()) == pytest.approx(0.5) and float(w.max()) == pytest.approx(1.5)
        out = trainer.forward()
        ce = F.cross_entropy(out[trainer.train_idx], trainer.y_train, reduction="none").detach()
        assert float(trainer.backward()) == pytest.approx(float((w * ce).sum() / ce.numel()), rel=1e-5)


def test_classes_in_separate_components_do_not_conflict_so_weights_are_uniform():
    # the plain toy federation links only nodes of one class: every Totoro is 0, every weight the middle one
    algorithm = make(fed=federation())
    algorithm._epochs = 1
    _, clients = algorithm.build(Channel())
    for client in clients:
        w = client.trainer.train_loss.weight
        assert torch.allclose(w, torch.ones_like(w))


def test_ledger_is_fedavg_ft_s_and_local_sends_nothing():
    channel = Channel()
    algorithm = make()
    result = algorithm.run(channel)
    plain = FedAvgFT(fedavg_ft_config(), mixed_federation(), "cpu").run()
    assert [(m.sender, m.receiver, m.name, m.round, m.nbytes) for m in channel.ledger.messages] == \
        [(m.sender, m.receiver, m.name, m.round, m.nbytes) for m in plain.ledger.messages]
    assert len(result.extras["renode"]) == 3 and result.extras["epochs_search"]
    local = make(federation="local").run(Channel())
    assert len(local.ledger) == 0
    assert 0 <= local.metrics["test_accuracy"] <= 1


def test_weights_change_training_and_equal_weights_do_not():
    base = FedAvgFT(fedavg_ft_config(local_epochs_grid=[5]), mixed_federation(), "cpu").run()
    same = make(local_epochs_grid=[5], w_min=1.0, w_max=1.0).run()  # every weight 1: plain cross-entropy
    assert same.metrics["test_accuracy"] == base.metrics["test_accuracy"]
    assert same.metrics["val_accuracy"] == base.metrics["val_accuracy"]
    alg = make(local_epochs_grid=[5], w_min=0.1, w_max=3.0)
    alg.run()
    plain = FedAvgFT(fedavg_ft_config(local_epochs_grid=[5]), mixed_federation(), "cpu")
    plain.run()
    assert any(not torch.equal(p, q) for p, q in zip(alg.clients[0].model.parameters(),
                                                     plain.clients[0].model.parameters()))


def test_deterministic_for_a_seed():
    a, b = make(seed=2).run(), make(seed=2).run()
    assert a.metrics == b.metrics and a.extras["renode"] == b.extras["renode"]


@pytest.mark.parametrize("options, key", [
    ({"federation": "fedavg"}, "federation"),
    ({"pagerank_alpha": 0.0}, "pagerank_alpha"),
    ({"pagerank_alpha": 1.5}, "pagerank_alpha"),
    ({"w_min": -0.1}, "w_min"),
    ({"w_min": 2.0, "w_max": 1.0}, "w_max"),
    ({"rank_denominator": "n"}, "rank_denominator"),
    ({"ties": "min"}, "ties"),
    ({"local_epochs_grid": [0]}, "local_epochs_grid"),
    ({"alpha": 0.1}, "alpha"),
])
def test_bad_options_are_refused_before_any_work(options, key):
    with pytest.raises(ConfigError, match=key):
        make(**options)


def test_code_defaults():
    o = Renode.check_options({})
    assert (o["pagerank_alpha"], o["w_min"], o["w_max"]) == (0.15, 0.5, 1.5)  # pagerank_prob 0.85, 0.5 + [0, 1]
    assert (o["rank_denominator"], o["federation"]) == ("code", "fedavg_ft")
