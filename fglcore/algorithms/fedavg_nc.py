r"""FedAvg+nc: FedAvg after a one-off collection of a share of the cross-client neighbours (local-bias paper, RQ1/RQ2).

Zhang et al., "Tackling the Local Bias in Federated Graph Learning" (arXiv
2110.12906), Sec. 4 (RQ1/RQ2 comparison): "we randomly select 20 %
cross-client neighbors for each client and add them to the local graph on
the client" -- the neighbour-collection family of FedGraphNN / FedGNN
(incomplete use of the cross-client edges, Sec. 1). Digest reading A13:
client :math:`k` takes the set of remote nodes adjacent to :math:`V_k`
(``external_id`` of the federation built with ``keep_cross_edges``), samples
``collect_ratio`` of them uniformly without replacement
(:math:`\mathrm{round}(0.2\,m_k)` of its :math:`m_k` external nodes, seeded
per client), and copies their features and their edges to :math:`V_k` into
its local graph: one hop, no edge between two copies, no label and no loss
on a copy (a placeholder label nobody reads). The alternative reading (20 %
of the cross-client *edges*) is not implemented.

**Before training (ledger round 0)**, through the channel: client :math:`k`
sends the server the ids it wants (``nc_request_ids``); the server asks each
owner for its requested nodes (``nc_request_ids``, server -> owner); the
owner uploads their features (``nc_feature_ids``, ``nc_features``); the
server forwards each client its copies (``nc_ids``, ``nc_features``). The
edges to the copies are the client's own cross edges (Eq. 1: both ends know
:math:`A_{kj}`), so no edge is sent. Labels never travel.

**Training**: FedAvg (:mod:`fglcore.algorithms.fedavg`; digest A10: one local
epoch per round, weights by training nodes), each client's
``config.model`` on its expanded local graph (GCN normalised with the local
graph's degrees). ``collect_ratio=0`` is plain FedAvg (the same numbers,
``tests/test_localbias_baselines.py``).
"""
from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch_geometric.data import Data

from fglcore.algorithms.base import Trainer, register_algorithm
from fglcore.algorithms.fedavg import SHARE_MODES, FedAvg
from fglcore.algorithms.fedgcn import _training_graph
from fglcore.algorithms.training import NodeTrainer, client_seed
from fglcore.checks import Bounds
from fglcore.fl.channel import Channel
from fglcore.fl.engine import SERVER, Client, Server

PRE_TRAINING = 0


def _name(k: int) -> str:
    return f"client{k}"


def chosen_neighbours(client: Data, ratio: float, seed: int, cid: int) -> Tensor:
    """The external nodes client ``cid`` collects: ``round(ratio * m)`` of its ``m``, uniformly, ascending ids."""
    external = client.external_id
    take = int(round(ratio * int(external.numel())))
    generator = torch.Generator().manual_seed(client_seed(seed, cid))
    picked = torch.randperm(int(external.numel()), generator=generator)[:take]
    return torch.sort(external[picked]).values


def collect_neighbours(clients: list[Data], ratio: float, seed: int, channel: Channel) -> list[Data]:
    """The exchange of the module docstring; each client's expanded local graph (own nodes first)."""
    size = max(int(c.global_id.max()) + 1 for c in clients if c.num_nodes)
    owner = torch.full((size,), -1, dtype=torch.long)
    for j, c in enumerate(clients):
        owner[c.global_id] = j
    wanted = []
    for k, client in enumerate(clients):
        ids = chosen_neighbours(client, ratio, seed, k)
        wanted.append(channel.send(_name(k), SERVER, {"nc_request_ids": ids}, PRE_TRAINING)["nc_request_ids"])
    features: dict[int, Tensor] = {}
    everything = torch.unique(torch.cat(wanted)) if wanted else torch.empty(0, dtype=torch.long)
    for j, client in enumerate(clients):
        ids = everything[owner[everything] == j]
        if not ids.numel():
            continue
        asked = channel.send(SERVER, _name(j), {"nc_request_ids": ids}, PRE_TRAINING)["nc_request_ids"]
        local = torch.searchsorted(client.global_id, asked)
        got = channel.send(_name(j), SERVER, {"nc_feature_ids": asked, "nc_features": client.x[local]}, PRE_TRAINING)
        features.update(zip(got["nc_feature_ids"].tolist(), got["nc_features"]))
    graphs = []
    for k, (client, ids) in enumerate(zip(clients, wanted)):
        x = (torch.stack([features[int(i)] for i in ids.tolist()]) if ids.numel()
             else client.x.new_zeros(0, client.x.size(1)))
        got = channel.send(SERVER, _name(k), {"nc_ids": ids, "nc_features": x}, PRE_TRAINING)
        copies = got["nc_ids"]
        src, dst = client.cross_edge_index
        keep = torch.isin(dst, copies)
        edges = torch.cat([torch.stack([src[keep], dst[keep]]), torch.stack([dst[keep], src[keep]])], dim=1)
        graphs.append(_training_graph(client, torch.cat([client.global_id, copies]),
                                      torch.cat([client.x, got["nc_features"].to(client.x.dtype)]), 1, edges))
    return graphs


@register_algorithm
class FedAvgNC(FedAvg):
    """FedAvg with neighbour collection (local-bias paper, Sec. 4, digest A13); see
    :mod:`fglcore.algorithms.fedavg_nc`."""

    name = "fedavg_nc"
    tasks = ("node",)
    needs_cross_edges = True
    default_options: dict[str, Any] = {"collect_ratio": 0.2, "share": "auto", "reset_optimizer": False}
    option_choices = {"share": SHARE_MODES}
    option_bounds = {"collect_ratio": Bounds(minimum=0, maximum=1)}
    citation = ("Zhang et al., Tackling the Local Bias in Federated Graph Learning, arXiv 2110.12906 (FedAvg with "
                "20 % neighbour collection); McMahan et al., AISTATS 2017")

    def build(self, channel: Channel) -> tuple[Server, list[Client]]:
        self.training_graphs = collect_neighbours(self.clients_data, self.options["collect_ratio"], self.config.seed,
                                                  channel)
        return super().build(channel)

    def make_trainer(self, model: torch.nn.Module, cid: int) -> Trainer:
        data = self.training_graphs[cid]
        return NodeTrainer(model, data, self.config, self.device, minority=data.minority)
