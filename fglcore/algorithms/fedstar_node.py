"""FedStar adapted to node classification: the FedStar baseline of FedSpray's Table 2.

FedStar (Tan et al., "Federated Learning on Non-IID Graphs via Structural
Knowledge Sharing", AAAI 2023) is a graph-classification method
(:mod:`fglcore.algorithms.fedstar`). FedSpray (Fu et al., "Federated
Graph Learning with Structure Proxy Alignment", KDD 2024, §5.1.2, App. B.2)
compares against it on node classification (Table 2) without saying how it
was adapted. **This module is our adaptation**, following the FedSpray
digest's recommended reading (§8.5 item 17): keep FedStar's decoupling and
its sharing rule, and use FedSpray's own 2-layer backbones, Adam, lr 0.003
and ``E = 5`` (the config's values; see ``params/``).

Every choice, with the FedStar equation or code it follows:

1. **Structure encodings** (FedStar Eqs. 5-7, :mod:`fglcore.data.structure`).
   A client's subgraph is one graph: each node gets ``s_v = [RWSE || DSE]``
   (16 random-walk return probabilities ``(T^k)_vv``, ``T = A D^-1``, then the
   16-slot one-hot of ``clip(degree, 1, 16)``, in the official code's order;
   isolated nodes take the degree-1 slot and zero return probabilities),
   computed on the client's own edges (a client knows nothing of its
   cross-client edges). They are computed once
   per client when the algorithm is built (and cached on disk for the
   random-walk kinds by :func:`~fglcore.data.structure.structure_encodings`),
   never per round. Options ``encoding`` (``rw_dg``, ``rw``, ``dg``, ``ones``;
   FedStar Table 3), ``rw_steps`` (``k2``), ``degree_slots`` (``k1``) and
   ``ones_width`` as in the graph version.
2. **Decoupled model** (:class:`NodeFeatureStructureGNN`; FedStar Fig. 2(a),
   Table 9, code ``GIN_dc``). Two channels of ``L`` layers of the config's
   backbone (``model``: ``gcn``, ``sgc`` or ``sage``; ``num_layers``,
   ``hidden``, ``dropout``)::

       g^(0) = s,   h^(0) = x
       g^(l) = tanh(S_l(g^(l-1)))                 l = 1..L   structure channel, shared
       h^(l) = ReLU(F_l([h^(l-1) || g^(l)]))      l = 1..L-1 feature channel, personal (+ dropout)
       logits = F_L([h^(L-1) || g^(L)])

   The structure channel never reads features, has tanh and no dropout, as
   FedStar's. The feature channel is the 2-layer backbone itself (widths
   ``d_x + H -> H -> C``), each layer reading the concatenation of the
   feature and structure states. **Deviations, forced by the node task:**
   FedStar's input projections ``FC(n_feat, 64)`` / ``FC(32, 64)``, its fusion
   layer, pooling and two-layer head are not there, because FedSpray's
   baselines are "the same 2-layer GNN" whose last layer maps to the classes;
   so the structure channel starts with a backbone layer over ``s`` and the
   feature layer ``l`` reads the structure state of layer ``l`` (FedStar:
   ``l - 1``, where state 0 is the projection ``FC(s)``). The last feature
   layer reading ``[h || g]`` plays the role of FedStar's readout of the
   concatenated channels. SGC has one layer (``K = 2`` propagations then one
   linear map, FedSpray's ``SGConv(d_x, C, K=2)``): ``g = tanh(SGConv(s))``
   (``d_s -> H``) and ``logits = SGConv([x || g])``; ``num_layers`` does not
   apply to it, as for the plain SGC. ``S^K x`` is computed once
   (:class:`PartlyCachedSGConv`); only ``g`` is propagated each step.
3. **Sharing** (FedStar Eq. 9, Alg. 1): the server averages only the
   structure channel ``structure_convs.*`` weighted by the clients' numbers of
   *training nodes* (the node counterpart of FedStar's training graphs), and
   every client overwrites its copy in place before local training. The
   server's random structure channel is sent before round 1, so all clients
   start from the same one; their personal feature channels are drawn one
   after the other from ``config.seed`` (FedStar's ``setup_devices``). All
   clients take part every round.
4. **Local training**: full-batch cross-entropy on the training nodes,
   ``config.local_epochs`` steps a round; each client's Adam state
   **persists across rounds** (FedStar's code keeps one optimizer per client
   for the whole run); ``reset_optimizer=True`` clears it every round.
   Weight decay, dropout, rounds and model selection are the config's (the
   same for every method of FedSpray's Table 2).

Options (``algorithm_options``): ``share`` -- ``"structure"`` (FedStar),
``"feature"`` (only the feature channel), ``"all"`` (FedAvg of the whole
decoupled model) or ``"none"`` (each client trains its decoupled model
alone), mirroring FedStar's Table 2 ablation; ``encoding``, ``rw_steps``,
``degree_slots``, ``ones_width``; ``reset_optimizer``.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Mapping

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv, SAGEConv, SGConv
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.utils import to_torch_csr_tensor

from fglcore.algorithms.base import Algorithm, register_algorithm
from fglcore.algorithms.fedstar import (
    STRUCTURE_OPTIONS,
    build_partly_shared,
    checked_structure_options,
    structure_encoding,
)
from fglcore.algorithms.training import NodeTrainer
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.data.structure import ENCODINGS, StructureEncoding, structure_encodings
from fglcore.fl.channel import Channel
from fglcore.fl.engine import Client, Server
from fglcore.models.node import CachedGraphGuard, reset_children
from fglcore.models.operators import GraphOperators, apply_conv
from fglcore.runtime import set_seed

BACKBONES = ("gcn", "sgc", "sage")
SHARE_MODES = ("structure", "feature", "all", "none")
SGC_HOPS = 2
STRUCTURE_CHANNEL = "structure_convs"
FEATURE_CHANNEL = "feature_convs"


class PartlyCachedSGConv(SGConv):
    """``SGConv`` over ``[x_fixed || x_trained]`` whose propagated fixed part is computed once.

    ``Lin(S^K [a || b]) = W_a S^K a + W_b S^K b + bias``, so the output equals
    ``SGConv`` on the concatenation while only the last ``in_channels -
    fixed_channels`` columns (the structure states, which change as they
    train) are propagated each call, as one sparse product per hop with the
    normalised adjacency ``S`` kept from the first call. Exact while the first
    ``fixed_channels`` columns (the node features) and the graph stay the
    same: a cached model's contract. Parameters and their names are
    ``SGConv``'s (``lin.weight``, ``lin.bias``).
    """

    def __init__(self, in_channels: int, out_channels: int, K: int, fixed_channels: int):
        super().__init__(in_channels, out_channels, K=K, cached=False)
        if not 0 < fixed_channels < in_channels:
            raise ValueError(f"fixed_channels: must be in [1, {in_channels - 1}], got {fixed_channels}")
        self.fixed_channels = fixed_channels
        self._cached_adjacency: Tensor | None = None
        self._cached_fixed: Tensor | None = None

    def reset_parameters(self) -> None:
        super().reset_parameters()
        self._cached_adjacency = None
        self._cached_fixed = None

    def _propagate_k(self, x: Tensor) -> Tensor:
        for _ in range(self.K):
            x = torch.sparse.mm(self._cached_adjacency, x)
        return x

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        """``SGConv(x)`` with ``x = [fixed || trained]``; see :meth:`forward_parts`."""
        if edge_weight is not None:
            raise ValueError("PartlyCachedSGConv does not take edge weights")
        f = self.fixed_channels
        return self.forward_parts(x[:, :f], x[:, f:], edge_index)

    def forward_parts(self, fixed: Tensor, trained: Tensor, edge_index: Tensor) -> Tensor:
        """``SGConv([fixed || trained])`` without forming the concatenation."""
        n, f = fixed.size(0), self.fixed_channels
        if fixed.size(1) != f or trained.size(1) != self.in_channels - f:
            raise ValueError(
                f"expected {f} fixed and {self.in_channels - f} trained columns, got {fixed.size(1)} and "
                f"{trained.size(1)}"
            )
        if self._cached_adjacency is None:
            edge_index, weight = gcn_norm(edge_index, None, n, False, self.add_self_loops, self.flow,
                                          dtype=trained.dtype)
            # out[i] = sum over edges j -> i of w_ji x_j (flow source_to_target): row i, column j.
            with warnings.catch_warnings():  # torch's notes that CSR tensors are beta and unchecked
                warnings.filterwarnings("ignore", message="Sparse (CSR tensor support|invariant checks)")
                self._cached_adjacency = to_torch_csr_tensor(edge_index.flip(0), weight, size=(n, n))
        if self._cached_fixed is None:
            self._cached_fixed = self._propagate_k(fixed.detach())
        weight = self.lin.weight
        out = F.linear(self._cached_fixed, weight[:, :f], self.lin.bias)
        return out + F.linear(self._propagate_k(trained), weight[:, f:])


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


class NodeFeatureStructureGNN(CachedGraphGuard):
    """FedStar's feature-structure decoupled GNN for node classification (see the module docstring).

    Called as ``model(x, s, edge_index)`` with node features ``x`` ``[N, in_channels]`` and
    structure encodings ``s`` ``[N, structure_channels]``; returns logits ``[N, out_channels]``.
    Parameters of the shared structure channel are ``structure_convs.*``
    (:func:`is_structure_parameter`), those of the personal feature channel ``feature_convs.*``.

    Args:
        in_channels, structure_channels, hidden_channels, out_channels: widths.
        num_layers: ``L`` layers per channel (``gcn``, ``sage``); ``sgc`` has one.
        dropout: after each hidden feature layer (never in the structure channel).
        backbone: ``"gcn"``, ``"sgc"`` or ``"sage"``.
        cached: bind the model to one graph (GCN caches its normalised adjacency,
            the SGC structure layer its propagated encodings).
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
        super().__init__(cached)
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
            else:
                h = apply_conv(conv, torch.cat([h, g], dim=-1), graph)
            if i < last:
                h = F.dropout(F.relu(h), self.dropout, self.training)
        return h


def is_structure_parameter(name: str) -> bool:
    """Whether parameter ``name`` belongs to the shared structure channel (FedStar Eq. 9's ``w_g``)."""
    return name.split(".", 1)[0] == STRUCTURE_CHANNEL


def shared_parameter_predicate(share: str) -> Callable[[str], bool]:
    """Which parameters of a :class:`NodeFeatureStructureGNN` the server averages under ``share``."""
    if share not in SHARE_MODES:
        raise ConfigError(f"algorithm_options.share: {share!r} is not accepted; accepted: {', '.join(SHARE_MODES)}")
    prefixes = {
        "structure": (STRUCTURE_CHANNEL,),
        "feature": (FEATURE_CHANNEL,),
        "all": (STRUCTURE_CHANNEL, FEATURE_CHANNEL),
        "none": (),
    }[share]
    return lambda name: name.split(".", 1)[0] in prefixes


def client_structure_encoding(data: Data, encoding: StructureEncoding, *, cache: bool = True) -> Tensor:
    """``float32[data.num_nodes, encoding.width]``: the encodings of one client subgraph, as one graph."""
    return structure_encodings([data], encoding, cache=cache)[0]


class StructureNodeTrainer(NodeTrainer):
    """A full-batch :class:`NodeTrainer` whose model also reads the client's structure encodings ``s``."""

    def __init__(self, model: nn.Module, data: Data, s: Tensor, config: ExperimentConfig, device: torch.device):
        if s.size(0) != data.num_nodes:
            raise ValueError(f"structure encodings have {s.size(0)} rows but the client has {data.num_nodes} nodes")
        super().__init__(model, data, config, device)
        self.s = s.to(device)

    def forward(self) -> Tensor:
        return self.model(self.x, self.s, self.graph)


@register_algorithm
class FedStarNode(Algorithm):
    """FedStar (Tan et al., AAAI 2023) adapted to node classification as FedSpray's (Fu et al., KDD 2024)
    Table 2 baseline; every choice is listed in :mod:`fglcore.algorithms.fedstar_node`."""

    name = "fedstar_node"
    tasks = ("node",)
    default_options = {"share": "structure", **STRUCTURE_OPTIONS, "reset_optimizer": False}
    option_choices = {"share": SHARE_MODES, "encoding": ENCODINGS}
    citation = (
        "Tan et al., Federated Learning on Non-IID Graphs via Structural Knowledge Sharing, AAAI 2023; "
        "adapted to node classification for Fu et al., Federated Graph Learning with Structure Proxy Alignment, "
        "KDD 2024 (Table 2)"
    )

    @classmethod
    def check_config(cls, config: ExperimentConfig) -> None:
        super().check_config(config)
        if config.model not in BACKBONES:
            raise ConfigError(
                f"model: {config.model!r} is not a backbone of fedstar_node; accepted: {', '.join(BACKBONES)} "
                "(FedSpray's Table 2 backbones)"
            )

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> dict[str, Any]:
        return checked_structure_options(super().check_options(options))

    def __init__(self, config: ExperimentConfig, federation: Any, device: torch.device | str):
        super().__init__(config, federation, device)
        self._encodings: dict[int, Tensor] = {}

    @property
    def encoding(self) -> StructureEncoding:
        return structure_encoding(self.options)

    def structure_encoding_of(self, cid: int) -> Tensor:
        """Client ``cid``'s structure encodings, computed on its first use and kept."""
        if cid not in self._encodings:
            self._encodings[cid] = client_structure_encoding(self.clients_data[cid], self.encoding)
        return self._encodings[cid]

    def make_model(self, in_channels: int, out_channels: int) -> nn.Module:
        c = self.config
        return NodeFeatureStructureGNN(
            in_channels,
            self.encoding.width,
            c.hidden,
            out_channels,
            num_layers=c.num_layers,
            dropout=c.dropout,
            backbone=c.model,
            cached=True,
        )

    def init_models(self) -> tuple[nn.Module, list[nn.Module]]:
        """Client models drawn in client order from ``config.seed``, then the server's reference model."""
        set_seed(self.config.seed)
        dims = self.client_dims()
        models = [self.make_model(*d) for d in dims]
        return self.make_model(*dims[0]), models

    def make_trainer(self, model: nn.Module, cid: int) -> StructureNodeTrainer:
        return StructureNodeTrainer(model, self.clients_data[cid], self.structure_encoding_of(cid), self.config,
                                    self.device)

    def build(self, channel: Channel) -> tuple[Server | None, list[Client]]:
        reference, models = self.init_models()
        trainers = [self.make_trainer(model, cid) for cid, model in enumerate(models)]
        is_shared = shared_parameter_predicate(self.options["share"])
        return build_partly_shared(reference, trainers, is_shared, self.config.local_epochs,
                                   self.options["reset_optimizer"], self.device)
