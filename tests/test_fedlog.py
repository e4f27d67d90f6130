"""fedlog (FedLoG, Kim et al. ICLR 2025, as O-pFGL's one-shot baseline): the global synthetic data, the branch
classifier, the ledger, determinism, options."""
from __future__ import annotations

import pytest
import torch

from fglcore.algorithms.fedlog import FedLoG, class_rates, global_synthetic_data, neighbor_means
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.fl.channel import Channel
from fglcore.models.fedlog import FedLoGNet
from fglcore.models.fedlog_branch import BranchClassifier
from tests.test_fedavg_ft import federation
from toy_federations import C, F_IN

K = 4  # synthetic nodes per class in the tests (the code's num_proto is 20)
FAST = {"local_epochs_grid": [2], "num_proto": K, "pretrain_epochs": 5, "pretrain_patience": 2}


def config(seed: int = 0, fields: dict | None = None, **options) -> ExperimentConfig:
    return ExperimentConfig.from_dict({
        "algorithm": "fedlog", "rounds": 1, "num_clients": 3, "seed": seed, "hidden": 8,
        "metric_aggregation": "client_weighted", "algorithm_options": {**FAST, **options}, **(fields or {})})


def run(seed: int = 0, channel: Channel | None = None, **options):
    algorithm = FedLoG(config(seed, **options), federation(), "cpu")
    return algorithm, algorithm.run(channel)


def test_global_synthetic_data_weights_each_client_by_its_class_rate():
    g = torch.Generator().manual_seed(0)
    # client 0 has only class 0, client 1 classes 0 and 1 equally; nobody has class 2
    rates = [torch.tensor([1.0, 0.0, 0.0]), torch.tensor([0.5, 0.5, 0.0])]
    heads = [torch.full((3 * K, 2), 1.0), torch.full((3 * K, 2), 4.0)]
    x, y = global_synthetic_data(heads, rates, K, g)
    assert x.shape == (3 * K, 2) and y.tolist() == [c for c in range(3) for _ in range(K)]
    assert torch.allclose(x[y == 0], torch.tensor(1.0 * 2 / 3 + 4.0 / 3))  # weights 1/1.5 and 0.5/1.5
    assert torch.allclose(x[y == 1], torch.tensor(4.0))  # only client 1 has class 1
    assert torch.allclose(x[y == 2], torch.tensor(2.5))  # nobody: 1/K each
    # the permutation only reorders nodes within a class
    distinct = [torch.arange(3 * K * 2, dtype=torch.float).view(3 * K, 2)]
    xp, _ = global_synthetic_data(distinct, [torch.tensor([1.0, 1.0, 1.0])], K, torch.Generator().manual_seed(3))
    for c in range(3):
        block = distinct[0][c * K:(c + 1) * K]
        assert sorted(map(tuple, xp[c * K:(c + 1) * K].tolist())) == sorted(map(tuple, block.tolist()))


def test_class_rates_and_neighbour_means():
    y = torch.tensor([0, 0, 1, 2, 2])
    train = torch.tensor([True, True, True, False, True])
    assert class_rates(y, train, 4).tolist() == [0.5, 0.25, 0.25, 0.0]
    h = torch.tensor([[1.0], [3.0], [5.0], [7.0]])
    edges = torch.tensor([[0, 0, 1, 2, 3], [1, 2, 0, 0, 3]])  # 3 has only a self-loop
    assert neighbor_means(h, edges).view(-1).tolist() == [4.0, 1.0, 1.0, 0.0]


def test_code_branch_is_its_layer_norm_and_query_branch_moves_queries():
    torch.manual_seed(0)
    q, n, s = torch.randn(5, 8), torch.randn(5, 8), torch.randn(12, 8)
    code = BranchClassifier(8, 2, "code")
    assert torch.allclose(code(q, n, s), code.norm(q))
    query = BranchClassifier(8, 2, "query")
    query.load_state_dict(code.state_dict())
    for layer in query.layers:  # make the (tiny, gain 0.001) shift visible
        torch.nn.init.normal_(layer.trans_mlp[-1].weight)
    assert not torch.allclose(query(q, n, s), code(q, n, s))
    out = query(q, n, s)
    assert out.shape == (5, 8) and torch.isfinite(out).all()


def test_model_shapes_and_degree_gate():
    net = FedLoGNet(F_IN, 8, C)
    syn = torch.randn(C * K, F_IN)
    head, tail = net.branch_log_probs(torch.randn(6, 8), torch.randn(6, 8), syn, syn)
    assert head.shape == tail.shape == (6, C)
    assert torch.allclose(head.exp().sum(1), torch.ones(6))
    gate = FedLoGNet.gate(torch.tensor([0, 4, 100]), 3)
    assert gate.shape == (3, 1) and gate[1].item() == pytest.approx(0.5) and gate[2].item() > 0.99


def test_one_upload_and_one_download_per_client_with_the_synthetic_data():
    channel = Channel()
    algorithm, result = run(channel=channel)
    params = {name: tuple(p.shape) for name, p in algorithm.clients[0].model.named_parameters()}
    for client in algorithm.clients:
        up = {m.name: m.shape for m in channel.ledger.select(sender=client.name)}
        down = {m.name: m.shape for m in channel.ledger.select(receiver=client.name)}
        assert up == {**params, "synthetic_head": (C * K, F_IN), "synthetic_tail": (C * K, F_IN),
                      "class_rates": (C,)}
        assert down == {**params, "global_synthetic_x": (C * K, F_IN), "global_synthetic_y": (C * K,)}
    assert len(channel.ledger) == 3 * (2 * len(params) + 5)
    assert {m.round for m in channel.ledger.messages} == {1}
    gx = result.extras["global_synthetic_x"]
    assert gx.shape == (C * K, F_IN) and torch.isfinite(gx).all()
    # the server's global data is the class-rate weighted mix of what the clients uploaded
    heads = [m for m in channel.ledger.messages if m.name == "synthetic_head"]
    assert len(heads) == 3


def test_runs_learn_and_are_deterministic():
    a_alg, a = run(seed=1)
    _, b = run(seed=1)
    assert a.metrics == b.metrics
    assert 0.0 <= a.metrics["test_accuracy"] <= 1.0
    # the toy's features announce the class up to a per-client shift: each client's own model does better
    # than chance (1/3) on validation
    assert a.metrics["val_accuracy"] > 0.45
    for row in a.per_client:
        assert 1 <= row["pretrain_epochs"] <= FAST["pretrain_epochs"]
        assert 0.0 <= row["scaler_mean"] <= 1.0
    assert a.extras["local_epochs"] == 2 and a.extras["epochs_search"][0]["local_epochs"] == 2


def test_secure_aggregation_and_more_rounds_are_refused():
    with pytest.raises(ConfigError, match="secure_aggregation"):
        config(fields={"secure_aggregation": True})
    with pytest.raises(ConfigError, match=r"^rounds: "):
        config(fields={"rounds": 2})


@pytest.mark.parametrize("options, key", [
    ({"num_proto": 0}, "num_proto"),
    ({"lr": 0.0}, "lr"),
    ({"batch_size": 0}, "batch_size"),
    ({"scaler_threshold": 1.5}, "scaler_threshold"),
    ({"branch_aggregation": "mean"}, "branch_aggregation"),
    ({"local_epochs_grid": [0]}, "local_epochs_grid"),
    ({"local_epochs_grid": [3, 3]}, "local_epochs_grid"),
    ({"norm_weight": -1.0}, "norm_weight"),
    ({"rounds": 3}, "rounds"),
])
def test_bad_options_are_refused_before_any_work(options, key):
    with pytest.raises(ConfigError, match=key):
        config(**options)


def test_code_defaults():
    o = FedLoG.check_options({})
    assert (o["num_proto"], o["lr"], o["weight_decay"], o["batch_size"], o["head_degree"]) == (20, 1e-3, 5e-4, 64, 3)
    assert (o["pretrain_epochs"], o["branch_aggregation"]) == (100, "code")


def test_global_synthetic_data_stays_on_the_uploads_device():
    """The class rates are computed on the CPU; the synthetic heads live on the model's device. The server's
    mix follows the heads (``meta`` here stands for a GPU: the CPU rates met CUDA heads and failed on one)."""
    heads = [torch.randn(3 * 2, 5).to("meta") for _ in range(2)]
    rates = [torch.tensor([0.5, 0.5, 0.0]), torch.tensor([0.2, 0.3, 0.5])]
    x, y = global_synthetic_data(heads, rates, 2, torch.Generator().manual_seed(0))
    assert x.device.type == y.device.type == "meta" and x.shape == (6, 5) and y.shape == (6,)
