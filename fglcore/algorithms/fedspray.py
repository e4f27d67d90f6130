"""FedSpray: federated graph learning with structure proxy alignment.

Fu, Chen, Zhang, Chen and Li, "Federated Graph Learning with Structure Proxy
Alignment", KDD 2024 (Algorithm 1). Each client keeps a **personalized GNN**
:math:`f(\\theta^{(k)})` (``config.model``; the paper uses ``gcn``, ``sgc`` and
``sage``, any node model works; under a model list such as ``"hetero"``,
O-pFGL's Tables 3/11, each client its own architecture) that is never sent. All clients train one
global **feature-structure encoder** :math:`g(\\omega)`
(:class:`~fglcore.models.fedspray.FeatureStructureEncoder`: embedding :math:`g_e`, classifier
:math:`g_p`, projector :math:`g_q`, one linear layer each) and global
class-wise **structure proxies** :math:`\\mathbf S\\in\\mathbb R^{C\\times d_s}`.

One round of client :math:`k` (Algorithm 1, ``LocalUpdate``):

1. take in the global :math:`\\omega_{r-1}` and :math:`\\mathbf S_{r-1}`;
2. *soft targets* (lines 2-5, Eqs. 8-10): :math:`e_i=g_e(x_i)`,
   :math:`q_i=\\mathrm{softmax}(g_q(e_i))`; a labeled node's proxy is its
   class's global proxy :math:`s_{y_i}`, an unlabeled node's is
   :math:`q_i^\\top\\mathbf S`; :math:`p_i=\\mathrm{softmax}(g_p(e_i+s_i))`
   (``Combine`` = addition);
3. *Phase 1* (lines 6-11): ``config.local_epochs`` epochs of the GNN on
   Eq. 7, :math:`\\mathcal L_G=\\mathrm{CE}` on the training nodes (Eq. 5)
   :math:`+\\lambda_1\\,\\frac1{|\\mathcal V|}\\sum_i\\mathrm{KL}(p_i\\Vert\\hat y_i)` (Eq. 6).
   The cross-entropy and the loop are :class:`~fglcore.algorithms.training.NodeTrainer`'s;
   the distillation term enters through its ``extra_loss`` hook
   (:func:`gnn_distillation_term`);
4. *Phase 2* (lines 12-22): the GNN's outputs :math:`\\hat y` (eval mode,
   computed once) teach the encoder and the labeled nodes' proxies for
   ``config.local_epochs`` epochs of Eq. 11, :math:`\\mathcal L_F=\\mathrm{CE}(y,q)`
   (Eq. 12) :math:`+\\lambda_2\\,\\mathrm{KL}(\\hat y\\Vert p)` (Eq. 13), both on
   the training nodes (:func:`encoder_objective`); the encoder and the
   proxies use the config's optimizer (Adam in the paper), the encoder with
   ``config.lr``, the proxies with their own ``proxy_lr``;
5. upload :math:`\\omega^{(k)}_r` and :math:`\\mathbf S^{(k)}_r`, whose row
   :math:`j` is the mean proxy of the client's class-:math:`j` training
   nodes (line 23; a zero row for a class it lacks).

The server (:class:`FedSprayServer`) averages the encoder with FedAvg
weights (Eq. 14, :func:`~fglcore.fl.parameters.weighted_mean`) and aligns
each class proxy with the clients' within-client class ratios
:math:`a^{(k)}_j` (Eq. 15, :func:`align_proxies`): a small client whose
majority class is :math:`j` outweighs a large one where :math:`j` is rare.
The FedAvg weight is the number of training nodes (the official code's
choice; with the per-client 40/30/30 split it is proportional to the
paper's :math:`N^{(k)}`). Clients deploy, and are evaluated with, their
personalized GNN only.

Communication, all through the channel: the server sends the encoder
(``embedding.*``, ``classifier.*``, ``projector.*``) and ``proxies``
:math:`[C, d_s]`; a client uploads the same names plus, once (first upload),
``class_ratios`` :math:`[C]` -- the :math:`a^{(k)}` Eq. 15 needs (the paper
leaves how the server learns them open; the code reads them directly). No
node feature, embedding, per-node proxy or GNN parameter is ever sent.

Options (``config.algorithm_options``). Defaults follow the paper; where
the paper is silent they follow the official code (github.com/xbfu/FedSpray
at d3e591a); every code behaviour that departs from the paper is an option:

* ``lambda1`` (1.0): :math:`\\lambda_1` of Eq. 7. The paper's §5.1.3 states 5,
  the official ``main.py`` runs 1.0 (``lambda_1 = 5`` is dead code), and the
  authors' λ1 sweep matches Table 2 at 1; ``lambda1=0`` is Local training
  (Fig. 4 sweeps it);
* ``lambda2`` (1.0): :math:`\\lambda_2` of Eq. 11 (paper and code);
* ``proxy_dim`` (64): :math:`d_s`, the width of :math:`g_e` and of each proxy
  (Fig. 5 sweeps it);
* ``proxy_lr`` (0.02): learning rate of the structure proxies (paper and
  code; they use the config's optimizer type, without weight decay);
* ``zero_proxies`` (False): the ablation "FedSpray (S = 0)" of Table 3 --
  every node's proxy is the zero vector throughout training, so the soft
  targets depend on features only; proxies are neither trained nor sent;
* ``zero_global_proxies`` (False): the other reading of Table 3's words,
  "we set class-wise structure proxies S as 0 consistently during training"
  (§5.3): only the class-wise :math:`\\mathbf S` is zero -- unlabeled nodes'
  proxies :math:`q_i^\\top\\mathbf S` are zero and labeled nodes' restart
  from :math:`s_{y_i} = 0` (``labeled_proxies="global"``) -- while the labeled
  nodes' proxies are still trained with the encoder (Alg. 1 line 20), so
  the encoder learns with trained proxies and is asked for soft targets
  without them; nothing of :math:`\\mathbf S` is sent. Excludes
  ``zero_proxies``. Added after Table 3's runs were stored (a late option);
* ``labeled_proxies``: ``"global"`` (default, paper: Alg. 1 line 4 and §4.2.1)
  -- every round each labeled node's proxy restarts from its class's global
  proxy; ``"persistent"`` (code) -- per-node proxies persist across rounds,
  start at ``local_proxy_init`` (0.1 in the code) and are never reset from
  :math:`\\mathbf S`, which then reaches only unlabeled nodes;
* ``global_proxy_scale`` (0.01): the initial global proxies are
  :math:`s_c = 0.01\\,c\\,\\mathbf 1` (code; the paper does not say);
* ``kd_nodes``: ``"all"`` (default, Eq. 6) or ``"confident"`` (code):
  training nodes plus unlabeled nodes whose projector confidence
  :math:`\\max_c q_{ic}` exceeds ``confidence_threshold`` (0.7 in the code);
* ``projector_from``: where the local projector :math:`g_q` starts each
  round: ``"projector"`` (default, paper: the global :math:`g_q`) or
  ``"classifier"`` (code: ``classifier2.load_state_dict(classifier.state_dict())``,
  the global :math:`g_p`). The teacher's :math:`q` is computed with the
  global :math:`g_q` either way, as in the code;
* ``gnn_init``: ``"pyg"`` (default; PyG's initialisation, shared with every
  other algorithm here) or ``"official"`` (code: every GNN parameter
  :math:`U[0,1)`);
* ``encoder_init``: ``"pytorch"`` (default; ``nn.Linear``'s
  :math:`U(\\pm 1/\\sqrt{\\text{in}})`) or ``"official"`` (code's ``MLPLayer``:
  weights and biases :math:`U(\\pm 1/\\sqrt{\\text{out}})`);
* ``reset_optimizer`` (False): clear every optimizer's state each round; by
  default Adam states persist across rounds, as in the code;
* ``one_shot`` (``{}``: off): O-pFGL's one-round protocol for its baselines
  (Yan et al., arXiv 2411.11304, Sec. 5.1 and App. A.2: one round, local
  epochs tuned from 1 to 100, then local fine-tuning), as
  :mod:`fglcore.algorithms.fedavg_ft` runs it for FedAvg: a mapping with the
  keys of :data:`~fglcore.algorithms.fedavg_ft.ONE_SHOT_OPTIONS`
  (``local_epochs_grid``, ``ft_lr``, ``max_epochs``, ``eval_every``,
  ``patience``; missing keys take ``fedavg_ft``'s defaults). For every
  ``E`` of the grid, one FedSpray round of ``E`` local epochs, then each
  client fine-tunes its personalised GNN with cross-entropy and O-pFGL's
  early stopping; the ``E`` with the best validation accuracy is reported.
  ``config.rounds`` must be 1.

Settings the code fixes and the config carries: no dropout and no weight
decay (``dropout=0``, ``weight_decay=0``), lr 0.003, 5 local epochs, model
selection on the pooled validation loss (``selection_metric="val_loss"``),
pooled metrics (``metric_aggregation="micro"``). ``config.dropout`` acts on
the GNN only; the encoder has none.

Secure aggregation is not supported: Eq. 15 weights every class proxy by
per-client class ratios, which a masked sum of whole payloads (the only
aggregate :class:`~fglcore.fl.secure.SecureAggregator` reveals) cannot
express, and the ratios themselves would be sent in the clear.
``secure_aggregation=True`` raises :class:`~fglcore.config.ConfigError`.
"""
from __future__ import annotations

import copy
import dataclasses
from typing import Any, Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from fglcore.algorithms.base import Algorithm, TrainerClient, register_algorithm
from fglcore.algorithms.fedavg import FedAvgServer
from fglcore.algorithms.training import ExtraLoss, NodeTrainer, client_seed, make_optimizer
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.fl.channel import Channel
from fglcore.fl.engine import Client, Payload
from fglcore.fl.parameters import load_payload, module_payload, weighted_mean
from fglcore.models.fedspray import ENCODER_INITS, FeatureStructureEncoder
from fglcore.models.sparse_input import accept_constant_features, constant_features

PROXIES = "proxies"
CLASS_RATIOS = "class_ratios"
LABELED_PROXIES = ("global", "persistent")
KD_NODES = ("all", "confident")
PROJECTOR_SOURCES = ("projector", "classifier")
GNN_INITS = ("pyg", "official")


# -- losses -----------------------------------------------------------------------------------------


def distillation_loss(student_logits: Tensor, teacher_logits: Tensor) -> Tensor:
    """Mean over rows of :math:`\\mathrm{KL}(\\mathrm{softmax}(t)\\Vert\\mathrm{softmax}(s))`, temperature 1.

    The KD terms of Eqs. 6 and 13 (the code's ``KLDivLoss(reduction="batchmean",
    log_target=True)``); the teacher is not differentiated.
    """
    return F.kl_div(
        F.log_softmax(student_logits, dim=-1),
        F.log_softmax(teacher_logits.detach(), dim=-1),
        reduction="batchmean",
        log_target=True,
    )


def gnn_distillation_term(
    soft_target_logits: Tensor, lambda1: float, nodes: Tensor | None = None
) -> ExtraLoss | None:
    """The :math:`\\lambda_1\\mathcal L_{G\\_KD}` part of Eq. 7 as a trainer ``extra_loss``.

    Returns ``output -> lambda1 * distillation_loss(output[nodes], soft_target_logits[nodes])``
    (all nodes when ``nodes`` is ``None``, Eq. 6), or ``None`` when
    ``lambda1 == 0``, so the GNN's loss is then exactly the trainer's
    cross-entropy (Eq. 5) and FedSpray's GNN trains as Local.
    """
    if lambda1 == 0:
        return None
    teacher = soft_target_logits.detach() if nodes is None else soft_target_logits.detach()[nodes]

    def distillation_term(output: Tensor) -> Tensor:
        student = output if nodes is None else output[nodes]
        return lambda1 * distillation_loss(student, teacher)

    return distillation_term


def encoder_objective(
    soft_target_logits: Tensor, projector_logits: Tensor, labels: Tensor, gnn_logits: Tensor, lambda2: float
) -> Tensor:
    """Eq. 11 on the labeled nodes.

    :math:`\\mathrm{CE}(y, q)` (Eq. 12) :math:`+\\lambda_2\\,\\mathrm{KL}(\\hat y\\Vert p)` (Eq. 13),
    with :math:`\\hat y` the GNN's (constant) outputs.
    """
    return F.cross_entropy(projector_logits, labels) + lambda2 * distillation_loss(soft_target_logits, gnn_logits)


# -- structure proxies -----------------------------------------------------------------------------


def class_ratios(labels: Tensor, num_classes: int) -> Tensor:
    """:math:`a^{(k)}`: the share of each class among a client's labeled nodes (Eq. 15); zeros if none."""
    counts = torch.bincount(labels.long(), minlength=num_classes).to(torch.float32)
    return counts / counts.sum().clamp(min=1.0)


def class_mean_proxies(node_proxies: Tensor, labels: Tensor, num_classes: int) -> Tensor:
    """:math:`\\mathbf S^{(k)}`: row :math:`j` is the mean proxy of the class-:math:`j` nodes (Alg. 1 line 23).

    A class with no node gets a zero row (its weight in Eq. 15 is zero anyway).
    """
    sums = node_proxies.new_zeros(num_classes, node_proxies.size(1)).index_add_(0, labels, node_proxies)
    counts = torch.bincount(labels, minlength=num_classes).clamp(min=1).to(node_proxies.dtype)
    return sums / counts.unsqueeze(1)


def align_proxies(client_proxies: Sequence[Tensor], client_ratios: Sequence[Tensor], previous: Tensor) -> Tensor:
    """Structure-proxy alignment, Eq. 15.

    :math:`s_j \\leftarrow \\sum_k \\frac{a^{(k)}_j}{a_j}\\, s^{(k)}_j` with :math:`a_j=\\sum_k a^{(k)}_j`.

    ``client_proxies[k]`` is client :math:`k`'s :math:`[C, d_s]` upload,
    ``client_ratios[k]`` its :math:`[C]` class ratios. A class no client
    has (:math:`a_j = 0`) keeps its ``previous`` proxy. Computed in
    float64, returned in ``previous``'s dtype and device.
    """
    if not client_proxies or len(client_proxies) != len(client_ratios):
        raise ValueError(
            f"align_proxies needs one ratio vector per client proxy matrix, got {len(client_proxies)} proxy "
            f"matrices and {len(client_ratios)} ratio vectors"
        )
    device = previous.device
    proxies = torch.stack([p.detach().to(device, torch.float64) for p in client_proxies])  # [K, C, d]
    ratios = torch.stack([a.detach().to(device, torch.float64) for a in client_ratios])  # [K, C]
    if proxies.shape[1:] != previous.shape or ratios.shape != proxies.shape[:2]:
        raise ValueError(
            f"shape mismatch: proxies {tuple(proxies.shape[1:])} and ratios {tuple(ratios.shape[1:])} per client, "
            f"global proxies {tuple(previous.shape)}"
        )
    total = ratios.sum(0)
    aligned = torch.einsum("kc,kcd->cd", ratios, proxies) / total.clamp(min=torch.finfo(torch.float64).tiny)[:, None]
    return torch.where(total[:, None] > 0, aligned, previous.to(torch.float64)).to(previous.dtype)


def initial_global_proxies(num_classes: int, proxy_dim: int, scale: float) -> Tensor:
    """:math:`s_c = \\text{scale}\\cdot c\\cdot\\mathbf 1` (the official ``server.py``; class 0 starts at zero)."""
    return scale * torch.arange(num_classes, dtype=torch.float32)[:, None].expand(num_classes, proxy_dim).clone()


# -- participants ----------------------------------------------------------------------------------


class FedSprayServer(FedAvgServer):
    """Holds the global encoder (FedAvg, Eq. 14) and the structure proxies (alignment, Eq. 15).

    ``proxies`` is ``None`` for the S = 0 ablation (nothing to align or send).
    The class ratios each client sends once are kept in :attr:`class_ratios`.
    """

    def __init__(self, encoder_parameters: Mapping[str, Tensor], proxies: Tensor | None):
        super().__init__(dict(encoder_parameters))
        self.proxies = None if proxies is None else proxies.detach().clone()
        self.class_ratios: dict[int, Tensor] = {}

    def payload_for(self, client: Client, round: int) -> Payload:
        payload = super().payload_for(client, round)
        if self.proxies is not None:
            payload[PROXIES] = self.proxies
        return payload

    def aggregate(self, updates: Mapping[int, Payload], weights: Mapping[int, float], round: int) -> None:
        order = list(updates)
        for cid in order:
            if CLASS_RATIOS in updates[cid]:
                self.class_ratios[cid] = updates[cid][CLASS_RATIOS]
        encoders = [{name: updates[cid][name] for name in self.parameters} for cid in order]
        self.apply_mean(weighted_mean(encoders, [weights[cid] for cid in order]), round)
        if self.proxies is None:
            return
        missing = [cid for cid in order if cid not in self.class_ratios]
        if missing:
            raise RuntimeError(f"clients {missing} sent structure proxies but never their class ratios (Eq. 15)")
        self.proxies = align_proxies(
            [updates[cid][PROXIES] for cid in order], [self.class_ratios[cid] for cid in order], self.proxies
        )


class FedSprayClient(TrainerClient):
    """A client of Algorithm 1: personalized GNN in :attr:`trainer`, local copies of the encoder and proxies.

    :attr:`labeled_proxies` holds :math:`s_i` of the training nodes (in
    ``trainer.train_idx`` order), the only per-node proxies that are trained;
    unlabeled nodes' proxies are recomputed from :math:`q` and the global
    proxies each round.
    """

    def __init__(
        self,
        cid: int,
        trainer: NodeTrainer,
        epochs: int,
        encoder: FeatureStructureEncoder,
        num_classes: int,
        options: Mapping[str, Any],
        config: ExperimentConfig,
    ):
        super().__init__(cid, trainer, epochs)
        self.options = dict(options)
        self.num_classes = num_classes
        device = trainer.device
        self.encoder = accept_constant_features(encoder.to(device))
        self.train_features = constant_features(trainer.x[trainer.train_idx])
        self.encoder_optimizer = make_optimizer(self.encoder.parameters(), config)
        self.use_proxies = not self.options["zero_proxies"]
        start = self.options["local_proxy_init"] if self.use_proxies else 0.0
        self.labeled_proxies = nn.Parameter(
            torch.full((trainer.num_train_samples, self.options["proxy_dim"]), float(start), device=device),
            requires_grad=self.use_proxies,
        )
        self.proxy_optimizer = (
            make_optimizer(
                [self.labeled_proxies], dataclasses.replace(config, lr=self.options["proxy_lr"], weight_decay=0.0)
            )
            if self.use_proxies
            else None
        )
        self.global_proxies: Tensor | None = (
            None if self.shares_proxies else torch.zeros(num_classes, self.options["proxy_dim"], device=device))
        self.class_ratios = class_ratios(trainer.y_train, num_classes).to(device)
        self._ratios_sent = False

    def __setstate__(self, state: dict) -> None:
        # A client loaded from a checkpoint holds new tensors: register its training features again.
        self.__dict__.update(state)
        constant_features(self.train_features)

    @property
    def shares_proxies(self) -> bool:
        """Whether this client uploads class proxies and receives :math:`\\mathbf S` (not under either S = 0);
        a client checkpointed before ``zero_global_proxies`` existed lacks the option and shares them."""
        return self.use_proxies and not self.options.get("zero_global_proxies", False)

    def receive(self, payload: Payload, round: int) -> None:
        load_payload(self.encoder, {name: value for name, value in payload.items() if name != PROXIES})
        if PROXIES in payload:
            self.global_proxies = payload[PROXIES].to(self.trainer.device)

    def fit(self, round: int) -> Payload:
        if self.options["reset_optimizer"]:
            self.trainer.reset_optimizer()
            for optimizer in (self.encoder_optimizer, self.proxy_optimizer):
                if optimizer is not None:
                    optimizer.state.clear()
        if self.use_proxies and self.options["labeled_proxies"] == "global":
            self.restart_labeled_proxies()
        soft_targets, kd_nodes = self.soft_targets()
        if self.options["projector_from"] == "classifier":
            load_payload(self.encoder.projector, module_payload(self.encoder.classifier))
        self.trainer.train_epochs(
            self.epochs, extra_loss=gnn_distillation_term(soft_targets, self.options["lambda1"], kd_nodes)
        )
        self.train_encoder(self.trainer.logits()[self.trainer.train_idx])
        return self.upload()

    def restart_labeled_proxies(self) -> None:
        """Alg. 1 line 4: each labeled node's proxy starts the round at its class's global proxy."""
        with torch.no_grad():
            self.labeled_proxies.copy_(self.require_global_proxies()[self.trainer.y_train])

    def require_global_proxies(self) -> Tensor:
        if self.global_proxies is None:
            raise RuntimeError(f"{self.name} has not received the global structure proxies")
        return self.global_proxies

    @torch.no_grad()
    def node_proxies(self, projector_probabilities: Tensor) -> Tensor:
        """:math:`s_i` of every node.

        Unlabeled nodes get :math:`q_i^\\top\\mathbf S` (§4.2.2), training nodes their labeled proxies.
        """
        n, d = projector_probabilities.size(0), self.labeled_proxies.size(1)
        if not self.use_proxies:
            return projector_probabilities.new_zeros(n, d)
        proxies = projector_probabilities @ self.require_global_proxies()
        proxies[self.trainer.train_idx] = self.labeled_proxies
        return proxies

    @torch.no_grad()
    def soft_targets(self) -> tuple[Tensor, Tensor | None]:
        """Logits of :math:`p_i` for every node from the received encoder (Alg. 1 lines 2-5), and the KD nodes.

        The KD nodes are ``None`` (all nodes, Eq. 6) or, with
        ``kd_nodes="confident"``, the training nodes plus the nodes whose
        projector confidence exceeds ``confidence_threshold``.
        """
        t = self.trainer
        embedding = self.encoder.embed(t.x)
        q = F.softmax(self.encoder.projector_logits(embedding), dim=-1)
        logits = self.encoder.soft_target_logits(embedding, self.node_proxies(q))
        if self.options["kd_nodes"] == "all":
            return logits, None
        reliable = q.max(dim=-1).values > self.options["confidence_threshold"]
        reliable[t.train_idx] = True
        return logits, reliable.nonzero().view(-1)

    def train_encoder(self, gnn_logits: Tensor) -> float:
        """Phase 2 (Alg. 1 lines 15-22): ``epochs`` full-batch steps of Eq. 11 on the encoder and labeled proxies."""
        t = self.trainer
        x, labels = self.train_features, t.y_train
        self.encoder.train()
        loss = torch.zeros((), device=t.device)
        for _ in range(self.epochs):
            self.encoder_optimizer.zero_grad(set_to_none=True)
            if self.proxy_optimizer is not None:
                self.proxy_optimizer.zero_grad(set_to_none=True)
            embedding = self.encoder.embed(x)
            loss = encoder_objective(
                self.encoder.soft_target_logits(embedding, self.labeled_proxies),
                self.encoder.projector_logits(embedding),
                labels,
                gnn_logits,
                self.options["lambda2"],
            )
            loss.backward()
            self.encoder_optimizer.step()
            if self.proxy_optimizer is not None:
                self.proxy_optimizer.step()
        return float(loss.detach())

    def upload(self) -> Payload:
        """The encoder, the class-mean proxies (Alg. 1 lines 23-24) and, the first time, the class ratios."""
        payload = module_payload(self.encoder)
        if self.shares_proxies:
            payload[PROXIES] = class_mean_proxies(self.labeled_proxies.detach(), self.trainer.y_train, self.num_classes)
            if not self._ratios_sent:
                payload[CLASS_RATIOS] = self.class_ratios
                self._ratios_sent = True
        return payload


@register_algorithm
class FedSpray(Algorithm):
    """FedSpray (Fu et al., KDD 2024, Algorithm 1); options in :mod:`fglcore.algorithms.fedspray`."""

    name = "fedspray"
    tasks = ("node",)
    default_options = {
        "lambda1": 1.0,
        "lambda2": 1.0,
        "proxy_dim": 64,
        "proxy_lr": 0.02,
        "zero_proxies": False,
        "zero_global_proxies": False,
        "labeled_proxies": "global",
        "local_proxy_init": 0.1,
        "global_proxy_scale": 0.01,
        "kd_nodes": "all",
        "confidence_threshold": 0.7,
        "projector_from": "projector",
        "gnn_init": "pyg",
        "encoder_init": "pytorch",
        "reset_optimizer": False,
        "one_shot": {},
    }
    option_choices = {
        "labeled_proxies": LABELED_PROXIES,
        "kd_nodes": KD_NODES,
        "projector_from": PROJECTOR_SOURCES,
        "gnn_init": GNN_INITS,
        "encoder_init": ENCODER_INITS,
    }
    late_options = ("zero_global_proxies",)
    citation = "Fu et al., Federated Graph Learning with Structure Proxy Alignment, KDD 2024"
    heterogeneous_models = True  # the GNN is never sent; only the encoder and the proxies are shared
    secure_aggregation_unsupported = (
        "its server aligns each class proxy with per-client class ratios (Eq. 15), "
        "which a masked sum of whole payloads cannot carry"
    )

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> dict[str, Any]:
        merged = super().check_options(options)
        for key in ("lambda1", "lambda2"):
            if merged[key] < 0:
                raise ConfigError(f"algorithm_options.{key}: must be >= 0, got {merged[key]}")
        if merged["proxy_dim"] < 1:
            raise ConfigError(f"algorithm_options.proxy_dim: must be >= 1, got {merged['proxy_dim']}")
        if merged["proxy_lr"] <= 0:
            raise ConfigError(f"algorithm_options.proxy_lr: must be > 0, got {merged['proxy_lr']}")
        if merged["zero_proxies"] and merged["zero_global_proxies"]:
            raise ConfigError("algorithm_options.zero_global_proxies: zero_proxies already sets every proxy to "
                              "zero; choose one of the two readings of S = 0")
        if merged["one_shot"]:
            from fglcore.algorithms.fedavg_ft import check_one_shot

            merged["one_shot"] = check_one_shot(merged["one_shot"], "one_shot")
        if not 0 <= merged["confidence_threshold"] < 1:
            raise ConfigError(
                f"algorithm_options.confidence_threshold: must be in [0, 1), got {merged['confidence_threshold']}"
            )
        return merged

    @classmethod
    def check_config(cls, config: ExperimentConfig) -> None:
        super().check_config(config)
        if config.algorithm_options.get("one_shot") and config.rounds != 1:
            raise ConfigError(f"rounds: fedspray with algorithm_options.one_shot is one-shot; set rounds to 1, "
                              f"got {config.rounds}")

    def run(self, channel: Channel | None = None, *, callbacks: Sequence = (), checkpoint: Any = None):
        """Algorithm 1's rounds; with ``one_shot``, O-pFGL's one-round protocol (one round for each ``E`` of the
        grid, fine-tuning, ``E`` chosen on validation; :func:`~fglcore.algorithms.fedavg_ft.search_local_epochs`)."""
        one_shot = self.options["one_shot"]
        if not one_shot:
            return super().run(channel, callbacks=callbacks, checkpoint=checkpoint)
        from fglcore.algorithms.fedavg_ft import fine_tune_clients, search_local_epochs

        base = self.config

        def run_one(epochs: int):
            self.config = dataclasses.replace(base, local_epochs=epochs)
            try:
                before = super(FedSpray, self).run(Channel())
            finally:
                self.config = base
            return fine_tune_clients(self, before, one_shot, epochs)

        return search_local_epochs(self, run_one, one_shot["local_epochs_grid"], channel)

    def round_loop_only(self) -> bool:
        """Algorithm 1 is the plain round loop; ``one_shot`` adds O-pFGL's search over ``E`` and fine-tuning."""
        return not self.options["one_shot"]

    def make_encoder(self) -> FeatureStructureEncoder:
        """The initial global encoder, drawn from its own seed so the GNNs' random stream is untouched."""
        with torch.random.fork_rng(devices=[]):
            # the seed stream of a client id no client has
            torch.manual_seed(client_seed(self.config.seed, len(self.clients_data)))
            return FeatureStructureEncoder(
                int(self.federation.num_features),
                self.options["proxy_dim"],
                self.num_classes,
                self.options["encoder_init"],
            )

    def build(self, channel: Channel) -> tuple[FedSprayServer, list[Client]]:
        _, models = self.init_models()
        if self.options["gnn_init"] == "official":
            for cid, model in enumerate(models):
                generator = torch.Generator().manual_seed(client_seed(self.config.seed, cid))
                with torch.no_grad():
                    for parameter in model.parameters():
                        parameter.uniform_(0.0, 1.0, generator=generator)
        encoder = self.make_encoder()
        proxies = None
        if not (self.options["zero_proxies"] or self.options["zero_global_proxies"]):
            proxies = initial_global_proxies(
                self.num_classes, self.options["proxy_dim"], self.options["global_proxy_scale"]
            ).to(self.device)
        initial = {name: value.to(self.device) for name, value in module_payload(encoder).items()}
        server = FedSprayServer(initial, proxies)
        clients: list[Client] = [
            FedSprayClient(
                cid,
                self.make_trainer(model, cid),
                self.config.local_epochs,
                copy.deepcopy(encoder),
                self.num_classes,
                self.options,
                self.config,
            )
            for cid, model in enumerate(models)
        ]
        return server, clients
