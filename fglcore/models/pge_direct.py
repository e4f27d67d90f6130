"""A free pseudo-graph adjacency: O-pFGL's Table 23 alternative (1) to the link predictor :math:`g_\\theta`.

Yan et al., "Towards Federated Graph Learning in One-shot Communication"
(arXiv 2411.11304), App. A.3.9 and Table 23, row "Directly optimize A'". The
authors' code (``Youth-49/O-pFGL``) does not hold this variant; the
parametrisation below is this project's (see :class:`FreePseudoAdjacency`).
"""
from __future__ import annotations

import torch
from torch import Tensor, nn


class FreePseudoAdjacency(nn.Module):
    r"""The pseudo-graph's edge weights as a free :math:`n'\times n'` matrix (O-pFGL App. A.3.9, variant (1)).

    "Make :math:`A'` a learnable matrix and directly optimize :math:`A'`": a
    parameter :math:`Z\in\mathbb R^{n'\times n'}` takes the place of
    :math:`g_\theta(x_i\Vert x_j)` in Eq. 10, with the same symmetrisation,
    squashing and empty diagonal as :class:`~fglcore.models.pge.PseudoGraphEdges`,

    .. math::
        S_{ij} = \sigma\Big(\tfrac{Z_{ij} + Z_{ji}}{2}\Big), \qquad S_{ii} = 0 ,

    so the weights stay in :math:`[0, 1)` and the threshold :math:`\delta` of
    Eq. 10 keeps its meaning (the caller applies it,
    :func:`fglcore.algorithms.opfgl.threshold_edges`). The features are not
    used; ``forward`` takes them only for the interface of the other
    :math:`g_\theta` and checks their number of rows. Choices of this project
    (the paper gives none and the code has no such variant): the sigmoid
    parametrisation and :math:`Z=0` at reset, the complete graph with weight
    :math:`\sigma(0)=1/2` on every pair, which is where the MLP starts on
    average; :math:`Z` is trained by the link predictor's optimiser and
    schedule (``lr_adj``, 10 of every 50 iterations).

    Args:
        num_nodes (int): number of pseudo-nodes :math:`n'`.

    Shapes:
        - **input:** pseudo-node features :math:`(n', F)` (only :math:`n'` is read)
        - **output:** symmetric edge weights :math:`(n', n')` in :math:`(0, 1)`, zero diagonal
    """

    def __init__(self, num_nodes: int):
        super().__init__()
        if num_nodes < 1:
            raise ValueError(f"FreePseudoAdjacency needs num_nodes >= 1, got {num_nodes}")
        self.logits = nn.Parameter(torch.empty(num_nodes, num_nodes))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.zeros_(self.logits)

    def forward(self, x: Tensor) -> Tensor:
        n = self.logits.size(0)
        if x.size(0) != n:
            raise ValueError(f"FreePseudoAdjacency holds {n} pseudo-nodes, got features of {x.size(0)} nodes")
        adj = torch.sigmoid((self.logits + self.logits.t()) / 2)
        return adj - torch.diag(torch.diag(adj))
