r"""1-GNN (Morris et al., "Weisfeiler and Leman Go Neural: Higher-order Graph Neural Networks", AAAI 2019, Eq. 2
with :math:`k = 1`), the centralised "1-GNN [17]" row of the local-bias paper's Table 2 (Zhang et al., arXiv
2110.12906; digest reading A18: sum aggregation, PyG ``GraphConv(aggr="add")``).

:math:`H^{(l)} = \sigma(H^{(l-1)} W_1^{(l)} + A H^{(l-1)} W_2^{(l)} + b^{(l)})`; the same layers as the local-bias
method's ``backbone="1gnn"`` (:class:`~fglcore.models.distributed_gnn.DistributedGNN`), so the centralised row and
"Ours+1-GNN" train one architecture.
"""
from __future__ import annotations

from fglcore.models.distributed_gnn import DistributedGNN


class OneGNN(DistributedGNN):
    r"""``num_layers`` PyG ``GraphConv(aggr="add")`` layers, ReLU between them, dropout on every layer's input.

    Args:
        in_channels (int): feature width :math:`d`.
        hidden_channels (int): hidden width.
        out_channels (int): number of classes :math:`c`.
        num_layers (int): :math:`L` (default 2).
        dropout (float): dropout rate on each layer's input (default 0.5).
        input_dropout (bool): drop the input features too (default ``True``, the local-bias paper's A16).

    Shapes:
        - **input:** node features :math:`(|\mathcal V|, d)`, edge indices :math:`(2, |\mathcal E|)`
        - **output:** logits :math:`(|\mathcal V|, c)`
    """

    def __init__(self, in_channels: int, hidden_channels: int, out_channels: int, num_layers: int = 2,
                 dropout: float = 0.5, input_dropout: bool = True):
        super().__init__("1gnn", in_channels, hidden_channels, out_channels, num_layers, dropout, input_dropout)
