"""FedLoG: subgraph federated learning for local generalisation, as O-pFGL's one-shot baseline.

Kim, Lee, Park, Cho and Park, "Subgraph Federated Learning for Local
Generalization", ICLR 2025 (FedLoG), Sec. 4; official code
``sung-won-kim/FedLoG`` (``model/client.py``, ``model/server.py``,
``embedder/*.py``, ``utils.py``; defaults from ``argument.py``). O-pFGL (Yan et
al., arXiv 2411.11304) runs it with one communication round (Tables 1, 5, 6,
8, 15-17); its repository has no FedLoG code, so how the one round is read is
ours, as below.

**Client model** (:class:`~fglcore.models.fedlog.FedLoGNet`): a GraphSAGE
embedder (hidden :math:`2D`, out :math:`D` = ``config.hidden``), a linear
classifier (pre-training only), and per class ``num_proto`` (20) learnable
*synthetic nodes* for the head branch and as many for the tail branch
(:math:`C\\cdot k\\times F` each, Xavier-uniform initialised). A class prototype
is the mean embedding of its synthetic nodes; a node is classified by
:math:`\\log\\mathrm{softmax}(-\\Vert\\mathrm{branch}(h_v)-p_c\\Vert^2)` in the head
and the tail branch (:class:`~fglcore.models.fedlog_branch.BranchClassifier`),
mixed by the degree gate :math:`\\alpha_v=\\sigma(d_v-(\\tau+1))`, :math:`\\tau` =
``head_degree`` (3): high-degree (head) nodes trust the head branch.

**Before the upload** (the code's round 0):

1. pre-training of embedder + classifier with cross-entropy, mini-batches
   of ``batch_size`` (64) training nodes drawn without replacement, at most
   ``pretrain_epochs`` (100) epochs, stopping after ``pretrain_patience``
   (10) epochs without a better accuracy. The code watches the *test*
   accuracy; here the validation accuracy (no test leak). As in the code the
   training continues from the last weights, not the best.
2. ``local_epochs`` epochs of the FedLoG objective
   :math:`L_{metric}+\\lambda_{norm}(\\tfrac12\\Vert S_{head}\\Vert_F+\\tfrac12\\Vert S_{tail}\\Vert_F)`
   (NLL of the gated mixture of the branches' log-probabilities on the
   batch), the model with Adam (``lr`` 0.001, ``weight_decay`` 5e-4) and the
   synthetic nodes with their own Adam (``lr``).

**The upload** (one per client): the model's parameters (embedder,
classifier, head and tail branches), the synthetic head and tail nodes and
the client's class rates :math:`r_k^c` (share of its training nodes in class
c). The code also uploads the prototypes (means of the synthetic nodes, derived
from them), its scaler and a pre-trained neighbour generator (below); these
are not sent here.

**Server** (``Server.update``): the plain mean of the clients' parameters
(``average_parameters``, unweighted) and the *global synthetic data*: for
each class, each client's ``num_proto`` head synthetic nodes, shuffled within
the class, weighted by :math:`r_k^c/\\sum_k r_k^c` (:math:`1/K` for a class no
client has) and summed: :math:`C\\cdot k` nodes (:func:`global_synthetic_data`).
This needs each client's own vectors, so secure aggregation does not apply
(as O-pFGL notes).

**The download**: the averaged parameters and the global synthetic data
(features and labels).

**After the download** (the code's round 1): each client loads the averaged
parameters, keeps its own synthetic nodes, and trains ``local_epochs`` epochs
of :math:`L_{metric}+\\lambda_{norm}L_{norm}+\\lambda_{glob}L_{global}`:
:math:`L_{global}` is the NLL of :math:`\\tfrac12(\\log p_{head}+\\log p_{tail})`
on the global synthetic nodes, each first moved towards the mean of all
global synthetic nodes by a per-class scaler :math:`\\eta_c\\in[0,1]` (0 at
start; after every batch :math:`+0.001` where the class's accuracy on them
exceeds 0.8, :math:`-0.001` otherwise: harder classes get easier data) and
given one generated neighbour, the output of a class-specific neighbour
generator (:class:`~fglcore.models.fedlog_generator.NeighborGenerator`), as a
two-node graph. In the code these class generators are freshly initialised
and never trained or loaded (the server averages pre-trained generators into
class generators that no client reads), and they run in training mode
(dropout on): the same here, seeded. Then each client is evaluated with its
own model and synthetic nodes.

**Branch layers**: the code's layer averages its updates onto the synthetic
side of each (synthetic, query) edge, so the queries come out of each branch
exactly as its LayerNorm left them (``branch_aggregation="code"``, default);
``"query"`` averages them onto the queries as the paper describes.

**Protocol** (O-pFGL, App. A.2): one upload and one download per client;
``local_epochs`` is chosen on validation over ``local_epochs_grid`` (default
1, 2, 5, 10, 20, 50, 100), each candidate a whole run from the same seed
(:func:`fglcore.algorithms.fedavg_ft.search_local_epochs`);
``extras["epochs_search"]`` holds every candidate. Metrics are weighted by
local node counts (``metric_aggregation="client_weighted"``).
``config.lr``, ``config.local_epochs``, ``config.selection`` and
``config.patience`` are not used; ``config.rounds`` must be 1.
"""
from __future__ import annotations

import math
from typing import Any, ClassVar, Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.utils import degree, remove_self_loops, scatter

from fglcore.algorithms.base import Algorithm, register_algorithm
from fglcore.algorithms.fedavg_ft import EPOCHS_GRID, check_epochs_grid, search_local_epochs
from fglcore.algorithms.opfgl import weighted_by_nodes
from fglcore.algorithms.training import client_seed
from fglcore.checks import NON_NEGATIVE, POSITIVE, PROBABILITY, Bounds
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.fl.channel import Channel
from fglcore.fl.engine import SERVER, Client, RunResult, Server, evaluate_clients, per_client_metrics
from fglcore.fl.parameters import load_payload, module_payload
from fglcore.metrics import Prediction, accuracy, minority_mask
from fglcore.models.fedlog import FedLoGNet
from fglcore.models.fedlog_branch_layer import AGGREGATIONS
from fglcore.models.fedlog_generator import NeighborGenerator
from fglcore.runtime import set_seed


def neighbor_means(h: Tensor, edge_index: Tensor) -> Tensor:
    """Mean embedding of each node's graph neighbours (self-loops removed; 0 without any), the code's
    ``adj @ h / adj.sum(0)``. Shapes: :math:`(N, D), (2, E) \\to (N, D)`."""
    edge_index = remove_self_loops(edge_index)[0]
    return scatter(h[edge_index[1]], edge_index[0], 0, dim_size=h.size(0), reduce="mean")


def class_rates(y: Tensor, train_mask: Tensor, num_classes: int) -> Tensor:
    """:math:`r^c`: the share of the client's training nodes in class c (the code's ``cls_rate``). Shape :math:`(C,)`."""
    counts = torch.bincount(y[train_mask], minlength=num_classes)[:num_classes].float()
    return counts / counts.sum().clamp(min=1)


def global_synthetic_data(heads: Sequence[Tensor], rates: Sequence[Tensor], num_proto: int,
                          generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """The server's global synthetic nodes (``Server.update``): per class, each client's ``num_proto`` head
    synthetic nodes in a random order, weighted by :math:`r_k^c/\\sum_k r_k^c` (:math:`1/K` where no client
    has class c) and summed.

    Shapes: ``heads`` :math:`K\\times(Ck, F)`, ``rates`` :math:`K\\times(C,)` -> features :math:`(Ck, F)`,
    labels :math:`(Ck,)` (``k`` nodes of class 0, then class 1, ...).
    """
    num_classes = rates[0].numel()
    stacked = []
    for x in heads:
        x = x.view(num_classes, num_proto, -1)
        stacked.append(x[:, torch.randperm(num_proto, generator=generator).to(x.device)])
    stacked = torch.stack(stacked)  # (K, C, k, F)
    r = torch.stack(list(rates)).to(stacked.device)  # (K, C)
    w = torch.nan_to_num(r / r.sum(0, keepdim=True), nan=1.0 / len(heads))
    x = (stacked * w.view(len(heads), num_classes, 1, 1)).sum(0).reshape(num_classes * num_proto, -1)
    y = torch.arange(num_classes, device=x.device).repeat_interleave(num_proto)
    return x, y


class FedLoGClient(Client):
    """One FedLoG client: pre-training and local training before the upload, training with the global
    synthetic data after the download, evaluation with its own model and synthetic nodes."""

    def __init__(self, cid: int, data: Data, model: FedLoGNet, options: Mapping[str, Any], num_classes: int,
                 seed: int, device: torch.device):
        super().__init__(cid, int(data.num_nodes))
        self.options = dict(options)
        self.device = device
        self.model = model.to(device)
        self.num_classes = num_classes
        self.x = data.x.float().to(device)
        self.edge_index = data.edge_index.to(device)
        self.y = data.y.view(-1).to(device)
        self.train_idx = data.train_mask.nonzero().view(-1).to(device)
        self.masks = {s: getattr(data, f"{s}_mask").to(device) for s in ("val", "test")}
        self.minority = minority_mask(data.y.view(-1), data.y.view(-1)[data.train_mask]).to(device)
        self.gate = FedLoGNet.gate(degree(self.edge_index[0], data.num_nodes), options["head_degree"])
        self.rates = class_rates(self.y.cpu(), data.train_mask.cpu(), num_classes)
        k, f = options["num_proto"], self.x.size(1)
        self.syn_head = torch.nn.init.xavier_uniform_(torch.empty(num_classes * k, f)).to(device)
        self.syn_tail = torch.nn.init.xavier_uniform_(torch.empty(num_classes * k, f)).to(device)
        self.generators = [NeighborGenerator(f).to(device) for _ in range(num_classes)]
        self.scaler = torch.zeros(num_classes, device=device)
        self.random = torch.Generator().manual_seed(client_seed(seed, cid))
        self.global_x: Tensor | None = None
        self.global_y: Tensor | None = None
        self.report: dict[str, float] = {}

    # -- pieces of the objective

    def batches(self) -> list[Tensor]:
        """The code's mini-batches: ``max(n // B, 1)`` batches of ``B`` training nodes drawn without replacement,
        the last one taking what is left when fewer than ``B`` remain."""
        b, n = self.options["batch_size"], self.train_idx.numel()
        order = torch.randperm(n, generator=self.random)
        out, start = [], 0
        for _ in range(max(n // b, 1)):
            take = order[start:start + b] if n - start >= b else order[start:]
            out.append(self.train_idx[take.to(self.device)])
            start += take.numel()
        return out

    def local_log_probs(self, h: Tensor, nodes: Tensor, syn_head: Tensor, syn_tail: Tensor) -> tuple[Tensor, Tensor]:
        """Gated mixtures for ``nodes``: log of :math:`\\alpha p_{head}+(1-\\alpha)p_{tail}` and the code's
        training output :math:`\\alpha\\log p_{head}+(1-\\alpha)\\log p_{tail}`."""
        neighbor = neighbor_means(h, self.edge_index)[nodes]
        head, tail = self.model.branch_log_probs(h[nodes], neighbor, syn_head, syn_tail)
        a = self.gate[nodes]
        mixed_log = a * head + (1 - a) * tail
        prediction = torch.log(a * head.exp() + (1 - a) * tail.exp())
        return prediction, mixed_log

    def global_loss(self, syn_head: Tensor, syn_tail: Tensor) -> Tensor:
        """:math:`L_{global}` on the scaled global synthetic nodes with generated neighbours; updates the scaler."""
        o, x, y = self.options, self.global_x, self.global_y
        x = x + self.scaler[y].unsqueeze(1) * (x.mean(0, keepdim=True) - x)
        keep = max(o["num_proto"], 3)
        chosen = torch.cat([(y == c).nonzero().view(-1)[:keep] for c in range(self.num_classes)])
        x, y = x[chosen], y[chosen]
        with torch.no_grad():
            neighbours = torch.empty_like(x)
            for c in range(self.num_classes):
                members = y == c
                if members.any():
                    neighbours[members] = self.generators[c](x[members])
        m = x.size(0)
        pairs = torch.stack([torch.arange(m, device=x.device), torch.arange(m, 2 * m, device=x.device)])
        edges = torch.cat([pairs, pairs.flip(0)], 1)
        h = self.model.embed(torch.cat([x, neighbours]), edges)
        query, neighbor = h[:m], h[m:].detach()
        head, tail = self.model.branch_log_probs(query, neighbor, syn_head, syn_tail)
        out = 0.5 * head + 0.5 * tail
        with torch.no_grad():
            predicted = out.argmax(1)
            for c in range(self.num_classes):
                members = y == c
                good = bool(members.any()) and float((predicted[members] == c).float().mean()) > o["scaler_threshold"]
                self.scaler[c] += o["scaler_step"] if good else -o["scaler_step"]
            self.scaler.clamp_(0.0, 1.0)
        return F.nll_loss(out, y)

    def train_epochs(self, epochs: int, with_global: bool) -> float:
        """The code's ``Client.train``: ``epochs`` epochs of mini-batches with fresh Adam optimisers."""
        o, model = self.options, self.model
        syn_head = torch.nn.Parameter(self.syn_head.clone())
        syn_tail = torch.nn.Parameter(self.syn_tail.clone())
        optimizer = torch.optim.Adam(model.parameters(), lr=o["lr"], weight_decay=o["weight_decay"])
        optim_head = torch.optim.Adam([syn_head], lr=o["lr"])
        optim_tail = torch.optim.Adam([syn_tail], lr=o["lr"])
        model.train()
        loss = torch.zeros(())
        for _ in range(epochs):
            for nodes in self.batches():
                optimizer.zero_grad()
                optim_head.zero_grad()
                optim_tail.zero_grad()
                h = model.embed(self.x, self.edge_index)
                _, mixed = self.local_log_probs(h, nodes, syn_head, syn_tail)
                loss = o["metric_weight"] * F.nll_loss(mixed, self.y[nodes])
                loss = loss + o["norm_weight"] * (0.5 * syn_head.norm() + 0.5 * syn_tail.norm())
                if with_global:
                    loss = loss + o["global_weight"] * self.global_loss(syn_head, syn_tail)
                loss.backward()
                optimizer.step()
                optim_head.step()
                optim_tail.step()
        self.syn_head, self.syn_tail = syn_head.detach(), syn_tail.detach()
        return float(loss.detach())

    def pretrain(self) -> int:
        """The code's ``Client.pretrain`` (embedder + classifier, cross-entropy), early-stopped on validation."""
        o, model = self.options, self.model
        optimizer = torch.optim.Adam([*model.embedder.parameters(), *model.classifier.parameters()], lr=o["lr"],
                                     weight_decay=o["weight_decay"])
        best, waited, epoch = -math.inf, 0, 0
        for epoch in range(1, o["pretrain_epochs"] + 1):
            model.train()
            for nodes in self.batches():
                optimizer.zero_grad()
                h = model.embed(self.x, self.edge_index)
                F.cross_entropy(model.classifier(h[nodes]), self.y[nodes]).backward()
                optimizer.step()
            model.eval()
            with torch.no_grad():
                logits = model.classifier(model.embed(self.x, self.edge_index))[self.masks["val"]]
            value = accuracy(logits, self.y[self.masks["val"]])
            value = -math.inf if math.isnan(value) else value
            if value >= best:
                best, waited = value, 0
            else:
                waited += 1
                if waited == o["pretrain_patience"]:
                    break
        return epoch

    # -- the protocol

    def before_upload(self, epochs: int) -> dict[str, Tensor]:
        self.report["pretrain_epochs"] = float(self.pretrain())
        self.train_epochs(epochs, with_global=False)
        return {**module_payload(self.model), "synthetic_head": self.syn_head, "synthetic_tail": self.syn_tail,
                "class_rates": self.rates}

    def receive(self, payload: Mapping[str, Tensor], round: int) -> None:
        load_payload(self.model, {k: v.to(self.device) for k, v in payload.items() if not k.startswith("global_")})
        self.global_x = payload["global_synthetic_x"].to(self.device)
        self.global_y = payload["global_synthetic_y"].to(self.device)

    def fit(self, round: int) -> None:
        if self.global_x is None:
            raise RuntimeError(f"client {self.cid}: no global synthetic data received before training")
        self.train_epochs(self.epochs, with_global=True)
        self.report["scaler_mean"] = float(self.scaler.mean())

    @torch.no_grad()
    def logits(self) -> Tensor:
        self.model.eval()
        h = self.model.embed(self.x, self.edge_index)
        nodes = torch.arange(self.x.size(0), device=self.device)
        prediction, _ = self.local_log_probs(h, nodes, self.syn_head, self.syn_tail)
        return prediction

    def evaluate(self) -> dict[str, Prediction]:
        out = self.logits()
        predictions = {s: Prediction(out[m], self.y[m], self.minority[m]) for s, m in self.masks.items()}
        return weighted_by_nodes(predictions, self.num_samples)


class FedLoGServer(Server):
    """Averages the parameters and builds the global synthetic data from each client's upload."""

    def __init__(self, num_proto: int, seed: int):
        self.num_proto = num_proto
        self.generator = torch.Generator().manual_seed(seed)
        self.parameters: dict[str, Tensor] = {}
        self.global_x: Tensor | None = None
        self.global_y: Tensor | None = None

    def combine(self, uploads: Sequence[Mapping[str, Tensor]]) -> None:
        names = [n for n in uploads[0] if n not in ("synthetic_head", "synthetic_tail", "class_rates")]
        self.parameters = {n: torch.stack([u[n] for u in uploads]).mean(0) for n in names}
        self.global_x, self.global_y = global_synthetic_data([u["synthetic_head"] for u in uploads],
                                                             [u["class_rates"] for u in uploads], self.num_proto,
                                                             self.generator)

    def payload_for(self, client: Client, round: int) -> dict[str, Tensor]:
        return {**self.parameters, "global_synthetic_x": self.global_x, "global_synthetic_y": self.global_y}


@register_algorithm
class FedLoG(Algorithm):
    """FedLoG (Kim et al., ICLR 2025, Sec. 4) in O-pFGL's one-shot protocol; readings in
    :mod:`fglcore.algorithms.fedlog`."""

    name = "fedlog"
    tasks = ("node",)
    citation = ("Kim et al., Subgraph Federated Learning for Local Generalization, ICLR 2025; one-shot as in "
                "Yan et al., arXiv 2411.11304")
    secure_aggregation_unsupported = ("the server weights each client's synthetic nodes by that client's class "
                                      "rates, so it needs every client's own upload")
    default_options: ClassVar[dict[str, Any]] = {
        "local_epochs_grid": list(EPOCHS_GRID),
        "num_proto": 20,
        "lr": 1e-3,
        "weight_decay": 5e-4,
        "batch_size": 64,
        "pretrain_epochs": 100,
        "pretrain_patience": 10,
        "head_degree": 3,
        "metric_weight": 1.0,
        "norm_weight": 1.0,
        "global_weight": 1.0,
        "scaler_step": 1e-3,
        "scaler_threshold": 0.8,
        "branch_aggregation": "code",
    }
    option_choices = {"branch_aggregation": AGGREGATIONS}
    option_bounds = {
        **dict.fromkeys(("num_proto", "batch_size", "pretrain_patience"), POSITIVE),
        "pretrain_epochs": NON_NEGATIVE, "head_degree": NON_NEGATIVE, "lr": Bounds(above=0),
        **dict.fromkeys(("weight_decay", "metric_weight", "norm_weight", "global_weight", "scaler_step"),
                        NON_NEGATIVE),
        "scaler_threshold": PROBABILITY,
    }

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> dict[str, Any]:
        merged = super().check_options(options)
        merged["local_epochs_grid"] = check_epochs_grid(merged["local_epochs_grid"])
        return merged

    @classmethod
    def check_config(cls, config: ExperimentConfig) -> None:
        super().check_config(config)
        if config.rounds != 1:
            raise ConfigError(f"rounds: fedlog runs O-pFGL's one-shot protocol (one upload, one download per "
                              f"client); set rounds to 1, got {config.rounds}")

    def build(self, channel: Channel) -> tuple[FedLoGServer, list[FedLoGClient]]:
        """The server and the clients; every client's model starts from the same seeded initialisation."""
        set_seed(self.config.seed)
        c = self.config
        reference = FedLoGNet(int(self.federation.num_features), c.hidden, self.num_classes,
                              self.options["branch_aggregation"])
        clients = []
        for cid, data in enumerate(self.clients_data):
            model = FedLoGNet(int(self.federation.num_features), c.hidden, self.num_classes,
                              self.options["branch_aggregation"])
            model.load_state_dict(reference.state_dict())
            clients.append(FedLoGClient(cid, data, model, self.options, self.num_classes, c.seed, self.device))
        return FedLoGServer(self.options["num_proto"], c.seed), clients

    def run_one(self, epochs: int, channel: Channel) -> RunResult:
        """One upload, the server's combination, one download, training with the global data, evaluation."""
        server, clients = self.build(channel)
        self.server, self.clients = server, clients
        uploads = []
        for client in clients:
            client.epochs = epochs
            uploads.append(channel.send(client.name, SERVER, client.before_upload(epochs), 1))
        server.combine(uploads)
        for client in clients:
            client.receive(channel.send(SERVER, client.name, server.payload_for(client, 1), 1), 1)
            client.fit(1)
        metrics, outputs = evaluate_clients(clients, self.num_classes, self.config.metric_aggregation)
        per_client = per_client_metrics(clients, outputs, self.num_classes)
        for row, client in zip(per_client, clients):
            row.update(client.report)
        extras = {"local_epochs": epochs, "global_synthetic_x": server.global_x, "global_synthetic_y": server.global_y}
        return RunResult([{"round": 1, **metrics}], 1, metrics, per_client, channel.ledger, False, extras)

    def run(self, channel: Channel | None = None, *, callbacks: Sequence = (), checkpoint: Any = None) -> RunResult:
        """:meth:`run_one` for every ``E`` of ``local_epochs_grid``; the run with the best validation accuracy.

        ``channel`` (when given) records the chosen run only; ``callbacks`` and
        ``checkpoint`` are accepted for the common interface and not used.
        """
        return search_local_epochs(self, lambda epochs: self.run_one(epochs, Channel()),
                                   self.options["local_epochs_grid"], channel)
