"""FedSage+'s feature generator fGen (Zhang et al., NeurIPS 2021, Sec. 3.3)."""
from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class FeatureGenerator(nn.Module):
    r"""fGen of NeighGen (Zhang et al., "Subgraph Federated Learning with Missing Neighbor Generation",
    NeurIPS 2021, Sec. 3.3): from a node's embedding :math:`z_v` and Gaussian noise
    :math:`\epsilon \sim \mathcal N(0, I)` it generates the features of ``num_pred`` candidate missing
    neighbours,

    .. math::
        \tilde x_v = \tanh\!\big(W_3\,\mathrm{dropout}(\mathrm{ReLU}(W_2\,\mathrm{ReLU}(W_1 (z_v + \epsilon)
        + b_1) + b_2)) + b_3\big) \in \mathbb R^{P \cdot F},

    reshaped to :math:`P \times F` (:math:`P` = ``num_pred``); NeighGen keeps the first :math:`\tilde n_v`
    of them, :math:`\tilde n_v` being dGen's count. The widths (256, 2048), the dropout before the
    last layer and the ``tanh`` output are the official code's (``zkhku/fedsage``
    ``src/models/models.py`` ``Gen``; FedStruct's port uses the same ``[256, 2048]``); the paper only
    says "fGen is a feature generator with a Gaussian noise generator".

    Args:
        latent_channels (int): width of :math:`z_v`.
        feature_channels (int): node feature width :math:`F`.
        num_pred (int): candidate neighbours :math:`P` generated per node.
        hidden (sequence of int): hidden widths (default ``(256, 2048)``).
        dropout (float): dropout before the output layer.

    Shapes:
        - **input:** embeddings :math:`(N, d_z)`; optional noise :math:`(N, d_z)` (drawn from the global
          generator when not given, so a caller that must reproduce or ship the noisy input draws it itself)
        - **output:** generated features :math:`(N, P, F)`
    """

    def __init__(self, latent_channels: int, feature_channels: int, num_pred: int,
                 hidden: Sequence[int] = (256, 2048), dropout: float = 0.5):
        super().__init__()
        self.feature_channels = int(feature_channels)
        self.num_pred = int(num_pred)
        self.dropout = float(dropout)
        widths = [int(latent_channels), *map(int, hidden)]
        self.hidden = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:]))
        self.out = nn.Linear(widths[-1], self.num_pred * self.feature_channels)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for layer in self.hidden:
            layer.reset_parameters()
        self.out.reset_parameters()

    def forward(self, z: Tensor, noise: Tensor | None = None) -> Tensor:
        if noise is None:
            noise = torch.randn_like(z)
        h = z + noise
        for layer in self.hidden:
            h = F.relu(layer(h))
        h = F.dropout(h, self.dropout, training=self.training)
        return torch.tanh(self.out(h)).view(-1, self.num_pred, self.feature_channels)
