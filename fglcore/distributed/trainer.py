r"""Training of the local-bias paper's distributed GNN over an :class:`~fglcore.distributed.exchange.Exchange`.

Zhang et al., "Tackling the Local Bias in Federated Graph Learning"
(arXiv 2110.12906), Algorithm 1 (body reconstructed in the digest, §2.8).
One epoch, for the clients this process hosts (all of them in the
simulation, one in a Gloo process), in lockstep with the others:

1. **sample** (``variant`` ``"ours"``/``"ours*"``): label-guided draws
   (:mod:`~fglcore.distributed.sampling`); the sampled boundary ids go to
   the neighbours (``sampled_ids``). ``"ours-full"``: every node, :math:`p
   \equiv 1`. ``"bns"`` (BNS-GCN, :mod:`fglcore.algorithms.bns_gcn`): every
   own node, a share ``boundary_ratio`` of the boundary toward each
   neighbour, whose ids go to that neighbour;
2. **forward**, layer by layer (Eq. 2): dropout on the layer's input, Eq.
   5's scaling :math:`\tilde H = H/p` (``"ours"`` only), the client computes
   :math:`\tilde H W`, its self term and one local term
   :math:`M_{jk} = \hat L_{jk}[S_j,S_k] \tilde H_k W` per neighbour
   :math:`j`, which it sends (``local_term_l``); it adds the terms it
   receives to its self term and the bias, then ReLU;
3. **loss** (Eq. 3, A4, A6): the mean cross-entropy over every sampled
   training node of all clients, i.e. client :math:`k` contributes
   :math:`\sum_{i \in S_k \cap \text{train}} \mathrm{CE}_i / |S \cap
   \text{train}|` (the global count is a server sum, ``train_count``);
4. **backward** (Eq. 4): autograd; each received local term's gradient goes
   back to its sender (``local_term_l_grad``, :func:`exchange_messages`),
   which completes :math:`\hat L^\top G W^\top` locally;
5. **weight gradients** summed over clients by the server and sent back
   (``weight_grad``); every client takes the same optimiser step, so the
   model copies stay equal.

:meth:`DistributedTrainer.logits` is full distributed inference (A8:
:math:`S_k = V_k`, :math:`p \equiv 1`, no dropout), which equals the
centralised model's forward pass with the same weights.

Randomness: each hosted client draws its sample and dropout masks from its
own generator seeded by ``client_seed(seed, cid)``, so a client computes the
same numbers whether simulated or in its own process.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from fglcore.config import ExperimentConfig
from fglcore.distributed.exchange import Exchange, exchange_messages
from fglcore.distributed.sampling import budget, draw_distribution, sample_nodes
from fglcore.distributed.shard import EpochPlan, Shard
from fglcore.models.distributed_gnn import DistributedGNN
from fglcore.models.operators import coo_product

VARIANTS = ("ours", "ours*", "ours-full")
BNS = "bns"  # BNS-GCN's boundary-node sampling (algorithm bns_gcn), not a variant of the local-bias method


@dataclass(frozen=True)
class SamplingOptions:
    """``variant`` (``ours``, ``ours*``, ``ours-full``; or ``bns``: BNS-GCN), ``sample_ratio`` (s/N),
    ``sampling`` scheme, ``label_source`` and ``normalise_self`` (see :mod:`fglcore.distributed.sampling` and
    :mod:`fglcore.distributed.shard`), ``boundary_ratio`` (BNS-GCN's p)."""

    variant: str = "ours"
    sample_ratio: float = 0.25
    sampling: str = "draws"
    label_source: str = "train"
    normalise_self: bool = True
    boundary_ratio: float = 0.1  # BNS-GCN's p (variant "bns")


class DistributedTrainer:
    """Trains ``model`` on the hosted ``shards``; ``model`` is shared by the shards of one process."""

    def __init__(self, shards: list[Shard], exchange: Exchange, model: DistributedGNN, config: ExperimentConfig,
                 options: SamplingOptions):
        # imported here: fglcore.algorithms imports this module (algorithm "localbias")
        from fglcore.algorithms.training import client_seed, make_optimizer

        self.shards = shards
        self.exchange = exchange
        self.model = model
        self.options = options
        self.optimizer = make_optimizer(model.parameters(), config)
        self.generators = {s.cid: torch.Generator().manual_seed(client_seed(config.seed, s.cid)) for s in shards}
        self.draws = {s.cid: draw_distribution(s.y, s.masks["train"], options.label_source) for s in shards}
        self.epoch_seconds: list[float] = []
        self.exchange_seconds: list[float] = []
        """Per training epoch, the seconds of :attr:`epoch_seconds` spent inside collectives
        (:attr:`~fglcore.distributed.exchange.Exchange.collective_seconds`; 0 in one process)."""
        exchange.epoch = 0
        sends = {pair: t for s in shards for pair, t in s.degree_messages().items()}
        rows = {pair: r for s in shards for pair, r in s.degree_rows().items()}
        received = exchange.all_to_all(sends, rows, 1, torch.float64, "degree")
        for s in shards:
            s.take_degrees({pair: t for pair, t in received.items() if pair[1] == s.cid})
        self._full: dict[int, EpochPlan] | None = None

    # -- plans --------------------------------------------------------------------------------------

    def sample_plans(self) -> dict[int, EpochPlan]:
        """This epoch's sampled subgraph (``ours``, ``ours*``) or the whole graph (``ours-full``)."""
        o = self.options
        if o.variant == "ours-full":
            return self.full_plans()
        if o.variant == BNS:
            return self.bns_plans()
        picks = {}
        for s in self.shards:
            picks[s.cid] = sample_nodes(self.draws[s.cid], budget(s.n, o.sample_ratio), o.sampling,
                                        self.generators[s.cid])
        sends = {pair: t for s in self.shards for pair, t in s.sampled_id_messages(picks[s.cid][0]).items()}
        got = self.share_ids(sends)
        plans = {}
        for s in self.shards:
            nodes, inclusion = picks[s.cid]
            far = {j: got[(j, s.cid)].view(-1) for j in s.neighbours}
            plans[s.cid] = s.plan(nodes, inclusion if o.variant == "ours" else None, far, o.normalise_self)
        return plans

    def share_ids(self, sends: dict[tuple[int, int], Tensor]) -> dict[tuple[int, int], Tensor]:
        """Deliver each ``(sender, receiver)`` list of sampled positions (``sampled_ids``); a receiver does not
        know how many ids come, so it learns the counts first (``sampled_count``, 8 bytes per pair)."""
        counts = self.exchange.all_to_all({p: torch.tensor([[t.shape[0]]]) for p, t in sends.items()},
                                          {(j, s.cid): 1 for s in self.shards for j in s.neighbours},
                                          1, torch.int64, "sampled_count")
        return self.exchange.all_to_all(sends, {p: int(c) for p, c in counts.items()}, 1, torch.int64,
                                        "sampled_ids")

    def bns_plans(self) -> dict[int, EpochPlan]:
        """BNS-GCN's epoch (:meth:`Shard.bns_plan`): each client picks its boundary share toward every neighbour
        and sends the picked positions, as the official code's ``one_hops`` transfer."""
        picks = {s.cid: s.boundary_choice(self.options.boundary_ratio, self.generators[s.cid]) for s in self.shards}
        sends = {(s.cid, j): picks[s.cid][0][j].view(-1, 1) for s in self.shards for j in s.neighbours}
        got = self.share_ids(sends)
        return {s.cid: s.bns_plan(*picks[s.cid], {j: got[(j, s.cid)].view(-1) for j in s.neighbours})
                for s in self.shards}

    def full_plans(self) -> dict[int, EpochPlan]:
        if self._full is None:
            self._full = {s.cid: s.full_plan() for s in self.shards}
        return self._full

    # -- the distributed forward pass (Eq. 2) -------------------------------------------------------

    def forward(self, plans: dict[int, EpochPlan], train: bool) -> dict[int, Tensor]:
        """Logits of every hosted client's plan nodes; with ``train``, dropout and autograd messages."""
        model = self.model
        h: dict[int, Tensor] = {}
        self.anchor = torch.zeros(())
        for layer in range(model.num_layers):
            width = model.dims[layer + 1]
            sends, selves, rows, anchors = {}, {}, {}, []
            for s in self.shards:
                plan = plans[s.cid]
                generator = self.generators[s.cid] if train and model.drops(layer) else None
                if layer == 0:  # the plan nodes' features, dropped (sparse COO for bag-of-words features)
                    x = s.features(plan, generator, model.dropout)
                else:
                    x = h[s.cid]
                    if generator is not None:
                        x = x * (torch.rand(x.shape, generator=generator) >= model.dropout) / (1.0 - model.dropout)
                scaled = _rows_times(x, plan.scale)  # Eq. 5: H-tilde = H / p
                raw = _rows_times(x, plan.root_scale) if model.backbone == "1gnn" else None
                hw = model.neighbour_input(layer, scaled)
                anchors.append(hw)
                own = coo_product(plan.self_op, hw)  # torch.sparse.mm's sums, as cached CSR products
                selves[s.cid] = own if raw is None else own + model.root_term(layer, raw)
                for j, op in plan.send_ops.items():
                    sends[(s.cid, j)] = coo_product(op, hw)
                for j, index in plan.recv_index.items():
                    rows[(j, s.cid)] = int(index.numel())
            name = f"local_term_{layer + 1}" + ("" if train else "_eval")
            if train:
                got, anchor = exchange_messages(self.exchange, name, sends, rows, width, anchors[0])
                self.anchor = self.anchor + anchor
            else:
                got = self.exchange.all_to_all(sends, rows, width, torch.float32, name)
            for s in self.shards:
                z = selves[s.cid]
                for j, index in plans[s.cid].recv_index.items():
                    z = z.index_add(0, index, got[(j, s.cid)])
                z = model.finish(layer, z)
                h[s.cid] = z.relu() if layer < model.num_layers - 1 else z
        return h

    # -- training ---------------------------------------------------------------------------------------

    def train_epoch(self, epoch: int) -> dict[int, float]:
        """One epoch (one sampled subgraph, one optimiser step, A7); each hosted client's share of the loss."""
        start, exchanged = time.perf_counter(), self.exchange.collective_seconds
        self.exchange.epoch = epoch
        self.model.train()
        _, parts = self.gradients(self.sample_plans())
        self.optimizer.step()
        self.epoch_seconds.append(time.perf_counter() - start)
        self.exchange_seconds.append(self.exchange.collective_seconds - exchanged)
        return {cid: float(part) for cid, part in parts.items()}

    def gradients(self, plans: dict[int, EpochPlan]) -> tuple[dict[int, Tensor], dict[int, Tensor]]:
        """Forward (Eq. 2), the loss (Eq. 3), backward (Eq. 4) and the server's sum of the weight gradients,
        left in the parameters' ``.grad``; returns the logits and each hosted client's share of the loss."""
        counts = torch.tensor([float(plans[s.cid].train.numel()) for s in self.shards])
        total = float(self.exchange.sum_over_clients([c.view(1) for c in counts], "train_count"))
        self.optimizer.zero_grad(set_to_none=True)
        out = self.forward(plans, train=True)
        parts = {}
        for s in self.shards:
            idx = plans[s.cid].train
            target = s.y[plans[s.cid].nodes[idx]]
            parts[s.cid] = F.cross_entropy(out[s.cid][idx], target, reduction="sum") / max(total, 1.0)
        (torch.stack(list(parts.values())).sum() + self.anchor).backward()  # anchor: see exchange_messages
        self.exchange.sum_gradients(list(self.model.parameters()))
        return ({cid: o.detach() for cid, o in out.items()}, {cid: p.detach() for cid, p in parts.items()})

    @torch.no_grad()
    def logits(self) -> dict[int, Tensor]:
        """Full distributed inference (A8): every node, :math:`p \\equiv 1`, no dropout."""
        self.model.eval()
        return self.forward(self.full_plans(), train=False)


def _rows_times(x: Tensor, factor: Tensor | None) -> Tensor:
    """``x`` (dense, or sparse COO) with row ``i`` multiplied by ``factor[i]`` (``None``: unchanged)."""
    if factor is None:
        return x
    factor = factor.to(x.dtype)
    if x.is_sparse:
        index = x.indices()
        return torch.sparse_coo_tensor(index, x.values() * factor[index[0]], x.shape, check_invariants=False,
                                       is_coalesced=True)
    return x * factor.view(-1, 1)
