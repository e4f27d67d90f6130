"""What DENSE and Co-Boost share on graphs: one upload of each client model, data-free distillation of their
ensemble into a server model on generated kNN graphs, one download, local fine-tuning.

Yan et al., "Towards Federated Graph Learning in One-shot Communication"
(arXiv 2411.11304), Sec. 5.1 and App. A.7 adapt the one-shot FL methods DENSE
(Zhang et al., NeurIPS 2022) and Co-Boost (Dai et al., ICLR 2024) to graphs:
"the generator produces node features and the topology is a kNN graph
following FedTAD", and "FedAvg, FedTAD, DENSE and Co-Boost get extra local
fine-tuning"; local epochs are "tuned from 1 to 100" (App. A.2; digest
``opfgl.digest.md`` §5.5, §7.2). The authors' repository holds no baseline
code; its ``model.py`` ships FedTAD's conditional generator, which
:class:`~fglcore.models.node_generator.NodeFeatureGenerator` is.

**Protocol** (shared with :mod:`fglcore.algorithms.fedavg_ft`, whose
one-round loop, fine-tuning and choice of local epochs on validation this
reuses): every client trains ``E`` local epochs from the shared seeded
initialisation and uploads its whole model once (parameters and buffers: a
BatchNorm layer's running statistics are what DENSE's BN loss matches). The
server builds the ensemble of the uploaded models (the *teachers*), trains a
server model (the *student*) by the method's data-free distillation
(:meth:`DistillationServer.distill`), and sends it once to every client, which
fine-tunes it locally with O-pFGL's early stopping. The ledger holds one
upload and one download per client. The server needs every model on its
own, so secure aggregation cannot be used.

**The synthetic graphs.** A synthesis round draws ``synthesis_size`` classes
:math:`c` and noises :math:`z`, the generator gives features
:math:`\\hat X = G(z, c)`, and the edges are :func:`knn_graph` of
:math:`\\hat X` (FedTAD's ``construct_graph`` with ``topk`` = 5), rebuilt at
every generator step (no gradient through the edges). The best batch of a
round (lowest generator loss, as both official synthesizers keep
``best_inputs``) joins a pool of graphs that grows by one graph a round
(``his=True`` in both codes); every round's distillation passes once over the
whole pool in random order, one optimiser step per pooled graph (their
``DataLoader`` over the image pool, one batch per synthesis batch).

**Choosing the local epochs** (option ``epochs_selection``). The paper tunes
every one-round baseline's local epochs on validation (App. A.2) without
saying on which model. ``"final"`` (default) is the protocol of every other
one-round baseline here: the whole run (local training, distillation,
fine-tuning) for each ``E`` of ``local_epochs_grid``, keeping the ``E`` whose
fine-tuned models validate best. ``"teachers"`` chooses ``E`` on the
validation accuracy of the clients' locally trained models -- the teachers
that ``E`` shapes, evaluated as the run's metrics are -- before any
distillation, then runs the pipeline once with that ``E``: one distillation
instead of one per grid value. The distillation dominates the cost (a pool
that grows by one graph a round makes ``epochs`` rounds cost
:math:`O(\text{epochs}^2)` student steps), so ``"teachers"`` is what makes
O-pFGL's heterogeneous tables (nine architectures, nine distillations per
``E``) affordable; ``extras["teacher_search"]`` lists every candidate.

**The student** starts from the shared initialisation (``student_init =
"initial"``: both official codes distil into a freshly built ``get_model``),
or from the FedAvg mean of the uploads (``"fedavg"``, FedTAD's choice).

**Heterogeneous models** (a model list such as ``hetero``,
:mod:`fglcore.models.model_lists`; O-pFGL's Tables 3/11, where "only FedTAD,
FedSpray, DENSE and Co-Boost can run"). *A reading, not stated by the
paper*, which does not say how it ran them: the natural extension of
data-free ensemble distillation to clients of different architectures.

* The teachers are the clients' own uploaded models, each rebuilt on the
  server with its client's architecture
  (:func:`~fglcore.models.build_client_model`); the ensemble is unchanged.
* The server distils the ensemble into **one student per client
  architecture** (:meth:`~fglcore.algorithms.base.Algorithm.architecture_groups`:
  clients whose list entries are equal share one, e.g. ``hetero``'s clients
  0 and 5, both SGC K=2): a model of that architecture starting from the
  shared initialisation of the first client that has it
  (``student_init="initial"``; ``"fedavg"`` is refused, there is no mean of
  different architectures). The distillations run one after another in the
  order of each architecture's first client, each with a fresh generator and
  the same settings, drawing from the same seeded RNG, so a seed fixes them
  all.
* Each client downloads only its architecture's student
  (:meth:`DistillationServer.payload_for`) and fine-tunes it with the shared
  protocol, so every client ends with its own architecture. The ledger still
  holds one upload (its model) and one download (its student) per client.

With one model every client is in one group and the run is exactly the
single-student one above (the same numbers). The server's work grows with
the number of distinct architectures (nine for ``hetero``).

**Cost.** Each generator step runs every teacher and the student on a new
kNN graph, and each round's distillation runs the student once per pooled
graph. The models that take sparse operators (the GCNs) get the graph's
:func:`synthetic_graph` operators, built once per graph and shared by all of
them, forward and backward, and kept with a pooled graph: PyG's numbers bit
for bit (as the clients' trainers, ``FGL_GRAPH_FAST``), about 30% less CPU
for DENSE on Cora than re-normalising the edges in every layer of every
model (``benchmarks/full_projection.py``; ``projection_opfgl.csv``).
"""
from __future__ import annotations

import hashlib
import math
from typing import Any, Callable, ClassVar, Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from fglcore.algorithms.base import Trainer
from fglcore.algorithms.training import fast_graph_default, whole_graph_operators
from fglcore.algorithms.fedavg_ft import FedAvgFT, FineTuneClient, OneShotServer, search_local_epochs
from fglcore.checks import POSITIVE, Bounds
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.files import update_with_tensor
from fglcore.fl.channel import Channel
from fglcore.fl.checkpoint import RoundCheckpoint, set_rng_state
from fglcore.fl.engine import Client, Payload, RunResult, TrainingDiverged, evaluate_clients
from fglcore.fl.parameters import weighted_mean
from fglcore.models import MODELS, build_client_model
from fglcore.models.node_generator import NodeFeatureGenerator
from fglcore.models.operators import GraphOperators, kinds_needed

STUDENT_INITS = ("initial", "fedavg")
EPOCHS_SELECTIONS = ("final", "teachers")


def knn_graph(x: Tensor, k: int = 5) -> Tensor:
    """FedTAD's ``construct_graph``: each node links to the ``k`` rows of largest cosine similarity (itself
    among them, its similarity being 1), the links are made undirected, and every node keeps one self-loop.

    PyG's ``knn_graph`` needs ``torch-cluster``; this is the dense version, enough for a few hundred
    generated nodes. Ties go to the lower index (``torch.topk`` on CPU). No gradient flows through the edges.
    Shapes: ``x`` :math:`(n, F)` -> ``edge_index`` :math:`(2, E)`, sorted by source then target.
    """
    n = x.size(0)
    if not 1 <= k <= n:
        raise ValueError(f"knn_graph: k must be between 1 and the number of nodes ({n}), got {k}")
    with torch.no_grad():
        unit = F.normalize(x.detach(), p=2, dim=1)
        nearest = (unit @ unit.t()).topk(k, dim=1).indices
        adj = torch.zeros(n, n, dtype=torch.bool, device=x.device)
        adj[torch.arange(n, device=x.device).repeat_interleave(k), nearest.reshape(-1)] = True
        adj |= adj.t().clone()
        adj.fill_diagonal_(True)
        return adj.nonzero().t().contiguous()


def uploads_fingerprint(updates: Mapping[int, Payload]) -> str:
    """A sha256 (hex) of every client's upload (names, dtypes, shapes and bytes, in client order): equal for the
    same teachers, so a saved distillation is resumed only for the uploads it was distilled from."""
    digest = hashlib.sha256()
    for cid in sorted(updates):
        for name, value in sorted(updates[cid].items()):
            update_with_tensor(digest, f"{cid}/{name}", value)
    return digest.hexdigest()


def kd_divergence(student_logits: Tensor, teacher_logits: Tensor, temperature: float,
                  reduction: str = "batchmean") -> Tensor:
    """:math:`T^2\\,\\mathrm{KL}(\\mathrm{softmax}(t/T)\\,\\|\\,\\mathrm{softmax}(s/T))` (Hinton et al. 2015), the
    ``kldiv`` of both official codes: ``reduction="batchmean"`` averages over nodes, ``"none"`` keeps the
    per-class terms (their ``dense_kldiv``)."""
    t = temperature
    return F.kl_div(F.log_softmax(student_logits / t, dim=1), F.softmax(teacher_logits / t, dim=1),
                    reduction=reduction) * (t * t)


class BatchNormStatistics:
    """DeepInversion's feature-statistics loss (Yin et al., CVPR 2020, Eq. 8), the :math:`L_{BN}` of DENSE
    (Eq. 4) and Co-Boost: for every ``BatchNorm1d`` of the teachers,
    :math:`\\|\\mu(h)-\\mu_{BN}\\|_2+\\|\\sigma^2(h)-\\sigma^2_{BN}\\|_2` over the nodes of the last forward pass
    (``DeepInversionHook``). Models without batch normalisation (the default GCN) give 0."""

    def __init__(self, models: Sequence[nn.Module]):
        self.terms: list[Tensor] = []
        self.handles = [m.register_forward_hook(self._hook) for model in models for m in model.modules()
                        if isinstance(m, nn.BatchNorm1d)]

    def _hook(self, module: nn.BatchNorm1d, inputs: tuple[Tensor, ...], output: Tensor) -> None:
        h = inputs[0]
        mean, var = h.mean(0), h.var(0, unbiased=False)
        self.terms.append(torch.norm(module.running_var - var, 2) + torch.norm(module.running_mean - mean, 2))

    def take(self) -> Tensor:
        """The summed loss of the forwards since the last call."""
        total = torch.stack(self.terms).sum() if self.terms else torch.zeros(())
        self.terms = []
        return total

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def synthetic_graph(models: Sequence[nn.Module], edge_index: Tensor, num_nodes: int,
                    dtype: torch.dtype = torch.float32) -> Tensor | GraphOperators:
    """What ``models`` propagate over on a synthetic graph: its sparse operators
    (:class:`~fglcore.models.operators.GraphOperators`, built once and shared by every teacher and the student,
    forward and backward), or ``edge_index`` when no model can use them or ``FGL_GRAPH_FAST`` is off.

    The operators give PyG's numbers bit for bit (:mod:`fglcore.models.operators`; ``tests/test_fast_graph.py``),
    as in the clients' trainers (:class:`~fglcore.algorithms.training.NodeTrainer`): only the cost changes. A
    GCN layer on an ``edge_index`` re-normalises the graph (``gcn_norm``) at every call, i.e. once per layer and
    per model, eleven models and two layers for each generator step; here once per graph.
    """
    if not fast_graph_default():
        return edge_index
    kinds = kinds_needed(m for m in models if getattr(m, "accepts_graph_operators", False))
    if not kinds:
        return edge_index
    return whole_graph_operators(edge_index, num_nodes, kinds, dtype)


def on_graph(model: nn.Module, x: Tensor, graph: Tensor | GraphOperators) -> Tensor:
    """``model(x, graph)``, with the graph's ``edge_index`` for a model that takes no sparse operators."""
    if isinstance(graph, GraphOperators) and not getattr(model, "accepts_graph_operators", False):
        return model(x, graph.edge_index)
    return model(x, graph)


class SyntheticGraph:
    """One pooled synthetic graph: features, kNN edges, the generator's classes, the teachers' logits, and
    ``graph``, what the models propagate over (:func:`synthetic_graph`; by default the edges)."""

    def __init__(self, x: Tensor, edge_index: Tensor, y: Tensor, teacher_logits: Tensor,
                 graph: Tensor | GraphOperators | None = None):
        self.x, self.edge_index, self.y = x, edge_index, y
        self.teacher_logits = teacher_logits  # (K, n, C): one row block per client model
        self.graph = edge_index if graph is None else graph
        self._kept: tuple[Tensor, Tensor] | None = None

    @classmethod
    def with_kept_forward(cls, x: Tensor, edge_index: Tensor, y: Tensor, graph: Tensor | GraphOperators,
                          teachers: Sequence[nn.Module]) -> "SyntheticGraph":
        """A pooled graph whose teacher logits are those of its kept forward (:meth:`kept_teacher_forward`),
        computed now: Co-Boost's ODS later asks that forward for gradients in ``x``."""
        kept = teacher_forward_on_copy(teachers, x, edge_index if graph is None else graph)
        pooled = cls(x, edge_index, y, kept[1].detach(), graph)
        pooled._kept = kept
        return pooled

    def kept_teacher_forward(self, teachers: Sequence[nn.Module]) -> tuple[Tensor, Tensor]:
        """``(leaf, logits)``: a copy of ``x`` that requires a gradient and the teachers' stacked logits on it,
        their autograd graph kept with this pooled graph for later gradients in ``x`` (``retain_graph=True``).

        Computed at the first call, then returned as is: the features and the (frozen) teachers do not change
        while the graph is pooled, so Co-Boost's ODS, which asks every round for a gradient in ``x`` with new
        output weights, runs only the backward pass (:meth:`CoBoostServer.hard_pool
        <fglcore.algorithms.coboost.CoBoostServer.hard_pool>`). Only the teachers of the first call are used.
        """
        if self._kept is None:
            self._kept = teacher_forward_on_copy(teachers, self.x, self.graph)
        return self._kept


def teacher_forward_on_copy(teachers: Sequence[nn.Module], x: Tensor,
                            graph: Tensor | GraphOperators) -> tuple[Tensor, Tensor]:
    """``(leaf, logits)``: a copy of ``x`` that requires a gradient, and :func:`teacher_logits` on it with their
    autograd graph (what :meth:`SyntheticGraph.kept_teacher_forward` keeps)."""
    leaf = x.detach().requires_grad_(True)
    return leaf, teacher_logits(teachers, leaf, graph)


def teacher_logits(teachers: Sequence[nn.Module], x: Tensor, graph: Tensor | GraphOperators) -> Tensor:
    """Every teacher's logits, stacked: :math:`(K, n, C)` (eval mode; differentiable in ``x``); ``graph`` the
    ``edge_index`` or the graph's :func:`synthetic_graph` operators."""
    return torch.stack([on_graph(t, x, graph) for t in teachers])


def ensemble(logits: Tensor, weights: Tensor | None = None) -> Tensor:
    """The ensemble's logits from stacked teacher logits :math:`(K, n, C)`: the mean (DENSE's ``Ensemble_A``),
    or with ``weights`` :math:`w` the weighted mean :math:`\\sum_k w_k f_k / \\sum_k w_k` (Co-Boost's
    ``WEnsemble``, Eq. 3)."""
    if weights is None:
        return logits.mean(0)
    return (weights.view(-1, 1, 1) * logits).sum(0) / weights.sum()


def disjoint_union(graphs: Sequence[SyntheticGraph]) -> tuple[Tensor, Tensor, list[int]]:
    """Features and edges of the pooled graphs as one graph (no edge between them), and their sizes."""
    sizes = [g.x.size(0) for g in graphs]
    offsets = torch.tensor([0, *sizes[:-1]]).cumsum(0).tolist()
    x = torch.cat([g.x for g in graphs])
    edge_index = torch.cat([g.edge_index + o for g, o in zip(graphs, offsets)], dim=1)
    return x, edge_index, sizes


class DistillationServer(OneShotServer):
    """Receives every client model once, distils their ensemble into one student per client architecture
    (:meth:`distill`, the method's), sends each client its architecture's student once.

    ``initials[cid]`` is client ``cid``'s shared initial ``state_dict`` (with one model, the same for every
    client), ``model_factory(cid)`` builds a fresh, uncached model of client ``cid``'s architecture, and
    ``groups`` lists ``(label, client ids)`` per distinct architecture
    (:meth:`~fglcore.algorithms.base.Algorithm.architecture_groups`). ``students`` holds each group's distilled
    ``state_dict``; ``parameters`` the first group's (with one model: the one student every client gets).
    """

    def __init__(self, initials: Sequence[Mapping[str, Tensor]], model_factory: Callable[[int], nn.Module],
                 groups: Sequence[tuple[str, Sequence[int]]], options: Mapping[str, Any], num_features: int,
                 num_classes: int):
        self.groups = [(label, list(members)) for label, members in groups]
        self.initials = [dict(state) for state in initials]
        super().__init__(self.initials[self.groups[0][1][0]])
        self.group_of = {cid: g for g, (_, members) in enumerate(self.groups) for cid in members}
        self.model_factory = model_factory
        self.options = dict(options)
        self.num_features = num_features
        self.num_classes = num_classes
        self.students: list[dict[str, Tensor]] = []
        self.report: dict[str, Any] = {}
        self.progress: RoundCheckpoint | None = None  # where aggregate() saves the students distilled so far

    def aggregate(self, updates: Mapping[int, Payload], weights: Mapping[int, float], round: int) -> None:
        """One distillation per architecture, in the order of :attr:`groups`, each with a fresh generator and
        every client's model as teacher; a model list's report lists them under ``"students"``.

        With :attr:`progress` set, the students distilled so far are saved after each architecture but the
        last, and a run interrupted between two saves resumes after the last one saved
        (:meth:`resume_students`): the same numbers as a run that was not interrupted."""
        teachers = self.teachers_from(updates)
        key = uploads_fingerprint(updates)
        self.students, reports = self.resume_students(key)
        for label, members in self.groups[len(self.students):]:
            student = self.initial_student(updates, weights, members)
            generator = NodeFeatureGenerator(self.options["noise_dim"], self.num_classes, self.num_features)
            self.distill(teachers, student, generator.to(next(student.parameters()).device))
            self.students.append({k: v.detach().clone() for k, v in student.state_dict().items()})
            reports.append({"architecture": label, "clients": list(members), **self.report})
            if self.progress is not None and len(self.students) < len(self.groups):
                self.progress.save({"distillation": {"uploads": key, "students": self.students, "reports": reports}})
        self.parameters = self.students[0]
        if len(self.groups) > 1:
            self.report = {"students": reports}

    def resume_students(self, key: str) -> tuple[list[dict[str, Tensor]], list[dict[str, Any]]]:
        """The students and reports that :attr:`progress` saved for the uploads fingerprinted ``key``, with the
        random states of that moment restored; none (and the random states untouched) when nothing was saved
        for these uploads (another ``E`` of the grid, other code, no file)."""
        if self.progress is None:
            return [], []
        state = self.progress.load(restore_rng=False) or {}
        saved = state.get("distillation")
        if saved is None or saved.get("uploads") != key:
            return [], []
        set_rng_state(state["rng"])
        return list(saved["students"]), list(saved["reports"])

    def payload_for(self, client: Client, round: int) -> Payload | None:
        """Nothing before the upload; then the student of the client's own architecture."""
        if round == 1:
            return None
        return dict(self.students[self.group_of[client.cid]])

    def teachers_from(self, updates: Mapping[int, Payload]) -> list[nn.Module]:
        """The uploaded client models, each of its client's architecture, in client order, in eval mode and
        frozen."""
        teachers = []
        for cid in sorted(updates):
            model = self.model_factory(cid)
            model.load_state_dict(updates[cid])
            teachers.append(model.eval().requires_grad_(False))
        return teachers

    def initial_student(self, updates: Mapping[int, Payload], weights: Mapping[int, float],
                        members: Sequence[int] | None = None) -> nn.Module:
        """The student of the architecture of ``members`` (default: the first group) before distillation: the
        shared initialisation of its first client, or (one model only) the FedAvg mean of every upload
        (``student_init``)."""
        first = (self.groups[0][1] if members is None else members)[0]
        student = self.model_factory(first)
        state = dict(self.initials[first])
        if self.options["student_init"] == "fedavg":
            if len(self.groups) > 1:
                raise ValueError("student_init='fedavg' needs one architecture on every client")
            order = sorted(updates)
            names = [n for n, _ in student.named_parameters()]
            state.update(weighted_mean([{n: updates[c][n] for n in names} for c in order],
                                       [weights[c] for c in order]))
        student.load_state_dict(state)
        return student

    def distill(self, teachers: list[nn.Module], student: nn.Module, generator: NodeFeatureGenerator
                ) -> list["SyntheticGraph"]:
        """Train ``student`` (in place) from ``teachers`` with ``generator``; return the pool of synthetic
        graphs (the method's)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement distill")

    # -- pieces both methods use ------------------------------------------------------------------------

    def start_synthesis(self, generator: NodeFeatureGenerator, student: nn.Module, device: torch.device,
                        sort_targets: bool) -> tuple[Tensor, Tensor, torch.optim.Optimizer]:
        """A round's fresh start: the generator re-initialised (std 0.02) and training, the student frozen; the
        noise ``z`` (learnable), the uniform class targets ``c`` and one Adam over both (betas 0.5, 0.999)."""
        o = self.options
        generator.reset_parameters(std=0.02)
        generator.train()
        student.eval().requires_grad_(False)
        z = torch.randn(o["synthesis_size"], o["noise_dim"], device=device, requires_grad=True)
        c = uniform_targets(o["synthesis_size"], self.num_classes, sort=sort_targets).to(device)
        optimizer = torch.optim.Adam([{"params": generator.parameters()}, {"params": [z]}], o["generator_lr"],
                                     betas=(0.5, 0.999))
        return z, c, optimizer

    def generator_step_graph(self, generator: NodeFeatureGenerator, z: Tensor, c: Tensor,
                             models: Sequence[nn.Module] = ()) -> tuple[Tensor, Tensor, Tensor | GraphOperators]:
        """Generated features (with gradient), their kNN edges, and what ``models`` (the teachers and the
        student) propagate over (:func:`synthetic_graph`)."""
        x = generator(z, c)
        edge_index = knn_graph(x, self.options["knn_k"])
        return x, edge_index, synthetic_graph(models, edge_index, x.size(0), x.dtype)

    def kd_step(self, student: nn.Module, optimizer: torch.optim.Optimizer, x: Tensor,
                graph: Tensor | GraphOperators, target_logits: Tensor, clip: float | None) -> float:
        """One optimiser step of the student on :func:`kd_divergence` to the ensemble's logits (``graph``: the
        edges or their :func:`synthetic_graph` operators), its gradient norm clipped at ``clip`` (None: not).

        Raises :class:`~fglcore.fl.engine.TrainingDiverged` when the loss is not finite: the student has
        diverged, and fine-tuning it would store a broken run."""
        student.train()
        optimizer.zero_grad(set_to_none=True)
        loss = kd_divergence(on_graph(student, x, graph), target_logits, self.options["kd_temperature"])
        if not torch.isfinite(loss):
            clipped = "unclipped" if clip is None else f"clipped at norm {clip}"
            raise TrainingDiverged(
                f"the server's distillation diverged (KD loss {float(loss.detach())}, the student's gradient "
                f"{clipped}); lower algorithm_options.kd_lr, or clip the gradient (DENSE: algorithm_options.kd_clip)")
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(student.parameters(), max_norm=clip)
        optimizer.step()
        return float(loss.detach())


class DistillClient(FineTuneClient):
    """A fine-tuning client whose upload and download are the whole model (``state_dict``: parameters and
    buffers), once each."""

    def receive(self, payload: Payload, round: int) -> None:
        self.model.load_state_dict(payload)

    def upload(self) -> Payload:
        return {k: v.detach() for k, v in self.model.state_dict().items()}


SHARED_DEFAULTS: dict[str, Any] = {
    "student_init": "initial",
    "epochs_selection": "final",
    "knn_k": 5,
    "noise_dim": 32,
    "epochs": 200,
    "generator_steps": 30,
    "generator_lr": 1e-3,
    "synthesis_size": 256,
    "ce_weight": 1.0,
    "bn_weight": 0.0,
    "adv_weight": 1.0,
    "adv_temperature": 1.0,
    "kd_lr": 0.01,
    "kd_momentum": 0.9,
    "kd_weight_decay": 0.0,
    "kd_temperature": 1.0,
}
"""Options of both methods; each module sets its official code's values."""

NON_NEGATIVE_REAL = Bounds(minimum=0)
SHARED_BOUNDS: dict[str, Bounds] = {
    **dict.fromkeys(("knn_k", "noise_dim", "epochs", "generator_steps", "synthesis_size"), POSITIVE),
    **dict.fromkeys(("generator_lr", "kd_lr", "kd_temperature", "adv_temperature"), Bounds(above=0)),
    **dict.fromkeys(("ce_weight", "bn_weight", "adv_weight", "kd_weight_decay"), NON_NEGATIVE_REAL),
    "kd_momentum": Bounds(minimum=0, below=1),
}


class EnsembleDistillation(FedAvgFT):
    """The shared one-shot protocol of :mod:`fglcore.algorithms.ensemble_distillation`; not registered."""

    server_class: ClassVar[type[DistillationServer]] = DistillationServer
    distillation_progress: RoundCheckpoint | None = None  # set by run(); the servers it builds save to it
    secure_aggregation_unsupported = ("the server distils the ensemble of the individual client models, so it "
                                      "must see each one")
    default_options: ClassVar[dict[str, Any]] = {
        **{k: v for k, v in FedAvgFT.default_options.items() if k != "share"}, **SHARED_DEFAULTS}
    option_choices: ClassVar[dict[str, tuple[str, ...]]] = {"student_init": STUDENT_INITS,
                                                             "epochs_selection": EPOCHS_SELECTIONS}
    option_bounds: ClassVar[dict[str, Bounds]] = {**FedAvgFT.option_bounds, **SHARED_BOUNDS}

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> dict[str, Any]:
        merged = super().check_options(options)
        if merged["knn_k"] > merged["synthesis_size"]:
            raise ConfigError(f"algorithm_options.knn_k: {merged['knn_k']} is not accepted; accepted: at most "
                              f"synthesis_size ({merged['synthesis_size']}), the nodes of a synthetic graph")
        return merged

    @classmethod
    def check_config(cls, config: ExperimentConfig) -> None:
        super().check_config(config)
        spec = MODELS.get(config.model)
        if spec.is_list and cls.check_options(config.algorithm_options)["student_init"] == "fedavg":
            raise ConfigError(
                f"algorithm_options.student_init: 'fedavg' is not accepted with the model list {config.model!r} "
                f"({spec.describe_clients()}): the FedAvg mean of the uploads needs one architecture on every "
                f"client; accepted: 'initial' (each architecture's student starts from its first client's "
                f"initialisation)")

    def server_model(self, cid: int = 0) -> nn.Module:
        """A fresh, uncached model of client ``cid``'s architecture (a teacher or a student on the server);
        building it leaves the global RNG alone."""
        c = self.config
        return build_client_model(c.model, cid, int(self.federation.num_features), int(self.federation.num_classes),
                                  hidden_channels=c.hidden, num_layers=c.num_layers, dropout=c.dropout, task="node",
                                  cached=False, seed=c.seed).to(self.device)

    def build(self, channel: Channel) -> tuple[DistillationServer, list[Client]]:
        global_model, models = self.init_models()
        if global_model is None:  # a model list: each client's own initialisation, kept before any training
            initials = [{k: v.detach().clone().to(self.device) for k, v in m.state_dict().items()} for m in models]
        else:
            initial = {k: v.detach().clone().to(self.device) for k, v in global_model.state_dict().items()}
            initials = [initial] * len(models)
        server = self.server_class(initials, self.server_model, self.architecture_groups(), self.options,
                                   int(self.federation.num_features), int(self.federation.num_classes))
        server.progress = self.distillation_progress
        clients = [self.make_client(cid, self.make_trainer(model, cid), [n for n, _ in model.named_parameters()])
                   for cid, model in enumerate(models)]
        return server, clients

    def make_client(self, cid: int, trainer: Trainer, shared: Sequence[str]) -> DistillClient:
        return DistillClient(cid, trainer, self.local_epochs, shared, int(self.clients_data[cid].num_nodes))

    def run_one(self, epochs: int, channel: Channel | None = None):
        result = super().run_one(epochs, channel)
        result.extras["distillation"] = dict(self.server.report)
        return result

    def run(self, channel: Channel | None = None, *, callbacks: Sequence = (),
            checkpoint: RoundCheckpoint | None = None) -> RunResult:
        """The one-shot protocol; with ``epochs_selection="teachers"`` the ``E`` of the grid whose local models
        validate best (:meth:`teacher_validation`; ties go to the smaller ``E``), then one run with it.

        ``checkpoint`` keeps the server's progress through the distillations, one student per architecture
        (:meth:`DistillationServer.aggregate`): with a model list a run takes hours (O-pFGL's CiteSeer
        Co-Boost, nine architectures, about four CPU hours), longer than a machine may be held, and an
        interrupted run then loses at most one architecture's distillation. One distillation's progress is
        kept, the latest: under ``epochs_selection="final"`` a run interrupted at one ``E`` of the grid
        recomputes it. The round loop has one round, so it has no checkpoint of its own to keep."""
        self.distillation_progress = checkpoint
        grid = self.options["local_epochs_grid"]
        if self.options["epochs_selection"] == "final" or len(grid) == 1:
            return super().run(channel, callbacks=callbacks)
        teachers = [{"local_epochs": e, "teacher_val_accuracy": self.teacher_validation(e)} for e in grid]
        best = max(teachers, key=lambda row: (-math.inf if math.isnan(row["teacher_val_accuracy"])
                                              else row["teacher_val_accuracy"], -row["local_epochs"]))
        result = search_local_epochs(self, self.run_one, [best["local_epochs"]], channel)
        result.extras["teacher_search"] = teachers
        return result

    def teacher_validation(self, epochs: int) -> float:
        """The aggregated validation accuracy (``config.metric_aggregation``) of the clients' models after
        ``epochs`` local epochs from the run's seeded initialisation: the teachers the run with ``E = epochs``
        uploads. Nothing is sent; the run itself builds afresh from the seed."""
        self._epochs = epochs
        _, clients = self.build(Channel())
        for client in clients:
            client.fit(1)
        try:
            metrics, _ = evaluate_clients(clients, self.num_classes, self.config.metric_aggregation)
        except TrainingDiverged:
            return math.nan  # a diverged candidate is never chosen
        return metrics.get("val_accuracy", math.nan)


def uniform_targets(n: int, num_classes: int, sort: bool) -> Tensor:
    """``n`` classes drawn uniformly (``torch.randint``), sorted when ``sort`` (DENSE's ``targets.sort()``)."""
    targets = torch.randint(0, num_classes, (n,))
    return targets.sort()[0] if sort else targets
