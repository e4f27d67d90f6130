"""FedStar's feature-structure decoupled GNN adapted to node classification (FedSpray's Table 2 baseline)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import GCNConv, SAGEConv, SGConv

from fglcore.config import ConfigError
from fglcore.models.cached_graph import CachedGraphGuard
from fglcore.models.operators import GraphOperators, apply_conv
from fglcore.models.partly_cached_sgconv import PartlyCachedSGConv
from fglcore.models.sparse_input import apply_conv_to_concat
from fglcore.models.utils import reset_children

BACKBONES = ("gcn", "sgc", "sage")
SGC_HOPS = 2
FEATURE_CHANNEL = "feature_convs"
"""The personal feature channel; the shared structure channel is ``structure_convs`` (:func:`~fglcore.models.fedstar.is_structure_parameter`)."""


def backbone_layer(
    backbone: str, in_channels: int, out_channels: int, *, cached: bool, fixed_channels: int = 0
) -> nn.Module:
    """One layer of ``backbone``: ``GCNConv`` (``cached``: normalised adjacency), ``SAGEConv`` (mean
    aggregator) or ``SGConv`` (``K = 2``). A cached SGC layer caches its propagated input, or with
    ``fixed_channels`` only that many leading input columns (:class:`PartlyCachedSGConv`)."""
    if backbone == "gcn":
        return GCNConv(in_channels, out_channels, cached=cached)
    if backbone == "sage":
        return SAGEConv(in_channels, out_channels, aggr="mean")
    if backbone == "sgc":
        if cached and fixed_channels:
            return PartlyCachedSGConv(in_channels, out_channels, SGC_HOPS, fixed_channels)
        return SGConv(in_channels, out_channels, K=SGC_HOPS, cached=cached)
    raise ConfigError(f"model: {backbone!r} is not accepted by fedstar_node; accepted: {', '.join(BACKBONES)}")


class NodeFeatureStructureGNN(CachedGraphGuard, nn.Module):
    r"""FedStar's feature-structure decoupled GNN (Tan et al., AAAI 2023, Fig. 2(a), Table 9) adapted to node
    classification, our adaptation for FedSpray's Table 2 (:mod:`fglcore.algorithms.fedstar_node` lists
    every choice):

    .. math::
        g^{(0)} = s, \quad h^{(0)} = x, \quad
        g^{(l)} = \tanh(S_l(g^{(l-1)})), \quad
        h^{(l)} = \mathrm{dropout}(\mathrm{ReLU}(F_l([h^{(l-1)} \Vert g^{(l)}]))) \ (l < L), \quad
        \hat Y = F_L([h^{(L-1)} \Vert g^{(L)}]).

    Called as ``model(x, s, edge_index)`` with node features ``x`` and
    structure encodings ``s`` (FedStar Eqs. 5-7). Parameters of the shared
    structure channel are ``structure_convs.*``
    (:func:`~fglcore.models.fedstar.is_structure_parameter`), those of the
    personal feature channel ``feature_convs.*``. Written here, not on PyG's
    ``BasicGNN``: two channels run side by side and the feature layers read both.

    Args:
        in_channels, structure_channels, hidden_channels, out_channels: widths.
        num_layers: ``L`` layers per channel (``gcn``, ``sage``); ``sgc`` has one.
        dropout: after each hidden feature layer (never in the structure channel).
        backbone: ``"gcn"``, ``"sgc"`` or ``"sage"``.
        cached: bind the model to one graph (GCN caches its normalised adjacency,
            the SGC structure layer its propagated encodings).

    Shapes:
        - **input:** node features :math:`(|\mathcal{V}|, F)`, structure encodings :math:`(|\mathcal{V}|, F_s)`,
          edge indices :math:`(2, |\mathcal{E}|)` or the graph's :class:`~fglcore.models.operators.GraphOperators`
        - **output:** logits :math:`(|\mathcal{V}|, C)`
    """

    accepts_graph_operators = True

    def __init__(
        self,
        in_channels: int,
        structure_channels: int,
        hidden_channels: int,
        out_channels: int,
        num_layers: int = 2,
        dropout: float = 0.5,
        *,
        backbone: str = "gcn",
        cached: bool = False,
    ):
        super().__init__()
        self.cached = cached
        for key, value in (("in_channels", in_channels), ("structure_channels", structure_channels),
                           ("hidden_channels", hidden_channels), ("out_channels", out_channels),
                           ("num_layers", num_layers)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{key}: must be an integer >= 1, got {value!r}")
        if not 0 <= dropout < 1:
            raise ValueError(f"dropout: must be in [0, 1), got {dropout!r}")
        if backbone not in BACKBONES:
            raise ValueError(f"backbone: {backbone!r} is not accepted; accepted: {', '.join(BACKBONES)}")
        layers = 1 if backbone == "sgc" else num_layers
        hidden = hidden_channels
        self.backbone = backbone
        self.dropout = dropout
        structure_in = [structure_channels] + [hidden] * (layers - 1)
        feature_in = [in_channels] + [hidden] * (layers - 1)
        feature_out = [hidden] * (layers - 1) + [out_channels]
        # The structure channel's first layer reads the fixed encodings: a cached SGC layer keeps S^K s.
        # The (single) SGC feature layer reads [x || g]: only S^K x is fixed, g trains.
        self.structure_convs = nn.ModuleList(
            [backbone_layer(backbone, i, hidden, cached=cached) for i in structure_in]
        )
        self.feature_convs = nn.ModuleList(
            [
                backbone_layer(backbone, i + hidden, o, cached=cached, fixed_channels=in_channels if j == 0 else 0)
                for j, (i, o) in enumerate(zip(feature_in, feature_out))
            ]
        )

    def reset_parameters(self) -> None:
        reset_children(self)
        self.forget_graph()

    def structure_states(self, s: Tensor, graph: Tensor | GraphOperators) -> list[Tensor]:
        """``[g^(1), ..., g^(L)]``: the structure channel's states (they never depend on features)."""
        states, g = [], s
        for conv in self.structure_convs:
            g = torch.tanh(apply_conv(conv, g, graph))
            states.append(g)
        return states

    def forward(self, x: Tensor, s: Tensor, graph: Tensor | GraphOperators) -> Tensor:
        """``graph`` is the ``edge_index``, or the client's sparse operators (the trainers' fast path,
        :mod:`fglcore.models.operators`: the same numbers, bit for bit)."""
        self.check_graph(x, graph)
        if s.size(0) != x.size(0):
            raise ValueError(f"structure encodings have {s.size(0)} rows but there are {x.size(0)} nodes")
        edge_index = graph.edge_index if isinstance(graph, GraphOperators) else graph
        h, last = x, len(self.feature_convs) - 1
        for i, (conv, g) in enumerate(zip(self.feature_convs, self.structure_states(s, graph))):
            if isinstance(conv, PartlyCachedSGConv):
                h = conv.forward_parts(h, g, edge_index)
            elif i == 0:  # [x || g] with fixed, possibly sparse, node features x
                h = apply_conv_to_concat(conv, h, g, graph)
            else:
                h = apply_conv(conv, torch.cat([h, g], dim=-1), graph)
            if i < last:
                h = F.dropout(F.relu(h), self.dropout, self.training)
        return h
