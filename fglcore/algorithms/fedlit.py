"""FedLit: federated node classification over graphs with latent link-type heterogeneity.

Xie, Xiong and Yang, "Federated Node Classification over Graphs with Latent
Link-type Heterogeneity", WWW 2023. The links of one seemingly homogeneous
graph carry ``K`` latent *link types* (``num_link_types``) whose mix differs
between clients. FedLit (i) detects the link types during training by an
EM-style clustering of edge representations, (ii) passes messages through
one GNN *channel* per link type, and (iii) federates both: the server
matches the clients' link-type prototypes (cluster centres), averages them
per global link type, and averages each channel with the channels of the
other clients that were matched to the same link type. It is FedSpray's
(Fu et al., KDD 2024) sixth Table-2 baseline.

The paper's own text is not among this project's sources (FedSpray's digest,
§5.4, describes it in one line). The method below is written out as
equations from the paper's description and the official code,
github.com/Oxfordblue7/FedLIT (``src/models/models.py`` ``multichannel_GCN``,
``src/models/client.py`` ``Client_NC``, ``src/models/server.py``
``Server``, ``src/trainers/FedLIT_trainer.py``, ``run_FedLIT_trainer.sh``),
whose details this module follows unless a difference is listed below.

**Model** (:class:`~fglcore.models.fedlit.MultiChannelGNN`; code ``multichannel_GCN``). A shared
projection :math:`h_v = W_0 x_v + b_0` (code ``feature1``, no activation);
per link type :math:`k` a channel of one linear layer (``feature2``) and
``config.num_layers`` message-passing layers of ``config.model`` run on the
edges of type :math:`k` only,
:math:`z^{(k)}_v = \\mathrm{GNN}_k(W_k h, E_k)_v` with ReLU and dropout after
every layer; the channels' outputs are summed over the link types whose
edges touch :math:`v`,
:math:`\\hat y_v = W_c \\sum_{k:\\, v \\in V(E_k)} z^{(k)}_v + b_c`. A node no
edge of type :math:`k` touches gets nothing from channel :math:`k` (the code
runs channel :math:`k` on ``dgl.edge_subgraph(g, clusters == k)``). The
code's channel layer is DGL's ``GraphConv`` (symmetric normalisation, no
self-loops); FedSpray ran every baseline with its GCN, SGC and GraphSAGE
backbones, so ``config.model`` picks the channel layer: ``gcn`` --
``GCNConv`` (DGL's ``GraphConv``: no self-loops unless ``self_loops``);
``sage`` -- ``SAGEConv`` (mean aggregator with root weight); ``sgc`` -- one
``SGConv`` with ``K = config.num_layers`` steps and, as SGC, no ReLU or
dropout.

**Link-type detection** (code ``Client_NC.assign_centroids``). An edge
:math:`(u, v)` is represented by :math:`e_{uv} = [h_{\\min(u,v)} \\Vert
h_{\\max(u,v)}]` (:func:`edge_representations`; ordering the endpoints
gives both directions of an undirected edge the same type), computed from
the current projection and detached. In the first local epoch a client
initialises its ``K`` prototypes by ``MiniBatchKMeans(K, batch_size=1024,
max_iter=1, random_state=config.seed)`` on its edges and uses its labels
(:func:`initial_link_types`; ``n_init=3``, scikit-learn's default when the
code was written, is pinned because the default has changed since). Every
later local epoch runs ``em_iterations`` EM steps (:func:`em_link_types`)
from the current prototypes :math:`c_1..c_K`:

* assignment: :math:`t_{uv} = \\arg\\max_k \\cos(e_{uv}, c_k)`
  (:func:`assign_link_types`);
* update: :math:`c_k = \\mathrm{mean}\\{e_{uv} : t_{uv} = k\\}`
  (:func:`update_prototypes`).

Then one full-batch step of cross-entropy on the training nodes is taken
through the channels with the types :math:`t` (the step is
:class:`~fglcore.algorithms.training.NodeTrainer`'s; :class:`FedLitTrainer`
only replaces its forward pass). Evaluation assigns every edge to its
nearest received prototype, with no EM step (code ``Client_NC.evaluate``).

**Server** (:class:`FedLitServer`; code ``Server.group_centroids``,
``Server.aggregate``). Clients upload their model, their ``K`` prototypes
and, per channel, the number of training nodes its edges touch (code
``cluster_train_size``). The global link-type prototypes start as the first
client's (whose matching is then the identity, as the code sets it). Each
client's prototypes are matched one-to-one to the global ones
greedily by cosine similarity (:func:`match_prototypes`: take the most
similar (local, global) pair, remove both, repeat ``K`` times); global
prototype :math:`g` becomes the unweighted mean of the client prototypes
matched to it. The projection and the classifier are averaged with the
clients' training-node counts (FedAvg); global channel :math:`g` is the
unweighted mean of the client channels matched to :math:`g` whose
training-node count is non-zero (it keeps its value if there is none). Each
client then receives the projection, the classifier, and in its local
channel :math:`j` the global channel and prototype its :math:`j` was
matched to.

Differences from the official code, all deliberate:

* Download: the code's ``download_from_server`` loops over *every*
  client's ``(client, local type) -> global type`` entries without checking
  the client id, so each client gets the mapping of the last client in the
  dictionary; here each client gets its own matching (the paper's intent).
* Matching: the code's similarity matrix has one row per *global*
  prototype but is unravelled as if rows were *local* types, which stores
  the inverse of the greedy matching; here the matching is stored as found.
* Empty clusters: ``torch.mean`` of an empty cluster makes the code's
  prototype ``NaN``; here a prototype without edges keeps its previous value.
* Hyper-parameters come from the shared config (the FedSpray protocol:
  Adam, ``config.lr``, ``config.local_epochs`` full-batch steps a round);
  the official run script uses lr 0.01, weight decay 5e-4, dropout 0.5,
  one local epoch, 100 rounds. The default ``num_link_types = 4`` and
  ``em_iterations = 1`` are the code's (``--nlinktype 4``,
  ``--num_iterEM 1``).

Communication, all through the channel: the server sends each client the
whole model (channels permuted to the client's link-type order) and, after
the first round, its ``link_type_prototypes`` (``K x 2 hidden``); a client
uploads its model parameters, ``link_type_prototypes`` and
``channel_train_nodes`` (``K`` counts). Node features, embeddings, edges and
labels never leave a client. Secure aggregation is not supported: the
server matches individual clients' prototypes.

Options:

* ``num_link_types``: ``K``, the number of latent link types and channels
  (default 4, the official script's).
* ``em_iterations``: EM steps per local epoch (default 1, the code's).
* ``self_loops``: add self-loops in the ``gcn``/``sgc`` channel layers
  (default ``False``, as DGL's ``GraphConv`` in the code).
* ``reset_optimizer``: clear the local Adam state at the start of every
  round (default ``False``: the code keeps one optimiser per client).
"""
from __future__ import annotations

import copy
from typing import Any, Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.data import Data

from fglcore.algorithms.base import Algorithm, TrainerClient, register_algorithm
from fglcore.algorithms.training import NodeTrainer
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.fl.channel import Channel
from fglcore.fl.engine import Client, Payload, Server
from fglcore.fl.parameters import load_payload, module_payload, weighted_mean
from fglcore.models.fedlit import MultiChannelGNN
from fglcore.models.link_type_channel import BACKBONES
from fglcore.runtime import set_seed

PROTOTYPES = "link_type_prototypes"
CHANNEL_TRAIN_NODES = "channel_train_nodes"
CHANNEL_PREFIX = "channels."
KMEANS_BATCH_SIZE = 1024  # the code's MiniBatchKMeans(batch_size=1024, max_iter=1)
KMEANS_N_INIT = 3  # MiniBatchKMeans' default n_init in the scikit-learn of the code's time


def channel_parameter_names(model: MultiChannelGNN, k: int) -> list[str]:
    """Names of channel ``k``'s parameters (``channels.k.*``)."""
    prefix = f"{CHANNEL_PREFIX}{k}."
    return [name for name, _ in model.named_parameters() if name.startswith(prefix)]


def rename_channel(name: str, target: int) -> str:
    """``channels.<k>.rest`` -> ``channels.<target>.rest``."""
    _, rest = name[len(CHANNEL_PREFIX) :].split(".", 1)
    return f"{CHANNEL_PREFIX}{target}.{rest}"


# -- link-type detection (EM clustering of edges) ----------------------------------------------------


def canonical_edge_pairs(edge_index: Tensor) -> Tensor:
    """``[2, E]``: each edge's endpoints ordered as (smaller id, larger id), so ``(u, v)`` and ``(v, u)`` agree."""
    return torch.stack([edge_index.min(dim=0).values, edge_index.max(dim=0).values])


def edge_representations(h: Tensor, pairs: Tensor) -> Tensor:
    """:math:`e_{uv} = [h_{\\min(u,v)} \\Vert h_{\\max(u,v)}]`, one row per edge.

    ``pairs`` comes from :func:`canonical_edge_pairs`. One gather of the
    rows ``min, max, min, max, ...`` viewed as ``[E, 2 d]``: the concatenation
    ``torch.cat([h[pairs[0]], h[pairs[1]]], 1)``, copied once instead of
    three times (the same values; a tenth of a FedLit step on Coauthor Physics).
    """
    return torch.index_select(h, 0, pairs.t().reshape(-1)).view(pairs.size(1), 2 * h.size(1))


def assign_link_types(representations: Tensor, prototypes: Tensor) -> Tensor:
    """EM assignment: each edge's type is its most cosine-similar prototype, :math:`\\arg\\max_k \\cos(e, c_k)`.

    Ties go to the lowest index (as ``argmax`` in the code).
    """
    if representations.dim() != 2 or prototypes.dim() != 2 or representations.size(1) != prototypes.size(1):
        raise ValueError(
            f"edge representations {tuple(representations.shape)} and prototypes {tuple(prototypes.shape)} "
            "must be matrices of the same width"
        )
    similarity = F.normalize(representations, dim=1) @ F.normalize(prototypes.to(representations.dtype), dim=1).t()
    return similarity.argmax(dim=1)


def update_prototypes(representations: Tensor, link_types: Tensor, previous: Tensor) -> Tensor:
    """EM update: prototype ``k`` is the mean representation of the type-``k`` edges.

    A prototype with no edge keeps ``previous[k]`` (the code's would become ``NaN``).
    """
    k, d = previous.shape
    sums = representations.new_zeros(k, d).index_add_(0, link_types, representations)
    counts = torch.bincount(link_types, minlength=k).to(representations.dtype)
    means = sums / counts.clamp(min=1).unsqueeze(1)
    return torch.where(counts.unsqueeze(1) > 0, means, previous.to(representations.dtype))


def em_link_types(representations: Tensor, prototypes: Tensor, iterations: int) -> tuple[Tensor, Tensor]:
    """``iterations`` EM steps from ``prototypes``: returns the new prototypes and the last assignment.

    As the code's ``_update_clusters_*``, the returned assignment is the one
    the final update averaged (made with the prototypes before that update).
    """
    if iterations < 1:
        raise ValueError(f"em_link_types needs iterations >= 1, got {iterations}")
    for _ in range(iterations):
        link_types = assign_link_types(representations, prototypes)
        prototypes = update_prototypes(representations, link_types, prototypes)
    return prototypes, link_types


def initial_link_types(representations: Tensor, num_link_types: int, seed: int) -> tuple[Tensor, Tensor]:
    """The code's initial clustering, ``MiniBatchKMeans(K, batch_size=1024, max_iter=1, random_state=seed)``.

    Returns the ``[K, d]`` centres and each edge's label, on the
    representations' device and dtype.
    """
    from sklearn.cluster import MiniBatchKMeans

    n = representations.size(0)
    if n < num_link_types:
        raise ValueError(
            f"FedLit needs at least num_link_types={num_link_types} edges on every client to initialise its "
            f"link types, got {n}; lower num_link_types or use fewer clients"
        )
    points = representations.detach().cpu().double().numpy()
    kmeans = MiniBatchKMeans(
        n_clusters=num_link_types,
        batch_size=KMEANS_BATCH_SIZE,
        max_iter=1,
        n_init=KMEANS_N_INIT,
        random_state=seed,
    ).fit(points)
    centres = torch.as_tensor(kmeans.cluster_centers_, dtype=representations.dtype, device=representations.device)
    labels = torch.as_tensor(kmeans.labels_.astype(np.int64), device=representations.device)
    return centres, labels


def channel_train_nodes(edge_index: Tensor, link_types: Tensor, train_mask: Tensor, num_link_types: int) -> Tensor:
    """Per link type, the number of training nodes its edges touch (the code's ``cluster_train_size``)."""
    counts = []
    for k in range(num_link_types):
        touched = torch.zeros_like(train_mask)
        touched[edge_index[:, link_types == k].reshape(-1)] = True
        counts.append(int((touched & train_mask).sum()))
    return torch.tensor(counts, dtype=torch.long)


def match_prototypes(local: Tensor, global_: Tensor) -> list[int]:
    """Greedy one-to-one matching of a client's prototypes to the global ones by cosine similarity.

    Repeatedly takes the most similar remaining (local ``j``, global ``g``)
    pair and removes both (code ``_update_groups``). Returns ``match`` with
    ``match[j] = g``, a permutation of ``range(K)``.
    """
    if local.shape != global_.shape or local.dim() != 2:
        raise ValueError(
            f"client prototypes {tuple(local.shape)} and global prototypes {tuple(global_.shape)} must be equal-shaped "
            "[num_link_types, dim] matrices"
        )
    similarity = (F.normalize(local.double(), dim=1) @ F.normalize(global_.double(), dim=1).t()).clone()
    k = local.size(0)
    match = [-1] * k
    for _ in range(k):
        flat = int(similarity.argmax())
        j, g = divmod(flat, k)
        match[j] = g
        similarity[j, :] = -torch.inf
        similarity[:, g] = -torch.inf
    return match


# -- participants ----------------------------------------------------------------------------------


class FedLitTrainer(NodeTrainer):
    """A :class:`NodeTrainer` whose forward pass first types the edges.

    In training mode every forward pass (one per local epoch) runs the EM
    clustering (or, the very first time, the k-means initialisation) on the
    detached edge representations; in eval mode edges get the type of their
    nearest prototype. :attr:`prototypes` holds the client's ``[K, 2 hidden]``
    link-type prototypes, :attr:`link_types` the last training assignment.
    """

    def __init__(
        self,
        model: MultiChannelGNN,
        data: Data,
        config: ExperimentConfig,
        device: torch.device,
        *,
        em_iterations: int,
        kmeans_seed: int,
    ):
        super().__init__(model, data, config, device)
        self.em_iterations = em_iterations
        self.kmeans_seed = kmeans_seed
        self.pairs = canonical_edge_pairs(self.edge_index)
        self.train_mask = torch.zeros(data.num_nodes, dtype=torch.bool, device=device)
        self.train_mask[self.train_idx] = True
        self.prototypes: Tensor | None = None
        self.link_types: Tensor | None = None

    def forward(self) -> Tensor:
        model: MultiChannelGNN = self.model
        h = model.project(self.x)
        representations = edge_representations(h.detach(), self.pairs)
        if model.training:
            if self.prototypes is None:
                self.prototypes, self.link_types = initial_link_types(
                    representations, model.num_link_types, self.kmeans_seed
                )
            else:
                self.prototypes, self.link_types = em_link_types(
                    representations, self.prototypes, self.em_iterations
                )
            link_types = self.link_types
        else:
            if self.prototypes is None:
                raise RuntimeError("FedLit client has no link-type prototypes yet; train or receive them first")
            link_types = assign_link_types(representations, self.prototypes)
        return model.combine(h, self.edge_index, link_types)

    def channel_train_nodes(self) -> Tensor:
        if self.link_types is None:
            raise RuntimeError("FedLit client has not typed its edges yet")
        return channel_train_nodes(self.edge_index, self.link_types, self.train_mask, self.model.num_link_types)


class FedLitClient(TrainerClient):
    """Loads the received model (channels already in its own link-type order) and prototypes; trains; uploads."""

    trainer: FedLitTrainer

    def __init__(self, cid: int, trainer: FedLitTrainer, epochs: int, reset_optimizer: bool):
        super().__init__(cid, trainer, epochs)
        self.reset_optimizer = reset_optimizer

    def receive(self, payload: Payload, round: int) -> None:
        load_payload(self.model, {name: value for name, value in payload.items() if name != PROTOTYPES})
        if PROTOTYPES in payload:
            self.trainer.prototypes = payload[PROTOTYPES].to(self.trainer.device).clone()

    def fit(self, round: int) -> Payload:
        if self.reset_optimizer:
            self.trainer.reset_optimizer()
        return super().fit(round)

    def upload(self) -> Payload:
        payload = module_payload(self.model)
        payload[PROTOTYPES] = self.trainer.prototypes
        payload[CHANNEL_TRAIN_NODES] = self.trainer.channel_train_nodes()
        return payload


class FedLitServer(Server):
    """Matches link types across clients, averages prototypes, shared layers and matched channels.

    :attr:`prototypes` are the global link-type prototypes (``None`` until
    the first upload), :attr:`matches` each client's last matching
    (``matches[cid][j]`` = the global type of its local type ``j``).
    """

    def __init__(self, parameters: Mapping[str, Tensor], num_link_types: int):
        self.parameters = {name: value.detach().clone() for name, value in parameters.items()}
        self.num_link_types = num_link_types
        self.channel_names = {
            k: [n for n in self.parameters if n.startswith(f"{CHANNEL_PREFIX}{k}.")] for k in range(num_link_types)
        }
        self.shared_names = [n for n in self.parameters if not n.startswith(CHANNEL_PREFIX)]
        self.prototypes: Tensor | None = None
        self.matches: dict[int, list[int]] = {}

    def payload_for(self, client: Client, round: int) -> Payload:
        payload = {name: self.parameters[name] for name in self.shared_names}
        match = self.matches.get(client.cid, list(range(self.num_link_types)))
        for j, g in enumerate(match):
            for name in self.channel_names[g]:
                payload[rename_channel(name, j)] = self.parameters[name]
        if self.prototypes is not None:
            payload[PROTOTYPES] = self.prototypes[match]
        return payload

    def aggregate(self, updates: Mapping[int, Payload], weights: Mapping[int, float], round: int) -> None:
        order = list(updates)
        if self.prototypes is None:
            # code: the global prototypes start as the first client's
            self.prototypes = updates[order[0]][PROTOTYPES].detach().clone()
        self.matches.update({cid: match_prototypes(updates[cid][PROTOTYPES], self.prototypes) for cid in order})
        self.prototypes = self.average_prototypes(updates, order)
        shared = weighted_mean(
            [{n: updates[cid][n] for n in self.shared_names} for cid in order], [weights[cid] for cid in order]
        )
        new = dict(self.parameters)
        new.update(shared)
        for g in range(self.num_link_types):
            members = []
            for cid in order:
                j = self.matches[cid].index(g)
                if int(updates[cid][CHANNEL_TRAIN_NODES][j]) > 0:
                    members.append({n: updates[cid][rename_channel(n, j)] for n in self.channel_names[g]})
            if members:
                new.update(weighted_mean(members, [1.0] * len(members)))
        self.parameters = {name: new[name].to(old.device, old.dtype) for name, old in self.parameters.items()}

    def average_prototypes(self, updates: Mapping[int, Payload], order: Sequence[int]) -> Tensor:
        """Global prototype ``g``: the unweighted mean of the client prototypes matched to it (``_update_centers``)."""
        total = torch.zeros_like(self.prototypes, dtype=torch.float64)
        for cid in order:
            local = updates[cid][PROTOTYPES].to(total.device, torch.float64)
            total[self.matches[cid]] += local
        return (total / len(order)).to(self.prototypes.dtype)


@register_algorithm
class FedLit(Algorithm):
    """FedLit (Xie, Xiong and Yang, WWW 2023); equations, code and options in :mod:`fglcore.algorithms.fedlit`."""

    name = "fedlit"
    tasks = ("node",)
    default_options = {"num_link_types": 4, "em_iterations": 1, "self_loops": False, "reset_optimizer": False}
    citation = (
        "Xie, Xiong and Yang, Federated Node Classification over Graphs with Latent Link-type Heterogeneity, WWW 2023"
    )
    secure_aggregation_unsupported = (
        "its server matches each client's link-type prototypes and channels individually, "
        "which a masked sum of payloads cannot carry"
    )

    @classmethod
    def check_config(cls, config: ExperimentConfig) -> None:
        super().check_config(config)
        if config.model not in BACKBONES:
            raise ConfigError(
                f"model: fedlit builds its channels from {', '.join(BACKBONES)} layers, got {config.model!r}"
            )

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> dict[str, Any]:
        merged = super().check_options(options)
        for key in ("num_link_types", "em_iterations"):
            if merged[key] < 1:
                raise ConfigError(f"algorithm_options.{key}: must be an integer >= 1, got {merged[key]}")
        return merged

    def make_multichannel(self) -> MultiChannelGNN:
        c = self.config
        return MultiChannelGNN(
            int(self.federation.num_features),
            c.hidden,
            int(self.federation.num_classes),
            self.options["num_link_types"],
            c.model,
            c.num_layers,
            c.dropout,
            self.options["self_loops"],
        )

    def build(self, channel: Channel) -> tuple[FedLitServer, list[Client]]:
        set_seed(self.config.seed)
        reference = self.make_multichannel()  # code: every model is built under the same seed
        server = FedLitServer(
            {name: value.to(self.device) for name, value in module_payload(reference).items()},
            self.options["num_link_types"],
        )
        clients: list[Client] = []
        for cid, data in enumerate(self.clients_data):
            trainer = FedLitTrainer(
                copy.deepcopy(reference),
                data,
                self.config,
                self.device,
                em_iterations=self.options["em_iterations"],
                kmeans_seed=self.config.seed,  # code: random_state=args.seed on every client
            )
            clients.append(FedLitClient(cid, trainer, self.config.local_epochs, self.options["reset_optimizer"]))
        return server, clients
