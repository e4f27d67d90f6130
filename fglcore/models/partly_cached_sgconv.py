"""``SGConv`` over ``[fixed || trained]`` features whose fixed part is propagated once (FedStar's node model, SGC)."""
from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn import SGConv
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.utils import to_torch_csr_tensor

from fglcore.models.operators import SparseOperator, csr_product


class PartlyCachedSGConv(SGConv):
    r"""``SGConv`` (Wu et al., ICML 2019, Eq. 8) over ``[x_fixed || x_trained]`` whose propagated fixed part is
    computed once.

    ``Lin(S^K [a || b]) = W_a S^K a + W_b S^K b + bias``, so the output equals
    ``SGConv`` on the concatenation while only the last ``in_channels -
    fixed_channels`` columns (the structure states, which change as they
    train) are propagated each call, as one sparse product per hop with the
    normalised adjacency ``S`` kept from the first call. Exact while the first
    ``fixed_channels`` columns (the node features) and the graph stay the
    same: a cached model's contract. Parameters and their names are
    ``SGConv``'s (``lin.weight``, ``lin.bias``).

    Args:
        in_channels (int): width of ``[fixed || trained]``.
        out_channels (int): output width.
        K (int): propagation steps.
        fixed_channels (int): width of the fixed leading part, in ``[1, in_channels - 1]``.

    Shapes:
        - **input:** ``[fixed || trained]`` :math:`(|\mathcal{V}|, F_{in})` (or the two parts to
          :meth:`forward_parts`), edge indices :math:`(2, |\mathcal{E}|)`
        - **output:** node features :math:`(|\mathcal{V}|, F_{out})`
    """

    def __init__(self, in_channels: int, out_channels: int, K: int, fixed_channels: int):
        super().__init__(in_channels, out_channels, K=K, cached=False)
        if not 0 < fixed_channels < in_channels:
            raise ValueError(f"fixed_channels: must be in [1, {in_channels - 1}], got {fixed_channels}")
        self.fixed_channels = fixed_channels
        self._cached_adjacency: Tensor | None = None
        self._cached_product: SparseOperator | None = None  # the adjacency, its transpose once built
        self._cached_fixed: Tensor | None = None

    def reset_parameters(self) -> None:
        super().reset_parameters()
        self._cached_adjacency = None
        self._cached_product = None
        self._cached_fixed = None

    def _propagate_k(self, x: Tensor) -> Tensor:
        r""":math:`S^K x`: ``torch.sparse.mm`` for a constant ``x``; for a trained one
        :func:`~fglcore.models.operators.csr_product`, the values and gradients of ``torch.sparse.mm(S, x, "sum")``
        with :math:`S^\top` kept instead of rebuilt at every backward pass (most of an SGC step of FedStar's node
        model on Physics). PyTorch's plain CSR product may go to MKL, which on some CPUs (AVX-512) sums in another
        order: the same up to rounding."""
        if not x.requires_grad:
            for _ in range(self.K):
                x = torch.sparse.mm(self._cached_adjacency, x)
            return x
        # __dict__.get: a layer pickled before the product was kept has none (or, older, a [matrix, transpose] list)
        if not isinstance(self.__dict__.get("_cached_product"), SparseOperator):
            self._cached_product = SparseOperator(self._cached_adjacency)
        for _ in range(self.K):
            x = csr_product(self._cached_product, x)
        return x

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        """``SGConv(x)`` with ``x = [fixed || trained]``; see :meth:`forward_parts`."""
        if edge_weight is not None:
            raise ValueError("PartlyCachedSGConv does not take edge weights")
        f = self.fixed_channels
        return self.forward_parts(x[:, :f], x[:, f:], edge_index)

    def forward_parts(self, fixed: Tensor, trained: Tensor, edge_index: Tensor) -> Tensor:
        """``SGConv([fixed || trained])`` without forming the concatenation."""
        n, f = fixed.size(0), self.fixed_channels
        if fixed.size(1) != f or trained.size(1) != self.in_channels - f:
            raise ValueError(
                f"expected {f} fixed and {self.in_channels - f} trained columns, got {fixed.size(1)} and "
                f"{trained.size(1)}"
            )
        if self._cached_adjacency is None:
            edge_index, weight = gcn_norm(edge_index, None, n, False, self.add_self_loops, self.flow,
                                          dtype=trained.dtype)
            # out[i] = sum over edges j -> i of w_ji x_j (flow source_to_target): row i, column j.
            with warnings.catch_warnings():  # torch's notes that CSR tensors are beta and unchecked
                warnings.filterwarnings("ignore", message="Sparse (CSR tensor support|invariant checks)")
                self._cached_adjacency = to_torch_csr_tensor(edge_index.flip(0), weight, size=(n, n))
        if self._cached_fixed is None:
            self._cached_fixed = self._propagate_k(fixed.detach())
        weight = self.lin.weight
        out = F.linear(self._cached_fixed, weight[:, :f], self.lin.bias)
        return out + F.linear(self._propagate_k(trained), weight[:, f:])
