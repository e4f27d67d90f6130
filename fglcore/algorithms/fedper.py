"""FedPer: federated base layers, personal top layers.

Arivazhagan et al., "Federated Learning with Personalization Layers",
arXiv:1912.00818, 2019 (the "base + personalization layer" approach): the
model is cut into *base layers*, trained by every client and averaged by the server exactly as in
FedAvg (weights ``n_k / n``, ``n_k`` the client's training samples), and
*personalization layers* on top, trained by each client on its own data and
never sent. Here the personalization layers are the model's classifier:

* graph task (:class:`~fglcore.models.graph_classifier.GraphClassifier`): the ``head``
  (FC, ReLU, Dropout, FC) is personal. With ``body="convs"`` (default) only
  the message-passing layers ``convs.*`` are averaged and the input encoder
  stays personal too. That is FedStar's FedPer baseline (Tan et al., AAAI
  2023, App. A.2: "only the parameters in graph convolution layers are shared
  across clients"; its server's ``aggregate_weights_per`` averages the keys
  containing ``graph_convs``), and the only choice across TU datasets of
  different feature widths. ``body="all_but_head"`` also averages
  ``input_encoder`` (the paper's split: everything below the head), which
  needs one feature width on every client.
* node task: the last layer of the model's layer list (``convs``, or
  ``mlp.convs`` of the decoupled GCN) -- the layer that maps to the classes --
  is personal; every other parameter is averaged. ``body`` makes no
  difference there, the node models having no separate input encoder. A
  one-layer model (``sgc``) has no base layer and is refused.

Each client evaluates its own model, personal layers included (FedPer's
models are personalized). Each client keeps its Adam state across rounds, as
FedAvg here does (``reset_optimizer=True`` clears it every round).
"""
from __future__ import annotations

from typing import Sequence

from torch import nn

from fglcore.algorithms.base import Algorithm, register_algorithm
from fglcore.algorithms.fedavg import FedAvgClient, FedAvgServer
from fglcore.config import ConfigError
from fglcore.fl.channel import Channel
from fglcore.fl.engine import Client, Server
from fglcore.fl.parameters import module_payload

BODIES = ("convs", "all_but_head")


def personal_prefixes(model: nn.Module, task: str, body: str = "convs") -> tuple[str, ...]:
    """Name prefixes of ``model``'s personalization layers (never sent) under ``body``."""
    if body not in BODIES:
        raise ConfigError(f"algorithm_options.body: {body!r} is not accepted; accepted: {', '.join(BODIES)}")
    if task == "graph":
        if not (hasattr(model, "head") and hasattr(model, "input_encoder")):
            raise ConfigError(
                f"fedper: a graph model needs 'input_encoder' and 'head' modules; {type(model).__name__} has "
                f"{', '.join(name for name, _ in model.named_children())}"
            )
        return ("head.",) if body == "all_but_head" else ("input_encoder.", "head.")
    for name, module in model.named_modules():
        if isinstance(module, nn.ModuleList) and name.split(".")[-1] == "convs" and len(module):
            return (f"{name}.{len(module) - 1}.",)
    raise ConfigError(
        f"fedper: {type(model).__name__} has no layer list 'convs' whose last layer could be the personal classifier"
    )


def fedper_shared_names(models: Sequence[nn.Module], task: str, body: str = "convs") -> list[str]:
    """Names of the base-layer parameters the server averages; checked to agree in shape on all clients."""
    personal = personal_prefixes(models[0], task, body)
    params = [dict(m.named_parameters()) for m in models]
    names = [name for name in params[0] if not name.startswith(personal)]
    if not names:
        raise ConfigError(
            f"fedper: {type(models[0]).__name__} has no base layer to share (all its parameters are in the "
            f"personal layers {', '.join(p.rstrip('.') for p in personal)}); use a model with at least two layers"
        )
    for cid, other in enumerate(params):
        for name in names:
            if name not in other or other[name].shape != params[0][name].shape:
                found = "missing" if name not in other else f"of shape {tuple(other[name].shape)}"
                raise ConfigError(
                    f"fedper body={body!r}: parameter {name!r} is {tuple(params[0][name].shape)} on client 0 but "
                    f"{found} on client {cid}; use body='convs' for federations of different feature widths"
                )
    return names


@register_algorithm
class FedPer(Algorithm):
    """FedPer (Arivazhagan et al., arXiv 2019); option ``body`` and the layer split in
    :mod:`fglcore.algorithms.fedper`."""

    name = "fedper"
    tasks = ("node", "graph")
    default_options = {"body": "convs", "reset_optimizer": False}
    option_choices = {"body": BODIES}
    citation = "Arivazhagan et al., Federated Learning with Personalization Layers, arXiv:1912.00818, 2019"

    def build(self, channel: Channel) -> tuple[Server, list[Client]]:
        global_model, models = self.init_models()
        shared = fedper_shared_names(models, self.task, self.options["body"])
        initial = module_payload(global_model, include=set(shared).__contains__)
        server = FedAvgServer({name: value.to(self.device) for name, value in initial.items()})
        clients: list[Client] = [
            FedAvgClient(
                cid, self.make_trainer(model, cid), self.config.local_epochs, shared, self.options["reset_optimizer"]
            )
            for cid, model in enumerate(models)
        ]
        return server, clients
