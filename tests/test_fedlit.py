"""FedLit (Xie, Xiong and Yang, WWW 2023): EM link typing, prototype matching, the server, and runs on Cora."""
from __future__ import annotations

import pytest
import torch

from fglcore.algorithms import ALGORITHMS
from fglcore.algorithms.fedlit import (
    CHANNEL_TRAIN_NODES,
    PROTOTYPES,
    FedLitServer,
    assign_link_types,
    canonical_edge_pairs,
    channel_train_nodes,
    edge_representations,
    em_link_types,
    initial_link_types,
    match_prototypes,
    update_prototypes,
)
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.data.federation import build_federation
from fglcore.fl.engine import Client
from fglcore.fl.parameters import module_payload
from fglcore.models.fedlit import MultiChannelGNN

CPU = torch.device("cpu")
NODE = dict(dataset="Cora", partition="louvain", num_clients=3, hidden=8, rounds=2, local_epochs=2, algorithm="fedlit")


def node_config(**changes) -> ExperimentConfig:
    return ExperimentConfig.from_dict({**NODE, **changes})


@pytest.fixture(scope="module")
def cora3():
    return build_federation(node_config())


def run(cora3, **changes):
    config = node_config(**changes)
    algorithm = ALGORITHMS.get("fedlit")(config, cora3, CPU)
    return algorithm, algorithm.run()


@pytest.fixture(scope="module")
def default_run(cora3):
    return run(cora3)


def test_registry_entry():
    fedlit = ALGORITHMS.get("fedlit")
    assert fedlit.tasks == ("node",) and "WWW 2023" in fedlit.citation
    assert fedlit.default_options["num_link_types"] == 4 and fedlit.default_options["em_iterations"] == 1


# -- EM link typing on toy tensors ------------------------------------------------------------------


def test_em_assignment_takes_the_most_cosine_similar_prototype():
    prototypes = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]])
    edges = torch.tensor([[5.0, 0.1], [0.2, 3.0], [-2.0, -1.5], [0.1, 0.0], [10.0, 9.0]])
    assert assign_link_types(edges, prototypes).tolist() == [0, 1, 2, 0, 0]
    # cosine, not Euclidean: [10, 1] is nearer to [5, 5] in distance but at a smaller angle to [1, 0]
    assert assign_link_types(torch.tensor([[10.0, 1.0]]), torch.tensor([[1.0, 0.0], [5.0, 5.0]])).tolist() == [0]
    # the assignment ignores each prototype's scale
    assert assign_link_types(edges, prototypes * torch.tensor([[7.0], [0.1], [3.0]])).tolist() == [0, 1, 2, 0, 0]
    with pytest.raises(ValueError, match="same width"):
        assign_link_types(edges, torch.zeros(2, 3))


def test_em_update_averages_each_cluster_and_keeps_an_empty_one():
    representations = torch.tensor([[1.0, 0.0], [3.0, 0.0], [0.0, 2.0]])
    previous = torch.tensor([[9.0, 9.0], [8.0, 8.0], [7.0, 7.0]])
    updated = update_prototypes(representations, torch.tensor([0, 0, 2]), previous)
    assert torch.equal(updated, torch.tensor([[2.0, 0.0], [8.0, 8.0], [0.0, 2.0]]))


def test_em_iterations_move_prototypes_to_the_cluster_means():
    torch.manual_seed(0)
    a = torch.tensor([4.0, 0.0]) + 0.1 * torch.randn(20, 2)
    b = torch.tensor([0.0, 4.0]) + 0.1 * torch.randn(20, 2)
    points = torch.cat([a, b])
    start = torch.tensor([[1.0, 0.2], [0.3, 1.0]])
    prototypes, types = em_link_types(points, start, iterations=1)
    assert types.tolist() == [0] * 20 + [1] * 20
    assert torch.allclose(prototypes, torch.stack([a.mean(0), b.mean(0)]))
    again, _ = em_link_types(points, start, iterations=3)  # a fixed point: more steps change nothing
    assert torch.allclose(again, prototypes)
    with pytest.raises(ValueError, match="iterations >= 1"):
        em_link_types(points, start, iterations=0)


def test_both_directions_of_an_edge_share_one_representation_and_type():
    edge_index = torch.tensor([[0, 1, 2, 3], [1, 0, 3, 2]])
    pairs = canonical_edge_pairs(edge_index)
    assert pairs.tolist() == [[0, 0, 2, 2], [1, 1, 3, 3]]
    h = torch.randn(4, 3, generator=torch.Generator().manual_seed(1))
    reps = edge_representations(h, pairs)
    assert reps.shape == (4, 6) and torch.equal(reps[0], reps[1]) and torch.equal(reps[0], torch.cat([h[0], h[1]]))
    assert torch.equal(reps, torch.cat([h[pairs[0]], h[pairs[1]]], dim=1))  # [h_min || h_max] row by row
    types = assign_link_types(reps, torch.randn(3, 6, generator=torch.Generator().manual_seed(2)))
    assert types[0] == types[1] and types[2] == types[3]


def test_initial_link_types_are_seeded_kmeans_clusters():
    torch.manual_seed(0)
    points = torch.cat([torch.randn(30, 4) + 6.0, torch.randn(30, 4) - 6.0])
    centres, labels = initial_link_types(points, 2, seed=0)
    assert centres.shape == (2, 4) and centres.dtype == points.dtype
    assert len(set(labels[:30].tolist())) == 1 and len(set(labels[30:].tolist())) == 1 and labels[0] != labels[30]
    again, labels_again = initial_link_types(points, 2, seed=0)
    assert torch.equal(centres, again) and torch.equal(labels, labels_again)
    with pytest.raises(ValueError, match="at least num_link_types=4 edges"):
        initial_link_types(points[:3], 4, seed=0)


def test_channel_train_nodes_counts_training_nodes_touched_by_each_type():
    edge_index = torch.tensor([[0, 1, 1, 2, 3, 4], [1, 0, 2, 1, 4, 3]])
    types = torch.tensor([0, 0, 1, 1, 1, 1])
    train = torch.tensor([True, False, True, False, True])
    assert channel_train_nodes(edge_index, types, train, 3).tolist() == [1, 2, 0]


# -- server-side matching ----------------------------------------------------------------------------


def test_matching_recovers_a_permutation_of_noisy_prototypes():
    generator = torch.Generator().manual_seed(0)
    global_ = torch.randn(5, 16, generator=generator)
    permutation = [3, 0, 4, 1, 2]
    local = global_[permutation] + 0.01 * torch.randn(5, 16, generator=generator)
    assert match_prototypes(local, global_) == permutation  # local j was global permutation[j]
    assert match_prototypes(global_, global_) == list(range(5))
    with pytest.raises(ValueError, match="equal-shaped"):
        match_prototypes(local[:4], global_)


def test_matching_is_greedy_one_to_one():
    global_ = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    # both local prototypes prefer global 0; the more similar one gets it, the other gets global 1
    local = torch.tensor([[1.0, 0.5], [1.0, 0.05]])
    assert match_prototypes(local, global_) == [1, 0]


def _client(cid: int) -> Client:
    return Client(cid, 1)


def test_server_averages_matched_channels_and_prototypes_and_sends_them_back_in_client_order():
    torch.manual_seed(0)
    model = MultiChannelGNN(3, 4, 2, num_link_types=2, backbone="gcn", num_layers=1)
    initial = module_payload(model)
    server = FedLitServer(initial, num_link_types=2)
    a = {n: torch.full_like(v, 1.0) for n, v in initial.items()}
    b = {n: torch.full_like(v, 3.0) for n, v in initial.items()}
    for name in initial:  # client b's channel 0 holds what its partner's channel 1 holds, and vice versa
        if name.startswith("channels.0."):
            a[name], b[name] = torch.full_like(a[name], 10.0), torch.full_like(b[name], 30.0)
        if name.startswith("channels.1."):
            a[name], b[name] = torch.full_like(a[name], 20.0), torch.full_like(b[name], 40.0)
    prototypes = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    a[PROTOTYPES], b[PROTOTYPES] = prototypes, torch.tensor([[0.0, 3.0], [2.0, 0.2]])  # b's types swapped
    a[CHANNEL_TRAIN_NODES], b[CHANNEL_TRAIN_NODES] = torch.tensor([5, 5]), torch.tensor([5, 0])
    server.aggregate({0: a, 1: b}, {0: 1.0, 1: 3.0}, round=1)

    assert server.matches == {0: [0, 1], 1: [1, 0]}
    assert torch.allclose(server.prototypes, torch.tensor([[1.5, 0.1], [0.0, 2.0]]))
    p = server.parameters
    assert torch.allclose(p["project.weight"], torch.full_like(p["project.weight"], 2.5))  # (1*1 + 3*3) / 4
    assert torch.allclose(p["classifier.bias"], torch.full_like(p["classifier.bias"], 2.5))
    # global type 0 = a's channel 0 only (b's matching channel 1 touched no training node)
    assert torch.allclose(p["channels.0.lin.weight"], torch.full_like(p["channels.0.lin.weight"], 10.0))
    # global type 1 = mean of a's channel 1 and b's channel 0, unweighted
    assert torch.allclose(p["channels.1.lin.weight"], torch.full_like(p["channels.1.lin.weight"], 25.0))

    to_b = server.payload_for(_client(1), round=2)
    assert torch.equal(to_b["channels.0.lin.weight"], p["channels.1.lin.weight"])
    assert torch.equal(to_b["channels.1.lin.weight"], p["channels.0.lin.weight"])
    assert torch.equal(to_b[PROTOTYPES], server.prototypes[[1, 0]])
    assert torch.equal(server.payload_for(_client(0), round=2)[PROTOTYPES], server.prototypes)


# -- the multi-channel GNN -------------------------------------------------------------------------


@pytest.mark.parametrize("backbone", ["gcn", "sgc", "sage"])
def test_a_channel_only_reaches_nodes_its_edges_touch(tiny_graph, backbone):
    torch.manual_seed(0)
    model = MultiChannelGNN(6, 5, 2, num_link_types=3, backbone=backbone, num_layers=2).eval()
    edge_index = tiny_graph.edge_index
    bridge = ((edge_index[0] == 2) & (edge_index[1] == 3)) | ((edge_index[0] == 3) & (edge_index[1] == 2))
    types = torch.where(edge_index[0] < 3, 0, 1)
    types[bridge] = 2
    out = model(tiny_graph.x, edge_index, types)
    with torch.no_grad():  # channel 1 carries only the second triangle's edges
        for p in model.channels[1].parameters():
            p.add_(1.0)
    changed = (model(tiny_graph.x, edge_index, types) - out).abs().sum(1) > 1e-6
    assert changed.tolist() == [False, False, False, True, True, True]
    with pytest.raises(ValueError, match="one type per edge"):
        model(tiny_graph.x, edge_index, types[:-1])


def test_self_loops_option_changes_the_gcn_channel(tiny_graph):
    outputs = []
    for self_loops in (False, True):
        torch.manual_seed(0)
        model = MultiChannelGNN(6, 5, 2, num_link_types=1, num_layers=1, self_loops=self_loops).eval()
        one_type = torch.zeros(tiny_graph.edge_index.size(1), dtype=torch.long)
        outputs.append(model(tiny_graph.x, tiny_graph.edge_index, one_type))
    assert not torch.allclose(outputs[0], outputs[1])


# -- options -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options, message",
    [
        ({"num_link_types": 0}, "num_link_types: must be an integer >= 1"),
        ({"em_iterations": 0}, "em_iterations: must be an integer >= 1"),
        ({"num_link_types": "4"}, "num_link_types"),
        ({"channels": 4}, "unknown fedlit option"),
    ],
)
def test_bad_options_are_rejected_by_name(options, message):
    with pytest.raises(ConfigError, match=message):
        node_config(algorithm_options=options)


def test_unsupported_backbone_and_secure_aggregation_are_rejected():
    with pytest.raises(ConfigError, match="model: fedlit builds its channels from gcn, sgc, sage"):
        node_config(model="gat")
    with pytest.raises(ConfigError, match="secure_aggregation: not supported by fedlit"):
        node_config(secure_aggregation=True)


# -- runs on Cora --------------------------------------------------------------------------------------


def test_run_is_deterministic(cora3, default_run):
    algorithm, result = default_run
    second_algorithm, again = run(cora3)
    assert result.history == again.history and result.selected_round == again.selected_round
    assert result.metrics == again.metrics
    for name, value in algorithm.server.parameters.items():
        assert torch.equal(value, second_algorithm.server.parameters[name]), name
    assert torch.equal(algorithm.server.prototypes, second_algorithm.server.prototypes)
    assert 0.0 < result.metrics["test_accuracy"] <= 1.0


def test_channels_follow_num_link_types(cora3):
    algorithm, result = run(cora3, rounds=1, algorithm_options={"num_link_types": 2})
    model = algorithm.clients[0].model
    assert len(model.channels) == 2
    channels = {name.split(".")[1] for name, _ in model.named_parameters() if name.startswith("channels.")}
    assert channels == {"0", "1"}
    assert algorithm.server.prototypes.shape == (2, 2 * NODE["hidden"])
    for client in algorithm.clients:
        assert set(client.trainer.link_types.tolist()) <= {0, 1}
        assert sorted(algorithm.server.matches[client.cid]) == [0, 1]


def test_ledger_carries_only_parameters_and_link_type_prototypes(cora3, default_run):
    algorithm, result = default_run
    ledger = result.ledger
    parameters = {name for name, _ in algorithm.clients[0].model.named_parameters()}
    assert ledger.names(sender="clients", receiver="server") == parameters | {
        PROTOTYPES,
        CHANNEL_TRAIN_NODES,
        "num_samples",
    }
    assert ledger.names(sender="server", receiver="clients") == parameters | {PROTOTYPES}
    k, hidden = algorithm.options["num_link_types"], NODE["hidden"]
    shapes = {name: tuple(p.shape) for name, p in algorithm.clients[0].model.named_parameters()}
    shapes.update({PROTOTYPES: (k, 2 * hidden), CHANNEL_TRAIN_NODES: (k,), "num_samples": ()})
    for message in ledger.messages:
        assert message.shape == shapes[message.name], message
    # nothing node- or edge-sized crosses the network (no features, embeddings, edges or labels)
    sizes = {int(c.num_nodes) for c in cora3.clients} | {int(c.edge_index.size(1)) for c in cora3.clients}
    assert not any(set(m.shape) & sizes for m in ledger.messages if m.name not in parameters)
    # the server has prototypes to send only after the first uploads
    assert not ledger.select(sender="server", name=PROTOTYPES, round=1)
    assert len(ledger.select(sender="server", name=PROTOTYPES, round=2)) == NODE["num_clients"]
    assert not ledger.select(sender="clients", receiver="clients")


def test_clients_evaluate_with_their_received_prototypes_and_no_em_step(default_run):
    algorithm, _ = default_run
    server = algorithm.server
    for client in algorithm.clients:
        trainer = client.trainer
        received = trainer.prototypes.clone()
        # the payload after the last round carried the global prototypes in the client's own link-type order
        assert torch.equal(received, server.prototypes[server.matches[client.cid]])
        logits = trainer.logits()
        assert torch.equal(trainer.prototypes, received)  # evaluation leaves the prototypes alone
        with torch.no_grad():
            h = trainer.model.project(trainer.x)
            types = assign_link_types(edge_representations(h, canonical_edge_pairs(trainer.edge_index)), received)
            assert torch.allclose(logits, trainer.model.combine(h, trainer.edge_index, types))
