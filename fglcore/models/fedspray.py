"""FedSpray's global feature-structure encoder (embedding, soft-target classifier, projector)."""
from __future__ import annotations

import math

import torch.nn.functional as F
from torch import Tensor, nn

ENCODER_INITS = ("pytorch", "official")


class FeatureStructureEncoder(nn.Module):
    """FedSpray's global feature-structure encoder :math:`g(\\omega)` (Fu et al., "Federated Graph Learning with
    Structure Proxy Alignment", KDD 2024, §4.2.2, Fig. 3b): one linear layer per part.

    * ``embedding`` :math:`g_e`: :math:`e_i=\\mathrm{ReLU}(W_e x_i+b_e)`, width ``proxy_dim``;
    * ``classifier`` :math:`g_p`: soft-target logits :math:`p_i = g_p(e_i + s_i)` (Eq. 9, ``Combine`` = addition);
    * ``projector`` :math:`g_q`: feature-only logits :math:`q_i = g_q(e_i)` (Eq. 10).

    It has no single forward pass: the algorithm calls :meth:`embed`,
    :meth:`soft_target_logits` and :meth:`projector_logits` where Eqs. 9-13
    need them (:mod:`fglcore.algorithms.fedspray`).

    Args:
        in_channels (int): node feature width :math:`F`.
        proxy_dim (int): width :math:`d_s` of embeddings and structure proxies.
        num_classes (int): number of classes :math:`C`.
        init (str): ``"pytorch"`` (``nn.Linear``'s) or ``"official"`` (the official ``MLPLayer``'s
            :math:`U(-1/\\sqrt{out}, 1/\\sqrt{out})` for weights and biases).

    Shapes:
        - :meth:`embed`: node features :math:`(N, F)` -> embeddings :math:`(N, d_s)`
        - :meth:`soft_target_logits`: embeddings and proxies :math:`(N, d_s)` -> logits :math:`(N, C)`
        - :meth:`projector_logits`: embeddings :math:`(N, d_s)` -> logits :math:`(N, C)`
    """

    def __init__(self, in_channels: int, proxy_dim: int, num_classes: int, init: str = "pytorch"):
        super().__init__()
        if init not in ENCODER_INITS:
            raise ValueError(f"unknown encoder init {init!r}; accepted: {', '.join(ENCODER_INITS)}")
        self.init = init
        self.embedding = nn.Linear(in_channels, proxy_dim)
        self.classifier = nn.Linear(proxy_dim, num_classes)
        self.projector = nn.Linear(proxy_dim, num_classes)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for layer in (self.embedding, self.classifier, self.projector):
            if self.init == "pytorch":
                layer.reset_parameters()
            else:  # the official MLPLayer: weight and bias ~ U(-1/sqrt(out), 1/sqrt(out))
                bound = 1.0 / math.sqrt(layer.out_features)
                nn.init.uniform_(layer.weight, -bound, bound)
                nn.init.uniform_(layer.bias, -bound, bound)

    def embed(self, x: Tensor) -> Tensor:
        """:math:`e_i = g_e(x_i)`."""
        return F.relu(self.embedding(x))

    def soft_target_logits(self, embedding: Tensor, proxies: Tensor) -> Tensor:
        """Logits of :math:`p_i = g_p(e_i + s_i)` (Eq. 9 with ``Combine`` = addition)."""
        return self.classifier(embedding + proxies)

    def projector_logits(self, embedding: Tensor) -> Tensor:
        """Logits of :math:`q_i = g_q(e_i)` (Eq. 10)."""
        return self.projector(embedding)
