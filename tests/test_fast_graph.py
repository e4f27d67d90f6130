"""The sparse-operator fast path of graph classification equals the plain edge_index path."""
from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.nn import APPNP, GATConv, GCNConv, GINConv, GraphConv, SAGEConv, SGConv
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.utils import to_dense_adj, to_undirected

from fglcore.algorithms import ALGORITHMS
from fglcore.algorithms.training import GraphBatcher, fast_graph_default
from fglcore.config import ExperimentConfig
from fglcore.data.datasets import load_graph_dataset
from fglcore.data.federation import GraphClient, GraphFederation
from fglcore.data.splits import graph_split_indices
from fglcore.fl.channel import Channel
from fglcore.models.gin import gin_mlp
from fglcore.models.operators import GCN, SUM, GraphOperators, apply_conv, required_operators

CPU = torch.device("cpu")
BASE = dict(dataset="MUTAG", partition="by_dataset", split="graph_stratified", hidden=16, num_layers=3, rounds=3,
            local_epochs=1, batch_size=16, lr=1e-2, selection="last", metric_aggregation="client_mean")


@pytest.fixture(scope="module")
def federation():
    """40 graphs each of MUTAG (7 features, 2 classes), PTC_MR (18, 2) and ENZYMES (3, 6): one client each."""
    clients = []
    for name in ("MUTAG", "PTC_MR", "ENZYMES"):
        dataset = load_graph_dataset(name)
        subset = dataset[torch.randperm(len(dataset), generator=torch.Generator().manual_seed(1))[:40]]
        train, val, test = graph_split_indices(subset.y.view(-1), [0.6, 0.2, 0.2], 123)
        clients.append(GraphClient(name, name, subset, train, val, test, dataset.num_features, dataset.num_classes))
    return GraphFederation("MUTAG+PTC_MR+ENZYMES", clients)


def random_graphs(num: int, directed: bool = False, seed: int = 0) -> list[Data]:
    g = torch.Generator().manual_seed(seed)
    graphs = []
    for _ in range(num):
        n = int(torch.randint(2, 9, (1,), generator=g))
        edges = torch.randint(0, n, (2, 3 * n), generator=g)
        if not directed:  # sorted and coalesced, as PyG stores the TU graphs
            edges = to_undirected(edges, num_nodes=n)
        graphs.append(Data(x=torch.randn(n, 5, generator=g), edge_index=edges, y=torch.tensor([0])))
    return graphs


def run(federation, fast: bool, monkeypatch, **changes):
    monkeypatch.setenv("FGL_GRAPH_FAST", "1" if fast else "0")
    cfg = ExperimentConfig.from_dict({**BASE, **changes})
    algorithm = ALGORITHMS.get(cfg.algorithm)(cfg, federation, CPU)
    result = algorithm.run(Channel())
    return algorithm, result


@pytest.mark.parametrize(
    "changes",
    [
        dict(algorithm="fedstar"),
        dict(algorithm="fedstar", algorithm_options={"feature_conv": "sage", "structure_conv": "gin"}),
        dict(algorithm="fedavg", model="gin"),
        dict(algorithm="fedavg", model="sage"),
        dict(algorithm="gcfl_plus", model="gin"),
        dict(algorithm="local", model="gcn"),
    ],
    ids=["fedstar", "fedstar-sage-gin", "fedavg-gin", "fedsage", "gcfl_plus", "local-gcn"],
)
def test_fast_path_equals_plain_path(federation, monkeypatch, changes):
    plain, plain_result = run(federation, False, monkeypatch, **changes)
    fast, fast_result = run(federation, True, monkeypatch, **changes)
    assert not plain.clients[0].trainer.fast and fast.clients[0].trainer.fast
    assert fast.clients[0].trainer.train_set.operators is not None
    for a, b in zip(plain.clients, fast.clients):
        pa, pb = dict(a.model.named_parameters()), dict(b.model.named_parameters())
        assert pa.keys() == pb.keys()
        for name in pa:
            assert torch.equal(pa[name], pb[name]), name
        for split, prediction in a.evaluate().items():
            assert torch.equal(prediction.logits, b.evaluate()[split].logits)
    for key in ("val_accuracy", "test_accuracy"):
        assert plain_result.metrics[key] == fast_result.metrics[key]
    assert [c["test_accuracy"] for c in plain_result.per_client] == [c["test_accuracy"] for c in fast_result.per_client]


@pytest.mark.parametrize("directed", [False, True])
def test_batcher_operators_match_the_batch_edges(directed):
    graphs = random_graphs(7, directed=directed)
    batcher = GraphBatcher(graphs, CPU, {SUM, GCN})
    assert (batcher.operators.blocks[SUM][1] is None) == (not directed)
    idx = torch.tensor([5, 0, 3, 3, 6])
    batch = batcher.select(idx)
    reference = Batch.from_data_list([graphs[i] for i in idx])
    n = reference.num_nodes
    assert torch.equal(batch.edge_index, reference.edge_index)
    ops = batch.operators
    # adjacency[i, j] counts the edges j -> i (PyG's source_to_target flow)
    dense = to_dense_adj(reference.edge_index, max_num_nodes=n)[0].t()
    torch.testing.assert_close(ops.adjacency.matrix.to_dense(), dense)
    torch.testing.assert_close(ops.adjacency.transpose.to_dense(), dense.t())
    gcn_edges, weight = gcn_norm(reference.edge_index, None, n, add_self_loops=True)
    gcn_dense = to_dense_adj(gcn_edges, edge_attr=weight, max_num_nodes=n)[0].t()
    torch.testing.assert_close(ops.gcn.matrix.to_dense(), gcn_dense)
    assert torch.equal(ops.in_degree, torch.bincount(reference.edge_index[1], minlength=n))


@pytest.mark.parametrize("directed", [False, True])
def test_apply_conv_equals_the_layer_forward_and_backward(directed):
    torch.manual_seed(0)
    graphs = random_graphs(6, directed=directed, seed=3)
    batch = GraphBatcher(graphs, CPU, {SUM, GCN}).select(torch.arange(6))
    x = torch.randn(batch.num_nodes, 5, requires_grad=True)
    convs = [GINConv(gin_mlp(5, 8, 8)), GCNConv(5, 8), SAGEConv(5, 8, aggr="mean"), GATConv(5, 4, heads=2),
             GraphConv(5, 8, aggr="add"), SGConv(5, 8, K=3), APPNP(K=3, alpha=0.1)]
    for conv in convs:
        expected = conv(x, batch.edge_index)
        (grad_expected,) = torch.autograd.grad(expected.square().sum(), x)
        got = apply_conv(conv, x, batch.operators)
        (grad_got,) = torch.autograd.grad(got.square().sum(), x)
        assert torch.equal(got, expected) and torch.equal(grad_got, grad_expected), type(conv).__name__
    assert apply_conv(convs[0], x, batch.edge_index).equal(convs[0](x, batch.edge_index))


def test_required_operators_and_switch(monkeypatch):
    assert required_operators(GINConv(gin_mlp(4, 4, 4))) == {SUM}
    assert required_operators(GCNConv(4, 4)) == {GCN}
    assert required_operators(GCNConv(4, 4, normalize=False)) == frozenset()
    assert required_operators(GATConv(4, 4)) == frozenset()
    assert required_operators(GraphConv(4, 4, aggr="add")) == {SUM}
    assert required_operators(GraphConv(4, 4, aggr="mean")) == frozenset()
    assert required_operators(SGConv(4, 4, K=2)) == {GCN}
    assert required_operators(SGConv(4, 4, K=2, add_self_loops=False)) == frozenset()
    assert required_operators(APPNP(K=2, alpha=0.1)) == {GCN}
    assert required_operators(APPNP(K=2, alpha=0.1, dropout=0.5)) == frozenset()  # edge dropout: PyG's layer
    monkeypatch.delenv("FGL_GRAPH_FAST", raising=False)
    assert fast_graph_default() is True
    monkeypatch.setenv("FGL_GRAPH_FAST", "0")
    assert fast_graph_default() is False
    monkeypatch.setenv("FGL_GRAPH_FAST", "maybe")
    with pytest.raises(ValueError, match="FGL_GRAPH_FAST='maybe' is not accepted"):
        fast_graph_default()


def test_operators_without_the_layers_matrix_fall_back_to_the_edge_index():
    """A layer whose sparse operator was not built (or has none) runs on the operators' ``edge_index``."""
    torch.manual_seed(0)
    edge_index = torch.tensor([[0, 1, 1, 2, 3], [1, 0, 2, 1, 2]])
    bare = GraphOperators(edge_index, 4)  # no adjacency, no gcn matrix
    x = torch.randn(4, 3)
    for conv in (GINConv(gin_mlp(3, 5, 5)), GCNConv(3, 5), SAGEConv(3, 5, aggr="mean"), GATConv(3, 5),
                 GraphConv(3, 5, aggr="add"), SGConv(3, 5, K=2), APPNP(K=2, alpha=0.1)):
        assert torch.equal(apply_conv(conv, x, bare), conv(x, edge_index)), type(conv).__name__


@pytest.mark.parametrize("model", ["sage", "gin", "gcn", "gat", "1gnn", "sgc", "appnp_mlp"])
def test_node_trainer_fast_path_equals_plain_path(model):
    """A node client trained on its sparse operators ends where PyG's edge_index path ends, bit for bit."""
    from fglcore.algorithms.training import NodeTrainer
    from fglcore.models import build_model

    generator = torch.Generator().manual_seed(0)
    n = 40
    edge_index = to_undirected(torch.randint(0, n, (2, 120), generator=generator))
    data = Data(x=(torch.rand(n, 60, generator=generator) < 0.05).float(), edge_index=edge_index,
                y=torch.arange(n) % 3, num_nodes=n)
    data.train_mask = torch.arange(n) < 20
    data.val_mask = (torch.arange(n) >= 20) & (torch.arange(n) < 30)
    data.test_mask = torch.arange(n) >= 30
    config = ExperimentConfig.from_dict({"dataset": "Cora", "num_clients": 1, "algorithm": "local", "lr": 0.01})
    states = {}
    for fast in (True, False):
        torch.manual_seed(0)
        trainer = NodeTrainer(build_model(model, 60, 8, 3, dropout=0.0, cached=True), data, config,
                              torch.device("cpu"), fast=fast)
        assert isinstance(trainer.graph, GraphOperators) == (fast and model != "gat")
        trainer.train_epochs(10)
        states[fast] = trainer.model.state_dict()
    for name, value in states[True].items():
        assert torch.equal(value, states[False][name]), name


@pytest.mark.parametrize("shape,width,density", [((500, 700), 16, 0.01), ((300, 300), 1, 0.05), ((40, 30), 7, 0.0)])
def test_coo_product_is_torch_sparse_mm_forward_and_backward(shape, width, density, monkeypatch):
    """The distributed engine's products (coo_product): torch.sparse.mm's values and gradients, bit for bit."""
    from fglcore.models import operators
    from fglcore.models.operators import coo_product

    monkeypatch.setattr(operators, "COO_PRODUCT_MIN_NNZ", 0)  # the CSR path for every size

    generator = torch.Generator().manual_seed(0)
    nnz = int(shape[0] * shape[1] * density)
    index = torch.stack([torch.randint(0, shape[0], (nnz,), generator=generator),
                         torch.randint(0, shape[1], (nnz,), generator=generator)])
    matrix = torch.sparse_coo_tensor(index, torch.randn(nnz, generator=generator), shape).coalesce()
    x = torch.randn(shape[1], width, generator=generator, requires_grad=True)
    upstream = torch.randn(shape[0], width, generator=generator)
    for _ in range(2):  # the second call reuses the cached CSR pair
        expected = torch.sparse.mm(matrix, x)
        (grad_expected,) = torch.autograd.grad((expected * upstream).sum(), x)
        got = coo_product(matrix, x)
        (grad_got,) = torch.autograd.grad((got * upstream).sum(), x)
        assert torch.equal(got, expected) and torch.equal(grad_got, grad_expected)
    uncoalesced = torch.sparse_coo_tensor(index, torch.ones(nnz), shape)
    assert torch.equal(coo_product(uncoalesced, x.detach()), torch.sparse.mm(uncoalesced, x.detach()))


def test_cached_sgconv_on_operators_fills_and_reads_pygs_cache():
    """A cached SGConv propagates once on the operators, as on the edges, and then reads that cache."""
    torch.manual_seed(0)
    batch = GraphBatcher(random_graphs(5, seed=4), CPU, {GCN}).select(torch.arange(5))
    x = torch.randn(batch.num_nodes, 5)
    plain, fast = SGConv(5, 3, K=2, cached=True), SGConv(5, 3, K=2, cached=True)
    fast.load_state_dict(plain.state_dict())
    assert torch.equal(apply_conv(fast, x, batch.operators), plain(x, batch.edge_index))
    assert torch.equal(fast._cached_x, plain._cached_x)
    other = torch.randn_like(x)  # a cached layer ignores new features, on both paths
    assert torch.equal(apply_conv(fast, other, batch.operators), plain(other, batch.edge_index))
    assert torch.equal(apply_conv(fast, other, batch.operators), fast.lin(plain._cached_x))
