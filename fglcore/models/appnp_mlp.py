"""APPNP-propagated features into O-pFGL's linear/BatchNorm head: one client model of Tables 3/11."""
from __future__ import annotations

from torch import Tensor, nn
from torch_geometric.nn import APPNP
from torch_geometric.nn import MLP as PyGMLP

from fglcore.models.cached_graph import CachedGraphGuard
from fglcore.models.operators import GraphOperators, apply_conv


class APPNPMLP(CachedGraphGuard, nn.Module):
    r"""Personalised-PageRank propagation of the *features* (Klicpera et al., "Predict then Propagate",
    ICLR 2019, Eq. 8, applied to :math:`X`), then a linear/BatchNorm head: the "APPNP" client model of
    O-pFGL's heterogeneous-model setting (Yan et al., arXiv 2411.11304, App. A.3.7, Tables 3/11):

    .. math::
        Z^{(0)} = X,\quad Z^{(k)} = (1-\alpha)\hat A Z^{(k-1)} + \alpha X,\qquad
        \hat Y = \mathrm{BN}(Z^{(K)} W^{(0)})\, W^{(1)}.

    This is the authors' ``MyAPPNP`` (``Youth-49/O-pFGL`` ``model.py``): PyG's
    :class:`~torch_geometric.nn.conv.APPNP` layer (``K`` = 2, :math:`\alpha` =
    0.1 in their list) on the input features, then ``Linear -> BatchNorm1d ->
    Linear`` **without nonlinearity or dropout** (``num_layers`` linear layers,
    a BatchNorm after each but the last; PyG's ``MLP`` with ``act=None``).
    Klicpera et al.'s own APPNP predicts first and propagates the logits;
    that order is :class:`~fglcore.models.decoupled_gcn.DecoupledGCN` with
    ``alpha > 0``. Edge weights (O-pFGL's weighted pseudo-graph) are passed as
    a weighted sparse adjacency ``adj_t`` in place of ``edge_index``.

    Args:
        in_channels (int): node feature width :math:`F`.
        hidden_channels (int): hidden width.
        out_channels (int): number of classes :math:`C`.
        num_layers (int): linear layers (default 2).
        K (int): propagation steps (default 2).
        alpha (float): teleport probability (default 0.1).
        cached (bool): cache the normalised adjacency of the first graph (one model per client graph).

    Shapes:
        - **input:** node features :math:`(|\mathcal{V}|, F)`, edge indices :math:`(2, |\mathcal{E}|)`
          (or a sparse :math:`(|\mathcal{V}|, |\mathcal{V}|)` ``adj_t``, or the graph's
          :class:`~fglcore.models.operators.GraphOperators`: the same numbers as sparse products)
        - **output:** logits :math:`(|\mathcal{V}|, C)`
    """

    #: ``forward`` also takes the graph's sparse operators (:func:`~fglcore.models.operators.apply_conv`).
    accepts_graph_operators = True

    def __init__(self, in_channels: int, hidden_channels: int, out_channels: int, num_layers: int = 2, K: int = 2,
                 alpha: float = 0.1, cached: bool = False):
        super().__init__()
        self.cached = cached
        self.propagation = APPNP(K=K, alpha=alpha, cached=cached)
        self.mlp = PyGMLP([in_channels] + [hidden_channels] * (num_layers - 1) + [out_channels], act=None,
                          norm="batch_norm", dropout=0.0)

    def reset_parameters(self) -> None:
        self.propagation.reset_parameters()
        self.mlp.reset_parameters()
        self.forget_graph()

    def forward(self, x: Tensor, edge_index: Tensor | GraphOperators) -> Tensor:
        self.check_graph(x, edge_index)
        return self.mlp(apply_conv(self.propagation, x, edge_index))
