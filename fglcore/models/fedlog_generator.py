"""FedLoG's neighbour generator: the features of one neighbour of a (synthetic) node.

Kim et al., "Subgraph Federated Learning for Local Generalization" (FedLoG),
ICLR 2025, Sec. 4; official code ``embedder/Neighgen.py`` (``neighGen``/``Gen``).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class NeighborGenerator(nn.Module):
    r""":math:`\tanh(W_3\,\mathrm{dropout}(\mathrm{ReLU}(W_2\,\mathrm{ReLU}(W_1x))))`: Linear(F, 256), ReLU,
    Linear(256, 512), ReLU, dropout 0.5, Linear(512, F), tanh -- the code's ``Gen`` (``num_pred`` = 1).

    Args:
        channels (int): feature width :math:`F`.
        hidden (tuple): the two hidden widths (256, 512).
        dropout (float): dropout before the last layer (0.5).

    Shapes:
        - **input:** node features :math:`(N, F)`
        - **output:** generated neighbour features :math:`(N, F)` in :math:`(-1, 1)`
    """

    def __init__(self, channels: int, hidden: tuple[int, int] = (256, 512), dropout: float = 0.5):
        super().__init__()
        self.fc1 = nn.Linear(channels, hidden[0])
        self.fc2 = nn.Linear(hidden[0], hidden[1])
        self.fc_flat = nn.Linear(hidden[1], channels)
        self.dropout = dropout

    def reset_parameters(self) -> None:
        for layer in (self.fc1, self.fc2, self.fc_flat):
            layer.reset_parameters()

    def forward(self, x: Tensor) -> Tensor:
        x = F.relu(self.fc2(F.relu(self.fc1(x))))
        x = F.dropout(x, self.dropout, training=self.training)
        return torch.tanh(self.fc_flat(x))
