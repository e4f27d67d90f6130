"""Models by name: ``build_model("gcn", in_channels, hidden, num_classes)``.

========================  ==============  ===========================================================
name                      tasks           follows
========================  ==============  ===========================================================
``gcn``                   node, graph     Kipf & Welling, ICLR 2017
``sgc``                   node            Wu et al., ICML 2019 (K steps + one linear layer)
``sage``                  node, graph     Hamilton et al., NeurIPS 2017 (GraphSAGE, mean aggregator)
``gat``                   node, graph     Veličković et al., ICLR 2018
``gin``                   node, graph     Xu et al., ICLR 2019 (the default graph backbone)
``mlp``                   node, graph     node-wise MLP, ignores the graph
``1gnn``                  node            Morris et al., AAAI 2019 (1-GNN = GraphConv, sum aggregation)
``decoupled_gcn``         node            MLP then K propagation steps (FedStruct; APPNP if alpha > 0)
``ssgc``                  node            Zhu & Koniusz, ICLR 2021 (SSGC features, O-pFGL's linear/BN head)
``appnp_mlp``             node            APPNP on the features, O-pFGL's linear/BN head (its ``MyAPPNP``)
``hetero``                node            a model list: O-pFGL's ten client models (Tables 3/11), as its code
``hetero_paper``          node            a model list: the same, client 0 SSGC as the paper lists it
========================  ==============  ===========================================================

A *model list* (``hetero``, :mod:`~fglcore.models.model_lists`) gives each
client its own architecture: :func:`build_client_model` builds client
``cid``'s entry, :meth:`ModelSpec.client_models` lists them, and
:func:`build_model` refuses the list's name.

Node models are called ``model(x, edge_index)``; graph models are a
:class:`~fglcore.models.graph_classifier.GraphClassifier` around the named
backbone, called ``model(x, edge_index, batch)``. Each model's options and
their defaults are the keyword arguments of its class (node task) or conv
builder (graph task, plus ``pool``); :meth:`ModelSpec.options` lists them,
:meth:`ModelSpec.check_options` checks names, types and ranges. An experiment
passes them as ``ExperimentConfig.model_options`` (e.g. ``{"K": 2}`` for the
decoupled GCN's propagation depth).

One model per file; GCN and GraphSAGE are PyG's ``GCN`` and ``GraphSAGE``
models, GAT, GIN and MLP are PyG ``BasicGNN`` models with the papers' layers
(:mod:`~fglcore.models.stacked`):

=========================  =================================================================
file                       holds
=========================  =================================================================
``gcn.py``                 :class:`GCN`, ``gcn_conv``
``sgc.py``                 :class:`SGC`
``sage.py``                :class:`GraphSAGE`, ``sage_conv``
``gat.py``                 :class:`GAT`, ``gat_conv``
``gin.py``                 :class:`GIN`, ``gin_mlp``, ``gin_conv``
``mlp.py``                 :class:`MLP`
``linear.py``              :class:`~fglcore.models.linear.NodeWiseLinear`, ``linear_conv``
``one_gnn.py``             :class:`~fglcore.models.one_gnn.OneGNN` (the local-bias paper's 1-GNN)
``propagation.py``         :class:`Propagation`
``decoupled_gcn.py``       :class:`DecoupledGCN`
``ssgc.py``                :class:`~fglcore.models.ssgc.SSGC`
``appnp_mlp.py``           :class:`~fglcore.models.appnp_mlp.APPNPMLP`
``graph_classifier.py``    :class:`GraphClassifier`
``stacked.py``             :class:`~fglcore.models.stacked.StackedGNN`, their ``BasicGNN`` base
``cached_graph.py``        :class:`~fglcore.models.cached_graph.CachedGraphGuard` (``cached=True``)
``fedstar.py``             FedStar's :class:`~fglcore.models.fedstar.FeatureStructureGNN`
``fedstar_node.py``        FedStar's node model :class:`~fglcore.models.fedstar_node.NodeFeatureStructureGNN`
``partly_cached_sgconv.py``  :class:`~fglcore.models.partly_cached_sgconv.PartlyCachedSGConv`
``fedspray.py``            FedSpray's :class:`~fglcore.models.fedspray.FeatureStructureEncoder`
``fedlit.py``              FedLit's :class:`~fglcore.models.fedlit.MultiChannelGNN`
``link_type_channel.py``   FedLit's :class:`~fglcore.models.link_type_channel.LinkTypeChannel`
``parameter_mixture.py``   APFL's :class:`~fglcore.models.parameter_mixture.ParameterMixture`
``fedstruct.py``           FedStruct's :class:`~fglcore.models.fedstruct.FedStructModel`
``structure_sage.py``      its App. H server-side sGNN :class:`~fglcore.models.structure_sage.StructureSAGE`
``masked_gcn.py``          FED-PUB's :class:`~fglcore.models.masked_gcn.MaskedGCN`
``masked_gcn_conv.py``     FED-PUB's :class:`~fglcore.models.masked_gcn_conv.MaskedGCNConv`
``masked_linear.py``       FED-PUB's :class:`~fglcore.models.masked_linear.MaskedLinear`
``neighgen.py``            FedSage+'s missing-neighbour generator :class:`~fglcore.models.neighgen.NeighGen`
``feature_generator.py``   its fGen :class:`~fglcore.models.feature_generator.FeatureGenerator`
``node_generator.py``      DENSE / Co-Boost's :class:`~fglcore.models.node_generator.NodeFeatureGenerator`
``fedlog.py``              FedLoG's :class:`~fglcore.models.fedlog.FedLoGNet`
``fedlog_branch.py``       FedLoG's :class:`~fglcore.models.fedlog_branch.BranchClassifier`
``fedlog_branch_layer.py``  FedLoG's :class:`~fglcore.models.fedlog_branch_layer.BranchLayer`
``fedlog_generator.py``    FedLoG's :class:`~fglcore.models.fedlog_generator.NeighborGenerator`
``pge.py``                 O-pFGL's pseudo-graph link predictor :class:`~fglcore.models.pge.PseudoGraphEdges`
``pge_direct.py``          its Table 23 alternative :class:`~fglcore.models.pge_direct.FreePseudoAdjacency`
``pge_inner.py``           its Table 23 alternative :class:`~fglcore.models.pge_inner.InnerProductEdges`
``distributed_gnn.py``     the local-bias paper's :class:`~fglcore.models.distributed_gnn.DistributedGNN`
=========================  =================================================================

``operators.py`` (CSR message passing), ``sparse_input.py`` (sparse first
layers), ``model_lists.py`` (the per-client model lists), ``dropout.py`` and
``utils.py`` hold no model.
"""
from __future__ import annotations

import inspect
import typing
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import torch
from torch import nn

from fglcore.checks import NON_NEGATIVE, POSITIVE, PROBABILITY, Bounds, check_choice, check_number
from fglcore.config import ConfigError, check_type, check_unknown_keys
from fglcore.models.appnp_mlp import APPNPMLP
from fglcore.models.decoupled_gcn import DecoupledGCN
from fglcore.models.gat import GAT, gat_conv
from fglcore.models.gcn import GCN, gcn_conv
from fglcore.models.gin import GIN, gin_conv
from fglcore.models.graph_classifier import POOLS, GraphClassifier
from fglcore.models.linear import linear_conv
from fglcore.models.one_gnn import OneGNN
from fglcore.models.mlp import MLP
from fglcore.models.model_lists import MODEL_LISTS, ClientModel
from fglcore.models.propagation import NORMALIZATIONS, Propagation
from fglcore.models.sage import GraphSAGE, sage_conv
from fglcore.models.sgc import SGC
from fglcore.models.ssgc import SSGC
from fglcore.registry import Registry

TASKS = ("node", "graph")
_SIZE_ARGUMENTS = ("in_channels", "hidden_channels", "out_channels", "num_layers")
_STANDARD_ARGUMENTS = {*_SIZE_ARGUMENTS, "dropout", "cached"}
_GRAPH_CONV_ARGUMENTS = {"hidden_channels", "dropout"}
_GRAPH_DEFAULTS = {"pool": "add"}


def _keyword_options(fn: Callable[..., Any], standard: set[str]) -> dict[str, inspect.Parameter]:
    return {n: p for n, p in inspect.signature(fn).parameters.items() if n not in standard and n != "self"}


@dataclass(frozen=True)
class ModelSpec:
    """A registered model: its node-task class and/or its graph-task conv layer.

    ``node_model`` is called with those of ``in_channels, hidden_channels,
    out_channels, num_layers, dropout, cached`` it accepts (``sgc`` takes no
    hidden width, depth or dropout) plus the model's options. ``graph_conv``
    builds one hidden -> hidden layer of a :class:`GraphClassifier`.
    ``option_bounds`` (numbers) and ``option_choices`` (strings) give the
    accepted values of options, checked by :meth:`check_options` before
    anything is built (e.g. the decoupled GCN's propagation depth ``K >= 0``).
    """

    name: str
    reference: str
    node_model: Callable[..., nn.Module] | None = None
    graph_conv: Callable[..., nn.Module] | None = None
    option_bounds: Mapping[str, Bounds] = field(default_factory=dict)
    option_choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    clients: tuple[ClientModel, ...] = ()
    """A model list (:mod:`~fglcore.models.model_lists`): one architecture per client, no model of its own."""

    @property
    def tasks(self) -> tuple[str, ...]:
        if self.clients:
            return ("node",)
        return tuple(t for t, fn in zip(TASKS, (self.node_model, self.graph_conv)) if fn is not None)

    @property
    def is_list(self) -> bool:
        """Whether this is a per-client model list (``config.model = "hetero"``)."""
        return bool(self.clients)

    def describe_clients(self) -> str:
        """The list's entries in client order, e.g. ``0: sgc K=2, 1: gcn 2x64, ...``."""
        return ", ".join(f"{cid}: {entry.describe()}" for cid, entry in enumerate(self.clients))

    def _factory(self, task: str) -> Callable[..., nn.Module]:
        if task not in TASKS:
            raise ConfigError(f"unknown task {task!r}; accepted: {', '.join(TASKS)}")
        if self.clients:
            raise ConfigError(
                f"model {self.name!r} is a list of {len(self.clients)} client models ({self.describe_clients()}), "
                f"not one model; build client cid's with build_client_model({self.name!r}, cid, ...)")
        factory = self.node_model if task == "node" else self.graph_conv
        if factory is None:
            raise ConfigError(
                f"model {self.name!r} does not support the {task} task (it supports: {', '.join(self.tasks)}); "
                f"models for {task} tasks: {', '.join(model_names(task))}"
            )
        return factory

    def options(self, task: str = "node") -> dict[str, Any]:
        """Accepted options for ``task`` and their defaults."""
        factory = self._factory(task)
        if task == "node":
            return {n: p.default for n, p in _keyword_options(factory, _STANDARD_ARGUMENTS).items()}
        return {n: p.default for n, p in _keyword_options(factory, _GRAPH_CONV_ARGUMENTS).items()} | _GRAPH_DEFAULTS

    def check_options(self, task: str, options: dict[str, Any], prefix: str | None = None) -> None:
        """Raise :class:`ConfigError` for an unknown option, a value of the wrong type or out of its range.

        Errors name the option as ``<prefix>.<key>`` (default prefix: the model's name; the configuration
        passes ``"model_options"``).
        """
        what = f"option of model {self.name!r} ({task} task)" if prefix is None else \
            f"{prefix} key of model {self.name!r} ({task} task)"
        prefix = self.name if prefix is None else prefix
        accepted = self.options(task)
        check_unknown_keys(options, list(accepted), what)
        factory = self._factory(task)
        hints = typing.get_type_hints(factory.__init__ if inspect.isclass(factory) else factory)
        for key, value in options.items():
            if key in hints:
                check_type(f"{prefix}.{key}", value, hints[key])
            if key in self.option_bounds and value is not None:
                integer = isinstance(accepted[key], int) and not isinstance(accepted[key], bool)
                check_number(f"{prefix}.{key}", value, self.option_bounds[key], integer=integer)
            if key in self.option_choices:
                check_choice(f"{prefix}.{key}", value, list(self.option_choices[key]))
        if task == "graph" and options.get("pool", "add") not in POOLS:
            raise ConfigError(f"{self.name}.pool: {options['pool']!r} is not accepted; accepted: {', '.join(POOLS)}")

    def build(
        self,
        in_channels: int,
        hidden_channels: int,
        out_channels: int,
        *,
        num_layers: int = 2,
        dropout: float = 0.5,
        task: str = "node",
        cached: bool = False,
        **options: Any,
    ) -> nn.Module:
        """See :func:`build_model`."""
        sizes = dict(zip(_SIZE_ARGUMENTS, (in_channels, hidden_channels, out_channels, num_layers)))
        for key, value in sizes.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{key}: must be an integer >= 1, got {value!r}")
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
            raise ConfigError(f"dropout: must be in [0, 1), got {dropout!r}")
        factory = self._factory(task)
        self.check_options(task, options)
        if task == "node":
            standard = {**sizes, "dropout": float(dropout), "cached": cached}
            accepted = inspect.signature(factory).parameters
            return factory(**{k: v for k, v in standard.items() if k in accepted}, **options)
        if cached:
            raise ConfigError("cached=True is for node models on one fixed graph; graph classifiers see new batches")
        pool = options.pop("pool", _GRAPH_DEFAULTS["pool"])
        convs = [factory(hidden_channels, float(dropout), **options) for _ in range(num_layers)]
        return GraphClassifier(in_channels, hidden_channels, out_channels, convs, float(dropout), pool)


MODELS: Registry[ModelSpec] = Registry("model")

for _spec in (
    ModelSpec("gcn", "Kipf & Welling, ICLR 2017", GCN, gcn_conv),
    ModelSpec("sgc", "Wu et al., ICML 2019", SGC, None, option_bounds={"K": POSITIVE}),
    ModelSpec("sage", "Hamilton et al., NeurIPS 2017", GraphSAGE, sage_conv),
    ModelSpec("gat", "Veličković et al., ICLR 2018", GAT, gat_conv),
    ModelSpec("gin", "Xu et al., ICLR 2019", GIN, gin_conv),
    ModelSpec("mlp", "multi-layer perceptron", MLP, linear_conv),
    ModelSpec("1gnn", "Morris et al., AAAI 2019 (1-GNN, sum aggregation)", OneGNN, None),
    ModelSpec(
        "decoupled_gcn",
        "Aliakbari et al., ICLR 2025 (FedStruct); Klicpera et al., ICLR 2019 (APPNP)",
        DecoupledGCN,
        None,
        option_bounds={"K": NON_NEGATIVE, "alpha": PROBABILITY},
        option_choices={"normalization": NORMALIZATIONS},
    ),
    ModelSpec("ssgc", "Zhu & Koniusz, ICLR 2021; head of Yan et al., arXiv 2411.11304 (code)", SSGC, None,
              option_bounds={"K": POSITIVE, "alpha": PROBABILITY}),
    ModelSpec("appnp_mlp", "Klicpera et al., ICLR 2019 (APPNP on the features); head of Yan et al., "
              "arXiv 2411.11304 (code's MyAPPNP)", APPNPMLP, None,
              option_bounds={"K": NON_NEGATIVE, "alpha": PROBABILITY}),
    *(ModelSpec(name, reference, clients=entries) for name, (entries, reference) in MODEL_LISTS.items()),
):
    MODELS.register(_spec.name, _spec)


def model_names(task: str | None = None) -> list[str]:
    """Registered model names, or those that support ``task`` (``"node"`` or ``"graph"``)."""
    if task is None:
        return MODELS.names()
    if task not in TASKS:
        raise ConfigError(f"unknown task {task!r}; accepted: {', '.join(TASKS)}")
    return [name for name in MODELS.names() if task in MODELS.get(name).tasks]


def build_client_model(
    name: str,
    cid: int,
    in_channels: int,
    out_channels: int,
    *,
    hidden_channels: int = 64,
    num_layers: int = 2,
    dropout: float = 0.5,
    task: str = "node",
    cached: bool = False,
    seed: int | None = None,
    **options: Any,
) -> nn.Module:
    """Client ``cid``'s freshly initialised model under ``name``.

    For a model list (``"hetero"``, :mod:`~fglcore.models.model_lists`): entry
    ``cid`` with its own width, depth and options (``hidden_channels``,
    ``num_layers`` and ``options`` must then be left at their defaults or are
    ignored: ``options`` must be empty); ``dropout``, ``task``, ``cached`` and
    ``seed`` as for :func:`build_model`. For any other name:
    :func:`build_model` with the given sizes (the same model for every client).
    """
    spec = MODELS.get(name)
    if not spec.is_list:
        return build_model(name, in_channels, hidden_channels, out_channels, num_layers=num_layers,
                           dropout=dropout, task=task, cached=cached, seed=seed, **options)
    if options:
        raise ConfigError(f"model_options: model list {name!r} takes no options (each client model has its own: "
                          f"{spec.describe_clients()}), got {options!r}")
    if isinstance(cid, bool) or not isinstance(cid, int) or not 0 <= cid < len(spec.clients):
        raise ConfigError(f"client id {cid!r} is not in model list {name!r}; accepted: 0 to {len(spec.clients) - 1}")
    entry = spec.clients[cid]
    return build_model(entry.model, in_channels, entry.hidden, out_channels, num_layers=entry.num_layers,
                       dropout=dropout, task=task, cached=cached, seed=seed, **dict(entry.options))


def build_model(
    name: str,
    in_channels: int,
    hidden_channels: int,
    out_channels: int,
    *,
    num_layers: int = 2,
    dropout: float = 0.5,
    task: str = "node",
    cached: bool = False,
    seed: int | None = None,
    **options: Any,
) -> nn.Module:
    """Build a freshly initialised model.

    Args:
        name: a registered model name (:func:`model_names`).
        in_channels, hidden_channels, out_channels: feature width, hidden
            width and number of classes.
        num_layers: layers of the node model, or convs of the graph model.
        dropout: dropout rate (see each model for where it acts).
        task: ``"node"`` -> ``model(x, edge_index)``; ``"graph"`` -> a
            :class:`GraphClassifier`, ``model(x, edge_index, batch)``.
        cached: node task only; bind the model to one fixed graph and cache
            what depends only on it (GCN, SGC, decoupled GCN; the other
            models have nothing to cache and ignore it).
        seed: if given, initialise from this seed without touching the global
            RNG; otherwise draw from the global torch RNG (so
            ``torch.manual_seed(s)`` before two builds gives identical models).
        **options: model options, e.g. ``heads=8`` (gat), ``K=2`` (sgc),
            ``aggr="mean"`` (sage), ``K=10, alpha=0.0`` (decoupled_gcn),
            ``pool="add"`` (graph task). Unknown options raise
            :class:`~fglcore.config.ConfigError` listing the accepted ones.
    """
    spec = MODELS.get(name)
    context = torch.random.fork_rng(devices=[]) if seed is not None else nullcontext()
    with context:
        if seed is not None:
            torch.manual_seed(seed)
        return spec.build(
            in_channels,
            hidden_channels,
            out_channels,
            num_layers=num_layers,
            dropout=dropout,
            task=task,
            cached=cached,
            **options,
        )


__all__ = [
    "MODELS",
    "TASKS",
    "APPNPMLP",
    "ClientModel",
    "SSGC",
    "build_client_model",
    "DecoupledGCN",
    "GAT",
    "GCN",
    "GIN",
    "GraphClassifier",
    "GraphSAGE",
    "MLP",
    "ModelSpec",
    "Propagation",
    "SGC",
    "build_model",
    "model_names",
]
