"""GAT (Veličković et al., ICLR 2018): the paper's node model, and one ``GATConv`` for graph classifiers."""
from __future__ import annotations

from torch import nn
from torch_geometric.nn import GATConv

from fglcore.models.stacked import StackedGNN


def gat_head_width(hidden_channels: int, heads: int, hidden_per_head: bool) -> int:
    """Features per attention head in a hidden GAT layer.

    By default ``hidden_channels`` is the concatenated width, split evenly over
    the heads as in the GAT paper (Cora: 8 heads x 8 features = 64). With
    ``hidden_per_head=True`` every head has ``hidden_channels`` features
    (PyG's ``examples/gat.py``).
    """
    if hidden_per_head:
        return hidden_channels
    if hidden_channels % heads:
        raise ValueError(
            f"GAT: hidden_channels={hidden_channels} is split over heads={heads} and must be divisible by it; "
            f"change one of them or pass hidden_per_head=True"
        )
    return hidden_channels // heads


class GAT(StackedGNN):
    r"""Graph attention network (Veličković et al., "Graph Attention Networks", ICLR 2018, Eqs. 3-6).

    Hidden layers: ``GATConv`` with ``heads`` heads (default 8) whose outputs
    are concatenated, ELU activation (as in the paper),

    .. math::
        h_v' = \big\Vert_{k=1}^{K} \mathrm{ELU}\Big(\sum_{u \in \mathcal N(v) \cup \{v\}}
        \alpha_{vu}^k W^k h_u\Big),

    then an output layer with ``output_heads`` heads (default 1, the paper's
    Cora/CiteSeer model; its PubMed model uses 8) that are averaged (Eq. 6).
    The hidden width is split over the heads unless ``hidden_per_head`` (see
    :func:`gat_head_width`). ``attention_dropout`` (dropout on the attention
    coefficients :math:`\alpha`) defaults to ``dropout``: the paper uses one
    rate for both.

    Built on PyG's ``BasicGNN`` (:class:`~fglcore.models.stacked.StackedGNN`)
    but not PyG's :class:`torch_geometric.nn.models.GAT`, which gives the
    output layer as many heads as the hidden ones and splits the hidden
    width only, so it cannot build the paper's one-head output layer or
    ``hidden_per_head`` widths; its default activation is also ReLU.

    Args:
        in_channels (int): node feature width :math:`F`.
        hidden_channels (int): hidden width (all heads together unless ``hidden_per_head``).
        out_channels (int): number of classes :math:`C`.
        num_layers (int): number of ``GATConv`` layers (default 2).
        dropout (float): dropout rate after each hidden ELU (default 0.5).
        heads (int): attention heads of the hidden layers.
        output_heads (int): attention heads of the output layer (averaged).
        hidden_per_head (bool): ``hidden_channels`` features per head instead of in total.
        attention_dropout (float, optional): dropout on the attention coefficients (default ``dropout``).
        input_dropout (bool): also drop the input features (the paper does).

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
        heads: int = 8,
        output_heads: int = 1,
        hidden_per_head: bool = False,
        attention_dropout: float | None = None,
        input_dropout: bool = False,
    ):
        if heads < 1 or output_heads < 1:
            raise ValueError(f"GAT: heads and output_heads must be >= 1, got {heads} and {output_heads}")
        super().__init__(
            in_channels, hidden_channels, out_channels, num_layers, dropout, act="elu", input_dropout=input_dropout,
            heads=heads, output_heads=output_heads, head_width=gat_head_width(hidden_channels, heads, hidden_per_head),
            attention_dropout=dropout if attention_dropout is None else attention_dropout,
        )

    def init_conv(self, in_channels: int, out_channels: int, *, heads: int, output_heads: int, head_width: int,
                  attention_dropout: float) -> nn.Module:
        """Layer ``len(self.convs)``: it reads the input features or the previous layer's concatenated heads."""
        width = self.in_channels if len(self.convs) == 0 else head_width * heads
        if getattr(self, "_is_conv_to_out", False):
            return GATConv(width, out_channels, heads=output_heads, concat=False, dropout=attention_dropout)
        return GATConv(width, head_width, heads=heads, concat=True, dropout=attention_dropout)


def gat_conv(
    hidden_channels: int,
    dropout: float,
    heads: int = 8,
    hidden_per_head: bool = False,
    attention_dropout: float | None = None,
) -> nn.Module:
    """GAT layer (Veličković et al., ICLR 2018) mapping hidden -> hidden: a graph classifier backbone.

    By default the heads split ``hidden_channels`` and are concatenated; with
    ``hidden_per_head=True`` each head has ``hidden_channels`` features and
    the heads are averaged, so the layer still maps hidden -> hidden.
    """
    if heads < 1:
        raise ValueError(f"GAT: heads must be >= 1, got {heads}")
    att = dropout if attention_dropout is None else attention_dropout
    width = gat_head_width(hidden_channels, heads, hidden_per_head)
    return GATConv(hidden_channels, width, heads=heads, concat=not hidden_per_head, dropout=att)
