"""Local training (a.k.a. self-training, standalone): no federation at all.

Each client trains its own model on its own data only and never sends a
message; there is no server. This is the "Local" row of FedSpray (Fu et al.,
KDD 2024, Table 2), O-pFGL and FedStruct, and the "Local"/"self-training"
baseline of GCFL (Xie et al., NeurIPS 2021) and FedStar (Tan et al., AAAI 2023,
Table 1), whose code (``run_selftrain_GC``) starts every client from the same
initial GIN convolutions -- here every client starts from the global model
initialised from ``config.seed`` (all parameters whose shapes agree). Under a
model list (``config.model = "hetero"``, O-pFGL's Tables 3/11 "Standalone")
each client trains its own architecture, drawn in client order after
seeding (:meth:`~fglcore.algorithms.base.Algorithm.init_models`).

Each round trains ``config.local_epochs`` epochs, so histories line up with
federated runs of the same config (FedStar's Local = 200 epochs is
``rounds=200, local_epochs=1`` or ``rounds=1, local_epochs=200`` with
``selection="last"``). Each client keeps one optimizer for the whole run.
"""
from __future__ import annotations

from fglcore.algorithms.base import Algorithm, TrainerClient, register_algorithm
from fglcore.fl.channel import Channel
from fglcore.fl.engine import Client


@register_algorithm
class Local(Algorithm):
    """Every client trains alone (no server, no messages)."""

    name = "local"
    tasks = ("node", "graph")
    citation = "Local training baseline, as in Xie et al., Federated Graph Classification over Non-IID Graphs, NeurIPS 2021"
    honours_model_options = True
    heterogeneous_models = True  # nothing is exchanged: each client may train its own architecture

    def build(self, channel: Channel) -> tuple[None, list[Client]]:
        _, models = self.init_models()
        clients = [
            TrainerClient(cid, self.make_trainer(model, cid), self.config.local_epochs)
            for cid, model in enumerate(models)
        ]
        return None, clients
