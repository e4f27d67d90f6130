"""FedStar's feature-structure decoupled GNN (the official code's ``GIN_dc``).

Tan et al., "Federated Learning on Non-IID Graphs via Structural Knowledge
Sharing", AAAI 2023, section "Feature-Structure Decoupled GNN", Fig. 2(a)
and Appendix Table 9. Two parallel channels over the same graph:

.. code-block:: text

    h = feature_encoder(x)                  # f_h^(0): Linear(n_feat, 64)        personal
    g = structure_encoder(s)                # f_g^(0): Linear(n_se, 64)          shared
    for l in 1..L:                          # L = 3
        h = dropout(relu(feature_convs[l]([h || g])))   # f_h^(l): GIN(128, 64)  personal
        g = tanh(structure_convs[l](g))                  # f_g^(l): GCN(64, 64)   shared
    z = [h || g]                            # [N, 128]
    graph = fusion(sum_pool(z))             # Table 9: POOLING, then FC(128, 64) personal
    logits = head(graph)                    # FC(64, 64), ReLU, Dropout, FC(64, C)   personal

The feature layer ``l`` reads the structure embedding of layer ``l - 1``
(the code's loop order); the structure channel never sees features. Only the
structure channel is federated (Eq. 9): its parameters are the ones whose
names start with ``structure_encoder.`` or ``structure_convs.``
(:func:`is_structure_parameter`), the counterpart of the code's rule "the
name contains ``'_s'``" (``embedding_s``, ``graph_convs_s_gcn``). With
hidden 64, three layers and a 32-d structure embedding it holds
32*64 + 64 + 3*(64*64 + 64) = 14,592 parameters, and the whole model
64,898 on MUTAG (7 features, 2 classes), as the code's ``GIN_dc``.

**Fusion order.** Table 9 pools first and then applies FC(128, 64); the
code applies that layer to every node and then pools
(``x = self.Whp(cat(x, s)); x = global_add_pool(x, batch)``). Both are
linear, so they differ only in the bias (``b`` against ``|V| b``). The
default follows the paper; ``fusion_before_pooling=True`` is the code.

``feature_conv`` and ``structure_conv`` swap the backbones (``"gin"``,
``"gcn"``, ``"sage"``) as in Appendix Table 10; each channel keeps its
activation (ReLU with dropout, tanh without) and widths (feature layers read
``2 * hidden``).
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import GCNConv, GINConv, SAGEConv, global_add_pool

from fglcore.models.gin import gin_mlp
from fglcore.models.operators import GraphOperators, apply_conv
from fglcore.models.utils import reset_children

STRUCTURE_CHANNEL = ("structure_encoder", "structure_convs")
"""Modules of the shared structure encoder ``w_g`` (FedStar Eq. 9)."""

FEATURE_LAYERS = ("feature_convs", "fusion")
"""Feature-channel modules whose shapes agree on every client (FedStar Table 2's "FE"; the code's
``serverGIN_dc`` holds them beside the structure channel). ``feature_encoder`` and ``head`` depend on
the client's feature width and class count and are always personal."""


def _gin(in_channels: int, out_channels: int) -> nn.Module:
    return GINConv(gin_mlp(in_channels, out_channels, out_channels))


def _gcn(in_channels: int, out_channels: int) -> nn.Module:
    return GCNConv(in_channels, out_channels)


def _sage(in_channels: int, out_channels: int) -> nn.Module:
    return SAGEConv(in_channels, out_channels, aggr="mean")


CONVS: dict[str, Callable[[int, int], nn.Module]] = {"gin": _gin, "gcn": _gcn, "sage": _sage}
"""Backbone layers of either channel: ``CONVS[name](in_channels, out_channels)``. GIN uses the
two-layer MLP of FedStar's code (Linear, ReLU, Linear; no batch norm), GraphSAGE the mean aggregator."""


def is_structure_parameter(name: str) -> bool:
    """Whether parameter ``name`` (as in ``named_parameters()``) belongs to the shared structure channel ``w_g``
    (FedStar Eq. 9) of a :class:`FeatureStructureGNN` or of its node counterpart
    :class:`~fglcore.models.fedstar_node.NodeFeatureStructureGNN` (whose structure channel is ``structure_convs``)."""
    return name.split(".", 1)[0] in STRUCTURE_CHANNEL


def is_feature_layer_parameter(name: str) -> bool:
    """Whether parameter ``name`` belongs to :data:`FEATURE_LAYERS` (shareable feature layers)."""
    return name.split(".", 1)[0] in FEATURE_LAYERS


def _conv(kind: str, in_channels: int, out_channels: int, which: str) -> nn.Module:
    if kind not in CONVS:
        raise ValueError(f"{which}: {kind!r} is not accepted; accepted: {', '.join(CONVS)}")
    return CONVS[kind](in_channels, out_channels)


class FeatureStructureGNN(nn.Module):
    r"""The feature-structure decoupled GNN of FedStar (Tan et al., AAAI 2023, Fig. 2(a), Table 9; ``GIN_dc``
    in its code); the module docstring gives the equations.

    Called as ``model(x, s, edge_index, batch)`` with node features ``x``
    and structure embeddings ``s`` (FedStar Eqs. 5-7, :mod:`fglcore.data.structure`).
    Written here, not on PyG's ``BasicGNN``: two channels run side by side
    and the feature layers read both.

    Args:
        in_channels: node feature width (client-specific).
        structure_channels: structure embedding width (32 for RWSE + DSE).
        hidden_channels: width of both channels (FedStar: 64).
        out_channels: number of classes (client-specific).
        num_layers: decoupled layers ``L`` (FedStar: 3).
        dropout: after each feature layer and in the head (FedStar: 0.5).
        feature_conv: backbone of the feature channel (``"gin"``).
        structure_conv: backbone of the structure channel (``"gcn"``).
        fusion_before_pooling: apply the fusion layer per node before sum
            pooling (official code) instead of after it (paper, Table 9).

    Shapes:
        - **input:** node features :math:`(|\mathcal{V}|, F)`, structure embeddings :math:`(|\mathcal{V}|, F_s)`,
          edge indices :math:`(2, |\mathcal{E}|)` (or a batch's
          :class:`~fglcore.models.operators.GraphOperators`), ``batch`` :math:`(|\mathcal{V}|)`
        - **output:** logits :math:`(B, C)` for :math:`B` graphs
    """

    def __init__(
        self,
        in_channels: int,
        structure_channels: int,
        hidden_channels: int,
        out_channels: int,
        num_layers: int = 3,
        dropout: float = 0.5,
        *,
        feature_conv: str = "gin",
        structure_conv: str = "gcn",
        fusion_before_pooling: bool = False,
    ):
        super().__init__()
        for key, value in (("in_channels", in_channels), ("structure_channels", structure_channels),
                           ("hidden_channels", hidden_channels), ("out_channels", out_channels),
                           ("num_layers", num_layers)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{key}: must be an integer >= 1, got {value!r}")
        if not 0 <= dropout < 1:
            raise ValueError(f"dropout: must be in [0, 1), got {dropout!r}")
        self.dropout = dropout
        self.fusion_before_pooling = fusion_before_pooling
        hidden = hidden_channels
        self.feature_encoder = nn.Linear(in_channels, hidden)
        self.structure_encoder = nn.Linear(structure_channels, hidden)
        self.feature_convs = nn.ModuleList(
            [_conv(feature_conv, 2 * hidden, hidden, "feature_conv") for _ in range(num_layers)]
        )
        self.structure_convs = nn.ModuleList(
            [_conv(structure_conv, hidden, hidden, "structure_conv") for _ in range(num_layers)]
        )
        self.fusion = nn.Linear(2 * hidden, hidden)
        self.head = nn.Sequential(
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, out_channels),
        )

    def reset_parameters(self) -> None:
        reset_children(self)

    def node_embeddings(
        self, x: Tensor, s: Tensor, edge_index: Tensor | GraphOperators
    ) -> tuple[Tensor, Tensor]:
        """``(h^(L), g^(L))``: the feature and structure embeddings of every node after the last layer.

        ``edge_index`` may also be a batch's sparse operators
        (:class:`~fglcore.models.operators.GraphOperators`, the trainers' fast path: CSR products).
        """
        h = self.feature_encoder(x)
        g = self.structure_encoder(s)
        for feature_conv, structure_conv in zip(self.feature_convs, self.structure_convs):
            h = apply_conv(feature_conv, torch.cat([h, g], dim=-1), edge_index)
            h = F.dropout(F.relu(h), self.dropout, self.training)
            g = torch.tanh(apply_conv(structure_conv, g, edge_index))
        return h, g

    def forward(
        self, x: Tensor, s: Tensor, edge_index: Tensor | GraphOperators, batch: Tensor | None = None
    ) -> Tensor:
        """``batch[i]`` is the graph of node ``i`` (PyG's ``Batch.batch``); ``None`` means one graph."""
        z = torch.cat(self.node_embeddings(x, s, edge_index), dim=-1)
        if self.fusion_before_pooling:
            graph = global_add_pool(self.fusion(z), batch)
        else:
            graph = self.fusion(global_add_pool(z, batch))
        return self.head(graph)
