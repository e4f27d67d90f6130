"""FedStar adapted to node classification (FedSpray's Table 2 baseline): encodings, model, algorithm."""
from __future__ import annotations

import copy

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.nn import SGConv
from torch_geometric.utils import to_undirected

import fglcore.algorithms.fedstar_node as fedstar_node
from fglcore.algorithms import ALGORITHMS
from fglcore.algorithms.fedstar_node import client_structure_encoding
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.data.federation import build_federation
from fglcore.data.structure import StructureEncoding
from fglcore.fl.channel import Channel
from fglcore.models.fedstar import is_structure_parameter
from fglcore.models.fedstar_node import NodeFeatureStructureGNN
from fglcore.models.partly_cached_sgconv import PartlyCachedSGConv
from fglcore.models.sparse_input import SPARSE_ENV

CPU = torch.device("cpu")
NODE = dict(dataset="Cora", partition="louvain", num_clients=3, hidden=16, rounds=2, local_epochs=2, lr=0.003,
            algorithm="fedstar_node")


def config(**changes) -> ExperimentConfig:
    return ExperimentConfig.from_dict({**NODE, **changes})


def undirected(pairs: list[tuple[int, int]], num_nodes: int) -> Data:
    edges = torch.tensor(pairs, dtype=torch.long).t()
    return Data(edge_index=to_undirected(edges, num_nodes=num_nodes), num_nodes=num_nodes)


def run(cfg: ExperimentConfig, federation):
    algorithm = ALGORITHMS.get(cfg.algorithm)(cfg, federation, CPU)
    return algorithm, algorithm.run(Channel())


@pytest.fixture(scope="module")
def cora3():
    return build_federation(config())


@pytest.fixture(scope="module")
def gcn_run(cora3):
    return run(config(), cora3)


def parameters(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


# --------------------------------------------------------------------------- structure encodings of a subgraph


def test_encodings_of_a_path_and_a_triangle_are_random_walk_returns_then_degree_slots():
    steps = torch.arange(1, 17).double()
    path = client_structure_encoding(undirected([(0, 1), (1, 2)], 3), StructureEncoding(), cache=False)
    assert path.shape == (3, 32) and path.dtype == torch.float32
    even = (steps % 2 == 0).float()
    assert torch.allclose(path[:, :16], torch.stack([0.5 * even, even, 0.5 * even]))  # RWSE first (code order)
    assert torch.equal(path[:, 16:].argmax(1), torch.tensor([0, 1, 0]))  # degrees 1, 2, 1 -> slots 0, 1, 0
    assert torch.equal(path[:, 16:].sum(1), torch.ones(3))
    triangle = client_structure_encoding(undirected([(0, 1), (1, 2), (2, 0)], 3), StructureEncoding(), cache=False)
    returns = 1 / 3 + 2 / 3 * (-0.5) ** steps  # p_k = (1 - p_{k-1}) / 2, p_0 = 1
    assert torch.allclose(triangle[:, :16], returns.float().expand(3, -1), atol=1e-7)
    assert torch.equal(triangle[:, 16:].argmax(1), torch.ones(3, dtype=torch.long))


def test_encoding_options_set_widths_and_clip_degrees():
    star = undirected([(0, leaf) for leaf in range(1, 6)], 7)  # centre of degree 5, node 6 isolated
    dg = client_structure_encoding(star, StructureEncoding(kind="dg", degree_slots=3), cache=False)
    assert dg.shape == (7, 3)
    assert torch.equal(dg.argmax(1), torch.tensor([2, 0, 0, 0, 0, 0, 0]))  # >= 3 -> last slot; isolated -> first
    rw = client_structure_encoding(star, StructureEncoding(kind="rw", rw_steps=4), cache=False)
    assert rw.shape == (7, 4) and torch.equal(rw[6], torch.zeros(4))  # isolated: 1/0 := 0, never returns
    assert torch.allclose(rw[0], torch.tensor([0.0, 1.0, 0.0, 1.0]))  # the centre is back after 2 steps
    ones = client_structure_encoding(star, StructureEncoding(kind="ones", ones_width=5), cache=False)
    assert torch.equal(ones, torch.ones(7, 5))


# --------------------------------------------------------------------------- the model


def test_partly_cached_sgc_equals_sgc_on_the_concatenation_in_values_and_gradients():
    graph = undirected([(0, 1), (1, 2), (2, 3), (3, 0), (0, 2), (4, 1)], 5)
    torch.manual_seed(0)
    x = torch.randn(5, 3)
    reference = SGConv(5, 2, K=2)
    layer = PartlyCachedSGConv(5, 2, K=2, fixed_channels=3)
    layer.lin.load_state_dict(reference.lin.state_dict())
    for _ in range(2):  # the second call uses the cached S^K x with new structure states
        g = torch.randn(5, 2, requires_grad=True)
        g_ref = g.detach().clone().requires_grad_()
        out, expected = layer.forward_parts(x, g, graph.edge_index), reference(torch.cat([x, g_ref], 1), graph.edge_index)
        assert torch.allclose(out, expected, atol=1e-6)
        (out.square().sum()).backward()
        (expected.square().sum()).backward()
        assert torch.allclose(g.grad, g_ref.grad, atol=1e-6)
        assert torch.allclose(layer.lin.weight.grad, reference.lin.weight.grad, atol=1e-5)
        layer.zero_grad(), reference.zero_grad()
    assert torch.allclose(layer(torch.cat([x, g], 1), graph.edge_index), reference(torch.cat([x, g], 1), graph.edge_index),
                          atol=1e-6)


@pytest.mark.parametrize("width", [1, 7, 64])
def test_partly_cached_sgc_propagates_as_torch_sparse_mm_bit_for_bit(width):
    # The trained part goes through spmm with a kept transpose; values and gradients must be those of
    # torch.sparse.mm's sequential sums (reduce "sum") exactly (a directed graph, so a wrong transpose shows in the
    # gradient). Its plain CSR product may go to MKL, which sums in another order on some CPUs (AVX-512): close.
    generator = torch.Generator().manual_seed(width)
    n = 60
    edge_index = torch.randint(0, n, (2, 400), generator=generator)
    layer = PartlyCachedSGConv(3 + width, 4, K=2, fixed_channels=3)
    layer.forward_parts(torch.rand(n, 3, generator=generator), torch.rand(n, width, generator=generator), edge_index)
    adjacency = layer._cached_adjacency
    g = torch.randn(n, width, generator=generator, requires_grad=True)
    g_ref = g.detach().clone().requires_grad_()
    upstream = torch.randn(n, width, generator=generator)
    out = layer._propagate_k(g)
    expected = torch.sparse.mm(adjacency, torch.sparse.mm(adjacency, g_ref, "sum"), "sum")
    out.backward(upstream)
    expected.backward(upstream)
    assert torch.equal(out.view(torch.int32), expected.view(torch.int32))
    assert torch.equal(g.grad.view(torch.int32), g_ref.grad.view(torch.int32))
    plain = torch.sparse.mm(adjacency, torch.sparse.mm(adjacency, g.detach()))
    assert torch.allclose(out, plain, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backbone, layers", [("gcn", 2), ("sage", 2), ("sgc", 1)])
def test_structure_channel_never_reads_features(backbone, layers):
    graph = undirected([(0, 1), (1, 2), (2, 3)], 4)
    torch.manual_seed(0)
    model = NodeFeatureStructureGNN(6, 32, 8, 3, num_layers=2, backbone=backbone, cached=True).eval()
    s = torch.rand(4, 32)
    assert len(model.structure_convs) == len(model.feature_convs) == layers
    assert model(torch.randn(4, 6), s, graph.edge_index).shape == (4, 3)
    first = model.structure_states(s, graph.edge_index)
    model(torch.randn(4, 6), s, graph.edge_index)
    assert all(torch.equal(a, b) for a, b in zip(first, model.structure_states(s, graph.edge_index)))
    assert all(state.abs().max() < 1 for state in first)  # tanh
    shared = {n for n, _ in model.named_parameters() if is_structure_parameter(n)}
    assert shared and all(n.startswith("structure_convs.") for n in shared)
    with pytest.raises(ValueError, match="accepted: gcn, sgc, sage"):
        NodeFeatureStructureGNN(6, 32, 8, 3, backbone="gat")


# --------------------------------------------------------------------------- the algorithm


def test_only_the_structure_channel_travels(gcn_run, cora3):
    algorithm, result = gcn_run
    model = algorithm.clients[0].model
    structure = {n for n, _ in model.named_parameters() if n.startswith("structure_convs.")}
    assert len(structure) == 4  # two GCN layers, weight and bias each
    assert result.ledger.names(sender="server") == structure
    assert result.ledger.names(sender="clients") == structure | {"num_samples"}
    own = [parameters(c.model) for c in algorithm.clients]
    server = algorithm.server.parameters
    assert all(torch.equal(p[n], server[n]) for p in own for n in structure)
    assert not torch.equal(own[0]["feature_convs.0.lin.weight"], own[1]["feature_convs.0.lin.weight"])
    assert [row["num_samples"] for row in result.per_client] == [int(c.train_mask.sum()) for c in cora3.clients]
    assert 0.2 < result.metrics["test_accuracy"] <= 1


def test_deterministic_and_adam_state_kept_across_rounds(gcn_run, cora3):
    algorithm, result = gcn_run
    _, again = run(config(), cora3)
    _, other = run(config(seed=1), cora3)
    assert again.history == result.history and again.metrics == result.metrics
    assert other.history != result.history
    steps = {int(state["step"]) for state in algorithm.clients[0].trainer.optimizer.state.values()}
    assert steps == {NODE["rounds"] * NODE["local_epochs"]}


def test_encodings_are_computed_once_per_client(monkeypatch, cora3):
    calls = []

    def counting(data, encoding, **kwargs):
        calls.append(encoding)
        return client_structure_encoding(data, encoding, **kwargs)

    monkeypatch.setattr(fedstar_node, "client_structure_encoding", counting)
    algorithm, _ = run(config(rounds=3, local_epochs=1, algorithm_options={"encoding": "dg"}), cora3)
    assert len(calls) == len(cora3.clients) and calls[0] == StructureEncoding(kind="dg")
    trainer = algorithm.clients[1].trainer
    assert torch.equal(trainer.s, client_structure_encoding(cora3.clients[1], StructureEncoding(kind="dg")))
    assert algorithm.clients[1].model.structure_convs[0].in_channels == 16


@pytest.mark.parametrize("model", ["sgc", "sage"])
def test_other_backbones_share_their_structure_layers(cora3, model):
    algorithm, result = run(config(model=model, rounds=1, local_epochs=1), cora3)
    names = {n for n, _ in algorithm.clients[0].model.named_parameters()}
    assert result.ledger.names(sender="server") == {n for n in names if n.startswith("structure_convs.")}
    assert 0 < result.metrics["test_accuracy"] <= 1


def test_sharing_ablations(cora3):
    algorithm, result = run(config(rounds=1, local_epochs=1, algorithm_options={"share": "none"}), cora3)
    assert algorithm.server is None and len(result.ledger) == 0
    algorithm, result = run(config(rounds=1, local_epochs=1, algorithm_options={"share": "all"}), cora3)
    assert result.ledger.names(sender="server") == {n for n, _ in algorithm.clients[0].model.named_parameters()}


def test_bad_settings_are_refused_with_the_accepted_values():
    with pytest.raises(ConfigError, match="accepted: gcn, sgc, sage"):
        config(model="gat")
    with pytest.raises(ConfigError, match="accepted: rw_dg, rw, dg, ones"):
        config(algorithm_options={"encoding": "laplacian"})
    with pytest.raises(ConfigError, match="algorithm_options.rw_steps: must be an integer >= 1"):
        config(algorithm_options={"rw_steps": 0})
    with pytest.raises(ConfigError, match="supports node tasks"):
        config(dataset="MUTAG", partition="by_dataset", split="graph_stratified")


@pytest.mark.parametrize("model", ["gcn", "sage", "sgc"])
def test_fast_path_gives_the_plain_paths_numbers_bit_for_bit(cora3, monkeypatch, model):
    # Dense features: on registered sparse ones the fast path's first layer also skips the [x || g]
    # concatenation, the same sums in another order (tests/test_sparse_input.py checks it to 1e-5).
    monkeypatch.setenv(SPARSE_ENV, "0")
    unregistered = copy.deepcopy(cora3)  # the fixture's features were registered by earlier tests
    states, histories = {}, {}
    for fast in ("1", "0"):
        monkeypatch.setenv("FGL_GRAPH_FAST", fast)
        algorithm, result = run(config(model=model), unregistered)
        assert (fast == "1") == (algorithm.clients[0].trainer.graph is not algorithm.clients[0].trainer.edge_index)
        states[fast] = [parameters(c.model) for c in algorithm.clients]
        histories[fast] = result.history
    assert histories["1"] == histories["0"]
    for fast_client, plain_client in zip(states["1"], states["0"]):
        assert all(torch.equal(fast_client[name], plain_client[name]) for name in plain_client)
