"""The C kernels of fglcore.native compute what their PyTorch expressions compute, bit for bit."""
import shutil
import warnings

import pytest
import torch

from fglcore import native
from fglcore.models import dropout as dropout_module

needs_compiler = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                    reason="no C compiler on this machine")


@needs_compiler
def test_the_dropout_kernel_compiles_and_passes_its_probe():
    assert native.library("dropout") is not None
    assert dropout_module.native_matches_rand()


@needs_compiler
@pytest.mark.parametrize("offset", [0, 1, 311, 623, 624, 625, 1247])
@pytest.mark.parametrize("numel, p", [(1, 0.5), (311, 0.5), (312, 0.1), (5000, 0.5), (4097, 0.3), (20000, 0.9)])
def test_native_noise_is_torch_rands_mask_from_any_generator_position(offset, numel, p):
    """Single float32 draws move the generator by one word, so every offset within and across twists is reached."""
    torch.manual_seed(2024)
    torch.rand(offset)
    expected = (torch.rand(numel, dtype=torch.float64) < 1 - p).float().div_(1 - p)
    after_expected = torch.rand(7)
    torch.manual_seed(2024)
    torch.rand(offset)
    got = dropout_module.dropout_noise(torch.Size([numel]), p)
    assert torch.equal(got, expected)
    assert torch.equal(torch.rand(7), after_expected)


@needs_compiler
def test_native_dropout_equals_F_dropout_values_gradients_and_generator_state():
    x = torch.randn(300, 64, requires_grad=True)
    for p in (0.5, 0.2):
        torch.manual_seed(3)
        expected = torch.nn.functional.dropout(x, p, True)
        (grad_expected,) = torch.autograd.grad((expected * expected).sum(), x)
        after_expected = torch.randn(5)
        torch.manual_seed(3)
        got = dropout_module.dropout(x, p, True)
        (grad_got,) = torch.autograd.grad((got * got).sum(), x)
        assert torch.equal(got, expected) and torch.equal(grad_got, grad_expected)
        assert torch.equal(torch.randn(5), after_expected)


def _reload_native(monkeypatch, **environment):
    for key, value in environment.items():
        monkeypatch.setenv(key, value)
    native.library.cache_clear()
    dropout_module.native_matches_rand.cache_clear()


def test_without_native_kernels_dropout_still_equals_F_dropout(monkeypatch, tmp_path):
    x = torch.randn(50, 8)
    try:
        _reload_native(monkeypatch, FGL_NATIVE="0")
        assert native.library("dropout") is None and not dropout_module.native_matches_rand()
        torch.manual_seed(5)
        expected = torch.nn.functional.dropout(x, 0.5, True)
        torch.manual_seed(5)
        assert torch.equal(dropout_module.dropout(x, 0.5, True), expected)

        _reload_native(monkeypatch, FGL_NATIVE="1", CC=str(tmp_path / "no-such-compiler"),
                       FGL_NATIVE_CACHE=str(tmp_path / "cache"))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert native.library("dropout") is None
        assert any("dropout.c not available" in str(w.message) for w in caught)
        torch.manual_seed(5)
        assert torch.equal(dropout_module.dropout(x, 0.5, True), expected)
    finally:
        monkeypatch.undo()
        _reload_native(monkeypatch)


def _bits(t):
    return t.detach().contiguous().view(torch.int32)


@needs_compiler
@pytest.mark.parametrize("p", [0.5, 0.3])
def test_fused_relu_dropout_equals_F_dropout_of_F_relu_bit_for_bit(p):
    """Values, gradients (signed zeros and NaNs included) and the generator state after."""
    h = torch.randn(1000, 70)
    h.view(-1)[:6] = torch.tensor([0.0, -0.0, float("nan"), float("inf"), -float("inf"), -1e-30])
    grad = torch.randn(1000, 70)
    grad.view(-1)[6:9] = torch.tensor([float("nan"), -0.0, float("inf")])
    results = []
    for fused in (False, True):
        x = h.clone().requires_grad_()
        torch.manual_seed(11)
        torch.rand(5)
        out = dropout_module.relu_dropout(x, p, True) if fused else torch.nn.functional.dropout(
            torch.nn.functional.relu(x), p, True)
        out.backward(grad)
        results.append((_bits(out), _bits(x.grad), torch.rand(9)))
    (out_plain, grad_plain, after_plain), (out_fused, grad_fused, after_fused) = results
    assert torch.equal(out_fused, out_plain)
    assert torch.equal(grad_fused, grad_plain)
    assert torch.equal(after_fused, after_plain)


def test_relu_dropout_in_evaluation_is_relu():
    h = torch.randn(20, 3)
    assert torch.equal(dropout_module.relu_dropout(h, 0.5, False), torch.relu(h))


@needs_compiler
@pytest.mark.parametrize("width", [1, 3, 64, 65, 128, 200])
def test_native_spmm_is_torch_sparse_mm_bit_for_bit(width):
    from fglcore.models import operators

    assert operators.native_matches(operators.FUSED)
    generator = torch.Generator().manual_seed(width)
    dense_matrix = torch.rand(500, 400, generator=generator)
    dense_matrix[dense_matrix < 0.97] = 0
    dense_matrix[:, :3] *= 3.0  # weighted entries, as GCN's normalised adjacency
    dense_matrix[7] = 0  # an empty row
    matrix = dense_matrix.to_sparse_csr()
    x = torch.randn(400, width, generator=generator)
    expected = torch.sparse.mm(matrix, x, "sum")
    assert torch.equal(_bits(operators.spmm(matrix, x)), _bits(expected))
    assert torch.allclose(expected, dense_matrix @ x, atol=1e-5)


@needs_compiler
@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (16, 16), (17, 33), (64, 3703)])
def test_native_transpose_is_t_contiguous_bit_for_bit(shape):
    from fglcore.models import operators

    matrix = torch.randn(*shape)
    matrix.view(-1)[: min(3, matrix.numel())] = torch.tensor([-0.0, float("nan"), float("inf")])[: min(3, matrix.numel())]
    out = operators.transposed(matrix)
    assert out.shape == (shape[1], shape[0]) and out.is_contiguous()
    assert torch.equal(_bits(out), _bits(matrix.t().contiguous()))


def test_transpose_without_native_kernel_falls_back(monkeypatch):
    from fglcore.models import operators

    monkeypatch.setattr(operators.native, "library", lambda name: None)
    matrix = torch.randn(5, 3)
    assert torch.equal(operators.transposed(matrix), matrix.t().contiguous())
    assert torch.equal(operators.transposed(matrix.double()), matrix.double().t())


@needs_compiler
@pytest.mark.parametrize("width", [1, 3, 64, 65, 200])
def test_native_propagate_is_pygs_scatter_sum_bit_for_bit(width):
    from fglcore.models import operators

    assert operators.native_matches(operators.UNFUSED)
    generator = torch.Generator().manual_seed(width)
    dense_matrix = torch.rand(300, 250, generator=generator)
    dense_matrix[dense_matrix < 0.95] = 0
    dense_matrix[5] = 0  # an empty row
    matrix = dense_matrix.to_sparse_csr()
    x = torch.randn(250, width, generator=generator)
    expected = operators.scatter_sum(matrix, x)
    assert torch.equal(_bits(operators.propagate(matrix, x)), _bits(expected))
    fused = torch.sparse.mm(matrix, x, "sum")
    assert not torch.equal(fused, expected) or width == 1  # the two roundings differ on weighted sums
    torch.testing.assert_close(fused, expected)


@needs_compiler
@pytest.mark.parametrize("width", [3, 64, 130])
def test_propagate_adds_the_row_term_and_bias_as_separate_additions_would(width):
    """GIN's ``A x + x`` and GCN's ``A h + b`` in one pass: values and gradients of the separate sums."""
    from fglcore.models import operators

    generator = torch.Generator().manual_seed(width)
    dense_matrix = torch.rand(200, 200, generator=generator)
    dense_matrix[dense_matrix < 0.9] = 0
    matrix = dense_matrix.to_sparse_csr()
    operator = operators.SparseOperator(matrix, dense_matrix.t().to_sparse_csr())
    x = torch.randn(200, width, generator=generator, requires_grad=True)
    bias = torch.randn(width, generator=generator, requires_grad=True)
    upstream = torch.randn(200, width, generator=generator)
    for fused_call, separate_call in (
        (lambda: operator.propagate(x, add_self=True), lambda: operator @ x + x),
        (lambda: operator.propagate(x, bias=bias), lambda: operator @ x + bias),
    ):
        grads = []
        for call in (fused_call, separate_call):
            x.grad = bias.grad = None
            out = call()
            out.backward(upstream)
            grads.append((out.detach(), x.grad.clone(), None if bias.grad is None else bias.grad.clone()))
        (out, grad_x, grad_bias), (expected, expected_x, expected_bias) = grads
        assert torch.equal(_bits(out), _bits(expected)) and torch.equal(_bits(grad_x), _bits(expected_x))
        assert (grad_bias is None and expected_bias is None) or torch.equal(_bits(grad_bias), _bits(expected_bias))


def test_propagate_without_native_kernel_is_the_scatter_sum(monkeypatch):
    from fglcore.models import operators

    monkeypatch.setattr(operators.native, "library", lambda name: None)
    operators.native_matches.cache_clear()
    try:
        matrix = (torch.rand(30, 20) * (torch.rand(30, 20) < 0.3)).to_sparse_csr()
        x = torch.randn(20, 4)
        assert not operators.native_matches(operators.UNFUSED)
        assert torch.equal(operators.propagate(matrix, x), operators.scatter_sum(matrix, x))
        row_term, bias = torch.randn(30, 4), torch.randn(4)
        assert torch.equal(operators.propagate(matrix, x, row_term, bias),
                           operators.scatter_sum(matrix, x) + row_term + bias)
    finally:
        operators.native_matches.cache_clear()
