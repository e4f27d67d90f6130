"""Algorithms: Local, Central, FedAvg and FedProx on Cora and on two small TU datasets."""
from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Batch

from fglcore.algorithms import ALGORITHMS, Algorithm
from fglcore.algorithms.training import GraphBatcher
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.data.datasets import load_graph_dataset
from fglcore.data.federation import GraphClient, GraphFederation, build_federation
from fglcore.data.splits import graph_split_indices
from fglcore.fl.channel import Channel
from fglcore.metrics import minority_mask

CPU = torch.device("cpu")
NODE = dict(dataset="Cora", partition="louvain", num_clients=3, hidden=16, rounds=3, local_epochs=2)
GRAPH = dict(dataset="MUTAG", partition="by_dataset", split="graph_stratified", model="gin", num_layers=2,
             hidden=16, rounds=2, local_epochs=1, batch_size=32)


def node_config(**changes) -> ExperimentConfig:
    return ExperimentConfig.from_dict({**NODE, **changes})


def graph_config(**changes) -> ExperimentConfig:
    return ExperimentConfig.from_dict({**GRAPH, **changes})


@pytest.fixture(scope="module")
def cora3():
    return build_federation(node_config())


@pytest.fixture(scope="module")
def cora1():
    return build_federation(node_config(num_clients=1))


@pytest.fixture(scope="module")
def tu_pair():
    """MUTAG (7 features) and PTC_MR (18 features): clients whose input layers cannot be shared."""
    clients = []
    for name in ("MUTAG", "PTC_MR"):
        dataset = load_graph_dataset(name)
        train, val, test = graph_split_indices(dataset.y.view(-1), [0.8, 0.1, 0.1], 123)
        clients.append(GraphClient(name, name, dataset, train, val, test, dataset.num_features, dataset.num_classes))
    return GraphFederation("MUTAG+PTC_MR", clients)


def run(config: ExperimentConfig, federation, channel: Channel | None = None) -> tuple[Algorithm, object]:
    algorithm = ALGORITHMS.get(config.algorithm)(config, federation, CPU)
    return algorithm, algorithm.run(channel)


def parameters(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def test_registry_lists_the_algorithms_with_citations():
    assert {"local", "central", "fedavg", "fedprox"} <= set(ALGORITHMS.names())
    for name in ("local", "central", "fedavg", "fedprox"):
        cls = ALGORITHMS.get(name)
        assert cls.name == name and cls.citation and set(cls.tasks) == {"node", "graph"}


def test_fedavg_with_one_client_equals_central_training_on_the_union(cora1):
    fedavg_alg, fedavg = run(node_config(num_clients=1, algorithm="fedavg"), cora1)
    union = {"graph": "union"}
    central_alg, central = run(node_config(num_clients=1, algorithm="central", algorithm_options=union), cora1)
    assert fedavg.history == central.history
    ours, theirs = parameters(fedavg_alg.clients[0].model), parameters(central_alg.clients[0].learner.trainer.model)
    assert all(torch.equal(ours[k], theirs[k]) for k in ours)


def test_fedprox_with_mu_zero_is_fedavg_and_mu_positive_is_not(cora3):
    fedavg_alg, fedavg = run(node_config(algorithm="fedavg"), cora3)
    prox0_alg, prox0 = run(node_config(algorithm="fedprox", algorithm_options={"mu": 0.0}), cora3)
    _, prox = run(node_config(algorithm="fedprox", algorithm_options={"mu": 1.0}), cora3)
    assert prox0.history == fedavg.history
    ours, theirs = parameters(prox0_alg.clients[1].model), parameters(fedavg_alg.clients[1].model)
    assert all(torch.equal(ours[k], theirs[k]) for k in ours)
    assert prox.history != fedavg.history


def test_same_seed_same_numbers_other_seed_other_numbers(cora3):
    _, first = run(node_config(algorithm="fedavg"), cora3)
    _, again = run(node_config(algorithm="fedavg"), cora3)
    _, other = run(node_config(algorithm="fedavg", seed=1), cora3)
    assert first.history == again.history and first.metrics == again.metrics
    assert first.history != other.history


def test_fedavg_ledger_holds_model_parameters_and_sample_counts_only(cora3):
    algorithm, result = run(node_config(algorithm="fedavg"), cora3)
    model = algorithm.clients[0].model
    names = {name for name, _ in model.named_parameters()}
    model_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    ledger = result.ledger
    assert ledger.names(sender="server") == names
    assert ledger.names(sender="clients") == names | {"num_samples"}
    k = len(cora3.clients)
    rounds = ledger.per_round().set_index("round")
    for r in range(1, NODE["rounds"] + 1):  # download of round r's model + upload after round r
        assert rounds.loc[r, "total_bytes"] == 2 * k * model_bytes + k * 4
    assert rounds.loc[NODE["rounds"] + 1, "total_bytes"] == k * model_bytes  # the final model, evaluated


@pytest.mark.parametrize("name", ["local", "central"])
def test_local_and_central_send_nothing(cora3, name):
    _, result = run(node_config(algorithm=name), cora3)
    assert len(result.ledger) == 0
    assert 0 < result.metrics["test_accuracy"] <= 1


def test_secure_aggregation_gives_the_plain_numbers_and_hides_updates(cora3):
    _, plain = run(node_config(algorithm="fedavg"), cora3)
    _, secure = run(node_config(algorithm="fedavg", secure_aggregation=True), cora3)
    assert len(plain.history) == len(secure.history)
    for a, b in zip(plain.history, secure.history):
        assert a.keys() == b.keys()
        assert all(abs(a[key] - b[key]) < 1e-5 for key in a)
    uploads = secure.ledger.select(receiver="server")
    assert uploads and {m.name for m in uploads} == {"masked_update"} and {m.dtype for m in uploads} == {"int64"}


def test_fedavg_clients_hold_the_global_model_and_local_clients_their_own(cora3):
    fedavg, _ = run(node_config(algorithm="fedavg"), cora3)
    server = fedavg.server.parameters
    for client in fedavg.clients:
        own = parameters(client.model)
        assert all(torch.equal(own[k], server[k]) for k in server)
    local, _ = run(node_config(algorithm="local"), cora3)
    first, second = parameters(local.clients[0].model), parameters(local.clients[1].model)
    assert not torch.equal(first["convs.0.lin.weight"], second["convs.0.lin.weight"])


@pytest.mark.parametrize("norm_layers", ["local", "averaged"])
def test_fedavg_norm_layers_local_keeps_each_clients_layer_norm(cora3, norm_layers):
    """FedStruct's official FedAvg: LayerNorm weights are never averaged (option norm_layers="local")."""
    config = node_config(algorithm="fedavg", model="decoupled_gcn", model_options={"input_layer_norm": True},
                         algorithm_options={"norm_layers": norm_layers})
    fedavg, result = run(config, cora3)
    norms = {"mlp.input_norm.weight", "mlp.input_norm.bias"}
    assert norms <= set(parameters(fedavg.clients[0].model))
    local = norm_layers == "local"
    assert set(fedavg.server.parameters).isdisjoint(norms) == local
    assert set(result.ledger.names()).isdisjoint(norms) == local
    first, *others = [parameters(c.model) for c in fedavg.clients]
    for other in others:
        for name, value in first.items():
            assert torch.equal(value, other[name]) != (local and name in norms), name


def test_reset_optimizer_restarts_adam_every_round(cora3):
    kept, kept_result = run(node_config(algorithm="fedavg"), cora3)
    reset, reset_result = run(node_config(algorithm="fedavg", algorithm_options={"reset_optimizer": True}), cora3)
    steps = lambda alg: {int(s["step"]) for s in alg.clients[0].trainer.optimizer.state.values()}
    assert steps(kept) == {NODE["rounds"] * NODE["local_epochs"]}
    assert steps(reset) == {NODE["local_epochs"]}
    assert kept_result.history != reset_result.history


def test_central_whole_graph_keeps_cross_edges_and_scores_each_clients_nodes(cora3):
    whole, result = run(node_config(algorithm="central"), cora3)
    union, _ = run(node_config(algorithm="central", algorithm_options={"graph": "union"}), cora3)
    whole_trainer, union_trainer = whole.clients[0].learner.trainer, union.clients[0].learner.trainer
    assert whole_trainer.edge_index.size(1) == cora3.data.edge_index.size(1)
    assert union_trainer.edge_index.size(1) == sum(c.edge_index.size(1) for c in cora3.clients)
    assert union_trainer.edge_index.size(1) < whole_trainer.edge_index.size(1)
    assert whole_trainer.num_train_samples == sum(int(c.train_mask.sum()) for c in cora3.clients)
    for view, data in zip(whole.clients, cora3.clients):
        test = view.evaluate()["test"]
        assert torch.equal(test.y, data.y[data.test_mask])
        assert torch.equal(test.minority, minority_mask(data.y, data.y[data.train_mask])[data.test_mask])
    assert [row["num_samples"] for row in result.per_client] == [int(c.train_mask.sum()) for c in cora3.clients]


def test_graph_fedavg_shares_only_the_convolutions_across_datasets(tu_pair):
    algorithm, result = run(graph_config(algorithm="fedavg"), tu_pair)
    conv_names = {n for n, _ in algorithm.clients[0].model.named_parameters() if n.startswith("convs.")}
    assert conv_names
    assert result.ledger.names(sender="server") == conv_names
    assert result.ledger.names(sender="clients") == conv_names | {"num_samples"}
    first, second = (parameters(c.model) for c in algorithm.clients)
    assert all(torch.equal(first[n], second[n]) for n in conv_names)
    assert first["input_encoder.weight"].shape != second["input_encoder.weight"].shape
    assert [row["num_samples"] for row in result.per_client] == [len(c.train_idx) for c in tu_pair.clients]
    _, prox = run(graph_config(algorithm="fedprox", algorithm_options={"mu": 0.0, "share": "convs"}), tu_pair)
    assert prox.history == result.history


def test_graph_local_starts_from_shared_convolutions_and_sends_nothing(tu_pair):
    config = graph_config(algorithm="local", rounds=1)
    algorithm = ALGORITHMS.get("local")(config, tu_pair, CPU)
    _, clients = algorithm.build(Channel())
    first, second = (parameters(c.model) for c in clients)
    assert all(torch.equal(first[n], second[n]) for n in first if n.startswith("convs."))
    _, result = run(config, tu_pair)
    assert len(result.ledger) == 0 and 0 <= result.metrics["test_accuracy"] <= 1


def test_graph_settings_that_cannot_work_are_refused(tu_pair):
    with pytest.raises(ConfigError, match="share='all'"):
        ALGORITHMS.get("fedavg")(graph_config(algorithm_options={"share": "all"}), tu_pair, CPU).build(Channel())
    with pytest.raises(ConfigError, match="feature width"):
        ALGORITHMS.get("central")(graph_config(algorithm="central"), tu_pair, CPU).build(Channel())


def test_graph_batcher_matches_pyg_collation(tu_pair):
    graphs = tu_pair.clients[0].graphs
    batcher = GraphBatcher([graphs[i] for i in range(30)], CPU)
    idx = torch.tensor([7, 29, 0, 3, 3])
    ours, pyg = batcher.select(idx), Batch.from_data_list([graphs[int(i)] for i in idx])
    for key in ("x", "edge_index", "edge_attr", "y", "batch"):
        assert torch.equal(ours[key], pyg[key]), key


@pytest.mark.parametrize(
    "name, options, match",
    [
        ("fedprox", {"mux": 0.1}, "'mux'.*accepted: mu, norm_layers, reset_optimizer, share"),
        ("fedavg", {"norm_layers": "shared"}, "algorithm_options.norm_layers: 'shared' is not accepted.*accepted: "
                                              "averaged, local"),
        ("fedprox", {"mu": "large"}, "algorithm_options.mu"),
        ("fedprox", {"mu": -1.0}, "mu: must be >= 0"),
        ("fedavg", {"share": "everything"}, "algorithm_options.share"),
        ("central", {"graph": "partial"}, "accepted: whole, union"),
        ("local", {"epochs": 3}, "'epochs'.*accepts no options"),
    ],
)
def test_bad_algorithm_options_are_refused_before_any_work(cora3, name, options, match):
    with pytest.raises(ConfigError, match=match):
        ALGORITHMS.get(name).check_options(options)
    with pytest.raises(ConfigError, match=match):
        node_config(algorithm=name, algorithm_options=options)
    unvalidated = ExperimentConfig(**NODE, algorithm=name, algorithm_options=options)
    with pytest.raises(ConfigError, match=match):
        ALGORITHMS.get(name)(unvalidated, cora3, CPU)


def test_options_are_merged_with_defaults():
    assert ALGORITHMS.get("fedprox").check_options({"mu": 1}) == {"share": "auto", "norm_layers": "averaged",
                                                                   "reset_optimizer": False, "weighting": "labelled",
                                                                   "mu": 1.0}


def test_an_algorithm_refuses_a_task_it_does_not_support(tu_pair):
    class NodeOnly(Algorithm):
        name = "node_only"
        tasks = ("node",)

    with pytest.raises(ConfigError, match="supports node tasks"):
        NodeOnly(graph_config(), tu_pair, CPU)
