"""FedGCN (Yao et al., NeurIPS 2023), FedStruct's non-private baseline: what crosses the channel before training,
the server's aggregation against the central one, the 2-hop extended subgraph against a central model."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.utils import stochastic_blockmodel_graph, to_torch_coo_tensor

from fglcore.algorithms import ALGORITHMS
from fglcore.algorithms import fedgcn
from fglcore.algorithms.fedgcn import exchange_features, exchange_sums
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.data.federation import NodeFederation, build_clients
from fglcore.fl.channel import Channel
from fglcore.models import build_model
from recording_channel import RecordingChannel

CPU = torch.device("cpu")
N, K, FEATURES, CLASSES = 60, 3, 12, 3


def graph(seed: int = 0) -> Data:
    torch.manual_seed(seed)
    edge_index = stochastic_blockmodel_graph([20, 20, 20], [[0.25, 0.03, 0.03], [0.03, 0.25, 0.03],
                                                            [0.03, 0.03, 0.25]])
    order = torch.argsort(torch.rand(N))
    y = torch.empty(N, dtype=torch.long)
    y[order] = torch.arange(N) // 20
    edge_index = order[edge_index]
    x = F.one_hot(y, FEATURES).float() + 0.8 * torch.randn(N, FEATURES)
    perm = torch.randperm(N)
    train, val, test = (torch.zeros(N, dtype=torch.bool) for _ in range(3))
    train[perm[:18]], val[perm[18:30]], test[perm[30:]] = True, True, True
    return Data(x=x, y=y, edge_index=edge_index, train_mask=train, val_mask=val, test_mask=test, num_nodes=N)


@pytest.fixture(scope="module")
def federation() -> NodeFederation:
    data = graph()
    assignment = torch.as_tensor(np.random.default_rng(0).integers(0, K, N))
    clients = build_clients(data, assignment, keep_cross_edges=True)
    return NodeFederation("sbm", data, clients, CLASSES, FEATURES, assignment)


def config(algorithm: str = "fedgcn_2hop", **changes) -> ExperimentConfig:
    base = dict(dataset="Cora", partition="random", num_clients=K, split="global_random", split_ratios=[0.1, 0.1, 0.8],
                algorithm=algorithm, model="sage", hidden=16, num_layers=2, dropout=0.0, rounds=3, local_epochs=1,
                lr=0.01, weight_decay=5e-4, selection="last", seed=0)
    return ExperimentConfig.from_dict({**base, **changes})


def central_gcn_aggregation(data: Data) -> torch.Tensor:
    """(D^-1/2 (A + I) D^-1/2) X on the whole graph, as PyG's GCNConv normalises it."""
    edge_index, weight = gcn_norm(data.edge_index, num_nodes=data.num_nodes, add_self_loops=True)
    adj = to_torch_coo_tensor(edge_index, weight, size=data.num_nodes)
    return adj @ data.x


@pytest.mark.parametrize("hops", [1, 2])
def test_the_servers_sums_are_the_central_gcn_aggregation(federation, hops):
    channel = RecordingChannel()
    graphs = exchange_sums(federation.clients, N, hops, channel)
    expected = central_gcn_aggregation(federation.data)
    for k, (client, g) in enumerate(zip(federation.clients, graphs)):
        own = client.global_id
        wanted = own if hops == 1 else torch.cat([own, client.external_id])
        assert torch.equal(g.global_id, wanted)
        torch.testing.assert_close(g.x, expected[wanted], atol=1e-5, rtol=1e-5)
        assert g.train_mask[: own.numel()].equal(client.train_mask) and not g.train_mask[own.numel():].any()
        extra = 0 if hops == 1 else 2 * client.cross_edge_index.size(1)
        assert g.edge_index.size(1) == client.edge_index.size(1) + extra
    # what crossed: partial sums of each client's own columns up, aggregated rows down; never a label
    for sender, receiver, round_, payload in channel.payloads:
        assert round_ == 0
        if receiver == "server":
            assert set(payload) == {"fedgcn_node_ids", "fedgcn_partial_sums", "fedgcn_partial_counts"}
        else:
            assert set(payload) == {"fedgcn_aggregated_ids", "fedgcn_aggregated"}


def test_two_hop_features_give_each_client_the_central_model_on_its_nodes(federation):
    """exchange='features', 2 hops: a 2-layer GraphSAGE on the extended subgraph scores the client's own nodes
    exactly as the same model on the whole graph (the official code's FedGCN-2hop is exact for two layers)."""
    torch.manual_seed(0)
    model = build_model("sage", FEATURES, 16, CLASSES, num_layers=2, dropout=0.0).eval()
    with torch.no_grad():
        central = model(federation.data.x, federation.data.edge_index)
        channel = RecordingChannel()
        graphs = exchange_features(federation.data, federation.clients, 2, channel)
        for client, g in zip(federation.clients, graphs):
            local = model(g.x, g.edge_index)[: client.num_nodes]
            torch.testing.assert_close(local, central[client.global_id], atol=1e-5, rtol=1e-5)
    labels = {"y", "train_mask", "val_mask", "test_mask"}
    for sender, receiver, _, payload in channel.payloads:
        assert labels.isdisjoint(payload)
        if receiver != "server":  # features of other clients' nodes only: NOT private, as FedStruct says
            k = int(receiver.removeprefix("client"))
            assert not set(payload["fedgcn_external_ids"].tolist()) & set(federation.clients[k].global_id.tolist())


def test_one_hop_does_not_see_two_hops_away(federation):
    """With one hop, changing the features of a node two hops from every node of client 0 leaves client 0's
    inputs unchanged; with two hops they change."""
    data = federation.data
    client = federation.clients[0]
    hop1 = set(client.external_id.tolist()) | set(client.global_id.tolist())
    far = next(u for u in range(N) if u not in hop1)
    changed = data.clone()
    changed.x = data.x.clone()
    changed.x[far] += 5.0
    clients = build_clients(changed, federation.assignment, keep_cross_edges=True)
    for hops, moves in ((1, False), (2, None)):
        a = exchange_sums(federation.clients, N, hops, Channel())[0].x
        b = exchange_sums(clients, N, hops, Channel())[0].x
        if moves is False:
            assert torch.equal(a, b)
        else:  # moves iff far is a neighbour of one of client 0's external neighbours
            reach = set(data.edge_index[1][torch.isin(data.edge_index[0], client.external_id)].tolist())
            assert (not torch.equal(a, b)) == (far in reach)


@pytest.mark.parametrize("algorithm", ["fedgcn_1hop", "fedgcn_2hop"])
@pytest.mark.parametrize("exchange", ["sums", "features"])
def test_runs_and_is_deterministic(federation, algorithm, exchange):
    cfg = config(algorithm, algorithm_options={"exchange": exchange})
    first = ALGORITHMS.get(algorithm)(cfg, federation, CPU).run()
    second = ALGORITHMS.get(algorithm)(cfg, federation, CPU).run()
    assert 0.0 <= first.metrics["test_accuracy"] <= 1.0
    assert first.metrics == second.metrics
    ledger = first.ledger
    assert {"y", "train_mask"}.isdisjoint(ledger.names())
    pre = ledger.to_frame()
    assert (pre.loc[pre["round"] == 0, "name"].str.startswith("fedgcn_")).all()


def test_options_and_registry():
    assert ALGORITHMS.get("fedgcn_1hop").hops == 1 and ALGORITHMS.get("fedgcn_2hop").hops == 2
    assert ALGORITHMS.get("fedgcn_2hop").needs_cross_edges
    assert "not private" in fedgcn.__doc__.lower() and "not private" in ALGORITHMS.get("fedgcn_1hop").citation
    with pytest.raises(ConfigError, match="exchange"):
        config(algorithm_options={"exchange": "raw"})
    with pytest.raises(ConfigError, match="unknown"):
        config(algorithm_options={"hops": 3})


@pytest.mark.parametrize("algorithm", ["fedgcn_1hop", "fedgcn_2hop"])
def test_model_options_reach_the_model_and_local_norm_layers_are_not_sent(federation, algorithm):
    """FedStruct's rows give FedGCN's GraphSAGE the input LayerNorm of its other baselines, kept out of the
    averaging (norm_layers="local"), as its FedAvg rows; the default averages every shared parameter."""
    cfg = config(algorithm, model_options={"input_layer_norm": True}, algorithm_options={"norm_layers": "local"})
    run = ALGORITHMS.get(algorithm)(cfg, federation, CPU)
    names = set(run.run().ledger.names())
    assert any("norm" in n for n in run.clients[0].model.state_dict())
    assert names and not any("norm" in n for n in names if not n.startswith("fedgcn_"))
    averaged = ALGORITHMS.get(algorithm)(config(algorithm, model_options={"input_layer_norm": True}), federation,
                                         CPU).run()
    assert any("norm" in n for n in averaged.ledger.names())
