"""Structure embeddings: node vectors computed from the graph alone (FedStar).

Tan et al., "Federated Learning on Non-IID Graphs via Structural Knowledge
Sharing", AAAI 2023, Eqs. (5)-(7). Every node ``v`` gets

* DSE (Eq. 5, local structure): the one-hot degree
  ``[1(d_v = 1), 1(d_v = 2), ..., 1(d_v >= k1)]``, ``k1 = 16``;
* RWSE (Eq. 6, global structure): the random-walk return probabilities
  ``[T_vv, (T^2)_vv, ..., (T^k2)_vv]`` with ``T = A D^-1``, ``k2 = 16``;
* ``s_v = concat[DSE, RWSE]`` (Eq. 7).

Computed as the official code's ``init_structure_encoding`` (``lib/utils.py``)
computes them:

* the degree is ``degree(edge_index[0])`` (the out-degree, which is the
  degree of an undirected ``edge_index``) and is clipped to ``1..k1``, so an
  isolated node (degree 0, left undefined by Eq. 5) takes the degree-1 slot;
* ``A[i, j]`` counts the edges ``i -> j`` (duplicates add up, as scipy's
  ``coo -> csr``) and column ``j`` of ``T`` is divided by ``d_j``; an isolated
  node's column is empty, so its return probabilities are 0 (the code's
  ``1/0 = inf`` never meets a stored entry; here ``1/0 := 0`` explicitly);
* the code concatenates ``[RWSE, DSE]`` (RWSE first); so does ``"rw_dg"``
  here -- the order only permutes the first linear layer's inputs.

Variants (FedStar Table 3): ``"rw_dg"`` (both, 32-d), ``"dg"`` (DSE only),
``"rw"`` (RWSE only) and ``"ones"`` (an all-ones vector: no structure
information, the row without DSE and RWSE).

**Width quirk of the official code.** Its model always reads
``n_se = n_rw + n_dg = 32`` inputs, even for ``--type_init rw`` or ``dg``,
whose encodings are 16-d, so those options fail with a shape mismatch; and
``--type_init ones`` (``--n_ones 16``) is accepted but never builds an
encoding. Here the width of an encoding is its own width
(:attr:`StructureEncoding.width`: 32, 16, 16 and ``ones_width``) and the
model's structure channel reads exactly that many inputs (reading A9 of the
FedStar digest). ``ones_width`` defaults to 32 so the all-ones row keeps the
architecture of the full model; the code's 16 is one option away.

Computation is vectorised over many graphs at once: the graphs are laid out
as one block-diagonal graph (their disjoint union, whose node-wise encodings
are the per-graph ones) and ``diag(T^k)`` comes from sparse products. Only
``T^1 .. T^ceil(k2/2)`` are formed; the higher diagonals use
``diag(T^(a+b)) = rowsum(T^a * (T^b)^T)``, which halves the products and
keeps the fill-in of the last powers out of memory. Large sets are processed
in chunks of whole graphs. Results with RWSE are cached on disk under
:func:`~fglcore.paths.cache_root` by a digest of the graphs' edges and the
encoding, so a sweep pays for DD's 330k nodes once.
"""
from __future__ import annotations

import copy
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.data import Data

from fglcore.config import ConfigError
from fglcore.files import cached_tensor, json_key
from fglcore.paths import cache_root

ENCODINGS = ("rw_dg", "rw", "dg", "ones")
STRUCTURE_CACHE_VERSION = 1
DEFAULT_CHUNK_NODES = 16384


def _check_positive(key: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{key}: must be an integer >= 1, got {value!r}")


def degree_encoding(edge_index: Tensor, num_nodes: int, slots: int = 16) -> Tensor:
    """DSE (FedStar Eq. 5): one-hot of ``clip(out-degree, 1, slots)``, ``float32[num_nodes, slots]``.

    Slot ``j`` (0-based) means degree ``j + 1``; the last slot holds every
    degree ``>= slots`` and the first also holds isolated nodes (official code).
    """
    _check_positive("degree_slots", slots)
    deg = torch.bincount(edge_index[0].cpu(), minlength=num_nodes)[:num_nodes]
    return F.one_hot(deg.clamp(1, slots) - 1, slots).to(torch.float32)


def random_walk_encoding(edge_index: Tensor, num_nodes: int, steps: int = 16) -> Tensor:
    """RWSE (FedStar Eq. 6): ``(T^k)_vv`` for ``k = 1..steps``, ``T = A D^-1``; ``float32[num_nodes, steps]``.

    ``edge_index`` may hold many graphs as one block-diagonal graph. The
    products run in float64 (as the code's scipy matrices) and the result is
    cast to float32 (as the code's ``.float()``).
    """
    _check_positive("rw_steps", steps)
    src, dst = edge_index.cpu().numpy()
    ones = np.ones(src.size, dtype=np.float64)
    adjacency = sp.csr_matrix((ones, (src, dst)), shape=(num_nodes, num_nodes))
    deg = np.bincount(src, minlength=num_nodes).astype(np.float64)
    inverse = np.divide(1.0, deg, out=np.zeros(num_nodes), where=deg > 0)
    transition = (adjacency @ sp.diags(inverse)).tocsr()

    half = (steps + 1) // 2
    powers = [None, transition]  # powers[k] = T^k
    for _ in range(half - 1):
        powers.append((powers[-1] @ transition).tocsr())
    out = np.empty((num_nodes, steps), dtype=np.float64)
    for k in range(1, steps + 1):
        a = (k + 1) // 2
        b = k - a
        if b == 0:
            out[:, k - 1] = powers[a].diagonal()
        else:  # diag(T^a T^b)_i = sum_j (T^a)_ij (T^b)_ji
            out[:, k - 1] = np.asarray(powers[a].multiply(powers[b].T).sum(axis=1)).ravel()
    return torch.from_numpy(out).to(torch.float32)


@dataclass(frozen=True)
class StructureEncoding:
    """Which structure embedding to compute (FedStar Eqs. 5-7, Table 3).

    Args:
        kind: ``"rw_dg"`` (RWSE then DSE, FedStar), ``"rw"``, ``"dg"`` or ``"ones"``.
        rw_steps: ``k2``, the RWSE width (FedStar: 16).
        degree_slots: ``k1``, the DSE width (FedStar: 16).
        ones_width: width of the ``"ones"`` vector (default 32: the full model's width).
    """

    kind: str = "rw_dg"
    rw_steps: int = 16
    degree_slots: int = 16
    ones_width: int = 32

    def __post_init__(self) -> None:
        if self.kind not in ENCODINGS:
            raise ConfigError(f"structure encoding: {self.kind!r} is not accepted; accepted: {', '.join(ENCODINGS)}")
        for key in ("rw_steps", "degree_slots", "ones_width"):
            _check_positive(key, getattr(self, key))

    @property
    def width(self) -> int:
        """Number of values per node."""
        return {
            "rw_dg": self.rw_steps + self.degree_slots,
            "rw": self.rw_steps,
            "dg": self.degree_slots,
            "ones": self.ones_width,
        }[self.kind]

    @property
    def uses_random_walks(self) -> bool:
        return self.kind in ("rw_dg", "rw")

    def __call__(self, edge_index: Tensor, num_nodes: int) -> Tensor:
        """The encoding of every node of one (possibly block-diagonal) graph, ``float32[num_nodes, width]``."""
        if self.kind == "ones":
            return torch.ones(num_nodes, self.ones_width)
        if self.kind == "dg":
            return degree_encoding(edge_index, num_nodes, self.degree_slots)
        rw = random_walk_encoding(edge_index, num_nodes, self.rw_steps)
        if self.kind == "rw":
            return rw
        return torch.cat([rw, degree_encoding(edge_index, num_nodes, self.degree_slots)], dim=1)


def structure_encodings(
    graphs: Sequence[Data],
    encoding: StructureEncoding = StructureEncoding(),
    *,
    cache: bool = True,
    chunk_nodes: int = DEFAULT_CHUNK_NODES,
) -> list[Tensor]:
    """The encoding of each graph, ``float32[graph.num_nodes, encoding.width]``, in order.

    The graphs are encoded as block-diagonal chunks of at most about
    ``chunk_nodes`` nodes (a larger graph is a chunk of its own). With
    ``cache``, encodings that need random walks are read from, or written to,
    :func:`structure_cache_path`.
    """
    graphs = list(graphs)
    if not graphs:
        return []
    sizes = [_num_nodes(g) for g in graphs]

    def compute() -> Tensor:
        return torch.cat([encoding(*_disjoint_union(chunk, chunk_sizes))
                          for chunk, chunk_sizes in _chunks(graphs, sizes, chunk_nodes)])

    if cache and encoding.uses_random_walks:
        path = structure_cache_path(*_disjoint_union(graphs, sizes), encoding)
        values = cached_tensor(path, (sum(sizes), encoding.width), compute)
    else:
        values = compute()
    return list(torch.split(values, sizes))


def encode_graphs(
    graphs: Sequence[Data],
    encoding: StructureEncoding = StructureEncoding(),
    *,
    attribute: str = "s",
    cache: bool = True,
) -> list[Data]:
    """Shallow copies of ``graphs`` with their structure embedding stored as node attribute ``attribute``.

    The copies share every other tensor with the originals, which are left
    untouched. PyG collation (``Batch.from_data_list``) and
    :class:`~fglcore.algorithms.training.GraphBatcher` then carry ``s`` into
    every mini-batch, so it is computed once per client, not per round.
    """
    out = []
    for graph, values in zip(graphs, structure_encodings(graphs, encoding, cache=cache)):
        graph = copy.copy(graph)
        graph[attribute] = values
        out.append(graph)
    return out


def structure_cache_path(edge_index: Tensor, num_nodes: int, encoding: StructureEncoding) -> Path:
    """``cache_root()/structure/<sha256>.pt`` for the disjoint union ``(edge_index, num_nodes)``.

    The key covers the edges, the node count and every field of
    ``encoding``: node-wise encodings of a disjoint union depend on nothing else.
    """
    from fglcore.data.datasets import data_checksum

    payload = {
        "version": STRUCTURE_CACHE_VERSION,
        "encoding": asdict(encoding),
        "graph": data_checksum(Data(edge_index=edge_index, num_nodes=num_nodes)),
    }
    return cache_root() / "structure" / f"{json_key(payload)}.pt"


# --------------------------------------------------------------------------- helpers


def _num_nodes(graph: Data) -> int:
    n = graph.num_nodes
    if n is None:
        raise ValueError("a graph without num_nodes (and without node features) cannot be encoded")
    return int(n)


def _disjoint_union(graphs: Sequence[Data], sizes: Sequence[int]) -> tuple[Tensor, int]:
    """The graphs' ``edge_index`` as one block-diagonal graph, and its node count."""
    offsets = torch.tensor([0, *sizes[:-1]]).cumsum(0).tolist()
    edges = [g.edge_index.cpu().to(torch.long) + offset for g, offset in zip(graphs, offsets)]
    return torch.cat(edges, dim=1), int(sum(sizes))


def _chunks(
    graphs: Sequence[Data], sizes: Sequence[int], chunk_nodes: int
) -> list[tuple[list[Data], list[int]]]:
    """Consecutive runs of whole graphs (and their sizes) with at most ``chunk_nodes`` nodes, or one graph."""
    chunks: list[tuple[list[Data], list[int]]] = []
    current: list[Data] = []
    current_sizes: list[int] = []
    for graph, size in zip(graphs, sizes):
        if current and sum(current_sizes) + size > chunk_nodes:
            chunks.append((current, current_sizes))
            current, current_sizes = [], []
        current.append(graph)
        current_sizes.append(size)
    if current:
        chunks.append((current, current_sizes))
    return chunks
