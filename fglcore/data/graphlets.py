r"""Node orbit counts of the graphlets with 2 to 5 nodes: the 73 orbits of Pržulj's graphlet degree vector.

Pržulj, "Biological network comparison using graphlet degree distribution",
Bioinformatics 23(2), 2007, numbers the 30 connected graphlets on 2-5 nodes
:math:`G_0, \dots, G_{29}` and the automorphism orbits of their nodes
:math:`0, \dots, 72`; the graphlet degree vector (GDV) of a node counts, for
every orbit, the *induced* graphlets in which the node sits at that orbit.
:func:`orbit_counts` computes it exactly with ORCA's combinatorial method
(Hočevar and Demšar, "A combinatorial approach to graphlet counting",
Bioinformatics 30(4), 2014; the node-orbit counter ``count5`` of ``orca.cpp``),
the method of FedStruct's official GDV (``src/utils/GDV.py`` of
``JavadAliakbari/FedStruct``, a pure-Python port of ORCA, used for the "GDV"
NSF of Table 8):

* orbits 0-14 (graphlets on at most 4 nodes) and the 4-node graphlets
  around each node are counted directly;
* every 5-node orbit count enters a linear equation with one *f*-value: a sum,
  over the 4-node graphlets that hold the node at a given orbit, of a
  quantity read off degrees, common neighbours of two nodes and of three
  nodes (ORCA's ``f_15`` ... ``f_71``); K5 (orbit 72) is counted directly;
  the triangular system (ORCA's equations) gives orbits 71, 70, ..., 15.

ORCA loops over each node, its neighbours and theirs in C++. Here, for each
node :math:`x`, every loop runs as whole-array operations: the neighbourhood's
4-node graphlets are enumerated as index arrays (CSR expansions, filtered by a
dense adjacency and, for common neighbours of three nodes, by AND-ed row
bitsets), and the loops whose *f*-values are sums of per-node quantities over
*all* pairs or triples of :math:`x`'s neighbours (the claw centre, orbit 7; the
paw's degree-3 node, 11; the claw leaf, 6; the path's inner node, 5) are
closed formulas over the neighbourhood's adjacency matrix instead. The counts
equal a brute-force enumeration of connected induced subgraphs
(``tests/test_node_structure.py``), and those of the official port on random
graphs whose edge list is sorted (by source, then target, as PyG's coalesced
graphs): that port counts the claw centre (orbits 7, 21, 23) over neighbour
lists in two orders that agree only then; these counts do not depend on the
order of the edges. Memory: a dense :math:`n \times n`
adjacency and common-neighbour count (5 bytes per pair), fine for the
FedStruct Table 8 graphs (Cora, CiteSeer, Chameleon), 2 GB for PubMed.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from torch import Tensor

NUM_ORBITS = 73
"""Orbits of the graphlets on 2-5 nodes (Pržulj 2007): 0 (edge), 1-3 (3 nodes), 4-14 (4 nodes), 15-72 (5 nodes)."""

_CHUNK = 1 << 21
"""Largest number of index tuples materialised at once."""

# ORCA's equations: orbit[k] = (f[k] - sum(c * orbit[j])) / divisor, solved from 71 down to 15.
EQUATIONS: dict[int, tuple[int, dict[int, int]]] = {
    71: (2, {72: 12}), 70: (1, {72: 4}), 69: (4, {71: 2}), 68: (1, {71: 2}), 67: (1, {72: 12, 71: 4}),
    66: (1, {72: 12, 71: 2, 70: 3}), 65: (2, {70: 3}), 64: (1, {71: 2, 69: 4, 68: 1}), 63: (1, {70: 3, 68: 2}),
    62: (2, {68: 1}), 61: (2, {71: 4, 69: 8, 67: 2}), 60: (1, {71: 4, 68: 2, 67: 2}),
    59: (1, {70: 6, 68: 2, 65: 4}), 58: (1, {72: 4, 71: 2, 67: 1}), 57: (1, {72: 12, 71: 4, 70: 3, 67: 1, 66: 2}),
    56: (3, {65: 2}), 55: (3, {71: 2, 67: 2}), 54: (2, {70: 3, 66: 1, 65: 2}), 53: (1, {68: 2, 64: 2, 63: 2}),
    52: (2, {66: 2, 64: 2, 59: 1}), 51: (1, {68: 2, 63: 2, 62: 4}), 50: (3, {68: 1, 63: 2}),
    49: (2, {68: 1, 64: 1, 62: 2}), 48: (1, {71: 4, 69: 8, 68: 2, 67: 2, 64: 2, 61: 2, 60: 1}),
    47: (1, {70: 3, 68: 2, 66: 1, 63: 1, 60: 1}), 46: (1, {70: 3, 68: 2, 65: 2, 63: 1, 59: 1}),
    45: (1, {65: 2, 62: 2, 56: 3}), 44: (4, {67: 1, 61: 2}), 43: (2, {66: 2, 60: 1, 59: 1}),
    42: (1, {71: 2, 69: 4, 67: 2, 61: 2, 55: 3}), 41: (1, {71: 2, 68: 1, 67: 2, 60: 1, 55: 3}),
    40: (1, {70: 6, 68: 2, 66: 2, 65: 4, 60: 1, 59: 1, 54: 4}), 39: (2, {65: 4, 59: 1, 56: 6}),
    38: (1, {68: 1, 64: 1, 63: 2, 53: 1, 50: 3}), 37: (1, {68: 2, 64: 2, 63: 2, 62: 4, 53: 1, 51: 1, 49: 4}),
    36: (1, {68: 1, 63: 2, 62: 2, 51: 1, 50: 3}), 35: (2, {59: 1, 52: 2, 45: 2}), 34: (2, {59: 1, 52: 2, 51: 1}),
    33: (2, {67: 1, 61: 2, 58: 3, 44: 4, 42: 2}), 32: (2, {66: 2, 60: 1, 59: 1, 57: 2, 43: 2, 41: 2, 40: 1}),
    31: (1, {65: 2, 59: 1, 56: 3, 43: 1, 39: 2}), 30: (1, {67: 1, 63: 1, 61: 2, 53: 1, 44: 4}),
    29: (1, {66: 2, 64: 2, 60: 1, 59: 1, 53: 1, 52: 2, 43: 2}), 28: (1, {65: 2, 62: 2, 59: 1, 51: 1, 43: 1}),
    27: (2, {59: 1, 51: 1, 45: 2}), 26: (1, {67: 2, 63: 2, 61: 2, 58: 6, 53: 1, 47: 2, 42: 2}),
    25: (2, {66: 2, 64: 2, 59: 1, 57: 2, 52: 2, 48: 1, 40: 1}),
    24: (1, {65: 4, 62: 4, 59: 1, 56: 6, 51: 1, 45: 2, 39: 2}), 23: (4, {55: 1, 42: 1, 33: 2}),
    22: (3, {54: 2, 40: 1, 39: 1, 32: 1, 31: 2}), 21: (1, {55: 3, 50: 3, 42: 2, 38: 2, 33: 2}),
    20: (1, {54: 2, 49: 2, 40: 1, 37: 1, 32: 1}), 19: (1, {54: 4, 49: 4, 40: 1, 39: 2, 37: 1, 35: 2, 31: 2}),
    18: (2, {59: 1, 51: 1, 46: 2, 45: 2, 36: 2, 27: 2, 24: 1}),
    17: (2, {60: 1, 53: 1, 51: 1, 48: 1, 37: 1, 34: 2, 30: 2}),
    16: (1, {59: 1, 52: 2, 51: 1, 46: 2, 36: 2, 34: 2, 29: 1}),
    15: (1, {59: 1, 52: 2, 51: 1, 45: 2, 35: 2, 34: 2, 27: 2}),
}
"""ORCA's linear equations (Hočevar and Demšar 2014, Sec. 3; ``orca.cpp``) from the *f*-values to orbits 15-71."""


class _Graph:
    """The simple undirected graph of an edge list: CSR, degrees, dense adjacency, common-neighbour counts
    :math:`A^2` and row bitsets (for common neighbours of three or four nodes)."""

    def __init__(self, edge_index: Tensor | np.ndarray, num_nodes: int):
        edges = np.asarray(edge_index.cpu() if isinstance(edge_index, Tensor) else edge_index, dtype=np.int64)
        n = int(num_nodes)
        if edges.size and (edges.min() < 0 or edges.max() >= n):
            raise ValueError(f"edge_index: node ids must lie in 0..{n - 1}")
        row, col = edges.reshape(2, -1)
        keep = row != col
        ones = np.ones(int(keep.sum()) * 2, dtype=np.int64)
        adjacency = sp.csr_matrix((ones, (np.r_[row[keep], col[keep]], np.r_[col[keep], row[keep]])), shape=(n, n))
        adjacency.sum_duplicates()
        adjacency.data[:] = 1
        adjacency.sort_indices()
        self.n = n
        self.indptr, self.indices = adjacency.indptr.astype(np.int64), adjacency.indices.astype(np.int64)
        self.deg = np.diff(self.indptr)
        self.adj = adjacency.astype(bool).toarray()
        self.c2 = (adjacency @ adjacency).astype(np.int32).toarray()  # common neighbours of any two nodes
        packed = np.packbits(self.adj, axis=1, bitorder="little")
        packed = np.pad(packed, ((0, 0), (0, -packed.shape[1] % 8)))
        self.bits = packed.view(np.uint64)

    def neighbours(self, x: int) -> np.ndarray:
        return self.indices[self.indptr[x]:self.indptr[x + 1]]

    def expand(self, nodes: np.ndarray):
        """Chunks ``(position, neighbour)``: every neighbour of every entry of ``nodes``, in CSR order."""
        counts = self.deg[nodes]
        ends = np.cumsum(counts)
        start = 0
        while start < len(nodes):
            stop = max(int(np.searchsorted(ends, ends[start] - counts[start] + _CHUNK, side="right")), start + 1)
            part = np.arange(start, stop)
            total = int(counts[part].sum())
            owner = np.repeat(part, counts[part])
            offset = np.arange(total) - np.repeat(np.cumsum(counts[part]) - counts[part], counts[part])
            yield owner, self.indices[np.repeat(self.indptr[nodes[part]], counts[part]) + offset]
            start = stop

    def common(self, *nodes: np.ndarray) -> np.ndarray:
        """Number of common neighbours of each tuple of nodes (three or four arrays of equal length)."""
        out = np.empty(len(nodes[0]), dtype=np.int64)
        step = max(1, _CHUNK // (8 * self.bits.shape[1]))
        for start in range(0, len(out), step):
            part = slice(start, start + step)
            word = self.bits[nodes[0][part]].copy()
            for other in nodes[1:]:
                word &= self.bits[other[part]]
            out[part] = np.bitwise_count(word).sum(axis=1)
        return out


def _node_f(g: _Graph, x: int, orbit: np.ndarray, f: np.ndarray) -> None:
    """Orbits 0-14 and 72 and the *f*-values 15-71 of node ``x`` (ORCA's loops over its neighbourhood)."""
    N = g.neighbours(x)
    d = len(N)
    orbit[0] = d
    if d == 0:
        return
    deg, c2, adj = g.deg, g.c2, g.adj
    inside = adj[x]  # neighbours of x
    outside = ~inside  # neither x nor its neighbours
    outside[x] = False
    local = np.full(g.n, -1, dtype=np.int64)
    local[N] = np.arange(d)
    S = adj[np.ix_(N, N)].astype(np.float64)  # the neighbourhood's adjacency
    t = S.sum(axis=1).astype(np.int64)  # t[a] = common neighbours of x and a
    S2 = (S @ S).round().astype(np.int64)  # S2[a, b] = common neighbours of x, a and b
    degN = deg[N]
    i_up, j_up = np.triu_indices(d, 1)
    linked = S[i_up, j_up] > 0
    ea, eb = i_up[linked], j_up[linked]  # local edges a < b inside N(x)
    orbit[3] = len(ea)
    orbit[2] = len(i_up) - len(ea)
    orbit[1] = int((degN - 1 - t).sum())

    # x = orbit 14 (K4) and K5 (orbit 72): a < b < c in N(x), all adjacent
    o14 = k5 = 0
    for k, c in g.expand(N[ea]):
        keep = inside[c] & (c > N[eb[k]]) & adj[N[eb[k]], c]
        a, b, c = ea[k[keep]], eb[k[keep]], local[c[keep]]
        A, B, C = N[a], N[b], N[c]
        o14 += len(a)
        k5 += int(g.common(A, B, C, np.full_like(A, x)).sum())
        f[70] += int((g.common(A, B, C) - 1).sum())
        f[71] += int((S2[a, b] + S2[a, c] + S2[b, c] - 3).sum())
        f[67] += int((t[a] + t[b] + t[c] - 6).sum())
        f[66] += int((c2[A, B] + c2[A, C] + c2[B, C] - 6).sum())
        f[57] += int((deg[A] + deg[B] + deg[C] - 9).sum())
    orbit[14] = o14
    orbit[72] = k5 // 4
    f[58] += o14 * (d - 3)

    # x = orbit 13 (diamond, degree 3): a adjacent to x, b, c; b < c in N(x) not adjacent
    da, db = np.r_[ea, eb], np.r_[eb, ea]
    o13 = 0
    for k, c in g.expand(N[da]):
        keep = inside[c] & (c > N[db[k]]) & ~adj[N[db[k]], c]
        a, b, c = da[k[keep]], db[k[keep]], local[c[keep]]
        A, B, C = N[a], N[b], N[c]
        o13 += len(a)
        f[69] += int((S2[b, c] - 1).sum())
        f[68] += int((g.common(A, B, C) - 1).sum())
        f[64] += int((c2[B, C] - 2).sum())
        f[61] += int((t[b] + t[c] - 2).sum())
        f[60] += int((c2[A, B] + c2[A, C] - 2).sum())
        f[55] += int((t[a] - 2).sum())
        f[48] += int((deg[B] + deg[C] - 4).sum())
        f[41] += int((deg[A] - 3).sum())
    orbit[13] = o13
    f[42] += o13 * (d - 3)

    # x = orbit 12 (diamond, degree 2): a < b in N(x) adjacent, c a common neighbour of a, b outside N[x]
    o12 = 0
    for k, C in g.expand(N[ea]):
        keep = outside[C] & adj[N[eb[k]], C]
        a, b, C = ea[k[keep]], eb[k[keep]], C[keep]
        A, B = N[a], N[b]
        o12 += len(a)
        f[65] += int(g.common(A, B, C).sum())
        f[63] += int((c2[x, C] - 2).sum())
        f[59] += int((c2[A, C] + c2[B, C] - 2).sum())
        f[54] += int((c2[A, B] - 2).sum())
        f[46] += int((deg[C] - 2).sum())
        f[40] += int((deg[A] + deg[B] - 6).sum())
    orbit[12] = o12
    f[47] += o12 * (d - 2)

    # 2-paths x - a - b with b outside N[x]
    pa, pb = [], []
    for k, b in g.expand(N):
        keep = outside[b]
        pa.append(k[keep])
        pb.append(b[keep])
    pa, pb = np.concatenate(pa), np.concatenate(pb)
    m = np.bincount(pa, minlength=d)  # outside neighbours of each a
    out_deg = np.bincount(pa, weights=deg[pb], minlength=d).astype(np.int64)

    # x = orbit 8 (C4): a < b in N(x) not adjacent, c outside N[x] adjacent to both
    o8 = 0
    for k, B in g.expand(pb):
        keep = inside[B] & (B > N[pa[k]]) & ~adj[N[pa[k]], B]
        a, C, B = pa[k[keep]], pb[k[keep]], B[keep]
        A, b = N[a], local[B]
        o8 += len(a)
        f[62] += int(g.common(A, B, C).sum())
        f[53] += int((t[a] + t[b]).sum())
        f[51] += int((c2[A, C] + c2[B, C]).sum())
        f[50] += int((c2[x, C] - 2).sum())
        f[49] += int((c2[A, B] - 2).sum())
        f[37] += int((deg[A] + deg[B] - 4).sum())
        f[36] += int((deg[C] - 2).sum())
    orbit[8] = o8
    f[38] += o8 * (d - 2)

    # x = orbit 9 (paw tail, from a: b < c outside N[x], adjacent) and orbit 4 (P4 end: x - a - b - c)
    o9 = o4 = 0
    f31_by_a = np.zeros(d, dtype=np.int64)
    for k, C in g.expand(pb):
        keep = outside[C]
        a, B, C = pa[k[keep]], pb[k[keep]], C[keep]
        A = N[a]
        near = adj[A, C]
        tri = near & (C > B)
        a9, A9, B9, C9 = a[tri], A[tri], B[tri], C[tri]
        o9 += len(a9)
        f[56] += int(g.common(A9, B9, C9).sum())
        f[45] += int((c2[B9, C9] - 1).sum())
        f[39] += int((c2[A9, B9] + c2[A9, C9] - 2).sum())
        f31_by_a += np.bincount(a9, minlength=d)
        f[24] += int((deg[B9] + deg[C9] - 4).sum())
        far = ~near
        A4, B4, C4 = A[far], B[far], C[far]
        o4 += len(A4)
        f[35] += int((c2[A4, C4] - 1).sum())
        f[34] += int(c2[x, C4].sum())
        f[27] += int(c2[B4, C4].sum())
        f[18] += int((deg[B4] - 2).sum())
        f[15] += int((deg[C4] - 1).sum())
    orbit[9], orbit[4] = o9, o4
    f[31] += int(((degN - 3) * f31_by_a).sum())
    f[28] += o9 * (d - 1)
    f[16] += o4 * (d - 1)
    # x = orbit 6 (claw leaf): every pair b < c of a's outside neighbours, less the adjacent ones (orbit 9)
    pairs = m * (m - 1) // 2
    orbit[6] = o6 = int(pairs.sum()) - o9
    f[22] += int(((degN - 3) * pairs).sum()) - f[31]
    f[20] += o6 * (d - 1)
    f[19] += int(((m - 1) * out_deg).sum() - 2 * pairs.sum()) - (f[24] + 2 * o9)

    # x = orbit 10 (paw, degree 2): a, b adjacent in N(x), c adjacent to b only
    o10 = 0
    for k, C in g.expand(N[db]):
        keep = outside[C] & ~adj[N[da[k]], C]
        a, b, C = da[k[keep]], db[k[keep]], C[keep]
        A, B = N[a], N[b]
        o10 += len(a)
        f[52] += int((c2[A, C] - 1).sum())
        f[43] += int(c2[B, C].sum())
        f[32] += int((deg[B] - 3).sum())
        f[29] += int((deg[C] - 1).sum())
        f[25] += int((deg[A] - 2).sum())
    orbit[10] = o10

    # closed forms over the neighbourhood (sums over all pairs/triples, no enumeration)
    total_t, total_deg = t.sum(), degN.sum()
    St, Sdeg = S @ t, S @ degN
    # x = orbit 11 (paw, degree 3): edge a < b in N(x), c in N(x) adjacent to neither
    count11 = d - (t[ea] + t[eb] - S2[ea, eb])
    orbit[11] = o11 = int(count11.sum())
    f[44] += int((total_t - St[ea] - St[eb] + ((S * t) @ S)[ea, eb].round()).sum())
    f[30] += int((total_deg - Sdeg[ea] - Sdeg[eb] + ((S * degN) @ S)[ea, eb].round()).sum()) - o11
    f[33] += o11 * (d - 3)
    f[26] += int(((degN[ea] + degN[eb] - 4) * count11).sum())
    # x = orbit 5 (P4 inner: a - x - b - c), ordered non-adjacent a, b in N(x), c adjacent to b only
    apart = (S == 0) & ~np.eye(d, dtype=bool)
    count5 = (degN - t)[None, :] - c2[np.ix_(N, N)] + S2
    orbit[5] = int(count5[apart].sum())
    f[17] += int(((degN - 1)[:, None] * count5)[apart].sum())
    # x = orbit 7 (claw centre): a < b < c in N(x) pairwise non-adjacent
    Sbar = apart.astype(np.float64)
    claws = ((Sbar @ Sbar) * Sbar).sum(axis=1).round().astype(np.int64) // 2  # per a: claws holding a
    orbit[7] = int(claws.sum()) // 3
    f[23] += orbit[7] * (d - 3)
    f[21] += int(((degN - 1) * claws).sum())


def orbit_counts(edge_index: Tensor | np.ndarray, num_nodes: int) -> np.ndarray:
    """``int64[num_nodes, 73]``: for every node, the number of induced graphlets on 2-5 nodes in which it
    occupies each of Pržulj's 73 orbits (ORCA's numbering; module docstring). ``edge_index`` is read as an
    undirected simple graph (either direction gives the edge; self-loops and repeats are ignored)."""
    g = _Graph(edge_index, num_nodes)
    orbit = np.zeros((g.n, NUM_ORBITS), dtype=np.int64)
    f = np.zeros((g.n, NUM_ORBITS), dtype=np.int64)
    for x in range(g.n):
        _node_f(g, x, orbit[x], f[x])
    for k in range(71, 14, -1):
        divisor, terms = EQUATIONS[k]
        value = f[:, k] - sum(c * orbit[:, j] for j, c in terms.items())
        orbit[:, k] = value // divisor
    return orbit
