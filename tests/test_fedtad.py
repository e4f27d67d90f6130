"""fedtad (Zhu et al., IJCAI 2024): class-wise reliability, the kNN pseudo-graph, the server's distillation,
O-pFGL's one-shot protocol, determinism and options."""
from __future__ import annotations

import math

import pytest
import torch
from torch_geometric.utils import to_undirected

from fglcore.algorithms.ensemble_distillation import knn_graph
from fglcore.algorithms.fedtad import (FedTAD, OPFGL_ONE_SHOT, class_reliability, diversity_loss, generated_labels,
                                       normalize_reliability, topology_embedding, weighted_l1)
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.fl.channel import Channel
from fglcore.fl.parameters import weighted_mean

from toy_federations import C, federation, toy_client


FAST = {"num_gen": 30, "glb_epochs": 2, "it_d": 3, "max_epochs": 100, "eval_every": 20, "patience": 2}


def config(seed: int = 0, rounds: int = 2, fields: dict | None = None, **options) -> ExperimentConfig:
    return ExperimentConfig.from_dict({
        "algorithm": "fedtad", "rounds": rounds, "num_clients": 3, "seed": seed, "hidden": 8, "dropout": 0.0,
        "weight_decay": 0.0, "lr": 0.05, "local_epochs": 3, "metric_aggregation": "client_weighted",
        "algorithm_options": {**FAST, **options}, **(fields or {}),
    })


def run(seed: int = 0, rounds: int = 2, channel: Channel | None = None, **options):
    algorithm = FedTAD(config(seed, rounds, **options), federation(), "cpu")
    return algorithm, algorithm.run(channel)


# --------------------------------------------------------------------------- client side


def test_class_reliability_by_hand():
    # a path 0-1-2 plus an isolated node 3; embeddings chosen so that the cosines are 1, 0 and -1
    e = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    edge_index = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    y = torch.tensor([0, 0, 1, 1])
    train = torch.tensor([True, True, True, True])
    ckr = class_reliability(e, edge_index, y, train, 2)
    r0 = (1 + 1) / 2          # one neighbour, cosine 1
    r1 = (1 + 1 + 0) / 3      # neighbours 0 (cos 1) and 2 (cos 0)
    r2 = (1 + 0) / 2          # neighbour 1, cos 0
    r3 = 1.0                  # no neighbour: only itself
    assert ckr.tolist() == pytest.approx([r0 + r1, r2 + r3])
    # only training nodes count
    ckr = class_reliability(e, edge_index, y, torch.tensor([True, False, False, True]), 2)
    assert ckr.tolist() == pytest.approx([r0, r3])


def test_reliability_normalisations():
    ckr = torch.tensor([[2.0, 0.0, 1.0], [6.0, 0.0, 3.0]], dtype=torch.float64)
    across = normalize_reliability(ckr, "clients")  # official code: each class's share of each client
    assert across[:, 0].tolist() == pytest.approx([0.25, 0.75])
    assert across[:, 1].tolist() == [0.0, 0.0]  # a class no client has: weight 0, not nan
    within = normalize_reliability(ckr, "classes")  # OpenFGL's port: each client's share of each class
    assert within.sum(dim=1).tolist() == pytest.approx([1.0, 1.0])
    with pytest.raises(ValueError, match="accepted"):
        normalize_reliability(ckr, "nodes")


def test_topology_embeddings():
    triangle = to_undirected(torch.tensor([[0, 1, 2], [1, 2, 0]]))
    rwpe = topology_embedding(triangle, 3, 3, "rwpe")
    # P = 1/3 everywhere (self-loops included), so every power has 1/3 on the diagonal
    assert rwpe.shape == (3, 3) and torch.allclose(rwpe, torch.full((3, 3), 1 / 3))
    data = toy_client(0, 0)
    walks = topology_embedding(data.edge_index, data.num_nodes, 5, "code", torch.Generator().manual_seed(1))
    again = topology_embedding(data.edge_index, data.num_nodes, 5, "code", torch.Generator().manual_seed(1))
    other = topology_embedding(data.edge_index, data.num_nodes, 5, "code", torch.Generator().manual_seed(2))
    assert walks.shape == (data.num_nodes, 15)  # walks of 1..5 nodes
    assert torch.equal(walks, again) and not torch.equal(walks, other)
    assert torch.equal(walks[:, 0], torch.arange(data.num_nodes).float())  # every walk starts at its node
    assert walks.min() >= 0 and walks.max() < data.num_nodes


# --------------------------------------------------------------------------- server side


def test_knn_graph_is_symmetric_with_self_loops_and_k_nearest():
    x = torch.randn(12, 4, generator=torch.Generator().manual_seed(0))
    edges = knn_graph(x, 3)
    adj = torch.zeros(12, 12, dtype=torch.bool)
    adj[edges[0], edges[1]] = True
    assert torch.equal(adj, adj.t()) and adj.diagonal().all()
    unit = torch.nn.functional.normalize(x, dim=1)
    nearest = (unit @ unit.t()).topk(3, dim=1).indices
    assert all(adj[i, nearest[i]].all() for i in range(12))
    with pytest.raises(ValueError, match="k must be"):
        knn_graph(x, 13)


def test_losses():
    labels = generated_labels(10, 3)
    assert labels.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 2]  # the remainder goes to the last class
    s, t = torch.zeros(10, 2), torch.ones(10, 2)
    t[labels == 2] = 3.0
    assert float(weighted_l1(s, t, labels, torch.tensor([1.0, 0.0, 0.5]))) == pytest.approx(1.0 + 0.5 * 3.0)
    z = torch.randn(5, 4)
    x = torch.randn(5, 7, requires_grad=True)
    loss = diversity_loss(z, x)
    dz = ((z.unsqueeze(0) - z.unsqueeze(1)) ** 2).mean(2)
    dx = (x.unsqueeze(0) - x.unsqueeze(1)).abs().mean(2)
    assert float(loss.detach()) == pytest.approx(float(torch.exp(torch.mean(-dz * dx))), rel=1e-5)
    loss.backward()
    assert torch.isfinite(x.grad).all()


def test_distillation_moves_the_global_model_away_from_the_mean_towards_the_teachers():
    algorithm = FedTAD(config(rounds=1), federation(), "cpu")
    server, clients = algorithm.build(Channel())
    uploads = {client.cid: client.fit(1) for client in clients}
    weights = {client.cid: float(client.num_samples) for client in clients}
    params = [{k: v for k, v in uploads[c].items() if k in server.parameters} for c in uploads]
    mean = weighted_mean(params, [weights[c] for c in uploads])
    generator_before = {k: v.clone() for k, v in server.generator.state_dict().items()}
    server.aggregate(uploads, weights, 1)
    # the generator was trained, and the global model is no longer the plain FedAvg mean
    assert any(not torch.equal(v, server.generator.state_dict()[k]) for k, v in generator_before.items())
    assert any(not torch.allclose(mean[k], server.parameters[k]) for k in mean)
    assert len(server.history) == FAST["glb_epochs"]
    # on the last pseudo-graph, the distilled model is closer to the reliability-weighted teachers than the mean
    ckr = normalize_reliability(torch.stack([c.reliability for c in clients]), "clients")
    z = torch.randn(FAST["num_gen"], 32, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        x = server.generator(z, server.labels)
        edges = knn_graph(x, 5)
        targets = [t(x, edges) for t in server.teachers]
        student = algorithm.server_model()

        def gap(state):
            from fglcore.fl.parameters import load_payload
            load_payload(student, state)
            student.eval()
            out = student(x, edges)
            return sum(float(weighted_l1(out, t, server.labels, ckr[k])) for k, t in enumerate(targets))

        assert gap(server.parameters) < gap(mean)


def test_multi_round_run_and_ledger():
    _, result = run(rounds=2)
    ledger = result.ledger
    ckr = ledger.select(name="fedtad.ckr")
    assert sorted((m.round, m.sender) for m in ckr) == [(r, f"client{k}") for r in (1, 2) for k in range(3)]
    assert all(m.shape == (C,) for m in ckr)
    # FedAvg's opening broadcast, then the distilled model after each round: downloads in ledger rounds 1-3
    assert {m.round for m in ledger.messages if m.direction == "download"} == {1, 2, 3}
    assert "x" not in ledger.names(receiver="server")  # no node features leave a client
    assert 0.0 <= result.metrics["test_accuracy"] <= 1.0


def test_one_shot_protocol_with_fine_tuning():
    _, result = run(rounds=1, **{**OPFGL_ONE_SHOT, "local_epochs_grid": [1, 5]})
    assert [s["local_epochs"] for s in result.extras["epochs_search"]] == [1, 5]
    ledger = result.ledger
    # one upload and one download per client: round 1 up, the distilled model down after it (no opening broadcast)
    assert {(m.direction, m.round) for m in ledger.messages} == {("upload", 1), ("download", 2)}
    assert sorted(m.sender for m in ledger.select(name="fedtad.ckr")) == ["client0", "client1", "client2"]
    for row in result.per_client:  # fine-tuning keeps the best validation checkpoint
        assert row["ft_val_accuracy"] >= row["global_val_accuracy"] or math.isclose(
            row["ft_val_accuracy"], row["global_val_accuracy"])


def test_deterministic_for_a_seed():
    _, a = run(seed=3)
    _, b = run(seed=3)
    _, c = run(seed=4)
    assert a.metrics == b.metrics
    assert a.history == b.history
    assert a.metrics != c.metrics


@pytest.mark.parametrize("options, key", [
    ({"topology_embedding": "ppr"}, "topology_embedding"),
    ({"reliability_normalization": "nodes"}, "reliability_normalization"),
    ({"num_gen": 0}, "num_gen"),
    ({"topk": 200}, "topk"),
    ({"lr_d": 0.0}, "lr_d"),
    ({"gen_dropout": 1.0}, "gen_dropout"),
    ({"local_epochs_grid": [0, 5]}, "local_epochs_grid"),
    ({"local_epochs_grid": []}, "local_epochs_grid"),
    ({"fine_tune": "yes"}, "fine_tune"),
    ({"temperature": 1.0}, "temperature"),
])
def test_bad_options_are_rejected_naming_the_key(options, key):
    with pytest.raises(ConfigError, match=key):
        config(rounds=1, **options)


def test_protocol_and_secure_aggregation_are_checked():
    with pytest.raises(ConfigError, match=r"^rounds: "):
        config(rounds=2, local_epochs_grid=[1, 2])
    with pytest.raises(ConfigError, match="secure_aggregation"):
        config(fields={"secure_aggregation": True})
    algorithm = FedTAD(config(num_gen=2, topk=2), federation(), "cpu")
    with pytest.raises(ConfigError, match="num_gen"):
        algorithm.build(Channel())
