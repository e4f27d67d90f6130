"""fedgta (Li et al., VLDB 2024): soft-label propagation, smoothing confidence, mixed moments, personalised
aggregation weights, O-pFGL's one-shot protocol, determinism and options."""
from __future__ import annotations

import math

import pytest
import torch
from torch_geometric.nn.models import LabelPropagation

from fglcore.algorithms.fedgta import (CONFIDENCE, SIGNATURE, FedGTA, aggregation_weights, mixed_moments,
                                       propagate_soft_labels, smoothing_confidence)
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.fl.channel import Channel
from fglcore.fl.parameters import weighted_mean

from toy_federations import C, federation, toy_client


def config(seed: int = 0, rounds: int = 2, fields: dict | None = None, **options) -> ExperimentConfig:
    return ExperimentConfig.from_dict({
        "algorithm": "fedgta", "rounds": rounds, "num_clients": 3, "seed": seed, "hidden": 8, "dropout": 0.0,
        "weight_decay": 0.0, "lr": 0.05, "local_epochs": 3, "metric_aggregation": "client_weighted",
        "algorithm_options": {"max_epochs": 100, "eval_every": 20, "patience": 2, **options}, **(fields or {}),
    })


def run(seed: int = 0, rounds: int = 2, **options):
    algorithm = FedGTA(config(seed, rounds, **options), federation(), "cpu")
    return algorithm, algorithm.run()


# --------------------------------------------------------------------------- the pieces


def test_mixed_moments_are_raw_then_central_column_moments():
    x = torch.tensor([[0.2, 0.8], [0.6, 0.4], [1.0, 0.0]], dtype=torch.float64)
    m = mixed_moments(x, 3, "hybrid").view(2, 3, 2)  # (raw | central) x order x class
    for p in (1, 2, 3):
        assert m[0, p - 1].tolist() == pytest.approx(x.pow(p).mean(0).tolist())
        assert m[1, p - 1].tolist() == pytest.approx((x - x.mean(0)).pow(p).mean(0).tolist())
    assert m[1, 0].abs().max() < 1e-12                      # first central moment is 0
    assert m[1, 1].tolist() == pytest.approx(x.var(0, unbiased=False).tolist())  # second is the variance
    assert torch.equal(mixed_moments(x, 3, "raw"), m[0].reshape(-1))
    assert torch.equal(mixed_moments(x, 3, "central"), m[1].reshape(-1))
    with pytest.raises(ValueError, match="accepted"):
        mixed_moments(x, 3, "mixed")


def test_smoothing_confidence_is_degree_weighted_negentropy():
    d = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    uniform = torch.full((3, 4), 0.25, dtype=torch.float64)
    onehot = torch.eye(4, dtype=torch.float64)[:3]
    e = math.exp(-1)
    assert float(smoothing_confidence(uniform, d)) == pytest.approx(6 * (4 * e - math.log(4)), rel=1e-6)
    assert float(smoothing_confidence(onehot, d)) == pytest.approx(6 * 4 * e, rel=1e-6)
    # sharper labels, or sharp labels where the degree is high, are more confident
    mixed = torch.stack([uniform[0], onehot[1], onehot[2]])
    flipped = torch.stack([onehot[0], onehot[1], uniform[2]])
    assert smoothing_confidence(mixed, d) > smoothing_confidence(flipped, d) > 0


def test_aggregation_weights_accept_similar_clients_weighted_by_confidence():
    signatures = torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]])
    confidences = torch.tensor([1.0, 3.0, 5.0])
    w = aggregation_weights(signatures, confidences, 0.5)
    assert w[0].tolist() == pytest.approx([0.25, 0.75, 0.0])
    assert w[1].tolist() == pytest.approx([0.25, 0.75, 0.0])
    assert w[2].tolist() == pytest.approx([0.0, 0.0, 1.0])  # dissimilar: only itself
    assert aggregation_weights(signatures, confidences, -1.0)[2].tolist() == pytest.approx([1 / 9, 3 / 9, 5 / 9])
    # a client always keeps its own model, even at the strictest threshold and with a zero confidence
    w = aggregation_weights(signatures, torch.tensor([0.0, 0.0, 5.0]), 1.0)
    assert torch.equal(w, torch.eye(3, dtype=torch.float64))


def test_propagated_soft_labels():
    data = toy_client(0, 0)
    soft = torch.softmax(torch.randn(data.num_nodes, C, generator=torch.Generator().manual_seed(0)), dim=1)
    raw, sharp = propagate_soft_labels(soft, data.y, data.edge_index, data.train_mask, 5, 0.5, 20.0, "openfgl")
    onehot = torch.nn.functional.one_hot(data.y, C).float()
    assert torch.equal(raw[data.train_mask], onehot[data.train_mask])
    assert torch.allclose(raw.sum(1), torch.ones(data.num_nodes)) and torch.allclose(sharp.sum(1), torch.ones(
        data.num_nodes))
    lp = LabelPropagation(num_layers=5, alpha=0.5)(soft, data.edge_index, mask=data.train_mask)
    assert torch.allclose(raw[~data.train_mask], torch.softmax(lp, 1)[~data.train_mask])
    assert torch.allclose(sharp[~data.train_mask], torch.softmax(lp / 20, 1)[~data.train_mask])
    # the temperature flattens the distribution
    assert (sharp[~data.train_mask].max(1).values <= raw[~data.train_mask].max(1).values + 1e-7).all()
    official, _ = propagate_soft_labels(soft, data.y, data.edge_index, data.train_mask, 5, 0.5, 20.0, "official")
    assert torch.equal(official[data.train_mask], onehot[data.train_mask])
    assert not torch.allclose(official, raw)


# --------------------------------------------------------------------------- the algorithm


def test_server_sends_each_client_the_confidence_weighted_mean_of_its_similar_clients():
    algorithm = FedGTA(config(rounds=1, accept_alpha=0.9), federation(), "cpu")
    server, clients = algorithm.build(Channel())
    uploads = {client.cid: client.fit(1) for client in clients}
    server.aggregate(uploads, {c.cid: float(c.num_samples) for c in clients}, 1)
    signatures = torch.stack([uploads[c][SIGNATURE] for c in uploads])
    confidences = torch.stack([uploads[c][CONFIDENCE].view(()) for c in uploads])
    expected_w = aggregation_weights(signatures, confidences, 0.9)
    assert torch.equal(server.weights, expected_w)
    assert torch.allclose(server.weights.sum(1), torch.ones(3, dtype=torch.float64))
    params = [{k: v for k, v in uploads[c].items() if k in server.parameters} for c in uploads]
    for i, client in enumerate(clients):
        expected = weighted_mean(params, expected_w[i].tolist()) if (expected_w[i] > 0).all() else weighted_mean(
            [p for p, w in zip(params, expected_w[i]) if w > 0], [float(w) for w in expected_w[i] if w > 0])
        sent = server.payload_for(client, 2)
        assert all(torch.allclose(sent[k], expected[k]) for k in expected)
    # clients 0 and 1 share a labelling, client 2 has another: their signatures say so
    cos = torch.nn.functional.cosine_similarity
    assert cos(signatures[0], signatures[1], dim=0) > cos(signatures[0], signatures[2], dim=0)


def test_one_shot_protocol_evaluates_the_personalised_download_without_fine_tuning():
    algorithm, result = run(rounds=1, local_epochs_grid=[1, 5])
    assert [s["local_epochs"] for s in result.extras["epochs_search"]] == [1, 5]
    ledger = result.ledger
    assert {(m.direction, m.round) for m in ledger.messages} == {("upload", 1), ("download", 2)}
    assert sorted(m.sender for m in ledger.select(name=SIGNATURE)) == ["client0", "client1", "client2"]
    assert "ft_epochs" not in result.per_client[0]  # not fine-tuned (O-pFGL fine-tunes FedTAD, not FedGTA)
    # what each client reports is its downloaded personalised model
    for client in algorithm.clients:
        sent = algorithm.server.payload_for(client, 2)
        own = dict(client.model.named_parameters())
        assert all(torch.equal(own[k], sent[k]) for k in sent)
    _, tuned = run(rounds=1, local_epochs_grid=[5], fine_tune=True)
    assert all(row["ft_val_accuracy"] >= row["global_val_accuracy"] for row in tuned.per_client)


def test_deterministic_for_a_seed():
    _, a = run(seed=3)
    _, b = run(seed=3)
    _, c = run(seed=4)
    assert a.metrics == b.metrics and a.history == b.history
    assert a.metrics != c.metrics


@pytest.mark.parametrize("options, key", [
    ({"moment_type": "mixed"}, "moment_type"),
    ({"propagation": "appnp"}, "propagation"),
    ({"lp_steps": 0}, "lp_steps"),
    ({"lp_alpha": 1.5}, "lp_alpha"),
    ({"temperature": 0.0}, "temperature"),
    ({"num_moments": 0}, "num_moments"),
    ({"accept_alpha": 2.0}, "accept_alpha"),
    ({"local_epochs_grid": [1, 1]}, "local_epochs_grid"),
    ({"local_epochs_grid": "all"}, "local_epochs_grid"),
    ({"share": "convs"}, "share"),
])
def test_bad_options_are_rejected_naming_the_key(options, key):
    with pytest.raises(ConfigError, match=key):
        config(rounds=1, **options)


def test_protocol_and_secure_aggregation_are_checked():
    with pytest.raises(ConfigError, match=r"^rounds: "):
        config(rounds=3, local_epochs_grid=[1, 2])
    with pytest.raises(ConfigError, match="secure_aggregation"):
        config(fields={"secure_aggregation": True})
