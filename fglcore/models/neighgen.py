"""FedSage+'s missing-neighbour generator NeighGen (Zhang et al., NeurIPS 2021, Sec. 3.3, Fig. 2)."""
from __future__ import annotations

from typing import NamedTuple, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from fglcore.models.feature_generator import FeatureGenerator
from fglcore.models.gcn import GCN
from fglcore.models.sage import GraphSAGE

ENCODERS = {"sage": GraphSAGE, "gcn": GCN}
GENERATOR_HIDDEN = (256, 2048)  # fGen's hidden widths in both official codes


class NeighGenOutput(NamedTuple):
    """What NeighGen computes for every node: dGen's count, fGen's input (embedding plus noise) and output."""

    degree: Tensor
    generator_input: Tensor
    features: Tensor


class NeighGen(nn.Module):
    r"""NeighGen (Zhang et al., "Subgraph Federated Learning with Missing Neighbor Generation", NeurIPS
    2021, Sec. 3.3, Fig. 2): an encoder :math:`H^e`, a missing-degree regressor dGen :math:`H^d` and a
    feature generator fGen :math:`H^f`,

    .. math::
        z_v = \mathrm{ReLU}(H^e(X, \mathcal E)_v), \qquad
        \tilde n_v = H^d(z_v) = \mathrm{ReLU}(w_d^\top z_v + b_d), \qquad
        \tilde x_v = H^f(z_v + \epsilon), \ \epsilon \sim \mathcal N(0, I)

    (:class:`~fglcore.models.feature_generator.FeatureGenerator`). The paper's encoder is GraphSAGE
    (``encoder="sage"``, default); the official code ``zkhku/fedsage`` (``LocalSage_Plus``) uses a
    two-layer GCN (``encoder="gcn"``). dGen is "a linear regression model" in the paper; both official
    codes put a ReLU on it (``RegModel``), so counts are never negative -- kept here. The number of
    generated neighbours actually used is :math:`\min(P, \lfloor\tilde n_v\rfloor)` (or rounded),
    chosen by the caller (:mod:`fglcore.algorithms.fedsage_plus`). NeighGen is trained with Eq. (3)
    (locally) and Eq. (6) (with the other clients' features), see that module.

    Args:
        in_channels (int): node feature width :math:`F`.
        hidden_channels (int): the encoder's hidden width (official code: 32).
        latent_channels (int): width of :math:`z_v` (official code: 128).
        num_pred (int): :math:`P`, the most missing neighbours generated per node (official code: 5).
        dropout (float): dropout of the encoder and of fGen.
        encoder (str): ``"sage"`` (paper) or ``"gcn"`` (official code).
        generator_hidden (sequence of int): fGen's hidden widths (default ``(256, 2048)``).

    Shapes:
        - **input:** node features :math:`(N, F)`, edge indices :math:`(2, |\mathcal E|)`, optional noise
          :math:`(N, d_z)`
        - **output:** :class:`NeighGenOutput` -- ``degree`` :math:`(N,)`, ``generator_input``
          :math:`(N, d_z)`, ``features`` :math:`(N, P, F)`
    """

    def __init__(self, in_channels: int, hidden_channels: int = 32, latent_channels: int = 128, num_pred: int = 5,
                 dropout: float = 0.5, encoder: str = "sage", generator_hidden: Sequence[int] = GENERATOR_HIDDEN):
        super().__init__()
        if encoder not in ENCODERS:
            raise ValueError(f"encoder: {encoder!r} is not accepted; accepted: {', '.join(ENCODERS)}")
        self.num_pred = int(num_pred)
        self.encoder = ENCODERS[encoder](in_channels, hidden_channels, latent_channels, num_layers=2,
                                         dropout=dropout)
        self.dgen = nn.Linear(latent_channels, 1)
        self.fgen = FeatureGenerator(latent_channels, in_channels, num_pred, generator_hidden, dropout)

    def reset_parameters(self) -> None:
        self.encoder.reset_parameters()
        self.dgen.reset_parameters()
        self.fgen.reset_parameters()

    def embed(self, x: Tensor, edge_index: Tensor) -> Tensor:
        """:math:`z = \\mathrm{ReLU}(H^e(X, \\mathcal E))`, ``(N, d_z)``."""
        return F.relu(self.encoder(x, edge_index))

    def missing_degree(self, z: Tensor) -> Tensor:
        """dGen: :math:`\\tilde n_v = \\mathrm{ReLU}(w_d^\\top z_v + b_d)`, ``(N,)``."""
        return F.relu(self.dgen(z)).view(-1)

    def forward(self, x: Tensor, edge_index: Tensor, noise: Tensor | None = None,
                rows: Tensor | None = None) -> NeighGenOutput:
        """Everything for every node, or fGen only for ``rows`` (``generator_input`` and ``features`` then
        have ``len(rows)`` rows; ``noise`` is still one row per node, so a row's noise does not depend on
        which other rows are generated)."""
        z = self.embed(x, edge_index)
        degree = self.missing_degree(z)
        if noise is None:
            noise = torch.randn_like(z)
        generator_input = z + noise
        if rows is not None:
            generator_input = generator_input[rows]
        features = self.fgen(generator_input, torch.zeros_like(generator_input))
        return NeighGenOutput(degree, generator_input, features)
