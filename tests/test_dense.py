"""dense (DENSE on graphs, O-pFGL's one-shot baseline) and what it shares with coboost: the node-feature
generator, the kNN graph, the BN statistics loss, the distillation, the one-shot ledger, determinism, options."""
from __future__ import annotations

import pytest
import torch
from torch_geometric.utils import is_undirected

from fglcore.algorithms import ALGORITHMS
from fglcore.algorithms.dense import Dense, DenseServer
from fglcore.algorithms.ensemble_distillation import (BatchNormStatistics, ensemble, kd_divergence, knn_graph,
                                                      teacher_logits)
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.fl.channel import Channel
from fglcore.models.gin import GIN
from fglcore.models.node_generator import NodeFeatureGenerator
from toy_federations import C, F_IN
from toy_federations import skewed_federation as federation

FAST = {"local_epochs_grid": [10], "max_epochs": 100, "eval_every": 20, "patience": 2, "epochs": 6,
        "generator_steps": 5, "synthesis_size": 24}


def config(seed: int = 0, fields: dict | None = None, **options) -> ExperimentConfig:
    return ExperimentConfig.from_dict({
        "algorithm": "dense", "rounds": 1, "num_clients": 3, "seed": seed, "hidden": 16, "dropout": 0.0,
        "weight_decay": 0.0, "lr": 0.05, "metric_aggregation": "client_weighted",
        "algorithm_options": {**FAST, **options}, **(fields or {}),
    })


def uploads_of(algorithm):
    """Build the federation, train every client its local epochs; the uploads and their weights."""
    algorithm._epochs = algorithm.options["local_epochs_grid"][0]
    server, clients = algorithm.build(Channel())
    uploads = {c.cid: c.fit(1) for c in clients}
    return server, clients, uploads, {c.cid: float(c.num_samples) for c in clients}


def mean_kl(student, pool) -> float:
    with torch.no_grad():
        student.eval()
        return sum(float(kd_divergence(student(g.x, g.edge_index), ensemble(g.teacher_logits), 1.0))
                   for g in pool) / len(pool)


# -- the shared pieces ----------------------------------------------------------------------------------


def test_generator_gives_one_feature_row_per_noise_and_class():
    torch.manual_seed(0)
    gen = NodeFeatureGenerator(noise_dim=8, num_classes=C, out_channels=F_IN)
    z, c = torch.randn(11, 8), torch.randint(0, C, (11,))
    assert gen(z, c).shape == (11, F_IN)
    # the class conditions the output: same noise, other classes, other features
    assert not torch.allclose(gen(z, c), gen(z, (c + 1) % C))
    with pytest.raises(ValueError, match="expects z of shape"):
        gen(torch.randn(11, 7), c)
    with pytest.raises(ValueError, match="expects z of shape"):
        gen(z, c[:5])
    gen.reset_parameters(std=0.02)  # DENSE / Co-Boost's reset_model
    weights = torch.cat([m.weight.flatten() for m in gen.modules() if isinstance(m, torch.nn.Linear)])
    biases = torch.cat([m.bias for m in gen.modules() if isinstance(m, torch.nn.Linear)])
    assert weights.std().item() == pytest.approx(0.02, rel=0.1)
    assert torch.count_nonzero(biases) == 0


def test_knn_graph_links_each_node_to_its_five_most_similar_rows_undirected_with_one_self_loop():
    torch.manual_seed(1)
    x = torch.randn(30, 8)
    edge_index = knn_graph(x, k=5)
    assert is_undirected(edge_index)
    adj = torch.zeros(30, 30, dtype=torch.bool)
    adj[edge_index[0], edge_index[1]] = True
    assert edge_index.size(1) == int(adj.sum())  # no duplicate edge
    assert adj.diagonal().all()
    unit = torch.nn.functional.normalize(x, dim=1)
    nearest = (unit @ unit.t()).topk(5, dim=1).indices
    chosen = torch.zeros(30, 30, dtype=torch.bool)
    chosen[torch.arange(30).repeat_interleave(5), nearest.flatten()] = True
    assert chosen.diagonal().all()  # a node is its own most similar row, so k = 5 means 4 others
    # exactly the top-5 links, made undirected, and the self-loops
    assert torch.equal(adj, chosen | chosen.t() | torch.eye(30, dtype=torch.bool))
    assert ((adj & ~torch.eye(30, dtype=torch.bool)).sum(1) >= 4).all()
    with pytest.raises(ValueError, match="k must be between 1 and the number of nodes"):
        knn_graph(x, k=31)


def test_bn_statistics_loss_is_zero_at_the_running_statistics_and_absent_without_batch_norm():
    torch.manual_seed(2)
    model = GIN(F_IN, 8, C, num_layers=2, dropout=0.0, mlp_batch_norm=True)
    x, edge_index = torch.randn(50, F_IN), knn_graph(torch.randn(50, F_IN), 5)
    model.train()
    for _ in range(200):  # running statistics converge to those of this batch
        model(x, edge_index)
    model.eval()
    bn = BatchNormStatistics([model])
    model(x, edge_index)
    matched = float(bn.take().detach())
    model(x * 3 + 1, edge_index)
    shifted = float(bn.take().detach())
    assert matched < 0.05 * shifted
    bn.remove()
    model(x, edge_index)
    assert float(bn.take()) == 0.0  # hooks removed
    from fglcore.models.gcn import GCN
    none = BatchNormStatistics([GCN(F_IN, 8, C)])
    assert none.handles == [] and float(none.take()) == 0.0


def test_kd_divergence_is_temperature_scaled_kl():
    s, t = torch.randn(5, C), torch.randn(5, C)
    assert float(kd_divergence(t, t, 4.0)) == pytest.approx(0.0, abs=1e-6)
    manual = (torch.softmax(t / 2, 1) * (torch.log_softmax(t / 2, 1) - torch.log_softmax(s / 2, 1))).sum(1).mean() * 4
    assert float(kd_divergence(s, t, 2.0)) == pytest.approx(float(manual), rel=1e-5)
    assert kd_divergence(s, t, 2.0, "none").shape == (5, C)


# -- DENSE ----------------------------------------------------------------------------------------------


def test_dense_is_registered_and_rejects_secure_aggregation():
    assert ALGORITHMS.get("dense") is Dense
    with pytest.raises(ConfigError, match="secure_aggregation: not supported by dense"):
        config(fields={"secure_aggregation": True})


def test_distillation_brings_the_student_to_the_ensemble():
    algorithm = Dense(config(epochs=8, kd_lr=0.05), federation(), "cpu")
    server, _, uploads, weights = uploads_of(algorithm)
    teachers = server.teachers_from(uploads)
    student = server.initial_student(uploads, weights)
    before = [p.detach().clone() for p in student.parameters()]
    pool = server.distill(teachers, student, NodeFeatureGenerator(32, C, F_IN))
    assert len(pool) == 8 and all(g.x.shape == (24, F_IN) for g in pool)
    assert all(g.teacher_logits.shape == (3, 24, C) for g in pool)
    initial = server.initial_student(uploads, weights)
    assert all(torch.equal(a, b) for a, b in zip(before, initial.parameters()))
    # on the synthetic graphs it learnt from, the student's KL to the ensemble falls well below the initial
    # model's (36 SGD steps; 0.0148 vs 0.0210 on this toy)
    assert mean_kl(student, pool) < 0.8 * mean_kl(initial, pool)
    # the generated nodes lean to their target classes in the ensemble's eyes (the CE term; 5 generator steps)
    agree = torch.cat([ensemble(g.teacher_logits).argmax(1) == g.y for g in pool]).float().mean()
    assert agree > 0.45


def test_kd_clip_bounds_the_students_gradient_and_zero_leaves_it_unclipped(monkeypatch):
    algorithm = Dense(config(), federation(), "cpu")
    server, _, uploads, weights = uploads_of(algorithm)
    student = server.initial_student(uploads, weights)
    x = torch.randn(24, F_IN)
    edge_index = knn_graph(x, 5)
    target = torch.randn(24, C) * 1000  # far from the student: a large gradient

    def gradient_norm(clip):
        server.kd_step(student, torch.optim.SGD(student.parameters(), lr=0.0), x, edge_index, target, clip)
        return float(torch.stack([p.grad.norm() for p in student.parameters()]).norm())

    assert gradient_norm(None) > 10.0
    assert gradient_norm(10.0) == pytest.approx(10.0, rel=1e-4)
    # distill passes kd_clip (default 10) to every step, and 0 as no clip (the official code)
    clips = []
    monkeypatch.setattr(DenseServer, "kd_step", lambda self, *args: clips.append(args[-1]) or 0.0)
    Dense(config(epochs=2), federation(), "cpu").run()
    Dense(config(epochs=2, kd_clip=0.0), federation(), "cpu").run()
    assert clips == [10.0] * 3 + [None] * 3  # 1 + 2 pooled graphs visited per run


def test_a_diverged_distillation_stops_the_run_instead_of_fine_tuning_a_broken_student():
    algorithm = Dense(config(), federation(), "cpu")
    server, _, uploads, weights = uploads_of(algorithm)
    student = server.initial_student(uploads, weights)
    x = torch.randn(24, F_IN)
    target = torch.full((24, C), float("nan"))
    with pytest.raises(FloatingPointError, match="distillation diverged.*kd_clip"):
        server.kd_step(student, torch.optim.SGD(student.parameters(), lr=0.01), x, knn_graph(x, 5), target, None)


def test_adversarial_term_pushes_generation_to_where_student_and_ensemble_disagree():
    algorithm = Dense(config(), federation(), "cpu")
    server, _, uploads, weights = uploads_of(algorithm)
    teachers, student = server.teachers_from(uploads), server.initial_student(uploads, weights)
    gen = NodeFeatureGenerator(32, C, F_IN)
    bn = BatchNormStatistics(teachers)

    def kl_of(adv: float) -> float:
        torch.manual_seed(5)
        server.options.update(adv_weight=adv, generator_steps=30)
        g = server.synthesize(teachers, student, gen, bn)
        with torch.no_grad():
            return float(kd_divergence(student(g.x, g.edge_index), ensemble(g.teacher_logits), 1.0))

    assert kl_of(5.0) > kl_of(0.0)


def test_one_shot_ledger_one_model_upload_and_one_download_per_client():
    channel = Channel()
    algorithm = Dense(config(), federation(), "cpu")
    result = algorithm.run(channel)
    state_names = sorted(algorithm.clients[0].model.state_dict())
    for client in algorithm.clients:
        up = channel.ledger.select(sender=client.name)
        down = channel.ledger.select(receiver=client.name)
        assert sorted(m.name for m in up) == sorted(state_names + ["num_samples"])
        assert sorted(m.name for m in down) == state_names
        assert {m.round for m in up} == {1} and {m.round for m in down} == {2}
    assert len(channel.ledger) == 3 * (2 * len(state_names) + 1)
    # the clients deploy the fine-tuned distilled model, never worse on validation than the download
    for row in result.per_client:
        assert row["ft_val_accuracy"] >= row["global_val_accuracy"]
    assert result.extras["distillation"]["pool_graphs"] == FAST["epochs"]


def test_same_seed_same_numbers_other_seed_other_numbers():
    a = Dense(config(seed=3), federation(), "cpu").run()
    b = Dense(config(seed=3), federation(), "cpu").run()
    c = Dense(config(seed=4), federation(), "cpu").run()
    assert a.metrics == b.metrics
    assert a.extras["distillation"] == b.extras["distillation"]
    assert a.extras["distillation"] != c.extras["distillation"]


def test_epochs_chosen_on_the_teachers_distils_once_with_the_best_validating_local_models():
    grid = [1, 5, 30]
    algorithm = Dense(config(local_epochs_grid=grid, epochs_selection="teachers"), federation(), "cpu")
    distilled = []
    original = DenseServer.distill

    def counting(self, *args, **kwargs):
        distilled.append(1)
        return original(self, *args, **kwargs)

    DenseServer.distill = counting
    try:
        result = algorithm.run()
    finally:
        DenseServer.distill = original
    search = result.extras["teacher_search"]
    assert [row["local_epochs"] for row in search] == grid
    values = [row["teacher_val_accuracy"] for row in search]
    chosen = grid[values.index(max(values))]
    assert result.extras["local_epochs"] == chosen and [r["local_epochs"] for r in result.extras["epochs_search"]] \
        == [chosen]
    assert len(distilled) == 1  # one distillation, not one per grid value
    assert len(set(values)) > 1  # the local epochs change the teachers
    # the reported run is exactly the run with that E fixed: scoring the teachers leaves no trace
    fixed = Dense(config(local_epochs_grid=[chosen]), federation(), "cpu").run()
    assert result.metrics == fixed.metrics


def test_epochs_chosen_on_final_models_distils_once_per_grid_value():
    algorithm = Dense(config(local_epochs_grid=[1, 5]), federation(), "cpu")
    result = algorithm.run()
    assert "teacher_search" not in result.extras and len(result.extras["epochs_search"]) == 2


def test_student_init_fedavg_starts_from_the_weighted_mean():
    algorithm = Dense(config(student_init="fedavg"), federation(), "cpu")
    server, _, uploads, weights = uploads_of(algorithm)
    student = server.initial_student(uploads, weights)
    total = sum(weights.values())
    for name, value in student.named_parameters():
        mean = sum(uploads[c][name] * w for c, w in weights.items()) / total
        assert torch.allclose(value, mean, atol=1e-6)


@pytest.mark.parametrize("options, match", [
    ({"knn_k": 30, "synthesis_size": 24}, "knn_k: 30 is not accepted"),
    ({"kd_lr": 0.0}, "kd_lr"),
    ({"epochs": 0}, "epochs"),
    ({"kd_momentum": 1.0}, "kd_momentum"),
    ({"bn_weight": -1.0}, "bn_weight"),
    ({"kd_clip": -1.0}, "kd_clip"),
    ({"student_init": "random"}, "student_init"),
    ({"epochs_selection": "best"}, "epochs_selection"),
    ({"share": "all"}, "share"),
    ({"hardness": 1.0}, "hardness"),  # a Co-Boost option
    ({"local_epochs_grid": [0]}, "local_epochs_grid"),
])
def test_bad_options_are_rejected_naming_the_key(options, match):
    with pytest.raises(ConfigError, match=match):
        config(**options)


def test_more_than_one_round_is_rejected():
    with pytest.raises(ConfigError, match="rounds"):
        config(fields={"rounds": 2})


def test_teacher_logits_stack_one_block_per_client_model():
    algorithm = Dense(config(), federation(), "cpu")
    server, _, uploads, _ = uploads_of(algorithm)
    teachers = server.teachers_from(uploads)
    x = torch.randn(10, F_IN)
    logits = teacher_logits(teachers, x, knn_graph(x, 5))
    assert logits.shape == (3, 10, C)
    assert isinstance(server, DenseServer)
