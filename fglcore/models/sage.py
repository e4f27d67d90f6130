"""GraphSAGE (Hamilton et al., NeurIPS 2017): PyG's ``GraphSAGE`` model for nodes, one ``SAGEConv`` for graphs."""
from __future__ import annotations

from typing import Sequence

import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import SAGEConv
from torch_geometric.nn.models import GraphSAGE as PyGGraphSAGE

from fglcore.models import sparse_input
from fglcore.models.operators import GraphOperators, apply_conv
from fglcore.models.stacked import StackedGNN


class GraphSAGE(StackedGNN, PyGGraphSAGE):
    r"""GraphSAGE (Hamilton et al., "Inductive Representation Learning on Large Graphs", NeurIPS 2017,
    Alg. 1), full-batch, without neighbour sampling. Each layer is ``SAGEConv`` with a root weight,

    .. math::
        h_v' = W_1 h_v + W_2\, \mathrm{aggr}_{u \in \mathcal N(v)} h_u,

    ``aggr`` being ``"mean"`` (the paper's mean aggregator, used by FedSpray
    and FedStruct) or any PyG aggregation name (``"max"``, ``"sum"``, ...).
    The paper's per-layer L2 normalisation of embeddings is not applied (as
    in PyG's and the FGL papers' code). This is PyG's
    :class:`torch_geometric.nn.models.GraphSAGE` (bit for bit, checked by
    ``tests/test_models.py``) with :class:`~fglcore.models.stacked.StackedGNN`'s
    additions, and one more: on registered constant features
    (:mod:`fglcore.models.sparse_input`) the first layer's aggregation is
    computed once (see :meth:`layer`).

    ``input_layer_norm=True`` puts a LayerNorm on the input features before
    the first layer, as FedStruct's official code does for its GraphSAGE
    baselines (``JavadAliakbari/FedStruct``, ``src/GNN/GNN_classifier.py``,
    ``GNNClassifier.set_GNN_FPM``: ``ModelSpecs(type="GNN", ...,
    normalization="layer")``, built by ``GNN.create_models`` of
    ``src/models/GNN_models.py`` as ``nn.LayerNorm(layer_sizes[0])`` ahead of
    the ``SAGEConv`` layers; digest §4.5). Off by default: neither GraphSAGE
    nor the FedStruct paper has it. The LayerNorm starts at weight 1, bias 0,
    so switching it on draws no random number: the convolutions start as
    without it.

    Args:
        in_channels (int): node feature width :math:`F`.
        hidden_channels (int): hidden width.
        out_channels (int): number of classes :math:`C`.
        num_layers (int): number of ``SAGEConv`` layers (default 2).
        dropout (float): dropout rate after each hidden ReLU (default 0.5).
        aggr (str): neighbour aggregation (default ``"mean"``).
        input_dropout (bool): also drop the input features.
        input_layer_norm (bool): LayerNorm on the input features (FedStruct's official baselines).

    Shapes:
        - **input:** node features :math:`(|\mathcal{V}|, F)`, edge indices :math:`(2, |\mathcal{E}|)`
        - **output:** logits :math:`(|\mathcal{V}|, C)`
    """

    def __init__(
        self,
        in_channels: int,
        hidden_channels: int,
        out_channels: int,
        num_layers: int = 2,
        dropout: float = 0.5,
        aggr: str = "mean",
        input_dropout: bool = False,
        input_layer_norm: bool = False,
    ):
        super().__init__(in_channels, hidden_channels, out_channels, num_layers, dropout,
                         input_dropout=input_dropout, aggr=aggr)
        self.input_norm = nn.LayerNorm(in_channels) if input_layer_norm else None

    def reset_parameters(self) -> None:
        super().reset_parameters()
        if getattr(self, "input_norm", None) is not None:
            self.input_norm.reset_parameters()

    def forward(self, x: Tensor, edge_index: Tensor | GraphOperators,  # type: ignore[override]
                **trim: Sequence[int] | None) -> Tensor:
        """``trim``: :class:`~fglcore.models.stacked.StackedGNN`'s ``num_sampled_nodes_per_hop`` and
        ``num_sampled_edges_per_hop``."""
        if self.input_norm is not None:
            x = self.input_norm(x)
        return super().forward(x, edge_index, **trim)

    def layer(self, i: int, x: Tensor, graph: Tensor | GraphOperators) -> Tensor:
        """``SAGEConv`` as PyG computes it; on registered constant features the first layer aggregates once.

        The aggregation of fixed features over a fixed graph does not change
        during training, so it is computed by the layer's own ``propagate``
        once and reused (:func:`fglcore.models.sparse_input.derived_constant`);
        the values are those of every call.
        """
        conv = self.convs[i]
        if i > 0 or conv.project or not sparse_input.is_registered(x):
            return apply_conv(conv, x, graph)
        edge_index = graph.edge_index if isinstance(graph, GraphOperators) else graph
        aggregated = sparse_input.derived_constant(
            x, f"sage_aggregation:{conv.aggr_module!r}", edge_index,
            lambda: conv.propagate(edge_index, x=(x, x), size=None),
        )
        out = conv.lin_l(aggregated)
        if conv.root_weight:
            out = out + conv.lin_r(x)
        return F.normalize(out, p=2.0, dim=-1) if conv.normalize else out


def sage_conv(hidden_channels: int, dropout: float, aggr: str = "mean") -> nn.Module:
    """GraphSAGE layer hidden -> hidden, mean aggregation as FedStar's FedSage baseline: a graph classifier backbone."""
    return SAGEConv(hidden_channels, hidden_channels, aggr=aggr)
