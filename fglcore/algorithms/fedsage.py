"""FedSage: FedAvg of a GraphSAGE model (without FedSage+'s neighbour generator).

Zhang et al., "Subgraph Federated Learning with Missing Neighbor Generation",
NeurIPS 2021: *FedSage* trains GraphSAGE (Hamilton et al., NeurIPS 2017,
Eq. 1 / Alg. 1 with the mean aggregator) on every client's data under
FedAvg (McMahan et al., AISTATS 2017, Alg. 1); *FedSage+* adds a generator
of missing neighbours: that is :mod:`fglcore.algorithms.fedsage_plus`
(``fedsage_plus``, this class run on the mended graphs).

This is the FedSage baseline exactly as FedStar ran it (Tan et al., AAAI
2023, App. A.2: "A three-layer GraphSage model is trained under the FedAvg
framework"; official ``lib/models.py`` ``GraphSage``/``serverGraphSage``;
FedStar digest reading A6): the backbone is ``config.model = "sage"``
(SAGEConv layers, mean aggregation, ``num_layers=3`` in FedStar's tables) and
the server averages, weighted by the clients' training samples, the
parameters selected by FedAvg's ``share`` option. FedStar's server model
holds only the SAGE convolutions (``share="convs"``); the FedStar tables use
``share="matching"`` (every parameter whose shape agrees on all clients, the
same shared set as their FedAvg row, reading A2). Every other option and
behaviour is FedAvg's (:mod:`fglcore.algorithms.fedavg`), including the
Adam state kept across rounds.

Works on node tasks too (FedSage without the generator on subgraphs).
"""
from __future__ import annotations

from fglcore.algorithms.base import register_algorithm
from fglcore.algorithms.fedavg import FedAvg
from fglcore.config import ConfigError, ExperimentConfig

BACKBONE = "sage"


@register_algorithm
class FedSage(FedAvg):
    """FedSage (Zhang et al., NeurIPS 2021) = FedAvg with a GraphSAGE backbone; no neighbour generator."""

    name = "fedsage"
    tasks = ("node", "graph")
    honours_model_options = True  # FedAvg's make_model
    citation = (
        "Zhang et al., Subgraph Federated Learning with Missing Neighbor Generation, NeurIPS 2021 "
        "(FedSage, without the generator of FedSage+), as run by Tan et al., AAAI 2023"
    )

    @classmethod
    def check_config(cls, config: ExperimentConfig) -> None:
        """FedSage trains GraphSAGE: ``config.model`` must be ``"sage"``."""
        super().check_config(config)
        if config.model != BACKBONE:
            raise ConfigError(
                f"model: fedsage trains a GraphSAGE backbone, so model must be {BACKBONE!r}, got {config.model!r}; "
                "use fedavg for other backbones"
            )
