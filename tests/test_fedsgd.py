"""FedSGD: one client is centralised training, K clients are the block-diagonal central loss, its ledger, seeds,
bad options (FedStruct's baseline, Aliakbari et al., ICLR 2025, Eqs. 3-5; digest §2.8, §7.1)."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.utils import stochastic_blockmodel_graph

from fglcore.algorithms import ALGORITHMS
from fglcore.algorithms.central import Central
from fglcore.algorithms.fedsgd import FedSGDServer
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.data.federation import NodeFederation, build_clients
from fglcore.fl.engine import run_rounds
from recording_channel import RecordingChannel

CPU = torch.device("cpu")
N, K, FEATURES, CLASSES = 90, 3, 12, 3
MODELS = ["sage", "gcn", "mlp", "decoupled_gcn"]  # the paper's GNN, and DGCN, MLP; GCN


def graph(seed: int = 0) -> Data:
    """A 3-block SBM (labels follow blocks) with class-correlated features and a 30/20/50 split."""
    torch.manual_seed(seed)
    size = N // CLASSES
    p = [[0.2 if a == b else 0.03 for b in range(CLASSES)] for a in range(CLASSES)]
    edge_index = stochastic_blockmodel_graph([size] * CLASSES, p)
    order = torch.randperm(N)
    y = torch.empty(N, dtype=torch.long)
    y[order] = torch.arange(N) // size
    edge_index = order[edge_index]
    x = F.one_hot(y, FEATURES).float() + 0.8 * torch.randn(N, FEATURES)
    perm = torch.randperm(N)
    train, val, test = (torch.zeros(N, dtype=torch.bool) for _ in range(3))
    train[perm[:27]], val[perm[27:45]], test[perm[45:]] = True, True, True
    return Data(x=x, y=y, edge_index=edge_index, train_mask=train, val_mask=val, test_mask=test, num_nodes=N)


def federation(num_clients: int) -> NodeFederation:
    data = graph()
    assignment = torch.as_tensor(np.random.default_rng(1).integers(0, num_clients, N))
    return NodeFederation("sbm", data, build_clients(data, assignment), CLASSES, FEATURES, assignment)


@pytest.fixture(scope="module")
def one():
    return federation(1)


@pytest.fixture(scope="module")
def three():
    fed = federation(K)
    assert len(fed.clients) == K and all(int(c.train_mask.sum()) for c in fed.clients)
    return fed


BASE = dict(dataset="Cora", partition="random", num_clients=K, split="global_random", split_ratios=[0.1, 0.1, 0.8],
            algorithm="fedsgd", model="sage", hidden=16, num_layers=2, dropout=0.0, rounds=4, local_epochs=1,
            lr=0.01, weight_decay=5e-4, selection="last", seed=0)


def config(**changes) -> ExperimentConfig:
    return ExperimentConfig.from_dict({**BASE, **changes})


def run(cfg: ExperimentConfig, fed: NodeFederation):
    algorithm = ALGORITHMS.get(cfg.algorithm)(cfg, fed, CPU)
    return algorithm, algorithm.run()


def close_histories(a: list[dict], b: list[dict], atol: float) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        for key in x:
            assert x[key] == pytest.approx(y[key], abs=atol, nan_ok=True), (x["round"], key)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("dropout", [0.0, 0.5])
def test_one_client_is_centralised_full_batch_training(one, model, dropout):
    """FedSGD with one client: the server's Adam step on the client's gradient is central training's step."""
    changes = dict(model=model, dropout=dropout, num_clients=1)
    fedsgd, ours = run(config(**changes), one)
    central, theirs = run(config(algorithm="central", **changes), one)
    close_histories(ours.history, theirs.history, atol=1e-6)
    reference = dict(central.clients[0].learner.trainer.model.named_parameters())
    server = fedsgd.server.parameters
    assert server.keys() == reference.keys()
    initial = dict(fedsgd.init_models()[0].named_parameters())
    moved = 0.0
    for name, value in fedsgd.clients[0].model.named_parameters():
        assert torch.allclose(value, reference[name], atol=1e-6, rtol=0), name
        assert torch.equal(value, server[name].detach()), name  # the client holds the global model
        moved = max(moved, float((value - initial[name]).detach().abs().max()))
    assert moved > 1e-3  # the model did train


def reference_gradient(algorithm, clients: list[Data], weights: torch.Tensor, cross: Data | None = None):
    """Gradient of sum_i w_i mean-CE_i of the initial model on the disjoint union of the client subgraphs
    (block-diagonal adjacency), or, with ``cross``, on the whole graph with its cross-client edges."""
    model, _ = algorithm.init_models()
    union, node_ids = Central._union_graph(clients)
    if cross is not None:  # the same nodes, ordered as in the union, with every edge of the global graph
        order = torch.cat([c.global_id for c in clients])
        position = torch.empty_like(order)
        position[order] = torch.arange(order.numel())
        union.edge_index = position[cross.edge_index]
    model.train()
    out = model(union.x, union.edge_index)
    loss = sum(w * F.cross_entropy(out[ids[c.train_mask]], c.y[c.train_mask])
               for w, c, ids in zip(weights, clients, node_ids))
    names = [name for name, _ in model.named_parameters()]
    grads = torch.autograd.grad(loss, list(model.parameters()))
    return dict(zip(names, grads))


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("weighting", ["nodes", "labelled"])
def test_weighted_gradient_is_the_block_diagonal_central_gradient(three, model, weighting, monkeypatch):
    """Digest §2.8/§7.1: sum_i w_i grad L_i = grad of the central loss over blockdiag(A_1, ..., A_K)."""
    means = []
    original = FedSGDServer.apply_mean

    def record(self, mean, round):
        means.append({k: v.clone() for k, v in mean.items()})
        original(self, mean, round)

    monkeypatch.setattr(FedSGDServer, "apply_mean", record)
    algorithm, _ = run(config(model=model, rounds=1, algorithm_options={"weighting": weighting}), three)
    assert len(means) == 1
    clients = three.clients
    counts = [c.num_nodes if weighting == "nodes" else int(c.train_mask.sum()) for c in clients]
    assert [c.num_samples for c in algorithm.clients] == counts
    weights = torch.tensor(counts, dtype=torch.float) / sum(counts)
    expected = reference_gradient(algorithm, clients, weights)
    assert means[0].keys() == expected.keys()
    for name, value in expected.items():
        assert torch.allclose(means[0][name], value, atol=1e-6, rtol=1e-5), name
    if model != "mlp":  # the check sees the graph: with the cross-client edges the gradient is another
        whole = reference_gradient(algorithm, clients, weights, cross=three.data)
        assert any(not torch.allclose(means[0][n], whole[n], atol=1e-4) for n in whole)


@pytest.mark.parametrize("model", ["sage", "decoupled_gcn"])
def test_labelled_weighting_trains_as_central_on_the_union_of_subgraphs(three, model):
    """With w_i = |V~_i|/|V~| (Eq. 3) FedSGD's trajectory is central training on the disjoint union, round by round."""
    _, ours = run(config(model=model, algorithm_options={"weighting": "labelled"}), three)
    _, theirs = run(config(model=model, algorithm="central", algorithm_options={"graph": "union"}), three)
    close_histories(ours.history, theirs.history, atol=1e-5)
    _, nodes = run(config(model=model), three)  # n_i/n weights: another trajectory on these unequal clients
    assert nodes.history != ours.history


def test_ledger_one_gradient_upload_and_one_model_download_per_client_and_round(three):
    algorithm, result = run(config(rounds=3), three)
    params = dict(algorithm.clients[0].model.named_parameters())
    model_bytes = sum(p.numel() * p.element_size() for p in params.values())
    ledger = result.ledger
    for r in range(1, 4):
        for k in range(K):
            up = ledger.select(sender=f"client{k}", receiver="server", round=r)
            down = ledger.select(sender="server", receiver=f"client{k}", round=r)
            assert sorted(m.name for m in up) == sorted([*params, "num_samples"])  # one tensor per parameter
            assert sorted(m.name for m in down) == sorted(params)
            assert {m.name: m.shape for m in up if m.name != "num_samples"} == {n: tuple(p.shape) for n, p in
                                                                                params.items()}
            assert sum(m.nbytes for m in down) == model_bytes
    assert not ledger.select(receiver="server", round=4)
    assert ledger.total_bytes(sender="server", round=4) == K * model_bytes  # the final model, evaluated
    assert {m.direction for m in ledger.messages} == {"upload", "download"}
    assert {"x", "y", "edge_index", "train_mask"}.isdisjoint(ledger.names())


def test_secure_aggregation_gives_the_plain_numbers_and_hides_gradients(three):
    plain_alg, plain = run(config(), three)
    secure_alg, secure = run(config(secure_aggregation=True), three)
    close_histories(plain.history, secure.history, atol=1e-5)
    for name, value in plain_alg.server.parameters.items():
        assert torch.allclose(secure_alg.server.parameters[name], value, atol=1e-5), name
    uploads = secure.ledger.select(receiver="server")
    assert uploads and {m.name for m in uploads} == {"masked_update"}


def test_same_seed_same_numbers_other_seed_other_numbers(three):
    cfg = config(dropout=0.5)
    first_alg, first = run(cfg, three)
    again_alg, again = run(cfg, three)
    assert first.history == again.history
    for name, value in first_alg.server.parameters.items():
        assert torch.equal(again_alg.server.parameters[name], value), name
    _, other = run(cfg.replace(seed=1), three)
    assert other.history != first.history


def test_a_client_without_training_nodes_uploads_a_zero_gradient(three):
    fed = copy.deepcopy(three)
    fed.clients[0].train_mask[:] = False
    algorithm, result = run(config(rounds=2), fed)
    assert all(np.isfinite(row["test_loss"]) for row in result.history)
    assert algorithm.clients[0].num_samples == fed.clients[0].num_nodes  # its nodes still weigh, as FedStruct's


@pytest.mark.parametrize("options, match", [
    ({"weighting": "edges"}, r"algorithm_options.weighting.*accepted: nodes, labelled"),
    ({"weighting": 1}, r"algorithm_options.weighting"),
    ({"share": "all"}, r"unknown fedsgd option 'share'.*accepted: weighting"),
])
def test_bad_options_are_refused_before_any_work(three, options, match):
    with pytest.raises(ConfigError, match=match):
        config(algorithm_options=options)
    unvalidated = ExperimentConfig(**{**BASE, "algorithm_options": options})
    with pytest.raises(ConfigError, match=match):
        ALGORITHMS.get("fedsgd")(unvalidated, three, CPU)


def test_graph_tasks_are_refused_with_the_key():
    with pytest.raises(ConfigError, match=r"^algorithm: 'fedsgd' supports node tasks.*use fedavg"):
        ExperimentConfig.from_dict(dict(dataset="MUTAG", partition="by_dataset", split="graph_stratified",
                                        model="gin", algorithm="fedsgd"))


# --------------------------------------------------------------------------- FedAvg's client weights (option weighting)


@pytest.fixture(scope="module")
def unequal() -> NodeFederation:
    """Three clients of 20, 30 and 40 nodes whose training-node shares differ from their node shares."""
    data = graph()
    assignment = torch.cat([torch.full((20,), 0), torch.full((30,), 1), torch.full((40,), 2)])
    fed = NodeFederation("sbm", data, build_clients(data, assignment), CLASSES, FEATURES, assignment)
    nodes = [int(c.num_nodes) for c in fed.clients]
    labelled = [int(c.train_mask.sum()) for c in fed.clients]
    assert nodes == [20, 30, 40] and not np.allclose(np.array(nodes) / 90, np.array(labelled) / sum(labelled))
    return fed


@pytest.mark.parametrize("weighting", ["labelled", "nodes"])
def test_fedavg_weighting_gives_the_weights_of_its_mean(unequal, weighting):
    """FedAvg's mean: weights n_k = training nodes (Alg. 1, default) or all nodes (FedStruct's official "WA")."""
    cfg = config(algorithm="fedavg", rounds=1, algorithm_options={} if weighting == "labelled" else
                 {"weighting": weighting})
    algorithm = ALGORITHMS.get("fedavg")(cfg, unequal, CPU)
    channel = RecordingChannel()
    server, clients = algorithm.build(channel)
    expected = [int(d.num_nodes) if weighting == "nodes" else int(d.train_mask.sum()) for d in unequal.clients]
    assert [c.num_samples for c in clients] == expected
    run_rounds(server, clients, channel, rounds=1, num_classes=CLASSES, selection="last")
    uploads = {s: p for s, r, rnd, p in channel.payloads if r == "server" and rnd == 1}
    download = next(p for s, r, rnd, p in channel.payloads if s == "server" and rnd == 2)
    weights = torch.tensor(expected, dtype=torch.float64) / sum(expected)
    for name, value in download.items():
        mean = sum(w * uploads[f"client{k}"][name].double() for k, w in enumerate(weights))
        assert torch.allclose(value.double(), mean, atol=1e-6), name
    other = torch.tensor([int(d.train_mask.sum()) if weighting == "nodes" else int(d.num_nodes)
                          for d in unequal.clients], dtype=torch.float64)
    other = other / other.sum()
    name = next(iter(download))
    assert not torch.allclose(download[name].double(), sum(w * uploads[f"client{k}"][name].double()
                                                           for k, w in enumerate(other)), atol=1e-6)


def test_fedavg_default_weighting_is_training_samples_as_before(three):
    """The default (labelled) is what FedAvg always did: the same numbers as an explicit 'labelled'."""
    a = run(config(algorithm="fedavg"), three)[1]
    b = run(config(algorithm="fedavg", algorithm_options={"weighting": "labelled"}), three)[1]
    assert a.history == b.history


def test_fedavg_nodes_weighting_is_refused_for_graph_tasks():
    with pytest.raises(ConfigError, match="algorithm_options.weighting: 'nodes'.*accepts only 'labelled'"):
        ExperimentConfig.from_dict(dict(dataset="MUTAG", partition="by_dataset", split="graph_stratified", model="gin",
                                        algorithm="fedavg", algorithm_options={"weighting": "nodes"}))
