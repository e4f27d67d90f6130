"""FedLit's multi-channel GNN: one message-passing channel per latent link type."""
from __future__ import annotations

import torch
from torch import Tensor, nn

from fglcore.models.link_type_channel import LinkTypeChannel
from fglcore.models.utils import reset_children


class MultiChannelGNN(nn.Module):
    r"""FedLit's multi-channel GNN (Xie, Xiong and Yang, "Federated Node Classification over Graphs with
    Latent Link-type Heterogeneity", WWW 2023; official code ``multichannel_GCN``): the shared projection,
    one :class:`~fglcore.models.link_type_channel.LinkTypeChannel` per link type, the shared classifier,

    .. math::
        h_v = W_0 x_v + b_0, \qquad
        \hat y_v = W_c \sum_{k:\, v \in V(E_k)} z^{(k)}_v + b_c,

    where :math:`z^{(k)}` is channel :math:`k` on the edges of type :math:`k`
    and a node no type-:math:`k` edge touches gets nothing from channel
    :math:`k` (:mod:`fglcore.algorithms.fedlit` explains the method).

    Args:
        in_channels (int): node feature width :math:`F`.
        hidden (int): projection and channel width :math:`H`.
        out_channels (int): number of classes :math:`C`.
        num_link_types (int): number of channels :math:`K`.
        backbone (str): channel layer, ``"gcn"``, ``"sgc"`` or ``"sage"``.
        num_layers (int): message-passing layers per channel.
        dropout (float): dropout in the channels.
        self_loops (bool): self-loops in the ``gcn``/``sgc`` channel layers.

    Shapes:
        - **input:** node features :math:`(|\mathcal{V}|, F)`, edge indices :math:`(2, |\mathcal{E}|)`,
          link types :math:`(|\mathcal{E}|)` with values in :math:`[0, K)`
        - **output:** logits :math:`(|\mathcal{V}|, C)`
    """

    def __init__(
        self,
        in_channels: int,
        hidden: int,
        out_channels: int,
        num_link_types: int,
        backbone: str = "gcn",
        num_layers: int = 2,
        dropout: float = 0.0,
        self_loops: bool = False,
    ):
        super().__init__()
        self.hidden = hidden
        self.project = nn.Linear(in_channels, hidden)
        self.channels = nn.ModuleList(
            LinkTypeChannel(hidden, backbone, num_layers, dropout, self_loops) for _ in range(num_link_types)
        )
        self.classifier = nn.Linear(hidden, out_channels)

    def reset_parameters(self) -> None:
        reset_children(self)

    @property
    def num_link_types(self) -> int:
        return len(self.channels)

    def combine(self, h: Tensor, edge_index: Tensor, link_types: Tensor) -> Tensor:
        """Logits from projected features ``h``: channel ``k`` on the type-``k`` edges, summed, classified."""
        if link_types.shape != edge_index.shape[1:]:
            raise ValueError(
                f"link_types must hold one type per edge: {edge_index.size(1)} edges, "
                f"got shape {tuple(link_types.shape)}"
            )
        n = h.size(0)
        out = h.new_zeros(n, self.hidden)
        for k, channel in enumerate(self.channels):
            edges = edge_index[:, link_types == k]
            if edges.size(1) == 0:
                continue
            touched = torch.zeros(n, dtype=torch.bool, device=h.device)
            touched[edges.reshape(-1)] = True
            out = out + channel(h, edges) * touched.unsqueeze(1)
        return self.classifier(out)

    def forward(self, x: Tensor, edge_index: Tensor, link_types: Tensor) -> Tensor:
        return self.combine(self.project(x), edge_index, link_types)
