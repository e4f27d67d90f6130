"""Per-client model lists (O-pFGL's heterogeneous-model setting, Tables 3/11): architectures, seeds, runs, refusals."""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
import torch
from torch_geometric.nn import GCNConv, SGConv
from torch_geometric.nn.conv.gcn_conv import gcn_norm

from fglcore.algorithms import ALGORITHMS
from fglcore.algorithms import opfgl as O
from fglcore.algorithms.local import Local
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.models import MODELS, SSGC, APPNPMLP, build_client_model, build_model
from fglcore.models.gcn import GCN
from fglcore.models.model_lists import HETERO, HETERO_PAPER
from fglcore.models.sgc import SGC
from tests.test_opfgl import C, F_IN, FAST, synthetic_client

CLASSES = {"gcn": GCN, "sgc": SGC, "ssgc": SSGC, "appnp_mlp": APPNPMLP}


def expected_parameters(entry, f: int, c: int) -> int:
    """Parameter count of a list entry by hand: linear layers, biases and BatchNorm affine pairs."""
    if entry.model == "sgc":
        return f * c + c
    h, layers = entry.hidden, entry.num_layers
    if entry.model == "gcn":
        return (f * h + h) + (layers - 2) * (h * h + h) + (h * c + c)
    # ssgc / appnp_mlp: Linear(f, h) -> BN(h) -> ... -> Linear(h, c)
    return (f * h + h) + 2 * h + (layers - 2) * (h * h + h + 2 * h) + (h * c + c)


def federation(num_clients: int = 10) -> SimpleNamespace:
    clients = [synthetic_client(k) for k in range(num_clients)]
    return SimpleNamespace(task="node", clients=clients, num_features=F_IN, num_classes=C)


def hetero_config(algorithm: str, seed: int = 0, model: str = "hetero", **fields) -> ExperimentConfig:
    return ExperimentConfig.from_dict({
        "algorithm": algorithm, "model": model, "num_clients": 10, "seed": seed, "dropout": 0.0,
        "weight_decay": 0.0, "metric_aggregation": "client_weighted", **fields})


# --------------------------------------------------------------------------- the lists


def test_the_official_list_in_client_order():
    assert [e.describe() for e in HETERO] == [
        "sgc K=2", "gcn 2x64", "gcn 2x128", "gcn 2x256", "gcn 2x512", "sgc K=2", "gcn 3x64", "gcn 3x512",
        "appnp_mlp 2x64 (K=2, alpha=0.1)", "sgc K=4"]
    assert HETERO_PAPER[0].describe() == "ssgc 2x64 (K=2)" and HETERO_PAPER[1:] == HETERO[1:]
    assert MODELS.get("hetero").clients == HETERO and MODELS.get("hetero").tasks == ("node",)


@pytest.mark.parametrize("name", ["hetero", "hetero_paper"])
def test_every_client_gets_its_listed_architecture_on_cora_sizes(name):
    entries = MODELS.get(name).clients
    for cid, entry in enumerate(entries):
        model = build_client_model(name, cid, 1433, 7, dropout=0.0)
        assert type(model) is CLASSES[entry.model], cid
        assert sum(p.numel() for p in model.parameters()) == expected_parameters(entry, 1433, 7), cid
    gcn = build_client_model(name, 1, 1433, 7, dropout=0.0)
    assert sum(p.numel() for p in gcn.parameters()) == 92_231  # digest §3.10: 1433*64+64+64*7+7
    widths = [m.out_channels for m in build_client_model(name, 7, 1433, 7).convs]
    assert widths == [512, 512, 7]
    assert build_client_model(name, 9, 1433, 7).conv.K == 4


def test_local_init_models_follow_the_list_deterministically():
    def state(seed):
        algorithm = Local(hetero_config("local", seed), federation(), "cpu")
        reference, models = algorithm.init_models()
        assert reference is None
        return models

    first, again, other = state(0), state(0), state(1)
    for cid, (entry, model) in enumerate(zip(HETERO, first)):
        assert type(model) is CLASSES[entry.model]
        assert sum(p.numel() for p in model.parameters()) == expected_parameters(entry, F_IN, C), cid
    for a, b in zip(first, again):
        assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    assert any(not torch.equal(x, y) for a, b in zip(first, other)
               for x, y in zip(a.state_dict().values(), b.state_dict().values()))


# --------------------------------------------------------------------------- the new models


def dense_gcn_operator(edge_index, edge_weight, n):
    index, weight = gcn_norm(edge_index, edge_weight, n)
    return torch.zeros(n, n).index_put((index[1], index[0]), weight, accumulate=True)


def test_ssgc_is_the_mean_of_the_hops_into_linear_batchnorm_linear():
    data = synthetic_client(3)
    torch.manual_seed(0)
    model = SSGC(F_IN, 8, C, K=2).eval()
    A = dense_gcn_operator(data.edge_index, None, data.num_nodes)
    mean = (data.x + A @ data.x + A @ A @ data.x) / 3
    hidden = model.conv.lin(mean)
    with torch.no_grad():
        model.norm.module.running_mean.uniform_()
        model.norm.module.running_var.uniform_(0.5, 2.0)
    norm = model.norm.module
    normed = (hidden - norm.running_mean) / torch.sqrt(norm.running_var + norm.eps) * norm.weight + norm.bias
    expected = model.head.lins[0](normed)  # no nonlinearity between the layers (the authors' head)
    assert torch.allclose(model(data.x, data.edge_index), expected, atol=1e-5)


def test_appnp_mlp_propagates_the_features_then_linear_batchnorm_linear():
    data = synthetic_client(4)
    torch.manual_seed(0)
    model = APPNPMLP(F_IN, 8, C, K=2, alpha=0.1).eval()
    A = dense_gcn_operator(data.edge_index, None, data.num_nodes)
    z = data.x
    for _ in range(2):
        z = 0.9 * A @ z + 0.1 * data.x
    lin0, lin1 = model.mlp.lins
    norm = model.mlp.norms[0].module
    h = lin0(z)
    expected = lin1((h - norm.running_mean) / torch.sqrt(norm.running_var + norm.eps) * norm.weight + norm.bias)
    assert torch.allclose(model(data.x, data.edge_index), expected, atol=1e-5)


@pytest.mark.parametrize("model", ["ssgc", "appnp_mlp"])
def test_decoupled_models_take_the_pseudo_graphs_edge_weights(model):
    adj = torch.tensor([[0, .5, 0, .2], [.5, 0, .9, 0], [0, .9, 0, 0], [.2, 0, 0, 0]])
    graph = O.PseudoGraph(torch.randn(4, F_IN), adj, torch.arange(4) % C)
    net = build_model(model, F_IN, 8, C, dropout=0.0).eval()
    weighted = net(graph.x, O.pseudo_graph_input(graph, model))
    A = dense_gcn_operator(graph.edge_index, graph.edge_weight, 4)
    if model == "ssgc":
        expected = net.head(net.norm(net.conv.lin((graph.x + A @ graph.x + A @ A @ graph.x) / 3)))
    else:
        z = graph.x
        for _ in range(2):
            z = 0.9 * A @ z + 0.1 * graph.x
        expected = net.mlp(z)
    assert torch.allclose(weighted, expected, atol=1e-5)
    assert not torch.allclose(weighted, net(graph.x, graph.edge_index), atol=1e-4)  # the weights matter


# --------------------------------------------------------------------------- runs


def client_classes(algorithm) -> list[type]:
    return [type(client.model) for client in algorithm.clients]


@pytest.mark.parametrize("name", ["hetero", "hetero_paper"])
def test_opfgl_runs_end_to_end_with_one_architecture_per_client(name):
    cfg = hetero_config("opfgl", model=name, rounds=1, algorithm_options=FAST)
    algorithm = O.Opfgl(cfg, federation(), "cpu")
    result = algorithm.run()
    assert client_classes(algorithm) == [CLASSES[e.model] for e in MODELS.get(name).clients]
    assert [c.model_name for c in algorithm.clients] == [e.model for e in MODELS.get(name).clients]
    assert 0.0 <= result.metrics["test_accuracy"] <= 1.0
    assert len(result.ledger.select(sender="clients")) == 10  # still one upload each
    assert all(row["stage1_epochs"] > 0 for row in result.per_client)


def test_opfgl_hetero_same_seed_same_numbers():
    def once(seed):
        cfg = hetero_config("opfgl", seed, rounds=1, algorithm_options={**FAST, "condense_iterations": 20,
                                                                          "max_epochs": 200})
        return O.Opfgl(cfg, federation(), "cpu").run().metrics

    first = once(0)
    assert once(0) == first


def test_standalone_runs_end_to_end_with_one_architecture_per_client():
    cfg = hetero_config("local", rounds=5, local_epochs=2)
    algorithm = Local(cfg, federation(), "cpu")
    result = algorithm.run()
    assert client_classes(algorithm) == [CLASSES[e.model] for e in HETERO]
    assert 0.0 <= result.metrics["test_accuracy"] <= 1.0
    assert len(result.ledger.messages) == 0
    again = Local(cfg, federation(), "cpu").run()
    assert again.metrics == result.metrics


def test_fedspray_keeps_each_clients_own_gnn_and_shares_no_gnn_parameter():
    cfg = hetero_config("fedspray", rounds=2, local_epochs=1)
    algorithm = ALGORITHMS.get("fedspray")(cfg, federation(), "cpu")
    result = algorithm.run()
    assert [type(c.trainer.model) for c in algorithm.clients] == [CLASSES[e.model] for e in HETERO]
    sent = {name for m in result.ledger.messages for name in [m.name]}
    assert not any(name.startswith(("convs.", "conv.", "lin.", "mlp.")) for name in sent), sent


# --------------------------------------------------------------------------- refusals


NODE_ALGORITHMS = [n for n in ALGORITHMS.names() if "node" in ALGORITHMS.get(n).tasks]


@pytest.mark.parametrize("name", NODE_ALGORITHMS)
def test_algorithms_that_combine_parameters_refuse_a_model_list(name):
    algorithm = ALGORITHMS.get(name)
    if algorithm.accepts_model_lists():
        assert name in ("local", "opfgl", "fedspray", "fedtad", "dense", "coboost")
        return
    with pytest.raises(ConfigError, match=r"model: 'hetero' gives each of its 10 clients its own architecture"):
        ExperimentConfig.from_dict({"dataset": "Cora", "partition": "louvain_plus", "num_clients": 10,
                                    "model": "hetero", "algorithm": name, "rounds": 1})


def test_aggregating_refusal_says_why():
    with pytest.raises(ConfigError, match="fedavg cannot train it: it combines model parameters across clients"):
        hetero_config("fedavg")
    with pytest.raises(ConfigError, match="fedavg_ft cannot train it: it combines model parameters across clients"):
        hetero_config("fedavg_ft")


def test_a_model_list_fixes_the_clients_and_takes_no_options():
    with pytest.raises(ConfigError, match="num_clients: model list 'hetero' holds 10 client models.*got 5"):
        hetero_config("local", num_clients=5)
    with pytest.raises(ConfigError, match="model_options: model list 'hetero'"):
        hetero_config("local", model_options={"K": 3})
    with pytest.raises(ConfigError, match="not one model; build client cid's with build_client_model"):
        build_model("hetero", F_IN, 8, C)
    with pytest.raises(ConfigError, match="client id 10 is not in model list 'hetero'; accepted: 0 to 9"):
        build_client_model("hetero", 10, F_IN, C)
    with pytest.raises(ConfigError, match="model: model list 'hetero' holds node models"):
        ExperimentConfig.from_dict({"dataset": "MUTAG", "partition": "random", "num_clients": 10,
                                    "model": "hetero", "algorithm": "local"})


def test_opfgl_single_model_runs_still_share_one_initialisation():
    cfg = dataclasses.replace(hetero_config("opfgl", rounds=1, algorithm_options=FAST), model="gcn", num_clients=10)
    algorithm = O.Opfgl(cfg, federation(), "cpu")
    _, clients = algorithm.build(None)
    first = clients[0].model.state_dict()
    assert all(torch.equal(first[k], c.model.state_dict()[k]) for c in clients for k in first)
