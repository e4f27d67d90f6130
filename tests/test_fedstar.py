"""FedStar: structure encodings, the decoupled model, the fedstar algorithm, and the FedPer baseline."""
from __future__ import annotations

import types

import pytest
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.transforms import AddRandomWalkPE
from torch_geometric.utils import erdos_renyi_graph, to_undirected

import fglcore.algorithms.fedstar as fedstar_module
import fglcore.data.structure as structure
from fglcore.algorithms import ALGORITHMS
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.data.datasets import load_graph_dataset
from fglcore.data.federation import GraphClient, GraphFederation, NodeFederation, build_clients
from fglcore.data.splits import graph_split_indices
from fglcore.data.structure import StructureEncoding, degree_encoding, encode_graphs, random_walk_encoding
from fglcore.fl.channel import Channel
from fglcore.models.fedstar import FeatureStructureGNN, is_structure_parameter

CPU = torch.device("cpu")
GRAPH = dict(dataset="MUTAG", partition="by_dataset", split="graph_stratified", hidden=16, num_layers=2,
             rounds=2, local_epochs=1, batch_size=32, lr=1e-3, selection="last", algorithm="fedstar")


def config(**changes) -> ExperimentConfig:
    return ExperimentConfig.from_dict({**GRAPH, **changes})


def undirected(pairs: list[tuple[int, int]], num_nodes: int) -> Data:
    edges = torch.tensor(pairs, dtype=torch.long).t() if pairs else torch.zeros(2, 0, dtype=torch.long)
    return Data(edge_index=to_undirected(edges, num_nodes=num_nodes), num_nodes=num_nodes)


@pytest.fixture(scope="module")
def three_datasets():
    """60 graphs each of MUTAG (7 features), PTC_MR (18) and BZR (53): one client per dataset."""
    clients = []
    for name in ("MUTAG", "PTC_MR", "BZR"):
        dataset = load_graph_dataset(name)
        subset = dataset[torch.randperm(len(dataset), generator=torch.Generator().manual_seed(0))[:60]]
        train, val, test = graph_split_indices(subset.y.view(-1), [0.8, 0.1, 0.1], 123)
        clients.append(GraphClient(name, name, subset, train, val, test, dataset.num_features, dataset.num_classes))
    return GraphFederation("MUTAG+PTC_MR+BZR", clients)


def run(cfg: ExperimentConfig, federation):
    algorithm = ALGORITHMS.get(cfg.algorithm)(cfg, federation, CPU)
    return algorithm, algorithm.run(Channel())


@pytest.fixture(scope="module")
def fedstar_run(three_datasets):
    return run(config(), three_datasets)


def parameters(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


# --------------------------------------------------------------------------- structure encodings


def test_random_walk_return_probabilities_of_a_path_and_a_triangle_are_exact():
    steps = torch.arange(1, 17)
    even = (steps % 2 == 0).float()
    path = random_walk_encoding(undirected([(0, 1), (1, 2)], 3).edge_index, 3)
    assert torch.allclose(path[0], 0.5 * even) and torch.allclose(path[2], 0.5 * even)
    assert torch.allclose(path[1], even)  # the middle node is back after every even number of steps
    triangle = random_walk_encoding(undirected([(0, 1), (1, 2), (2, 0)], 3).edge_index, 3)
    expected = 1 / 3 + 2 / 3 * (-0.5) ** steps.double()  # p_k = (1 - p_{k-1}) / 2, p_0 = 1
    assert torch.allclose(triangle, expected.float().expand(3, -1), atol=1e-7)


def test_degree_one_hots_clip_high_degrees_and_put_isolated_nodes_in_the_first_slot():
    star = undirected([(0, leaf) for leaf in range(1, 21)] + [(21, 22)], 24)  # node 23 is isolated
    dse = degree_encoding(star.edge_index, 24)
    assert dse.shape == (24, 16) and torch.equal(dse.sum(1), torch.ones(24))
    assert dse[0].argmax() == 15  # degree 20 -> the ">= 16" slot
    assert dse[1].argmax() == 0 and dse[23].argmax() == 0  # degree 1 and degree 0 share slot 0
    path = degree_encoding(undirected([(0, 1), (1, 2)], 3).edge_index, 3)
    assert path.argmax(1).tolist() == [0, 1, 0]
    rwse = random_walk_encoding(star.edge_index, 24)
    assert torch.equal(rwse[23], torch.zeros(16))  # isolated: 1/0 := 0
    assert torch.allclose(rwse[0, 1::2], torch.ones(8)) and torch.allclose(rwse[1, 1::2], torch.full((8,), 1 / 20))


def test_random_walk_encoding_matches_pyg_on_a_random_graph():
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        edge_index = erdos_renyi_graph(40, 0.08)
    ours = random_walk_encoding(edge_index, 40)
    pyg = AddRandomWalkPE(walk_length=16)(Data(edge_index=edge_index, num_nodes=40)).random_walk_pe
    assert torch.allclose(ours, pyg, atol=1e-6)


def test_variants_have_their_widths_and_rw_dg_is_rwse_then_dse():
    graph = undirected([(0, 1), (1, 2), (2, 0), (2, 3)], 5)
    rw, dg = random_walk_encoding(graph.edge_index, 5), degree_encoding(graph.edge_index, 5)
    both = StructureEncoding("rw_dg")(graph.edge_index, 5)
    assert both.shape == (5, 32) and torch.equal(both, torch.cat([rw, dg], 1))
    assert torch.equal(StructureEncoding("rw")(graph.edge_index, 5), rw)
    assert torch.equal(StructureEncoding("dg")(graph.edge_index, 5), dg)
    assert torch.equal(StructureEncoding("ones")(graph.edge_index, 5), torch.ones(5, 32))
    assert [StructureEncoding(k).width for k in ("rw_dg", "rw", "dg", "ones")] == [32, 16, 16, 32]
    assert StructureEncoding("rw_dg", rw_steps=8, degree_slots=4).width == 12
    with pytest.raises(ConfigError, match="accepted: rw_dg, rw, dg, ones"):
        StructureEncoding("degree")
    with pytest.raises(ConfigError, match="rw_steps: must be an integer >= 1"):
        StructureEncoding(rw_steps=0)


def test_many_graphs_are_encoded_as_one_block_diagonal_graph_in_chunks():
    graphs = [undirected([(0, 1), (1, 2)], 3), undirected([(0, 1), (1, 2), (2, 0)], 3),
              undirected([], 2), undirected([(0, 1), (1, 2), (2, 3), (3, 0), (0, 2)], 4)]
    one_by_one = [StructureEncoding()(g.edge_index, g.num_nodes) for g in graphs]
    for chunk_nodes in (1, 5, 100):
        together = structure.structure_encodings(graphs, cache=False, chunk_nodes=chunk_nodes)
        assert all(torch.equal(a, b) for a, b in zip(together, one_by_one))


def test_encodings_are_cached_on_disk_and_attached_to_copies(monkeypatch, tmp_path):
    monkeypatch.setenv("FGL_DATA", str(tmp_path))
    graphs = [undirected([(0, 1), (1, 2)], 3), undirected([(0, 1), (1, 2), (2, 0)], 3)]
    first = encode_graphs(graphs)
    assert all("s" not in g for g in graphs)  # the originals are left alone
    assert [tuple(g.s.shape) for g in first] == [(3, 32), (3, 32)]
    assert first[0].edge_index is graphs[0].edge_index  # shallow copies share the rest
    files = list((tmp_path / "_fglcore_cache" / "structure").glob("*.pt"))
    assert len(files) == 1

    def fail(*args, **kwargs):
        raise AssertionError("recomputed instead of read from the cache")

    monkeypatch.setattr(structure, "random_walk_encoding", fail)
    again = encode_graphs(graphs)
    assert all(torch.equal(a.s, b.s) for a, b in zip(first, again))
    encode_graphs(graphs, StructureEncoding("dg"))  # degrees alone are cheap: never cached
    assert len(list(files[0].parent.glob("*.pt"))) == 1


# --------------------------------------------------------------------------- the decoupled model


@pytest.mark.parametrize("in_channels, num_classes, total", [(7, 2, 64_898), (89, 2, 70_146), (2, 15, 65_423)])
def test_parameter_counts_match_fedstar_table_9(in_channels, num_classes, total):
    model = FeatureStructureGNN(in_channels, 32, 64, num_classes, num_layers=3)
    assert sum(p.numel() for p in model.parameters()) == total
    shared = {name: p for name, p in model.named_parameters() if is_structure_parameter(name)}
    assert sum(p.numel() for p in shared.values()) == 14_592  # FC(32, 64) + 3 x GCN(64, 64)
    assert {name.split(".")[0] for name in shared} == {"structure_encoder", "structure_convs"}


def test_model_shapes_and_the_structure_channel_ignores_features():
    torch.manual_seed(0)
    graphs = [undirected([(0, 1), (1, 2)], 3), undirected([(0, 1), (1, 2), (2, 3), (3, 0)], 4)]
    batch = Batch.from_data_list(encode_graphs(graphs, StructureEncoding("dg"), cache=False))
    x = torch.randn(batch.num_nodes, 5)
    model = FeatureStructureGNN(5, 16, 8, 3, num_layers=2).eval()
    assert model(x, batch.s, batch.edge_index, batch.batch).shape == (2, 3)
    assert model(x[:3], batch.s[:3], graphs[0].edge_index).shape == (1, 3)  # one graph, batch=None
    h, g = model.node_embeddings(x, batch.s, batch.edge_index)
    _, g_other = model.node_embeddings(torch.randn_like(x), batch.s, batch.edge_index)
    assert h.shape == g.shape == (7, 8) and torch.equal(g, g_other)


def test_fusion_order_differs_only_by_the_fusion_bias():
    graph = undirected([(0, 1), (1, 2), (2, 3)], 4)
    s = StructureEncoding()(graph.edge_index, 4)
    x = torch.randn(4, 5)
    paper = FeatureStructureGNN(5, 32, 8, 2, num_layers=2).eval()
    code = FeatureStructureGNN(5, 32, 8, 2, num_layers=2, fusion_before_pooling=True).eval()
    code.load_state_dict(paper.state_dict())
    assert not torch.allclose(paper(x, s, graph.edge_index), code(x, s, graph.edge_index))
    with torch.no_grad():
        paper.fusion.bias.zero_()
        code.fusion.bias.zero_()
    assert torch.allclose(paper(x, s, graph.edge_index), code(x, s, graph.edge_index), atol=1e-5)


@pytest.mark.parametrize("feature_conv, structure_conv", [("gcn", "gin"), ("sage", "sage")])
def test_other_backbones_of_table_10_build_and_run(feature_conv, structure_conv):
    graph = undirected([(0, 1), (1, 2)], 3)
    model = FeatureStructureGNN(4, 16, 8, 2, num_layers=2, feature_conv=feature_conv, structure_conv=structure_conv)
    assert model(torch.randn(3, 4), torch.ones(3, 16), graph.edge_index).shape == (1, 2)
    with pytest.raises(ValueError, match="accepted: gin, gcn, sage"):
        FeatureStructureGNN(4, 16, 8, 2, feature_conv="gat")


# --------------------------------------------------------------------------- the fedstar algorithm


def test_fedstar_sends_only_the_structure_channel(fedstar_run, three_datasets):
    algorithm, result = fedstar_run
    model = algorithm.clients[0].model
    structure_names = {n for n, _ in model.named_parameters() if n.startswith(("structure_encoder.", "structure_convs."))}
    assert len(structure_names) == 6  # Linear + 2 GCN layers, weight and bias each
    assert result.ledger.names(sender="server") == structure_names
    assert result.ledger.names(sender="clients") == structure_names | {"num_samples"}
    first, second, third = (parameters(c.model) for c in algorithm.clients)
    server = algorithm.server.parameters
    assert all(torch.equal(own[n], server[n]) for own in (first, second, third) for n in structure_names)
    assert not torch.equal(first["feature_convs.0.nn.0.weight"], second["feature_convs.0.nn.0.weight"])
    assert first["feature_encoder.weight"].shape != third["feature_encoder.weight"].shape
    assert [row["num_samples"] for row in result.per_client] == [len(c.train_idx) for c in three_datasets.clients]
    assert result.selected_round == GRAPH["rounds"]  # config.selection = "last"


def test_fedstar_is_deterministic_and_keeps_adam_state(fedstar_run, three_datasets):
    algorithm, result = fedstar_run
    _, again = run(config(), three_datasets)
    _, other = run(config(seed=1), three_datasets)
    assert again.history == result.history and again.metrics == result.metrics
    assert other.history != result.history
    trainer = algorithm.clients[0].trainer
    batches_per_round = -(-trainer.num_train_samples // GRAPH["batch_size"])
    steps = {int(state["step"]) for state in trainer.optimizer.state.values()}
    assert steps == {GRAPH["rounds"] * batches_per_round}


def test_fedstar_encodes_each_client_once_and_batches_carry_s(monkeypatch, three_datasets):
    calls = []

    def counting(graphs, encoding, **kwargs):
        calls.append(encoding)
        return structure.encode_graphs(graphs, encoding, **kwargs)

    monkeypatch.setattr(fedstar_module, "encode_graphs", counting)
    algorithm, _ = run(config(rounds=3, algorithm_options={"encoding": "dg"}), three_datasets)
    assert len(calls) == len(three_datasets.clients)
    trainer = algorithm.clients[0].trainer
    assert trainer.train_set.values["s"].shape[1] == 16
    assert algorithm.clients[0].model.structure_encoder.in_features == 16


@pytest.mark.parametrize(
    "share, prefixes",
    [("feature", ("feature_convs.", "fusion.")), ("all", ("feature_convs.", "fusion.", "structure_"))],
)
def test_fedstar_table_2_sharing_variants(three_datasets, share, prefixes):
    algorithm, result = run(config(rounds=1, algorithm_options={"share": share}), three_datasets)
    expected = {n for n, _ in algorithm.clients[0].model.named_parameters() if n.startswith(prefixes)}
    assert result.ledger.names(sender="server") == expected


def test_fedstar_without_sharing_sends_nothing(three_datasets):
    algorithm, result = run(config(rounds=1, algorithm_options={"share": "none"}), three_datasets)
    assert algorithm.server is None and len(result.ledger) == 0


def test_fedstar_refuses_bad_options_and_node_tasks(three_datasets):
    with pytest.raises(ConfigError, match="algorithm_options.rw_steps: must be an integer >= 1"):
        config(algorithm_options={"rw_steps": 0})
    with pytest.raises(ConfigError, match="accepted: structure, feature, all, none"):
        config(algorithm_options={"share": "gcn"})
    with pytest.raises(ConfigError, match="supports graph tasks"):
        ALGORITHMS.get("fedstar")(config(), types.SimpleNamespace(task="node", clients=[]), CPU)


# --------------------------------------------------------------------------- FedPer


def test_fedper_on_graphs_shares_the_convolutions_only(three_datasets):
    algorithm, result = run(config(algorithm="fedper", model="gin"), three_datasets)
    convs = {n for n, _ in algorithm.clients[0].model.named_parameters() if n.startswith("convs.")}
    assert result.ledger.names(sender="server") == convs
    assert result.ledger.names(sender="clients") == convs | {"num_samples"}
    first, second = (parameters(c.model) for c in algorithm.clients[:2])
    assert all(torch.equal(first[n], second[n]) for n in convs)
    assert not torch.equal(first["head.0.weight"], second["head.0.weight"])  # personal heads drift apart
    with pytest.raises(ConfigError, match="body='convs'"):
        ALGORITHMS.get("fedper")(config(algorithm="fedper", model="gin", algorithm_options={"body": "all_but_head"}),
                                 three_datasets, CPU).build(Channel())


@pytest.fixture
def tiny_nodes(tiny_graph):
    data = tiny_graph.clone()
    data.train_mask = torch.tensor([True, True, False, True, True, False])
    data.val_mask = torch.tensor([False, False, True, False, False, False])
    data.test_mask = torch.tensor([False, False, False, False, False, True])
    assignment = torch.tensor([0, 0, 0, 1, 1, 1])
    return NodeFederation("tiny", data, build_clients(data, assignment), 2, 6, assignment)


def test_fedper_on_nodes_keeps_the_last_layer_personal(tiny_nodes):
    cfg = ExperimentConfig.from_dict(dict(dataset="Cora", partition="louvain", num_clients=2, hidden=8,
                                          num_layers=3, rounds=2, local_epochs=1, algorithm="fedper"))
    algorithm, result = run(cfg, tiny_nodes)
    names = {n for n, _ in algorithm.clients[0].model.named_parameters()}
    assert result.ledger.names(sender="server") == {n for n in names if not n.startswith("convs.2.")}
    with pytest.raises(ConfigError, match="no base layer"):
        ALGORITHMS.get("fedper")(cfg.replace(num_layers=1), tiny_nodes, CPU).build(Channel())
    with pytest.raises(ConfigError, match="SGC has no layer list 'convs'"):
        ALGORITHMS.get("fedper")(cfg.replace(model="sgc"), tiny_nodes, CPU).build(Channel())
