"""Graph classifiers: ``forward(x, edge_index, batch) -> logits [num_graphs, num_classes]``.

One architecture, :class:`GraphClassifier`, with a pluggable message-passing
backbone. It is the model of GCFL (Xie et al., NeurIPS 2021) and of FedStar's
baselines (Tan et al., AAAI 2023, Local/FedAvg/FedProx/FedPer/FedSage rows),
checked against their official ``lib/models.py``: with the default GIN backbone,
``num_layers=3`` and hidden 64 it has exactly the 29,762 parameters FedStar's
GIN has on MUTAG.
"""
from __future__ import annotations

from typing import Callable

import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import GATConv, GCNConv, GINConv, SAGEConv, global_add_pool, global_mean_pool

from fglcore.models.operators import GraphOperators, apply_conv
from fglcore.models.node import NodeWiseLinear, gat_head_width, gin_mlp, reset_children

POOLS: dict[str, Callable[..., Tensor]] = {"add": global_add_pool, "mean": global_mean_pool}


class GraphClassifier(nn.Module):
    """Encoder -> message passing -> pooling -> readout MLP.

    .. code-block:: text

        h = input_encoder(x)                                  # Linear(in, hidden)
        for conv in convs: h = dropout(relu(conv(h, edge_index)))
        g = pool(h, batch)                                    # sum (default) or mean
        logits = head(g)                                      # Linear, ReLU, Dropout, Linear(hidden, C)

    The split into ``input_encoder``, ``convs`` and ``head`` is what lets a
    federation of *different* TU datasets (different feature widths and class
    counts) share a model: only ``convs`` (hidden -> hidden) has the same shape
    on every client, so GCFL's and FedStar's servers aggregate only those
    parameters (``graph_convs`` in their code), while the encoder and head stay
    personal. ``pool="add"`` is the sum readout of GIN, GCFL and FedStar.

    Args:
        in_channels: node feature width.
        hidden_channels: width of every hidden layer.
        out_channels: number of classes.
        convs: the backbone's layers, each mapping ``[N, hidden] -> [N, hidden]``
            with the signature ``conv(x, edge_index)``.
        dropout: rate after each conv and in the head.
        pool: ``"add"`` or ``"mean"``.
    """

    def __init__(
        self,
        in_channels: int,
        hidden_channels: int,
        out_channels: int,
        convs: list[nn.Module],
        dropout: float = 0.5,
        pool: str = "add",
    ):
        super().__init__()
        if pool not in POOLS:
            raise ValueError(f"unknown pool {pool!r}; accepted: {', '.join(POOLS)}")
        self.dropout = dropout
        self.pool = pool
        self.input_encoder = nn.Linear(in_channels, hidden_channels)
        self.convs = nn.ModuleList(convs)
        self.head = nn.Sequential(
            nn.Linear(hidden_channels, hidden_channels),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden_channels, out_channels),
        )

    def reset_parameters(self) -> None:
        reset_children(self)

    def node_embeddings(self, x: Tensor, edge_index: Tensor | GraphOperators) -> Tensor:
        """Node representations after the last conv, before pooling.

        ``edge_index`` may also be a batch's sparse operators
        (:class:`~fglcore.models.operators.GraphOperators`): the same layers
        computed as CSR products (:func:`~fglcore.models.operators.apply_conv`).
        """
        x = self.input_encoder(x)
        for conv in self.convs:
            x = F.dropout(F.relu(apply_conv(conv, x, edge_index)), self.dropout, self.training)
        return x

    def forward(self, x: Tensor, edge_index: Tensor | GraphOperators, batch: Tensor | None = None) -> Tensor:
        """``batch[i]`` is the graph of node ``i`` (PyG's ``Batch.batch``); ``None`` means one graph."""
        return self.head(POOLS[self.pool](self.node_embeddings(x, edge_index), batch))


def gin_conv(hidden_channels: int, dropout: float, train_eps: bool = False, mlp_batch_norm: bool = False) -> nn.Module:
    """GIN layer (Xu et al., ICLR 2019) with the two-layer MLP hidden -> hidden -> hidden of GCFL/FedStar."""
    return GINConv(gin_mlp(hidden_channels, hidden_channels, hidden_channels, mlp_batch_norm), train_eps=train_eps)


def gcn_conv(hidden_channels: int, dropout: float) -> nn.Module:
    """GCN layer (Kipf & Welling, ICLR 2017)."""
    return GCNConv(hidden_channels, hidden_channels)


def sage_conv(hidden_channels: int, dropout: float, aggr: str = "mean") -> nn.Module:
    """GraphSAGE layer (Hamilton et al., NeurIPS 2017), mean aggregation as FedStar's FedSage baseline."""
    return SAGEConv(hidden_channels, hidden_channels, aggr=aggr)


def gat_conv(
    hidden_channels: int,
    dropout: float,
    heads: int = 8,
    hidden_per_head: bool = False,
    attention_dropout: float | None = None,
) -> nn.Module:
    """GAT layer (Veličković et al., ICLR 2018) mapping hidden -> hidden.

    By default the heads split ``hidden_channels`` and are concatenated; with
    ``hidden_per_head=True`` each head has ``hidden_channels`` features and
    the heads are averaged, so the layer still maps hidden -> hidden.
    """
    if heads < 1:
        raise ValueError(f"GAT: heads must be >= 1, got {heads}")
    att = dropout if attention_dropout is None else attention_dropout
    width = gat_head_width(hidden_channels, heads, hidden_per_head)
    return GATConv(hidden_channels, width, heads=heads, concat=not hidden_per_head, dropout=att)


def linear_conv(hidden_channels: int, dropout: float) -> nn.Module:
    """A node-wise linear layer: the graph-free ``mlp`` backbone (DeepSets-style)."""
    return NodeWiseLinear(hidden_channels, hidden_channels)
