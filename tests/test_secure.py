"""Pairwise-masking secure aggregation: exact sums, random-looking masked vectors, clear refusals."""
from __future__ import annotations

import pytest
import torch

from fglcore.fl.secure import SecureAggregator


def _vectors(num_clients: int, size: int, seed: int = 0, scale: float = 1.0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(size, generator=g, dtype=torch.float64) * scale for _ in range(num_clients)]


@pytest.mark.parametrize("precision_bits", [0, 16, 24, 40])
def test_unmasked_sum_is_the_exact_sum_of_encodings(precision_bits):
    ids = [4, 0, 7, 2]
    agg = SecureAggregator(ids, seed=11, precision_bits=precision_bits)
    xs = _vectors(len(ids), 500, scale=100.0)
    masked = [agg.mask(cid, x, round=3) for cid, x in zip(ids, xs)]
    total = agg.unmask_sum(masked, round=3)
    exact = agg.decode(torch.stack([agg.encode(x) for x in xs]).sum(0))
    assert total.dtype == torch.float64
    assert torch.equal(total, exact)
    float_sum = torch.stack(xs).sum(0)
    assert (total - float_sum).abs().max() <= len(ids) * 2.0 ** -(precision_bits + 1)


def test_masked_vector_keeps_shape_and_is_int64():
    agg = SecureAggregator([0, 1], seed=0)
    x = torch.randn(3, 4)
    y = agg.mask(0, x, round=1)
    assert y.dtype == torch.int64 and y.shape == x.shape
    total = agg.unmask_sum([y, agg.mask(1, -x, round=1)], round=1)
    assert total.shape == (3, 4) and torch.equal(total, torch.zeros(3, 4, dtype=torch.float64))


def test_single_masked_vector_is_uncorrelated_with_its_input():
    agg = SecureAggregator([0, 1, 2], seed=5)
    x = torch.linspace(-1.0, 1.0, 10_000, dtype=torch.float64)
    for cid in agg.client_ids:
        y = agg.mask(cid, x, round=1).double()
        corr = torch.corrcoef(torch.stack([x, y]))[0, 1]
        assert abs(float(corr)) < 0.05
        # Spread over the whole int64 range, not concentrated near the encoding.
        assert y.abs().mean() > 2.0**61
    # Without masks the encoding is perfectly correlated: the check above can fail.
    assert float(torch.corrcoef(torch.stack([x, agg.encode(x).double()]))[0, 1]) > 0.999


def test_masks_differ_across_rounds_and_seeds_but_are_deterministic():
    x = torch.zeros(64)
    agg = SecureAggregator([0, 1], seed=1)
    assert not torch.equal(agg.mask(0, x, round=1), agg.mask(0, x, round=2))
    assert not torch.equal(agg.mask(0, x, round=1), SecureAggregator([0, 1], seed=2).mask(0, x, round=1))
    assert torch.equal(agg.mask(0, x, round=1), SecureAggregator([1, 0], seed=1).mask(0, x, round=1))
    # Masks from different rounds do not cancel.
    wrong = agg.unmask_sum([agg.mask(0, x, round=1), agg.mask(1, x, round=2)], round=2)
    assert not torch.equal(wrong, torch.zeros(64, dtype=torch.float64))


def test_missing_or_wrong_clients_raise():
    agg = SecureAggregator([0, 1, 2], seed=0)
    xs = _vectors(3, 8)
    masked = [agg.mask(c, x, round=1) for c, x in zip(agg.client_ids, xs)]
    with pytest.raises(ValueError, match="2 masked vectors for 3 clients"):
        agg.unmask_sum(masked[:2], round=1)
    with pytest.raises(ValueError, match=r"no masked vector from clients \[2\]"):
        agg.unmask_sum(masked[:2], round=1, client_ids=[0, 1])
    with pytest.raises(ValueError, match="contributed twice"):
        agg.unmask_sum(masked, round=1, client_ids=[0, 1, 1])
    with pytest.raises(ValueError, match=r"unknown client ids \[9\]"):
        agg.unmask_sum(masked, round=1, client_ids=[0, 1, 9])
    with pytest.raises(ValueError, match="unknown client id 5"):
        agg.mask(5, xs[0], round=1)
    with pytest.raises(ValueError, match="int64"):
        agg.unmask_sum([m.double() for m in masked], round=1)
    assert torch.allclose(agg.unmask_sum(masked, round=1, client_ids=[0, 1, 2]), sum(xs), atol=1e-6)


def test_bad_construction_raises():
    with pytest.raises(ValueError, match="at least 2 clients"):
        SecureAggregator([0], seed=0)
    with pytest.raises(ValueError, match="distinct"):
        SecureAggregator([0, 0], seed=0)
    with pytest.raises(ValueError, match="precision_bits"):
        SecureAggregator([0, 1], seed=0, precision_bits=63)
    with pytest.raises(ValueError, match="seed"):
        SecureAggregator([0, 1], seed=-1)


def test_overflow_raises_and_bound_is_tight():
    agg = SecureAggregator([0, 1, 2, 3], seed=0, precision_bits=24)
    assert agg.max_abs_input == pytest.approx(2.0 ** (63 - 24) / 4)
    with pytest.raises(OverflowError, match="bound"):
        agg.mask(0, torch.tensor([0.0, 2.0**37 + 1.0]), round=1)
    with pytest.raises(ValueError, match="NaN or infinite"):
        agg.mask(0, torch.tensor([float("nan")]), round=1)
    # Four clients at (just under) the bound still sum exactly.
    x = torch.tensor([agg.max_abs_input, -agg.max_abs_input], dtype=torch.float64)
    total = agg.unmask_sum([agg.mask(c, x, round=1) for c in agg.client_ids], round=1)
    assert torch.equal(total, 4 * x)
