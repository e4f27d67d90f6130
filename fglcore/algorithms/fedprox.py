"""FedProx: FedAvg with a proximal term on each local objective.

Li et al., "Federated Optimization in Heterogeneous Networks", MLSys 2020,
Eq. (2): in round ``t`` client ``k`` minimises

    h_k(w; w^t) = F_k(w) + (mu / 2) * ||w - w^t||^2

where ``w^t`` is the global model it received (the anchor) and ``F_k`` its
usual loss; the server aggregates exactly as FedAvg. The norm runs over the
shared parameters (all of them, or the convolutions of a multi-dataset graph
federation, as in GCFL's FedProx code used by FedStar's Table 1). Option
``mu`` (default 0.01, FedStar's setting); ``mu = 0`` is FedAvg, number for
number. The paper's inexact local solvers and partial participation
(stragglers) are not modelled: every client trains ``config.local_epochs``
epochs every round. ``share`` and ``reset_optimizer`` are FedAvg's options.
"""
from __future__ import annotations

from typing import Sequence

from torch import Tensor

from fglcore.algorithms.base import Trainer, register_algorithm
from fglcore.algorithms.fedavg import FedAvg, FedAvgClient
from fglcore.algorithms.training import ExtraLoss
from fglcore.config import ConfigError
from fglcore.fl.engine import Payload


class FedProxClient(FedAvgClient):
    """A FedAvg client whose local loss adds ``(mu / 2) ||w - w^t||^2`` over the shared parameters."""

    def __init__(
        self, cid: int, trainer: Trainer, epochs: int, shared: Sequence[str], mu: float, reset_optimizer: bool = False
    ):
        super().__init__(cid, trainer, epochs, shared, reset_optimizer)
        self.mu = mu
        named = dict(self.model.named_parameters())
        self.proximal_parameters = [named[name] for name in sorted(self.shared)]
        self.anchor = [p.detach().clone() for p in self.proximal_parameters]

    def receive(self, payload: Payload, round: int) -> None:
        super().receive(payload, round)
        for anchor, name in zip(self.anchor, sorted(self.shared)):
            anchor.copy_(payload[name])

    def extra_loss(self) -> ExtraLoss:
        def proximal_term(output: Tensor) -> Tensor:
            distance = sum((p - a).pow(2).sum() for p, a in zip(self.proximal_parameters, self.anchor))
            return (self.mu / 2) * distance

        return proximal_term


@register_algorithm
class FedProx(FedAvg):
    """FedProx (Li et al., MLSys 2020, Eq. 2): FedAvg plus a proximal term of weight ``mu``."""

    name = "fedprox"
    default_options = {**FedAvg.default_options, "mu": 0.01}
    citation = "Li et al., Federated Optimization in Heterogeneous Networks, MLSys 2020"

    @classmethod
    def check_options(cls, options):
        merged = super().check_options(options)
        if merged["mu"] < 0:
            raise ConfigError(f"algorithm_options.mu: must be >= 0, got {merged['mu']}")
        return merged

    def make_client(self, cid: int, trainer: Trainer, shared: Sequence[str]) -> FedProxClient:
        return FedProxClient(
            cid, trainer, self.config.local_epochs, shared, self.options["mu"], self.options["reset_optimizer"]
        )
