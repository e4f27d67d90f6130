r"""GraphSAGE with neighbour sampling: the centralised mini-batch baseline of the local-bias paper's Table 2.

Hamilton, Ying and Leskovec, "Inductive Representation Learning on Large
Graphs", NeurIPS 2017, Alg. 2 (minibatch forward propagation with uniformly
sampled fixed-size neighbourhoods); row "GraphSAGE [8]" of Zhang et al.,
"Tackling the Local Bias in Federated Graph Learning" (arXiv 2110.12906,
Table 2). The local-bias paper gives no setting for it; the digest's reading
A21 takes the library defaults: mean aggregator, fan-outs [25, 10] for two
layers ([15, 10, 5] for three; :func:`default_fanouts`, the option
``fanouts`` left ``None``).

One model (``config.model`` = ``"sage"``: PyG's ``GraphSAGE``, mean
aggregator, root weight) on the *whole* graph, cross-client edges included,
as the ``central`` algorithm (:mod:`fglcore.algorithms.central`; the same
splits and per-client evaluation). An epoch shuffles the training nodes and
cuts them into mini-batches of ``config.batch_size`` seeds; for each, the
``fanouts`` neighbour sample
(:func:`~fglcore.algorithms.graph_sampling.sample_neighbours`: hop ``h``
keeps at most ``fanouts[h-1]`` uniformly chosen in-neighbours of every node
reached at the previous hop) gives the mini-batch graph, the loss is the mean
cross-entropy over the seeds, one optimiser step. Each round trains
``config.local_epochs`` epochs. Evaluation is full-batch on the whole graph
(every neighbour), PyG's usual inference for graphs that fit in memory.

Option ``trim`` (default ``True``): in training, layer :math:`l` of
:math:`L` computes only the nodes within :math:`L - l` hops of the seeds, as
the paper's Alg. 2 (:math:`\mathcal B^{k}`, the nodes layer :math:`k` needs)
and PyG's ``trim_to_layer`` (:class:`~fglcore.models.stacked.StackedGNN`,
``num_sampled_nodes_per_hop``). The seeds' logits and the gradients are
those of the untrimmed mini-batch up to float rounding
(``tests/test_localbias_baselines.py``); the dropout masks are drawn for the
kept rows only, so with dropout the random stream differs from ``trim=False``
(the whole sampled subgraph through every layer, as before).

Option ``sampler``: ``"auto"`` (PyG's ``NeighborLoader`` when ``pyg-lib``
or ``torch-sparse`` is installed, else ``"fglcore"``), ``"fglcore"`` (the
sampler of :mod:`fglcore.algorithms.graph_sampling`, built on
``torch_geometric.utils``, deterministic for a seed) or ``"pyg"``. In this
project's environment PyG's loader cannot run (no ``pyg-lib`` for torch
2.13), so ``"auto"`` is ``"fglcore"`` and the PyG branch is untested here.
"""
from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.data import Data

from fglcore.algorithms.base import register_algorithm
from fglcore.algorithms.central import Central
from fglcore.algorithms.graph_sampling import csr, pyg_sampling_available, sample_neighbours
from fglcore.algorithms.training import MiniBatchNodeTrainer, NodeTrainer, client_seed
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.models import build_model
from fglcore.models.operators import SUM, GraphOperators, required_operators, target_ordered_operators
from fglcore.runtime import set_seed

SAMPLERS = ("auto", "fglcore", "pyg")


def default_fanouts(num_layers: int) -> list[int]:
    """The digest's A21 fan-outs: [25, 10] for two layers, [15, 10, 5] for three (library defaults); one
    layer keeps 25, and deeper models (Reddit's four layers) continue with 5 per extra hop (our extension)."""
    if num_layers <= 2:
        return [25, 10][:num_layers]
    return [15, 10] + [5] * (num_layers - 2)


class NeighbourSamplingTrainer(MiniBatchNodeTrainer):
    """:class:`~fglcore.algorithms.training.MiniBatchNodeTrainer` on neighbour-sampled mini-batches (module
    docstring)."""

    def __init__(self, model: torch.nn.Module, data: Data, config: ExperimentConfig, device: torch.device, *,
                 minority: Tensor, fanouts: list[int], sampler: str, trim: bool = True):
        super().__init__(model, data, config, device, minority=minority)
        self.fanouts = list(fanouts)
        self.trim = trim
        self.batch_size = config.batch_size
        self.generator = torch.Generator().manual_seed(client_seed(config.seed, 0))
        self.num_nodes = int(data.num_nodes)
        self.ptr, self.neighbours = csr(data.edge_index.cpu(), self.num_nodes, "target")
        self.use_pyg = sampler == "pyg" or (sampler == "auto" and pyg_sampling_available())
        self.data = data
        # The full-batch trainer hands the model sparse operators (``fast``): each mini-batch gets its own, the
        # same numbers as its edge_index (fglcore.models.operators.apply_conv), built without sorting: the
        # sample lists its edges by target.
        self.operator_kinds = required_operators(self.model) if isinstance(self.graph, GraphOperators) else frozenset()
        if self.operator_kinds - {SUM}:
            raise ValueError(f"NeighbourSamplingTrainer: the model needs operators {sorted(self.operator_kinds)}; "
                             f"accepted: {SUM!r} (GraphSAGE)")

    def batches(self):
        """``(x, edge_index, seeds, trim)`` of each mini-batch of one epoch (seeds: global ids, first rows of x;
        ``trim``: the model's per-hop node and edge counts, empty when trimming is off)."""
        if self.use_pyg:  # pragma: no cover - needs pyg-lib or torch-sparse
            from torch_geometric.loader import NeighborLoader

            loader = NeighborLoader(self.data, num_neighbors=self.fanouts, batch_size=self.batch_size,
                                    input_nodes=self.train_idx.cpu(), shuffle=True, generator=self.generator)
            for batch in loader:
                trim = dict(num_sampled_nodes_per_hop=batch.num_sampled_nodes,
                            num_sampled_edges_per_hop=batch.num_sampled_edges) if self.trim else {}
                yield batch.x.to(self.device), batch.edge_index.to(self.device), batch.n_id[:batch.batch_size], trim
            return
        order = self.train_idx.cpu()[torch.randperm(self.num_train_samples, generator=self.generator)]
        for seeds in order.split(self.batch_size):
            sample = sample_neighbours(self.ptr, self.neighbours, seeds, self.fanouts, self.generator)
            ids = sample.n_id.to(self.device)
            edge_index = sample.edge_index.to(self.device)
            if self.operator_kinds:  # {SUM}: the model is GraphSAGE with the mean aggregator
                edge_index = target_ordered_operators(edge_index, ids.numel(), self.x.dtype)
            trim = dict(num_sampled_nodes_per_hop=sample.num_sampled_nodes,
                        num_sampled_edges_per_hop=sample.num_sampled_edges) if self.trim else {}
            yield self.x[ids], edge_index, seeds, trim

    def batch_loss(self, batch: tuple[Tensor, Tensor, Tensor, dict]) -> Tensor:
        """Cross-entropy on the batch's seed nodes (the first rows of its output)."""
        x, edge_index, seeds, trim = batch
        return F.cross_entropy(self.model(x, edge_index, **trim)[: seeds.numel()], self.y[seeds.to(self.device)])


@register_algorithm
class GraphSAGESampled(Central):
    """GraphSAGE with neighbour sampling (Hamilton et al., NeurIPS 2017, Alg. 2), centralised; see
    :mod:`fglcore.algorithms.graphsage`."""

    name = "graphsage"
    tasks = ("node",)
    models = ("sage",)
    default_options: dict[str, Any] = {"fanouts": None, "sampler": "auto", "trim": True}
    option_choices = {"sampler": SAMPLERS}
    citation = "Hamilton, Ying and Leskovec, Inductive Representation Learning on Large Graphs, NeurIPS 2017"

    @classmethod
    def check_config(cls, config: ExperimentConfig) -> None:
        super().check_config(config)
        options = cls.check_options(config.algorithm_options)
        fanouts = options["fanouts"]  # None: default_fanouts(num_layers)
        if fanouts is not None and (not fanouts or not all(
                isinstance(f, int) and not isinstance(f, bool) and (f >= 1 or f == -1) for f in fanouts)):
            raise ConfigError(f"algorithm_options.fanouts: {fanouts!r} is not accepted; accepted: a non-empty list "
                              "of integers >= 1 (or -1: every neighbour), one per layer, or null (the defaults)")
        if fanouts is not None and len(fanouts) != config.num_layers:
            raise ConfigError(f"algorithm_options.fanouts: {fanouts!r} has {len(fanouts)} hops but num_layers is "
                              f"{config.num_layers}; accepted: one fan-out per layer")
        if options["sampler"] == "pyg" and not pyg_sampling_available():
            raise ConfigError("algorithm_options.sampler: 'pyg' needs pyg-lib or torch-sparse, which are not "
                              "installed; accepted here: auto, fglcore")

    def central_trainer(self, data: Data, minority: Tensor) -> NodeTrainer:
        c = self.config
        set_seed(c.seed)
        model = build_model(c.model, int(self.federation.num_features), c.hidden, int(self.federation.num_classes),
                            num_layers=c.num_layers, dropout=c.dropout, task="node", cached=False)
        fanouts = self.options["fanouts"] or default_fanouts(c.num_layers)
        return NeighbourSamplingTrainer(model, data, c, self.device, minority=minority, fanouts=fanouts,
                                        sampler=self.options["sampler"], trim=self.options["trim"])
