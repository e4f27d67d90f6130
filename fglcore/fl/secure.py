"""Secure aggregation by pairwise additive masking.

Follows the masking core of Bonawitz et al., "Practical Secure Aggregation for
Privacy-Preserving Machine Learning" (CCS 2017), Sec. 3 ("one-time pad with
pairwise masks"), without its dropout-recovery layer:

1. each client encodes its vector in fixed point,
   ``x_bar = round(x * 2**precision_bits)`` as an ``int64``;
2. for every pair of clients ``i < j`` both derive the same mask ``s_ij`` from a
   shared secret; client ``i`` adds ``s_ij`` and client ``j`` subtracts it:
   ``y_u = x_bar_u + sum_{v > u} s_uv - sum_{v < u} s_vu  (mod 2**64)``;
3. the server adds the ``y_u``; every ``s_ij`` appears once with each sign, so
   the masks cancel and the server learns ``sum_u x_bar_u`` exactly, while each
   single ``y_u`` is uniformly distributed over ``Z_{2**64}``.

Limits of this simulation (say so wherever it is used):

* **No dropouts.** Every client in ``client_ids`` must contribute in every
  round; with one missing, its masks do not cancel and the sum is garbage, so
  :meth:`SecureAggregator.unmask_sum` refuses. The paper's secret sharing of
  the mask seeds and the self-masks ``b_u`` that make dropouts recoverable are
  not implemented.
* **Simulated key agreement.** In the protocol, ``s_ij`` is expanded from a
  Diffie-Hellman agreed key. Here the pair's seed is derived from
  ``(seed, i, j, round)`` and expanded with NumPy's PCG64, which is neither
  secret (anyone who knows ``seed`` can unmask) nor a cryptographic PRG. The
  simulation reproduces the arithmetic and *what the server sees*, not the
  cryptographic guarantees.
* **Overflow.** Arithmetic is modulo ``2**64`` (``int64`` wrap-around), so the
  decoded sum is right only while ``|sum| < 2**(63 - precision_bits)``. This is
  guaranteed by requiring every entry of every client's vector to satisfy
  ``|x| <= 2**(63 - precision_bits) / num_clients``;
  :meth:`SecureAggregator.mask` raises :class:`OverflowError` otherwise.
* **Precision.** Encoding rounds each entry to a multiple of
  ``2**-precision_bits``, so the decoded sum is within
  ``num_clients * 2**-(precision_bits + 1)`` of the float sum (and equals the
  sum of the encodings bit for bit).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch
from torch import Tensor

MAX_PRECISION_BITS = 62


def _check_nonnegative_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{what} must be a non-negative integer, got {value!r}")
    return int(value)


class SecureAggregator:
    """Pairwise-masking secure aggregation over a fixed set of clients (Bonawitz et al., 2017).

    One object simulates both sides: clients call :meth:`mask` on their own
    vector, the server calls :meth:`unmask_sum` on what it received. Masked
    vectors are ``int64`` CPU tensors of the input's shape.

    Args:
        client_ids: the participating clients (distinct non-negative ints, at least two).
        seed: root of the simulated pairwise shared secrets.
        precision_bits: fractional bits of the fixed-point encoding.
    """

    def __init__(self, client_ids: Sequence[int], seed: int, precision_bits: int = 24):
        ids = [_check_nonnegative_int(c, "every client id") for c in client_ids]
        if len(set(ids)) != len(ids):
            raise ValueError(f"client ids must be distinct, got {list(client_ids)}")
        if len(ids) < 2:
            raise ValueError(
                f"secure aggregation needs at least 2 clients (a single client's sum is its own vector), got {ids}"
            )
        self.client_ids: tuple[int, ...] = tuple(sorted(ids))
        self.seed = _check_nonnegative_int(seed, "seed")
        precision_bits = _check_nonnegative_int(precision_bits, "precision_bits")
        if precision_bits > MAX_PRECISION_BITS:
            raise ValueError(f"precision_bits must be in [0, {MAX_PRECISION_BITS}], got {precision_bits}")
        self.precision_bits = precision_bits
        self.scale = 2.0**precision_bits
        # Largest float no greater than the largest encoded entry whose n-fold sum still fits in int64.
        max_encoded = (2**63 - 1) // len(ids)
        bound = float(max_encoded)
        if int(bound) > max_encoded:
            bound = math.nextafter(bound, 0.0)
        self._max_encoded = bound

    @property
    def num_clients(self) -> int:
        return len(self.client_ids)

    @property
    def max_abs_input(self) -> float:
        """Largest ``|x|`` accepted by :meth:`mask` (about ``2**(63 - precision_bits) / num_clients``)."""
        return self._max_encoded / self.scale

    def encode(self, vector: Tensor) -> Tensor:
        """Fixed-point encoding ``round(x * 2**precision_bits)`` as ``int64`` (round half to even)."""
        scaled = torch.round(vector.detach().to("cpu", torch.float64) * self.scale)
        if not bool(torch.isfinite(scaled).all()):
            raise ValueError("cannot encode a vector with NaN or infinite entries")
        largest = float(scaled.abs().max()) if scaled.numel() else 0.0
        if largest > self._max_encoded:
            raise OverflowError(
                f"entry of magnitude {largest / self.scale:.6g} exceeds the secure-aggregation bound "
                f"{self.max_abs_input:.6g} = 2**(63 - precision_bits) / num_clients "
                f"(precision_bits={self.precision_bits}, num_clients={self.num_clients}); "
                "the masked sum would wrap around. Scale the inputs down or lower precision_bits"
            )
        return scaled.to(torch.int64)

    def decode(self, encoded: Tensor) -> Tensor:
        """Inverse of :meth:`encode` (as ``float64``)."""
        return encoded.to(torch.float64) / self.scale

    def pair_mask(self, i: int, j: int, round: int, size: int) -> np.ndarray:
        """The mask ``s_ij`` of clients ``i < j`` in ``round``: ``size`` uniform ``uint64`` words."""
        words = np.random.PCG64(np.random.SeedSequence([self.seed, i, j, round])).random_raw(size)
        return np.asarray(words, dtype=np.uint64)

    def mask(self, client_id: int, vector: Tensor, round: int) -> Tensor:
        """Client side: the fixed-point encoding of ``vector`` plus this client's pairwise masks (mod 2**64)."""
        self._check_client(client_id)
        round = _check_nonnegative_int(round, "round")
        encoded = self.encode(vector).reshape(-1).numpy().view(np.uint64).copy()
        for other in self.client_ids:
            if other == client_id:
                continue
            low, high = min(client_id, other), max(client_id, other)
            pad = self.pair_mask(low, high, round, encoded.size)
            if client_id == low:
                encoded += pad
            else:
                encoded -= pad
        return torch.from_numpy(encoded.view(np.int64)).reshape(vector.shape)

    def unmask_sum(
        self, masked: Sequence[Tensor], round: int, client_ids: Sequence[int] | None = None
    ) -> Tensor:
        """Server side: the ``float64`` sum of the clients' vectors from their masked vectors.

        ``masked`` must hold one vector from every client (``client_ids``, when
        given, says whose each one is, and is checked against the full set).
        The masks cancel whatever the round, so ``round`` only labels errors
        here; dropout recovery, which this class does not implement, would
        need it to rebuild a dropped client's masks.
        """
        round = _check_nonnegative_int(round, "round")
        if client_ids is not None:
            ids = [int(c) for c in client_ids]
            if len(ids) != len(masked):
                raise ValueError(f"got {len(masked)} masked vectors but {len(ids)} client ids")
            if len(set(ids)) != len(ids):
                raise ValueError(f"round {round}: a client contributed twice, client ids {ids}")
            unknown = sorted(set(ids) - set(self.client_ids))
            if unknown:
                raise ValueError(f"round {round}: unknown client ids {unknown}; accepted: {list(self.client_ids)}")
            missing = sorted(set(self.client_ids) - set(ids))
            if missing:
                raise ValueError(
                    f"round {round}: no masked vector from clients {missing}; secure aggregation without "
                    "dropout recovery needs every client, otherwise their masks do not cancel"
                )
        elif len(masked) != self.num_clients:
            raise ValueError(
                f"round {round}: got {len(masked)} masked vectors for {self.num_clients} clients; secure "
                "aggregation without dropout recovery needs exactly one from every client"
            )
        shape = masked[0].shape
        for tensor in masked:
            if tensor.dtype != torch.int64 or tensor.shape != shape:
                raise ValueError(
                    f"masked vectors must be int64 tensors of one shape, got {tensor.dtype} {tuple(tensor.shape)} "
                    f"next to int64 {tuple(shape)}"
                )
        total = np.zeros(math.prod(shape), dtype=np.uint64)
        for tensor in masked:
            total += tensor.detach().cpu().contiguous().reshape(-1).numpy().view(np.uint64)
        return self.decode(torch.from_numpy(total.view(np.int64)).reshape(shape))

    def _check_client(self, client_id: int) -> None:
        if client_id not in self.client_ids:
            raise ValueError(f"unknown client id {client_id!r}; accepted: {list(self.client_ids)}")
