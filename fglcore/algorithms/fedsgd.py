r"""FedSGD: one full-batch gradient per client and round, one optimiser step on the global model.

McMahan et al., "Communication-Efficient Learning of Deep Networks from
Decentralized Data", AISTATS 2017, Sec. 2 (FederatedSGD), as used by
FedStruct (Aliakbari, Östman and Graell i Amat, "Decoupled Subgraph Federated
Learning", ICLR 2025, Eqs. 3-5; its baselines "FedSGD GNN / DGCN / MLP" of
Tables 2 and 6, digest §4.5-4.6; the official code's "GA" mode). In round
:math:`t` every client :math:`i` receives :math:`\theta_t`, computes the
gradient :math:`g_i = \nabla_\theta \mathcal L_i(\theta_t)` of the mean
cross-entropy over its training nodes on *its own subgraph* (no cross-client
edges: the baselines ignore the interconnections) and uploads it; the server
forms :math:`g = \sum_i w_i g_i` and takes one optimiser step. Eq. 5 is plain
gradient descent; the paper's learning rates and round counts (Table 5) are
Adam's, the official code's choice (digest §1.3 and item 3), so the step is
``config.optimizer`` (default Adam) with ``config.lr`` and
``config.weight_decay``, the server holding its state. (The official code
keeps one Adam per client, all fed the same averaged gradient: the same
numbers.)

Option ``weighting``:

* ``"nodes"`` (default; the official code, digest §1.3): :math:`w_i = n_i/n`,
  :math:`n_i` the client's number of nodes;
* ``"labelled"`` (Eq. 3 exactly): :math:`w_i = |\tilde{\mathcal V}_i| /
  |\tilde{\mathcal V}|`, so :math:`g` is the gradient of the mean
  cross-entropy over every training node of the disjoint union of the
  client subgraphs (``central`` with ``graph="union"``, whose training this
  then repeats number for number without dropout,
  ``tests/test_fedsgd.py``).

Both weightings feed the engine's weighted mean (the clients' ``num_samples``),
so secure aggregation (``config.secure_aggregation``) replaces it unchanged.
Messages: a download of the global parameters per client and round (and the
final model after the last round), an upload of one gradient tensor per
parameter (named as the parameter) per client and round.

This is the one FedSGD of the package: :class:`FedSGDServer`,
:func:`~fglcore.fl.parameters.gradient_payload` and :func:`client_weight`
are also FedStruct's ``training="fedsgd"``
(:mod:`fglcore.algorithms.fedstruct`). A client without training nodes
uploads a zero gradient with its weight, as FedStruct's. Dropout masks are
drawn by each client. One gradient per round by definition:
``config.local_epochs`` (FedAvg's :math:`E`) is not used. Evaluation is the
engine's: every client scores the global model it received on its own
validation and test nodes. Node classification only; the models of the
paper's rows are ``sage`` ("GNN"), ``decoupled_gcn`` ("DGCN") and ``mlp``,
any node model of the registry runs.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from torch import Tensor, nn

from fglcore.algorithms.base import Trainer, register_algorithm
from fglcore.algorithms.fedavg import WEIGHTINGS, FedAvg, FedAvgClient, FedAvgServer, client_weight
from fglcore.algorithms.training import make_optimizer
from fglcore.config import ExperimentConfig
from fglcore.fl.engine import Payload
from fglcore.fl.parameters import gradient_payload

__all__ = ["WEIGHTINGS", "FedSGD", "FedSGDClient", "FedSGDServer", "client_weight"]


class FedSGDServer(FedAvgServer):
    r"""FedAvg's server whose new global parameters come from one optimiser step on the clients' mean gradient.

    ``payload_for`` sends the parameters (as FedAvg); :meth:`apply_mean`
    receives :math:`g = \sum_i w_i g_i` from the engine's (or secure)
    weighted mean, sets it as the parameters' gradient and steps the
    server's optimiser (FedStruct, Eq. 5, with Adam).
    """

    def __init__(self, parameters: Mapping[str, Tensor], config: ExperimentConfig):
        super().__init__(dict(parameters))
        for value in self.parameters.values():
            value.requires_grad_(True)
        self.optimizer = make_optimizer(self.parameters.values(), config)

    def apply_mean(self, mean: Payload, round: int) -> None:
        for name, param in self.parameters.items():
            param.grad = mean[name].to(device=param.device, dtype=param.dtype)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)


class FedSGDClient(FedAvgClient):
    """Loads the global parameters (as FedAvg), computes one full-batch gradient, uploads it."""

    def __init__(self, cid: int, trainer: Trainer, shared: Sequence[str], weight: int):
        super().__init__(cid, trainer, 1, shared)
        self.num_samples = weight

    def fit(self, round: int) -> Payload:
        if self.trainer.num_train_samples:
            self.trainer.backward()
        else:  # no loss: a zero gradient (gradient_payload fills it in)
            self.trainer.optimizer.zero_grad(set_to_none=True)
        return gradient_payload(self.model, include=self.shared.__contains__)


@register_algorithm
class FedSGD(FedAvg):
    """FedSGD (McMahan et al., AISTATS 2017; FedStruct's baseline, ICLR 2025, Eqs. 3-5, with Adam); option
    ``weighting``, see :mod:`fglcore.algorithms.fedsgd`."""

    name = "fedsgd"
    tasks = ("node",)
    task_hints = {"graph": "; for graph classification use fedavg (FedSGD here is FedStruct's full-batch node "
                           "baseline)"}
    default_options = {"weighting": "nodes"}
    option_choices = {"weighting": WEIGHTINGS}
    citation = ("McMahan et al., Communication-Efficient Learning of Deep Networks from Decentralized Data, "
                "AISTATS 2017 (FedSGD), as the baseline of Aliakbari et al., Decoupled Subgraph Federated "
                "Learning, ICLR 2025")
    honours_model_options = True

    def shared_names(self, models: Sequence[nn.Module]) -> list[str]:
        """Every parameter: one node federation, one model."""
        return [name for name, _ in models[0].named_parameters()]

    def make_server(self, parameters: dict[str, Tensor]) -> FedSGDServer:
        return FedSGDServer(parameters, self.config)

    def make_client(self, cid: int, trainer: Trainer, shared: Sequence[str]) -> FedSGDClient:
        weight = client_weight(self.clients_data[cid], self.options["weighting"])
        return FedSGDClient(cid, trainer, shared, weight)
