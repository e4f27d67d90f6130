"""The :class:`Algorithm` interface and the registry of algorithms.

An algorithm turns an :class:`~fglcore.config.ExperimentConfig` and a
federation into a :class:`~fglcore.fl.engine.Server` and its
:class:`~fglcore.fl.engine.Client` objects (:meth:`Algorithm.build`);
:meth:`Algorithm.run` then drives them through
:func:`~fglcore.fl.engine.run_rounds`. A new algorithm is one module in this
package holding one subclass decorated with :func:`register_algorithm`::

    @register_algorithm
    class MyMethod(Algorithm):
        \"\"\"What it does (Author et al., Venue Year, Eq. n).\"\"\"
        name = "mymethod"
        default_options = {"alpha": 0.5}

        def build(self, channel):
            ...
"""
from __future__ import annotations

import copy
from typing import Any, ClassVar, Mapping, Sequence

import torch
from torch import nn

from fglcore.algorithms.training import ExtraLoss, GraphTrainer, NodeTrainer, client_seed
from fglcore.checks import Bounds, check_finite, check_number
from fglcore.config import ConfigError, ExperimentConfig, check_choice, check_type, check_unknown_keys
from fglcore.fl.channel import Channel
from fglcore.fl.checkpoint import RoundCheckpoint
from fglcore.fl.engine import Client, Payload, RunResult, Server, run_rounds
from fglcore.fl.secure import SecureAggregator
from fglcore.metrics import Prediction
from fglcore.models import MODELS, build_client_model, build_model
from fglcore.registry import Registry
from fglcore.runtime import set_seed

Trainer = NodeTrainer | GraphTrainer


class Algorithm:
    """Base class of every federated (or reference) training algorithm.

    Class attributes describe the algorithm to the rest of the package:

    * ``name``: its registry name (``config.algorithm``);
    * ``tasks``: the federation tasks it supports (``"node"``, ``"graph"``);
    * ``task_hints``: per unsupported task, text appended to the error (e.g.
      which algorithm to use instead);
    * ``needs_cross_edges``: whether the federation must keep the edges
      between clients (``build_federation(config, keep_cross_edges=True)``);
    * ``default_options``: every accepted ``config.algorithm_options`` key
      with its default; a value must have the default's type;
    * ``option_choices``: for string options, the accepted values;
    * ``option_bounds``: for number options, their range (:class:`~fglcore.checks.Bounds`; an option whose
      default is ``None`` must be ``None`` or a number in range);
    * ``citation``: the paper it follows;
    * ``secure_aggregation_unsupported``: why the server needs individual
      updates (so secure aggregation cannot be used), or ``None``.
    """

    name: ClassVar[str]
    tasks: ClassVar[tuple[str, ...]] = ("node",)
    task_hints: ClassVar[dict[str, str]] = {}
    needs_cross_edges: ClassVar[bool] = False
    default_options: ClassVar[dict[str, Any]] = {}
    option_choices: ClassVar[dict[str, tuple[str, ...]]] = {}
    option_bounds: ClassVar[dict[str, Bounds]] = {}
    citation: ClassVar[str] = ""
    late_options: ClassVar[tuple[str, ...]] = ()
    """Options added after results were stored: :func:`~fglcore.results.run_id` leaves them out while they have
    their default, so the runs stored before keep their run ids (and are still copied between tables)."""
    secure_aggregation_unsupported: ClassVar[str | None] = None
    models: ClassVar[tuple[str, ...] | None] = None
    """The backbones (``config.model``) the algorithm trains; ``None``: any registered model."""
    honours_model_options: ClassVar[bool] = False
    """Whether ``config.model_options`` reach the model: declared ``True`` by an algorithm whose models all
    come from :meth:`make_model` (not overridden). Not inherited (a subclass that builds its models in
    another way must not accept them silently): each class declares it itself, see :meth:`uses_model_options`;
    any other algorithm rejects non-empty options."""
    heterogeneous_models: ClassVar[bool] = False
    """Whether each client may train its own architecture (``config.model`` a model list such as ``"hetero"``,
    :mod:`fglcore.models.model_lists`): declared ``True`` by an algorithm that never combines parameters across
    architectures (it exchanges none, or, as FedTAD, DENSE and Co-Boost, distils one student per architecture,
    :meth:`architecture_groups`) and builds its client models through :meth:`init_models` /
    :meth:`make_client_model`. Not inherited
    (a subclass may aggregate): each class declares it itself, see :meth:`accepts_model_lists`."""
    heterogeneous_models_unsupported: ClassVar[str] = ("it combines model parameters across clients, which "
                                                       "needs one architecture on every client")
    """Why the algorithm refuses a model list (the :class:`~fglcore.config.ConfigError` says it)."""

    @classmethod
    def check_config(cls, config: ExperimentConfig) -> None:
        """Reject settings this algorithm cannot honour; called by config validation, before any data loads."""
        cls.check_options(config.algorithm_options)
        if config.model_options and not cls.uses_model_options():
            accepted = [n for n in ALGORITHMS.names() if ALGORITHMS.get(n).uses_model_options()]
            raise ConfigError(f"model_options: {cls.name} does not pass model_options to its models "
                              f"({config.model_options!r}); leave them empty, or use an algorithm that does: "
                              f"{', '.join(accepted)}")
        spec = MODELS.get(config.model)
        if spec.is_list and not cls.accepts_model_lists():
            accepted = [n for n in ALGORITHMS.names() if ALGORITHMS.get(n).accepts_model_lists()]
            raise ConfigError(f"model: {config.model!r} gives each of its {len(spec.clients)} clients its own "
                              f"architecture ({spec.describe_clients()}); {cls.name} cannot train it: "
                              f"{cls.heterogeneous_models_unsupported}. Use one model (e.g. 'gcn'), or an "
                              f"algorithm that accepts a model list: {', '.join(accepted)}")
        if cls.models is not None and not spec.is_list and config.model not in cls.models:
            raise ConfigError(f"model: {config.model!r} is not accepted by {cls.name}; accepted: "
                              f"{', '.join(cls.models)}")
        if config.secure_aggregation and cls.secure_aggregation_unsupported:
            raise ConfigError(
                f"secure_aggregation: not supported by {cls.name} -- {cls.secure_aggregation_unsupported}; "
                "set secure_aggregation to false"
            )

    @classmethod
    def accepts_model_lists(cls) -> bool:
        """Whether ``config.model`` may be a per-client model list (:attr:`heterogeneous_models`)."""
        return bool(cls.__dict__.get("heterogeneous_models", False))

    @classmethod
    def uses_model_options(cls) -> bool:
        """``config.model_options`` reach this algorithm's models (:attr:`honours_model_options`)."""
        return bool(cls.__dict__.get("honours_model_options", False)) and cls.make_model is Algorithm.make_model

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> dict[str, Any]:
        """``options`` merged over :attr:`default_options`, after checking names, types and choices.

        Raises :class:`~fglcore.config.ConfigError` naming the offending key
        and what is accepted.
        """
        if not isinstance(options, Mapping):
            raise ConfigError(f"algorithm_options: expected a mapping, got {type(options).__name__}")
        if options and not cls.default_options:
            raise ConfigError(
                f"unknown {cls.name} option {next(iter(options))!r}; algorithm {cls.name!r} accepts no options"
            )
        check_unknown_keys(options, list(cls.default_options), f"{cls.name} option")
        merged = dict(cls.default_options)
        for key, value in options.items():
            default = cls.default_options[key]
            expected = Any if default is None else type(default)
            merged[key] = check_finite(f"algorithm_options.{key}", check_type(f"algorithm_options.{key}", value, expected))
            if key in cls.option_choices:
                check_choice(f"algorithm_options.{key}", merged[key], list(cls.option_choices[key]))
            if key in cls.option_bounds and merged[key] is not None:
                integer = isinstance(default, int) and not isinstance(default, bool)
                check_number(f"algorithm_options.{key}", merged[key], cls.option_bounds[key], integer=integer)
        return merged

    def __init__(self, config: ExperimentConfig, federation: Any, device: torch.device | str):
        task = getattr(federation, "task", None)
        if task not in self.tasks:
            raise ConfigError(
                f"algorithm: {self.name!r} supports {', '.join(self.tasks)} tasks, but the federation is a {task} task"
                f"{self.task_hints.get(task, '')}"
            )
        self.check_config(config)
        self.config = config
        self.federation = federation
        self.device = torch.device(device)
        self.task: str = task
        self.options = self.check_options(config.algorithm_options)
        self.server: Server | None = None
        self.clients: list[Client] = []

    # -- the federation ---------------------------------------------------------------------------

    @property
    def clients_data(self) -> list[Any]:
        """Per client: a node-task ``Data`` subgraph or a graph-task ``GraphClient``."""
        return list(self.federation.clients)

    @property
    def num_classes(self) -> int:
        """Classes scored by macro-F1 (the largest class count of a multi-dataset federation)."""
        classes = getattr(self.federation, "num_classes", None)
        if classes is None:
            classes = max(c.num_classes for c in self.federation.clients)
        return int(classes)

    def client_dims(self) -> list[tuple[int, int]]:
        """``(in_channels, out_channels)`` of each client's model."""
        if self.task == "node":
            dims = (int(self.federation.num_features), int(self.federation.num_classes))
            return [dims] * len(self.clients_data)
        return [(int(c.num_features), int(c.num_classes)) for c in self.clients_data]

    # -- models and trainers ----------------------------------------------------------------------

    def make_model(self, in_channels: int, out_channels: int) -> nn.Module:
        """``config.model`` with the config's width, depth, dropout and ``model_options``; node models cache
        their graph."""
        c = self.config
        return build_model(
            c.model,
            in_channels,
            c.hidden,
            out_channels,
            num_layers=c.num_layers,
            dropout=c.dropout,
            task=self.task,
            cached=self.task == "node",
            **c.model_options,
        )

    def make_client_model(self, cid: int, in_channels: int, out_channels: int, *, cached: bool | None = None
                          ) -> nn.Module:
        """Client ``cid``'s own entry of a model list (``config.model = "hetero"``), freshly initialised from the
        global torch RNG, with ``config.dropout``; node entries cache their graph unless ``cached=False``.
        For one model (not a list), :meth:`make_model` (``cached`` is then not consulted)."""
        if not MODELS.get(self.config.model).is_list:
            return self.make_model(in_channels, out_channels)
        return build_client_model(self.config.model, cid, in_channels, out_channels, dropout=self.config.dropout,
                                  task=self.task, cached=self.task == "node" if cached is None else cached)

    def architecture_groups(self) -> list[tuple[str, list[int]]]:
        """The clients grouped by architecture: ``(label, client ids)`` per distinct architecture, in the order of
        each group's first client. Under a model list, clients whose entries are equal (model, width, depth and
        options; :class:`~fglcore.models.model_lists.ClientModel`) share a group, e.g. ``hetero``'s clients 0
        and 5 (both ``sgc K=2``); with one model, one group of every client, labelled ``config.model``."""
        spec = MODELS.get(self.config.model)
        cids = range(len(self.clients_data))
        if not spec.is_list:
            return [(self.config.model, list(cids))]
        groups: list[tuple[Any, list[int]]] = []
        for cid in cids:
            entry = spec.clients[cid]
            found = next((members for key, members in groups if key == entry), None)
            if found is None:
                groups.append((entry, [cid]))
            else:
                found.append(cid)
        return [(entry.describe(), members) for entry, members in groups]

    def init_models(self) -> tuple[nn.Module | None, list[nn.Module]]:
        """The global model seeded by ``config.seed`` and one client model per client started from it.

        Clients whose widths equal the first client's get an exact copy of
        the global model. Others (a multi-dataset graph federation) get their
        own input and output layers and copy every parameter and buffer whose
        name and shape agree with the global model (e.g. the GIN convolutions).
        Under a model list (:attr:`heterogeneous_models`) there is no global
        model (``None``): after seeding, client 0's model is drawn first, then
        client 1's, and so on (:meth:`make_client_model`).
        """
        set_seed(self.config.seed)
        dims = self.client_dims()
        if MODELS.get(self.config.model).is_list:
            return None, [self.make_client_model(cid, *d) for cid, d in enumerate(dims)]
        reference = self.make_model(*dims[0])
        reference_state = reference.state_dict()
        models = []
        for in_channels, out_channels in dims:
            if (in_channels, out_channels) == dims[0]:
                models.append(copy.deepcopy(reference))
                continue
            model = self.make_model(in_channels, out_channels)
            own = model.state_dict()
            model.load_state_dict(
                {k: v for k, v in reference_state.items() if k in own and own[k].shape == v.shape}, strict=False
            )
            models.append(model)
        return reference, models

    def make_trainer(self, model: nn.Module, cid: int) -> Trainer:
        """Bind ``model`` to client ``cid``'s data on :attr:`device`."""
        client = self.clients_data[cid]
        if self.task == "node":
            return NodeTrainer(model, client, self.config, self.device)
        return GraphTrainer(
            model,
            graph_split(client, "train"),
            {split: graph_split(client, split) for split in ("val", "test")},
            self.config,
            self.device,
            seed=client_seed(self.config.seed, cid),
        )

    # -- running ------------------------------------------------------------------------------------

    def memory_estimate(self) -> int | None:
        """Bytes this run will hold beyond its loaded data, for runs that may need a large share of a machine
        (``None``: a usual run, small next to the data). A sweep's processes compute one run at a time whose
        estimate exceeds :data:`fglcore.claims.HEAVY_SHARE` of the memory (:meth:`fglcore.claims.RunClaims.memory_gate`)."""
        return None

    def build(self, channel: Channel) -> tuple[Server | None, list[Client]]:
        """Create the server (``None`` when there is none) and the clients; messages sent while
        building (if any) go through ``channel``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement build")

    def run(self, channel: Channel | None = None, *, callbacks: Sequence = (),
            checkpoint: RoundCheckpoint | None = None) -> RunResult:
        """Build, then run ``config.rounds`` rounds with the config's evaluation and selection rules.

        The trained participants stay available as :attr:`server` and
        :attr:`clients` (e.g. to inspect the final models). With a
        ``checkpoint`` that holds a saved round, the participants, the channel
        and the random states are loaded from it instead of built, and the run
        goes on from the next round (:mod:`fglcore.fl.checkpoint`).
        """
        saved = checkpoint.load() if checkpoint is not None else None
        if saved is None:
            channel = channel if channel is not None else Channel()
            server, clients = self.build(channel)
        else:
            server, clients, channel = saved["server"], saved["clients"], saved["channel"]
        self.server, self.clients = server, clients
        c = self.config
        secure = None
        if c.secure_aggregation and server is not None:
            secure = SecureAggregator([client.cid for client in clients], seed=c.seed)
        return run_rounds(
            server,
            clients,
            channel,
            **self.loop_arguments(),
            secure=secure,
            callbacks=callbacks,
            checkpoint=checkpoint,
            resume=None if saved is None else saved["loop"],
        )

    def round_loop_only(self) -> bool:
        """Whether :meth:`run` is :meth:`build` followed by :func:`~fglcore.fl.engine.run_rounds` and nothing
        else, so that another engine driving the same participants through the same loop (Flower,
        :mod:`fglcore.fl.flower`) runs this algorithm; an algorithm whose ``run`` adds steps of its own returns
        ``False`` (or overrides this where only some of its options do)."""
        return type(self).run is Algorithm.run

    def loop_arguments(self) -> dict[str, Any]:
        """The keyword arguments of :func:`~fglcore.fl.engine.run_rounds` that the config decides (rounds,
        evaluation, selection, patience, metric aggregation, progress); the same for every engine that drives
        this algorithm's participants (:meth:`run`, :mod:`fglcore.fl.flower`)."""
        c = self.config
        return {"rounds": c.rounds, "num_classes": self.num_classes, "evaluate_every": c.evaluate_every,
                "selection": c.selection, "selection_metric": c.selection_metric, "patience": c.patience,
                "metric_aggregation": c.metric_aggregation, "progress": c.progress, "description": self.name}


def graph_split(client: Any, split: str) -> list:
    """The graphs of a ``GraphClient`` in ``split`` (``train``, ``val`` or ``test``)."""
    return [client.graphs[int(i)] for i in getattr(client, f"{split}_idx")]


class TrainerClient(Client):
    """A client that trains its model ``epochs`` epochs a round and evaluates it; uploads nothing.

    Subclasses add communication by overriding :meth:`receive` and
    :meth:`upload`, and terms of the local objective with :meth:`extra_loss`.
    """

    def __init__(self, cid: int, trainer: Trainer, epochs: int):
        super().__init__(cid, trainer.num_train_samples)
        self.trainer = trainer
        self.epochs = epochs

    @property
    def model(self) -> nn.Module:
        return self.trainer.model

    def fit(self, round: int) -> Payload | None:
        self.trainer.train_epochs(self.epochs, extra_loss=self.extra_loss())
        return self.upload()

    def extra_loss(self) -> ExtraLoss | None:
        """A term added to every local step's loss (see :mod:`fglcore.algorithms.training`); none by default."""
        return None

    def upload(self) -> Payload | None:
        """What to send the server after training; ``None`` sends nothing."""
        return None

    def evaluate(self) -> dict[str, Prediction]:
        return self.trainer.predict()


ALGORITHMS: Registry[type[Algorithm]] = Registry("algorithm")


def register_algorithm(cls: type[Algorithm]) -> type[Algorithm]:
    """Class decorator: add ``cls`` to :data:`ALGORITHMS` under ``cls.name``."""
    ALGORITHMS.register(cls.name, cls)
    return cls
