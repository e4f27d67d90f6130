"""Parameter-free propagation: powers of the normalised adjacency, or APPNP's personalised PageRank."""
from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.nn import MessagePassing
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.utils import add_remaining_self_loops, degree

NORMALIZATIONS = ("sym", "rw")


class Propagation(MessagePassing):
    r"""``K`` parameter-free propagation steps

    .. math::
        X^{(k)} = (1 - \alpha)\, \hat A X^{(k-1)} + \alpha H, \qquad X^{(0)} = H.

    With ``alpha = 0`` this is :math:`\hat A^K H`; with ``alpha > 0`` it is
    APPNP's approximate personalised PageRank (Klicpera et al., "Predict then
    Propagate", ICLR 2019, Eq. 8). :math:`\hat A` adds self-loops and is
    normalised symmetrically, :math:`\tilde D^{-1/2}\tilde A\tilde D^{-1/2}`
    (``"sym"``, GCN/APPNP), or by rows, :math:`\tilde D^{-1}\tilde A`
    (``"rw"``, FedStruct's :math:`\hat A`, Aliakbari et al., ICLR 2025, §3).
    PyG's :class:`~torch_geometric.nn.conv.APPNP` computes the ``"sym"`` case
    (``tests/test_models.py`` checks the two agree) but has no row
    normalisation, hence this layer.

    Args:
        K (int): propagation steps.
        alpha (float): teleport probability :math:`\alpha \in [0, 1]`.
        normalization (str): ``"sym"`` or ``"rw"``.
        cached (bool): keep the normalised edge weights of the first graph.

    Shapes:
        - **input:** node features :math:`(|\mathcal{V}|, F)`, edge indices :math:`(2, |\mathcal{E}|)`
        - **output:** node features :math:`(|\mathcal{V}|, F)`
    """

    def __init__(self, K: int, alpha: float = 0.0, normalization: str = "sym", cached: bool = False):
        super().__init__(aggr="add")
        if K < 0:
            raise ValueError(f"propagation steps K must be >= 0, got {K}")
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"teleport probability alpha must be in [0, 1], got {alpha}")
        if normalization not in NORMALIZATIONS:
            raise ValueError(f"unknown normalization {normalization!r}; accepted: {', '.join(NORMALIZATIONS)}")
        self.K, self.alpha, self.normalization, self.cached = K, alpha, normalization, cached
        self._cache: tuple[Tensor, Tensor] | None = None

    def reset_parameters(self) -> None:
        """No parameters: forget the cached edge weights."""
        self._cache = None

    def normalized_edges(self, edge_index: Tensor, num_nodes: int, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        """The edges of :math:`\\hat A` (with self-loops) and their weights."""
        if self.cached and self._cache is not None:
            return self._cache
        if self.normalization == "sym":
            edge_index, weight = gcn_norm(edge_index, None, num_nodes, add_self_loops=True, dtype=dtype)
        else:
            edge_index, _ = add_remaining_self_loops(edge_index, num_nodes=num_nodes)
            in_degree = degree(edge_index[1], num_nodes, dtype=dtype)
            weight = in_degree.reciprocal()[edge_index[1]]
        if self.cached:
            self._cache = (edge_index, weight)
        return edge_index, weight

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        edge_index, weight = self.normalized_edges(edge_index, x.size(0), x.dtype)
        h = x
        for _ in range(self.K):
            x = self.propagate(edge_index, x=x, weight=weight)
            if self.alpha > 0:
                x = (1 - self.alpha) * x + self.alpha * h
        return x

    def message(self, x_j: Tensor, weight: Tensor) -> Tensor:
        return weight.view(-1, 1) * x_j

    def __repr__(self) -> str:
        return f"{type(self).__name__}(K={self.K}, alpha={self.alpha}, normalization={self.normalization!r})"
