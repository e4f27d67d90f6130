"""FedStruct's server-side structure GNN of App. H: GraphSAGE on the node structure features of the global graph."""
from __future__ import annotations

from typing import NamedTuple, Sequence

import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import SAGEConv

from fglcore.models.operators import GraphOperators, apply_conv


class ServerGraph(NamedTuple):
    """What the server-side sGNN runs on: the global graph (``edge_index``, or its
    :class:`~fglcore.models.operators.GraphOperators`) and the ``rows`` (global node ids) whose embeddings
    :math:`z_v` are wanted, in order (a client's nodes, or all clients' stacked)."""

    edge_index: Tensor | GraphOperators
    rows: Tensor


class StructureSAGE(nn.Module):
    r"""The sGNN of FedStruct when the server knows the global graph (Aliakbari, Östman and Graell i Amat,
    "Decoupled Subgraph Federated Learning", ICLR 2025, App. H, Alg. 4 and Table 8's "GNN" rows):

    .. math::
        Z = \mathrm{sGNN}_{\theta_s}(S, \mathcal E) = \mathrm{Lin}\big(\mathrm{SAGE}_{L}(\dots
        \mathrm{SAGE}_1(\mathrm{BN}(S))\dots)\big),

    mean-aggregation ``SAGEConv`` layers of widths ``layer_sizes`` (ReLU and dropout between them, none after
    the last), then a linear head to the :math:`c` classes: :math:`z_v` are class logits, added to the
    feature branch's (Eq. 10; or combined by Eq. 51). The official code's ``GNNClassifier.set_GNN_SPM``
    (``JavadAliakbari/FedStruct``, ``src/GNN/GNN_classifier.py``): ``ModelSpecs(type="GNN",
    layer_sizes=[d_s] + GNN_structure_layers_sizes, final_activation_function="linear",
    normalization="batch")`` then ``ModelSpecs(type="MLP", layer_sizes=[sizes[-1], c])``, whose ``GNN``
    (``src/models/GNN_models.py``) puts ``nn.BatchNorm1d(d_s, track_running_stats=False)`` on the input
    (``input_norm=True``: batch statistics in training *and* evaluation, over all nodes of the graph: the same
    numbers in both modes). ``layer_sizes`` per dataset in the official configs: ``[128, 64, 32]`` (Cora,
    CiteSeer, PubMed, Photo), ``[256, 128]`` (Chameleon), ``[128, 64]`` (Amazon-ratings); digest §7.2 item 23.

    Args:
        in_channels (int): NSF width :math:`d_s`.
        layer_sizes (list[int]): output widths of the ``SAGEConv`` layers.
        out_channels (int): number of classes :math:`c`.
        dropout (float): dropout after every ReLU.
        input_norm (bool): BatchNorm (batch statistics) on the input.

    Shapes:
        - **input:** structure features :math:`(n, d_s)`, global edge indices :math:`(2, |\mathcal E|)` or
          their :class:`~fglcore.models.operators.GraphOperators` (the same layers as sparse products,
          :func:`~fglcore.models.operators.apply_conv`: the same numbers, several times faster)
        - **output:** node structure embeddings :math:`(n, c)`
    """

    def __init__(self, in_channels: int, layer_sizes: Sequence[int], out_channels: int, dropout: float = 0.5,
                 input_norm: bool = True):
        super().__init__()
        sizes = [int(in_channels), *(int(s) for s in layer_sizes)]
        if len(sizes) < 2:
            raise ValueError(f"layer_sizes: at least one SAGEConv layer, got {list(layer_sizes)!r}")
        self.dropout = float(dropout)
        self.input_norm = nn.BatchNorm1d(sizes[0], track_running_stats=False) if input_norm else None
        self.convs = nn.ModuleList(SAGEConv(a, b, aggr="mean") for a, b in zip(sizes[:-1], sizes[1:]))
        self.head = nn.Linear(sizes[-1], out_channels)

    def reset_parameters(self) -> None:
        if self.input_norm is not None:
            self.input_norm.reset_parameters()
        for conv in self.convs:
            conv.reset_parameters()
        self.head.reset_parameters()

    def forward(self, s: Tensor, edge_index: Tensor | GraphOperators) -> Tensor:
        h = self.input_norm(s) if self.input_norm is not None else s
        for i, conv in enumerate(self.convs):
            h = apply_conv(conv, h, edge_index)
            if i < len(self.convs) - 1:
                h = F.dropout(F.relu(h), p=self.dropout, training=self.training)
        return self.head(h)
