"""FedStruct: Alg. 3 through the channel, what clients receive, FedSGD against its centralised equivalent."""
from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.utils import stochastic_blockmodel_graph

from fglcore.algorithms import ALGORITHMS
from fglcore.algorithms import fedstruct as fedstruct_module
from fglcore.algorithms.fedstruct import PRE_TRAINING, cached_abar, distributed_abar, server_abar
from fglcore.algorithms.training import make_optimizer
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.data.federation import NodeFederation, build_clients
from fglcore.data.multihop import multihop_adjacency
from fglcore.data.node_structure import degree_features, fedstar_features
from fglcore.fl.channel import Channel
from recording_channel import RecordingChannel

CPU = torch.device("cpu")
N, K, FEATURES, CLASSES = 60, 3, 12, 3


def graph(seed: int = 0) -> Data:
    """A 3-block SBM with class-correlated features, random 3-client assignment and a 30/20/50 split."""
    torch.manual_seed(seed)
    y = torch.arange(N) % CLASSES
    edge_index = stochastic_blockmodel_graph([20, 20, 20], [[0.25, 0.03, 0.03], [0.03, 0.25, 0.03],
                                                            [0.03, 0.03, 0.25]])
    order = torch.argsort(torch.rand(N))  # blocks of the SBM are nodes 0-19, ...: relabel so y follows blocks
    y = torch.empty(N, dtype=torch.long)
    y[order] = torch.arange(N) // 20
    edge_index = order[edge_index]
    x = F.one_hot(y, FEATURES).float() + 0.8 * torch.randn(N, FEATURES)
    perm = torch.randperm(N)
    train, val, test = (torch.zeros(N, dtype=torch.bool) for _ in range(3))
    train[perm[:18]], val[perm[18:30]], test[perm[30:]] = True, True, True
    return Data(x=x, y=y, edge_index=edge_index, train_mask=train, val_mask=val, test_mask=test, num_nodes=N)


@pytest.fixture(autouse=True)
def fresh_abar_cache(tmp_path, monkeypatch):
    """Every test computes Alg. 3 itself (its messages pass through the test's channel): an empty cache each."""
    monkeypatch.setattr(fedstruct_module, "cache_root", lambda: tmp_path)
    return tmp_path


@pytest.fixture(scope="module")
def federation() -> NodeFederation:
    data = graph()
    assignment = torch.as_tensor(np.random.default_rng(0).integers(0, K, N))
    clients = build_clients(data, assignment, keep_cross_edges=True)
    return NodeFederation("sbm", data, clients, CLASSES, FEATURES, assignment)


def config(**options) -> ExperimentConfig:
    changes = options.pop("config", {})
    base = dict(dataset="Cora", partition="random", num_clients=K, split="global_random", split_ratios=[0.1, 0.1, 0.8],
                algorithm="fedstruct", model="decoupled_gcn", hidden=16, num_layers=2, dropout=0.0, rounds=3,
                lr=0.01, weight_decay=5e-4, selection="last", seed=0,
                algorithm_options={"structure_hops": 3, "structure_dim": 16, "structure_hidden": [16], "prune_p": 4, "rw_steps": 5,
                                   **options})
    return ExperimentConfig.from_dict({**base, **changes})


@pytest.mark.parametrize("pruning,p", [("none", 4), ("global", 2), ("global", 4), ("block", 4)])
def test_alg3_through_the_channel_equals_the_central_computation(federation, pruning, p):
    data = federation.data
    expected = multihop_adjacency(data.edge_index, N, 4, pruning=pruning, p=p, assignment=federation.assignment)
    channel = RecordingChannel()
    rows = distributed_abar(federation.clients, N, 4, pruning, p, channel)
    for client, mine in zip(federation.clients, rows):
        assert np.allclose(mine.toarray(), expected[client.global_id.numpy()].toarray(), atol=1e-12)
    assert np.allclose(np.vstack([r.toarray() for r in rows])[np.argsort(torch.cat(
        [c.global_id for c in federation.clients]).numpy())], expected.toarray(), atol=1e-12)
    # every block a client receives concerns its own rows only; global pruning adds values, never positions
    for sender, receiver, round_, payload in channel.payloads:
        assert round_ == 0
        if receiver == "server":
            assert set(payload) == {"abar_top_values"} and pruning == "global"
            continue
        k = int(receiver.removeprefix("client"))
        if sender == "server":
            assert set(payload) == {"abar_threshold"}
            continue
        assert set(payload) == {"abar_block_rows", "abar_block_cols", "abar_block_values"}
        assert bool((federation.assignment[payload["abar_block_rows"]] == k).all())
    served = server_abar(data, federation.assignment, federation.clients, 4, pruning, p, Channel())
    assert all(np.allclose(a.toarray(), b.toarray(), atol=1e-12) for a, b in zip(rows, served))


def test_structure_features(federation):
    for client in federation.clients:
        s = degree_features(client.global_degree, 16)
        degree = torch.bincount(federation.data.edge_index[0], minlength=N)[client.global_id]
        assert torch.equal(s.argmax(1), degree.clamp(max=15)) and torch.equal(s.sum(1), torch.ones(len(s)))
    fs = fedstar_features(federation.data.edge_index, N, width=16, rw_steps=5)
    a = np.zeros((N, N))
    a[federation.data.edge_index[0].numpy(), federation.data.edge_index[1].numpy()] = 1
    a_hat = (a + np.eye(N)) / (a + np.eye(N)).sum(1, keepdims=True)
    diagonals = np.stack([np.diag(np.linalg.matrix_power(a_hat, k)) for k in range(1, 6)], axis=1)
    assert np.allclose(fs[:, :5].numpy(), diagonals, atol=1e-6) and fs.shape == (N, 16)
    from fglcore.data.node_structure import return_probabilities
    from fglcore.data.structure import random_walk_encoding
    from torch_geometric.utils import add_remaining_self_loops

    looped, _ = add_remaining_self_loops(federation.data.edge_index, num_nodes=N)
    assert torch.allclose(return_probabilities(federation.data.edge_index, N, 7, cache=False),
                          random_walk_encoding(looped, N, 7), atol=1e-6)  # FedStar's sparse RWSE, same numbers
    with pytest.raises(ConfigError, match="rw_steps"):
        fedstar_features(federation.data.edge_index, N, width=16, rw_steps=16)


def test_large_graphs_take_the_return_probabilities_from_block_powers(federation, monkeypatch):
    """Above EIGH_MAX_NODES no dense eigendecomposition: the diagonals of the powers, a block of columns at a
    time, give the same numbers."""
    from fglcore.data import node_structure

    edge_index = federation.data.edge_index
    by_eigh = node_structure.return_probabilities(edge_index, N, 9, cache=False)
    monkeypatch.setattr(node_structure, "EIGH_MAX_NODES", N - 1)
    monkeypatch.setattr(node_structure, "RETURN_BLOCK", 7)  # several blocks, the last one short
    monkeypatch.setattr(node_structure.np.linalg, "eigh", None)  # never called
    assert torch.allclose(node_structure.return_probabilities(edge_index, N, 9, cache=False), by_eigh, atol=1e-6)


def test_node2vec_structure_features_are_the_global_graphs_embedding_rows(federation):
    from fglcore.data.node_structure import node2vec_features

    algorithm = ALGORITHMS.get("fedstruct")(config(nsf="n2v"), federation, CPU)
    whole = node2vec_features(federation.data.edge_index, N, 16, seed=algorithm.config.seed)
    for k, client in enumerate(federation.clients):
        assert torch.equal(algorithm.own_structure_features(k), whole[client.global_id])


def test_gdv_structure_features_are_the_global_graphs_standardised_orbit_counts(federation, fresh_abar_cache,
                                                                             monkeypatch):
    from fglcore.data import node_structure
    from fglcore.data.graphlets import orbit_counts

    monkeypatch.setattr(node_structure, "cache_root", lambda: fresh_abar_cache)
    with pytest.raises(ConfigError, match="structure_dim must be 73; got 16"):
        ALGORITHMS.get("fedstruct").check_config(config(nsf="gdv"))
    algorithm = ALGORITHMS.get("fedstruct")(config(nsf="gdv", structure_dim=73), federation, CPU)
    counts = torch.from_numpy(orbit_counts(federation.data.edge_index, N)).double()
    whole = (counts - counts.mean(0)) / counts.std(0, unbiased=False).where(counts.std(0) > 0, torch.ones(73))
    for k, client in enumerate(federation.clients):  # each client's rows of the global graph's GDV
        assert torch.allclose(algorithm.own_structure_features(k), whole[client.global_id].float(), atol=1e-6)
    channel = RecordingChannel()
    result = algorithm.run(channel)
    assert 0.0 <= result.metrics["test_accuracy"] <= 1.0
    shared = [p for _, receiver, _, p in channel.payloads if "nsf" in p]
    assert shared and all(p["nsf"].shape[1] == 73 for p in shared)


@pytest.mark.parametrize("nsf", ["h2v", "deg", "fedstar", "n2v"])
def test_clients_receive_structure_and_model_quantities_only(federation, nsf):
    channel = RecordingChannel()
    algorithm = ALGORITHMS.get("fedstruct")(config(nsf=nsf), federation, CPU)
    result = algorithm.run(channel)
    assert 0.0 <= result.metrics["test_accuracy"] <= 1.0
    params = set(algorithm.server.parameters)
    members = {f"client{k}": set(c.global_id.tolist()) for k, c in enumerate(federation.clients)}
    structure = {"abar_block_rows", "abar_block_cols", "abar_block_values", "abar_threshold", "nsf", "nsf_node_ids"}
    for sender, receiver, round_, payload in channel.payloads:
        names = set(payload)
        if receiver == "server":
            assert names <= params | {"grad_S", "num_samples", "abar_top_values"}, names
            assert "grad_S" not in names or nsf == "h2v"
            continue
        assert names <= params | structure | {"grad_S"}, names
        if round_ == 0:
            assert names <= structure
        if "abar_block_rows" in names:  # a block of A-hat^l restricted to the receiver's own rows
            assert set(payload["abar_block_rows"].tolist()) <= members[receiver]
        if "nsf" in names:  # structure features of the sender's nodes, never their features
            assert set(payload["nsf_node_ids"].tolist()) == members[sender]
            assert payload["nsf"].shape == (len(members[sender]), 16)
    # the ledger shows what each client received of A-bar and of the other clients' S
    ledger = result.ledger
    for k in range(K):
        assert ledger.total_bytes(receiver=f"client{k}", name="nsf") == sum(
            len(members[f"client{j}"]) * 16 * 4 for j in range(K) if j != k)
    assert {"x", "y", "edge_index", "train_mask"}.isdisjoint(ledger.names())


def test_fedsgd_equals_its_centralised_equivalent(federation):
    """Digest §2.8: full-batch FedSGD from one initialisation is one centralised run on the weighted loss."""
    cfg = config(nsf="h2v", weighting="labelled")
    algorithm = ALGORITHMS.get("fedstruct")(cfg, federation, CPU)
    server, clients = algorithm.build(Channel())
    model = copy.deepcopy(clients[0].model)  # every participant starts from the same initialisation
    for module in model.modules():  # one reference model evaluated on every client's graph
        if hasattr(module, "cached"):
            module.cached = False
    s = clients[0].s.detach().clone().requires_grad_(True)
    optimizer = make_optimizer([*model.parameters(), s], cfg)
    weights = torch.tensor([float(c.num_samples) for c in clients])
    weights = weights / weights.sum()
    for _ in range(cfg.rounds):
        optimizer.zero_grad()
        loss = sum(w * F.cross_entropy(model(c.x, c.edge_index, s[c.columns], c.abar)[c.train_idx], c.y[c.train_idx])
                   for w, c in zip(weights, clients))
        loss.backward()
        optimizer.step()
    result = algorithm.run()
    model.eval()
    for client in algorithm.clients:
        with torch.no_grad():
            expected = model(client.x, client.edge_index, s[client.columns], client.abar)
            got = client.model.eval()(client.x, client.edge_index, client.s[client.columns], client.abar)
        assert torch.allclose(got, expected, atol=1e-5)
        assert torch.allclose(client.s, s, atol=1e-6)
    assert result.selected_round == cfg.rounds


@pytest.mark.parametrize("options", [{"training": "fedavg", "nsf": "h2v"}, {"loss": "double_softmax"},
                                     {"abar_protocol": "server", "pruning": "block"}])
def test_variants_run(federation, options):
    result = ALGORITHMS.get("fedstruct")(config(**options), federation, CPU).run()
    assert 0.0 <= result.metrics["test_accuracy"] <= 1.0


def test_secure_aggregation_gives_the_same_model(federation):
    plain = ALGORITHMS.get("fedstruct")(config(nsf="h2v"), federation, CPU)
    plain.run()
    secure = ALGORITHMS.get("fedstruct")(config(nsf="h2v", config={"secure_aggregation": True}), federation, CPU)
    result = secure.run()
    assert "masked_update" in result.ledger.names(receiver="server")
    for a, b in zip(plain.clients, secure.clients):
        assert torch.allclose(a.s, b.s, atol=1e-5)
        for (name, p), q in zip(a.model.named_parameters(), b.model.parameters()):
            assert torch.allclose(p, q, atol=1e-5), name


def test_options_are_validated():
    with pytest.raises(ConfigError, match="model must be 'decoupled_gcn'"):
        config(config={"model": "gcn"})
    with pytest.raises(ConfigError, match="nsf"):
        config(nsf="gdv2")
    with pytest.raises(ConfigError, match="structure_hidden"):
        config(structure_hidden=[0])
    with pytest.raises(ConfigError, match="structure_hops"):
        config(structure_hops=0)
    with pytest.raises(ConfigError, match="unknown fedstruct option 'prune'"):
        config(prune=3)
    with pytest.raises(ConfigError, match="pruning"):
        config(pruning="top")


def test_same_seed_same_numbers(federation):
    cfg = config(nsf="h2v", config={"dropout": 0.5})
    first = ALGORITHMS.get("fedstruct")(cfg, federation, CPU).run()
    second = ALGORITHMS.get("fedstruct")(cfg, federation, CPU).run()
    assert first.history == second.history
    other = ALGORITHMS.get("fedstruct")(cfg.replace(seed=1), federation, CPU).run()
    assert other.history != first.history


@pytest.mark.parametrize("nsf,weighting", [("h2v", "nodes"), ("deg", "labelled")])
def test_fused_simulation_follows_the_clients_trajectory(federation, nsf, weighting):
    clients = ALGORITHMS.get("fedstruct")(config(nsf=nsf, weighting=weighting), federation, CPU).run()
    fused_algorithm = ALGORITHMS.get("fedstruct")(config(nsf=nsf, weighting=weighting, simulation="fused"),
                                                  federation, CPU)
    fused = fused_algorithm.run()
    for a, b in zip(clients.history, fused.history):
        assert a["round"] == b["round"] and a["test_accuracy"] == pytest.approx(b["test_accuracy"])
        assert a["test_loss"] == pytest.approx(b["test_loss"], abs=1e-5)
    assert fused.ledger.names() <= {"abar_block_rows", "abar_block_cols", "abar_block_values", "abar_top_values",
                                    "abar_threshold", "nsf", "nsf_node_ids"}  # no per-round traffic recorded
    with pytest.raises(ConfigError, match="'fused' simulates FedSGD only"):
        config(simulation="fused", training="fedavg")


# --------------------------------------------------------------------------- norm layers under FedAvg


def parameters_of(client) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in client.model.named_parameters()}


def test_fedavg_keeps_norm_layers_local_as_the_official_code(federation):
    """Official WA mode: the MLPs' LayerNorms are neither broadcast nor averaged, every other weight is."""
    algorithm = ALGORITHMS.get("fedstruct")(config(nsf="h2v", training="fedavg", norm_layers="local"), federation, CPU)
    result = algorithm.run()
    norms = {n for n in parameters_of(algorithm.clients[0]) if "norm" in n}
    assert norms == {"feature.mlp.input_norm.weight", "feature.mlp.input_norm.bias", "structure_norm.weight",
                     "structure_norm.bias"}
    assert set(algorithm.server.parameters).isdisjoint(norms)  # the server never holds them
    assert not set(result.ledger.names()) & norms  # nor does any message carry them
    first, *others = [parameters_of(c) for c in algorithm.clients]
    for other in others:
        for name, value in first.items():
            if name in norms:
                assert not torch.equal(value, other[name]), name  # each client trained its own
            else:
                assert torch.equal(value, other[name]), name  # the averaged model
                assert torch.equal(value, algorithm.server.parameters[name]), name


def test_fedavg_averaging_every_weight_leaves_no_difference(federation):
    algorithm = ALGORITHMS.get("fedstruct")(config(nsf="h2v", training="fedavg", norm_layers="averaged"), federation,
                                            CPU)
    algorithm.run()
    first, *others = [parameters_of(c) for c in algorithm.clients]
    assert any("norm" in name for name in first)
    for other in others:
        for name, value in first.items():
            assert torch.equal(value, other[name]), name


def test_fedsgd_averages_norm_gradients_whatever_norm_layers_says(federation):
    """Official GA mode averages the gradients of every parameter: the norm layers stay equal everywhere."""
    algorithm = ALGORITHMS.get("fedstruct")(config(nsf="h2v", norm_layers="local"), federation, CPU)
    algorithm.run()
    first, *others = [parameters_of(c) for c in algorithm.clients]
    assert not torch.equal(first["structure_norm.weight"], torch.ones_like(first["structure_norm.weight"]))  # trained
    for other in others:
        for name, value in first.items():
            assert torch.equal(value, other[name]), name


# --------------------------------------------------------------------------- the structure branch alone (H2V s)


def perturbed_features(algorithm) -> None:
    """Give every client other node features (new tensors: the fixture's stay as they are)."""
    generator = torch.Generator().manual_seed(7)
    for client in algorithm.clients:
        client.x = torch.randn(client.x.shape, generator=generator) * 5


@pytest.mark.parametrize("branches", ["structure", "structure_inference"])
def test_structure_only_predictions_do_not_depend_on_node_features(federation, branches):
    algorithm = ALGORITHMS.get("fedstruct")(config(nsf="h2v", branches=branches), federation, CPU)
    algorithm.run()
    before = [{k: p.logits.clone() for k, p in c.evaluate().items()} for c in algorithm.clients]
    perturbed_features(algorithm)
    after = [{k: p.logits for k, p in c.evaluate().items()} for c in algorithm.clients]
    for b, a in zip(before, after):
        for split in b:
            assert torch.equal(b[split], a[split]), split
    both = ALGORITHMS.get("fedstruct")(config(nsf="h2v"), federation, CPU)  # the check can fail: Eq. 10 reads x
    both.run()
    before = [c.evaluate()["test"].logits.clone() for c in both.clients]
    perturbed_features(both)
    assert any(not torch.equal(b, c.evaluate()["test"].logits) for b, c in zip(before, both.clients))


def test_structure_branch_alone_has_no_feature_model_and_sends_none(federation):
    algorithm = ALGORITHMS.get("fedstruct")(config(nsf="h2v", branches="structure"), federation, CPU)
    result = algorithm.run()
    names = set(parameters_of(algorithm.clients[0]))
    assert names and not any(n.startswith("feature.") for n in names)
    assert not any(n.startswith("feature.") for n in result.ledger.names())


@pytest.mark.parametrize("branches,reads_x", [("structure", False), ("structure_inference", True)])
def test_structure_branch_alone_is_also_trained_without_node_features(federation, branches, reads_x):
    """Official data_type="structure": the loss is on z_v alone, so other node features give the same run."""
    data = federation.data.clone()
    data.x = torch.randn(data.x.shape, generator=torch.Generator().manual_seed(3))
    other = NodeFederation("sbm", data, build_clients(data, federation.assignment, keep_cross_edges=True), CLASSES,
                           FEATURES, federation.assignment)
    cfg = config(nsf="h2v", branches=branches)
    first = ALGORITHMS.get("fedstruct")(cfg, federation, CPU).run()
    second = ALGORITHMS.get("fedstruct")(cfg, other, CPU).run()
    assert (first.history != second.history) == reads_x


def test_structure_only_fused_simulation_follows_the_clients(federation):
    for branches in ("structure", "structure_inference"):
        clients = ALGORITHMS.get("fedstruct")(config(nsf="h2v", branches=branches), federation, CPU).run()
        fused = ALGORITHMS.get("fedstruct")(config(nsf="h2v", branches=branches, simulation="fused"), federation,
                                            CPU).run()
        for a, b in zip(clients.history, fused.history):
            assert a["test_accuracy"] == pytest.approx(b["test_accuracy"])
            assert a["test_loss"] == pytest.approx(b["test_loss"], abs=1e-5)


@pytest.mark.parametrize("key,value,accepted", [
    ("norm_layers", "shared", "local, averaged"),
    ("branches", "feature", "both, structure, structure_inference"),
    ("h2v_fedavg", "states", "weights, gradients"),
])
def test_new_options_are_validated(key, value, accepted):
    with pytest.raises(ConfigError, match=f"algorithm_options.{key}: '{value}' is not accepted.*accepted: {accepted}"):
        config(**{key: value})


# --------------------------------------------------------------------------- Hop2Vec's S under FedAvg (h2v_fedavg)


def test_fedavg_h2v_gradients_steps_s_with_the_mean_gradient_as_the_official_code(federation):
    """Official "WA": S never travels; its gradients go up, their n_i/n mean comes down and every client steps
    S with it, so S stays the same on every client; the default averages S as a weight instead."""
    channel = RecordingChannel()
    cfg = config(nsf="h2v", training="fedavg", h2v_fedavg="gradients", config={"local_epochs": 1})
    algorithm = ALGORITHMS.get("fedstruct")(cfg, federation, CPU)
    server, clients = algorithm.build(channel)
    initial = clients[0].s.detach().clone()
    from fglcore.fl.engine import run_rounds

    run_rounds(server, clients, channel, rounds=3, num_classes=CLASSES, selection="last")
    training = [(s, r, rnd, p) for s, r, rnd, p in channel.payloads if rnd >= 1]
    assert not any("S" in p for *_, p in training)  # S itself is never sent
    ups = [(s, rnd, p["grad_S"]) for s, r, rnd, p in training if r == "server"]
    assert len(ups) == 3 * K
    weights = torch.tensor([int(c.num_nodes) for c in federation.clients], dtype=torch.float32)
    weights = weights / weights.sum()
    for rnd in (1, 2, 3):
        mean = sum(w * g for (s, r, g), w in zip([u for u in ups if u[1] == rnd], weights))
        for _, receiver, _, payload in [t for t in training if t[0] == "server" and t[2] == rnd + 1]:
            assert torch.allclose(payload["grad_S"], mean, atol=1e-7), (rnd, receiver)
    assert not torch.equal(clients[0].s, initial)  # S trained
    for client in clients[1:]:
        assert torch.equal(client.s, clients[0].s)  # the same S everywhere
    weights_mode = ALGORITHMS.get("fedstruct")(config(nsf="h2v", training="fedavg", config={"local_epochs": 1}),
                                               federation, CPU)
    weights_mode.run()
    assert not torch.allclose(weights_mode.clients[0].s, clients[0].s, atol=1e-6)  # the option changes S


def test_fedavg_h2v_gradients_equals_averaging_s_for_one_client(federation):
    """With one client the mean gradient is the client's own: both FedAvg readings of S give the same run."""
    data = federation.data
    assignment = torch.zeros(N, dtype=torch.long)
    one = NodeFederation("sbm", data, build_clients(data, assignment, keep_cross_edges=True), CLASSES, FEATURES,
                         assignment)
    runs = [ALGORITHMS.get("fedstruct")(config(nsf="h2v", training="fedavg", h2v_fedavg=mode,
                                               config={"num_clients": 1, "local_epochs": 1}), one, CPU) for mode in ("weights", "gradients")]
    histories = [a.run().history for a in runs]
    for a, b in zip(*histories):
        assert a["test_accuracy"] == pytest.approx(b["test_accuracy"])
        assert a["test_loss"] == pytest.approx(b["test_loss"], abs=1e-6)
    assert torch.allclose(runs[0].clients[0].s, runs[1].clients[0].s, atol=1e-6)


def test_fedavg_h2v_gradients_takes_one_local_step():
    with pytest.raises(ConfigError, match="local_epochs: h2v_fedavg='gradients'.*accepted: 1, got 2"):
        config(nsf="h2v", training="fedavg", h2v_fedavg="gradients", config={"local_epochs": 2})


# --------------------------------------------------------------------------- Alg. 3 computed once per partition


@pytest.mark.parametrize("protocol,pruning", [("clients", "global"), ("clients", "none"), ("server", "global")])
def test_a_stored_alg3_gives_the_same_rows_ledger_and_run(federation, fresh_abar_cache, protocol, pruning):
    """The second run with the same graph, partition and setting reads Alg. 3's result back: the same rows bit for
    bit, the same messages in its ledger (so the same communication totals), the same numbers."""
    cfg = config(nsf="deg", abar_protocol=protocol, pruning=pruning)
    first = ALGORITHMS.get("fedstruct")(cfg, federation, CPU).run()
    assert len(list(fresh_abar_cache.glob("fedstruct_abar/*.pt"))) == 1
    channel = RecordingChannel()
    second = ALGORITHMS.get("fedstruct")(cfg, federation, CPU).run(channel)
    assert not any("abar_block_values" in p or "abar_values" in p for *_, p in channel.payloads)  # not sent again
    assert second.ledger.messages == first.ledger.messages
    assert second.history == first.history
    other = ALGORITHMS.get("fedstruct")(config(nsf="h2v", abar_protocol=protocol, pruning=pruning), federation,
                                        CPU).run()  # another row on the same partition shares it
    assert other.ledger.select(round=0, name="abar_block_values" if protocol == "clients" else "abar_values") == \
        first.ledger.select(round=0, name="abar_block_values" if protocol == "clients" else "abar_values")
    assert len(list(fresh_abar_cache.glob("fedstruct_abar/*.pt"))) == 1
    rows = cached_abar(federation.data, federation.assignment, federation.clients, 3, pruning, 4, protocol, Channel())
    again = cached_abar(federation.data, federation.assignment, federation.clients, 3, pruning, 4, protocol, Channel(),
                        cache=False)
    for a, b in zip(rows, again):
        assert (a != b).nnz == 0 and a.dtype == b.dtype == np.float64


def test_another_setting_or_partition_is_another_alg3(federation, fresh_abar_cache):
    cached_abar(federation.data, federation.assignment, federation.clients, 3, "global", 4, "clients", Channel())
    cached_abar(federation.data, federation.assignment, federation.clients, 2, "global", 4, "clients", Channel())
    cached_abar(federation.data, federation.assignment, federation.clients, 3, "global", 3, "clients", Channel())
    moved = federation.assignment.clone()
    moved[0] = (moved[0] + 1) % K
    clients = build_clients(federation.data, moved, keep_cross_edges=True)
    cached_abar(federation.data, moved, clients, 3, "global", 4, "clients", Channel())
    assert len(list(fresh_abar_cache.glob("fedstruct_abar/*.pt"))) == 4


def _same_rows(a: list, b: list) -> bool:
    return len(a) == len(b) and all(x.shape == y.shape and np.array_equal(x.indptr, y.indptr) and
                                    np.array_equal(x.indices, y.indices) and np.array_equal(x.data, y.data) and
                                    x.dtype == y.dtype == np.float64 for x, y in zip(a, b))


@pytest.mark.parametrize("pruning", ["none", "global", "block"])
def test_alg3_continued_from_a_shallower_depth_is_alg3_from_hop_one(federation, pruning):
    """Hop l reads only the rows after hop l - 1: continuing hops 3..5 from the rows of hops=2 gives the rows
    bit for bit and the messages (in order) of hops=5 from hop 1; ``hop_ends`` marks where each hop's end."""
    fresh, fresh_ends = Channel(), []
    expected = distributed_abar(federation.clients, N, 5, pruning, 3, fresh, hop_ends=fresh_ends)
    assert len(fresh_ends) == 5 and fresh_ends[-1] == len(fresh.ledger) and fresh_ends == sorted(fresh_ends)
    channel, ends = Channel(), []
    shallow = distributed_abar(federation.clients, N, 2, pruning, 3, channel, hop_ends=ends)
    assert channel.ledger.messages == fresh.ledger.messages[:fresh_ends[1]] and ends == fresh_ends[:2]
    continued = distributed_abar(federation.clients, N, 5, pruning, 3, channel, resume=(2, shallow), hop_ends=ends)
    assert _same_rows(continued, expected)
    assert channel.ledger.messages == fresh.ledger.messages and ends == fresh_ends
    with pytest.raises(ValueError, match="resume"):
        distributed_abar(federation.clients, N, 2, pruning, 3, Channel(), resume=(2, shallow))


@pytest.mark.parametrize("pruning", ["none", "global"])
def test_a_depth_sweep_continues_alg3_from_its_deepest_state(federation, fresh_abar_cache, pruning, monkeypatch):
    """A sweep over ``hops`` (Fig. 4(b)) keeps one state per partition and setting: deeper depths continue from
    it, shallower ones read their ledger from it; every depth's rows and ledger are those of Alg. 3 from hop 1
    (``cache=False``), whatever the order of the depths."""
    args = (federation.data, federation.assignment, federation.clients)
    computed = []
    monkeypatch.setattr(fedstruct_module, "distributed_abar",
                        lambda *a, **k: computed.append(k.get("resume")) or distributed_abar(*a, **k))
    for hops, rows in ((2, True), (4, False), (3, True), (5, True), (1, False), (4, False), (6, False)):
        channel = Channel()
        got = cached_abar(*args, hops, pruning, 3, "clients", channel, rows=rows)
        reference = Channel()
        expected = distributed_abar(federation.clients, N, hops, pruning, 3, reference)
        assert channel.ledger.messages == reference.ledger.messages
        assert (got is None) if not rows else _same_rows(got, expected)
    states = list(fresh_abar_cache.glob("fedstruct_abar_states/*.pt"))
    assert len(states) == 1 and torch.load(states[0], weights_only=True)["hops"] == 6
    # computed: 2 from hop 1, 4 from 2, 3 from hop 1 (shallower than the state), 5 from 4, 6 from 5; 1 and 4
    # (ledger only) from the state
    assert [None if r is None else r[0] for r in computed] == [None, 2, None, 4, 5]
    monkeypatch.setattr(fedstruct_module, "ABAR_STATE_MAX_VALUES", 10)  # too large: the state keeps messages only
    cached_abar(*args, 7, pruning, 3, "clients", Channel())
    assert computed[-1][0] == 6 and torch.load(states[0], weights_only=True)["rows"] is None
    channel, reference = Channel(), Channel()
    got = cached_abar(*args, 8, pruning, 3, "clients", channel)  # nothing to continue from: hop 1 again
    assert computed[-1] is None and len(computed) == 7
    assert _same_rows(got, distributed_abar(federation.clients, N, 8, pruning, 3, reference))
    assert channel.ledger.messages == reference.ledger.messages
    again, reference = Channel(), Channel()
    assert cached_abar(*args, 3, pruning, 3, "clients", again, rows=False) is None
    distributed_abar(federation.clients, N, 3, pruning, 3, reference)
    assert again.ledger.messages == reference.ledger.messages and len(computed) == 7


# --------------------------------------------------------------------------- the unpruned variant as L_s products


@pytest.mark.parametrize("fill", [0.0, 0.3])
def test_alg3_on_dense_rows_gives_the_sparse_rows_and_messages_bit_for_bit(federation, monkeypatch, fill):
    """Unpruned, the rows are held dense once ``fill`` of them is non-zero (0: from hop one; 0.3: part way, so
    dense and CSR rows meet in one hop); the rows, every block sent and the ledger are those of CSR rows."""
    held = []  # the kind of every client total a block is added to
    add_entries = fedstruct_module._add_entries
    monkeypatch.setattr(fedstruct_module, "_add_entries",
                        lambda total, *entries: held.append(type(total)) or add_entries(total, *entries))

    def run(threshold):
        monkeypatch.setattr(fedstruct_module, "DENSE_ROWS_FILL", threshold)
        channel = RecordingChannel()
        held.clear()
        return distributed_abar(federation.clients, N, 5, "none", 4, channel), channel, set(held)

    (sparse_rows, sparse_channel, sparse_kinds), (dense_rows, dense_channel, dense_kinds) = run(2.0), run(fill)
    assert sparse_kinds == {sp.csr_matrix}
    assert dense_kinds == ({np.ndarray} if fill == 0.0 else {np.ndarray, sp.csr_matrix})
    assert dense_channel.ledger.messages == sparse_channel.ledger.messages
    for sparse_row, dense_row in zip(sparse_rows, dense_rows):
        assert dense_row.has_sorted_indices and dense_row.nnz == sparse_row.nnz
        assert np.array_equal(dense_row.indptr, sparse_row.indptr) and np.array_equal(dense_row.indices, sparse_row.indices)
        assert np.array_equal(dense_row.data.view(np.int64), sparse_row.data.view(np.int64))  # bit for bit
    for (*route, sparse_payload), (*dense_route, dense_payload) in zip(sparse_channel.payloads, dense_channel.payloads):
        assert route == dense_route
        sent = [pd.DataFrame({k.removeprefix("abar_block_"): v.numpy() for k, v in p.items()})
                .sort_values(["rows", "cols"], ignore_index=True) for p in (sparse_payload, dense_payload)]
        assert sent[0].equals(sent[1])


def test_power_rows_are_the_rows_of_the_unpruned_power(federation):
    from fglcore.algorithms.fedstruct import PowerRows
    from fglcore.data.multihop import normalized_adjacency

    rows = torch.cat([c.global_id for c in federation.clients])
    exact = multihop_adjacency(federation.data.edge_index, N, 4, pruning="none")[rows.numpy()]
    g = torch.randn(N, 5, dtype=torch.float32, requires_grad=True)
    ours = PowerRows(normalized_adjacency(federation.data.edge_index, N), 4, rows, CPU)(g)
    expected = torch.from_numpy(exact.toarray()).float() @ g
    assert ours.dtype == torch.float32
    torch.testing.assert_close(ours, expected, atol=1e-6, rtol=1e-5)
    ours.sum().backward()  # differentiable in G
    torch.testing.assert_close(g.grad, torch.from_numpy(np.asarray(exact.sum(axis=0))).float().view(-1, 1).expand(-1, 5),
                               atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("nsf", ["h2v", "deg"])
def test_unpruned_fused_simulation_follows_the_clients_trajectory(federation, nsf):
    """Fused "-F" (L_s products with A-hat) = per-client runs with the materialised rows, up to rounding."""
    runs = [ALGORITHMS.get("fedstruct")(config(nsf=nsf, pruning="none", simulation=sim), federation, CPU).run()
            for sim in ("clients", "fused")]
    for a, b in zip(runs[0].history, runs[1].history):
        assert a["test_accuracy"] == pytest.approx(b["test_accuracy"])
        assert a["test_loss"] == pytest.approx(b["test_loss"], abs=1e-5)
    assert runs[0].ledger.select(round=0) == runs[1].ledger.select(round=0)  # Alg. 3's messages all the same


def test_a_large_alg3_keeps_its_messages_only(federation, fresh_abar_cache, monkeypatch):
    """Above the size limit the rows are not stored: a caller that needs them computes again, the fused "-F"
    simulation (ledger only) reads the messages back."""
    monkeypatch.setattr(fedstruct_module, "ABAR_CACHE_MAX_VALUES", 10)
    args = (federation.data, federation.assignment, federation.clients, 3, "none", 4, "clients")
    first, again = Channel(), Channel()
    rows = cached_abar(*args, first)
    assert cached_abar(*args, again, rows=False) is None
    assert again.ledger.messages == first.ledger.messages
    third = Channel()
    recomputed = cached_abar(*args, third)
    assert all((a != b).nnz == 0 for a, b in zip(rows, recomputed))
    assert third.ledger.messages == first.ledger.messages


# --------------------------------------------------------------------------- App. H: the server's GraphSAGE sGNN


def sgnn_config(**options) -> ExperimentConfig:
    return config(**{"sgnn": "sage", "abar_protocol": "server", "sgnn_layers": [16, 8], **options})


@pytest.mark.parametrize("options,match", [
    ({"sgnn": "gcn"}, r"algorithm_options.sgnn.*decoupled_gcn.*sage"),
    ({"sgnn": "sage"}, r"abar_protocol: sgnn='sage'.*needs abar_protocol='server', got 'clients'"),
    ({"sgnn": "sage", "abar_protocol": "server", "training": "fedavg"}, r"needs training='fedsgd'"),
    ({"sgnn": "sage", "abar_protocol": "server", "branches": "structure"}, r"needs branches='both'"),
    ({"sgnn_layers": []}, r"sgnn_layers: must be a non-empty list"),
    ({"sgnn_layers": [16, 0]}, r"sgnn_layers: must be a non-empty list of integers >= 1"),
])
def test_sgnn_options_are_validated(options, match):
    with pytest.raises(ConfigError, match=match):
        config(**options)
    with pytest.raises(ConfigError, match="secure_aggregation: sgnn='sage'.*accepted: false"):
        sgnn_config(config={"secure_aggregation": True})


def one_round_updates(server, clients):
    """Round 1 of the clients simulation by hand: the server's payloads, each client's upload."""
    for client in clients:
        client.receive({k: v.clone() for k, v in server.payload_for(client, 1).items()}, 1)
    return {c.cid: c.fit(1) for c in clients}, {c.cid: float(c.num_samples) for c in clients}


@pytest.mark.parametrize("nsf,weighting,combiner", [("h2v", "nodes", "sum"), ("deg", "labelled", "sum"),
                                                    ("n2v", "nodes", "sum"), ("h2v", "labelled", "linear")])
def test_server_sgnn_gradient_is_that_of_the_centralised_loss(federation, nsf, weighting, combiner):
    """Prop. 4: back-propagating the clients' weighted dL_i/dz through the server's GraphSAGE gives the gradient
    of sum_i w_i L_i for theta_s (and Hop2Vec's S) that autograd gives on the whole model; theta_f's mean of the
    clients' gradients is that gradient too."""
    algorithm = ALGORITHMS.get("fedstruct")(sgnn_config(nsf=nsf, weighting=weighting, combiner=combiner), federation,
                                            CPU)
    server, clients = algorithm.build(Channel())
    feature = copy.deepcopy(clients[0].model)  # theta_f and, with combiner="linear", Eq. 51's Theta_c
    assert feature.structure is None and (feature.combiner is not None) == (combiner == "linear")
    for module in feature.modules():
        if hasattr(module, "cached"):
            module.cached = False
    assert server.edge_index.adjacency is not None  # the server's SAGE layers run as sparse products ...
    sgnn = copy.deepcopy(server.sgnn)  # ... the reference as PyG's SAGEConv on edge_index
    s = server.s.detach().clone().requires_grad_(nsf == "h2v")
    weights = torch.tensor([float(c.num_samples) for c in clients])
    weights = weights / weights.sum()
    z = sgnn(s, federation.data.edge_index)
    loss = sum(w * F.cross_entropy(feature.combine(feature.feature(c.x, c.edge_index)[c.train_idx],
                                                   z[d.global_id[c.train_idx]]), c.y[c.train_idx])
               for w, c, d in zip(weights, clients, federation.clients))
    loss.backward()
    updates, upload_weights = one_round_updates(server, clients)
    server.structure_backward(updates, upload_weights)
    for (name, expected), got in zip(sgnn.named_parameters(), server.sgnn.parameters()):
        assert expected.grad.abs().sum() > 0, name
        assert torch.allclose(got.grad, expected.grad, atol=1e-6, rtol=1e-5), name
    if nsf == "h2v":
        assert torch.allclose(server.s.grad, s.grad, atol=1e-7, rtol=1e-5)
    else:
        assert server.s.grad is None and not server.s.requires_grad
    assert all("grad_z" not in u for u in updates.values())  # taken out: theta_f's gradients remain
    mean = {name: sum(float(w) * updates[k][name] for k, w in enumerate(weights)) for name in updates[0]}
    for name, p in feature.named_parameters():
        assert torch.allclose(mean[name], p.grad, atol=1e-6, rtol=1e-5), name


def test_server_sgnn_recomputes_the_round_dropout_masks(federation):
    """With dropout, the back-propagated Z is the training-mode Z that was sent (same masks, no graph kept)."""
    algorithm = ALGORITHMS.get("fedstruct")(sgnn_config(config={"dropout": 0.5}), federation, CPU)
    server, clients = algorithm.build(Channel())
    sent = {c.cid: server.payload_for(c, 1)["z_train"].clone() for c in clients}
    evaluation = server.payload_for(clients[0], 1)["z"]
    torch.rand(7)  # the global stream moves on between the download and the aggregation
    seen = {}
    original = server._embed

    def spy(train):
        out = original(train)
        seen["z"] = out
        return out

    server._embed = spy
    updates, weights = one_round_updates(server, clients)
    server.structure_backward(updates, weights)
    for c in clients:
        assert torch.equal(seen["z"].detach()[server.train_nodes[c.cid]], sent[c.cid])
    assert not torch.allclose(seen["z"].detach()[server.nodes[0]], evaluation)  # evaluation mode: no dropout


def test_server_sgnn_fused_simulation_follows_the_clients(federation):
    for nsf in ("h2v", "deg"):
        clients = ALGORITHMS.get("fedstruct")(sgnn_config(nsf=nsf), federation, CPU).run()
        fused = ALGORITHMS.get("fedstruct")(sgnn_config(nsf=nsf, simulation="fused"), federation, CPU).run()
        for a, b in zip(clients.history, fused.history):
            assert a["test_accuracy"] == pytest.approx(b["test_accuracy"])
            assert a["test_loss"] == pytest.approx(b["test_loss"], abs=1e-5)
        # no Alg. 3, no NSF sharing, rounds not through the channel: only the clients' node ids, as in the clients'
        pre = clients.ledger.to_frame()
        pre = pre[pre["round"] == PRE_TRAINING].reset_index(drop=True)
        assert fused.ledger.names() == {"node_ids", "train_node_ids"}
        pd.testing.assert_frame_equal(fused.ledger.to_frame(), pre)


@pytest.mark.parametrize("nsf", ["h2v", "n2v"])
def test_server_sgnn_ledger_holds_model_quantities_and_own_embeddings_only(federation, nsf):
    """No client receives another client's features, labels, adjacency or S: theta_f, and z_v of its own nodes."""
    channel = RecordingChannel()
    algorithm = ALGORITHMS.get("fedstruct")(sgnn_config(nsf=nsf), federation, CPU)
    algorithm.run(channel)
    params = set(algorithm.server.parameters)
    assert params and not any(name.startswith("structure") for name in params)  # theta_s stays at the server
    members = {f"client{k}": c for k, c in enumerate(federation.clients)}
    for sender, receiver, round_, payload in channel.payloads:
        names = set(payload)
        if receiver == "server":
            data = members[sender]
            if round_ == 0:
                assert names == {"node_ids", "train_node_ids"}
                assert torch.equal(payload["node_ids"], data.global_id)
                continue
            assert names == params | {"grad_z", "num_samples"}, names
            assert payload["grad_z"].shape == (int(data.train_mask.sum()), CLASSES)
            continue
        data = members[receiver]
        assert round_ >= 1 and names == params | {"z_train", "z"}, names
        assert payload["z"].shape == (int(data.num_nodes), CLASSES)
        assert payload["z_train"].shape == (int(data.train_mask.sum()), CLASSES)
    assert {"x", "y", "edge_index", "nsf", "abar_rows", "abar_block_values"}.isdisjoint(channel.ledger.names())


def test_server_sgnn_same_seed_same_numbers(federation):
    cfg = sgnn_config(nsf="h2v", config={"dropout": 0.5})
    first = ALGORITHMS.get("fedstruct")(cfg, federation, CPU).run()
    assert ALGORITHMS.get("fedstruct")(cfg, federation, CPU).run().history == first.history
    assert ALGORITHMS.get("fedstruct")(cfg.replace(seed=1), federation, CPU).run().history != first.history


def test_structure_sage_is_the_official_layout():
    from fglcore.models.structure_sage import StructureSAGE
    model = StructureSAGE(16, [128, 64, 32], 7)
    assert [c.out_channels for c in model.convs] == [128, 64, 32] and model.head.out_features == 7
    assert isinstance(model.input_norm, torch.nn.BatchNorm1d) and not model.input_norm.track_running_stats
    s, edges = torch.randn(10, 16), torch.tensor([[0, 1, 2, 3], [1, 2, 3, 4]])
    assert model(s, edges).shape == (10, 7)
    before = [p.detach().clone() for p in model.parameters()]
    torch.manual_seed(3)
    model.reset_parameters()
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_linear_combiner_eq51(federation):
    """Eq. 51's Theta_c: trained with theta (fused = clients for both structure GNNs), absent by default."""
    for options in ({}, {"sgnn": "sage", "abar_protocol": "server", "sgnn_layers": [16, 8]}):
        clients = ALGORITHMS.get("fedstruct")(config(combiner="linear", **options), federation, CPU)
        result = clients.run()
        fused = ALGORITHMS.get("fedstruct")(config(combiner="linear", simulation="fused", **options), federation,
                                            CPU).run()
        for a, b in zip(result.history, fused.history):
            assert a["test_loss"] == pytest.approx(b["test_loss"], abs=1e-5)
        assert "combiner.weight" in clients.server.parameters
    default = ALGORITHMS.get("fedstruct")(config(), federation, CPU)
    default.run()
    assert not any("combiner" in name for name in default.server.parameters)
    with pytest.raises(ConfigError, match="combiner: 'linear'.*needs branches='both'"):
        config(combiner="linear", branches="structure")
    with pytest.raises(ConfigError, match="algorithm_options.combiner"):
        config(combiner="concat")


def test_options_added_later_leave_stored_run_ids_alone(monkeypatch):
    """sgnn, sgnn_layers and combiner came after FedStruct runs were stored: at their defaults they are not in the
    run id, so those runs are still found (and copied between tables); another value is another run."""
    from fglcore.results import run_id

    plain = config(nsf="h2v")
    explicit = config(nsf="h2v", sgnn="decoupled_gcn", sgnn_layers=[128, 64, 32], combiner="sum",
                      feature_self_loops="all")
    assert run_id(plain) == run_id(explicit)
    assert run_id(config(nsf="h2v", combiner="linear")) != run_id(plain)
    assert run_id(config(nsf="h2v", feature_self_loops="official")) != run_id(plain)
    fedstruct = ALGORITHMS.get("fedstruct")
    assert set(fedstruct.late_options) <= set(fedstruct.default_options)
    before = run_id(plain)
    monkeypatch.setattr(fedstruct, "late_options", ())
    assert run_id(plain) != before  # without it, every stored FedStruct run id would change


# --------------------------------------------------------------------------- the official code's self-loops


def official_obtain_a(edge_index: torch.Tensor, num_nodes: int, layers: int) -> torch.Tensor:
    """The official ``obtain_a`` (``src/utils/utils.py``) on a client's local graph, densely: PyG's
    ``add_self_loops`` without ``num_nodes``, row-normalised, to the power ``layers``."""
    from torch_geometric.utils import add_self_loops

    looped = add_self_loops(edge_index)[0]
    adj = torch.zeros(num_nodes, num_nodes)
    adj[looped[0], looped[1]] = 1.0
    degree = adj.sum(1, keepdim=True)
    a_hat = torch.where(degree > 0, adj / degree.clamp(min=1), torch.zeros_like(adj))
    return torch.linalg.matrix_power(a_hat, layers)


def test_official_feature_rows_are_the_nodes_that_pygs_self_loops_reach():
    """Local order = ascending global id; the nodes after the largest intra-edge end get no self-loop."""
    client = Data(edge_index=torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]]), global_id=torch.tensor([3, 8, 11, 20, 42]),
                  num_nodes=5)
    assert fedstruct_module.official_feature_rows(client).tolist() == [True, True, True, False, False]
    lonely = Data(edge_index=torch.empty(2, 0, dtype=torch.long), global_id=torch.tensor([1, 2]), num_nodes=2)
    assert fedstruct_module.official_feature_rows(lonely).tolist() == [False, False]


@pytest.fixture(scope="module")
def tailed_federation() -> NodeFederation:
    """The SBM with nodes 54-59 (the largest global ids) isolated: every client then has nodes after its last
    intra-edge end."""
    data = graph()
    keep = (data.edge_index < 54).all(0)
    data.edge_index = data.edge_index[:, keep]
    assignment = torch.as_tensor(np.random.default_rng(0).integers(0, K, N))
    return NodeFederation("sbm", data, build_clients(data, assignment, keep_cross_edges=True), CLASSES, FEATURES,
                          assignment)


def test_official_self_loops_give_the_official_feature_branch(tailed_federation):
    """feature_self_loops="official": each client's H_i is the official obtain_a's A_i^L times the MLP output (the
    rows its self-loops miss are 0), and differs from Sec. 3's A_i^L, which loops every node."""
    federation = tailed_federation
    algorithm = ALGORITHMS.get("fedstruct")(config(nsf="deg", feature_self_loops="official"), federation, CPU)
    _, clients = algorithm.build(Channel())
    tails = 0
    for client, data in zip(clients, federation.clients):
        model = client.model.eval()
        mlp = model.feature.mlp(data.x)
        h = model.feature_forward(data.x, data.edge_index, client.feature_rows)
        rows = fedstruct_module.official_feature_rows(data)
        tails += int((~rows).sum())
        assert torch.equal(h[~rows], torch.zeros_like(h[~rows]))
        full = model.feature_forward(data.x, data.edge_index)
        torch.testing.assert_close(h[rows], full[rows])
        torch.testing.assert_close(h, official_obtain_a(data.edge_index, data.num_nodes, 2) @ mlp)
    assert tails >= K  # every client has nodes after its last intra-edge end


@pytest.mark.parametrize("make", [config, sgnn_config], ids=["abar", "server_sgnn"])
def test_official_self_loops_fused_follows_the_clients_and_changes_the_run(tailed_federation, make):
    federation = tailed_federation
    runs = {sim: ALGORITHMS.get("fedstruct")(make(nsf="deg", feature_self_loops="official", simulation=sim),
                                             federation, CPU).run() for sim in ("clients", "fused")}
    for a, b in zip(runs["clients"].history, runs["fused"].history):
        assert a["test_accuracy"] == pytest.approx(b["test_accuracy"])
        assert a["test_loss"] == pytest.approx(b["test_loss"], abs=1e-5)
    default = ALGORITHMS.get("fedstruct")(make(nsf="deg"), federation, CPU).run()
    assert [r["test_loss"] for r in default.history] != [r["test_loss"] for r in runs["clients"].history]
    with pytest.raises(ConfigError, match="algorithm_options.feature_self_loops"):
        config(feature_self_loops="some")
