"""FED-PUB: personalised subgraph FL by functional-embedding similarity and personalised sparse masks.

Baek, Jeong, Jin, Yoon and Hwang, "Personalized Subgraph Federated
Learning", ICML 2023 (arXiv 2206.10206); official code
``github.com/JinheonBaek/FED-PUB`` (``models/fedpub/{client,server}.py``),
ported unchanged to OpenFGL (``flcore/fedpub``) and to FedStruct's code
(``src/FedPub``). Equations are named by what they compute (their numbers
were not checked against the paper's text here).

**Model** (Sec. "Personalized sparse masks"):
:class:`~fglcore.models.masked_gcn.MaskedGCN`, a GCN whose every weight
matrix is multiplied by a learnable mask, :math:`\\theta_i \\odot \\mu_i`
(``config.hidden``, ``config.num_layers`` GCN layers plus a masked linear
classifier, ``config.dropout``; ``config.model`` must be ``"gcn"``). Masks
start at 1 (``mask_init``) and never leave the client.

**Functional embeddings and similarity** (Sec. "Personalized weighted
averaging"): the server draws one random graph once, from its seed
(``config.seed``): ``n_proxy`` disjoint Erdős–Rényi blocks of
``proxy_nodes`` nodes with edge probability ``proxy_p`` (the code's
``networkx.random_partition_graph([100] * n_proxy, p_in=0.1, p_out=0,
seed)``) and standard-normal node features. After training, client
:math:`i` runs its model (eval mode: masks pruned, no dropout) on it and
uploads the mean of the last GCN layer's outputs over all its nodes,
:math:`h_i` (the code's ``is_proxy=True`` forward), with its weights. The
server computes :math:`S(i,j) = h_i^\\top h_j / (\\lVert h_i\\rVert\\lVert h_j\\rVert)`
and

.. math::
    \\alpha_{ij} = \\frac{\\exp(\\tau S(i,j))}{\\sum_k \\exp(\\tau S(i,k))}, \\qquad
    \\bar\\theta_i = \\sum_j \\alpha_{ij}\\,\\theta_j,

and sends client :math:`i` its personalised :math:`\\bar\\theta_i` (``tau``
= the code's ``norm_scale``, default 10 as its parser and OpenFGL; its Cora
script uses 3). The code also averages a global model weighted by client
sizes, which a client only ever receives before round 1 (when every model
is the initial one), so it is not kept here.

**Local training.** Client :math:`i` loads :math:`\\bar\\theta_i` into its
weights (its masks stay its own: the code's ``skip_mask``), then trains
``config.local_epochs`` full-batch epochs with ``config.optimizer``,
``config.lr``, ``config.weight_decay`` (Adam state kept across rounds, as
the code) on

.. math::
    \\mathcal L_{CE}(\\theta_i \\odot \\mu_i) + \\lambda_1 \\sum \\lVert\\mu_i\\rVert_1
    + \\lambda_2 \\sum \\lVert\\theta_i - \\bar\\theta_i\\rVert_2

(``l1`` = :math:`\\lambda_1`, ``loc_l2`` = :math:`\\lambda_2`, both 1e-3 as
the code; the sums run over the weight tensors, the L2 norm of each tensor
is not squared, as the code; no proximal term in round 1, as the code).
``penalties`` chooses how those terms act:

* ``"objective"`` (default): they are part of the objective and
  differentiated, as the paper describes;
* ``"detached"``: as the official code, OpenFGL's and FedStruct's ports in
  effect: they add both terms to the loss with tensors taken from
  ``model.state_dict()``, which are *detached*, so the terms never reach a
  gradient and training is plain cross-entropy (the masks move only by the
  cross-entropy and weight decay). This option leaves them out, which
  trains the same numbers.

**Uploads.** Each client uploads its weights :math:`\\theta_i` (dense, not
multiplied by the mask: the code sends its ``state_dict``) and
:math:`h_i`; ``upload_masks=True`` also sends the masks, as the code's
``state_dict`` does (its server averages them, its clients never load
them). The server needs every client's upload (similarities), so secure
aggregation is not supported (O-pFGL, Sec. 1.2).

**Opening download** (``initial_download``): ``True`` (the code): before
round 1 the server sends every client the initial weights and the random
graph. ``False``: both come from the shared seed (the clients build the
same initial model and the same random graph), so a one-round run is one
upload and one download per client, as O-pFGL counts its one-shot
baselines (and as :mod:`fglcore.algorithms.fedavg_ft`).

**Which model a client is evaluated with** (``evaluate``): ``"local"`` (the
code, OpenFGL and FedStruct's port): the model after its local training in
the round, before the next personalised download is loaded; ``"personalized"``:
the downloaded :math:`\\bar\\theta_i` with the client's own masks. With one
round (O-pFGL's one-shot protocol), ``"local"`` is the model trained
``E`` epochs from the shared initialisation, which no aggregation has
touched yet (O-pFGL's FedPUB rows sit next to Standalone).

**Local epochs on validation** (``local_epochs_grid``): ``None`` trains
``config.local_epochs``; a list runs the whole protocol once per ``E`` and
reports the ``E`` with the best aggregated validation accuracy, O-pFGL's
"local epochs tuned from 1 to 100" for its one-round baselines
(:func:`fglcore.algorithms.fedavg_ft.search_local_epochs`; O-pFGL does not
fine-tune FedPUB afterwards, App. A.7).

Under ``metric_aggregation="client_weighted"`` every client's metrics are
weighted by its local node count: O-pFGL's code (A13) and FedStruct's
FedPub port (``coef = num_nodes / N``) both do so.
"""
from __future__ import annotations

from typing import Any, ClassVar, Mapping, Sequence

import networkx as nx
import torch
from torch import Tensor, nn
from torch_geometric.utils import from_networkx

from fglcore.algorithms.base import Algorithm, Trainer, TrainerClient, register_algorithm
from fglcore.algorithms.fedavg_ft import check_epochs_grid, search_local_epochs
from fglcore.algorithms.opfgl import weighted_by_nodes
from fglcore.algorithms.training import ExtraLoss, whole_graph_operators
from fglcore.checks import NON_NEGATIVE, POSITIVE, Bounds
from fglcore.fl.channel import Channel
from fglcore.fl.engine import Client, Payload, RunResult, Server
from fglcore.fl.parameters import load_payload, module_payload
from fglcore.metrics import Prediction
from fglcore.models.masked_gcn import MASK_INITS, MaskedGCN
from fglcore.models.operators import GCN, GraphOperators

EMBEDDING = "functional_embedding"
PROXY_X, PROXY_EDGES = "proxy_x", "proxy_edge_index"
PENALTIES = ("objective", "detached")
EVALUATE = ("local", "personalized")


def proxy_graph(num_graphs: int, nodes: int, p: float, num_features: int, seed: int) -> tuple[Tensor, Tensor]:
    """The server's random graph: ``num_graphs`` disjoint G(``nodes``, ``p``) blocks
    (``networkx.random_partition_graph``, seeded as the code) and N(0, 1) features of width ``num_features``
    (from a generator seeded by ``seed``). Returns ``(x, edge_index)``; every edge in both directions."""
    graph = nx.random_partition_graph([nodes] * num_graphs, p, 0.0, seed=seed)
    edge_index = from_networkx(graph).edge_index
    x = torch.randn(nodes * num_graphs, num_features, generator=torch.Generator().manual_seed(seed))
    return x, edge_index


def mixing_weights(embeddings: Tensor, tau: float) -> tuple[Tensor, Tensor]:
    """``(S, alpha)``: cosine similarities of the rows of ``embeddings`` and their row-wise
    ``exp(tau S) / sum exp(tau S)`` (the personalised averaging weights), in float64."""
    h = embeddings.detach().to(torch.float64)
    unit = h / h.norm(dim=1, keepdim=True).clamp_min(torch.finfo(torch.float64).tiny)
    similarity = unit @ unit.T
    return similarity, torch.softmax(tau * similarity, dim=1)


class FedPubServer(Server):
    """Holds the random graph; sends each client its personalised average of the uploaded weights."""

    def __init__(self, shared: Sequence[str], initial: Payload, proxy: tuple[Tensor, Tensor], tau: float,
                 initial_download: bool):
        self.shared = list(shared)
        self.initial = {name: initial[name].detach().clone() for name in self.shared}
        self.proxy = proxy
        self.tau = tau
        self.initial_download = initial_download
        self.personalized: dict[int, Payload] = {}
        self.similarity: Tensor | None = None
        self.alpha: Tensor | None = None
        self.order: list[int] = []

    def payload_for(self, client: Client, round: int) -> Payload | None:
        if round == 1:
            if not self.initial_download:
                return None
            return {**self.initial, PROXY_X: self.proxy[0], PROXY_EDGES: self.proxy[1]}
        return self.personalized[client.cid]

    def aggregate(self, updates: Mapping[int, Payload], weights: Mapping[int, float], round: int) -> None:
        """:math:`\\bar\\theta_i = \\sum_j \\alpha_{ij}\\theta_j` for every client (``weights`` are not used)."""
        self.order = sorted(updates)
        embeddings = torch.stack([updates[c][EMBEDDING].reshape(-1) for c in self.order])
        self.similarity, self.alpha = mixing_weights(embeddings, self.tau)
        self.personalized = {c: {} for c in self.order}
        for name in self.shared:  # every client's average at once: alpha @ (stacked weights), in float64
            stacked = torch.stack([updates[c][name].detach().to(torch.float64) for c in self.order])
            mixed = torch.tensordot(self.alpha.to(stacked.device), stacked, dims=1)
            mixed = mixed.to(updates[self.order[0]][name].dtype)
            for i, c in enumerate(self.order):
                self.personalized[c][name] = mixed[i]


class FedPubClient(TrainerClient):
    """Loads its personalised weights (not its masks), trains with the mask and proximal terms, uploads its
    weights and its functional embedding."""

    def __init__(self, cid: int, trainer: Trainer, epochs: int, shared: Sequence[str], options: Mapping[str, Any],
                 num_nodes: int, proxy: tuple[Tensor, Tensor] | None):
        super().__init__(cid, trainer, epochs)
        self.shared = list(shared)
        self.l1, self.loc_l2 = float(options["l1"]), float(options["loc_l2"])
        self.penalties, self.evaluate_with = options["penalties"], options["evaluate"]
        self.upload_masks = bool(options["upload_masks"])
        self.num_nodes = num_nodes
        self.proxy = proxy
        self._proxy_graph: tuple[Tensor, GraphOperators] | None = None
        self.pending: Payload | None = None
        self.anchor: dict[str, Tensor] | None = None
        self.round = 0

    def receive(self, payload: Payload, round: int) -> None:
        payload = dict(payload)
        if PROXY_X in payload:
            self.proxy = (payload.pop(PROXY_X), payload.pop(PROXY_EDGES))
            self._proxy_graph = None
        self.pending = payload
        if self.evaluate_with == "personalized":
            self._load_pending()

    def _load_pending(self) -> None:
        if self.pending is None:
            return
        load_payload(self.model, self.pending)
        self.anchor = {name: value.detach().clone() for name, value in self.pending.items()}
        self.pending = None

    def fit(self, round: int) -> Payload:
        self.round = round
        self._load_pending()
        return super().fit(round)

    def extra_loss(self) -> ExtraLoss | None:
        if self.penalties == "detached" or (self.l1 == 0 and self.loc_l2 == 0):
            return None
        model: MaskedGCN = self.model
        masks = model.masks()
        named = dict(model.named_parameters())
        anchored = [] if self.round <= 1 or self.anchor is None or self.loc_l2 == 0 else \
            [(named[name], value) for name, value in self.anchor.items()]

        def penalty(output: Tensor) -> Tensor:
            total = self.l1 * sum(m.abs().sum() for m in masks)
            for parameter, anchor in anchored:
                total = total + self.loc_l2 * torch.linalg.vector_norm(parameter - anchor)
            return total

        return penalty

    @torch.no_grad()
    def functional_embedding(self) -> Tensor:
        """Mean over the random graph's nodes of the last GCN layer's output, in eval mode."""
        if self.proxy is None:
            raise RuntimeError(f"client {self.cid} has no random graph: it was neither downloaded nor built")
        model: MaskedGCN = self.model
        model.eval()
        if self._proxy_graph is None:  # moved to the device and its GCN operator built once
            device = next(model.parameters()).device
            x, edge_index = (t.to(device) for t in self.proxy)
            self._proxy_graph = (x, whole_graph_operators(edge_index, x.size(0), frozenset({GCN}), x.dtype))
        return model.embed(*self._proxy_graph).mean(dim=0)

    def upload(self) -> Payload:
        names = set(self.shared)
        payload = module_payload(self.model, include=lambda n: n in names or (self.upload_masks and n.endswith("mask")))
        payload[EMBEDDING] = self.functional_embedding()
        return payload

    def evaluate(self) -> dict[str, Prediction]:
        return weighted_by_nodes(self.trainer.predict(), self.num_nodes)


@register_algorithm
class FedPub(Algorithm):
    """FED-PUB (Baek et al., ICML 2023): functional-embedding personalised averaging and personalised sparse
    masks; options and readings in :mod:`fglcore.algorithms.fedpub`."""

    name = "fedpub"
    tasks = ("node",)
    models = ("gcn",)  # FED-PUB's masked GCN (fglcore.models.masked_gcn)
    citation = "Baek, Jeong, Jin, Yoon and Hwang, Personalized Subgraph Federated Learning, ICML 2023"
    secure_aggregation_unsupported = (
        "the server computes the similarity of every pair of clients' functional embeddings and a personalised "
        "average per client, so it needs each client's upload")
    default_options: ClassVar[dict[str, Any]] = {
        "tau": 10.0,
        "n_proxy": 5,
        "proxy_nodes": 100,
        "proxy_p": 0.1,
        "l1": 1e-3,
        "loc_l2": 1e-3,
        "mask_init": "ones",
        "penalties": "objective",
        "evaluate": "local",
        "initial_download": True,
        "upload_masks": False,
        "local_epochs_grid": None,
    }
    option_choices = {"mask_init": MASK_INITS, "penalties": PENALTIES, "evaluate": EVALUATE}
    _epochs: int | None = None  # set by run_one while the local-epochs grid is searched
    option_bounds = {"tau": NON_NEGATIVE, "n_proxy": POSITIVE, "proxy_nodes": POSITIVE,
                     "proxy_p": Bounds(above=0, maximum=1), "l1": NON_NEGATIVE, "loc_l2": NON_NEGATIVE}

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> dict[str, Any]:
        merged = super().check_options(options)
        if merged["local_epochs_grid"] is not None:
            merged["local_epochs_grid"] = check_epochs_grid(merged["local_epochs_grid"])
        return merged

    def make_model(self, in_channels: int, out_channels: int) -> nn.Module:
        c, o = self.config, self.options
        return MaskedGCN(in_channels, c.hidden, out_channels, num_layers=c.num_layers, dropout=c.dropout,
                         mask_init=o["mask_init"], prune_threshold=o["l1"])

    def proxy(self) -> tuple[Tensor, Tensor]:
        """The server's random graph (:func:`proxy_graph` seeded by ``config.seed``)."""
        o = self.options
        return proxy_graph(o["n_proxy"], o["proxy_nodes"], o["proxy_p"], int(self.federation.num_features),
                           self.config.seed)

    def build(self, channel: Channel) -> tuple[Server, list[Client]]:
        _, models = self.init_models()
        shared = [name for name, _ in models[0].named_parameters() if not name.endswith("mask")]
        proxy = self.proxy()
        o = self.options
        server = FedPubServer(shared, module_payload(models[0]), proxy, o["tau"], o["initial_download"])
        epochs = self._epochs or self.config.local_epochs
        clients = [
            FedPubClient(cid, self.make_trainer(model, cid), epochs, shared, o, int(self.clients_data[cid].num_nodes),
                         None if o["initial_download"] else proxy)
            for cid, model in enumerate(models)
        ]
        return server, clients

    def run_one(self, epochs: int) -> RunResult:
        """The whole protocol with ``epochs`` local epochs per round (``extras["local_epochs"]``)."""
        self._epochs = epochs
        try:
            result = super().run(Channel())
        finally:
            self._epochs = None
        result.extras["local_epochs"] = epochs
        return result

    def run(self, channel: Channel | None = None, *, callbacks: Sequence = (), checkpoint: Any = None) -> RunResult:
        """The protocol with ``config.local_epochs``, or, with ``local_epochs_grid``, the run of the grid's ``E``
        with the best validation accuracy (then ``callbacks`` and ``checkpoint`` are not used)."""
        grid = self.options["local_epochs_grid"]
        if grid is None:
            return super().run(channel, callbacks=callbacks, checkpoint=checkpoint)
        return search_local_epochs(self, self.run_one, grid, channel)
