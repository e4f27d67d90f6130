"""Sparse first layers on constant features (fglcore.models.sparse_input)."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import GCNConv

from fglcore.models import build_model, sparse_input
from fglcore.models.operators import csr_transpose
from fglcore.models.sparse_input import (
    SPARSE_ENV,
    SparseInputLinear,
    accept_constant_features,
    constant_features,
    is_registered,
    linear,
    sparse_features_enabled,
)


def bag_of_words(rows=40, cols=300, density=0.02, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return (torch.rand(rows, cols, generator=generator) < density).float()


def test_registered_features_give_the_dense_product_and_gradients():
    x = constant_features(bag_of_words())
    assert is_registered(x)
    weight = torch.randn(16, x.size(1), requires_grad=True)
    bias = torch.randn(16, requires_grad=True)
    sparse_out = linear(x, weight, bias)
    (sparse_out ** 2).sum().backward()
    sparse_grads = weight.grad.clone(), bias.grad.clone()
    weight.grad = bias.grad = None
    dense_out = F.linear(x, weight, bias)
    (dense_out ** 2).sum().backward()
    torch.testing.assert_close(sparse_out, dense_out, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(sparse_grads[0], weight.grad, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(sparse_grads[1], bias.grad, rtol=1e-5, atol=1e-5)


def test_dense_or_changed_or_gradient_inputs_are_not_treated_as_sparse():
    dense = constant_features(torch.randn(10, 20))
    assert not is_registered(dense)
    needs_grad = constant_features(bag_of_words().requires_grad_())
    assert not is_registered(needs_grad)
    x = constant_features(bag_of_words())
    x[0, 0] += 1.0  # an in-place change bumps the version: the stale CSR copy must not be used
    assert not is_registered(x)
    weight = torch.randn(4, x.size(1))
    torch.testing.assert_close(linear(x, weight, None), x @ weight.t())


def test_the_switch_turns_registration_off(monkeypatch):
    monkeypatch.setenv(SPARSE_ENV, "0")
    assert not sparse_features_enabled()
    assert not is_registered(constant_features(bag_of_words()))
    monkeypatch.setenv(SPARSE_ENV, "No")  # every spelling of a switch, any case
    assert not sparse_features_enabled()
    monkeypatch.setenv(SPARSE_ENV, "yes")
    assert sparse_features_enabled()
    monkeypatch.setenv(SPARSE_ENV, "sparse")
    with pytest.raises(ValueError, match=f"{SPARSE_ENV}='sparse' is not accepted"):
        sparse_features_enabled()


def test_accepting_keeps_parameter_names_and_initial_values():
    torch.manual_seed(0)
    plain = build_model("gcn", 300, 16, 3)
    torch.manual_seed(0)
    prepared = accept_constant_features(build_model("gcn", 300, 16, 3))
    assert list(plain.state_dict()) == list(prepared.state_dict())
    for a, b in zip(plain.state_dict().values(), prepared.state_dict().values()):
        assert torch.equal(a, b)
    first = prepared.convs[0]
    assert isinstance(first, GCNConv) and type(first.lin).__name__ == "SparseInputPyGLinear"
    assert isinstance(accept_constant_features(nn.Sequential(nn.Linear(3, 2)))[0], SparseInputLinear)


@pytest.mark.parametrize("name", ["gcn", "sage", "mlp", "gat"])
def test_a_model_trains_the_same_on_the_sparse_path(name, monkeypatch):
    sparse_products = []
    original = sparse_input._SparseLinear.apply
    monkeypatch.setattr(sparse_input._SparseLinear, "apply", lambda *a: sparse_products.append(1) or original(*a))
    x = bag_of_words(rows=30, cols=200, density=0.03)
    edge_index = torch.randint(0, 30, (2, 90), generator=torch.Generator().manual_seed(1))
    y = torch.arange(30) % 3

    def train(sparse):
        torch.manual_seed(0)
        model = build_model(name, 200, 8, 3, dropout=0.0)
        features = x.clone()
        if sparse:
            accept_constant_features(model)
            constant_features(features)
            assert is_registered(features)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        for _ in range(5):
            optimizer.zero_grad()
            F.cross_entropy(model(features, edge_index), y).backward()
            optimizer.step()
        return model(features, edge_index).detach()

    sparse = train(True)
    assert len(sparse_products) == 6  # the first layer of each of 5 steps and of the final forward
    torch.testing.assert_close(sparse, train(False), rtol=1e-4, atol=1e-4)
    assert len(sparse_products) == 6


def test_graphsage_aggregates_constant_features_once_with_the_same_values(monkeypatch):
    x = bag_of_words(rows=30, cols=200, density=0.03)
    edge_index = torch.randint(0, 30, (2, 90), generator=torch.Generator().manual_seed(1))
    torch.manual_seed(0)
    model = build_model("sage", 200, 8, 3, dropout=0.0)
    plain = model(x, edge_index)
    calls = []
    first = model.convs[0]
    original = first.propagate
    monkeypatch.setattr(first, "propagate", lambda *a, **k: calls.append(1) or original(*a, **k))
    features = constant_features(x.clone())
    for _ in range(3):
        out = model(features, edge_index)
    assert len(calls) == 1  # aggregated once, then reused
    torch.testing.assert_close(out, plain, rtol=1e-5, atol=1e-5)
    assert model(x, edge_index).equal(plain)  # an unregistered input takes PyG's own path
    assert len(calls) == 2


@pytest.mark.parametrize("backbone", ["gcn", "sage"])
def test_fedstar_node_first_layer_skips_the_concatenation_with_the_same_values(backbone, monkeypatch):
    """``F_1([x || g])`` as ``W_x x + W_g g`` on registered features: same output and gradients, sparse product used."""
    from fglcore.algorithms.training import whole_graph_operators
    from fglcore.models.fedstar_node import NodeFeatureStructureGNN
    from fglcore.models.operators import required_operators

    x = bag_of_words(rows=30, cols=200, density=0.03)
    s = torch.randn(30, 6, generator=torch.Generator().manual_seed(2))
    edge_index = torch.randint(0, 30, (2, 90), generator=torch.Generator().manual_seed(1))
    torch.manual_seed(0)
    model = accept_constant_features(NodeFeatureStructureGNN(200, 6, 8, 3, dropout=0.0, backbone=backbone))
    graph = whole_graph_operators(edge_index, 30, required_operators(model), torch.float32)
    concatenated = torch.cat  # the path to avoid: no n x (200 + 8) matrix may be built
    widths = []
    monkeypatch.setattr(torch, "cat", lambda parts, *a, **k: widths.append(sum(p.size(-1) for p in parts))
                        or concatenated(parts, *a, **k))

    def output_and_gradients(features):
        model.zero_grad()
        out = model(features, s, graph)
        (out ** 2).sum().backward()
        return out.detach(), [p.grad.clone() for p in model.parameters()]

    plain_out, plain_grads = output_and_gradients(x)
    assert 200 + 8 in widths  # unregistered features are concatenated
    widths.clear()
    sparse_products = []
    original = sparse_input._SparseLinear.apply
    monkeypatch.setattr(sparse_input._SparseLinear, "apply", lambda *a: sparse_products.append(1) or original(*a))
    split_out, split_grads = output_and_gradients(constant_features(x.clone()))
    assert 200 + 8 not in widths and sparse_products
    torch.testing.assert_close(split_out, plain_out, rtol=1e-5, atol=1e-5)
    for split, plain in zip(split_grads, plain_grads):
        torch.testing.assert_close(split, plain, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows, cols, density", [(40, 300, 0.02), (7, 5, 0.5), (3, 4, 0.0), (50, 2, 0.9)])
def test_transpose_from_csr_is_the_csr_of_the_transpose(rows, cols, density):
    # Registration builds x^T's CSR from x's; it must hold the very tensors _csr(x.t()) would (same products).
    generator = torch.Generator().manual_seed(rows)
    x = torch.randn(rows, cols, generator=generator) * (torch.rand(rows, cols, generator=generator) < density)
    got, expected = csr_transpose(sparse_input._csr(x)), sparse_input._csr(x.t())
    assert got.shape == expected.shape
    for part in ("crow_indices", "col_indices", "values"):
        a, b = getattr(got, part)(), getattr(expected, part)()
        assert a.dtype == b.dtype and torch.equal(a, b), part
    assert torch.equal(got.values().view(torch.int32), expected.values().view(torch.int32))
