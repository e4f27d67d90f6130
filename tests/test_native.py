"""The optional C kernel of fglcore.native computes what its PyTorch expressions compute, bit for bit."""
import shutil
import warnings

import pytest
import torch

from fglcore import native

needs_compiler = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                    reason="no C compiler on this machine")


def _reload_native(monkeypatch, **environment):
    from fglcore.models import operators

    for key, value in environment.items():
        monkeypatch.setenv(key, value)
    native.library.cache_clear()
    operators.native_matches.cache_clear()


def test_without_the_native_kernel_products_are_pytorchs(monkeypatch, tmp_path):
    """FGL_NATIVE=0, or no working compiler: no library, a warning for the latter, and the PyTorch expressions."""
    from fglcore.models import operators

    matrix = (torch.rand(30, 20) * (torch.rand(30, 20) < 0.3)).to_sparse_csr()
    x = torch.randn(20, 4)
    try:
        _reload_native(monkeypatch, FGL_NATIVE="OFF")  # any case
        assert native.library("spmm") is None and not operators.native_matches(operators.FUSED)
        assert torch.equal(operators.spmm(matrix, x), torch.sparse.mm(matrix, x, "sum"))

        _reload_native(monkeypatch, FGL_NATIVE="1", CC=str(tmp_path / "no-such-compiler"), FGL_DATA=str(tmp_path))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert native.library("spmm") is None
        assert any("spmm.c not available" in str(w.message) for w in caught)
        assert torch.equal(operators.propagate(matrix, x), operators.scatter_sum(matrix, x))
    finally:
        monkeypatch.undo()
        _reload_native(monkeypatch)


def test_a_bad_native_switch_is_an_error_naming_the_variable(monkeypatch):
    monkeypatch.setenv("FGL_NATIVE", "sometimes")
    with pytest.raises(ValueError, match="FGL_NATIVE='sometimes' is not accepted; accepted: one of 1, true"):
        native.enabled()


def test_the_compiled_kernel_is_cached_beside_the_data(monkeypatch, tmp_path):
    monkeypatch.setenv("FGL_DATA", str(tmp_path))
    assert native._cache_folder() == tmp_path.resolve() / "_fglcore_cache" / "native"


def _bits(t):
    return t.detach().contiguous().view(torch.int32)


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


@needs_compiler
def test_a_dense_operand_off_the_cpu_never_reaches_the_c_kernel():
    """The C kernel reads host memory: a CPU matrix times a tensor on another device (here ``meta``; a CUDA
    tensor crashed the interpreter on a GPU machine, O-pFGL's pseudo-graph operator before 2026-11-27) is left
    to PyTorch, which refuses the mix with an error."""
    from fglcore.models import operators

    matrix = (torch.rand(30, 20) * (torch.rand(30, 20) < 0.3)).to_sparse_csr()
    assert operators.native_matches(operators.UNFUSED) and operators.native_matches(operators.FUSED)
    x = torch.randn(20, 4)
    assert operators._native_applies(matrix, x)
    assert not operators._native_applies(matrix, x.to("meta"))
    assert not operators._native_applies(matrix, x, row_term=torch.empty(30, 4, device="meta"))
    with pytest.raises((RuntimeError, NotImplementedError)):
        operators.propagate(matrix, x.to("meta"))
    with pytest.raises((RuntimeError, NotImplementedError)):
        operators.spmm(matrix, x.to("meta"))
