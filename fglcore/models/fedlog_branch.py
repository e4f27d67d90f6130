"""FedLoG's head / tail branch classifier: query embeddings adapted on a task graph to the synthetic nodes.

Kim, Lee, Park, Cho and Park, "Subgraph Federated Learning for Local
Generalization" (FedLoG), ICLR 2025, Sec. 4 ("head and tail branch
classifiers"); official code ``sung-won-kim/FedLoG``, ``embedder/classifier.py``
(``clsf``, ``clsf_module``).
"""
from __future__ import annotations

from torch import Tensor, nn

from fglcore.models.fedlog_branch_layer import BranchLayer


class BranchClassifier(nn.Module):
    r"""FedLoG's branch classifier ``clsf``: LayerNorm of the query embeddings, then ``num_layers``
    :class:`BranchLayer` (FedLoG Sec. 4; ``clsf(hid_dim, hid_dim, n_layers=2)`` in the code).

    Args:
        channels (int): embedding width :math:`D` (the code's ``hid_dim`` = 64).
        num_layers (int): layers (2).
        aggregate (str): ``"code"`` or ``"query"`` (see :class:`BranchLayer`).

    Shapes:
        - **input:** queries :math:`(Q, D)`, neighbour means :math:`(Q, D)`, synthetic node embeddings :math:`(S, D)`
        - **output:** adapted queries :math:`(Q, D)`
    """

    def __init__(self, channels: int, num_layers: int = 2, aggregate: str = "code"):
        super().__init__()
        self.norm = nn.LayerNorm(channels)
        self.layers = nn.ModuleList(BranchLayer(channels, aggregate) for _ in range(num_layers))

    def reset_parameters(self) -> None:
        self.norm.reset_parameters()
        for layer in self.layers:
            layer.reset_parameters()

    def forward(self, query: Tensor, neighbor: Tensor, synthetic: Tensor) -> Tensor:
        query = self.norm(query)
        for layer in self.layers:
            query = layer(query, neighbor, synthetic)
        return query
