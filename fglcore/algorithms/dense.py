"""DENSE on graphs: O-pFGL's one-shot baseline "DENSE" (Yan et al., arXiv 2411.11304, Sec. 5.1, App. A.7).

Zhang et al., "DENSE: Data-Free One-Shot Federated Learning", NeurIPS 2022.
Each client uploads its model once; the server alternates two stages for
``epochs`` rounds (Alg. 1), then sends the distilled model (the shared
protocol, fine-tuning and choice of local epochs are
:mod:`fglcore.algorithms.ensemble_distillation`'s):

1. **Data generation** (Sec. 3.2, Eqs. 2-6): the generator is re-initialised
   (``reset_model``) and, with the noise :math:`z` (trainable, as in the
   code), trained ``generator_steps`` Adam steps (``generator_lr``, betas
   0.5/0.999) on

   .. math::
       L_{gen} = \\lambda_{CE}\\,\\mathrm{CE}(D(\\hat x), c) + \\lambda_{BN}\\,L_{BN}
       + \\lambda_{adv}\\,L_{div},\\qquad
       L_{div} = -\\,\\overline{\\mathbb 1[\\arg\\max D(\\hat x)\\ne\\arg\\max f_S(\\hat x)]\\;
       \\mathrm{KL}(D(\\hat x)\\,\\|\\,f_S(\\hat x))}

   with :math:`D` the mean of the client models' logits (``Ensemble_A``),
   :math:`c` uniform random classes sorted (the code's ``targets.sort()``),
   :math:`L_{BN}` the BatchNorm statistics loss of the clients' models
   (:class:`~fglcore.algorithms.ensemble_distillation.BatchNormStatistics`;
   0 for the default GCN, which has no BatchNorm, just as the official hooks
   find nothing in a model without ``BatchNorm2d``) and :math:`L_{div}` the
   adversarial boundary term (the paper's "diversity" loss, Eq. 5; the
   code's ``loss_adv`` at temperature 1). On graphs :math:`\\hat x` are node
   features and the graph their kNN graph (k = 5).
2. **Model distillation** (Sec. 3.3, Eq. 7): the server model :math:`f_S`
   passes once over the pool of every round's best synthetic graph with
   :math:`T^2\\,\\mathrm{KL}(D/T\\,\\|\\,f_S/T)`, SGD with momentum 0.9, each
   step's gradient norm clipped at ``kd_clip`` (10; 0 = no clipping, the
   official code: see below). The teachers are fixed, so each pooled graph's
   ensemble logits are computed once when it joins the pool.

**The gradient clip (``kd_clip``) is ours, not DENSE's.** The official code
steps the student unclipped, on images that its generator bounds (``Tanh``
then ``BatchNorm2d``). FedTAD's node-feature generator ends with a plain
linear layer, and the client GCNs, trained on row-normalised features, give
logits of about 100 on its features (magnitude about 1). Unclipped, at the
official :math:`T` = 20 and learning rate, the student then diverges: on
Cora (Louvain+, 10 clients, seed 0, teachers of 50 local epochs) its
parameter norm went from 14.7 to 110 after 5 rounds and 4.2e9 after 10, the
KD loss was NaN from round 14, and fine-tuning from the NaN student left
12.9 % test accuracy. Clipped at 10, the gradient-norm clip of Co-Boost's
official code (the other ensemble-distillation baseline), the same run stays
at norm 14.7-15.8 over 60 rounds and ends at 68.5 % (the paper's DENSE on
Cora, Table 1: 69.89). A non-finite KD loss stops the run with an error
(:meth:`~fglcore.algorithms.ensemble_distillation.DistillationServer.kd_step`)
instead of fine-tuning a broken student.

Defaults are the official README's global-distillation command
(``zj-jayzhang/DENSE``: ``--epochs 200 --lr 0.005 --synthesis_batch_size 256
--g_steps 30 --lr_g 1e-3 --bn 1.0 --oh 1.0 --T 20 --adv 1``); the code's
unconditional image generator (``nz`` = 256) is replaced by FedTAD's
conditional node-feature generator (noise 32), conditioned on the target
classes :math:`c`. The image
augmentations of the pool (random crop and flip) have no graph counterpart
and are left out.

Under a model list (``hetero``, O-pFGL's Tables 3/11) DENSE distils one
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
from torch import nn

from fglcore.algorithms.base import register_algorithm
from fglcore.algorithms.ensemble_distillation import (NON_NEGATIVE_REAL, SHARED_DEFAULTS, BatchNormStatistics,
                                                      DistillationServer, EnsembleDistillation, SyntheticGraph,
                                                      ensemble, kd_divergence, on_graph, teacher_logits)
from fglcore.checks import Bounds
from fglcore.models.node_generator import NodeFeatureGenerator

DEFAULTS: dict[str, Any] = {
    **SHARED_DEFAULTS, "synthesis_size": 256, "bn_weight": 1.0, "ce_weight": 1.0, "adv_weight": 1.0,
    "adv_temperature": 1.0, "kd_lr": 0.005, "kd_weight_decay": 0.0, "kd_temperature": 20.0, "kd_clip": 10.0,
}
"""The official README's distillation command, and our gradient clip ``kd_clip`` (see the module docstring)."""


class DenseServer(DistillationServer):
    """DENSE's server: data generation and model distillation alternated ``epochs`` times (Alg. 1)."""

    def synthesize(self, teachers: list[nn.Module], student: nn.Module, generator: NodeFeatureGenerator,
                   bn: BatchNormStatistics) -> SyntheticGraph:
        """Stage 1 (Eqs. 2-6): the round's best synthetic graph, with its ensemble logits."""
        o = self.options
        device = next(student.parameters()).device
        z, c, optimizer = self.start_synthesis(generator, student, device, sort_targets=True)
        best, best_cost = None, float("inf")
        for _ in range(o["generator_steps"]):
            optimizer.zero_grad(set_to_none=True)
            x, edge_index, graph = self.generator_step_graph(generator, z, c, [*teachers, student])
            t_out = ensemble(teacher_logits(teachers, x, graph))
            loss_bn = bn.take()
            loss_ce = F.cross_entropy(t_out, c)
            s_out = on_graph(student, x, graph)
            disagree = (s_out.argmax(1) != t_out.argmax(1)).float()
            loss_adv = -(kd_divergence(s_out, t_out, o["adv_temperature"], "none").sum(1) * disagree).mean()
            loss = o["bn_weight"] * loss_bn + o["ce_weight"] * loss_ce + o["adv_weight"] * loss_adv
            if best is None or float(loss.detach()) < best_cost:
                best_cost, best = float(loss.detach()), (x.detach(), edge_index, graph)
            loss.backward()
            optimizer.step()
        student.requires_grad_(True)
        x, edge_index, graph = best
        with torch.no_grad():
            logits = teacher_logits(teachers, x, graph)
        bn.take()
        return SyntheticGraph(x, edge_index, c, logits, graph)

    def distill(self, teachers: list[nn.Module], student: nn.Module, generator: NodeFeatureGenerator
                ) -> list[SyntheticGraph]:
        o = self.options
        optimizer = torch.optim.SGD(student.parameters(), lr=o["kd_lr"], momentum=o["kd_momentum"],
                                    weight_decay=o["kd_weight_decay"])
        clip = o["kd_clip"] or None
        bn = BatchNormStatistics(teachers)
        pool: list[SyntheticGraph] = []
        losses = []
        try:
            for _ in range(o["epochs"]):
                pool.append(self.synthesize(teachers, student, generator, bn))
                total = 0.0
                for i in torch.randperm(len(pool)).tolist():
                    g = pool[i]
                    total += self.kd_step(student, optimizer, g.x, g.graph, ensemble(g.teacher_logits), clip)
                losses.append(total / len(pool))
        finally:
            bn.remove()
        self.report = {"kd_loss_first": losses[0], "kd_loss_last": losses[-1], "pool_graphs": len(pool)}
        return pool


@register_algorithm
class Dense(EnsembleDistillation):
    """DENSE (Zhang et al., NeurIPS 2022) on graphs as O-pFGL's baseline: node-feature generator, kNN graphs,
    ensemble distillation, local fine-tuning; described in :mod:`fglcore.algorithms.dense`."""

    name = "dense"
    citation = ("Zhang et al., DENSE: Data-Free One-Shot Federated Learning, NeurIPS 2022; on graphs as in Yan et "
                "al., Towards Federated Graph Learning in One-shot Communication, arXiv 2411.11304")
    server_class = DenseServer
    heterogeneous_models = True  # one student per client architecture (reading in ensemble_distillation)
    default_options: ClassVar[dict[str, Any]] = {**EnsembleDistillation.default_options, **DEFAULTS}
    option_bounds: ClassVar[dict[str, Bounds]] = {**EnsembleDistillation.option_bounds, "kd_clip": NON_NEGATIVE_REAL}
