"""FedSage+ (Zhang et al., NeurIPS 2021): impaired graphs, NeighGen, Eqs. (3) and (6) through the channel, mending."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.utils import stochastic_blockmodel_graph

from fglcore.algorithms import ALGORITHMS
from fglcore.algorithms.fedsage import FedSage
from fglcore.algorithms.fedsage_plus import (PRE_TRAINING, NeighGenOwner, impair_graph, matching_loss, mend_graph,
                                             neighbour_counts)
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.data.federation import NodeFederation, build_clients
from fglcore.fl.channel import Channel
from fglcore.models.neighgen import NeighGen

CPU = torch.device("cpu")
N, K, FEATURES, CLASSES, P = 120, 3, 10, 3, 4


def graph(seed: int = 0) -> Data:
    """A 3-block SBM (labels follow blocks), class-correlated features in [0, 1], a 30/20/50 split."""
    torch.manual_seed(seed)
    size = N // CLASSES
    p = [[0.25 if a == b else 0.03 for b in range(CLASSES)] for a in range(CLASSES)]
    edge_index = stochastic_blockmodel_graph([size] * CLASSES, p)
    y = torch.arange(N) // size
    x = (F.one_hot(y, FEATURES).float() + 0.3 * torch.rand(N, FEATURES)).clamp(0, 1)
    perm = torch.randperm(N)
    train, val, test = (torch.zeros(N, dtype=torch.bool) for _ in range(3))
    train[perm[:36]], val[perm[36:60]], test[perm[60:]] = True, True, True
    return Data(x=x, y=y, edge_index=edge_index, train_mask=train, val_mask=val, test_mask=test, num_nodes=N)


@pytest.fixture(scope="module")
def fed() -> NodeFederation:
    data = graph()
    assignment = torch.as_tensor(np.random.default_rng(1).integers(0, K, N))
    return NodeFederation("sbm", data, build_clients(data, assignment), CLASSES, FEATURES, assignment)


BASE = dict(dataset="Cora", partition="random", num_clients=K, split="global_random", split_ratios=[0.1, 0.1, 0.8],
            algorithm="fedsage_plus", model="sage", hidden=16, num_layers=2, dropout=0.0, rounds=3, local_epochs=1,
            lr=0.01, weight_decay=5e-4, selection="last", seed=0)
OPTIONS = dict(hidden_portion=0.25, num_pred=P, latent_dim=8, encoder_hidden=8, local_generator_epochs=10,
               federated_generator_epochs=2, generator_lr=0.01, count_rounding="round")


def config(**options) -> ExperimentConfig:
    changes = {k: options.pop(k) for k in list(options) if k in BASE}
    return ExperimentConfig.from_dict({**BASE, **changes, "algorithm_options": {**OPTIONS, **options}})


def run(fed: NodeFederation, **options):
    algorithm = ALGORITHMS.get("fedsage_plus")(config(**options), fed, CPU)
    return algorithm, algorithm.run()


@pytest.fixture(scope="module")
def default_run(fed):
    return run(fed)


# --------------------------------------------------------------------------- the impaired graph


@pytest.mark.parametrize("portion", [0.0, 0.1, 0.25, 0.5])
def test_the_impaired_graph_hides_the_share_asked_and_records_what_is_missing(fed, portion):
    data = fed.clients[0]
    n = int(data.num_nodes)
    imp = impair_graph(data, portion, P, np.random.default_rng(3))
    assert imp.hidden.numel() == int(n * portion) and imp.kept.numel() == n - int(n * portion)
    assert set(imp.kept.tolist()).isdisjoint(imp.hidden.tolist())
    assert sorted(imp.kept.tolist() + imp.hidden.tolist()) == list(range(n))
    hidden = set(imp.hidden.tolist())
    kept = imp.kept.tolist()
    src, dst = data.edge_index.tolist()
    kept_edges = {(kept.index(a), kept.index(b)) for a, b in zip(src, dst) if a not in hidden and b not in hidden}
    assert set(map(tuple, imp.data.edge_index.t().tolist())) == kept_edges
    assert torch.equal(imp.data.x, data.x[imp.kept]) and torch.equal(imp.data.y, data.y[imp.kept])
    assert torch.equal(imp.data.train_mask, data.train_mask[imp.kept])
    for i, v in enumerate(kept):
        missing = [b for a, b in zip(src, dst) if a == v and b in hidden]
        assert imp.missing_count[i] == len(missing)
        assert int(imp.missing_mask[i].sum()) == min(len(missing), P)
        for p, u in enumerate(missing[:P]):
            assert torch.equal(imp.missing_features[i, p], data.x[u])
        assert not imp.missing_features[i, len(missing[:P]):].any()
    if portion > 0:
        assert imp.missing_count.sum() > 0


def test_hiding_is_seeded():
    data = graph()
    a, b, c = (impair_graph(data, 0.3, P, np.random.default_rng(s)) for s in (5, 5, 6))
    assert torch.equal(a.hidden, b.hidden) and not torch.equal(a.hidden, c.hidden)


# --------------------------------------------------------------------------- NeighGen, dGen, fGen


@pytest.mark.parametrize("encoder", ["sage", "gcn"])
def test_neighgen_shapes_and_ranges(encoder):
    data = graph()
    torch.manual_seed(0)
    model = NeighGen(FEATURES, 8, 6, num_pred=P, dropout=0.0, encoder=encoder)
    noise = torch.randn(N, 6)
    out = model(data.x, data.edge_index, noise)
    assert out.degree.shape == (N,) and (out.degree >= 0).all()  # dGen: one non-negative count per node
    assert out.generator_input.shape == (N, 6)
    assert out.features.shape == (N, P, FEATURES) and out.features.abs().max() <= 1  # fGen: P rows of F, tanh
    rows = torch.tensor([3, 7, 50])
    part = model(data.x, data.edge_index, noise, rows=rows)
    assert part.features.shape == (3, P, FEATURES)
    assert torch.allclose(part.features, out.features[rows], atol=1e-6) and torch.equal(part.degree, out.degree)
    other = model(data.x, data.edge_index, torch.randn(N, 6))  # the noise changes the generated features
    assert not torch.allclose(other.features, out.features) and torch.equal(other.degree, out.degree)
    before = [p.detach().clone() for p in model.parameters()]
    model.reset_parameters()
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_neighbour_counts_clip_and_round():
    degree = torch.tensor([-0.3, 0.4, 0.6, 1.5, 2.49, 9.0])
    assert neighbour_counts(degree, 3, "floor").tolist() == [0, 0, 0, 1, 2, 3]
    assert neighbour_counts(degree, 3, "round").tolist() == [0, 0, 1, 2, 2, 3]


def test_matching_loss_is_the_mean_over_generated_slots_of_the_closest_target():
    torch.manual_seed(0)
    gen = torch.rand(4, 3, 5)
    counts = torch.tensor([2, 0, 3, 1])
    targets = torch.rand(4, 2, 5)
    mask = torch.tensor([[True, True], [True, False], [False, False], [True, False]])
    terms = []
    for v in range(4):
        for p in range(int(counts[v])):
            options = [((gen[v, p] - targets[v, k]) ** 2).mean() for k in range(2) if mask[v, k]]
            if options:
                terms.append(min(options))
    assert matching_loss(gen, counts, targets, mask) == pytest.approx(float(torch.stack(terms).mean()), rel=1e-5)
    pool = torch.rand(7, 5)
    pooled = [min(((gen[v, p] - u) ** 2).mean() for u in pool) for v in range(4) for p in range(int(counts[v]))]
    assert matching_loss(gen, counts, pool) == pytest.approx(float(torch.stack(pooled).mean()), rel=1e-5)
    zero = matching_loss(gen.requires_grad_(), torch.zeros(4, dtype=torch.long), targets, mask)
    assert float(zero.detach()) == 0 and zero.requires_grad


# --------------------------------------------------------------------------- mending


def test_mend_graph_adds_the_counted_generated_neighbours_only():
    data = graph()
    counts = torch.zeros(N, dtype=torch.long)
    counts[[0, 5, 9]] = torch.tensor([2, 1, 3])
    features = torch.rand(N, P, FEATURES)
    mended = mend_graph(data, counts, features)
    assert mended.num_nodes == N + 6 and int(mended.generated.sum()) == 6
    assert torch.equal(mended.x[:N], data.x) and torch.equal(mended.y[:N], data.y)
    assert torch.equal(mended.x[N:], torch.cat([features[0, :2], features[5, :1], features[9, :3]]))
    assert mended.generated_owner.tolist() == [0, 0, 5, 9, 9, 9]
    for split in ("train", "val", "test"):
        mask = getattr(mended, f"{split}_mask")
        assert torch.equal(mask[:N], getattr(data, f"{split}_mask")) and not mask[N:].any()
    assert torch.equal(mended.edge_index[:, : data.edge_index.size(1)], data.edge_index)
    new = {tuple(e) for e in mended.edge_index[:, data.edge_index.size(1):].t().tolist()}
    expected = {(int(o), N + i) for i, o in enumerate(mended.generated_owner)}
    assert new == expected | {(b, a) for a, b in expected}
    assert mend_graph(data, torch.zeros(N, dtype=torch.long), features).num_nodes == N


def test_each_client_mends_only_its_own_graph(fed, default_run):
    algorithm, _ = default_run
    added = 0
    for client, mended in zip(fed.clients, algorithm.mended):
        n = int(client.num_nodes)
        assert torch.equal(mended.x[:n], client.x) and torch.equal(mended.edge_index[:, : client.edge_index.size(1)],
                                                                   client.edge_index)
        assert (mended.generated_owner < n).all()  # generated neighbours hang on the client's own nodes
        assert not mended.generated[:n].any() and mended.generated[n:].all()
        assert int(mended.train_mask.sum()) == int(client.train_mask.sum())
        added += int(mended.generated.sum())
    assert added > 0
    # FedSage trains and scores on the mended graphs: every client's trainer holds its mended graph
    for cid, client in enumerate(algorithm.clients):
        assert client.trainer.x.size(0) == algorithm.mended[cid].num_nodes


# --------------------------------------------------------------------------- training


def test_local_generator_training_lowers_the_loss(fed):
    algorithm, _ = run(fed, local_generator_epochs=40, federated_generator_epochs=0, rounds=1)
    losses = np.array(algorithm.generator_losses)
    assert losses.shape == (K, 40)
    assert (losses[:, -5:].mean(1) < 0.6 * losses[:, :5].mean(1)).all(), losses[:, [0, -1]]


def test_federated_generator_training_lowers_the_loss(fed):
    algorithm, _ = run(fed, local_generator_epochs=0, federated_generator_epochs=30, federated_parameters="all",
                       rounds=1)
    losses = np.array(algorithm.generator_losses)
    assert losses.shape == (K, 30)
    assert (losses[:, -5:].mean(1) < losses[:, :5].mean(1)).all(), losses[:, [0, -1]]


def test_fedsage_plus_is_fedsage_on_the_mended_graphs(fed, default_run):
    algorithm, result = default_run
    assert isinstance(algorithm, FedSage) and ALGORITHMS.get("fedsage_plus").tasks == ("node",)
    assert len(result.history) == 3 and 0 <= result.metrics["test_accuracy"] <= 1


def test_fedsgd_federation_is_fedsgd_on_the_mended_graphs(fed):
    """FedStruct's FedSage+ ("GA"): phase 2 is FedSGD, number for number, on the graphs NeighGen mended."""
    plus, result = run(fed, federation="fedsgd")
    assert any(m.num_nodes > d.num_nodes for m, d in zip(plus.mended, fed.clients))  # something was generated
    mended = NodeFederation("sbm", fed.data, plus.mended, CLASSES, FEATURES, fed.assignment)
    fedsgd_config = ExperimentConfig.from_dict({**config().to_dict(), "algorithm": "fedsgd",
                                                "algorithm_options": {"weighting": "labelled"}})
    reference = ALGORITHMS.get("fedsgd")(fedsgd_config, mended, CPU).run()
    assert result.history == reference.history


@pytest.mark.parametrize("option, value", [("norm_layers", "local"), ("share", "all"), ("reset_optimizer", True)])
def test_fedavg_options_are_refused_under_the_fedsgd_federation(option, value):
    with pytest.raises(ConfigError, match=f"algorithm_options.{option}: a FedAvg option, but federation is 'fedsgd'"):
        config(federation="fedsgd", **{option: value})


def test_model_options_reach_fedsage_and_neighgen_classifiers(fed):
    """FedStruct's rows give FedSage+ the official input LayerNorm: every GraphSAGE of the run gets it."""
    config_ln = ExperimentConfig.from_dict({**config().to_dict(), "model_options": {"input_layer_norm": True}})
    algorithm = ALGORITHMS.get("fedsage_plus")(config_ln, fed, CPU)
    owner = NeighGenOwner(0, fed.clients[0], CLASSES, config_ln, algorithm.options, CPU)
    assert isinstance(owner.classifier.input_norm, torch.nn.LayerNorm)
    assert isinstance(algorithm.make_model(FEATURES, CLASSES).input_norm, torch.nn.LayerNorm)
    assert ALGORITHMS.get("fedsage_plus")(config(), fed, CPU).make_model(FEATURES, CLASSES).input_norm is None


def test_same_seed_same_run_other_seed_other_run(fed, default_run):
    algorithm, result = default_run
    again, result_again = run(fed)
    assert result_again.history == result.history
    assert algorithm.generator_losses == again.generator_losses
    for a, b in zip(algorithm.mended, again.mended):
        assert torch.equal(a.x, b.x) and torch.equal(a.edge_index, b.edge_index)
    other, _ = run(fed, seed=1)
    assert other.generator_losses != algorithm.generator_losses


# --------------------------------------------------------------------------- the ledger


def test_ledger_what_crosses_in_the_generator_phase(fed, default_run):
    algorithm, result = default_run
    ledger = result.ledger
    peer = [m for m in ledger.messages if m.direction == "peer"]
    assert peer and all(m.round == PRE_TRAINING for m in peer)
    assert not [m for m in ledger.messages if m.round == PRE_TRAINING and m.direction != "peer"]
    fgen = dict(algorithm_fgen_shapes())
    requests = {f"fgen.{n}" for n in fgen} | {"fgen_input", "fgen_counts"}
    grads = {f"fgen_grad.{n}" for n in fgen}
    # every client sends every other its fGen's parameters, their inputs and the counts (its request) and
    # answers the other's request with gradients of fGen's parameters: nothing else crosses
    for a in range(K):
        for b in range(K):
            if a != b:
                assert {m.name for m in peer if m.sender == f"client{a}" and m.receiver == f"client{b}"} \
                    == requests | grads
    for m in peer:
        name = m.name.split(".", 1)[-1]
        if m.name.startswith("fgen"):
            assert name in fgen or m.name in ("fgen_input", "fgen_counts"), m.name
            if name in fgen:
                assert m.shape == fgen[name]
    # nothing shaped like node features (n x F) crosses: no client's features, no hidden targets
    assert not [m for m in peer if len(m.shape) == 2 and m.shape[1] == FEATURES]
    pairs_per_epoch = K * (K - 1)
    assert len([m for m in peer if m.name == "fgen_input"]) == OPTIONS["federated_generator_epochs"] * pairs_per_epoch
    # the rounds are FedSage's: the server sends and receives SAGE parameters only
    assert ledger.names(sender="server") == ledger.names(receiver="server") - {"num_samples"}
    assert all(n.startswith("convs.") for n in ledger.names(sender="server"))


def algorithm_fgen_shapes():
    model = NeighGen(FEATURES, OPTIONS["encoder_hidden"], OPTIONS["latent_dim"], P)
    return {n: tuple(p.shape) for n, p in model.fgen.named_parameters()}


def test_outputs_exchange_sends_generated_features_and_their_gradients(fed):
    _, result = run(fed, cross_exchange="outputs", federated_parameters="all", rounds=1)
    peer = [m for m in result.ledger.messages if m.direction == "peer"]
    assert {m.name for m in peer} == {"generated_features", "generated_counts", "generated_features_grad"}
    assert all(m.shape[1:] == (P, FEATURES) for m in peer if m.name.startswith("generated_features"))


def test_input_gradients_flow_back_only_when_the_encoder_trains(fed):
    _, frozen = run(fed, rounds=1)
    _, joint = run(fed, federated_parameters="all", rounds=1)
    assert "fgen_input_grad" not in frozen.ledger.names(sender="clients")
    assert "fgen_input_grad" in joint.ledger.names(sender="clients")


def test_parameter_and_output_exchanges_give_the_same_gradient(fed):
    """Without dropout, j's gradient for i's fGen is the same whether i ships fGen (the paper) or its output."""
    cfg = config()
    grads = {}
    for exchange in ("parameters", "outputs"):
        torch.manual_seed(0)
        options = ALGORITHMS.get("fedsage_plus").check_options({**OPTIONS, "cross_exchange": exchange})
        owners = [NeighGenOwner(c, d, CLASSES, cfg, options, CPU) for c, d in enumerate(fed.clients[:2])]
        for o in owners:
            o.start_phase("fgen")
        with torch.no_grad():  # dGen asks for every generated row, so the cross term has pairs to match
            owners[0].model.dgen.bias.fill_(10.0)
        step = owners[0].local_loss()
        assert (step.counts == P).all()
        reply = owners[1].reply(owners[0].request(step), input_gradient=False)
        owners[0].optimizer.zero_grad(set_to_none=True)
        if exchange == "parameters":
            params = dict(owners[0].model.fgen.named_parameters())
            grads[exchange] = {n: reply[f"fgen_grad.{n}"] for n in params}
        else:
            (step.features * reply["generated_features_grad"]).sum().backward()
            grads[exchange] = {n: p.grad.clone() for n, p in owners[0].model.fgen.named_parameters()}
    for name, value in grads["parameters"].items():
        assert torch.allclose(value, grads["outputs"][name], atol=1e-6), name
    assert any(v.abs().sum() > 0 for v in grads["parameters"].values())


def two_owners(fed, dgen_bias: float = 10.0, **options) -> list[NeighGenOwner]:
    """Clients 0 and 1's NeighGen sides, seeded; dGen's bias set so that every row asks for P generated
    neighbours (10) or for none (-10)."""
    torch.manual_seed(0)
    opts = ALGORITHMS.get("fedsage_plus").check_options({**OPTIONS, **options})
    owners = [NeighGenOwner(c, d, CLASSES, config(), opts, CPU) for c, d in enumerate(fed.clients[:2])]
    for o in owners:
        o.start_phase("all")
    with torch.no_grad():
        owners[0].model.dgen.bias.fill_(dgen_bias)
    return owners


def test_a_reply_runs_fgen_only_on_the_rows_with_generated_neighbours(fed):
    """Rows without generated neighbours are not in Eq. (6)'s term: leaving them out changes no gradient."""
    owners = two_owners(fed, cross_targets="all")  # no sampling: the reference sees the same targets
    request = owners[0].request(owners[0].local_loss())
    counts = request["fgen_counts"].clone()
    counts[::2] = 0
    request["fgen_counts"] = counts
    assert 0 < int((counts > 0).sum()) < counts.numel()
    reply = owners[1].reply(request, input_gradient=True)
    params = {n.removeprefix("fgen."): t.detach().requires_grad_() for n, t in request.items() if n.startswith("fgen.")}
    inputs = request["fgen_input"].detach().requires_grad_()
    generated = torch.func.functional_call(owners[1].model.fgen, params, (inputs, torch.zeros_like(inputs)))
    loss = matching_loss(generated, counts, owners[1].own_x)
    expected = torch.autograd.grad(loss, [*params.values(), inputs])
    for name, value in zip(params, expected):
        assert torch.allclose(reply[f"fgen_grad.{name}"], value, atol=1e-7), name
    assert torch.allclose(reply["fgen_input_grad"], expected[-1], atol=1e-7)
    assert (reply["fgen_input_grad"][::2] == 0).all() and reply["fgen_input_grad"][1::2].abs().sum() > 0


def test_without_generated_neighbours_the_replies_are_full_size_zeros_that_change_nothing(fed):
    """No loss node asks for a neighbour: the replies are zeros, counted at full size, and the step equals
    the step that adds materialised zero gradients."""
    owners = two_owners(fed, dgen_bias=-10.0)
    step = owners[0].local_loss()
    assert not step.counts.any()
    request = owners[0].request(step)
    channel = Channel()
    reply = channel.send("client1", "client0", owners[1].reply(request, input_gradient=True), PRE_TRAINING,
                         copy=False)
    assert set(reply) == {n.replace("fgen.", "fgen_grad.", 1) for n in request if n.startswith("fgen.")} | {
        "fgen_input_grad"}
    for name, grad in reply.items():
        source = request["fgen_input" if name == "fgen_input_grad" else name.replace("fgen_grad.", "fgen.", 1)]
        assert grad.shape == source.shape and not grad.any(), name
    assert channel.ledger.total_bytes() == sum(t.numel() * t.element_size() for t in reply.values())
    owners[0].step(step, [reply])

    reference = two_owners(fed, dgen_bias=-10.0)[0]  # the same client, built again: the step by hand
    ref_step = reference.local_loss()
    assert torch.equal(ref_step.loss.detach(), step.loss.detach())
    reference.optimizer.zero_grad(set_to_none=True)
    ref_step.loss.backward()
    for p in reference.model.fgen.parameters():
        p.grad = torch.zeros_like(p) if p.grad is None else p.grad + torch.zeros_like(p)
    reference.optimizer.step()
    for (name, value), expected in zip(owners[0].model.state_dict().items(), reference.model.state_dict().values()):
        assert torch.equal(value, expected), name


def test_the_memory_estimate_counts_every_clients_fgen_adams_moments_and_the_replies(fed, monkeypatch):
    from fglcore.algorithms import fedsage_plus

    algorithm = ALGORITHMS.get("fedsage_plus")(config(), fed, CPU)
    owner = NeighGenOwner(0, fed.clients[0], CLASSES, config(), algorithm.options, CPU)
    fgen = sum(p.numel() for p in owner.model.fgen.parameters())
    assert algorithm.memory_estimate() == (12 * K + 4 * (K - 1) + 8) * fgen
    monkeypatch.setattr(fedsage_plus, "memory_bytes", lambda: algorithm.memory_estimate())  # a machine too small
    with pytest.raises(ConfigError, match=r"num_clients: FedSage\+'s 3 NeighGens on Cora \(10 features\) need"):
        algorithm.run()


# --------------------------------------------------------------------------- bad options


@pytest.mark.parametrize("key, value, accepted", [
    ("hidden_portion", 1.0, "hidden_portion"), ("hidden_portion", -0.1, "hidden_portion"),
    ("num_pred", 0, "num_pred"), ("generator_lr", 0.0, "generator_lr"), ("cross_weight", -1.0, "cross_weight"),
    ("local_generator_epochs", -1, "local_generator_epochs"), ("encoder", "gat", "sage"),
    ("cross_exchange", "features", "parameters"), ("federated_parameters", "encoder", "fgen"),
    ("cross_targets", "neighbours", "sampled"), ("mend_input", "global", "impaired"),
    ("count_rounding", "ceil", "floor"), ("federation", "fedprox", "fedsgd"), ("num_pred", 2.5, "num_pred"), ("neighgen_epochs", 3, "neighgen_epochs"),
])
def test_bad_options_are_rejected_before_any_work(key, value, accepted):
    with pytest.raises(ConfigError, match=accepted):
        config(**{key: value})


def test_the_backbone_must_be_graphsage():
    with pytest.raises(ConfigError, match="model must be 'sage'"):
        config(model="gcn")
