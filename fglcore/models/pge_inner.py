"""Pseudo-graph edges from feature similarity: O-pFGL's Table 23 alternative (2) to the link predictor.

Yan et al., "Towards Federated Graph Learning in One-shot Communication"
(arXiv 2411.11304), App. A.3.9 and Table 23, row :math:`A'=\\langle x_i, x_j\\rangle`.
The authors' code (``Youth-49/O-pFGL``) does not hold this variant; see
:class:`InnerProductEdges` for the choices made here.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class InnerProductEdges(nn.Module):
    r"""Edge weights as the inner product of L2-normalised pseudo-node features (O-pFGL App. A.3.9, variant (2)).

    ":math:`A'` is determined by the dot product of (normalized) node
    features":

    .. math::
        S_{ij} = \langle \hat x_i, \hat x_j\rangle, \quad \hat x_i = x_i / \max(\Vert x_i\Vert_2, \epsilon),
        \qquad S_{ii} = 0 ,

    the cosine similarity, in :math:`[-1, 1]`. No parameter: the graph
    follows :math:`X'` (gradients reach :math:`X'` through it). Choices of
    this project (the paper gives no more and the code has no such variant):
    the normalisation is applied (the paper's "(normalized)"; raw dot
    products of the :math:`N(0,1)` start grow with :math:`F`), and no
    sigmoid: the threshold :math:`\delta` of Eq. 10
    (:func:`fglcore.algorithms.opfgl.threshold_edges`) then keeps the pairs
    with similarity at least :math:`\delta` and drops the dissimilar ones,
    where :math:`\sigma(\cos)\ge\sigma(-1)\approx0.27` would keep every pair.

    Args:
        eps (float): the smallest norm divided by (default 1e-12, ``F.normalize``'s).

    Shapes:
        - **input:** pseudo-node features :math:`(n', F)`
        - **output:** symmetric edge weights :math:`(n', n')` in :math:`[-1, 1]`, zero diagonal
    """

    def __init__(self, eps: float = 1e-12):
        super().__init__()
        self.eps = eps

    def reset_parameters(self) -> None:
        """Nothing to reset (no parameter)."""

    def forward(self, x: Tensor) -> Tensor:
        unit = F.normalize(x, p=2.0, dim=1, eps=self.eps)
        adj = unit @ unit.t()
        adj = (adj + adj.t()) / 2  # exact symmetry under floating point
        return adj - torch.diag(torch.diag(adj))
