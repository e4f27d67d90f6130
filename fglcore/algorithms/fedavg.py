"""FedAvg: federated averaging of model parameters.

McMahan et al., "Communication-Efficient Learning of Deep Networks from
Decentralized Data", AISTATS 2017, Algorithm 1 (FederatedAveraging): the
server broadcasts the global weights ``w_t``; every client ``k`` sets its
model to ``w_t``, trains ``E = config.local_epochs`` epochs on its data and
uploads ``w^k_{t+1}``; the server sets ``w_{t+1} = sum_k (n_k / n) w^k_{t+1}``
with ``n_k`` the client's number of training samples (training nodes, or
training graphs). All clients take part in every round (``C = 1``).

Messages carry one tensor per shared parameter, named as in
``model.named_parameters()``; the weighted mean is the engine's default
:meth:`~fglcore.fl.engine.Server.aggregate`, so secure aggregation
(``config.secure_aggregation``) replaces it transparently.

Options:

* ``share`` (graph task): which parameters the server averages.
  ``"all"`` -- the whole model (needs identical models on every client);
  ``"convs"`` -- only the message-passing layers ``convs.*``, the setting of
  GCFL (Xie et al., NeurIPS 2021) and FedStar (Tan et al., AAAI 2023) for
  federations of different TU datasets, whose input widths and class counts
  differ (their ``serverGIN`` holds only ``graph_convs``);
  ``"matching"`` -- every layer whose parameters' names and shapes all agree
  on all clients (FedStar digest's reading A2 of its FedAvg baseline: convs,
  the head's hidden layer and, when class counts agree, the classifier; never
  the input layer, even though its bias has the same shape everywhere);
  ``"auto"`` (default) -- ``"all"`` when every client has the same input and
  output widths, else ``"convs"``. Unshared parameters stay personal.
* ``norm_layers``: ``"averaged"`` (default; Alg. 1 averages every shared
  parameter) or ``"local"``: the parameters of normalisation layers
  (LayerNorm, BatchNorm, ...; :func:`~fglcore.fl.parameters.norm_parameter_names`)
  are never sent nor averaged and stay each client's own, as in FedStruct's
  official code (``JavadAliakbari/FedStruct``: its MLP/GNN ``state_dict``,
  which its FedAvg "WA" mode broadcasts and averages, skips ``nn.LayerNorm``,
  ``nn.BatchNorm1d`` and ``nn.InstanceNorm1d``; digest §4.5, the reading
  FedStruct's FedAvg rows use, see :mod:`fglcore.papers.fedstruct.tables`).
  A model without normalisation layers is unaffected.
* ``weighting`` (node task): the weights :math:`n_k` of the mean.
  ``"labelled"`` (default; Alg. 1's :math:`n_k`, the client's training
  samples: its training nodes) or ``"nodes"``: all the client's nodes,
  labelled or not, :math:`n_k/n` -- FedStruct's official FedAvg ("WA",
  ``JavadAliakbari/FedStruct``, ``src/server.py``, ``Server.joint_train_w``:
  ``coef = [client.num_nodes() / num_nodes for client in self.clients]``,
  then ``mean_weights = sum_lod(clients_weights, coef)``; the same ``coef``
  as its FedSGD "GA", digest §4.5). An older revision of that file
  (``sum_weights`` of ``src/utils/utils.py``) takes the plain mean
  :math:`1/K` instead; the paper-era one weighs by nodes. The graph task
  has only ``"labelled"`` (training graphs). The same choice as FedSGD's
  option (:mod:`fglcore.algorithms.fedsgd`, :func:`client_weight`).
* ``reset_optimizer``: the paper trains each round with plain SGD, so the
  local optimizer has no state to carry. With Adam, this implementation by
  default **keeps each client's optimizer state across rounds**, as the
  FedStar/GCFL and OpenFGL code do; ``reset_optimizer=True`` clears it at the
  start of every round.
"""
from __future__ import annotations

from typing import Sequence

from torch import Tensor, nn
from torch_geometric.data import Data

from fglcore.algorithms.base import Algorithm, Trainer, TrainerClient, register_algorithm
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.fl.channel import Channel
from fglcore.fl.engine import Client, Payload, Server
from fglcore.fl.parameters import load_payload, module_payload, norm_parameter_names

SHARE_MODES = ("auto", "all", "convs", "matching")
NORM_LAYER_MODES = ("averaged", "local")
WEIGHTINGS = ("nodes", "labelled")


def client_weight(data: Data, weighting: str) -> int:
    """A node client's aggregation weight: its number of nodes (``"nodes"``) or of training nodes
    (``"labelled"``); FedAvg's and FedSGD's option ``weighting``."""
    return int(data.num_nodes) if weighting == "nodes" else int(data.train_mask.sum())


class FedAvgServer(Server):
    """Holds the global parameters; sends them to every client and replaces them by the clients' weighted mean."""

    def __init__(self, parameters: dict[str, Tensor]):
        self.parameters = {name: value.detach().clone() for name, value in parameters.items()}

    def payload_for(self, client: Client, round: int) -> Payload:
        return dict(self.parameters)

    def apply_mean(self, mean: Payload, round: int) -> None:
        self.parameters = {
            name: mean[name].to(device=old.device, dtype=old.dtype) for name, old in self.parameters.items()
        }


class FedAvgClient(TrainerClient):
    """Loads the received global parameters into its model (in place), trains, uploads the shared parameters."""

    def __init__(self, cid: int, trainer: Trainer, epochs: int, shared: Sequence[str], reset_optimizer: bool = False):
        super().__init__(cid, trainer, epochs)
        self.shared = frozenset(shared)
        self.reset_optimizer = reset_optimizer

    def receive(self, payload: Payload, round: int) -> None:
        load_payload(self.model, payload)

    def fit(self, round: int) -> Payload:
        if self.reset_optimizer:
            self.trainer.reset_optimizer()
        return super().fit(round)

    def upload(self) -> Payload:
        return module_payload(self.model, include=self.shared.__contains__)


def shared_parameter_names(models: Sequence[nn.Module], share: str, dims: Sequence[tuple[int, int]]) -> list[str]:
    """Names of the parameters the server averages under ``share`` (see the module docstring)."""
    if share not in SHARE_MODES:
        raise ConfigError(f"algorithm_options.share: {share!r} is not accepted; accepted: {', '.join(SHARE_MODES)}")
    if share == "auto":
        share = "all" if len(set(dims)) == 1 else "convs"
    params = [dict(m.named_parameters()) for m in models]
    first = params[0]
    if share == "matching":
        # A layer is shared only when all of its parameters agree, so a bias never travels without its weight.
        def agrees(name: str) -> bool:
            return all(name in other and other[name].shape == first[name].shape for other in params)

        layer_agrees: dict[str, bool] = {}
        for n in first:
            layer = n.rpartition(".")[0]
            layer_agrees[layer] = layer_agrees.get(layer, True) and agrees(n)
        names = [n for n in first if layer_agrees[n.rpartition(".")[0]]]
    else:
        names = [n for n in first if share == "all" or n.startswith("convs.")]
        for cid, other in enumerate(params):
            for n in names:
                if n not in other or other[n].shape != first[n].shape:
                    found = "missing" if n not in other else f"of shape {tuple(other[n].shape)}"
                    raise ConfigError(
                        f"algorithm_options.share={share!r}: parameter {n!r} is {tuple(first[n].shape)} on client 0 "
                        f"but {found} on client {cid}; clients' (in, out) widths are {sorted(set(dims))}. "
                        "Use share='convs' or 'matching' for federations of different datasets"
                    )
    if not names:
        raise ConfigError(
            f"algorithm_options.share={share!r} selects no parameter of {type(models[0]).__name__} "
            f"(parameters: {', '.join(first)})"
        )
    return names


@register_algorithm
class FedAvg(Algorithm):
    """FedAvg (McMahan et al., AISTATS 2017, Alg. 1); options ``share``, ``norm_layers`` and
    ``reset_optimizer`` are described in :mod:`fglcore.algorithms.fedavg`."""

    name = "fedavg"
    tasks = ("node", "graph")
    default_options = {"share": "auto", "norm_layers": "averaged", "reset_optimizer": False, "weighting": "labelled"}
    option_choices = {"share": SHARE_MODES, "norm_layers": NORM_LAYER_MODES, "weighting": WEIGHTINGS}
    citation = (
        "McMahan et al., Communication-Efficient Learning of Deep Networks from Decentralized Data, AISTATS 2017"
    )
    honours_model_options = True

    def build(self, channel: Channel) -> tuple[Server, list[Client]]:
        global_model, models = self.init_models()
        shared = self.shared_names(models)
        initial = module_payload(global_model, include=set(shared).__contains__)
        server = self.make_server({name: value.to(self.device) for name, value in initial.items()})
        clients = [self.make_client(cid, self.make_trainer(model, cid), shared) for cid, model in enumerate(models)]
        if self.options.get("weighting", "labelled") == "nodes":  # FedStruct's official FedAvg: n_k / n
            for client, data in zip(clients, self.clients_data):
                client.num_samples = client_weight(data, "nodes")
        return server, clients

    @classmethod
    def check_config(cls, config: ExperimentConfig) -> None:
        super().check_config(config)
        if cls.check_options(config.algorithm_options).get("weighting", "labelled") == "nodes":
            from fglcore.data.datasets import check_dataset

            task = check_dataset(config.dataset).task
            if task != "node":
                raise ConfigError(f"algorithm_options.weighting: 'nodes' weighs node clients by their nodes; the "
                                  f"{task} task of {config.dataset!r} accepts only 'labelled' (training graphs)")

    def shared_names(self, models: Sequence[nn.Module]) -> list[str]:
        """The parameters the server holds and the clients exchange (options ``share`` and ``norm_layers``;
        a subclass without ``norm_layers`` averages its normalisation layers)."""
        names = shared_parameter_names(models, self.options["share"], self.client_dims())
        if self.options.get("norm_layers", "averaged") == "local":
            norms = norm_parameter_names(models[0])
            names = [n for n in names if n not in norms]
        return names

    def make_server(self, parameters: dict[str, Tensor]) -> FedAvgServer:
        """The server, holding the initial global ``parameters`` (on the algorithm's device)."""
        return FedAvgServer(parameters)

    def make_client(self, cid: int, trainer: Trainer, shared: Sequence[str]) -> FedAvgClient:
        return FedAvgClient(cid, trainer, self.config.local_epochs, shared, self.options["reset_optimizer"])
