"""Co-Boost on graphs: O-pFGL's one-shot baseline "Co-Boost" (Yan et al., arXiv 2411.11304, Sec. 5.1, App. A.7).

Dai et al., "Enhancing One-Shot Federated Learning Through Data and Ensemble
Co-Boosting", ICLR 2024. Each client uploads its model once; the server
alternates, for ``epochs`` rounds (Alg. 1), the three steps below, then sends
the distilled model (the shared protocol, fine-tuning and choice of local
epochs are :mod:`fglcore.algorithms.ensemble_distillation`'s):

1. **Hard-sample synthesis** (Sec. 3.2, Eqs. 4-6): the generator is
   re-initialised and, with the trainable noise, trained ``generator_steps``
   Adam steps (betas 0.5/0.999, gradient norm clipped at 10) on

   .. math::
       L = \\lambda_{CE}\\,\\overline{(1-p_c)^{\\beta}\\,\\mathrm{CE}(A_w(\\hat x), c)}
       \\;-\\;\\lambda_{adv}\\,\\overline{\\textstyle\\sum_j T^2\\,\\mathrm{KL}_j(A_w(\\hat x)/T\\,\\|\\,f_S(\\hat x)/T)}
       \\;+\\;\\lambda_{BN}L_{BN}

   with :math:`A_w` the weighted ensemble (``WEnsemble``, Eq. 3),
   :math:`p_c` its (detached) probability of the target class, the hardness
   exponent :math:`\\beta` = ``hardness`` (the code's ``hs``), the adversarial
   term unmasked at :math:`T` = 3 (the code's ``loss_adv``), classes uniform
   and unsorted. Node features and their kNN graph (k = 5) stand for images.
2. **Ensemble re-weighting** (Sec. 3.3, Eq. 7; from the second round on,
   before the new graph joins the pool): for ``weight_steps`` passes over the
   pool, one signed-gradient step per pooled graph on the cross-entropy of
   :math:`A_w` to the generator's classes,
   :math:`w \\leftarrow \\Pi(w - \\mu\\,\\rho^{e}\\,\\mathrm{sign}(\\nabla_w))` with
   :math:`\\mu` = ``weight_lr`` (0.01), :math:`\\rho` = ``weight_decay_rate``
   (0.99), :math:`e` the round, and :math:`\\Pi` clipping to :math:`[0, 1]`
   and to :math:`\\pm 1` of the weights before the pass. Weights start at
   :math:`1/K`. The teachers' own logits on a pooled graph are fixed, so they
   are kept with it and only the weights change.
3. **Distillation on hard samples** (Sec. 3.4, ODS, Eq. 8): for each pooled
   graph, the features are pushed one signed step of size ``ods_eta``
   (the code's ``odseta`` = 8/255) along the gradient of
   :math:`\\sum u\\odot\\mathrm{softmax}(A_w(\\hat x)/4)` with :math:`u` uniform
   in :math:`[-1,1]` (output-diversified sampling; the kNN edges stay), and the
   student takes one SGD step (momentum 0.9, weight decay 1e-4, gradient norm
   clipped at 10, cosine-annealed learning rate over the rounds) on
   :math:`T^2\\,\\mathrm{KL}(A_w/T\\,\\|\\,f_S/T)` at :math:`T` = 4 on the
   perturbed graph. The ensemble is fixed during a pass: the gradient of
   each pooled graph goes back through the teachers' forward on it, kept
   since it joined the pool (only the weights and the random direction
   change between rounds), and the ensemble's targets on the perturbed
   features come from one pass over the pool's disjoint union (the same
   numbers as graph by graph, up to rounding and the order of the random
   draws).

Defaults are the official ``co_boosting.sh`` and ``datafree_kd.py``
(``rong-dai/Co-Boosting``: ``--epochs 200 --g_steps 30 --lr_g 1e-3
--batch_size 128 --kd_lr 0.01``, ``kd_T`` 4, ``adv`` 1, ``bn`` 0, ``ohg`` 1,
``hs`` 1, ``odseta`` 8/255, ``mu`` 0.01, ``wdc`` 0.99, ``wa_steps`` 1, weight
decay 1e-4); the generator is FedTAD's conditional one (noise 32) in place of
the code's image generator.

Under a model list (``hetero``, O-pFGL's Tables 3/11) Co-Boost distils one
student per client architecture from the ensemble of the clients' own
models, and each client downloads and fine-tunes the student of its own
architecture: a reading, not stated by the paper, described in
:mod:`fglcore.algorithms.ensemble_distillation` (``student_init="fedavg"`` is
then refused).
"""
from __future__ import annotations

from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from fglcore.algorithms.base import register_algorithm
from fglcore.algorithms.ensemble_distillation import (NON_NEGATIVE_REAL, SHARED_BOUNDS, SHARED_DEFAULTS,
                                                      BatchNormStatistics, DistillationServer,
                                                      EnsembleDistillation, SyntheticGraph, disjoint_union,
                                                      ensemble, kd_divergence, on_graph, synthetic_graph,
                                                      teacher_logits)
from fglcore.checks import POSITIVE, Bounds
from fglcore.models.node_generator import NodeFeatureGenerator

GRAD_CLIP = 10.0
"""Both gradient-norm clips of the official code (generator and student)."""
ODS_TEMPERATURE = 4.0
"""The softmax temperature of the ODS direction (``softmax(teacher(images) / 4)`` in ``cb_kd_train``)."""

DEFAULTS: dict[str, Any] = {
    **SHARED_DEFAULTS, "synthesis_size": 128, "bn_weight": 0.0, "ce_weight": 1.0, "adv_weight": 1.0,
    "adv_temperature": 3.0, "kd_lr": 0.01, "kd_weight_decay": 1e-4, "kd_temperature": 4.0,
    "hardness": 1.0, "ods_eta": 8 / 255, "weighted": True, "weight_lr": 0.01, "weight_decay_rate": 0.99,
    "weight_steps": 1,
}
"""The official code's values (see the module docstring)."""


def hard_cross_entropy(logits: Tensor, targets: Tensor, hardness: float) -> Tensor:
    """Co-Boost's hard-sample loss (Eq. 5; ``loss_oh`` of ``COBOOSTSynthesizer``): the cross-entropy of each
    sample weighted by :math:`(1-p_c)^{\\beta}`, :math:`p_c` its (detached) probability of the target class,
    averaged; :math:`\\beta = 0` is the plain cross-entropy."""
    p = F.softmax(logits, dim=1).gather(1, targets.view(-1, 1)).view(-1)
    return ((1 - p.detach()).pow(hardness) * F.cross_entropy(logits, targets, reduction="none")).mean()


class CoBoostServer(DistillationServer):
    """Co-Boost's server: hard-sample synthesis, ensemble re-weighting and distillation on perturbed hard
    samples, alternated ``epochs`` times (Alg. 1)."""

    def synthesize(self, teachers: list[nn.Module], weights: Tensor, student: nn.Module,
                   generator: NodeFeatureGenerator, bn: BatchNormStatistics) -> SyntheticGraph:
        """Step 1 (Eqs. 4-6): the round's best hard synthetic graph, with the teachers' logits on it."""
        o = self.options
        device = weights.device
        z, c, optimizer = self.start_synthesis(generator, student, device, sort_targets=False)
        best, best_cost = None, float("inf")
        bn.take()  # drop the statistics of the teachers' forwards since the last synthesis (ODS)
        for _ in range(o["generator_steps"]):
            optimizer.zero_grad(set_to_none=True)
            x, edge_index, graph = self.generator_step_graph(generator, z, c, [*teachers, student])
            t_out = ensemble(teacher_logits(teachers, x, graph), weights)
            loss_bn = bn.take() / len(teachers)
            loss_ce = hard_cross_entropy(t_out, c, o["hardness"])
            s_out = on_graph(student, x, graph)
            loss_adv = -kd_divergence(s_out, t_out, o["adv_temperature"], "none").sum(1).mean()
            loss = o["bn_weight"] * loss_bn + o["ce_weight"] * loss_ce + o["adv_weight"] * loss_adv
            loss.backward()
            torch.nn.utils.clip_grad_norm_(generator.parameters(), max_norm=GRAD_CLIP)
            optimizer.step()
            if float(loss.detach()) < best_cost:  # the loss of these features (computed before the step)
                best_cost, best = float(loss.detach()), (x.detach(), edge_index, graph)
        student.requires_grad_(True)
        x, edge_index, graph = best
        pooled = SyntheticGraph.with_kept_forward(x, edge_index, c, graph, teachers)  # the forward kept for Step 3
        bn.take()
        return pooled

    def reweight(self, pool: list[SyntheticGraph], weights: Tensor, epoch: int) -> Tensor:
        """Step 2 (Eq. 7): signed-gradient steps of the ensemble weights on the pool's cross-entropy."""
        o = self.options
        start = weights.detach()
        w = start.clone()
        step = o["weight_lr"] * o["weight_decay_rate"] ** epoch
        for _ in range(o["weight_steps"]):
            for i in torch.randperm(len(pool)).tolist():
                g = pool[i]
                w.requires_grad_(True)
                loss = F.cross_entropy(ensemble(g.teacher_logits, w), g.y)
                (grad,) = torch.autograd.grad(loss, w)
                w = w.detach() - step * grad.sign()
                w = (start + (w - start).clamp(-1.0, 1.0)).clamp(0.0, 1.0)
        return w.detach()

    def hard_pool(self, teachers: list[nn.Module], pool: list[SyntheticGraph], weights: Tensor
                  ) -> list[tuple[Tensor, Tensor]]:
        """Step 3's ODS (Eq. 8): each pooled graph's perturbed features and the ensemble's logits on them.

        The gradient in the features goes back through each pooled graph's teacher forward, kept since the
        graph joined the pool (:meth:`~fglcore.algorithms.ensemble_distillation.SyntheticGraph.kept_teacher_forward`):
        only the weights and the random direction change from round to round, so the forward is not run again.
        The teachers then run once on the perturbed features of the whole pool (their disjoint union).
        """
        x, edge_index, sizes = disjoint_union(pool)
        kept = [g.kept_teacher_forward(teachers) for g in pool]
        logits = torch.cat([forward.detach() for _, forward in kept], dim=1).requires_grad_(True)
        probs = F.softmax(ensemble(logits, weights) / ODS_TEMPERATURE, dim=1)
        direction = torch.empty_like(probs).uniform_(-1.0, 1.0)
        (upstream,) = torch.autograd.grad((direction * probs).sum(), logits)
        grad = torch.cat([torch.autograd.grad(forward, leaf, part, retain_graph=True)[0]
                          for (leaf, forward), part in zip(kept, upstream.split(sizes, dim=1))])
        hard = (x + self.options["ods_eta"] * grad.sign()).detach()
        graph = synthetic_graph(teachers, edge_index, x.size(0), x.dtype)
        with torch.no_grad():
            target = ensemble(teacher_logits(teachers, hard, graph), weights)
        return list(zip(hard.split(sizes), target.split(sizes)))

    def distill(self, teachers: list[nn.Module], student: nn.Module, generator: NodeFeatureGenerator
                ) -> list[SyntheticGraph]:
        o = self.options
        device = next(student.parameters()).device
        optimizer = torch.optim.SGD(student.parameters(), lr=o["kd_lr"], momentum=o["kd_momentum"],
                                    weight_decay=o["kd_weight_decay"])
        schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=o["epochs"])
        weights = torch.full((len(teachers),), 1.0 / len(teachers), device=device)
        bn = BatchNormStatistics(teachers)
        pool: list[SyntheticGraph] = []
        losses = []
        try:
            for epoch in range(o["epochs"]):
                graph = self.synthesize(teachers, weights, student, generator, bn)
                if o["weighted"] and epoch > 0:
                    weights = self.reweight(pool, weights, epoch)
                pool.append(graph)
                hard = self.hard_pool(teachers, pool, weights)
                total = 0.0
                for i in torch.randperm(len(pool)).tolist():
                    x, target = hard[i]
                    total += self.kd_step(student, optimizer, x, pool[i].graph, target, GRAD_CLIP)
                losses.append(total / len(pool))
                schedule.step()
        finally:
            bn.remove()
        self.report = {"kd_loss_first": losses[0], "kd_loss_last": losses[-1], "pool_graphs": len(pool),
                       "ensemble_weights": weights.tolist()}
        return pool


@register_algorithm
class CoBoost(EnsembleDistillation):
    """Co-Boost (Dai et al., ICLR 2024) on graphs as O-pFGL's baseline: hard-sample synthesis, ensemble
    re-weighting, distillation on perturbed hard samples, local fine-tuning; see :mod:`fglcore.algorithms.coboost`."""

    name = "coboost"
    citation = ("Dai et al., Enhancing One-Shot Federated Learning Through Data and Ensemble Co-Boosting, ICLR "
                "2024; on graphs as in Yan et al., Towards Federated Graph Learning in One-shot Communication, "
                "arXiv 2411.11304")
    server_class = CoBoostServer
    heterogeneous_models = True  # one student per client architecture (reading in ensemble_distillation)
    default_options: ClassVar[dict[str, Any]] = {**EnsembleDistillation.default_options, **DEFAULTS}
    option_bounds: ClassVar[dict[str, Bounds]] = {
        **EnsembleDistillation.option_bounds, **SHARED_BOUNDS,
        **dict.fromkeys(("hardness", "ods_eta", "weight_lr"), NON_NEGATIVE_REAL),
        "weight_decay_rate": Bounds(above=0, maximum=1), "weight_steps": POSITIVE,
    }
