r"""Graph samplers of the centralised mini-batch baselines: GraphSAGE's neighbour sampler and GraphSAINT's
random-walk sampler with its normalisation coefficients.

PyG's own loaders (``torch_geometric.loader.NeighborLoader``,
``GraphSAINTRandomWalkSampler``) need ``pyg-lib`` or ``torch-sparse``, which do
not install for the torch of this project (they raise ``ImportError`` when
used). :func:`pyg_sampling_available` says whether they could be used; the
algorithms (:mod:`~fglcore.algorithms.graphsage`,
:mod:`~fglcore.algorithms.graphsaint`) take the samplers below, which are built
on ``torch`` and ``torch_geometric.utils`` and do what PyG's do:

* :func:`sample_neighbours` -- Hamilton et al., "Inductive Representation
  Learning on Large Graphs", NeurIPS 2017, Alg. 2 (minibatch forward
  propagation with fixed-size uniform neighbour samples), as PyG's
  ``NeighborLoader(directed=True)``: hop :math:`h` samples, for every node
  reached at hop :math:`h-1` (the seeds at hop 1), at most ``fanouts[h-1]``
  of its in-neighbours uniformly *without* replacement (all of them when it has
  fewer); the mini-batch graph holds the sampled edges only. Its nodes list
  the seeds first (``batch_size`` of them, in the given order), then the nodes
  each hop adds (ascending global id within a hop, where PyG keeps the order
  of discovery -- the graph is the same up to a relabelling).
* :class:`RandomWalkSampler` -- Zeng et al., "GraphSAINT: Graph Sampling Based
  Inductive Learning Method", ICLR 2020, Sec. 3 and Alg. 1-2, random-walk
  sampler as PyG's ``GraphSAINTRandomWalkSampler``: ``roots`` start nodes
  uniformly at random, one uniform random walk of ``walk_length`` steps from
  each (a node without neighbours stays put, as ``torch_cluster``), the
  subgraph *induced* by the visited nodes (as ``torch_geometric.utils.subgraph``,
  with one node mask). Normalisation (paper Sec. 3.2,
  Alg. 2's pre-processing; PyG ``_compute_norm``): subgraphs are drawn in
  passes of ``num_steps`` until :math:`\text{coverage}\cdot N` nodes have
  been sampled; with :math:`C_v`, :math:`C_{u,v}` the counts of node
  :math:`v` and edge :math:`(u,v)` and :math:`n` the number of subgraphs
  drawn, the loss weight is :math:`\lambda_v = n / (C_v N)` (PyG's
  ``node_norm``; nodes never sampled count 0.1) and the aggregator weight is
  :math:`\alpha_{u,v} = C_{\cdot}/C_{u,v}` clamped to :math:`[0, 10^4]`
  (``nan`` -> 0.1). Which node count: ``edge_norm_node="target"`` (default)
  uses the aggregating node :math:`v` of an edge :math:`u \to v`, the
  paper's :math:`\alpha_{u,v} = p_{u,v}/p_v` and the official code
  (``norm_aggr_train`` divided into the row node's count); ``"source"`` the
  edge's first row entry ``edge_index[0]``, as PyG.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
from torch import Tensor
from torch_geometric.utils import sort_edge_index

from fglcore.algorithms.training import _exclusive_cumsum, _ranges

EDGE_NORM_NODES = ("target", "source")


def pyg_sampling_available() -> bool:
    """Whether PyG's samplers can run here (they need ``pyg-lib`` or ``torch-sparse``)."""
    import torch_geometric.typing as pyg_typing

    return bool(pyg_typing.WITH_PYG_LIB or pyg_typing.WITH_TORCH_SPARSE)


def csr(edge_index: Tensor, num_nodes: int, by: str) -> tuple[Tensor, Tensor]:
    """``(ptr, other)``: edges grouped by their ``by`` end (``"target"``: ``edge_index[1]``, ``"source"``:
    ``edge_index[0]``); ``other[ptr[v]:ptr[v+1]]`` are the other ends of ``v``'s edges, in edge order."""
    if by == "target":
        ordered = sort_edge_index(edge_index.flip(0), num_nodes=num_nodes, sort_by_row=True)
    else:
        ordered = sort_edge_index(edge_index, num_nodes=num_nodes, sort_by_row=True)
    counts = torch.bincount(ordered[0], minlength=num_nodes)
    ptr = torch.cat([counts.new_zeros(1), torch.cumsum(counts, 0)])
    return ptr, ordered[1]


@dataclass
class NeighbourSample:
    """One mini-batch of :func:`sample_neighbours`: ``n_id`` (global ids, seeds first), ``edge_index`` (sampled
    edges ``source -> target`` in positions of ``n_id``), ``batch_size`` (the seeds) and, per hop, how many
    edges each node reached at the previous hop got (``sampled_per_hop``). ``num_sampled_nodes`` and
    :attr:`num_sampled_edges` count the nodes and edges of each hop (the seeds first), as PyG's
    ``NeighborLoader`` batches carry them: edges are listed hop by hop, the targets of hop ``h`` being the nodes
    of hop ``h - 1``, so the nodes within ``h`` hops and the edges into them are prefixes (for
    :func:`torch_geometric.utils.trim_to_layer` and :class:`~fglcore.models.stacked.StackedGNN`'s trimming)."""

    n_id: Tensor
    edge_index: Tensor
    batch_size: int
    sampled_per_hop: list[Tensor]
    num_sampled_nodes: list[int]

    @property
    def num_sampled_edges(self) -> list[int]:
        return [int(count.sum()) for count in self.sampled_per_hop]


def sample_neighbours(ptr: Tensor, neighbours: Tensor, seeds: Tensor, fanouts: Sequence[int],
                      generator: torch.Generator) -> NeighbourSample:
    r"""GraphSAGE's neighbour sampling (module docstring); ``(ptr, neighbours)`` = :func:`csr` by target.
    A fan-out of ``-1`` takes every neighbour.

    A node with more in-neighbours than the fan-out ``k`` keeps ``k`` of them
    drawn by Robert Floyd's algorithm, as ``pyg-lib``'s CPU neighbour sampler
    (``pyg_lib/csrc/sampler/cpu/neighbor_kernel.cpp``, "Sample without
    replacement"): for :math:`i = d-k, \dots, d-1` draw :math:`r` uniform in
    :math:`[0, i]` and keep :math:`r`, or :math:`i` when :math:`r` is already
    kept -- every :math:`k`-subset of the :math:`d` neighbours equally likely,
    with :math:`k` draws per node (:func:`_floyd`, vectorised over the nodes);
    the kept edges of a node are listed in the order drawn.
    """
    num_nodes = ptr.numel() - 1
    where = torch.full((num_nodes,), -1, dtype=torch.long)
    where[seeds] = torch.arange(seeds.numel())
    n_id = [seeds]
    size = int(seeds.numel())
    frontier = seeds
    rows, cols, per_hop = [], [], []
    for fanout in fanouts:
        start, degree = ptr[frontier], ptr[frontier + 1] - ptr[frontier]
        count = degree if fanout < 0 else degree.clamp(max=fanout)
        edges = _ranges(start, count)  # a node's first ``count`` edges: all of them, or slots for Floyd's draws
        big = torch.nonzero(count < degree).view(-1)
        if big.numel():
            slots = _ranges(_exclusive_cumsum(count)[big], count[big])
            edges[slots] = (start[big].view(-1, 1) + _floyd(degree[big], fanout, generator)).view(-1)
        owner = torch.repeat_interleave(torch.arange(frontier.numel()), count, output_size=edges.numel())
        per_hop.append(count)
        source = neighbours[edges]
        unseen = torch.zeros(num_nodes, dtype=torch.bool)
        unseen[source[where[source] < 0]] = True
        new = torch.nonzero(unseen).view(-1)  # torch.unique's ascending ids, without sorting the edges
        where[new] = torch.arange(size, size + new.numel())
        size += int(new.numel())
        n_id.append(new)
        rows.append(where[source])
        cols.append(where[frontier[owner]])
        frontier = new
    edge_index = torch.stack([torch.cat(rows), torch.cat(cols)]) if rows else torch.empty(2, 0, dtype=torch.long)
    return NeighbourSample(torch.cat(n_id), edge_index, int(seeds.numel()), per_hop, [int(i.numel()) for i in n_id])


def _floyd(population: Tensor, k: int, generator: torch.Generator) -> Tensor:
    """``(len(population), k)`` offsets: row ``j`` is a uniform ``k``-subset of ``range(population[j])``
    (every ``population[j] > k``), by Robert Floyd's algorithm (:func:`sample_neighbours`), in the order drawn."""
    chosen = population.new_empty(population.numel(), k)
    for step in range(k):
        high = population - k + step  # draw in [0, high]
        draw = (torch.rand(population.numel(), generator=generator, dtype=torch.float64) * (high + 1)).long()
        draw = torch.minimum(draw, high)
        taken = (chosen[:, :step] == draw.view(-1, 1)).any(1)
        chosen[:, step] = torch.where(taken, high, draw)
    return chosen


@dataclass
class SaintSubgraph:
    """One GraphSAINT subgraph: ``node_idx`` (ascending global ids), ``edge_index`` (induced, in positions of
    ``node_idx``), ``edge_id`` (each edge's position in the full ``edge_index``)."""

    node_idx: Tensor
    edge_index: Tensor
    edge_id: Tensor


class RandomWalkSampler:
    """GraphSAINT's random-walk sampler and normalisation (module docstring) on one graph."""

    def __init__(self, edge_index: Tensor, num_nodes: int, roots: int, walk_length: int, generator: torch.Generator):
        self.edge_index = edge_index
        self.num_nodes = int(num_nodes)
        self.roots = int(roots)
        self.walk_length = int(walk_length)
        self.generator = generator
        self.ptr, self.out = csr(edge_index, self.num_nodes, "source")  # the walk follows edges row -> col

    def walk_nodes(self) -> Tensor:
        """Every node of ``roots`` uniform walks of ``walk_length`` steps (with repeats)."""
        current = torch.randint(0, self.num_nodes, (self.roots,), generator=self.generator)
        visited = [current]
        for _ in range(self.walk_length):
            degree = self.ptr[current + 1] - self.ptr[current]
            pick = (torch.rand(current.numel(), generator=self.generator, dtype=torch.float64) * degree).long()
            nxt = self.out[(self.ptr[current] + pick).clamp(max=max(self.out.numel() - 1, 0))] \
                if self.out.numel() else current
            current = torch.where(degree > 0, nxt, current)
            visited.append(current)
        return torch.cat(visited)

    def sample(self) -> SaintSubgraph:
        node_idx = torch.unique(self.walk_nodes())
        where = torch.full((self.num_nodes,), -1, dtype=torch.long)
        where[node_idx] = torch.arange(node_idx.numel())
        edge_id = torch.nonzero((where[self.edge_index[0]] >= 0) & (where[self.edge_index[1]] >= 0)).view(-1)
        return SaintSubgraph(node_idx, where[self.edge_index[:, edge_id]], edge_id)

    def normalisation(self, num_steps: int, coverage: float, edge_norm_node: str = "target") -> tuple[Tensor, Tensor]:
        """``(node_norm, edge_norm)`` estimated from pre-sampled subgraphs (module docstring)."""
        if edge_norm_node not in EDGE_NORM_NODES:
            raise ValueError(f"edge_norm_node: {edge_norm_node!r} is not accepted; accepted: "
                             f"{', '.join(EDGE_NORM_NODES)}")
        node_count = torch.zeros(self.num_nodes, dtype=torch.float64)
        edge_count = torch.zeros(self.edge_index.size(1), dtype=torch.float64)
        num_samples = total = 0
        while total < self.num_nodes * coverage:
            for _ in range(num_steps):
                sub = self.sample()
                node_count[sub.node_idx] += 1
                edge_count[sub.edge_id] += 1
                total += int(sub.node_idx.numel())
            num_samples += num_steps
        end = self.edge_index[1] if edge_norm_node == "target" else self.edge_index[0]
        edge_norm = (node_count[end] / edge_count).clamp(0, 1e4)
        edge_norm[torch.isnan(edge_norm)] = 0.1
        node_count[node_count == 0] = 0.1
        node_norm = num_samples / node_count / self.num_nodes
        return node_norm.float(), edge_norm.float()
