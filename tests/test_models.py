"""fglcore.models: every model builds and runs, is reproducible, and matches its definition."""
from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.nn import APPNP
from torch_geometric.utils import to_dense_adj

from fglcore.config import ConfigError
from fglcore.models import MODELS, GraphClassifier, Propagation, build_model, model_names
from fglcore.registry import UnknownNameError

NODE_MODELS = ["1gnn", "appnp_mlp", "decoupled_gcn", "gat", "gcn", "gin", "mlp", "sage", "sgc", "ssgc"]
GRAPH_MODELS = ["gat", "gcn", "gin", "mlp", "sage"]
MODEL_LISTS = ["hetero", "hetero_paper"]  # per-client lists (tests/test_hetero_models.py), not built here
ALL_BUILDS = [(n, "node") for n in NODE_MODELS] + [(n, "graph") for n in GRAPH_MODELS]


@pytest.fixture
def graph_batch(tiny_graph):
    """Two graphs: the two-triangle graph and a 3-node path, 6 features each."""
    path = Data(x=torch.rand(3, 6, generator=torch.Generator().manual_seed(1)),
                edge_index=torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]]), num_nodes=3)
    return Batch.from_data_list([Data(x=tiny_graph.x, edge_index=tiny_graph.edge_index), path])


def run(model, data, task):
    if task == "node":
        return model(data.x, data.edge_index)
    return model(data.x, data.edge_index, data.batch)


def build(name, task, **kwargs):
    kwargs.setdefault("hidden_channels", 16)
    return build_model(name, 6, kwargs.pop("hidden_channels"), 3, task=task, **kwargs)


def test_registry_holds_the_documented_models():
    assert model_names() == sorted(NODE_MODELS + MODEL_LISTS)
    assert model_names("node") == sorted(NODE_MODELS + MODEL_LISTS)
    assert model_names("graph") == sorted(GRAPH_MODELS)


@pytest.mark.parametrize("name,task", ALL_BUILDS)
def test_forward_shape(name, task, tiny_graph, graph_batch):
    data = tiny_graph if task == "node" else graph_batch
    model = build(name, task).eval()
    out = run(model, data, task)
    assert out.shape == ((6, 3) if task == "node" else (2, 3))
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("name,task", ALL_BUILDS)
def test_reset_parameters_draws_new_weights(name, task):
    model = build(name, task)
    before = [p.detach().clone() for p in model.parameters()]
    model.reset_parameters()
    after = list(model.parameters())
    assert len(before) == len(after) > 0
    assert any(not torch.equal(b, a) for b, a in zip(before, after))


@pytest.mark.parametrize("name,task", ALL_BUILDS)
def test_seeded_builds_are_identical(name, task):
    torch.manual_seed(7)
    first = build(name, task).state_dict()
    torch.manual_seed(7)
    second = build(name, task).state_dict()
    assert first.keys() == second.keys()
    assert all(torch.equal(first[k], second[k]) for k in first)


def test_seed_argument_is_private_and_reproducible():
    torch.manual_seed(0)
    expected_next = torch.rand(1)
    torch.manual_seed(0)
    a = build("gcn", "node", seed=3).state_dict()
    assert torch.equal(torch.rand(1), expected_next)  # the global stream was not touched
    b = build("gcn", "node", seed=3).state_dict()
    c = build("gcn", "node", seed=4).state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)


@pytest.mark.parametrize("name", NODE_MODELS)
def test_node_models_fit_the_tiny_graph(name, tiny_graph):
    model = build(name, "node", dropout=0.0, seed=0)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    for _ in range(60):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(run(model, tiny_graph, "node"), tiny_graph.y)
        loss.backward()
        optimizer.step()
    assert (run(model.eval(), tiny_graph, "node").argmax(-1) == tiny_graph.y).all()


@pytest.mark.parametrize("name", ["gcn", "sgc", "decoupled_gcn"])
def test_cached_model_matches_uncached(name, tiny_graph):
    plain = build(name, "node", seed=0).eval()
    cached = build(name, "node", seed=0, cached=True).eval()
    expected = run(plain, tiny_graph, "node")
    for _ in range(2):  # the second call reads the cache
        torch.testing.assert_close(run(cached, tiny_graph, "node"), expected)


def test_cached_model_refuses_another_graph(tiny_graph):
    model = build("gcn", "node", cached=True)
    model(tiny_graph.x, tiny_graph.edge_index)
    with pytest.raises(ValueError, match="bound to a graph with 6 nodes"):
        model(tiny_graph.x, tiny_graph.edge_index[:, :4])
    model.reset_parameters()  # forgets the graph and the cache
    assert model(tiny_graph.x, tiny_graph.edge_index[:, :4]).shape == (6, 3)


def test_mlp_ignores_the_graph(tiny_graph):
    model = build("mlp", "node").eval()
    empty = torch.empty(2, 0, dtype=torch.long)
    torch.testing.assert_close(model(tiny_graph.x, tiny_graph.edge_index), model(tiny_graph.x, empty))


def normalized_adjacency(edge_index, num_nodes, normalization):
    a = to_dense_adj(edge_index, max_num_nodes=num_nodes)[0] + torch.eye(num_nodes)
    d = a.sum(1)
    if normalization == "sym":
        return d.rsqrt().view(-1, 1) * a * d.rsqrt().view(1, -1)
    return a / d.view(-1, 1)


@pytest.mark.parametrize("normalization", ["sym", "rw"])
def test_propagation_is_a_power_of_the_normalized_adjacency(normalization, tiny_graph):
    h = torch.randn(6, 3)
    a_hat = normalized_adjacency(tiny_graph.edge_index, 6, normalization)
    expected = torch.linalg.matrix_power(a_hat, 4) @ h
    torch.testing.assert_close(Propagation(4, 0.0, normalization)(h, tiny_graph.edge_index), expected)


def test_propagation_with_teleport_is_appnp(tiny_graph):
    h = torch.randn(6, 3)
    expected = APPNP(K=5, alpha=0.1)(h, tiny_graph.edge_index)
    torch.testing.assert_close(Propagation(5, 0.1)(h, tiny_graph.edge_index), expected)


def test_decoupled_gcn_is_mlp_then_propagation(tiny_graph):
    model = build("decoupled_gcn", "node", K=3, normalization="rw").eval()
    a_hat = normalized_adjacency(tiny_graph.edge_index, 6, "rw")
    expected = torch.linalg.matrix_power(a_hat, 3) @ model.mlp(tiny_graph.x)
    torch.testing.assert_close(model(tiny_graph.x, tiny_graph.edge_index), expected)


def test_sgc_is_one_linear_layer_after_k_steps(tiny_graph):
    model = build("sgc", "node", K=3)
    a_hat = normalized_adjacency(tiny_graph.edge_index, 6, "sym")
    expected = model.conv.lin(torch.linalg.matrix_power(a_hat, 3) @ tiny_graph.x)
    torch.testing.assert_close(model(tiny_graph.x, tiny_graph.edge_index), expected)
    assert sum(p.numel() for p in model.parameters()) == 6 * 3 + 3


def test_gat_splits_the_hidden_width_over_heads():
    split = build("gat", "node", hidden_channels=64, heads=8)
    assert (split.convs[0].heads, split.convs[0].out_channels) == (8, 8)
    assert split.convs[1].in_channels == 64
    per_head = build("gat", "node", hidden_channels=16, heads=4, hidden_per_head=True)
    assert (per_head.convs[0].out_channels, per_head.convs[1].in_channels) == (16, 64)
    with pytest.raises(ValueError, match="divisible"):
        build("gat", "node", hidden_channels=10, heads=8)


def test_graph_classifier_structure_and_parameter_count():
    model = build_model("gin", 7, 64, 2, num_layers=3, task="graph")  # MUTAG-shaped, as FedStar's GIN
    assert isinstance(model, GraphClassifier)
    assert [name for name, _ in model.named_children()] == ["input_encoder", "convs", "head"]
    assert isinstance(model.input_encoder, torch.nn.Linear) and model.input_encoder.in_features == 7
    assert len(model.convs) == 3
    assert model.head[-1].out_features == 2
    assert sum(p.numel() for p in model.parameters()) == 29_762  # FedStar digest §3.2
    assert sum(p.numel() for p in model.convs.parameters()) == 24_960


def test_convs_are_shareable_across_feature_widths():
    a = build_model("gin", 7, 32, 2, task="graph", seed=0)
    b = build_model("gin", 37, 32, 6, task="graph", seed=1)
    b.convs.load_state_dict(a.convs.state_dict())  # same shapes: only the encoder and head differ
    assert all(torch.equal(p, q) for p, q in zip(a.convs.parameters(), b.convs.parameters()))


@pytest.mark.parametrize("pool", ["add", "mean"])
def test_graph_logits_depend_only_on_their_graph(pool, graph_batch):
    model = build("gin", "graph", pool=pool).eval()
    together = run(model, graph_batch, "graph")
    for i, graph in enumerate(graph_batch.to_data_list()):
        alone = model(graph.x, graph.edge_index, torch.zeros(graph.num_nodes, dtype=torch.long))
        torch.testing.assert_close(alone[0], together[i])


def test_mean_and_add_pool_differ_by_graph_size(graph_batch):
    add = build("mlp", "graph", pool="add", seed=0).eval()
    mean = build("mlp", "graph", pool="mean", seed=0).eval()
    embeddings = add.node_embeddings(graph_batch.x, graph_batch.edge_index)
    summed = torch.zeros(2, embeddings.size(1)).index_add_(0, graph_batch.batch, embeddings)
    torch.testing.assert_close(add(graph_batch.x, graph_batch.edge_index, graph_batch.batch), add.head(summed))
    sizes = torch.tensor([[6.0], [3.0]])
    averaged = mean(graph_batch.x, graph_batch.edge_index, graph_batch.batch)
    torch.testing.assert_close(averaged, mean.head(summed / sizes))


def test_unknown_model_lists_accepted_names():
    with pytest.raises(UnknownNameError) as info:
        build_model("gcnn", 6, 16, 3)
    message = str(info.value)
    assert "did you mean 'gcn'" in message
    assert all(name in message for name in NODE_MODELS)


def test_bad_options_and_tasks_are_rejected_with_the_accepted_values():
    with pytest.raises(ConfigError, match="accepted: attention_dropout, heads"):
        build("gat", "node", head=2)
    with pytest.raises(ConfigError, match="expected int"):
        build("gat", "node", heads="2")
    with pytest.raises(ConfigError, match="models for graph tasks: gat, gcn, gin, mlp, sage"):
        build("sgc", "graph")
    with pytest.raises(ConfigError, match="accepted: node, graph"):
        build("gcn", "edge")
    with pytest.raises(ConfigError, match="accepted: add, mean"):
        build("gin", "graph", pool="max")
    with pytest.raises(ConfigError, match="num_layers"):
        build("gcn", "node", num_layers=0)
    with pytest.raises(ConfigError, match="dropout"):
        build("gcn", "node", dropout=1.0)
    with pytest.raises(ConfigError, match="cached"):
        build("gcn", "graph", cached=True)
    with pytest.raises(ValueError, match="normalization"):
        build("decoupled_gcn", "node", normalization="row")


def test_options_report_documented_defaults():
    assert MODELS.get("sgc").options("node") == {"K": 2}
    assert MODELS.get("gat").options("node")["heads"] == 8
    assert MODELS.get("sage").options("node")["aggr"] == "mean"
    assert MODELS.get("decoupled_gcn").options("node")["K"] == 10
    assert MODELS.get("decoupled_gcn").options("node")["alpha"] == 0.0
    assert MODELS.get("gin").options("graph") == {"train_eps": False, "mlp_batch_norm": False, "pool": "add"}


@pytest.mark.parametrize("name,pyg_model,options", [
    ("gcn", "GCN", {}),
    ("gcn", "GCN", {"num_layers": 3, "cached": True}),
    ("gcn", "GCN", {"num_layers": 1}),
    ("sage", "GraphSAGE", {}),
    ("sage", "GraphSAGE", {"aggr": "max", "num_layers": 3}),
])
def test_gcn_and_graphsage_are_pygs_basic_gnn_models_bit_for_bit(name, pyg_model, options, tiny_graph):
    """Same seed: PyG's own model has the same parameters and, dropout included, the same outputs and gradients."""
    import torch_geometric.nn.models as pyg_models

    num_layers = options.get("num_layers", 2)
    conv_options = {k: v for k, v in options.items() if k != "num_layers"}
    torch.manual_seed(3)
    ours = build_model(name, 6, 16, 3, dropout=0.5, **options)
    torch.manual_seed(3)
    theirs = getattr(pyg_models, pyg_model)(6, 16, num_layers, 3, dropout=0.5, **conv_options)
    assert isinstance(ours, getattr(pyg_models, pyg_model))
    assert ours.state_dict().keys() == theirs.state_dict().keys()
    assert all(torch.equal(ours.state_dict()[k], theirs.state_dict()[k]) for k in ours.state_dict())
    for training in (True, False):
        outputs = []
        for model in (ours, theirs):
            model.train(training)
            model.zero_grad()
            torch.manual_seed(11)
            out = model(tiny_graph.x, tiny_graph.edge_index)
            out.square().sum().backward()
            outputs.append((out.detach(), [p.grad.clone() for p in model.parameters()]))
        assert torch.equal(outputs[0][0], outputs[1][0])
        assert all(torch.equal(a, b) for a, b in zip(outputs[0][1], outputs[1][1]))


def _model_classes():
    """``(module, class)`` for every ``nn.Module`` class defined in a file of :mod:`fglcore.models`."""
    import importlib
    import inspect
    import pkgutil

    import fglcore.models

    found = []
    for info in pkgutil.iter_modules(fglcore.models.__path__):
        module = importlib.import_module(f"fglcore.models.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and issubclass(cls, torch.nn.Module):
                found.append((info.name, cls))
    return found


# sparse_input's SparseInputLinear is swapped into the first layer of existing models (a layer internal, not a model).
NOT_MODELS = {"sparse_input"}


def test_models_are_one_per_file_with_reset_parameters_and_pyg_style_docstrings():
    classes = [(module, cls) for module, cls in _model_classes() if module not in NOT_MODELS]
    assert len(classes) >= 17
    modules = [module for module, _ in classes]
    assert len(modules) == len(set(modules)), f"more than one nn.Module in a file: {sorted(modules)}"
    for module, cls in classes:
        assert callable(getattr(cls, "reset_parameters", None)), f"{module}.{cls.__name__} has no reset_parameters()"
        doc = cls.__doc__ or ""
        assert "Shapes:" in doc and ("Args:" in doc), f"{module}.{cls.__name__}: docstring lacks Args:/Shapes:"


@pytest.mark.parametrize("name", ["sage", "mlp"])
def test_input_layer_norm_is_a_layernorm_before_the_same_model(name, tiny_graph):
    """FedStruct's official GraphSAGE and MLP baselines normalise their input (GNN_classifier.set_GNN_FPM,
    MLP_classifier.set_classifiers): the same weights applied to LayerNorm(x); off by default (no norm at all)."""
    torch.manual_seed(5)
    plain = build_model(name, 6, 16, 3, dropout=0.0).eval()
    torch.manual_seed(5)
    normed = build_model(name, 6, 16, 3, dropout=0.0, input_layer_norm=True).eval()
    assert not any("norm" in n for n, _ in plain.named_parameters())
    assert {n for n, _ in normed.named_parameters()} - {n for n, _ in plain.named_parameters()} == {
        "input_norm.weight", "input_norm.bias"}
    for key, value in plain.state_dict().items():
        assert torch.equal(value, normed.state_dict()[key]), key  # switching it on draws no random number
    x = tiny_graph.x * 3 + 1
    expected = plain(torch.nn.functional.layer_norm(x, (6,)), tiny_graph.edge_index)
    torch.testing.assert_close(normed(x, tiny_graph.edge_index), expected)
    assert not torch.allclose(plain(x, tiny_graph.edge_index), expected)
    assert MODELS.get(name).options("node")["input_layer_norm"] is False
