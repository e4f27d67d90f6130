r"""One client's share of the global graph for the distributed GNN (local-bias paper, Eqs. 1, 2 and 5).

Client :math:`k` holds its nodes' features and labels and every edge that
touches them, the row block :math:`[A_{k1}, \dots, A_{kK}]` (Eq. 1); its
cross-client edges come from the federation
(:func:`~fglcore.data.federation.build_clients` with ``keep_cross_edges``,
grouped by owner with :func:`~fglcore.data.federation.cross_blocks`).

For a neighbouring client :math:`j` the client's *boundary* toward
:math:`j` is the set of its nodes with an edge to :math:`j` (ascending global
id). In an undirected graph client :math:`j`'s *far* nodes owned by
:math:`k` are exactly :math:`k`'s boundary toward :math:`j`, in the same
order: the rows of Eq. 2's local term :math:`M_{kj}` (sent by :math:`j`)
are these nodes, restricted to the sampled ones.

What a client learns from others, once (Algorithm 1's inputs): the global
degrees :math:`\hat D` of its far nodes (``degree`` messages, epoch 0), so
it can weigh :math:`\hat L_{kj} = \hat D_k^{-1/2} A_{kj} \hat D_j^{-1/2}`;
and every epoch, which of its far nodes were sampled (``sampled_ids``:
positions in the sender's boundary list; digest §2.2).

:meth:`Shard.plan` turns one epoch's sample (:mod:`fglcore.distributed.sampling`)
into the sparse operators of the sampled subgraph, with the global
:math:`\hat L` entries (never renormalised, A19) and Eq. 5's :math:`1/p`
applied to the inputs of every aggregation (A3; ``normalise_self=False``
leaves the self term unscaled).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor
from torch_geometric.data import Data

from fglcore.data.federation import cross_blocks


def _sparse(rows: Tensor, cols: Tensor, values: Tensor, shape: tuple[int, int]) -> Tensor:
    return torch.sparse_coo_tensor(torch.stack([rows, cols]), values, shape, check_invariants=False).coalesce()


def _sparse_entries(x: Tensor) -> tuple[Tensor, Tensor, Tensor] | None:
    """``(rows, cols, values)`` of sparse bag-of-words features (density at most
    :data:`~fglcore.models.sparse_input.MAX_DENSITY`, unless ``FGL_SPARSE_FEATURES=0``); ``None`` otherwise."""
    from fglcore.models.sparse_input import MAX_DENSITY, sparse_features_enabled

    nonzero = x != 0
    if not sparse_features_enabled() or x.numel() == 0 or nonzero.float().mean().item() > MAX_DENSITY:
        return None
    rows, cols = torch.nonzero(nonzero, as_tuple=True)
    return rows, cols, x[rows, cols]


@dataclass
class EpochPlan:
    """One epoch's sampled subgraph seen from one client (all indices in its *sample space* 0..|S_k|-1)."""

    nodes: Tensor              # S_k, ascending local ids
    scale: Tensor | None       # 1/p_i on S_k (None: no normalisation)
    self_op: Tensor            # sparse |S_k| x |S_k|: intra block (and GCN self-loops)
    root_scale: Tensor | None  # 1-GNN self term's row factor (None: unscaled)
    send_ops: dict[int, Tensor]  # j -> sparse rows(M_jk) x |S_k|: the local term this client sends j
    recv_index: dict[int, Tensor]  # j -> sample-space rows of the local term received from j
    train: Tensor              # sample-space indices of the sampled training nodes
    everything: bool = False   # S_k = V_k (then ``nodes`` is 0..n_k-1)


class Shard:
    """Client ``cid``'s graph data and adjacency blocks; ``backbone`` picks the weights (GCN or 1-GNN)."""

    def __init__(self, cid: int, client: Data, backbone: str):
        if not hasattr(client, "cross_edge_index"):
            raise ValueError("Shard needs a client built with keep_cross_edges=True")
        self.cid = cid
        self.backbone = backbone
        self.n = int(client.num_nodes)
        self.x = client.x.float()
        self.y = client.y.view(-1).long()
        self.masks = {s: getattr(client, f"{s}_mask").bool() for s in ("train", "val", "test")}
        self.global_id = client.global_id.long()
        self.degree = (client.global_degree.double() + 1.0)  # D-hat: global degree with the self-loop
        self.intra = client.edge_index.long()
        self.boundary: dict[int, Tensor] = {}    # j -> own local ids adjacent to j (ascending)
        self.far_edges: dict[int, tuple[Tensor, Tensor]] = {}  # j -> (own local id, position in far list)
        self.far_size: dict[int, int] = {}
        for j, edges in cross_blocks(client).items():
            own, far = edges[0].long(), edges[1].long()
            far_ids, position = torch.unique(far, return_inverse=True)
            self.boundary[j] = torch.unique(own)
            self.far_edges[j] = (own, position)
            self.far_size[j] = int(far_ids.numel())
        self.far_degree: dict[int, Tensor] = {}
        self.sparse_x = _sparse_entries(self.x)

    def features(self, plan: "EpochPlan", generator: torch.Generator | None, rate: float) -> Tensor:
        """The plan nodes' features with dropout at ``rate`` drawn from ``generator`` (``None``: none):
        a coalesced sparse COO matrix for bag-of-words features (dropping a zero changes nothing, so only
        the nonzero entries draw a mask), dense otherwise."""
        if self.sparse_x is None:
            x = self.x if plan.everything else self.x[plan.nodes]
            if generator is not None:
                x = x * (torch.rand(x.shape, generator=generator) >= rate) / (1.0 - rate)
            return x
        rows, cols, values = self.sparse_x
        where = torch.full((self.n,), -1, dtype=torch.long)
        where[plan.nodes] = torch.arange(plan.nodes.numel())
        keep = where[rows] >= 0
        r, c, v = where[rows[keep]], cols[keep], values[keep]
        if generator is not None:
            v = v * (torch.rand(v.shape, generator=generator) >= rate) / (1.0 - rate)
        shape = (int(plan.nodes.numel()), int(self.x.shape[1]))
        return torch.sparse_coo_tensor(torch.stack([r, c]), v, shape, check_invariants=False).coalesce()

    @property
    def neighbours(self) -> list[int]:
        return sorted(self.boundary)

    # -- the one-off degree exchange -------------------------------------------------------------------

    def degree_messages(self) -> dict[tuple[int, int], Tensor]:
        return {(self.cid, j): self.degree[b].view(-1, 1) for j, b in self.boundary.items()}

    def degree_rows(self) -> dict[tuple[int, int], int]:
        return {(j, self.cid): self.far_size[j] for j in self.neighbours}

    def take_degrees(self, received: dict[tuple[int, int], Tensor]) -> None:
        for (j, _), deg in received.items():
            self.far_degree[j] = deg.view(-1).double()

    # -- one epoch's sample -------------------------------------------------------------------------

    def sampled_id_messages(self, nodes: Tensor) -> dict[tuple[int, int], Tensor]:
        """Per neighbour ``j``: positions, in the boundary toward ``j``, of the nodes sampled here."""
        mask = torch.zeros(self.n, dtype=torch.bool)
        mask[nodes] = True
        return {(self.cid, j): torch.nonzero(mask[b]).view(-1, 1) for j, b in self.boundary.items()}

    def plan(self, nodes: Tensor, inclusion: Tensor | None, far_sampled: dict[int, Tensor],
             normalise_self: bool = True) -> EpochPlan:
        """The operators of the sampled subgraph; ``inclusion`` = :math:`p_i` (``None``: no 1/p scaling);
        ``far_sampled[j]`` = positions of the sampled far nodes owned by ``j`` (received ids)."""
        m = int(nodes.numel())
        where = torch.full((self.n,), -1, dtype=torch.long)
        where[nodes] = torch.arange(m)
        scale = torch.ones(m, dtype=torch.float64) if inclusion is None else 1.0 / inclusion.double()
        gcn = self.backbone == "gcn"
        dinv = self.degree.rsqrt()
        # self block: intra edges between sampled nodes (+ GCN self-loops), columns scaled by 1/p (Eq. 5)
        src, dst = self.intra
        keep = (where[src] >= 0) & (where[dst] >= 0)
        rows, cols = where[dst[keep]], where[src[keep]]
        values = dinv[dst[keep]] * dinv[src[keep]] if gcn else torch.ones(rows.numel(), dtype=torch.float64)
        # the operators hold the global L-hat entries only: Eq. 5's 1/p scales the input rows (the trainer);
        # normalise_self=False takes it back off the self term (a self-loop weight times p_i)
        root_scale = None if inclusion is None or not normalise_self else scale
        if gcn:
            loop = torch.arange(m)
            loop_values = dinv[nodes] ** 2 * (1.0 if normalise_self else 1.0 / scale)
            rows, cols, values = torch.cat([rows, loop]), torch.cat([cols, loop]), torch.cat([values, loop_values])
        self_op = _sparse(rows, cols, values.float(), (m, m))
        send_ops, recv_index = {}, {}
        for j in self.neighbours:
            own, position = self.far_edges[j]
            far_rows = torch.full((self.far_size[j],), -1, dtype=torch.long)
            sampled = far_sampled[j].view(-1)
            far_rows[sampled] = torch.arange(sampled.numel())
            keep = (where[own] >= 0) & (far_rows[position] >= 0)
            r, c = far_rows[position[keep]], where[own[keep]]
            if gcn:
                v = self.far_degree[j].rsqrt()[position[keep]] * dinv[own[keep]]
            else:
                v = torch.ones(r.numel(), dtype=torch.float64)
            send_ops[j] = _sparse(r, c, v.float(), (int(sampled.numel()), m))
            mine = self.boundary[j]
            recv_index[j] = where[mine[where[mine] >= 0]]
        train = where[nodes[self.masks["train"][nodes]]]
        return EpochPlan(nodes, None if inclusion is None else scale, self_op, root_scale, send_ops, recv_index,
                         train, everything=m == self.n)

    def full_plan(self) -> EpochPlan:
        """Every node, :math:`p \\equiv 1`: the exact full-graph layer (Eq. 2; inference and ``ours-full``)."""
        far_all = {j: torch.arange(self.far_size[j]) for j in self.neighbours}
        return self.plan(torch.arange(self.n), None, far_all)

    # -- BNS-GCN: every own node, a share of the boundary toward each neighbour ----------------------------

    def boundary_choice(self, ratio: float, generator: torch.Generator) -> tuple[dict[int, Tensor], dict[int, float]]:
        """BNS-GCN's per-epoch choice (official ``select_node``/``get_send_size``): toward every neighbour
        ``j``, ``int(ratio * |boundary_j|)`` positions of the boundary uniformly without replacement
        (ascending), and the realised share ``s / |boundary_j|`` the sent terms are divided by."""
        chosen, share = {}, {}
        for j, b in self.boundary.items():
            size = int(ratio * int(b.numel()))
            chosen[j] = torch.sort(torch.randperm(int(b.numel()), generator=generator)[:size]).values
            share[j] = size / int(b.numel()) if size else 1.0
        return chosen, share

    def bns_plan(self, chosen: dict[int, Tensor], share: dict[int, float], far_chosen: dict[int, Tensor]) -> EpochPlan:
        r"""The operators of one BNS-GCN epoch (Wan et al., MLSys 2022; :mod:`fglcore.algorithms.bns_gcn`).

        Every own node is computed with the global :math:`\hat L` (``S_k = V_k``, no 1/p on the self term);
        toward neighbour ``j`` only the ``chosen[j]`` boundary nodes (positions in ``boundary[j]``) contribute,
        divided by ``share[j]``, and the term goes to the rows of ``j``'s nodes adjacent to them;
        ``far_chosen[j]`` are the positions, in the far list toward ``j``, of the nodes ``j`` chose toward this
        client (received ids): the rows received from ``j`` are the own nodes adjacent to them.
        """
        if getattr(self, "_full_plan", None) is None:
            self._full_plan = self.full_plan()
        full = self._full_plan
        dinv = self.degree.rsqrt()
        send_ops, recv_index = {}, {}
        for j in self.neighbours:
            own, position = self.far_edges[j]
            picked = torch.zeros(self.n, dtype=torch.bool)
            picked[self.boundary[j][chosen[j]]] = True
            keep = picked[own]
            rows_far = torch.unique(position[keep])
            row_of = torch.full((self.far_size[j],), -1, dtype=torch.long)
            row_of[rows_far] = torch.arange(rows_far.numel())
            if self.backbone == "gcn":
                v = self.far_degree[j].rsqrt()[position[keep]] * dinv[own[keep]]
            else:
                v = torch.ones(int(keep.sum()), dtype=torch.float64)
            send_ops[j] = _sparse(row_of[position[keep]], own[keep], (v / share[j]).float(),
                                  (int(rows_far.numel()), self.n))
            far_picked = torch.zeros(self.far_size[j], dtype=torch.bool)
            far_picked[far_chosen[j]] = True
            recv_index[j] = torch.unique(own[far_picked[position]])
        return EpochPlan(full.nodes, None, full.self_op, None, send_ops, recv_index, full.train, everything=True)
