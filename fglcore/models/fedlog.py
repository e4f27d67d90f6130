"""FedLoG's client model: a GraphSAGE embedder, a linear classifier and the head / tail branch classifiers.

Kim, Lee, Park, Cho and Park, "Subgraph Federated Learning for Local
Generalization" (FedLoG), ICLR 2025, Sec. 4; official code ``model/client.py``
(``Client.__init__``, ``train``, ``test``).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn.models import GraphSAGE

from fglcore.models.fedlog_branch import BranchClassifier


def squared_distances(x: Tensor, y: Tensor) -> Tensor:
    """:math:`\\Vert x_i-y_j\\Vert^2` (the code's ``euclidean_dist``). Shapes: :math:`(N, D), (M, D) \\to (N, M)`."""
    return (x.unsqueeze(1) - y.unsqueeze(0)).pow(2).sum(-1)


class FedLoGNet(nn.Module):
    r"""FedLoG's local model (Sec. 4): prototype classification by the head and the tail branches.

    * ``embedder``: PyG ``GraphSAGE`` (2 layers, hidden :math:`2D`, out :math:`D`,
      dropout 0.5), the code's; the synthetic nodes are embedded as a graph of
      self-loops only (``SparseTensor.eye``);
    * ``classifier``: Linear(D, C), used only by the local pre-training;
    * ``head``, ``tail``: :class:`~fglcore.models.fedlog_branch.BranchClassifier`.

    :meth:`branch_log_probs`: a class prototype is the mean embedding of the
    class's ``k`` synthetic nodes (one set for the head branch, one for the
    tail); a query's log-probabilities are :math:`\log\mathrm{softmax}(-\Vert
    \mathrm{branch}(q)-p_c\Vert^2)`. :meth:`mix` combines the branches with the
    degree gate :math:`\alpha_v=\sigma(d_v-(\tau+1))` (``head_degree`` :math:`\tau`
    = 3): head-branch weight :math:`\alpha_v`, tail :math:`1-\alpha_v`.

    Args:
        in_channels (int): feature width :math:`F`.
        channels (int): embedding width :math:`D` (the code's ``hid_dim`` = 64).
        num_classes (int): :math:`C`.
        aggregate (str): the branch layers' aggregation (``"code"`` or ``"query"``).

    Shapes:
        - :meth:`embed`: features :math:`(N, F)`, edges :math:`(2, E)` -> :math:`(N, D)`
        - :meth:`branch_log_probs`: queries and neighbour means :math:`(Q, D)`, synthetic features
          :math:`(Ck, F)` -> head and tail log-probabilities :math:`(Q, C)` each
    """

    def __init__(self, in_channels: int, channels: int, num_classes: int, aggregate: str = "code"):
        super().__init__()
        self.num_classes = num_classes
        self.embedder = GraphSAGE(in_channels, 2 * channels, num_layers=2, out_channels=channels, dropout=0.5)
        self.classifier = nn.Linear(channels, num_classes)
        self.head = BranchClassifier(channels, 2, aggregate)
        self.tail = BranchClassifier(channels, 2, aggregate)

    def reset_parameters(self) -> None:
        self.embedder.reset_parameters()
        self.classifier.reset_parameters()
        self.head.reset_parameters()
        self.tail.reset_parameters()

    def embed(self, x: Tensor, edge_index: Tensor) -> Tensor:
        return self.embedder(x, edge_index)

    def embed_synthetic(self, features: Tensor) -> Tensor:
        """Synthetic nodes through the embedder on a graph of self-loops (each node its only neighbour)."""
        loops = torch.arange(features.size(0), device=features.device).repeat(2, 1)
        return self.embedder(features, loops)

    def branch_log_probs(self, query: Tensor, neighbor: Tensor, syn_head: Tensor,
                         syn_tail: Tensor) -> tuple[Tensor, Tensor]:
        out = []
        for branch, features in ((self.head, syn_head), (self.tail, syn_tail)):
            syn = self.embed_synthetic(features)
            prototypes = syn.view(self.num_classes, -1, syn.size(1)).mean(1)
            out.append(F.log_softmax(-squared_distances(branch(query, neighbor, syn), prototypes), dim=1))
        return out[0], out[1]

    @staticmethod
    def gate(degree: Tensor, head_degree: int) -> Tensor:
        """:math:`\\alpha_v=\\sigma(d_v-(\\tau+1))` (the code's ``1/(1+exp(-(deg-(head_deg_thres+1))))``)."""
        return torch.sigmoid(degree.float() - (head_degree + 1)).unsqueeze(1)
