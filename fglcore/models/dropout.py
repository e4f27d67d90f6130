"""Dropout with PyTorch's own masks, drawn faster on CPUs where PyTorch draws them one by one.

``F.dropout`` on a CPU tensor is ``x * bernoulli_(1 - p) / (1 - p)``.
Except on Intel CPUs with MKL, ``bernoulli_`` draws every element through
PyTorch's generic serial path: two 32-bit outputs of the global Mersenne
Twister make a 64-bit word, its low 53 bits a double ``u`` in [0, 1), and
the element is kept when ``u < 1 - p``. ``torch.rand(..., dtype=float64)``
draws the same words the same way with less overhead per element (the
whole dropout about 1.15x faster here), so ``rand < 1 - p`` is the mask of
``F.dropout`` bit for bit and leaves the generator in the same state.
Whether that holds is probed once per process against ``bernoulli_`` itself
(:func:`rand_matches_bernoulli`); where it does not (Intel MKL's draw,
another PyTorch), and for GPU, non-contiguous or evaluation-mode inputs,
:func:`dropout` is ``F.dropout``.

Faster still, for float32 inputs, a small C kernel
(``fglcore/native/dropout.c``) runs the same Mersenne Twister on the
exported generator state with vectorised twisting and tempering and
compares the 53-bit integers with ``ceil((1 - p) * 2^53)`` instead of
building doubles (about 10x faster than ``torch.rand`` here); it is used
only when it reproduces ``torch.rand``'s draws and end state in a probe
(:func:`native_matches_rand`), and ``FGL_NATIVE=0`` turns it off. The same
kernel computes ``dropout(relu(h))``, the activation of every GIN/GCN layer
of the graph classifiers, in one pass forward and one backward
(:func:`relu_dropout`), with the values, gradients and generator state of
``F.dropout(F.relu(h))``.
(Drawing the words with NumPy's MT19937 from the exported generator state
also reproduces them, but measured no faster than ``torch.rand``.)
"""
from __future__ import annotations

import functools
import math
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from fglcore import native


@functools.lru_cache(maxsize=None)
def rand_matches_bernoulli() -> bool:
    """Whether ``rand(float64) < q`` reproduces ``bernoulli_(q)`` here (probed once, RNG state restored)."""
    draws = ((4099, 0.5), (1500, 0.3))
    return _same_draws(lambda n, q: torch.empty(n).bernoulli_(q), lambda n, q: _rand_mask(n, q), draws)


def _rand_mask(n: int, q: float) -> Tensor:
    return (torch.rand(n, dtype=torch.float64) < q).float()


def _same_draws(reference: Callable, candidate: Callable, draws) -> bool:
    """Whether ``candidate(n, q)`` gives ``reference(n, q)`` for every draw and leaves the generator alike."""
    saved = torch.get_rng_state()
    try:
        torch.manual_seed(12345)
        expected = [reference(n, q) for n, q in draws]
        after_expected = torch.rand(5)
        torch.manual_seed(12345)
        got = [candidate(n, q) for n, q in draws]
        after_got = torch.rand(5)
        return all(g is not None and torch.equal(e, g) for e, g in zip(expected, got)) and torch.equal(
            after_expected, after_got
        )
    finally:
        torch.set_rng_state(saved)


def _threshold(q: float) -> int:
    return math.ceil(q * 2.0**53)  # q * 2^53 is exact: u = m * 2^-53 < q  <=>  m < ceil(q * 2^53)


def _native_noise(library, numel: int, q: float, keep_value: float) -> Tensor | None:
    """``numel`` float32 values, ``keep_value`` where the next doubles of the generator are below ``q``, else 0."""
    state = torch.get_rng_state()
    noise = torch.empty(numel, dtype=torch.float32)
    if library.dropout_noise(state.data_ptr(), noise.data_ptr(), numel, _threshold(q), keep_value) != 0:
        return None
    torch.set_rng_state(state)
    return noise


@functools.lru_cache(maxsize=None)
def native_matches_rand() -> bool:
    """Whether the C kernel reproduces ``rand(float64) < q`` and the generator's end state (probed once)."""
    library = native.library("dropout")
    if library is None:
        return False
    draws = ((4099, 0.5), (1, 0.9), (1500, 0.3), (700, 0.25), (3000, 1 / 3))
    return _same_draws(_rand_mask, lambda n, q: _native_noise(library, n, q, 1.0), draws)


def _keep_value(p: float, dtype: torch.dtype) -> Tensor:
    return torch.ones((), dtype=dtype).div_(1 - p)  # the same rounding as the mask's ``div_(1 - p)``


def dropout_noise(shape: torch.Size, p: float, dtype: torch.dtype = torch.float32) -> Tensor:
    """``bernoulli_(1 - p) / (1 - p)`` of ``F.dropout`` for a CPU tensor of ``shape``: same values, same generator state.

    Only valid where :func:`rand_matches_bernoulli` holds (:func:`dropout` checks it).
    """
    q = 1 - p
    if dtype == torch.float32 and native_matches_rand():
        noise = _native_noise(native.library("dropout"), math.prod(shape), q, _keep_value(p, dtype).item())
        if noise is not None:
            return noise.view(shape)
    return (torch.rand(shape, dtype=torch.float64) < q).to(dtype).div_(q)


def dropout(x: Tensor, p: float, training: bool) -> Tensor:
    """``F.dropout(x, p, training)``: the same numbers and generator state, faster on CPUs without MKL's draw."""
    if not training or x.device.type != "cpu" or not 0 < p < 1 or not x.is_contiguous():
        return F.dropout(x, p, training)
    if not rand_matches_bernoulli():
        return F.dropout(x, p, training)
    return x * dropout_noise(x.shape, p, x.dtype)


class _ReluDropout(torch.autograd.Function):
    """``F.dropout(F.relu(h), p)`` in one native pass; the backward reads a byte per element (see ``dropout.c``)."""

    @staticmethod
    def forward(ctx, h: Tensor, p: float) -> Tensor:
        library = native.library("dropout")
        keep_value = _keep_value(p, h.dtype).item()
        state = torch.get_rng_state()
        out = torch.empty_like(h)
        code = torch.empty(h.shape, dtype=torch.uint8)
        status = library.relu_dropout_forward(
            state.data_ptr(), h.data_ptr(), out.data_ptr(), code.data_ptr(), h.numel(), _threshold(1 - p), keep_value
        )
        if status != 0:
            raise RuntimeError("relu_dropout: PyTorch's generator state has an unexpected layout")
        torch.set_rng_state(state)
        ctx.save_for_backward(code)
        ctx.keep_value = keep_value
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        (code,) = ctx.saved_tensors
        grad = grad.contiguous()
        grad_h = torch.empty_like(grad)
        native.library("dropout").relu_dropout_backward(
            grad.data_ptr(), code.data_ptr(), grad_h.data_ptr(), grad.numel(), ctx.keep_value
        )
        return grad_h, None


def relu_dropout(h: Tensor, p: float, training: bool) -> Tensor:
    """``F.dropout(F.relu(h), p, training)``: the same values, gradients and generator state, in one pass when native."""
    if (
        training
        and 0 < p < 1
        and h.device.type == "cpu"
        and h.dtype == torch.float32
        and h.is_contiguous()
        and rand_matches_bernoulli()
        and native_matches_rand()
    ):
        return _ReluDropout.apply(h, p)
    return dropout(F.relu(h), p, training)
