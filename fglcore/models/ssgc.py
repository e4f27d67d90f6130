"""SSGC (Zhu & Koniusz, ICLR 2021) features into O-pFGL's linear/BatchNorm head: one client model of Tables 3/11."""
from __future__ import annotations

from torch import Tensor, nn
from torch_geometric.nn import MLP as PyGMLP
from torch_geometric.nn import BatchNorm, SSGConv

from fglcore.models.cached_graph import CachedGraphGuard


class SSGC(CachedGraphGuard, nn.Module):
    r"""Simple spectral graph convolution (Zhu & Koniusz, "Simple Spectral Graph Convolution", ICLR 2021,
    Eq. 7) feeding the head of O-pFGL's decoupled client models (Yan et al., arXiv 2411.11304, App. A.3.7,
    the heterogeneous-model setting of Tables 3/11):

    .. math::
        \bar X = \alpha X + \frac{1-\alpha}{K}\sum_{k=1}^{K} \hat A^k X, \qquad
        \hat Y = \mathrm{BN}(\bar X W^{(0)})\, W^{(1)}, \qquad
        \hat A = \tilde D^{-1/2}(A + I)\tilde D^{-1/2}.

    :math:`\bar X W^{(0)}` is PyG's :class:`~torch_geometric.nn.conv.SSGConv`
    (``in -> hidden``); a BatchNorm and the remaining linear layers follow
    (``num_layers`` linear layers in all, a BatchNorm after each but the
    last), **without nonlinearity or dropout**, as the head of the authors'
    ``SSGC``/``SIGN``/``MyAPPNP`` classes (``Youth-49/O-pFGL`` ``model.py``:
    ``Linear -> BatchNorm1d -> Linear``).

    ``alpha=None`` (default) is :math:`1/(K+1)`, which makes :math:`\bar X`
    the mean of :math:`[X, \hat AX, \dots, \hat A^KX]`: what the authors'
    ``SSGC`` sets out to compute (it concatenates the hops and averages; as
    written it averages over the concatenated *feature* axis, which gives one
    number per node and fails on the next linear layer, and their
    heterogeneous run never builds it, see
    :mod:`fglcore.models.model_lists`). Zhu & Koniusz tune :math:`\alpha`.
    Edge weights (O-pFGL's weighted pseudo-graph) are passed as a weighted
    sparse adjacency ``adj_t`` in place of ``edge_index``.

    Args:
        in_channels (int): node feature width :math:`F`.
        hidden_channels (int): hidden width.
        out_channels (int): number of classes :math:`C`.
        num_layers (int): linear layers (default 2; 1: ``SSGConv`` straight to the classes).
        K (int): propagation steps (default 2).
        alpha (float, optional): teleport weight :math:`\alpha` (default ``None``: :math:`1/(K+1)`).
        cached (bool): cache :math:`\bar X` of the first graph (one model per client graph).

    Shapes:
        - **input:** node features :math:`(|\mathcal{V}|, F)`, edge indices :math:`(2, |\mathcal{E}|)`
          (or a sparse :math:`(|\mathcal{V}|, |\mathcal{V}|)` ``adj_t``)
        - **output:** logits :math:`(|\mathcal{V}|, C)`
    """

    def __init__(self, in_channels: int, hidden_channels: int, out_channels: int, num_layers: int = 2, K: int = 2,
                 alpha: float | None = None, cached: bool = False):
        super().__init__()
        if K < 1:
            raise ValueError(f"SSGC: propagation steps K must be >= 1, got {K}")
        alpha = 1.0 / (K + 1) if alpha is None else float(alpha)
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"SSGC: alpha must be in [0, 1], got {alpha}")
        self.cached, self.K, self.alpha = cached, K, alpha
        first = out_channels if num_layers == 1 else hidden_channels
        self.conv = SSGConv(in_channels, first, alpha=alpha, K=K, cached=cached)
        self.norm = BatchNorm(hidden_channels) if num_layers > 1 else None
        self.head = PyGMLP([hidden_channels] * (num_layers - 1) + [out_channels], act=None, norm="batch_norm",
                           dropout=0.0) if num_layers > 1 else None

    def reset_parameters(self) -> None:
        self.conv.reset_parameters()
        for module in (self.norm, self.head):
            if module is not None:
                module.reset_parameters()
        self.forget_graph()

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        self.check_graph(x, edge_index)
        h = self.conv(x, edge_index)
        if self.head is None:
            return h
        return self.head(self.norm(h))
