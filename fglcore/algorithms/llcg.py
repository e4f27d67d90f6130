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
   edges dropped, as FedAvg; :mod:`fglcore.algorithms.fedavg`). The official
   code takes ``local_updates`` mini-batches of random local nodes; here a
   local epoch is one full-batch step on the client's subgraph (the whole
   local graph as the mini-batch, the usual setting for graphs this size);
2. **average**: the server's weighted mean of the uploads (FedAvg's, by
   training nodes);
3. **correct globally**: the server, which holds the whole graph (LLCG's
   setting), takes ``server_updates`` optimiser steps on subgraphs of the
   *global* graph -- each induced by ``server_batch_ratio`` :math:`\cdot N`
   nodes drawn uniformly without replacement, GCN normalised on the subgraph
   (the official ``SubGraphSampler``: ``saint_subgraph`` then ``gcn_norm``),
   loss the mean cross-entropy over the batch's training nodes -- with its
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
from fglcore.algorithms.training import client_seed, make_optimizer
from fglcore.checks import Bounds
from fglcore.config import ExperimentConfig
from fglcore.fl.engine import Payload
from fglcore.fl.parameters import load_payload, module_payload
from fglcore.models import build_model

SERVER_STREAM = 2**31 - 1  # the server's random stream (client ids are 0..K-1)


class LLCGServer(FedAvgServer):
    """FedAvg's server plus the global correction (module docstring, step 3)."""

    def __init__(self, parameters: dict[str, Tensor], model: torch.nn.Module, data: Any, config: ExperimentConfig,
                 updates: int, batch_ratio: float, device: torch.device):
        super().__init__(parameters)
        self.model = model.to(device)
        self.optimizer = make_optimizer(self.model.parameters(), config)
        self.device = device
        self.x, self.y = data.x.to(device), data.y.to(device)
        self.edge_index = data.edge_index.cpu()
        self.train_mask = data.train_mask.cpu().bool()
        self.num_nodes = int(data.num_nodes)
        self.updates = updates
        self.batch_size = max(1, round(batch_ratio * self.num_nodes))
        self.generator = torch.Generator().manual_seed(client_seed(config.seed, SERVER_STREAM))
        self.correction_losses: list[float] = []

    def batch(self) -> tuple[Tensor, Tensor]:
        """Nodes (ascending) drawn uniformly without replacement and the edges they induce (their positions)."""
        nodes = torch.sort(torch.randperm(self.num_nodes, generator=self.generator)[: self.batch_size]).values
        where = torch.full((self.num_nodes,), -1, dtype=torch.long)
        where[nodes] = torch.arange(nodes.numel())
        keep = (where[self.edge_index[0]] >= 0) & (where[self.edge_index[1]] >= 0)
        return nodes, where[self.edge_index[:, keep]]

    def correct(self) -> None:
        load_payload(self.model, self.parameters)
        for _ in range(self.updates):
            nodes, edges = self.batch()
            train = self.train_mask[nodes]
            if not train.any():
                continue
            self.model.train()
            self.optimizer.zero_grad(set_to_none=True)
            out = self.model(self.x[nodes.to(self.device)], edges.to(self.device))
            loss = F.cross_entropy(out[train.to(self.device)], self.y[nodes[train].to(self.device)])
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
    default_options: dict[str, Any] = {"server_updates": 1, "server_batch_ratio": 0.254, "share": "all",
                                       "reset_optimizer": False}
    option_choices = {"share": SHARE_MODES}
    option_bounds = {"server_updates": Bounds(minimum=0), "server_batch_ratio": Bounds(above=0, maximum=1)}
    citation = ("Ramezani, Cong, Mahdavi, Kandemir and Sivasubramaniam, Learn Locally, Correct Globally: A "
                "Distributed Algorithm for Training Graph Neural Networks, ICLR 2022")

    def make_server(self, parameters: dict[str, Tensor]) -> LLCGServer:
        c = self.config
        data, _ = whole_graph(self.federation.data, self.clients_data)
        with torch.random.fork_rng():  # its initial weights are replaced by the global ones: leave the RNG as is
            model = build_model(c.model, int(self.federation.num_features), c.hidden,
                                int(self.federation.num_classes), num_layers=c.num_layers, dropout=c.dropout,
                                task="node", cached=False)
        return LLCGServer(parameters, model, data, c, self.options["server_updates"],
                          self.options["server_batch_ratio"], self.device)
