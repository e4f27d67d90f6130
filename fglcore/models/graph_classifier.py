"""Graph classifier: encoder, message-passing backbone, pooling, readout (GCFL's and FedStar's baselines' model).

Checked against the official ``lib/models.py`` of GCFL (Xie et al., NeurIPS
2021) and FedStar (Tan et al., AAAI 2023): with the default GIN backbone,
``num_layers=3`` and hidden 64 it has exactly the 29,762 parameters FedStar's
GIN has on MUTAG.
"""
from __future__ import annotations

from typing import Callable

import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import global_add_pool, global_mean_pool

from fglcore.models.operators import GraphOperators, apply_conv
from fglcore.models.utils import reset_children

POOLS: dict[str, Callable[..., Tensor]] = {"add": global_add_pool, "mean": global_mean_pool}


class GraphClassifier(nn.Module):
    r"""Encoder -> message passing -> pooling -> readout MLP, for graph classification.

    The model of GCFL (Xie et al., "Federated Graph Classification over
    Non-IID Graphs", NeurIPS 2021) and of FedStar's baselines (Tan et al.,
    AAAI 2023: the Local/FedAvg/FedProx/FedPer/FedSage rows); with a GIN
    backbone and sum pooling its readout is GIN's graph readout (Xu et al.,
    ICLR 2019, Eq. 4.2) on the last layer.

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

    Shapes:
        - **input:** node features :math:`(|\mathcal{V}|, F)`, edge indices :math:`(2, |\mathcal{E}|)`
          (or a batch's :class:`~fglcore.models.operators.GraphOperators`), ``batch`` :math:`(|\mathcal{V}|)`
        - **output:** logits :math:`(B, C)` for :math:`B` graphs
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
