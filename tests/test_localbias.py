"""The local-bias method in one process: equivalence, sampling, options, metric, communication counts."""
from __future__ import annotations

import math

import pytest
import torch

from fglcore.config import ConfigError, ExperimentConfig
from fglcore.distributed.cost import analytic_bytes, measured_bytes
from fglcore.distributed.exchange import LocalExchange
from fglcore.distributed.run import merged_ledger, simulate, simulate_full_graph_pass
from fglcore.distributed.sampling import budget, draw_distribution, sample_nodes
from fglcore.distributed.shard import Shard
from fglcore.distributed.trainer import DistributedTrainer, SamplingOptions
from fglcore.metrics import local_bias
from localbias_graphs import central_pass, federated, small_graph, spec_for


@pytest.mark.parametrize("num_clients", [1, 2, 4])
@pytest.mark.parametrize("backbone", ["gcn", "1gnn"])
def test_full_graph_pass_equals_central_model(num_clients, backbone):
    """Digest §6.5 item 1: Eqs. 2 and 4 over K clients = the centralised model's forward and gradients."""
    data = small_graph()
    clients = federated(data, num_clients)
    spec = spec_for(data, backbone=backbone, layers=3)
    result = simulate_full_graph_pass(clients, spec)
    logits, grads = central_pass(data, spec)
    for k, client in enumerate(clients):
        assert torch.allclose(result["logits"][k], logits[client.global_id], atol=1e-6, rtol=1e-5)
    for name, grad in grads.items():
        assert torch.allclose(result["grads"][name], grad, atol=1e-6, rtol=1e-5), name


def test_runs_are_deterministic_and_variants_differ():
    data = small_graph(n=80, edges=240)
    clients = federated(data, 3)
    runs = {}
    for variant in ("ours", "ours*", "ours-full"):
        spec = spec_for(data, variant=variant, dropout=0.2, rounds=3, sample_ratio=0.4)
        a, b = simulate(clients, spec), simulate(clients, spec)
        assert all(x.loss == y.loss for x, y in zip(a, b))
        assert all(torch.equal(x.logits[3]["test"], y.logits[3]["test"]) for x, y in zip(a, b))
        runs[variant] = a
    first = {v: [r.loss[0] for r in records] for v, records in runs.items()}
    assert first["ours"] != first["ours*"] != first["ours-full"]


def test_label_guided_distribution_balances_training_classes():
    y = torch.tensor([0] * 10 + [1] * 2 + [2] * 4 + [0] * 4)
    train = torch.tensor([True] * 16 + [False] * 4)
    p = draw_distribution(y, train)
    assert p.sum().item() == pytest.approx(1.0)
    per_class = [p[:16][y[:16] == c].sum().item() for c in range(3)]
    assert per_class == pytest.approx([16 / 20 / 3] * 3)  # training share split equally over the classes
    assert p[16:].tolist() == pytest.approx([1 / 20] * 4)  # the unlabelled stratum: uniform
    with_all = draw_distribution(y, train, "all")
    assert [with_all[y == c].sum().item() for c in range(3)] == pytest.approx([1 / 3] * 3)


@pytest.mark.parametrize("scheme", ["draws", "poisson"])
def test_inclusion_probabilities_are_the_sampling_frequencies(scheme):
    """Eq. 5 needs p_i = Pr[i in S]; checked by Monte Carlo (4 standard errors)."""
    y = torch.tensor([0, 0, 0, 0, 0, 0, 1, 1, 2, 2])
    p = draw_distribution(y, torch.ones(10, dtype=torch.bool))
    size, reps = 4, 4000
    g = torch.Generator().manual_seed(0)
    hits, inclusion = torch.zeros(10), None
    for _ in range(reps):
        nodes, prob = sample_nodes(p, size, scheme, g)
        hits[nodes] += 1
        full = torch.zeros(10, dtype=torch.float64)
        full[nodes] = prob
        inclusion = full if inclusion is None else torch.maximum(inclusion, full)
    freq = hits / reps
    se = (inclusion * (1 - inclusion) / reps).sqrt()
    assert ((freq.double() - inclusion).abs() <= 4 * se + 1e-3).all()


def test_budget_and_options_are_checked():
    assert budget(100, 0.25) == 25 and budget(3, 0.01) == 1
    from fglcore.algorithms import ALGORITHMS

    LocalBias = ALGORITHMS.get("localbias")
    with pytest.raises(ConfigError, match="algorithm_options.variant"):
        LocalBias.check_options({"variant": "mine"})
    with pytest.raises(ConfigError, match="algorithm_options.sample_ratio"):
        LocalBias.check_options({"sample_ratio": 0.0})
    with pytest.raises(ConfigError, match="algorithm_options.engine"):
        LocalBias.check_options({"engine": "mpi"})
    with pytest.raises(ConfigError, match="secure_aggregation"):
        ExperimentConfig.from_dict({"dataset": "Cora", "algorithm": "localbias", "secure_aggregation": True})


def test_local_bias_metric():
    a = torch.tensor([[0.0, 0.0], [3.0, 4.0]])
    assert local_bias(a, a) == 0.0
    assert local_bias(a, torch.zeros(2, 2)) == pytest.approx(2.5)  # (0 + 5) / 2
    assert local_bias(a + 7.0, a, "probabilities") == pytest.approx(0.0, abs=1e-12)  # softmax is shift-free
    with pytest.raises(ValueError, match="space"):
        local_bias(a, a, "ranks")
    assert math.isnan(local_bias(torch.zeros(0, 2), torch.zeros(0, 2)))


def test_ledger_counts_what_is_sent_and_the_dense_formula():
    data = small_graph()
    clients = federated(data, 3)
    spec = spec_for(data, rounds=2, hidden=8)
    records = simulate(clients, spec)
    ledger = merged_ledger(records)
    shards = [Shard(k, c, "gcn") for k, c in enumerate(clients)]
    for k, shard in enumerate(shards):
        # full graph: client k sends j one row per node of j's boundary toward k, width d_l, per layer
        rows = sum(int(s.boundary[k].numel()) for s in shards if k in s.boundary)
        names = {m.name for m in ledger.select(sender=f"client{k}", round=1) if m.name.startswith("local_term")}
        terms = {name: ledger.total_bytes(sender=f"client{k}", round=1, name=name) for name in names}
        assert terms["local_term_1"] == rows * 8 * 4 and terms["local_term_2"] == rows * 3 * 4
        assert terms["local_term_1_grad"] == sum(int(shard.boundary[j].numel()) for j in shard.boundary) * 8 * 4
    # the dense schedule, by hand for client 0 of sizes (5, 6, 7), dims (4, 3, 2)
    got = analytic_bytes([5, 6, 7], [4, 3, 2], 0)
    up = 4 * (13 * 3 + 13 * 2 + 13 * 3 + (5 * 3 + 4 * 2))
    down = 4 * (5 * 3 + 5 * 2 + 5 * 3 + (5 * 3 + 4 * 2))
    assert got == {"upload": up, "download": down, "total": up + down}
    measured = measured_bytes(ledger, 0, [1, 2])
    assert measured["upload"] > 0 and measured["total"] == measured["upload"] + measured["download"]


def test_cora_run_through_the_experiment_api():
    from fglcore.experiment import run_full

    rows, result = run_full(dict(dataset="Cora", partition="random", num_clients=4, split="planetoid_full",
                                 algorithm="localbias", rounds=2, hidden=16, dropout=0.2, seed=0,
                                 algorithm_options={"variant": "ours", "local_bias_reference": True}))
    assert 0 <= result.metrics["test_accuracy"] <= 1
    assert result.metrics["test_local_bias"] > 0
    extras = result.extras["localbias"]
    assert len(extras["communication"]) == 4 and extras["test_logits"]["logits"].shape == (1000, 7)
    assert "x" not in result.ledger.names(sender="clients")  # features never leave a client


@pytest.mark.parametrize("backbone", ["gcn", "1gnn"])
def test_sparse_bag_of_words_path_equals_central_on_cora(backbone):
    """Cora's features take the sparse first layer (:meth:`Shard.features`); still the centralised model."""
    from fglcore.data.federation import build_federation

    config = ExperimentConfig.from_dict(dict(dataset="Cora", partition="random", num_clients=4,
                                             split="planetoid_full", seed=0))
    federation = build_federation(config, keep_cross_edges=True)
    assert Shard(0, federation.clients[0], backbone).sparse_x is not None
    spec = spec_for(federation.data, backbone=backbone)
    result = simulate_full_graph_pass(federation.clients, spec)
    logits, grads = central_pass(federation.data, spec)
    for k, client in enumerate(federation.clients):
        assert torch.allclose(result["logits"][k], logits[client.global_id], atol=1e-5, rtol=1e-5)
    for name, grad in grads.items():
        assert torch.allclose(result["grads"][name], grad, atol=1e-6, rtol=1e-4), name


def test_sampled_aggregation_is_conditionally_unbiased():
    """Eq. 5 / Prop. 1 (digest A3): with Poisson sampling and the self term unscaled, one GCN layer's output of a
    sampled node averages (over samples that contain it) to the full-graph output; the 1/p is applied once."""
    data = small_graph(n=40, edges=120)
    clients = federated(data, 2)
    spec = spec_for(data, variant="ours", layers=1, sample_ratio=0.5, sampling="poisson", normalise_self=False)
    shards = [Shard(k, c, "gcn") for k, c in enumerate(clients)]
    trainer = DistributedTrainer(shards, LocalExchange(2), spec.model(), spec.config, spec.options)
    with torch.no_grad():
        full = trainer.forward(trainer.full_plans(), train=False)
        sums = {s.cid: torch.zeros_like(full[s.cid]) for s in shards}
        counts = {s.cid: torch.zeros(s.n) for s in shards}
        for _ in range(1500):
            plans = trainer.sample_plans()
            out = trainer.forward(plans, train=False)
            for s in shards:
                sums[s.cid][plans[s.cid].nodes] += out[s.cid]
                counts[s.cid][plans[s.cid].nodes] += 1
    for s in shards:
        mean = sums[s.cid] / counts[s.cid].clamp(min=1).view(-1, 1)
        assert (mean - full[s.cid]).abs().max() < 0.15 < full[s.cid].abs().max()
