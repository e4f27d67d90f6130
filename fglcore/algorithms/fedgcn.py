r"""FedGCN: clients receive their neighbourhood's features, aggregated by the server, before FedAvg. **Not private.**

Yao, Jin, Wang, Joe-Wong and Soltanolkotabi, "FedGCN: Convergence-Communication
Tradeoffs in Federated Training of Graph Convolutional Networks", NeurIPS 2023
(official code ``yh-yao/FedGCN``), as a baseline of FedStruct (Aliakbari et al.,
ICLR 2025, Table 2 "FedGCN-2hop (†)" and Table 6 "FedGCN-1hop / -2hop";
digest §4.5-4.6). FedStruct marks it **not private** (Table 2's dagger): the
server must know the global adjacency, and every client receives information
computed from the *features* of other clients' nodes -- exactly what FedStruct
never shares.

**Before training (ledger round 0)**, through the channel, with
:math:`\tilde A = A + I` and :math:`\hat A = \tilde D^{-1/2}\tilde A\tilde
D^{-1/2}` (GCN's normalisation, Kipf & Welling, Eq. 2; global degrees):

* ``exchange="sums"`` (default; the FedGCN paper, Sec. 3.2, Eq. 3: "the
  server aggregates :math:`\sum_{j} A_{ij} x_j` and sends it to the clients"):
  every client :math:`k` uploads, for its own nodes and its external
  neighbours :math:`u`, the partial sums :math:`\sum_{j \in \mathcal V_k}
  \tilde A_{uj} x_j / \sqrt{\tilde d_j}` and the partial counts
  :math:`\sum_{j\in\mathcal V_k}\tilde A_{uj}` (``fedgcn_partial_sums``,
  ``fedgcn_partial_counts``, ``fedgcn_node_ids``); the server adds them up,
  which gives every node's row :math:`(\hat A X)_u \sqrt{\tilde d_u}` and its
  degree, and sends client :math:`k` the rows :math:`(\hat A X)_u` of the
  nodes it needs (``fedgcn_aggregated``, ``fedgcn_aggregated_ids``):
  ``hops=1``, its own nodes (information from one hop); ``hops=2``, its own
  nodes and its external neighbours (information from two hops). The client
  then trains on its subgraph (``hops=1``) or on its subgraph plus its
  external neighbours and its cross edges (``hops=2``), with the communicated
  rows :math:`(\hat A X)_u` as node inputs: the first aggregation of a GCN
  has been done by the server over the *global* graph, the model's layers
  (``config.model``) run on top of it;
* ``exchange="features"`` (the official code's simulation, which FedStruct's
  port ``src/FedGCN`` follows, digest §4.5: "each client's subgraph is
  extended with its k-hop neighbourhood including external node features"):
  the server, which knows the global graph, finds the nodes within ``hops``
  hops of each client (``torch_geometric.utils.k_hop_subgraph``); their
  owners upload those nodes' features (``fedgcn_features``) and the server
  forwards them with the edges the client cannot know (between two nodes it
  does not hold; ``fedgcn_external_features``, ``fedgcn_external_ids``,
  ``fedgcn_external_edges``). The client trains ``config.model`` on that
  induced subgraph with the raw features. With a 2-layer model and
  ``hops=2`` the client's nodes see exactly what a central model sees.

External nodes are only inputs: no label ever crosses (a client's loss and
scores use its own training, validation and test nodes; external nodes get a
placeholder label that no loss or score reads).

**Training**: FedAvg (:mod:`fglcore.algorithms.fedavg`, McMahan et al. 2017,
Alg. 1): ``config.local_epochs`` local Adam steps, then the mean of the
weights weighted by training nodes (FedStruct's tables: one local step per
round, digest item 24; the FedGCN paper: 3 local SGD steps). FedStruct's
tables train GraphSAGE (``config.model = "sage"``); the FedGCN paper a GCN.
Every option and behaviour of FedAvg applies (``share``, ``norm_layers``,
``reset_optimizer``, ``weighting``), and ``config.model_options`` reach the model: FedStruct's
tables give FedGCN's GraphSAGE the input LayerNorm of their other GraphSAGE
baselines, kept out of the averaging (:mod:`fglcore.papers.fedstruct.tables`).

Registered as ``fedgcn_1hop`` and ``fedgcn_2hop`` (the ids of FedStruct's
tables), one class each with the number of hops fixed.
"""
from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.utils import k_hop_subgraph

from fglcore.algorithms.base import Trainer, register_algorithm
from fglcore.algorithms.fedavg import FedAvg
from fglcore.algorithms.fedstruct import own_rows
from fglcore.algorithms.training import NodeTrainer
from fglcore.fl.channel import Channel
from fglcore.fl.engine import SERVER, Client, Server
from fglcore.metrics import minority_mask

PRE_TRAINING = 0  # ledger round of the feature exchange that precedes training
EXCHANGES = ("sums", "features")


def _client_name(k: int) -> str:
    return f"client{k}"


def exchange_sums(clients: list[Data], num_nodes: int, hops: int, channel: Channel) -> list[Data]:
    r"""``exchange="sums"``: partial neighbour sums up, the server's aggregated rows :math:`(\hat A X)_u` down.

    Returns each client's training graph: its own nodes first (local ids as
    in ``client``), then (``hops=2``) its external neighbours in ascending
    global id, with the aggregated rows as ``x``.
    """
    num_features = int(clients[0].x.size(1)) if clients else 0
    total_sums = torch.zeros(num_nodes, num_features, dtype=torch.float64)  # the server's running totals
    total_counts = torch.zeros(num_nodes, dtype=torch.float64)
    needed: list[np.ndarray] = []
    for k, client in enumerate(clients):
        rows = own_rows(client, num_nodes)  # [n_k, n]: row i = neighbours (and self) of own node i
        degree = np.asarray(rows.sum(axis=1)).ravel()  # tilde d_j of own nodes (global degree + 1)
        # the client's columns of tilde A: for every node u touching V_k, sum_j tilde A_uj x_j / sqrt(d_j)
        block = rows.T.tocsr()  # [n, n_k]
        touched = np.unique(block.nonzero()[0])
        part = block[touched] @ sp.diags(1.0 / np.sqrt(degree)) @ client.x.double().cpu().numpy()
        counts = np.asarray(block[touched].sum(axis=1)).ravel()
        got = channel.send(_client_name(k), SERVER, {"fedgcn_node_ids": torch.from_numpy(touched.astype(np.int64)),
                                                     "fedgcn_partial_sums": torch.from_numpy(part).float(),
                                                     "fedgcn_partial_counts": torch.from_numpy(counts).float()},
                           PRE_TRAINING)
        total_sums.index_add_(0, got["fedgcn_node_ids"], got["fedgcn_partial_sums"].double())
        total_counts.index_add_(0, got["fedgcn_node_ids"], got["fedgcn_partial_counts"].double())
        own = client.global_id.cpu().numpy()
        external = client.external_id.cpu().numpy() if hops >= 2 else np.empty(0, dtype=np.int64)
        needed.append(np.concatenate([own, external]).astype(np.int64))
    out = []
    for k, client in enumerate(clients):
        ids = torch.from_numpy(needed[k])
        aggregated = (total_sums[ids] / total_counts[ids].sqrt().unsqueeze(1)).float()
        got = channel.send(SERVER, _client_name(k), {"fedgcn_aggregated_ids": ids, "fedgcn_aggregated": aggregated},
                           PRE_TRAINING)
        out.append(_training_graph(client, got["fedgcn_aggregated_ids"], got["fedgcn_aggregated"], hops))
    return out


def _training_graph(client: Data, ids: Tensor, x: Tensor, hops: int, extra_edges: Tensor | None = None) -> Data:
    """The client's own nodes (first, as in ``client``) and its received external nodes, with ``x`` as inputs;
    edges: its own (intra and, from two hops on, cross edges both ways) plus ``extra_edges`` (global ids)."""
    n_own = int(client.num_nodes)
    if not torch.equal(ids[:n_own], client.global_id):
        raise ValueError("the training graph lists the client's own nodes first, in its order")
    known = [ids]
    for extra in (client.cross_edge_index, extra_edges):
        if extra is not None:
            known.append(extra.reshape(-1))
    position = torch.full((int(torch.cat(known).max()) + 1,), -1, dtype=torch.long)
    position[ids] = torch.arange(ids.numel())
    edges = [client.edge_index]
    if hops >= 2 and client.cross_edge_index.numel():
        src = torch.searchsorted(client.global_id, client.cross_edge_index[0])
        dst = position[client.cross_edge_index[1]]
        edges += [torch.stack([src, dst]), torch.stack([dst, src])]
    if extra_edges is not None and extra_edges.numel():
        edges.append(position[extra_edges])
    num = ids.numel()
    pad = num - n_own
    data = Data(x=x.float(), edge_index=torch.cat(edges, dim=1), num_nodes=num,
                y=torch.cat([client.y, torch.zeros(pad, dtype=client.y.dtype)]),  # placeholder labels: never read
                global_id=ids)
    for split in ("train", "val", "test"):
        data[f"{split}_mask"] = torch.cat([getattr(client, f"{split}_mask"), torch.zeros(pad, dtype=torch.bool)])
    data.minority = torch.cat([minority_mask(client.y, client.y[client.train_mask]), torch.zeros(pad, dtype=torch.bool)])
    return data


def exchange_features(data: Data, clients: list[Data], hops: int, channel: Channel) -> list[Data]:
    """``exchange="features"``: the official code's L-hop extended subgraph with the external nodes' features."""
    assignment = torch.full((int(data.num_nodes),), -1, dtype=torch.long)
    for k, client in enumerate(clients):
        assignment[client.global_id] = k
    plans = []
    for k, client in enumerate(clients):
        subset, edge_index, _, _ = k_hop_subgraph(client.global_id, hops, data.edge_index,
                                                  num_nodes=int(data.num_nodes))
        external = subset[assignment[subset] != k]
        # edges of the induced subgraph with neither end held by the client: only the server knows them
        held = torch.zeros(int(data.num_nodes), dtype=torch.bool)
        held[client.global_id] = True
        global_edges = edge_index  # global ids (relabel_nodes=False)
        unknown = global_edges[:, ~(held[global_edges[0]] | held[global_edges[1]])]
        plans.append((external, unknown))
    # owners upload the features the server forwards
    wanted = torch.unique(torch.cat([external for external, _ in plans])) if plans else torch.empty(0, dtype=torch.long)
    features: dict[int, Tensor] = {}
    for j, client in enumerate(clients):
        ids = wanted[assignment[wanted] == j]
        if ids.numel():
            local = torch.searchsorted(client.global_id, ids)
            got = channel.send(_client_name(j), SERVER, {"fedgcn_feature_ids": ids, "fedgcn_features": client.x[local]},
                               PRE_TRAINING)
            features.update(zip(got["fedgcn_feature_ids"].tolist(), got["fedgcn_features"]))
    out = []
    for k, (client, (external, unknown)) in enumerate(zip(clients, plans)):
        payload = {"fedgcn_external_ids": external,
                   "fedgcn_external_features": (torch.stack([features[int(u)] for u in external.tolist()])
                                                if external.numel() else client.x.new_zeros(0, client.x.size(1))),
                   "fedgcn_external_edges": unknown}
        got = channel.send(SERVER, _client_name(k), payload, PRE_TRAINING)
        ids = torch.cat([client.global_id, got["fedgcn_external_ids"]])
        x = torch.cat([client.x, got["fedgcn_external_features"].to(client.x.dtype)])
        out.append(_training_graph(client, ids, x, 2, got["fedgcn_external_edges"]))  # cross edges: all in reach
    return out


class FedGCN(FedAvg):
    """FedGCN (Yao et al., NeurIPS 2023) = a pre-training exchange of aggregated neighbour features, then FedAvg;
    not private. See :mod:`fglcore.algorithms.fedgcn`."""

    hops: ClassVar[int]
    tasks = ("node",)
    needs_cross_edges = True
    default_options: dict[str, Any] = {**FedAvg.default_options, "exchange": "sums"}
    option_choices = {**FedAvg.option_choices, "exchange": EXCHANGES}
    late_options = ("norm_layers", "weighting")  # FedAvg's, added after runs were stored
    citation = ("Yao et al., FedGCN: Convergence-Communication Tradeoffs in Federated Training of Graph "
                "Convolutional Networks, NeurIPS 2023 (not private: clients receive aggregated neighbour features)")

    def build(self, channel: Channel) -> tuple[Server, list[Client]]:
        clients, n = self.clients_data, int(self.federation.data.num_nodes)
        if self.options["exchange"] == "sums":
            self.training_graphs = exchange_sums(clients, n, self.hops, channel)
        else:
            self.training_graphs = exchange_features(self.federation.data, clients, self.hops, channel)
        return super().build(channel)

    def make_trainer(self, model: torch.nn.Module, cid: int) -> Trainer:
        """The client's model on its training graph (own nodes, plus the external nodes it received)."""
        data = self.training_graphs[cid]
        return NodeTrainer(model, data, self.config, self.device, minority=data.minority)


@register_algorithm
class FedGCN1Hop(FedGCN):
    """FedGCN with one-hop communication (FedStruct Table 6 "FedGCN-1hop"); not private."""

    name = "fedgcn_1hop"
    honours_model_options = True  # declared by each registered class (Algorithm.uses_model_options)
    hops = 1


@register_algorithm
class FedGCN2Hop(FedGCN):
    """FedGCN with two-hop communication (FedStruct Tables 2 and 6 "FedGCN-2hop"); not private."""

    name = "fedgcn_2hop"
    honours_model_options = True  # declared by each registered class (Algorithm.uses_model_options)
    hops = 2
