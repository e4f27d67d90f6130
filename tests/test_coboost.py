"""coboost (Co-Boost on graphs, O-pFGL's one-shot baseline): hard-sample loss, ensemble re-weighting, ODS
perturbation, distillation, the one-shot ledger, determinism, options. The pieces it shares with dense (generator,
kNN graph, BN statistics) are tested in test_dense.py."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from fglcore.algorithms import ALGORITHMS
from fglcore.algorithms.coboost import CoBoost, hard_cross_entropy
from fglcore.algorithms.ensemble_distillation import SyntheticGraph, ensemble, kd_divergence, knn_graph
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.fl.channel import Channel
from fglcore.models.node_generator import NodeFeatureGenerator
from toy_federations import C, F_IN
from toy_federations import skewed_federation as federation

FAST = {"local_epochs_grid": [10], "max_epochs": 100, "eval_every": 20, "patience": 2, "epochs": 6,
        "generator_steps": 5, "synthesis_size": 24}


def config(seed: int = 0, fields: dict | None = None, **options) -> ExperimentConfig:
    return ExperimentConfig.from_dict({
        "algorithm": "coboost", "rounds": 1, "num_clients": 3, "seed": seed, "hidden": 16, "dropout": 0.0,
        "weight_decay": 0.0, "lr": 0.05, "metric_aggregation": "client_weighted",
        "algorithm_options": {**FAST, **options}, **(fields or {}),
    })


def server_and_teachers(**options):
    algorithm = CoBoost(config(**options), federation(), "cpu")
    algorithm._epochs = algorithm.options["local_epochs_grid"][0]
    server, clients = algorithm.build(Channel())
    uploads = {c.cid: c.fit(1) for c in clients}
    weights = {c.cid: float(c.num_samples) for c in clients}
    return server, server.teachers_from(uploads), server.initial_student(uploads, weights)


def test_coboost_is_registered_and_rejects_secure_aggregation():
    assert ALGORITHMS.get("coboost") is CoBoost
    with pytest.raises(ConfigError, match="secure_aggregation: not supported by coboost"):
        config(fields={"secure_aggregation": True})


def test_hard_cross_entropy_weighs_samples_by_how_unsure_the_ensemble_is():
    logits = torch.tensor([[4.0, 0.0, 0.0], [0.2, 0.0, 0.0], [0.0, 3.0, 0.0]])
    targets = torch.tensor([0, 0, 0])
    ce = F.cross_entropy(logits, targets, reduction="none")
    assert float(hard_cross_entropy(logits, targets, 0.0)) == pytest.approx(float(ce.mean()))
    p = torch.softmax(logits, 1)[:, 0]
    assert float(hard_cross_entropy(logits, targets, 2.0)) == pytest.approx(float(((1 - p) ** 2 * ce).mean()))
    # the weight is a constant: the gradient is the weighted cross-entropy's, not through p
    logits.requires_grad_(True)
    hard_cross_entropy(logits, targets, 1.0).backward()
    reference = logits.detach().clone().requires_grad_(True)
    ((1 - p) * F.cross_entropy(reference, targets, reduction="none")).mean().backward()
    assert torch.allclose(logits.grad, reference.grad)


def test_weighted_ensemble_is_the_normalised_weighted_mean():
    logits = torch.randn(3, 5, C)
    w = torch.tensor([0.2, 0.0, 0.6])
    assert torch.allclose(ensemble(logits, w), (0.2 * logits[0] + 0.6 * logits[2]) / 0.8)
    assert torch.allclose(ensemble(logits, torch.full((3,), 1 / 3)), logits.mean(0))


def test_reweighting_raises_the_weight_of_the_teacher_that_is_right_on_the_pool():
    server, _, _ = server_and_teachers()
    torch.manual_seed(0)
    pool = []
    for _ in range(4):
        y = torch.randint(0, C, (10,))
        right = F.one_hot(y, C).float() * 3
        wrong = F.one_hot((y + 1) % C, C).float() * 3
        pool.append(SyntheticGraph(torch.zeros(10, F_IN), knn_graph(torch.randn(10, F_IN), 5), y,
                                   torch.stack([right, wrong, torch.zeros(10, C)])))
    start = torch.full((3,), 1 / 3)
    w = server.reweight(pool, start, epoch=2)
    step = server.options["weight_lr"] * server.options["weight_decay_rate"] ** 2
    # one signed step per pooled graph: the right teacher up, the wrong one down, each by 4 steps
    assert float(w[0]) == pytest.approx(1 / 3 + 4 * step, rel=1e-5)
    assert float(w[1]) == pytest.approx(1 / 3 - 4 * step, rel=1e-5)
    # projected onto [0, 1]: large steps stop at the bounds
    server.options.update(weight_lr=1.0, weight_steps=3)
    w = server.reweight(pool, start, epoch=0)
    assert float(w[1]) == 0.0 and float(w.max()) <= 1.0 and float(w[0]) == 1.0


def test_ods_moves_every_feature_by_eta_and_targets_the_ensemble_on_the_moved_graph():
    server, teachers, _ = server_and_teachers()
    torch.manual_seed(1)
    pool = []
    for n in (12, 9):
        x = torch.randn(n, F_IN)
        pool.append(SyntheticGraph(x, knn_graph(x, 5), torch.randint(0, C, (n,)), torch.zeros(3, n, C)))
    weights = torch.tensor([0.5, 0.3, 0.2])
    hard = server.hard_pool(teachers, pool, weights)
    eta = server.options["ods_eta"]
    for g, (x, target) in zip(pool, hard):
        moved = (x - g.x).abs()
        assert x.shape == g.x.shape
        assert torch.allclose(moved[moved > 0], torch.full_like(moved[moved > 0], eta), atol=1e-6)
        assert (moved > 0).float().mean() > 0.5
        with torch.no_grad():
            expected = ensemble(torch.stack([t(x, g.edge_index) for t in teachers]), weights)
        assert torch.allclose(target, expected, atol=1e-5)  # one pass over the union = graph by graph


def test_ods_gradient_through_the_kept_forwards_is_the_union_gradient_and_skips_the_forward():
    """The ODS gradient, taken graph by graph through each pooled graph's kept teacher forward, is the gradient of
    one forward over the pool's disjoint union (same direction draw); a later round runs each teacher once (the
    targets), not twice."""
    from fglcore.algorithms.coboost import ODS_TEMPERATURE
    from fglcore.algorithms.ensemble_distillation import disjoint_union, synthetic_graph, teacher_logits

    server, teachers, _ = server_and_teachers()
    torch.manual_seed(2)
    pool = []
    for n in (12, 9, 15):
        x = torch.randn(n, F_IN)
        pool.append(SyntheticGraph(x, knn_graph(x, 5), torch.randint(0, C, (n,)), torch.zeros(3, n, C)))
    weights = torch.tensor([0.5, 0.3, 0.2])
    torch.manual_seed(3)
    hard = server.hard_pool(teachers, pool, weights)
    # the reference: one differentiable forward over the union, the same uniform draw
    x, edge_index, sizes = disjoint_union(pool)
    graph = synthetic_graph(teachers, edge_index, x.size(0), x.dtype)
    x = x.clone().requires_grad_(True)
    torch.manual_seed(3)
    probs = F.softmax(ensemble(teacher_logits(teachers, x, graph), weights) / ODS_TEMPERATURE, dim=1)
    (grad,) = torch.autograd.grad((torch.empty_like(probs).uniform_(-1.0, 1.0) * probs).sum(), x)
    moved = torch.cat([h for h, _ in hard]) - x.detach()
    decided = grad.abs() > 1e-6  # a gradient at rounding level may take either sign
    assert decided.float().mean() > 0.9
    assert torch.equal(moved.sign()[decided], grad.sign()[decided])
    calls = []
    hooks = [t.register_forward_hook(lambda *_: calls.append(1)) for t in teachers]
    server.hard_pool(teachers, pool, weights)
    for hook in hooks:
        hook.remove()
    assert len(calls) == len(teachers)


def test_distillation_brings_the_student_to_the_weighted_ensemble():
    server, teachers, student = server_and_teachers(epochs=8, kd_lr=0.05)
    initial = [p.detach().clone() for p in student.parameters()]
    pool = server.distill(teachers, student, NodeFeatureGenerator(32, C, F_IN))
    weights = torch.tensor(server.report["ensemble_weights"])
    assert len(pool) == 8 and weights.shape == (3,)
    assert not torch.allclose(weights, torch.full((3,), 1 / 3))  # re-weighted from the second round on

    def kl(params) -> float:
        with torch.no_grad():
            for p, v in zip(student.parameters(), params):
                p.copy_(v)
            student.eval()
            return sum(float(kd_divergence(student(g.x, g.edge_index), ensemble(g.teacher_logits, weights), 1.0))
                       for g in pool) / len(pool)

    trained = [p.detach().clone() for p in student.parameters()]
    assert kl(trained) < 0.8 * kl(initial)


def test_one_shot_ledger_one_model_upload_and_one_download_per_client():
    channel = Channel()
    algorithm = CoBoost(config(), federation(), "cpu")
    algorithm.run(channel)
    state_names = sorted(algorithm.clients[0].model.state_dict())
    for client in algorithm.clients:
        assert sorted(m.name for m in channel.ledger.select(sender=client.name)) == sorted(state_names + ["num_samples"])
        assert sorted(m.name for m in channel.ledger.select(receiver=client.name)) == state_names
    assert len(channel.ledger) == 3 * (2 * len(state_names) + 1)


def test_same_seed_same_numbers():
    a = CoBoost(config(seed=2), federation(), "cpu").run()
    b = CoBoost(config(seed=2), federation(), "cpu").run()
    assert a.metrics == b.metrics
    assert a.extras["distillation"] == b.extras["distillation"]


@pytest.mark.parametrize("options, match", [
    ({"weight_decay_rate": 0.0}, "weight_decay_rate"),
    ({"weight_decay_rate": 1.5}, "weight_decay_rate"),
    ({"weight_steps": 0}, "weight_steps"),
    ({"ods_eta": -0.1}, "ods_eta"),
    ({"hardness": -1.0}, "hardness"),
    ({"weighted": "yes"}, "weighted"),
    ({"knn_k": 25, "synthesis_size": 24}, "knn_k"),
    ({"generator_lr": 0.0}, "generator_lr"),
    ({"ensemble": "mean"}, "ensemble"),
])
def test_bad_options_are_rejected_naming_the_key(options, match):
    with pytest.raises(ConfigError, match=match):
        config(**options)
