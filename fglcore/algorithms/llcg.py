r"""LLCG: Learn Locally, Correct Globally -- local training, averaging and a server-side global correction.

Ramezani, Cong, Mahdavi, Kandemir and Sivasubramaniam, "Learn Locally,
Correct Globally: A Distributed Algorithm for Training Graph Neural
Networks", ICLR 2022, Alg. 1 (official code ``MortezaRamezani/llcg``,
``dgnn/train/serial/distgnn_correction.py``); row "LLCG [20]" of Zhang et
al., "Tackling the Local Bias in Federated Graph Learning" (arXiv
2110.12906, Table 2, K = 8: "a server correction step reduces local bias
before averaging"). The local-bias paper gives no setting (digest A21: LLCG
is optional, library defaults).

Each round:

1. **learn locally**: every client loads the global model and trains
   ``config.local_epochs`` epochs on its local graph only (cross-client
   edges dropped, as FedAvg; :mod:`fglcore.algorithms.fedavg`). By default
   (``local_sampler="full"``) a local epoch is one full-batch step on the
   client's subgraph (the whole local graph as the mini-batch, the usual
   setting for graphs this size). The official code (``DistGNN.local_train``
   in ``dgnn/train/serial/distgnn.py``) instead takes ``local_updates``
   mini-batches a round from the client's own sampler, of the same kind as
   the server's (``sampler``: ``SubGraphSampler`` or ``NeighborSampler``):
   ``local_sampler="subgraph"`` / ``"neighbour"`` does that, each local
   epoch being ``local_updates`` steps on batches of
   ``local_batch_ratio`` :math:`\cdot n_k` local nodes (:class:`Batches`,
   the server's sampling on the client's graph; batches without a training
   node are drawn and skipped; ``local_epochs=1`` is the official round);
2. **average**: the server's weighted mean of the uploads (FedAvg's, by
   training nodes);
3. **correct globally**: the server, which holds the whole graph (LLCG's
   setting), takes ``server_updates`` optimiser steps on subgraphs of the
   *global* graph -- each induced by ``server_batch_ratio`` :math:`\cdot N`
   nodes drawn uniformly without replacement, GCN normalised on the subgraph
   (the official ``SubGraphSampler``: ``saint_subgraph`` then ``gcn_norm``),
   loss the mean cross-entropy over the batch's training nodes; with
   ``server_sampler="neighbour"`` (the official ``NeighborSampler`` option)
   the batch nodes are the seeds of a neighbour sample of the global graph
   with ``server_fanouts`` (:func:`~fglcore.algorithms.graph_sampling.sample_neighbours`)
   and the loss is over the seeds that are training nodes -- with its
   own optimiser (``config.optimizer``, ``config.lr``) kept across rounds,
   as the official ``self.optimizer``;

and the corrected model goes to the clients (what they evaluate). The
channel records the model exchange (FedAvg's messages); the server's graph
is its own and sends nothing.
"""
from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from fglcore.algorithms.base import register_algorithm
from fglcore.algorithms.central import whole_graph
from fglcore.algorithms.fedavg import SHARE_MODES, FedAvg, FedAvgServer
from fglcore.algorithms.graph_sampling import csr, sample_neighbours
from fglcore.algorithms.training import MiniBatchNodeTrainer, client_seed, make_optimizer
from fglcore.checks import Bounds
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.fl.engine import Payload
from fglcore.fl.parameters import load_payload, module_payload
from fglcore.models import build_model

SERVER_SAMPLERS = ("subgraph", "neighbour")
SERVER_STREAM = 2**31 - 1  # the server's random stream (client ids are 0..K-1)


class Batches:
    r"""LLCG's mini-batches of one graph (the official ``SubGraphSampler`` / ``NeighborSampler``), deterministic
    for ``generator``: each :meth:`draw` takes ``batch_ratio`` :math:`\cdot` ``num_nodes`` nodes uniformly
    without replacement (ascending); without ``fanouts`` (``"subgraph"``) the batch is the subgraph they induce,
    every node scored; with ``fanouts`` (``"neighbour"``) they are the seeds of a neighbour sample
    (:func:`~fglcore.algorithms.graph_sampling.sample_neighbours`), the seeds scored."""

    def __init__(self, edge_index: Tensor, num_nodes: int, batch_ratio: float, generator: torch.Generator,
                 fanouts: list[int] | None = None):
        self.edge_index = edge_index.cpu()
        self.num_nodes = int(num_nodes)
        self.batch_size = max(1, round(batch_ratio * self.num_nodes))
        self.generator = generator
        self.fanouts = fanouts
        self.ptr, self.neighbours = csr(self.edge_index, self.num_nodes, "target")

    def draw(self) -> tuple[Tensor, Tensor, int]:
        """One batch: its nodes, its edges (positions among those nodes) and how many leading nodes are scored."""
        nodes = torch.sort(torch.randperm(self.num_nodes, generator=self.generator)[: self.batch_size]).values
        if self.fanouts is not None:
            sample = sample_neighbours(self.ptr, self.neighbours, nodes, self.fanouts, self.generator)
            return sample.n_id, sample.edge_index, sample.batch_size
        where = torch.full((self.num_nodes,), -1, dtype=torch.long)
        where[nodes] = torch.arange(nodes.numel())
        keep = (where[self.edge_index[0]] >= 0) & (where[self.edge_index[1]] >= 0)
        return nodes, where[self.edge_index[:, keep]], int(nodes.numel())


class LocalBatchTrainer(MiniBatchNodeTrainer):
    """A client's trainer under ``local_sampler="subgraph"`` / ``"neighbour"``: each epoch is ``updates``
    optimiser steps on :class:`Batches` of the client's graph, loss the mean cross-entropy over the batch's
    scored training nodes (the official ``local_train``); evaluation stays full-batch."""

    def __init__(self, model: torch.nn.Module, data: Any, config: ExperimentConfig, device: torch.device,
                 batches: Batches, updates: int):
        super().__init__(model, data, config, device)
        self.sampler, self.updates = batches, updates
        self.train_mask = data.train_mask.cpu().bool()

    def batches(self):
        """``updates`` batches, those without a training node among their scored nodes drawn and skipped."""
        for _ in range(self.updates):
            nodes, edges, scored = self.sampler.draw()
            train = self.train_mask[nodes[:scored]]
            if train.any():
                yield nodes, edges, scored, train

    def batch_loss(self, batch: tuple[Tensor, Tensor, int, Tensor]) -> Tensor:
        nodes, edges, scored, train = batch
        out = self.model(self.x[nodes.to(self.device)], edges.to(self.device))[:scored]
        return F.cross_entropy(out[train.to(self.device)], self.y[nodes[:scored][train].to(self.device)])


class LLCGServer(FedAvgServer):
    """FedAvg's server plus the global correction (module docstring, step 3)."""

    def __init__(self, parameters: dict[str, Tensor], model: torch.nn.Module, data: Any, config: ExperimentConfig,
                 updates: int, batch_ratio: float, device: torch.device, fanouts: list[int] | None = None):
        super().__init__(parameters)
        self.model = model.to(device)
        self.optimizer = make_optimizer(self.model.parameters(), config)
        self.device = device
        self.x, self.y = data.x.to(device), data.y.to(device)
        self.train_mask = data.train_mask.cpu().bool()
        self.updates = updates
        self.sampler = Batches(data.edge_index, int(data.num_nodes), batch_ratio,
                               torch.Generator().manual_seed(client_seed(config.seed, SERVER_STREAM)), fanouts)
        self.correction_losses: list[float] = []

    def correct(self) -> None:
        load_payload(self.model, self.parameters)
        for _ in range(self.updates):
            nodes, edges, scored = self.sampler.draw()
            train = self.train_mask[nodes[:scored]]
            if not train.any():
                continue
            self.model.train()
            self.optimizer.zero_grad(set_to_none=True)
            out = self.model(self.x[nodes.to(self.device)], edges.to(self.device))[:scored]
            loss = F.cross_entropy(out[train.to(self.device)], self.y[nodes[:scored][train].to(self.device)])
            loss.backward()
            self.optimizer.step()
            self.correction_losses.append(float(loss.detach()))
        names = set(self.parameters)
        state = module_payload(self.model, include=names.__contains__)
        self.parameters = {k: v.detach().clone() for k, v in state.items()}

    def apply_mean(self, mean: Payload, round: int) -> None:
        super().apply_mean(mean, round)
        self.correct()


@register_algorithm
class LLCG(FedAvg):
    """LLCG (Ramezani et al., ICLR 2022): local training, averaging, server correction on the global graph; see
    :mod:`fglcore.algorithms.llcg`."""

    name = "llcg"
    tasks = ("node",)
    default_options: dict[str, Any] = {"server_updates": 1, "server_batch_ratio": 0.254,
                                       "server_sampler": "subgraph", "server_fanouts": [10, 10], "share": "all",
                                       "reset_optimizer": False, "local_sampler": "full", "local_updates": 1,
                                       "local_batch_ratio": 0.254, "local_fanouts": [10, 10]}
    option_choices = {"share": SHARE_MODES, "server_sampler": SERVER_SAMPLERS,
                      "local_sampler": ("full",) + SERVER_SAMPLERS}
    option_bounds = {"server_updates": Bounds(minimum=0), "server_batch_ratio": Bounds(above=0, maximum=1),
                     "local_updates": Bounds(minimum=1), "local_batch_ratio": Bounds(above=0, maximum=1)}
    citation = ("Ramezani, Cong, Mahdavi, Kandemir and Sivasubramaniam, Learn Locally, Correct Globally: A "
                "Distributed Algorithm for Training Graph Neural Networks, ICLR 2022")

    @classmethod
    def check_config(cls, config: ExperimentConfig) -> None:
        super().check_config(config)
        options = cls.check_options(config.algorithm_options)
        for side in ("server", "local"):
            fanouts = options[f"{side}_fanouts"]
            if options[f"{side}_sampler"] == "neighbour" and (
                    not isinstance(fanouts, list) or len(fanouts) != config.num_layers
                    or not all(isinstance(f, int) and not isinstance(f, bool) and (f >= 1 or f == -1)
                               for f in fanouts)):
                raise ConfigError(f"algorithm_options.{side}_fanouts: {fanouts!r} is not accepted with num_layers "
                                  f"{config.num_layers}; accepted: one integer >= 1 (or -1: every neighbour) per "
                                  "layer")

    def make_server(self, parameters: dict[str, Tensor]) -> LLCGServer:
        c = self.config
        data, _ = whole_graph(self.federation.data, self.clients_data)
        with torch.random.fork_rng():  # its initial weights are replaced by the global ones: leave the RNG as is
            model = build_model(c.model, int(self.federation.num_features), c.hidden,
                                int(self.federation.num_classes), num_layers=c.num_layers, dropout=c.dropout,
                                task="node", cached=False)
        o = self.options
        fanouts = o["server_fanouts"] if o["server_sampler"] == "neighbour" else None
        return LLCGServer(parameters, model, data, c, o["server_updates"], o["server_batch_ratio"], self.device,
                          fanouts)

    def make_model(self, in_channels: int, out_channels: int) -> torch.nn.Module:
        """FedAvg's model; under local mini-batches it sees other graphs than its client's, so it caches none."""
        if self.options["local_sampler"] == "full":
            return super().make_model(in_channels, out_channels)
        c = self.config
        return build_model(c.model, in_channels, c.hidden, out_channels, num_layers=c.num_layers, dropout=c.dropout,
                           task="node", cached=False, **c.model_options)

    def make_trainer(self, model: torch.nn.Module, cid: int):
        """FedAvg's full-batch trainer, or with ``local_sampler`` subgraph / neighbour a :class:`LocalBatchTrainer`
        drawing from the client's own stream (:func:`~fglcore.algorithms.training.client_seed`)."""
        o = self.options
        if o["local_sampler"] == "full":
            return super().make_trainer(model, cid)
        data = self.clients_data[cid]
        fanouts = o["local_fanouts"] if o["local_sampler"] == "neighbour" else None
        generator = torch.Generator().manual_seed(client_seed(self.config.seed, cid))
        batches = Batches(data.edge_index, int(data.num_nodes), o["local_batch_ratio"], generator, fanouts)
        return LocalBatchTrainer(model, data, self.config, self.device, batches, o["local_updates"])
