"""FedTAD: topology-aware data-free knowledge distillation on the server.

Zhu, Li, Wu, Wu, Hu and Li, "FedTAD: Topology-aware Data-free Knowledge
Distillation for Subgraph Federated Learning", IJCAI 2024 (arXiv
2404.14061), Sec. 4. Official code ``zyl24/FedTAD`` (``train_fedtad.py``);
the port O-pFGL's authors ran (they defer to OpenFGL for every baseline,
digest A16): ``xkLi-Allen/OpenFGL``, ``openfgl/flcore/fedtad``. Both have the
same hyper-parameters, which are the defaults here.

**Client side, once** (Sec. 4.1, "class-wise knowledge reliability"):

1. a topology embedding :math:`t_v` of every local node, concatenated with
   its features, :math:`e_v = x_v \\Vert t_v`; ``topology_embedding``:

   * ``"code"`` (default; both codes' ``cal_topo_emb``): for every walk
     length :math:`l = 1..L` (``walk_length`` = 5) one random walk of
     :math:`l` nodes from every node, the visited node *ids* concatenated
     (:math:`L(L+1)/2` columns). The codes draw each step from
     :math:`\\mathrm{softmax}(T_{u,:})` with ``T = A * pinverse(D)``, an
     element-wise product, so :math:`T = \\mathrm{diag}(1/d)` and the walks
     are close to uniform over the client's nodes; this is reproduced
     as written, with a seeded generator;
   * ``"rwpe"``: the random-walk landing probabilities
     :math:`[P_{vv}, (P^2)_{vv}, \\dots, (P^L)_{vv}]`,
     :math:`P = \\tilde D^{-1}\\tilde A` (a deterministic reading of
     "topology-aware node embedding by random walks");

2. node reliability of a training node :math:`v`:
   :math:`r_v = (1 + \\sum_{u \\in N(v)} \\cos(e_v, e_u)) / (|N(v)| + 1)`;
3. class-wise reliability :math:`\\mathrm{ckr}_k(c) = \\sum_{v \\in V_L, y_v = c} r_v`.

**Each round**: clients train ``E`` epochs from the global model and upload
their parameters and :math:`\\mathrm{ckr}_k` (OpenFGL re-sends it every
round). The server averages the parameters (FedAvg, weights = training
nodes), normalises the reliabilities (``reliability_normalization``:
``"clients"``, the official code, :math:`\\varpi_k(c) = \\mathrm{ckr}_k(c) /
\\sum_j \\mathrm{ckr}_j(c)`; ``"classes"``, OpenFGL's port,
:math:`\\mathrm{ckr}_k(c)/\\sum_{c'}\\mathrm{ckr}_k(c')`) and runs
``glb_epochs`` times (Sec. 4.2, "data-free distillation"):

* noise :math:`z \\sim \\mathcal N(0, I)` (``num_gen`` × ``noise_dim``) and
  labels :math:`c` (``num_gen // C`` per class, the rest to the last class);
  the generator :class:`~fglcore.models.node_generator.NodeFeatureGenerator`
  gives features :math:`\\hat X = G(z, c)` and the pseudo-graph is the kNN
  graph of :math:`\\hat X` (:func:`knn_graph`, ``topk`` = 5);
* ``it_g`` generator steps on
  :math:`\\lambda_1 L_{sem} + L_{div} + \\lambda_2 L_{dis}` with
  :math:`L_{sem} = \\sum_k\\sum_c \\varpi_k(c)\\,\\mathrm{CE}(f_k(\\hat X)_{c}, c)`
  (each client model :math:`f_k` must recognise class :math:`c` on the
  nodes generated for it), the adversarial term
  :math:`L_{div} = -\\sum_k\\sum_c \\varpi_k(c)\\,\\overline{|f(\\hat X)_c - f_k(\\hat X)_c|}`
  (generate where the global model :math:`f` and the reliable teachers
  disagree) and the diversity term
  :math:`L_{dis} = \\exp(-\\overline{d_z \\odot d_x})` (pairwise L2 noise
  distances times L1 feature distances), once per client as in the code;
* ``it_d`` steps of the global model on
  :math:`\\sum_k\\sum_c \\varpi_k(c)\\,\\overline{|f(\\hat X)_c - f_k(\\hat X)_c|}`
  (logits, ``raw_distill``), with a persistent Adam of learning rate
  ``lr_d`` (the generator's: ``lr_g``) and ``config.weight_decay``.

The distilled global model is sent to every client. The code re-runs the
generator once per client inside a step; with ``gen_dropout = 0`` (the
default) those outputs are identical, so one forward serves all clients
here. The server needs each client's model, so secure aggregation cannot be
used.

**O-pFGL's protocol** (Yan et al., arXiv 2411.11304, App. A.7: "we perform
additional fine-tuning processes on FedAvg, FedTAD, DENSE, and Co-Boost";
digest A16): ``local_epochs_grid`` (a list) runs one round per ``E`` and
reports the ``E`` with the best validation accuracy
(:class:`~fglcore.algorithms.fedavg_ft.OneShotProtocol`, shared with
``fedavg_ft``), and ``fine_tune=True`` then fine-tunes the downloaded model
as ``fedavg_ft`` does (:data:`OPFGL_ONE_SHOT`). ``local_epochs_grid=None``
(default) is the ordinary multi-round FedTAD (Tables 9/10: 100 rounds).

**Heterogeneous models** (a model list such as ``hetero``,
:mod:`fglcore.models.model_lists`; O-pFGL's Tables 3/11 report FedTAD among
the methods that "can run"). *A reading, not stated by the paper*, which
does not say how it ran FedTAD with ten architectures: the per-architecture
student of :mod:`fglcore.algorithms.ensemble_distillation` applied to
FedTAD's server. What changes:

* the teachers are the clients' own models, each rebuilt with its client's
  architecture; the reliabilities :math:`\\varpi_k(c)` are normalised over
  all clients as before;
* instead of one global model the server keeps **one student per client
  architecture** (:meth:`~fglcore.algorithms.base.Algorithm.architecture_groups`;
  ``hetero``'s clients 0 and 5, both SGC K=2, share one). FedTAD's start,
  the FedAvg mean, is taken over the uploads of the clients of that
  architecture only (a client alone with its architecture: its own upload);
  the initial parameters (the opening broadcast of the multi-round run) are
  those of the architecture's first client. Each student is distilled from
  every client's model with the losses above, in the order of each
  architecture's first client, with a generator and two Adam optimisers of
  its own (every generator starts from the same seeded initialisation; the
  noise is drawn from one seeded RNG in that order);
* each client downloads only its architecture's student and (one-shot
  protocol) fine-tunes it, so it ends with its own architecture;
* uploads and downloads are the whole model, parameters and buffers (the
  BatchNorm statistics of ``appnp_mlp`` make an evaluated teacher what its
  client trained), plus :math:`\\mathrm{ckr}_k`: still one upload and one
  download per client and round.

With one model every client is in one group, which is the FedTAD above (the
same numbers).
"""
from __future__ import annotations

from typing import Any, ClassVar, Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.utils import add_self_loops, degree, to_dense_adj

from fglcore.algorithms.base import Trainer, register_algorithm
from fglcore.algorithms.fedavg import FedAvg, FedAvgServer
from fglcore.algorithms.ensemble_distillation import knn_graph
from fglcore.algorithms.fedavg_ft import (EPOCHS_GRID, ONE_SHOT_BOUNDS, ONE_SHOT_OPTIONS, FineTuneClient,
                                          OneShotProtocol)
from fglcore.algorithms.training import client_seed
from fglcore.checks import POSITIVE, Bounds
from fglcore.config import ConfigError
from fglcore.fl.channel import Channel
from fglcore.fl.engine import Client, Payload
from fglcore.fl.parameters import load_payload, module_payload, weighted_mean
from fglcore.models import MODELS, build_client_model
from fglcore.models.node_generator import NodeFeatureGenerator

TOPOLOGY_EMBEDDINGS = ("code", "rwpe")
NORMALIZATIONS = ("clients", "classes")
RELIABILITY = "fedtad.ckr"

OPFGL_ONE_SHOT: dict[str, Any] = {"local_epochs_grid": list(EPOCHS_GRID), "fine_tune": True}
"""FedTAD's options under O-pFGL's one-shot protocol (one round, epochs chosen on validation, fine-tuning)."""


# --------------------------------------------------------------------------- client side


def topology_embedding(edge_index: Tensor, num_nodes: int, walk_length: int, mode: str = "code",
                       generator: torch.Generator | None = None) -> Tensor:
    """Step 1: :math:`t_v` for every node (see the module docstring). Dense in the nodes, as both codes.

    Shapes: ``"code"`` :math:`(N, L(L+1)/2)` (node ids as floats), ``"rwpe"`` :math:`(N, L)`.
    """
    looped = add_self_loops(edge_index, num_nodes=num_nodes)[0]
    A = to_dense_adj(looped, max_num_nodes=num_nodes)[0]
    d = A.sum(dim=1)
    if mode == "code":
        T = A * torch.linalg.pinv(torch.diag(d))  # element-wise, as ``A * torch.pinverse(D)``
        probs = F.softmax(T, dim=1)
        walks = []
        for length in range(1, walk_length + 1):
            current = torch.arange(num_nodes)
            walk = [current]
            for _ in range(length - 1):
                current = torch.multinomial(probs[current], 1, generator=generator).view(-1)
                walk.append(current)
            walks.append(torch.stack(walk, dim=1))
        return torch.cat(walks, dim=1).to(torch.float32)
    if mode == "rwpe":
        P = A / d.clamp(min=1).view(-1, 1)
        power, columns = torch.eye(num_nodes), []
        for _ in range(walk_length):
            power = power @ P
            columns.append(power.diagonal())
        return torch.stack(columns, dim=1)
    raise ValueError(f"unknown topology embedding {mode!r}; accepted: {', '.join(TOPOLOGY_EMBEDDINGS)}")


def class_reliability(embedding: Tensor, edge_index: Tensor, y: Tensor, train_mask: Tensor,
                      num_classes: int) -> Tensor:
    """Steps 2-3: :math:`\\mathrm{ckr}(c) = \\sum_{v\\in V_L, y_v=c} (1 + \\sum_{u\\in N(v)}\\cos(e_v,e_u))/(|N(v)|+1)`.

    :math:`N(v)` are the targets of ``v``'s edges (as the codes walk
    ``edge_index``). Shape :math:`(C,)`, ``float64``.
    """
    n = embedding.size(0)
    source, target = edge_index
    cos = F.cosine_similarity(embedding[source].double(), embedding[target].double(), dim=1)
    total = torch.zeros(n, dtype=torch.float64).index_add(0, source, cos)
    r = (1.0 + total) / (degree(source, n, dtype=torch.float64) + 1.0)
    return torch.zeros(num_classes, dtype=torch.float64).index_add(0, y[train_mask], r[train_mask])


def normalize_reliability(ckr: Tensor, mode: str = "clients") -> Tensor:
    """:math:`\\varpi` from the clients' :math:`\\mathrm{ckr}` (:math:`K\\times C`); a zero sum gives 0."""
    if mode not in NORMALIZATIONS:
        raise ValueError(f"unknown reliability normalization {mode!r}; accepted: {', '.join(NORMALIZATIONS)}")
    total = ckr.sum(dim=0, keepdim=True) if mode == "clients" else ckr.sum(dim=1, keepdim=True)
    return torch.where(total > 0, ckr / torch.where(total > 0, total, torch.ones_like(total)), torch.zeros_like(ckr))


# --------------------------------------------------------------------------- server side


def diversity_loss(z: Tensor, x: Tensor) -> Tensor:
    """The codes' ``DiversityLoss(metric='l1')``: :math:`\\exp(-\\mathrm{mean}_{ij}\\, d_z(i,j)\\, d_x(i,j))` with
    :math:`d_z` the mean squared noise difference and :math:`d_x` the mean absolute feature difference."""
    dz = torch.cdist(z, z, p=2).pow(2) / z.size(1)
    dx = torch.cdist(x, x, p=1) / x.size(1)
    return torch.exp(torch.mean(-dz * dx))


def generated_labels(num_gen: int, num_classes: int) -> Tensor:
    """``num_gen // C`` labels per class in class order, the remainder to the last class (the codes' ``c``)."""
    counts = [num_gen // num_classes] * num_classes
    counts[-1] += num_gen - sum(counts)
    return torch.repeat_interleave(torch.arange(num_classes), torch.tensor(counts))


def weighted_l1(student: Tensor, teacher: Tensor, labels: Tensor, weights: Tensor) -> Tensor:
    """:math:`\\sum_c w_c\\,\\mathrm{mean}_{i: c_i = c}\\mathrm{mean}_j |s_{ij} - t_{ij}|` (the codes' per-class loop)."""
    per_node = (student - teacher).abs().mean(dim=1)
    num_classes = weights.numel()
    sums = torch.zeros(num_classes, dtype=per_node.dtype, device=per_node.device).index_add(0, labels, per_node)
    counts = torch.bincount(labels, minlength=num_classes).to(per_node.dtype)
    return (weights.to(per_node.dtype) * sums / counts).sum()


def weighted_cross_entropy(logits: Tensor, labels: Tensor, weights: Tensor) -> Tensor:
    """:math:`\\sum_c w_c\\,\\mathrm{CE}(\\text{logits of class-}c\\text{ nodes}, c)` (mean within each class)."""
    per_node = F.cross_entropy(logits, labels, reduction="none")
    num_classes = weights.numel()
    sums = torch.zeros(num_classes, dtype=per_node.dtype, device=per_node.device).index_add(0, labels, per_node)
    counts = torch.bincount(labels, minlength=num_classes).to(per_node.dtype)
    return (weights.to(per_node.dtype) * sums / counts).sum()


class StudentSlot:
    """One architecture's distillation on FedTAD's server: the clients that have it, its parameters, the
    student model with its persistent Adam, and the generator trained against it with its Adam (FedTAD keeps
    both optimisers across rounds). Every slot's generator starts from the same seeded initialisation."""

    def __init__(self, label: str, clients: Sequence[int], parameters: dict[str, Tensor], student: nn.Module,
                 num_classes: int, num_features: int, options: Mapping[str, Any], weight_decay: float, seed: int):
        self.label, self.clients = label, list(clients)
        self.parameters = {name: value.detach().clone() for name, value in parameters.items()}
        self.student = student
        device = next(student.parameters()).device
        with torch.random.fork_rng(devices=[]):  # the generator's initialisation, without touching the global RNG
            torch.manual_seed(seed)
            self.generator = NodeFeatureGenerator(options["noise_dim"], num_classes, num_features,
                                                  dropout=options["gen_dropout"]).to(device)
        self.generator_optimizer = torch.optim.Adam(self.generator.parameters(), lr=options["lr_g"],
                                                    weight_decay=weight_decay)
        self.student_optimizer = torch.optim.Adam(self.student.parameters(), lr=options["lr_d"],
                                                  weight_decay=weight_decay)
        self.history: list[dict[str, float]] = []


class FedTADServer(FedAvgServer):
    """Per architecture (one with one model): the FedAvg mean of its clients' uploads, then data-free
    distillation of every client's model into it (module docstring).

    ``parameters[g]`` and ``students[g]`` are group ``g``'s initial parameters and server model, ``groups``
    its ``(label, client ids)`` (:meth:`~fglcore.algorithms.base.Algorithm.architecture_groups`),
    ``teachers[cid]`` a model of client ``cid``'s architecture. ``whole_state``: uploads and downloads are
    whole ``state_dict`` s (a model list, whose BatchNorm buffers the teachers need), else parameters.
    ``parameters``, ``student``, ``generator`` and ``history`` are the first group's.
    """

    def __init__(self, parameters: Sequence[dict[str, Tensor]], students: Sequence[nn.Module],
                 teachers: Sequence[nn.Module], groups: Sequence[tuple[str, Sequence[int]]], num_classes: int,
                 num_features: int, options: Mapping[str, Any], weight_decay: float, seed: int, opening: bool,
                 whole_state: bool = False):
        super().__init__(parameters[0])
        o = self.options = dict(options)
        self.opening, self.whole_state = opening, whole_state
        self.teachers = list(teachers)
        for teacher in self.teachers:
            teacher.requires_grad_(False)
        device = next(students[0].parameters()).device
        self.rng = torch.Generator(device=device).manual_seed(seed)
        self.slots = [StudentSlot(label, members, state, student, num_classes, num_features, o, weight_decay, seed)
                      for (label, members), state, student in zip(groups, parameters, students)]
        self.slot_of = {cid: slot for slot in self.slots for cid in slot.clients}
        self.labels = generated_labels(o["num_gen"], num_classes).to(device)

    @property
    def student(self) -> nn.Module:
        return self.slots[0].student

    @property
    def generator(self) -> NodeFeatureGenerator:
        return self.slots[0].generator

    @property
    def history(self) -> list[dict[str, float]]:
        return self.slots[0].history

    def aggregate(self, updates: Mapping[int, Payload], weights: Mapping[int, float], round: int) -> None:
        order = list(updates)
        ckr = torch.stack([updates[c][RELIABILITY].double() for c in order])
        reliability = normalize_reliability(ckr, self.options["reliability_normalization"])
        for c in order:
            self.load(self.teachers[c], {k: v for k, v in updates[c].items() if k != RELIABILITY})
        teachers = [self.teachers[c] for c in order]
        for slot in self.slots:
            members = [c for c in order if c in slot.clients]
            if not members:
                continue
            models = [{k: v for k, v in updates[c].items() if k in slot.parameters} for c in members]
            slot.parameters = weighted_mean(models, [weights[c] for c in members])
            self.load(slot.student, slot.parameters)
            self.distill(teachers, reliability, slot)
            state = slot.student.state_dict() if self.whole_state else module_payload(slot.student)
            slot.parameters = {k: v.detach().clone() for k, v in state.items() if k in slot.parameters}
        self.parameters = self.slots[0].parameters

    def load(self, model: nn.Module, state: Mapping[str, Tensor]) -> None:
        """``state`` into ``model``: the whole ``state_dict`` (:attr:`whole_state`) or its parameters."""
        if self.whole_state:
            model.load_state_dict(state)
        else:
            load_payload(model, state)

    def distill(self, teachers: Sequence[nn.Module], reliability: Tensor, slot: StudentSlot | None = None) -> None:
        """``glb_epochs`` rounds of generator steps then student steps (module docstring), for ``slot``
        (default: the first architecture's)."""
        o, c = self.options, self.labels
        slot = self.slots[0] if slot is None else slot
        student, generator = slot.student, slot.generator
        reliability = reliability.to(c.device)
        for teacher in teachers:
            teacher.eval()
        for _ in range(o["glb_epochs"]):
            z = torch.randn(o["num_gen"], o["noise_dim"], generator=self.rng, device=c.device)
            generator.train()
            student.eval()
            for _ in range(o["it_g"]):
                slot.generator_optimizer.zero_grad(set_to_none=True)
                x = generator(z, c)
                edges = knn_graph(x, o["topk"])
                student_out = student(x, edges)
                semantic = diverge = torch.zeros((), device=c.device)
                for k, teacher in enumerate(teachers):
                    teacher_out = teacher(x, edges)
                    semantic = semantic + weighted_cross_entropy(teacher_out, c, reliability[k])
                    diverge = diverge - weighted_l1(student_out, teacher_out.detach(), c, reliability[k])
                spread = len(teachers) * diversity_loss(z, x)
                generator_loss = o["lam1"] * semantic + diverge + o["lam2"] * spread
                generator_loss.backward()
                slot.generator_optimizer.step()
            generator.eval()
            student.train()
            with torch.no_grad():
                x = generator(z, c)
                edges = knn_graph(x, o["topk"])
                targets = [teacher(x, edges) for teacher in teachers]
            for _ in range(o["it_d"]):
                slot.student_optimizer.zero_grad(set_to_none=True)
                out = student(x, edges)
                loss = sum(weighted_l1(out, t, c, reliability[k]) for k, t in enumerate(targets))
                loss.backward()
                slot.student_optimizer.step()
            slot.history.append({"generator_loss": float(generator_loss.detach()),
                                 "semantic_loss": float(semantic.detach()), "distill_loss": float(loss.detach())})
        student.eval()

    def payload_for(self, client: Client, round: int) -> Payload | None:
        """Nothing before the first upload in the one-shot protocol; else the parameters of the client's
        architecture."""
        if round == 1 and not self.opening:
            return None
        return dict(self.slot_of[client.cid].parameters)


class FedTADClient(FineTuneClient):
    """A FedAvg client that also uploads its class-wise knowledge reliability (computed once)."""

    def __init__(self, cid: int, trainer: Trainer, epochs: int, shared: Sequence[str], num_nodes: int,
                 reliability: Tensor):
        super().__init__(cid, trainer, epochs, shared, num_nodes)
        self.reliability = reliability

    whole_state = False
    """Whether the model travels as its whole ``state_dict`` (under a model list), else as its parameters."""

    def receive(self, payload: Payload, round: int) -> None:
        if self.whole_state:
            self.model.load_state_dict(payload)
        else:
            super().receive(payload, round)

    def upload(self) -> Payload:
        model = {k: v.detach() for k, v in self.model.state_dict().items()} if self.whole_state else super().upload()
        return {**model, RELIABILITY: self.reliability.to(torch.float32)}


@register_algorithm
class FedTAD(OneShotProtocol, FedAvg):
    """FedTAD (Zhu et al., IJCAI 2024): FedAvg, then server-side data-free distillation of the clients' models,
    weighted by class-wise knowledge reliability; options and readings in :mod:`fglcore.algorithms.fedtad`."""

    name = "fedtad"
    tasks = ("node",)
    citation = ("Zhu et al., FedTAD: Topology-aware Data-free Knowledge Distillation for Subgraph Federated "
                "Learning, IJCAI 2024")
    secure_aggregation_unsupported = ("the server distils from every client's own model, weighted by that client's "
                                      "class reliability, so it needs the individual uploads")
    one_shot_optional = True
    heterogeneous_models = True  # one student per client architecture (reading in the module docstring)
    default_options: ClassVar[dict[str, Any]] = {
        "topology_embedding": "code", "walk_length": 5, "reliability_normalization": "clients",
        "topk": 5, "num_gen": 100, "noise_dim": 32, "gen_dropout": 0.0, "glb_epochs": 5, "it_g": 1, "it_d": 5,
        "lr_g": 1e-3, "lr_d": 1e-3, "lam1": 1.0, "lam2": 1.0, "reset_optimizer": False,
        **ONE_SHOT_OPTIONS, "local_epochs_grid": None, "fine_tune": False,
    }
    option_choices = {"topology_embedding": TOPOLOGY_EMBEDDINGS, "reliability_normalization": NORMALIZATIONS}
    option_bounds = {**ONE_SHOT_BOUNDS, **dict.fromkeys(("walk_length", "topk", "num_gen", "noise_dim", "glb_epochs",
                                                        "it_g", "it_d"), POSITIVE),
                     "gen_dropout": Bounds(minimum=0, maximum=1, below=1), "lr_g": Bounds(above=0),
                     "lr_d": Bounds(above=0), "lam1": Bounds(minimum=0), "lam2": Bounds(minimum=0)}

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> dict[str, Any]:
        merged = super().check_options(options)
        if merged["topk"] > merged["num_gen"]:
            raise ConfigError(f"algorithm_options.topk: {merged['topk']} is not accepted; accepted: at most "
                              f"num_gen ({merged['num_gen']}), the number of generated nodes")
        return merged

    def shared_names(self, models: Sequence[nn.Module]) -> list[str]:
        return [name for name, _ in models[0].named_parameters()]

    def fine_tunes(self) -> bool:
        return self.options["fine_tune"]

    def server_model(self, cid: int = 0) -> nn.Module:
        """A model of client ``cid``'s architecture that is not bound to a graph (it runs on pseudo-graphs); its
        initial weights are overwritten by the uploads, and building it leaves the global RNG alone."""
        c = self.config
        in_channels, out_channels = self.client_dims()[cid]
        return build_client_model(c.model, cid, in_channels, out_channels, hidden_channels=c.hidden,
                                  num_layers=c.num_layers, dropout=c.dropout, task="node", cached=False,
                                  seed=c.seed).to(self.device)

    def build(self, channel: Channel) -> tuple[FedTADServer, list[Client]]:
        """FedAvg's build with one model; under a model list, each client shares its own model's parameters and
        buffers, and each architecture starts from its first client's initialisation."""
        if not MODELS.get(self.config.model).is_list:
            return super().build(channel)
        _, models = self.init_models()
        groups = self.architecture_groups()
        initials = [{k: v.detach().clone().to(self.device) for k, v in models[members[0]].state_dict().items()}
                    for _, members in groups]
        server = self.make_server(initials, groups)
        clients = []
        for cid, model in enumerate(models):
            client = self.make_client(cid, self.make_trainer(model, cid), [n for n, _ in model.named_parameters()])
            client.whole_state = True
            clients.append(client)
        return server, clients

    def make_server(self, parameters: dict[str, Tensor] | Sequence[dict[str, Tensor]],
                    groups: Sequence[tuple[str, Sequence[int]]] | None = None) -> FedTADServer:
        """The server; ``parameters`` the initial shared parameters (one model, FedAvg's build) or each
        architecture's initial state (``groups``, under a model list)."""
        if self.options["num_gen"] < self.num_classes:
            raise ConfigError(f"algorithm_options.num_gen: {self.options['num_gen']} is not accepted; accepted: at "
                              f"least the number of classes ({self.num_classes}), one generated node per class")
        whole_state = groups is not None
        groups = self.architecture_groups() if groups is None else groups
        states = list(parameters) if whole_state else [parameters]
        teachers = [self.server_model(cid) for cid in range(len(self.clients_data))]
        students = [self.server_model(members[0]) for _, members in groups]
        in_channels, _ = self.client_dims()[0]
        return FedTADServer(states, students, teachers, groups, self.num_classes, in_channels, self.options,
                            self.config.weight_decay, self.config.seed, self.opening_broadcast(), whole_state)

    def reliability(self, cid: int) -> Tensor:
        """Client ``cid``'s :math:`\\mathrm{ckr}` (steps 1-3), from its own data and a seed of its own."""
        data, o = self.clients_data[cid], self.options
        generator = torch.Generator().manual_seed(client_seed(self.config.seed, cid))
        walks = topology_embedding(data.edge_index, data.num_nodes, o["walk_length"], o["topology_embedding"],
                                   generator)
        x = data.x.to_dense() if data.x.is_sparse else data.x
        embedding = torch.cat([x.to(torch.float32), walks], dim=1)
        return class_reliability(embedding, data.edge_index, data.y, data.train_mask, self.num_classes)

    def make_client(self, cid: int, trainer: Trainer, shared: Sequence[str]) -> FedTADClient:
        client = FedTADClient(cid, trainer, self.local_epochs, shared, int(self.clients_data[cid].num_nodes),
                              self.reliability(cid))
        client.reset_optimizer = self.options["reset_optimizer"]
        return client
