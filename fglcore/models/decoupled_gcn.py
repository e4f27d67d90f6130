"""Decoupled GCN (predict, then propagate): FedStruct's feature and structure models, APPNP with alpha > 0."""
from __future__ import annotations

from torch import Tensor, nn

from fglcore.models.cached_graph import CachedGraphGuard
from fglcore.models.mlp import MLP
from fglcore.models.propagation import Propagation


class DecoupledGCN(CachedGraphGuard, nn.Module):
    r"""Decoupled GCN / predict-then-propagate:

    .. math::
        \hat Y = \hat A^K\, \mathrm{MLP}(X)

    An :class:`~fglcore.models.mlp.MLP` maps each node's features to class
    logits, then :class:`~fglcore.models.propagation.Propagation` smooths them
    over the graph without parameters (FedStruct's feature and structure
    models, Aliakbari et al., ICLR 2025, Eqs. 1-2 with :math:`\beta_K = 1`;
    Dong et al., "On the equivalence of decoupled graph convolution network
    and label propagation", WWW 2021). ``alpha > 0`` gives APPNP (Klicpera et
    al., ICLR 2019, Eq. 8). Defaults: ``K=10``, ``alpha=0``, symmetric
    normalisation; FedStruct's paper normalises by rows
    (``normalization="rw"``) and its code puts a LayerNorm on the MLP input
    (``input_layer_norm=True``). PyG's ``APPNP`` layer covers only the
    symmetric case, hence our :class:`~fglcore.models.propagation.Propagation`.

    Args:
        in_channels (int): node feature width :math:`F`.
        hidden_channels (int): hidden width of the MLP.
        out_channels (int): number of classes :math:`C`.
        num_layers (int): layers of the MLP (default 2).
        dropout (float): dropout rate in the MLP (default 0.5).
        K (int): propagation steps (default 10).
        alpha (float): teleport probability (default 0).
        normalization (str): ``"sym"`` or ``"rw"``.
        cached (bool): cache the propagation weights of the first graph.
        input_layer_norm (bool): LayerNorm on the MLP's input.
        input_dropout (bool): also drop the input features.

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
        K: int = 10,
        alpha: float = 0.0,
        normalization: str = "sym",
        cached: bool = False,
        input_layer_norm: bool = False,
        input_dropout: bool = False,
    ):
        super().__init__()
        self.cached = cached
        self.mlp = MLP(in_channels, hidden_channels, out_channels, num_layers, dropout, input_layer_norm, input_dropout)
        self.propagation = Propagation(K, alpha, normalization, cached)

    def reset_parameters(self) -> None:
        self.mlp.reset_parameters()
        self.propagation.reset_parameters()
        self.forget_graph()

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        self.check_graph(x, edge_index)
        return self.propagation(self.mlp(x), edge_index)
