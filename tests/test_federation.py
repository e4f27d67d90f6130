"""build_federation end to end: Cora node-level federations and a MUTAG graph-level one."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from fglcore.config import ConfigError, ExperimentConfig
from fglcore.data.federation import (GraphFederation, NodeFederation, build_clients, build_federation, cross_blocks,
                                     interconnection_summary)
from fglcore.data.partition import client_sizes


@pytest.fixture(scope="module")
def cora_federation() -> NodeFederation:
    config = ExperimentConfig(dataset="Cora", partition="louvain", num_clients=10, split="per_client_random",
                              split_ratios=[0.4, 0.3, 0.3], seed=0)
    return build_federation(config, keep_cross_edges=True)


def test_cora_louvain_federation(cora_federation):
    fed = cora_federation
    assert fed.task == "node" and fed.dataset == "Cora" and fed.num_clients == 10
    assert (fed.num_classes, fed.num_features) == (7, 1433)
    assert sum(c.num_nodes for c in fed.clients) == fed.data.num_nodes == 2708
    assert torch.equal(client_sizes(fed.assignment, 10), torch.tensor([c.num_nodes for c in fed.clients]))
    for k, client in enumerate(fed.clients):
        assert bool((fed.assignment[client.global_id] == k).all())
        masks = torch.stack([client.train_mask, client.val_mask, client.test_mask])
        assert bool((masks.sum(0) == 1).all())  # disjoint and covering
        n = client.num_nodes
        assert int(client.train_mask.sum()) == int(0.4 * n)
        assert int(client.train_mask.sum() + client.val_mask.sum()) == int((0.4 + 0.3) * n + 1e-9)
        for key in ("train_mask", "val_mask", "test_mask"):
            assert torch.equal(client[key], fed.data[key][client.global_id])
        assert client.cross_edge_index.size(0) == 2


def test_federation_is_deterministic_and_reads_the_cache(cora_federation):
    config = ExperimentConfig(dataset="Cora", partition="louvain", num_clients=10, split="per_client_random",
                              split_ratios=[0.4, 0.3, 0.3], seed=0)
    again = build_federation(config)
    assert torch.equal(again.assignment, cora_federation.assignment)
    assert torch.equal(again.data.train_mask, cora_federation.data.train_mask)
    assert not hasattr(again.clients[0], "cross_edge_index")
    assert not any(hasattr(again.clients[0], key) for key in ("external_id", "external_owner", "global_degree"))
    reseeded = build_federation(dataclasses.replace(config, split_seed=1))
    assert torch.equal(reseeded.assignment, cora_federation.assignment)  # partition seed unchanged
    assert not torch.equal(reseeded.data.train_mask, cora_federation.data.train_mask)


def test_fedstruct_style_federation_inherits_a_global_split():
    config = ExperimentConfig(dataset="Cora", partition="random", num_clients=5, split="global_random",
                              split_ratios=[0.1, 0.1, 0.8], seed=3)
    fed = build_federation(config, keep_cross_edges=True)
    # cuts at floor(0.1 n) = 270 and floor(0.2 n) = 541
    assert int(fed.data.train_mask.sum()) == 270 and int(fed.data.val_mask.sum()) == 271
    cross = sum(c.cross_edge_index.size(1) for c in fed.clients)
    intra = sum(c.edge_index.size(1) for c in fed.clients)
    assert cross + intra == fed.data.edge_index.size(1)  # nothing dropped: every node has a client


def test_planetoid_full_and_dropped_nodes():
    config = ExperimentConfig(dataset="Cora", partition="louvain_largest", num_clients=10, split="planetoid_full")
    fed = build_federation(config)
    kept = fed.assignment >= 0
    assert int((~kept).sum()) > 0
    masks = fed.data.train_mask | fed.data.val_mask | fed.data.test_mask
    assert not bool(masks[~kept].any())  # nodes no client holds are in no split
    assert int(sum(c.train_mask.sum() for c in fed.clients)) == int(fed.data.train_mask.sum()) <= 1208


def test_build_clients_on_the_tiny_graph(tiny_graph):
    assignment = torch.tensor([0, 0, 1, 1, -1, 0])
    clients = build_clients(tiny_graph, assignment, keep_cross_edges=True)
    assert [c.global_id.tolist() for c in clients] == [[0, 1, 5], [2, 3]]
    assert sorted(map(tuple, clients[0].edge_index.t().tolist())) == [(0, 1), (1, 0)]  # 0-1; 5 has no edge to 0/1
    assert sorted(map(tuple, clients[1].edge_index.t().tolist())) == [(0, 1), (1, 0)]  # global 2-3
    assert sorted(map(tuple, clients[0].cross_edge_index.t().tolist())) == [(0, 2), (1, 2), (5, 3)]
    assert sorted(map(tuple, clients[1].cross_edge_index.t().tolist())) == [(2, 0), (2, 1), (3, 5)]
    assert torch.equal(clients[1].x, tiny_graph.x[[2, 3]])
    # interconnections: external nodes with their owners, global degrees (node 4 is held by no client)
    assert clients[0].external_id.tolist() == [2, 3] and clients[0].external_owner.tolist() == [1, 1]
    assert clients[1].external_id.tolist() == [0, 1, 5] and clients[1].external_owner.tolist() == [0, 0, 0]
    assert clients[0].global_degree.tolist() == [2, 2, 1]  # node 5: its edge to 4 leads to no client
    assert clients[1].global_degree.tolist() == [3, 2]
    blocks = cross_blocks(clients[1])
    assert list(blocks) == [0] and sorted(map(tuple, blocks[0].t().tolist())) == [(0, 0), (0, 1), (1, 5)]
    summary = interconnection_summary(clients).set_index("client")
    assert summary.loc["0", ["intra_edges", "cross_edges", "external_nodes"]].tolist() == [2, 3, 2]
    assert summary.loc["total", "cross_share"] == pytest.approx(6 / 10)
    with pytest.raises(ValueError, match="keep_cross_edges"):
        interconnection_summary(build_clients(tiny_graph, assignment))


def test_interconnections_of_cora_agree_with_the_global_graph():
    config = ExperimentConfig(dataset="Cora", partition="random", num_clients=5, split="global_random",
                              split_ratios=[0.1, 0.1, 0.8], seed=3)
    fed = build_federation(config, keep_cross_edges=True)
    degree = torch.bincount(fed.data.edge_index[0], minlength=fed.data.num_nodes)
    a = fed.assignment
    for k, client in enumerate(fed.clients):
        assert torch.equal(client.global_degree, degree[client.global_id])
        assert bool((client.external_owner != k).all()) and torch.equal(client.external_owner, a[client.external_id])
        blocks = cross_blocks(client)
        assert sum(b.size(1) for b in blocks.values()) == client.cross_edge_index.size(1)
        for j, block in blocks.items():
            assert bool((a[block[1]] == j).all()) and bool((a[client.global_id[block[0]]] == k).all())
            # A_kj = A_jk^T: the other end holds the same edges reversed
            back = cross_blocks(fed.clients[j])[k]
            mine = {(int(client.global_id[u]), int(v)) for u, v in block.t().tolist()}
            theirs = {(int(v), int(fed.clients[j].global_id[u])) for u, v in back.t().tolist()}
            assert mine == theirs
    summary = interconnection_summary(fed.clients)
    share = summary.set_index("client").loc["total", "cross_share"]
    src, dst = fed.data.edge_index
    assert share == pytest.approx(float((a[src] != a[dst]).float().mean()))
    assert 0.7 < share < 0.9  # random assignment to 5 clients cuts about 4/5 of the edges


def test_graph_federation_on_mutag():
    config = ExperimentConfig(dataset="MUTAG", partition="label_skew", num_clients=3, split="graph_stratified",
                              split_ratios=[0.8, 0.1, 0.1], partition_options={"alpha": 1.0}, seed=4)
    fed = build_federation(config)
    assert isinstance(fed, GraphFederation) and fed.task == "graph" and fed.name == "MUTAG"
    assert [c.name for c in fed.clients] == ["0-MUTAG", "1-MUTAG", "2-MUTAG"]
    assert sum(len(c.graphs) for c in fed.clients) == 188
    for client in fed.clients:
        assert (client.num_features, client.num_classes) == (7, 2)
        ids = torch.cat([client.train_idx, client.val_idx, client.test_idx])
        assert sorted(ids.tolist()) == list(range(len(client.graphs)))
        assert len(client.train_idx) >= 0.75 * len(client.graphs)
    single = build_federation(ExperimentConfig(dataset="MUTAG", partition="by_dataset", num_clients=1,
                                               split="graph_stratified", split_ratios=[0.8, 0.1, 0.1], seed=4))
    client = single.clients[0]
    assert client.name == "MUTAG"
    assert (len(client.train_idx), len(client.val_idx), len(client.test_idx)) == (150, 19, 19)
    # the run seed does not move FedStar's split (fixed data seed 123)
    other = build_federation(ExperimentConfig(dataset="MUTAG", partition="by_dataset", num_clients=1,
                                              split="graph_stratified", split_ratios=[0.8, 0.1, 0.1], seed=5))
    assert torch.equal(other.clients[0].train_idx, client.train_idx)


def test_mismatched_task_settings_are_config_errors():
    with pytest.raises(ConfigError, match="graph-level split"):
        build_federation(ExperimentConfig(dataset="Cora", split="graph_stratified"))
    with pytest.raises(ConfigError, match="graph-level partitioner"):
        build_federation(ExperimentConfig(dataset="Cora", partition="by_dataset"))
    with pytest.raises(ConfigError, match="node-level split"):
        build_federation(ExperimentConfig(dataset="MUTAG", partition="by_dataset", num_clients=1))
    with pytest.raises(ConfigError, match="unknown option 'dlta'"):
        build_federation(ExperimentConfig(dataset="Cora", partition_options={"dlta": 1}))
