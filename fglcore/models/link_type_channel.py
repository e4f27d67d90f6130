"""One link-type channel of FedLit's multi-channel GNN."""
from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import GCNConv, SAGEConv, SGConv

from fglcore.models.utils import reset_children

BACKBONES = ("gcn", "sgc", "sage")


class LinkTypeChannel(nn.Module):
    r"""One channel of FedLit's multi-channel GNN (Xie, Xiong and Yang, WWW 2023; official code
    ``multichannel_GCN``): a linear layer (code ``feature2``) then the backbone's message passing on the
    edges of one link type :math:`k`,

    .. math::
        z^{(k)} = \mathrm{GNN}_k(W_k h + b_k, E_k),

    with ReLU and dropout after every ``GCNConv``/``SAGEConv`` layer; an
    ``sgc`` channel is one ``SGConv`` with ``K = num_layers`` steps and, as
    SGC, no ReLU or dropout. Written here, not on PyG's ``BasicGNN``: the
    linear layer comes first and the last layer is followed by ReLU and
    dropout too (the code's).

    Args:
        hidden (int): width of the projection it reads and of its output.
        backbone (str): ``"gcn"``, ``"sgc"`` or ``"sage"``.
        num_layers (int): message-passing layers (``sgc``: propagation steps).
        dropout (float): dropout rate after each layer (not ``sgc``).
        self_loops (bool): self-loops in the ``gcn``/``sgc`` layers (DGL's ``GraphConv`` in the code: none).

    Shapes:
        - **input:** projected node features :math:`(|\mathcal{V}|, H)`, the type-:math:`k` edges
          :math:`(2, |\mathcal{E}_k|)`
        - **output:** node features :math:`(|\mathcal{V}|, H)`
    """

    def __init__(self, hidden: int, backbone: str, num_layers: int, dropout: float, self_loops: bool):
        super().__init__()
        if backbone not in BACKBONES:
            raise ValueError(f"unknown FedLit channel backbone {backbone!r}; accepted: {', '.join(BACKBONES)}")
        self.backbone = backbone
        self.dropout = dropout
        self.lin = nn.Linear(hidden, hidden)
        if backbone == "sgc":
            convs = [SGConv(hidden, hidden, K=num_layers, add_self_loops=self_loops)]
        elif backbone == "gcn":
            convs = [GCNConv(hidden, hidden, add_self_loops=self_loops) for _ in range(num_layers)]
        else:
            convs = [SAGEConv(hidden, hidden) for _ in range(num_layers)]
        self.convs = nn.ModuleList(convs)

    def reset_parameters(self) -> None:
        reset_children(self)

    def forward(self, h: Tensor, edge_index: Tensor) -> Tensor:
        x = self.lin(h)
        for conv in self.convs:
            x = conv(x, edge_index)
            if self.backbone != "sgc":
                x = F.dropout(F.relu(x), p=self.dropout, training=self.training)
        return x
