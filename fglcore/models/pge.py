"""The pseudo-graph link predictor :math:`g_\\theta` of O-pFGL (GCond's "PGE").

Yan et al., "Towards Federated Graph Learning in One-shot Communication"
(arXiv 2411.11304), Sec. 4.3, Eq. 10 and App. A.3.9; the structure generator
is GCond's PGE (Jin et al., "Graph Condensation for Graph Neural Networks",
ICLR 2022, Eq. 6), as in the authors' ``model.py`` (``PGE``).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class PseudoGraphEdges(nn.Module):
    r"""Edge weights of a pseudo-graph from its node features (O-pFGL Eq. 10, before thresholding).

    For every ordered pair :math:`(i, j)` of the :math:`n'` pseudo-nodes a
    3-layer MLP :math:`g_\theta` scores :math:`x_i \Vert x_j`; the matrix is
    symmetrised, squashed and its diagonal removed:

    .. math::
        S_{ij} = \sigma\Big(\tfrac{g_\theta(x_i\Vert x_j) + g_\theta(x_j\Vert x_i)}{2}\Big), \qquad S_{ii} = 0 .

    :math:`g_\theta` is ``Linear(2F, H) -> BatchNorm1d -> ReLU -> Linear(H, H)
    -> BatchNorm1d -> ReLU -> Linear(H, 1)`` (``num_layers`` linear layers,
    ``H = hidden`` = 128, 256 for ogbn-arxiv in the code). BatchNorm runs over
    the :math:`n'^2` pairs of one call. The thresholding :math:`S_{ij}\ge\delta`
    of Eq. 10 is the caller's (:func:`fglcore.algorithms.opfgl.threshold_edges`).

    The authors' ``PGE.inference`` does not switch to eval mode (the line is
    commented out), so the shipped adjacency is computed with batch
    statistics as during training; :func:`fglcore.algorithms.opfgl.condense`
    does the same.

    Args:
        in_channels (int): pseudo-node feature width :math:`F`.
        hidden_channels (int): hidden width :math:`H` (default 128).
        num_layers (int): number of linear layers (default 3, the paper's "3-layer MLP").

    Shapes:
        - **input:** pseudo-node features :math:`(n', F)`
        - **output:** symmetric edge weights :math:`(n', n')` in :math:`[0, 1)`, zero diagonal
    """

    def __init__(self, in_channels: int, hidden_channels: int = 128, num_layers: int = 3):
        super().__init__()
        if num_layers < 2:
            raise ValueError(f"PseudoGraphEdges needs num_layers >= 2, got {num_layers}")
        widths = [2 * in_channels] + [hidden_channels] * (num_layers - 1) + [1]
        self.lins = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:]))
        self.norms = nn.ModuleList(nn.BatchNorm1d(hidden_channels) for _ in range(num_layers - 1))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for module in (*self.lins, *self.norms):
            module.reset_parameters()

    def forward(self, x: Tensor) -> Tensor:
        n = x.size(0)
        source = torch.arange(n, device=x.device).repeat_interleave(n)  # (i, j) in row-major order
        target = torch.arange(n, device=x.device).repeat(n)
        h = torch.cat([x[source], x[target]], dim=1)
        for lin, norm in zip(self.lins[:-1], self.norms):
            h = F.relu(norm(lin(h)))
        scores = self.lins[-1](h).view(n, n)
        adj = torch.sigmoid((scores + scores.t()) / 2)
        return adj - torch.diag(torch.diag(adj))
