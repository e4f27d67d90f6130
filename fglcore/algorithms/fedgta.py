"""FedGTA: topology-aware personalised averaging.

Li, Wu, Zhang, Zhu, Li and Wang, "FedGTA: Topology-aware Averaging for
Federated Graph Learning", VLDB 2024 (arXiv 2401.11755), Sec. 4 and
Algorithm 1. Official code: ``xkLi-Allen/FedGTA``; the port O-pFGL's authors
used (they defer to OpenFGL for every baseline, digest A16):
``xkLi-Allen/OpenFGL``, ``openfgl/flcore/fedgta``.

Each round:

1. **Local training.** Client ``k`` loads its personalised model (the
   initial model in round 1), trains ``E`` epochs and predicts soft labels
   :math:`\\hat Y = \\mathrm{softmax}(f(X, A))` for its nodes.
2. **Topology-aware soft labels** (Sec. 4.1, "non-parametric label
   propagation"): ``lp_steps`` steps of label propagation
   :math:`Y^{(t+1)} = \\alpha \\hat A Y^{(t)} + (1-\\alpha) Y^{(0)}`
   (``lp_alpha`` :math:`=\\alpha`), then
   :math:`P = \\mathrm{softmax}(Y^{(T)})` and
   :math:`P^{\\tau} = \\mathrm{softmax}(Y^{(T)}/\\tau)` (``temperature``
   :math:`\\tau`), with training rows replaced by their one-hot labels.
   ``propagation`` picks :math:`Y^{(0)}` and :math:`\\hat A`:

   * ``"openfgl"`` (default, the port the O-pFGL paper ran): PyG's
     :class:`~torch_geometric.nn.models.LabelPropagation` on the soft
     labels of the *training* nodes only (other rows start at 0),
     :math:`\\hat A = D^{-1/2}AD^{-1/2}`, outputs clamped to [0, 1];
   * ``"official"`` (FedGTA's ``NonParaLP``): :math:`Y^{(0)}` holds the
     one-hot labels of the training nodes and the soft labels of the
     validation and test nodes; :math:`\\hat A = \\tilde D^{-1/2}\\tilde A\\tilde D^{-1/2}`
     with self-loops (``r = 0.5``), and every step adds :math:`Y^{(0)}`
     once more to the training rows, as the official code does.

3. **Local smoothing confidence** (Sec. 4.1): with :math:`d_v` the degree
   of node :math:`v` (in plus out edges, as OpenFGL counts it),
   :math:`\\varsigma_k = \\sum_v d_v \\big(C/e + \\sum_c P^{\\tau}_{vc}\\log P^{\\tau}_{vc}\\big)`,
   i.e. degree-weighted :math:`C/e` minus the entropy of the smoothed
   soft labels (non-negative, large when the propagated labels are sharp
   where the graph is dense). It is the client's aggregation weight.
4. **Mixed moments of neighbour features** (Sec. 4.2): column-wise raw
   moments :math:`\\frac1N\\sum_v P_{vc}^p` and central moments
   :math:`\\frac1N\\sum_v (P_{vc}-\\bar P_c)^p`, :math:`p = 1..`\\ ``num_moments``
   (``moment_type`` ``"hybrid"`` = both, ``"raw"``, ``"central"``),
   flattened into the client's topology signature :math:`m_k`.
5. **Upload** parameters, :math:`m_k` and :math:`\\varsigma_k`.
6. **Personalised aggregation** (Sec. 4.3): client ``i`` receives
   :math:`\\sum_{j \\in S_i} \\varsigma_j w_j / \\sum_{j\\in S_i}\\varsigma_j`
   over :math:`S_i = \\{j : \\cos(m_i, m_j) > \\text{accept\\_alpha}\\}`
   (``i`` itself always qualifies).

Defaults are OpenFGL's ``fedgta_config.py`` (``lp_steps=5``,
``lp_alpha=0.5``, ``temperature=20``, ``num_moments=10``, hybrid moments,
``accept_alpha=0.5``); the official repository's ``config.py`` uses
13-20 moments and a 0.6-0.65 threshold per dataset, which are options.
The server needs each client's moments, confidence and parameters, so
secure aggregation cannot be used.

**O-pFGL's protocol** (Yan et al., arXiv 2411.11304, App. A.7; digest
A16): ``local_epochs_grid`` (a list) runs one round per ``E`` and reports
the ``E`` with the best validation accuracy
(:class:`~fglcore.algorithms.fedavg_ft.OneShotProtocol`, shared with
``fedavg_ft``); each client is evaluated with its downloaded personalised
model. O-pFGL fine-tunes only FedAvg, FedTAD, DENSE and Co-Boost (App.
A.7), so ``fine_tune`` is ``False`` by default; ``True`` adds the same
fine-tuning as ``fedavg_ft``. ``local_epochs_grid=None`` (default) is the
ordinary multi-round FedGTA (Tables 9/10: 100 rounds).
"""
from __future__ import annotations

import math
from typing import Any, ClassVar, Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.nn.models import LabelPropagation
from torch_geometric.utils import degree

from fglcore.algorithms.base import Trainer, register_algorithm
from fglcore.algorithms.fedavg import FedAvg, FedAvgServer
from fglcore.algorithms.fedavg_ft import (EPOCHS_GRID, ONE_SHOT_BOUNDS, ONE_SHOT_OPTIONS, FineTuneClient,
                                          OneShotProtocol)
from fglcore.checks import POSITIVE, Bounds
from fglcore.fl.engine import Client, Payload
from fglcore.fl.parameters import module_payload, weighted_mean

MOMENT_TYPES = ("hybrid", "raw", "central")
PROPAGATIONS = ("openfgl", "official")
SIGNATURE, CONFIDENCE = "fedgta.moments", "fedgta.confidence"

OPFGL_ONE_SHOT: dict[str, Any] = {"local_epochs_grid": list(EPOCHS_GRID), "fine_tune": False}
"""FedGTA's options under O-pFGL's one-shot protocol (one round, epochs chosen on validation, no fine-tuning)."""


def propagate_soft_labels(soft: Tensor, y: Tensor, edge_index: Tensor, train_mask: Tensor, steps: int,
                          alpha: float, temperature: float, propagation: str = "openfgl") -> tuple[Tensor, Tensor]:
    """Step 2: the topology-aware soft labels :math:`(P, P^{\\tau})`, training rows one-hot.

    ``soft`` are the model's softmax outputs :math:`(N, C)`; ``y`` the labels.
    """
    n, num_classes = soft.shape
    onehot = F.one_hot(y[train_mask].view(-1), num_classes).to(soft.dtype)
    if propagation == "openfgl":
        out = LabelPropagation(num_layers=steps, alpha=alpha)(soft, edge_index, mask=train_mask)
    elif propagation == "official":
        (source, target), weight = gcn_norm(edge_index, None, n, add_self_loops=True, dtype=soft.dtype)
        start = soft.clone()
        start[train_mask] = onehot
        out = start
        for _ in range(steps):
            spread = torch.zeros_like(out).index_add(0, target, out[source] * weight.view(-1, 1))
            out = alpha * spread + (1 - alpha) * start
            out[train_mask] = out[train_mask] + start[train_mask]
    else:
        raise ValueError(f"unknown propagation {propagation!r}; accepted: {', '.join(PROPAGATIONS)}")
    raw, sharp = F.softmax(out, dim=1), F.softmax(out / temperature, dim=1)
    raw[train_mask] = onehot
    sharp[train_mask] = onehot
    return raw, sharp


def smoothing_confidence(sharp: Tensor, node_degree: Tensor, eps: float = 1e-8) -> Tensor:
    """Step 3: :math:`\\sum_v d_v (C/e + \\sum_c p_{vc}\\log(p_{vc}+\\epsilon))` (the code's ``info_entropy_rev``)."""
    d = node_degree.to(sharp.dtype)
    return d.sum() * sharp.size(1) * math.exp(-1) + (d * (sharp * torch.log(sharp + eps)).sum(dim=1)).sum()


def mixed_moments(x: Tensor, num_moments: int, moment_type: str = "hybrid") -> Tensor:
    """Step 4: column-wise raw and/or central moments of orders ``1..num_moments``, flattened.

    ``hybrid``: the raw moments, then the central ones; each block has
    ``num_moments`` rows of ``C`` (moment order major). Shape:
    :math:`(N, C) \\to (K C)` or :math:`(2 K C)` for ``hybrid``.
    """
    orders = torch.arange(1, num_moments + 1, dtype=x.dtype, device=x.device).view(-1, 1, 1)
    blocks = []
    if moment_type in ("hybrid", "raw"):
        blocks.append(x.unsqueeze(0).pow(orders).mean(dim=1))
    if moment_type in ("hybrid", "central"):
        blocks.append((x - x.mean(dim=0, keepdim=True)).unsqueeze(0).pow(orders).mean(dim=1))
    if not blocks:
        raise ValueError(f"unknown moment_type {moment_type!r}; accepted: {', '.join(MOMENT_TYPES)}")
    return torch.cat(blocks).reshape(-1)


def aggregation_weights(signatures: Tensor, confidences: Tensor, accept_alpha: float) -> Tensor:
    """Step 6: the :math:`K \\times K` matrix whose row ``i`` weights the models client ``i`` receives.

    ``W[i, j]`` is :math:`\\varsigma_j/\\sum_{l\\in S_i}\\varsigma_l` for :math:`j\\in S_i`
    (cosine similarity of the signatures above ``accept_alpha``) and 0
    otherwise. Rows sum to 1; client ``i`` is always in :math:`S_i`.
    """
    sig = signatures.double()
    sim = F.cosine_similarity(sig.unsqueeze(1), sig.unsqueeze(0), dim=2)
    accept = sim > accept_alpha
    accept.fill_diagonal_(True)  # cos(m_i, m_i) = 1 > accept_alpha <= 1, also for a zero signature
    w = accept.double() * confidences.double().view(1, -1)
    total = w.sum(dim=1, keepdim=True)
    # all-zero confidences in a row (every accepted client predicts uniformly): plain mean of the accepted
    return torch.where(total > 0, w / total.clamp(min=1e-300), accept.double() / accept.sum(dim=1, keepdim=True))


class FedGTAServer(FedAvgServer):
    """Keeps one personalised model per client (step 6); sends client ``i`` its own."""

    def __init__(self, parameters: dict[str, Tensor], accept_alpha: float, opening: bool):
        super().__init__(parameters)
        self.accept_alpha = accept_alpha
        self.opening = opening
        self.personal: dict[int, Payload] = {}
        self.weights: Tensor | None = None

    def aggregate(self, updates: Mapping[int, Payload], weights: Mapping[int, float], round: int) -> None:
        order = list(updates)
        signatures = torch.stack([updates[c][SIGNATURE].double() for c in order])
        confidences = torch.stack([updates[c][CONFIDENCE].double().view(()) for c in order])
        self.weights = aggregation_weights(signatures, confidences, self.accept_alpha)
        models = [{k: v for k, v in updates[c].items() if k in self.parameters} for c in order]
        for i, cid in enumerate(order):
            row = self.weights[i]
            members = [j for j in range(len(order)) if row[j] > 0]
            self.personal[cid] = weighted_mean([models[j] for j in members], [float(row[j]) for j in members])

    def payload_for(self, client: Client, round: int) -> Payload | None:
        if round == 1:
            return dict(self.parameters) if self.opening else None
        return self.personal.get(client.cid, dict(self.parameters))


class FedGTAClient(FineTuneClient):
    """Loads its personalised model, trains, and uploads parameters with its signature and confidence."""

    def __init__(self, cid: int, trainer: Trainer, epochs: int, shared: Sequence[str], num_nodes: int,
                 options: Mapping[str, Any]):
        super().__init__(cid, trainer, epochs, shared, num_nodes)
        self.options = dict(options)
        edge_index = trainer.edge_index
        self.node_degree = degree(edge_index[0], num_nodes) + degree(edge_index[1], num_nodes)
        self.train_mask = torch.zeros(num_nodes, dtype=torch.bool, device=edge_index.device)
        self.train_mask[trainer.train_idx] = True

    def topology(self) -> tuple[Tensor, Tensor]:
        """Steps 2-4 on the current model: the signature :math:`m_k` and the confidence :math:`\\varsigma_k`."""
        o = self.options
        soft = F.softmax(self.trainer.logits(), dim=1)
        raw, sharp = propagate_soft_labels(soft, self.trainer.y, self.trainer.edge_index, self.train_mask,
                                           o["lp_steps"], o["lp_alpha"], o["temperature"], o["propagation"])
        return mixed_moments(raw, o["num_moments"], o["moment_type"]), smoothing_confidence(sharp, self.node_degree)

    def upload(self) -> Payload:
        signature, confidence = self.topology()
        return {**module_payload(self.model, include=self.shared.__contains__),
                SIGNATURE: signature.detach(), CONFIDENCE: confidence.detach().view(1)}


@register_algorithm
class FedGTA(OneShotProtocol, FedAvg):
    """FedGTA (Li et al., VLDB 2024): personalised aggregation by soft-label moment similarity, weighted by
    local smoothing confidence; options and readings in :mod:`fglcore.algorithms.fedgta`."""

    name = "fedgta"
    tasks = ("node",)
    citation = "Li et al., FedGTA: Topology-aware Averaging for Federated Graph Learning, VLDB 2024"
    secure_aggregation_unsupported = ("the server compares each client's moment signature and weights each model "
                                      "by that client's confidence, so it needs the individual uploads")
    one_shot_optional = True
    default_options: ClassVar[dict[str, Any]] = {
        "lp_steps": 5, "lp_alpha": 0.5, "temperature": 20.0, "num_moments": 10, "moment_type": "hybrid",
        "accept_alpha": 0.5, "propagation": "openfgl", "reset_optimizer": False,
        **ONE_SHOT_OPTIONS, "local_epochs_grid": None, "fine_tune": False,
    }
    option_choices = {"moment_type": MOMENT_TYPES, "propagation": PROPAGATIONS}
    option_bounds = {**ONE_SHOT_BOUNDS, "lp_steps": POSITIVE, "lp_alpha": Bounds(minimum=0, maximum=1),
                     "temperature": Bounds(above=0), "num_moments": POSITIVE,
                     "accept_alpha": Bounds(minimum=-1, maximum=1)}

    def shared_names(self, models: Sequence[Any]) -> list[str]:
        return [name for name, _ in models[0].named_parameters()]

    def fine_tunes(self) -> bool:
        return self.options["fine_tune"]

    def make_server(self, parameters: dict[str, Tensor]) -> FedGTAServer:
        return FedGTAServer(parameters, self.options["accept_alpha"], self.opening_broadcast())

    def make_client(self, cid: int, trainer: Trainer, shared: Sequence[str]) -> FedGTAClient:
        client = FedGTAClient(cid, trainer, self.local_epochs, shared, int(self.clients_data[cid].num_nodes),
                              self.options)
        client.reset_optimizer = self.options["reset_optimizer"]
        return client
