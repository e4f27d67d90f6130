r"""FedSage+: FedSage on local subgraphs mended by a federated missing-neighbour generator (NeighGen).

Zhang, Yang, Li, Sun and Yiu, "Subgraph Federated Learning with Missing
Neighbor Generation", NeurIPS 2021 (official code ``zkhku/fedsage``; the port
in FedStruct's code ``JavadAliakbari/FedStruct`` ``src/fedsage``). FedSage+ =
:mod:`~fglcore.algorithms.fedsage` (FedAvg of GraphSAGE) run on every client's
*mended* subgraph, in two phases (the paper's Alg. 1):

**1. NeighGen** (before round 1; ledger round 0). Each client :math:`i`

* impairs its subgraph :math:`G_i` (graph mending simulation, Sec. 3.3):
  it hides :math:`\lfloor h\,n_i\rfloor` nodes drawn uniformly
  (``hidden_portion`` :math:`h`) with their edges, giving :math:`\bar G_i`;
  for every kept node :math:`v` the targets are :math:`n_v`, its number of
  hidden neighbours, and the features of (at most ``num_pred`` :math:`P` of)
  them (:func:`impair_graph`). Both official codes hide half of the nodes
  outside their 60 % train / 20 % test split, i.e. :math:`h = 0.1` of the
  nodes (the default); the official ``zkhku`` code draws them among those
  non-train, non-test nodes only, FedStruct's port (and the paper) among all;
* trains :class:`~fglcore.models.neighgen.NeighGen` (encoder, dGen, fGen) and
  a node classifier on the mended impaired graph with Eq. (3),

  .. math::
      \mathcal L^n = \lambda^d \mathcal L^d + \lambda^f \mathcal L^f + \lambda^c \mathcal L^c,\quad
      \mathcal L^d = \overline{\mathrm{SmoothL1}(\tilde n_v - n_v)},\quad
      \mathcal L^f = \overline{\textstyle\min_{u \in \mathcal N(v) \cap V^h}
      \lVert \tilde x_v^p - x_u\rVert^2 / F}

  (:func:`matching_loss`: for every node :math:`v` with hidden neighbours and
  every generated :math:`p < \min(P, \tilde n_v)`, the distance to the closest
  true missing neighbour, averaged over those pairs as FedStruct's port does;
  the paper sums over :math:`p` and divides by the number of nodes),
  :math:`\mathcal L^c` the cross-entropy of the classifier (``config.model``,
  width, depth, dropout and ``model_options`` of the config) on the impaired graph mended with the
  generated neighbours (all :math:`NP` generated rows are nodes, node
  :math:`v` is linked both ways to its first :math:`\min(P, \tilde n_v)`;
  gradients reach fGen through the classifier). The averages run over the
  impaired graph's training nodes (``generator_nodes="train"``, both official
  codes) or, for :math:`\mathcal L^d` and :math:`\mathcal L^f`, over all its
  nodes (``"all"``, Eq. (3)'s :math:`1/|\bar V_i|`; :math:`\mathcal L^c`
  needs labels). ``local_generator_epochs`` full-batch Adam steps
  (``generator_lr``, ``config.weight_decay``);
* then ``federated_generator_epochs`` steps of Eq. (6): the loss gains, for
  every other client :math:`j`, :math:`\alpha` (``cross_weight``) times the
  same feature-matching loss of :math:`i`'s generated features against
  :math:`j`'s node features. :math:`j`'s features never leave :math:`j`;
  what crosses the channel (peer messages, round 0) is, with
  ``cross_exchange="parameters"`` (the paper: "clients share the gradients of
  fGen"; FedStruct's Table 1 counts it as :math:`O(EK^2|\theta|)`):
  :math:`i \to j` fGen's parameters (``fgen.<name>``), its noisy inputs
  :math:`z_v + \epsilon` (``fgen_input``) and the counts
  :math:`\min(P, \tilde n_v)` (``fgen_counts``) of :math:`i`'s loss nodes;
  :math:`j \to i` the gradients of :math:`j`'s term (``fgen_grad.<name>``,
  and ``fgen_input_grad`` when the encoder trains too). With
  ``cross_exchange="outputs"`` :math:`i` sends the generated features
  themselves (``generated_features``, ``generated_counts``) and :math:`j`
  returns their gradient (``generated_features_grad``): the same gradient
  (up to :math:`j`'s dropout mask) at :math:`nPF` instead of :math:`|\theta^f|`
  numbers. :math:`j`'s targets (``cross_targets``): ``"sampled"`` (both
  official codes: for each of :math:`i`'s nodes, a random node of :math:`j`
  with neighbours and up to :math:`P` of its neighbours, drawn anew each
  epoch) or ``"all"`` (Eq. (6) literally: the closest of all :math:`j`'s
  nodes). ``federated_parameters``: ``"fgen"`` (official ``zkhku``
  ``FedSage_Plus``: encoder, dGen and classifier frozen, only fGen trains) or
  ``"all"`` (FedStruct's port, which trains everything in this phase and has
  no local phase: ``local_generator_epochs=0``). Only :math:`i`'s nodes with
  generated neighbours (:math:`\min(P, \tilde n_v) > 0`) enter the term, so
  :math:`j` runs fGen on those rows alone, and when there are none (most
  steps on a random partition, where few nodes miss neighbours) the gradients
  are zero: they are still sent, and counted at their full size, but neither
  computed nor added (Cora, 20 clients, one thread: 28.7 CPU s per federated
  epoch before, 3.6 s after). The official code scales
  the sum by :math:`1/K`; with Adam that only rescales the weight decay, so
  it is left out. Each client keeps its own NeighGen (the paper: "locally
  specialized"); generators are never averaged.

**Mending** (no messages): each client runs its NeighGen (eval mode, noise
on) on its whole local graph (``mend_input="local"``, paper and FedStruct's
port) or on its impaired graph (``"impaired"``, official ``zkhku``: the
hidden nodes then get no generated neighbours) and adds, to each node
:math:`v`, :math:`\min(P, \lfloor\tilde n_v\rfloor)` generated neighbours
(``count_rounding="floor"``: ``zkhku``'s integer cast; ``"round"``:
FedStruct's port) linked both ways (:func:`mend_graph`). Generated nodes
carry no label and no split: only the client's own nodes are trained on and
scored, and nothing about them leaves the client.

**2. FedSage** on the mended graphs, rounds 1..R through the engine. Option
``federation``:

* ``"fedavg"`` (default; the paper's Alg. 1 and the official ``zkhku`` code):
  exactly :class:`~fglcore.algorithms.fedsage.FedSage` (FedAvg of
  ``config.model="sage"``, its options ``share``, ``norm_layers`` and
  ``reset_optimizer``, weights = training nodes or, ``weighting="nodes"``,
  node counts);
* ``"fedsgd"``: :class:`~fglcore.algorithms.fedsgd.FedSGD` (one full-batch
  gradient per client and round, every parameter, one server Adam step).
  FedStruct's code trains the mended graphs both ways ("WA" and "GA",
  ``FedSAGEServer.train_fedSage_plus(model="both")``) and its tables print
  the "GA" one (``src/simulations/read_table.py`` reads the row
  ``fedsage+_GA_GNN``), so FedStruct's FedSage+ rows use this. FedAvg's
  ``share``, ``norm_layers`` and ``reset_optimizer`` then have no effect
  and must keep their defaults.

Node classification on clients without cross-client edges (the standard
subgraph FL setting; FedStruct: "it does not use interconnection knowledge").
The generator widths (encoder 2 layers, ``encoder_hidden`` 32, latent 128,
fGen 256 and 2048, ``num_pred`` 5, lr 0.001) are the official code's
defaults; FedStruct ran NeighGen 30-40 epochs at lr 0.002 (digest §4.5).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call
from torch_geometric.data import Data
from torch_geometric.utils import subgraph

from fglcore.algorithms.base import Trainer, register_algorithm
from fglcore.algorithms.fedavg import FedAvgClient, FedAvgServer
from fglcore.algorithms.fedsage import FedSage
from fglcore.algorithms.fedsgd import FedSGD, FedSGDClient, FedSGDServer, client_weight
from fglcore.algorithms.training import NodeTrainer
from fglcore.checks import NON_NEGATIVE, POSITIVE, Bounds
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.fl.channel import Channel
from fglcore.fl.engine import Client, Server
from fglcore.models import build_model
from fglcore.models.neighgen import ENCODERS, GENERATOR_HIDDEN, NeighGen
from fglcore.runtime import memory_bytes, set_seed

PRE_TRAINING = 0  # ledger round of NeighGen's training, before FedSage's round 1
FEDERATIONS = ("fedavg", "fedsgd")  # phase 2: FedSage (FedAvg) or FedSGD on the mended graphs
FEDAVG_ONLY_OPTIONS = ("share", "norm_layers", "reset_optimizer")
EXCHANGES = ("parameters", "outputs")
FGEN = "fgen"


# --------------------------------------------------------------------------- graph mending simulation


@dataclass
class ImpairedGraph:
    """A client's subgraph with hidden nodes removed, and what NeighGen must recover (Sec. 3.3).

    ``data`` is the impaired subgraph (kept nodes relabelled ``0..n-1`` in the
    order of ``kept``, with their features, labels and masks); ``kept`` and
    ``hidden`` are client-local ids; per kept node, ``missing_count`` is its
    number of hidden neighbours :math:`n_v` and ``missing_features`` (masked by
    ``missing_mask``) the features of its first ``num_pred`` hidden neighbours
    in edge order.
    """

    data: Data
    kept: Tensor
    hidden: Tensor
    missing_count: Tensor
    missing_features: Tensor
    missing_mask: Tensor


def impair_graph(data: Data, hidden_portion: float, num_pred: int, rng: np.random.Generator) -> ImpairedGraph:
    """Hide ``floor(hidden_portion * n)`` uniformly drawn nodes of ``data`` and their edges (FedSage+, Sec. 3.3)."""
    n = int(data.num_nodes)
    hidden = torch.from_numpy(np.sort(rng.permutation(n)[: int(n * hidden_portion)])).long()
    is_hidden = torch.zeros(n, dtype=torch.bool)
    is_hidden[hidden] = True
    kept = (~is_hidden).nonzero().view(-1)
    edge_index, _ = subgraph(kept, data.edge_index, relabel_nodes=True, num_nodes=n)
    new_id = torch.full((n,), -1, dtype=torch.long)
    new_id[kept] = torch.arange(kept.numel())
    src, dst = data.edge_index
    crossing = ~is_hidden[src] & is_hidden[dst]
    owner, neighbour = new_id[src[crossing]], dst[crossing]
    order = torch.argsort(owner, stable=True)
    owner, neighbour = owner[order], neighbour[order]
    count = torch.bincount(owner, minlength=kept.numel())
    rank = torch.arange(owner.numel()) - (torch.cumsum(count, 0) - count)[owner]
    first = rank < num_pred
    features = torch.zeros(kept.numel(), num_pred, data.x.size(1), dtype=torch.float)
    mask = torch.zeros(kept.numel(), num_pred, dtype=torch.bool)
    features[owner[first], rank[first]] = data.x[neighbour[first]].float()
    mask[owner[first], rank[first]] = True
    impaired = Data(x=data.x[kept], edge_index=edge_index, y=data.y[kept], num_nodes=kept.numel(),
                    **{f"{s}_mask": getattr(data, f"{s}_mask")[kept] for s in ("train", "val", "test")})
    return ImpairedGraph(impaired, kept, hidden, count.float(), features, mask)


def neighbour_counts(degree: Tensor, num_pred: int, rounding: str = "floor") -> Tensor:
    """dGen's output as numbers of generated neighbours: ``min(P, floor(n~))`` (or rounded), at least 0."""
    value = degree.detach().floor() if rounding == "floor" else degree.detach().round()
    return value.clamp(0, num_pred).long()


def generated_slots(counts: Tensor, num_pred: int) -> tuple[Tensor, Tensor]:
    """``(owner, slot)`` of every generated neighbour in use: slot ``p < counts[owner]``, owner-major order."""
    keep = torch.arange(num_pred, device=counts.device)[None, :] < counts[:, None]
    owner, slot = keep.nonzero(as_tuple=True)
    return owner, slot


def mend_graph(data: Data, counts: Tensor, features: Tensor) -> Data:
    """``data`` plus, for each node ``v``, its first ``counts[v]`` generated neighbours (rows of ``features``,
    ``(n, P, F)``) as new nodes ``n, n+1, ...`` linked both ways to ``v`` (FedSage+, Sec. 3.3, "mended graph").

    The new nodes have label 0 and no split mask (they are never trained on or scored); ``generated`` marks
    them and ``generated_owner`` gives each one's node.
    """
    n, num_pred, _ = features.shape
    owner, slot = generated_slots(counts, num_pred)
    new = torch.arange(n, n + owner.numel(), device=owner.device)
    edges = torch.cat([data.edge_index, torch.stack([owner, new]), torch.stack([new, owner])], 1)
    pad = owner.numel()
    masks = {f"{s}_mask": torch.cat([getattr(data, f"{s}_mask"), torch.zeros(pad, dtype=torch.bool)])
             for s in ("train", "val", "test")}
    return Data(x=torch.cat([data.x, features[owner, slot].to(data.x.dtype)]), edge_index=edges,
                y=torch.cat([data.y, torch.zeros(pad, dtype=data.y.dtype)]), num_nodes=n + pad,
                generated=torch.cat([torch.zeros(n, dtype=torch.bool), torch.ones(pad, dtype=torch.bool)]),
                generated_owner=owner, **masks)


def matching_loss(generated: Tensor, counts: Tensor, targets: Tensor, target_mask: Tensor | None = None) -> Tensor:
    r"""The feature-matching loss of Eqs. (3) and (6): the mean, over node ``v`` and slot ``p < counts[v]``, of
    :math:`\min_k \lVert \tilde x_v^p - t_k\rVert^2 / F`.

    ``targets`` is ``(n, K, F)`` with ``target_mask`` ``(n, K)`` (each node its own candidates: its hidden
    neighbours, or another client's sampled features; nodes without any are left out) or ``(M, F)`` (one pool
    for every node: all of another client's nodes, Eq. (6)). Zero (still differentiable) when no pair counts.
    """
    n, num_pred, width = generated.shape
    valid = torch.arange(num_pred, device=generated.device)[None, :] < counts[:, None]
    square = generated.pow(2).sum(-1)
    if targets.dim() == 2:
        if targets.size(0) == 0:
            return generated.sum() * 0
        dist = square[..., None] + targets.pow(2).sum(-1) - 2 * generated @ targets.T
    else:
        dist = square[..., None] + targets.pow(2).sum(-1)[:, None, :] - 2 * generated @ targets.transpose(1, 2)
        dist = dist.masked_fill(~target_mask[:, None, :], float("inf"))
        valid = valid & target_mask.any(1, keepdim=True)
    if not bool(valid.any()):
        return generated.sum() * 0
    closest = dist.min(-1).values.clamp_min(0) / width
    return closest[valid].mean()


def zero_gradient(like: Tensor) -> Tensor:
    """An all-zero tensor shaped like ``like`` that stores one number (a stride-0 view): a reply's gradient when
    Eq. (6)'s term is zero. The channel counts it at its full size, as a network would carry it."""
    return like.new_zeros(()).expand(like.shape)


def neighbour_table(edge_index: Tensor, num_nodes: int) -> Tensor:
    """``(num_nodes, max_degree)`` neighbour ids per node, padded with ``-1``."""
    src, dst = edge_index
    order = torch.argsort(src, stable=True)
    src, dst = src[order], dst[order]
    degree = torch.bincount(src, minlength=num_nodes)
    rank = torch.arange(src.numel()) - (torch.cumsum(degree, 0) - degree)[src]
    table = torch.full((num_nodes, int(degree.max()) if src.numel() else 0), -1, dtype=torch.long)
    table[src, rank] = dst
    return table


# --------------------------------------------------------------------------- one client's NeighGen


@dataclass
class _Step:
    loss: Tensor
    loss_idx: Tensor
    counts: Tensor
    generator_input: Tensor
    features: Tensor


class NeighGenOwner:
    """One client's side of NeighGen's training: its impaired graph, its NeighGen and classifier, its optimiser.

    Holds the client's private data; the algorithm moves every cross-client quantity through the channel
    (:meth:`request` / :meth:`reply` / :meth:`step`).
    """

    def __init__(self, cid: int, data: Data, num_classes: int, config: ExperimentConfig, options: Mapping[str, Any],
                 device: torch.device):
        self.cid, self.name, self.options, self.config, self.device = cid, f"client{cid}", options, config, device
        seeds = np.random.SeedSequence([config.seed, cid, 7]).generate_state(2)
        self.rng = np.random.default_rng(seeds[0])
        self.torch_rng = torch.Generator().manual_seed(int(seeds[1]))
        self.num_pred = options["num_pred"]
        self.data = data
        self.impaired = impair_graph(data, options["hidden_portion"], self.num_pred, self.rng)
        g = self.impaired.data
        self.x, self.edge_index, self.y = g.x.float().to(device), g.edge_index.to(device), g.y.to(device)
        self.train_idx = g.train_mask.nonzero().view(-1).to(device)
        self.loss_idx = self.train_idx if options["generator_nodes"] == "train" else torch.arange(g.num_nodes, device=device)
        self.missing_count = self.impaired.missing_count.to(device)
        self.missing_features = self.impaired.missing_features.to(device)
        self.missing_mask = self.impaired.missing_mask.to(device)
        width = int(data.x.size(1))
        self.model = NeighGen(width, options["encoder_hidden"], options["latent_dim"], self.num_pred,
                              config.dropout, options["encoder"]).to(device)
        self.classifier = build_model(config.model, width, config.hidden, num_classes, num_layers=config.num_layers,
                                      dropout=config.dropout, **config.model_options).to(device)
        # another client's generated features are matched against this client's own nodes (Eq. (6))
        self.own_x = data.x.float().to(device)
        table = neighbour_table(data.edge_index, int(data.num_nodes))
        self.neighbours = table.to(device)
        self.with_neighbours = (table >= 0).any(1).nonzero().view(-1).to(device)
        self.optimizer: torch.optim.Optimizer | None = None

    # -- training ---------------------------------------------------------------------------------

    def start_phase(self, trainable: str) -> None:
        """``"all"``: NeighGen and classifier train; ``"fgen"``: only fGen (the rest frozen). A new Adam."""
        modules = [self.model, self.classifier]
        for m in modules:
            m.train()
            for name, p in m.named_parameters():
                p.requires_grad_(trainable == "all" or (m is self.model and name.startswith(f"{FGEN}.")))
        params = [p for m in modules for p in m.parameters() if p.requires_grad]
        self.optimizer = torch.optim.Adam(params, lr=self.options["generator_lr"],
                                          weight_decay=self.config.weight_decay, fused=True)

    def noise(self, rows: int) -> Tensor:
        return torch.randn(rows, self.options["latent_dim"], generator=self.torch_rng).to(self.device)

    def local_loss(self) -> _Step:
        """Eq. (3) on the impaired graph (one full-batch forward pass).

        fGen runs only on the rows whose output is used (the loss nodes and the nodes with generated
        neighbours): the other rows are linked to nothing, so they change no loss.
        """
        o, model, n = self.options, self.model, self.x.size(0)
        noise = self.noise(n)
        z = model.embed(self.x, self.edge_index)
        degree = model.missing_degree(z)
        counts = neighbour_counts(degree, self.num_pred, o["count_rounding"])
        rows = torch.unique(torch.cat([self.loss_idx, (counts > 0).nonzero().view(-1)]))
        position = torch.full((n,), -1, dtype=torch.long, device=self.device)
        position[rows] = torch.arange(rows.numel(), device=self.device)
        generator_input = (z + noise)[rows]
        features = model.fgen(generator_input, torch.zeros_like(generator_input))
        idx, at = self.loss_idx, position[self.loss_idx]
        loss_d = F.smooth_l1_loss(degree[idx], self.missing_count[idx]) if idx.numel() else degree.sum() * 0
        loss_f = matching_loss(features[at], counts[idx], self.missing_features[idx], self.missing_mask[idx])
        owner, slot = generated_slots(counts, self.num_pred)
        generated = n + position[owner] * self.num_pred + slot
        edges = torch.cat([self.edge_index, torch.stack([owner, generated]), torch.stack([generated, owner])], 1)
        x_mended = torch.cat([self.x, features.reshape(-1, self.x.size(1))])
        logits = self.classifier(x_mended, edges)[:n]
        loss_c = F.cross_entropy(logits[self.train_idx], self.y[self.train_idx]) if self.train_idx.numel() \
            else logits.sum() * 0
        loss = o["lambda_d"] * loss_d + o["lambda_f"] * loss_f + o["lambda_c"] * loss_c
        return _Step(loss, idx, counts[idx], generator_input[at], features[at])

    def request(self, step: _Step) -> dict[str, Tensor]:
        """What this client sends every other client for Eq. (6)'s cross term: a snapshot, built once per step
        and shared by the receivers (sent with ``copy=False``; they never change it in place)."""
        if self.options["cross_exchange"] == "parameters":
            params = {f"{FGEN}.{n}": p.detach().clone() for n, p in self.model.fgen.named_parameters()}
            return {**params, "fgen_input": step.generator_input.detach().clone(), "fgen_counts": step.counts.clone()}
        return {"generated_features": step.features.detach().clone(), "generated_counts": step.counts.clone()}

    def targets(self, rows: int) -> tuple[Tensor, Tensor | None]:
        """This client's features another client's generated rows are matched against (``cross_targets``)."""
        if self.options["cross_targets"] == "all":
            return self.own_x, None
        width, p = self.own_x.size(1), self.num_pred
        features = torch.zeros(rows, p, width, device=self.device)
        mask = torch.zeros(rows, p, dtype=torch.bool, device=self.device)
        if self.with_neighbours.numel() == 0 or rows == 0:
            return features, mask
        pick = torch.randint(self.with_neighbours.numel(), (rows,), generator=self.torch_rng).to(self.device)
        table = self.neighbours[self.with_neighbours[pick]]
        scores = torch.rand(table.shape, generator=self.torch_rng).to(self.device).masked_fill(table < 0, 2.0)
        k = min(p, table.size(1))
        chosen = table.gather(1, scores.topk(k, dim=1, largest=False).indices)
        features[:, :k] = self.own_x[chosen.clamp_min(0)]
        mask[:, :k] = chosen >= 0
        return features, mask

    def reply(self, request: Mapping[str, Tensor], input_gradient: bool) -> dict[str, Tensor]:
        """The gradient of ``cross_weight`` times Eq. (6)'s term on this client's features, for the requester.

        Only the requester's nodes with generated neighbours (``counts > 0``) enter the term, so fGen runs on
        those rows alone; when there are none the term is zero and so is every gradient, sent at its full size
        without computing it (:func:`zero_gradient`).
        """
        alpha = self.options["cross_weight"]
        if "fgen_input" in request:
            shapes = {n.removeprefix(f"{FGEN}."): t for n, t in request.items() if n.startswith(f"{FGEN}.")}
            counts, inputs = request["fgen_counts"], request["fgen_input"]
            rows = (counts > 0).nonzero().view(-1)
            if rows.numel() == 0:
                out = {f"{FGEN}_grad.{n}": zero_gradient(t) for n, t in shapes.items()}
                if input_gradient:
                    out["fgen_input_grad"] = zero_gradient(inputs)
                return out
            params = {n: t.detach().requires_grad_() for n, t in shapes.items()}
            used = inputs[rows].detach().requires_grad_()
            generated = functional_call(self.model.fgen, params, (used, torch.zeros_like(used)))
            counts = counts[rows]
            wrt = [*params.values(), used]
        else:
            generated = request["generated_features"].detach().requires_grad_()
            counts = request["generated_counts"]
            wrt = [generated]
        targets, mask = self.targets(generated.size(0))
        loss = alpha * matching_loss(generated, counts, targets, mask)
        grads = torch.autograd.grad(loss, wrt, allow_unused=True)
        grads = [torch.zeros_like(w) if g is None else g for w, g in zip(wrt, grads)]
        if "fgen_input" in request:
            out = {f"{FGEN}_grad.{n}": g for n, g in zip(params, grads)}
            if input_gradient:
                out["fgen_input_grad"] = inputs.new_zeros(inputs.shape).index_copy_(0, rows, grads[-1])
            return out
        return {"generated_features_grad": grads[0]}

    def step(self, step: _Step, replies: Sequence[Mapping[str, Tensor]]) -> float:
        """One Adam step on Eq. (3) plus the other clients' Eq. (6) terms, whose gradients ``replies`` carry
        (delivered without a copy: this client owns them and sums them in place)."""
        self.optimizer.zero_grad(set_to_none=True)
        # with no generated neighbour on this client's loss nodes Eq. (6)'s cross term is zero: so is every reply
        cross = bool(step.counts.any())
        total = step.loss
        for reply in replies if cross else ():
            if "fgen_input_grad" in reply:
                total = total + (step.generator_input * reply["fgen_input_grad"]).sum()
            if "generated_features_grad" in reply:
                total = total + (step.features * reply["generated_features_grad"]).sum()
        if total.requires_grad:
            total.backward()
        params = dict(self.model.fgen.named_parameters())
        for reply in replies:
            for name, grad in reply.items():
                if name.startswith(f"{FGEN}_grad."):
                    p = params[name.removeprefix(f"{FGEN}_grad.")]
                    if p.grad is None:
                        p.grad = grad.clone() if not cross else grad
                    elif cross:
                        p.grad.add_(grad)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)  # twenty clients' fGen gradients would otherwise stay in memory
        return float(step.loss.detach())

    # -- mending ----------------------------------------------------------------------------------

    @torch.no_grad()
    def mend(self) -> Data:
        """The client's own subgraph with NeighGen's generated neighbours (eval mode, noise on)."""
        self.model.eval()
        n = int(self.data.num_nodes)
        counts = torch.zeros(n, dtype=torch.long)
        features = torch.zeros(n, self.num_pred, self.data.x.size(1))
        if self.options["mend_input"] == "local":
            x, edges, rows = self.own_x, self.data.edge_index.to(self.device), torch.arange(n)
        else:
            x, edges, rows = self.x, self.edge_index, self.impaired.kept
        noise = self.noise(x.size(0))
        z = self.model.embed(x, edges)
        local_counts = neighbour_counts(self.model.missing_degree(z), self.num_pred, self.options["count_rounding"])
        used = (local_counts > 0).nonzero().view(-1)
        counts[rows] = local_counts.cpu()
        features[rows[used.cpu()]] = self.model.fgen(z[used] + noise[used], torch.zeros_like(z[used])).cpu()
        return mend_graph(self.data, counts, features)


# --------------------------------------------------------------------------- the algorithm


@register_algorithm
class FedSagePlus(FedSage):
    """FedSage+ (Zhang et al., NeurIPS 2021, Alg. 1): NeighGen (Eqs. 3, 6), mending, then FedSage; see
    :mod:`fglcore.algorithms.fedsage_plus` for every option and where the paper and the official codes differ."""

    name = "fedsage_plus"
    tasks = ("node",)
    honours_model_options = True  # FedSage's models and NeighGen's classifier (e.g. FedStruct's input LayerNorm)
    default_options = {
        **FedSage.default_options,
        "hidden_portion": 0.1,
        "num_pred": 5,
        "latent_dim": 128,
        "encoder_hidden": 32,
        "encoder": "sage",
        "local_generator_epochs": 20,
        "federated_generator_epochs": 20,
        "generator_lr": 0.001,
        "federated_parameters": "fgen",
        "generator_nodes": "train",
        "cross_targets": "sampled",
        "cross_exchange": "parameters",
        "cross_weight": 1.0,
        "lambda_d": 1.0,
        "lambda_f": 1.0,
        "lambda_c": 1.0,
        "count_rounding": "floor",
        "mend_input": "local",
        "federation": "fedavg",
    }
    option_choices = {
        **FedSage.option_choices,
        "encoder": tuple(ENCODERS),
        "federated_parameters": (FGEN, "all"),
        "generator_nodes": ("train", "all"),
        "cross_targets": ("sampled", "all"),
        "cross_exchange": EXCHANGES,
        "count_rounding": ("floor", "round"),
        "mend_input": ("local", "impaired"),
        "federation": FEDERATIONS,
    }
    option_bounds = {
        "hidden_portion": Bounds(minimum=0, below=1),
        "num_pred": POSITIVE,
        "latent_dim": POSITIVE,
        "encoder_hidden": POSITIVE,
        "local_generator_epochs": NON_NEGATIVE,
        "federated_generator_epochs": NON_NEGATIVE,
        "generator_lr": Bounds(above=0),
        "cross_weight": NON_NEGATIVE,
        "lambda_d": NON_NEGATIVE,
        "lambda_f": NON_NEGATIVE,
        "lambda_c": NON_NEGATIVE,
    }
    citation = ("Zhang, Yang, Li, Sun and Yiu, Subgraph Federated Learning with Missing Neighbor Generation, "
                "NeurIPS 2021 (FedSage+)")

    mended: list[Data]
    generator_losses: list[list[float]]

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> dict[str, Any]:
        """FedAvg's own options (``share``, ``norm_layers``, ``reset_optimizer``) only with ``federation="fedavg"``."""
        merged = super().check_options(options)
        if merged["federation"] == "fedsgd":
            changed = [key for key in FEDAVG_ONLY_OPTIONS if merged[key] != cls.default_options[key]]
            if changed:
                raise ConfigError(
                    f"algorithm_options.{changed[0]}: a FedAvg option, but federation is 'fedsgd' (every parameter "
                    f"shared, one gradient per round); leave {', '.join(FEDAVG_ONLY_OPTIONS)} at their defaults or "
                    "set federation to 'fedavg'")
        return merged

    def memory_estimate(self) -> int:
        """Bytes of NeighGen's phase, at most: every client's fGen (parameters and Adam's two moments, 12 bytes a
        parameter; its widths are ``latent_dim``, 256, 2048 and ``num_pred`` x the features, so nearly all of it
        is the last layer) held at once, plus one step's request snapshot, its own gradient and the other
        clients' replies (4 bytes a parameter each, when no reply is a zero gradient). CiteSeer (3,703
        features), 20 clients: 12.5 GB (measured 12.4 GB resident); Cora, 20 clients: 4.9 GB (measured 3.8:
        most replies are zero gradients there)."""
        widths = [self.options["latent_dim"], *GENERATOR_HIDDEN, self.options["num_pred"] * self.federation.num_features]
        fgen = sum(a * b + b for a, b in zip(widths[:-1], widths[1:]))
        k = len(self.clients_data)
        return (12 * k + 4 * (k - 1) + 8) * fgen

    def build(self, channel: Channel) -> tuple[Server, list[Client]]:
        """Train the NeighGens (through ``channel``, ledger round 0), mend every client's graph, then FedSage."""
        need, memory = self.memory_estimate(), memory_bytes()
        if memory and need > 0.9 * memory:
            raise ConfigError(f"num_clients: FedSage+'s {len(self.clients_data)} NeighGens on {self.config.dataset} "
                              f"({self.federation.num_features} features) need about {need / 1e9:.1f} GB at once, "
                              f"more than this machine's {memory / 2**30:.1f} GiB can hold; use fewer clients, a "
                              "smaller num_pred, or a machine with more memory")
        self.mended = self.mend_graphs(channel)
        return super().build(channel)

    def mend_graphs(self, channel: Channel) -> list[Data]:
        """Phase 1 of Alg. 1: NeighGen's local then federated training, then each client's mended graph.

        ``generator_losses[i]`` records client ``i``'s Eq. (3) loss at every step (local, then federated).
        """
        set_seed(self.config.seed)
        o = self.options
        owners = [NeighGenOwner(cid, data, self.num_classes, self.config, o, self.device)
                  for cid, data in enumerate(self.clients_data)]
        self.generator_losses = [[] for _ in owners]
        self.impaired = [owner.impaired for owner in owners]
        for owner in owners:
            owner.start_phase("all")
        for _ in range(o["local_generator_epochs"]):
            for owner in owners:
                self.generator_losses[owner.cid].append(owner.step(owner.local_loss(), []))
        for owner in owners:
            owner.start_phase(o["federated_parameters"])
        input_gradient = o["federated_parameters"] == "all"
        for _ in range(o["federated_generator_epochs"]):
            for owner in owners:
                step = owner.local_loss()
                request = owner.request(step)
                replies = []
                for other in owners:
                    if other is owner:
                        continue
                    got = channel.send(owner.name, other.name, request, PRE_TRAINING, copy=False)
                    replies.append(channel.send(other.name, owner.name, other.reply(got, input_gradient),
                                                PRE_TRAINING, copy=False))
                self.generator_losses[owner.cid].append(owner.step(step, replies))
        return [owner.mend() for owner in owners]

    def shared_names(self, models: Sequence[nn.Module]) -> list[str]:
        if self.options["federation"] == "fedsgd":
            return FedSGD.shared_names(self, models)
        return super().shared_names(models)

    def make_server(self, parameters: dict[str, Tensor]) -> FedAvgServer:
        if self.options["federation"] == "fedsgd":
            return FedSGDServer(parameters, self.config)
        return super().make_server(parameters)

    def make_client(self, cid: int, trainer: Trainer, shared: Sequence[str]) -> FedAvgClient:
        if self.options["federation"] == "fedsgd":
            return FedSGDClient(cid, trainer, shared, client_weight(self.clients_data[cid], self.options["weighting"]))
        return super().make_client(cid, trainer, shared)

    def make_trainer(self, model: nn.Module, cid: int) -> Trainer:
        """FedSage's trainer on client ``cid``'s mended graph (its own nodes' masks; generated nodes unlabelled)."""
        return NodeTrainer(model, self.mended[cid], self.config, self.device)
