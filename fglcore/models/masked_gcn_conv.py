"""FED-PUB's masked GCN layer: PyG's ``GCNConv`` with a :class:`~fglcore.models.masked_linear.MaskedLinear`
weight (Baek et al., ICML 2023; the official code's ``MaskedGCNConv``)."""
from __future__ import annotations

from torch_geometric.nn import GCNConv

from fglcore.models.masked_linear import MaskedLinear


class MaskedGCNConv(GCNConv):
    r"""PyG's ``GCNConv`` whose linear map is a :class:`~fglcore.models.masked_linear.MaskedLinear`:
    :math:`\hat A X (W \odot M)^\top + b` with :math:`\hat A = \tilde D^{-1/2}(A + I)\tilde D^{-1/2}`
    (Kipf & Welling, ICLR 2017, Eq. 2), not cached.

    Args:
        in_channels (int): input width.
        out_channels (int): output width.
        mask_init (str): ``"ones"`` or ``"glorot"``.
        prune_threshold (float): eval-mode pruning threshold of the mask.

    Shapes:
        - **input:** node features :math:`(|\mathcal{V}|, F_{in})`, edge indices :math:`(2, |\mathcal{E}|)`
        - **output:** node features :math:`(|\mathcal{V}|, F_{out})`
    """

    def __init__(self, in_channels: int, out_channels: int, mask_init: str = "ones", prune_threshold: float = 1e-3):
        super().__init__(in_channels, out_channels, cached=False)
        self.lin = MaskedLinear(in_channels, out_channels, bias=False, mask_init=mask_init,
                                prune_threshold=prune_threshold)
        self.reset_parameters()
