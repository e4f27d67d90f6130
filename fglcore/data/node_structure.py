r"""FedStruct's task-agnostic node structure features (NSFs), Aliakbari et al., ICLR 2025, Sec. 5.1 and App. A.

* ``"deg"``: one-hot of the node degree, width :math:`d_s = 256`, degrees
  clipped at 255 (official ``calc_degree_features``; slot 0 is degree 0).
  A client computes it for its own nodes from their **global** degree, which
  it knows (its intra- and inter-client edges; digest §2.3, item 14);
* ``"fedstar"`` (Fed⋆, after FedStar, Tan et al., AAAI 2023): random-walk
  return probabilities :math:`[(\hat A^k)_{vv}]_{k=1..50}` concatenated with a
  one-hot degree of width :math:`256 - 50 = 206`. The paper takes the
  diagonals of the powers of :math:`\hat A = \tilde D^{-1}\tilde A` (self-loops,
  App. A; digest item 15), the official code those of :math:`(AD^{-1})^k`
  without self-loops; the paper's matrix is used. The diagonals are those of
  the *global* graph: the official code computes them centrally
  (``create_rw``), and so does this simulation (App. A obtains them during
  Alg. 3, whose :math:`L_s` hops give fewer than 50 of them).
  :math:`\hat A` is similar to the symmetric
  :math:`\tilde D^{-1/2}\tilde A\tilde D^{-1/2} = U\Lambda U^\top`, so
  :math:`(\hat A^k)_{vv} = \sum_j U_{vj}^2\lambda_j^k`: one dense
  eigendecomposition (float64; seconds for Cora, :math:`O(n^3)` time and
  :math:`8n^2` bytes, so about 3 GB for PubMed) gives all 50 diagonals at
  once, where sparse powers fill in to dense long before the 50th (FedStar's
  :func:`~fglcore.data.structure.random_walk_encoding` on the self-looped
  graph gives the same numbers, in minutes for Cora). Above
  :data:`EIGH_MAX_NODES` nodes (PubMed: the dense matrix, LAPACK's
  workspace and the eigenvectors would take about 12 GB) the diagonals come
  instead from :math:`\hat A_{sym}^k E_B` for blocks :math:`E_B` of
  :data:`RETURN_BLOCK` columns of the identity: the same numbers up to
  rounding, in :math:`O(k\,\mathrm{nnz}\,n)` time and
  :math:`8 n B` bytes. The result is cached on disk by graph and step count
  (``cache_root()/structure/``; one process computes it while the others
  wait for it).

* :func:`node2vec_features` (Table 8, App. H: the server knows the global
  graph): PyG's ``Node2Vec`` trained as the official code does (its
  settings in :data:`NODE2VEC_DEFAULTS`). PyG's walk needs pyg-lib, which has
  no wheel for this torch on the package index; the walk is then
  :func:`uniform_random_walk`, node2vec's walk for its defaults p = q = 1
  (other p, q are refused). Cached on disk by graph, width, seed and settings.

* :func:`gdv_features` (Table 8, App. H: the server knows the global graph):
  the graphlet degree vector, the 73 orbit counts of graphlets on 2-5 nodes
  (:func:`fglcore.data.graphlets.orbit_counts`), standardised per column.
  Cached on disk by graph.

Hop2Vec (learnable NSFs) has no generator: it is a parameter of the
algorithm (:mod:`fglcore.algorithms.fedstruct`).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.data import Data

from fglcore.config import ConfigError
from fglcore.data.graphlets import NUM_ORBITS, orbit_counts
from fglcore.data.multihop import self_loop_adjacency
from fglcore.files import cached_tensor, json_key
from fglcore.paths import cache_root


def degree_features(degree: Tensor, width: int = 256) -> Tensor:
    """``float32[n, width]``: one-hot of ``clip(degree, 0, width - 1)`` (Deg NSF)."""
    if width < 1:
        raise ConfigError(f"structure_dim: must be >= 1, got {width}")
    return F.one_hot(degree.long().clamp(0, width - 1), width).to(torch.float32)


def _cached(payload: dict, shape: tuple[int, int], compute, cache: bool = True) -> Tensor:
    """``compute()`` kept on disk under ``cache_root()/structure/`` by the sha256 of ``payload`` (what was
    computed, its settings and the graph's checksum), through :func:`~fglcore.files.cached_tensor`."""
    if not cache:
        return compute()
    return cached_tensor(cache_root() / "structure" / f"{json_key(payload)}.pt", shape, compute)


def _graph_checksum(edge_index: Tensor, num_nodes: int) -> str:
    from fglcore.data.datasets import data_checksum

    return data_checksum(Data(edge_index=edge_index.cpu(), num_nodes=num_nodes))


EIGH_MAX_NODES = 10_000
"""Return probabilities come from one dense eigendecomposition up to this many nodes (every graph whose Fed⋆
runs are stored: Cora, CiteSeer, Chameleon, Photo), from block powers above it (:func:`return_probabilities`)."""

RETURN_BLOCK = 1024
"""Columns of the identity propagated at once by the block powers (PubMed: 19,717 x 1,024 float64, 0.16 GB)."""


def return_probabilities(edge_index: Tensor, num_nodes: int, steps: int, cache: bool = True) -> Tensor:
    r"""``float32[n, steps]``: :math:`(\hat A^k)_{vv}` for ``k = 1..steps`` (module docstring), cached on disk."""
    by_powers = num_nodes > EIGH_MAX_NODES
    payload = {"version": 1, "what": "fedstruct return probabilities", "steps": int(steps),
               "graph": _graph_checksum(edge_index, num_nodes), **({"method": "block powers"} if by_powers else {})}

    def compute() -> Tensor:
        adj = self_loop_adjacency(edge_index, num_nodes)
        scale = 1.0 / np.sqrt(np.asarray(adj.sum(axis=1)).ravel())
        symmetric = (sp.diags(scale) @ adj @ sp.diags(scale)).tocsr()
        if by_powers:
            return torch.from_numpy(block_power_diagonals(symmetric, steps)).to(torch.float32)
        eigenvalues, eigenvectors = np.linalg.eigh(symmetric.toarray())
        powers = eigenvalues[:, None] ** np.arange(1, steps + 1)[None, :]  # (n, steps)
        return torch.from_numpy((eigenvectors**2) @ powers).to(torch.float32)

    return _cached(payload, (num_nodes, steps), compute, cache)


def block_power_diagonals(matrix: sp.csr_matrix, steps: int, block: int | None = None) -> np.ndarray:
    """``float64[n, steps]``: the diagonals of ``matrix ** k`` for ``k = 1..steps``, from ``matrix ** k`` times
    ``block`` (default :data:`RETURN_BLOCK`) columns of the identity at a time (sparse times dense: nothing
    ``n x n`` is formed)."""
    n, block = matrix.shape[0], block or RETURN_BLOCK
    out = np.empty((n, steps))
    for start in range(0, n, block):
        cols = np.arange(start, min(n, start + block))
        x = np.zeros((n, cols.size))
        x[cols, np.arange(cols.size)] = 1.0
        for k in range(steps):
            x = matrix @ x
            out[cols, k] = x[cols, np.arange(cols.size)]
    return out


def fedstar_features(edge_index: Tensor, num_nodes: int, width: int = 256, rw_steps: int = 50) -> Tensor:
    """``float32[n, width]``: Fed⋆ NSF, ``[return probabilities (rw_steps) ‖ one-hot degree (width - rw_steps)]``."""
    if not 1 <= rw_steps < width:
        raise ConfigError(f"rw_steps: must be in 1..structure_dim - 1 = {width - 1}, got {rw_steps}")
    degree = torch.bincount(edge_index[0].cpu(), minlength=num_nodes)
    return torch.cat([return_probabilities(edge_index, num_nodes, rw_steps),
                      degree_features(degree, width - rw_steps)], dim=1)


NODE2VEC_DEFAULTS = {"walk_length": 20, "context_size": 10, "walks_per_node": 10, "num_negative_samples": 1,
                     "lr": 0.01, "batch_size": 128, "epochs": 50}
"""The official FedStruct code's Node2Vec settings (``config.yml`` ``node2vec``; digest §2.2), p = q = 1."""


def check_unbiased(p: float, q: float) -> None:
    """Biased node2vec walks (``p`` or ``q`` not 1) need pyg-lib, which is not installed: a clear error."""
    if p != 1.0 or q != 1.0:
        raise ConfigError(f"node2vec p, q: {p!r}, {q!r} need pyg-lib (biased walks), which is not installed; "
                          "accepted here: p = q = 1")


def uniform_random_walk(rowptr: Tensor, col: Tensor, start: Tensor, walk_length: int, p: float = 1.0,
                        q: float = 1.0) -> Tensor:
    """``int64[B, walk_length + 1]``: one uniform random walk from each node of ``start`` over the CSR graph
    ``(rowptr, col)`` (torch's global RNG); a node without neighbours stays where it is, as pyg-lib's walk.
    This is node2vec's walk for ``p = q = 1`` (Grover and Leskovec, KDD 2016, Sec. 3.2.2: every
    neighbour equally likely); other ``p``, ``q`` need pyg-lib."""
    check_unbiased(p, q)
    degree = rowptr[1:] - rowptr[:-1]
    node, walk = start, [start]
    for _ in range(walk_length):
        d = degree[node]
        offset = (torch.rand(node.numel()) * d).long().clamp(max=(d - 1).clamp(min=0))
        node = torch.where(d > 0, col[(rowptr[node] + offset).clamp(max=max(col.numel() - 1, 0))], node)
        walk.append(node)
    return torch.stack(walk, dim=1)


def node2vec_model(edge_index: Tensor, num_nodes: int, embedding_dim: int, **settings: Any) -> torch.nn.Module:
    """PyG's :class:`~torch_geometric.nn.models.Node2Vec` (its sampling of positive and negative windows, its
    skip-gram loss, its loader). Without pyg-lib, PyG's constructor refuses; the model is then built with
    :func:`uniform_random_walk` as its walk (p = q = 1), everything else PyG's own."""
    from torch_geometric.index import index2ptr
    from torch_geometric.nn.models import Node2Vec
    from torch_geometric.typing import WITH_PYG_LIB
    from torch_geometric.utils import sort_edge_index

    o = {k: settings.get(k, NODE2VEC_DEFAULTS[k]) for k in ("walk_length", "context_size", "walks_per_node",
                                                           "num_negative_samples")}
    p, q = settings.get("p", 1.0), settings.get("q", 1.0)
    if WITH_PYG_LIB:  # pragma: no cover - pyg-lib is not on the package index for this torch
        return Node2Vec(edge_index, embedding_dim, num_nodes=num_nodes, p=p, q=q, **o)
    model = Node2Vec.__new__(Node2Vec)
    torch.nn.Module.__init__(model)
    check_unbiased(p, q)
    if o["walk_length"] < o["context_size"]:
        raise ConfigError(f"node2vec walk_length: {o['walk_length']} is shorter than context_size "
                          f"{o['context_size']}; accepted: walk_length >= context_size")
    row, col = sort_edge_index(edge_index.cpu(), num_nodes=num_nodes)
    model.random_walk_fn = uniform_random_walk
    model.num_nodes, model.rowptr, model.col = num_nodes, index2ptr(row, num_nodes), col
    model.EPS, model.embedding_dim, model.walk_length = 1e-15, embedding_dim, o["walk_length"] - 1
    model.context_size, model.walks_per_node = o["context_size"], o["walks_per_node"]
    model.p, model.q, model.num_negative_samples = p, q, o["num_negative_samples"]
    model.embedding = torch.nn.Embedding(num_nodes, embedding_dim)
    model.reset_parameters()
    return model


SKIP_GRAM_CHUNK = 1 << 17
"""Window scores of :func:`skip_gram_loss` are formed about this many values at a time (0.5 MB, in cache;
fastest of 2^16..2^21 on Cora, 0.17 CPU s a batch against 0.21 at 2^19 and 0.6 unchunked)."""


def _window_scores(weight: Tensor, walks: Tensor) -> Tensor:
    """``(h_start * h_rest).sum(-1).view(-1)`` of PyG's ``Node2Vec.loss`` for the windows ``walks`` (``[B, C]``),
    a chunk of windows at a time (each score is reduced alone, so chunks give the same values)."""
    size, dim = walks.size(1) - 1, weight.size(1)
    step = max(1, SKIP_GRAM_CHUNK // max(size * dim, 1))
    out = []
    for chunk in walks.split(step):
        h_start = weight.index_select(0, chunk[:, 0]).view(-1, 1, dim)
        h_rest = weight.index_select(0, chunk[:, 1:].reshape(-1)).view(chunk.size(0), size, dim)
        out.append((h_start * h_rest).sum(dim=-1))
    return torch.cat(out).view(-1)


def _window_gradients(weight: Tensor, walks: Tensor, grad: Tensor) -> tuple[Tensor, Tensor]:
    """The embedding table's gradients through the windows' first nodes and through the others (the two
    embedding look-ups of PyG's loss), each as autograd forms it: ``grad * h_rest`` summed over the window
    (``h_start``'s broadcast) and ``grad * h_start``, added row after row in window order from zero."""
    size, dim = walks.size(1) - 1, weight.size(1)
    step = max(1, SKIP_GRAM_CHUNK // max(size * dim, 1))
    through_start, through_rest = torch.zeros_like(weight), torch.zeros_like(weight)
    for chunk, g in zip(walks.split(step), grad.view(-1, size).split(step)):
        h_start = weight.index_select(0, chunk[:, 0]).view(-1, 1, dim)
        h_rest = weight.index_select(0, chunk[:, 1:].reshape(-1)).view(chunk.size(0), size, dim)
        g = g.unsqueeze(-1)
        through_start.index_add_(0, chunk[:, 0], (g * h_rest).sum(dim=1))
        through_rest.index_add_(0, chunk[:, 1:].reshape(-1), (g * h_start).reshape(-1, dim))
    return through_start, through_rest


class _SkipGramScores(torch.autograd.Function):
    """The positive and negative window scores of PyG's ``Node2Vec.loss`` and their gradient for the table."""

    @staticmethod
    def forward(ctx, weight: Tensor, positive: Tensor, negative: Tensor) -> tuple[Tensor, Tensor]:
        ctx.save_for_backward(weight, positive, negative)
        return _window_scores(weight, positive), _window_scores(weight, negative)

    @staticmethod
    def backward(ctx, grad_positive: Tensor, grad_negative: Tensor) -> tuple[Tensor, None, None]:
        weight, positive, negative = ctx.saved_tensors
        pos_start, pos_rest = _window_gradients(weight, positive, grad_positive)
        neg_start, neg_rest = _window_gradients(weight, negative, grad_negative)
        # the order in which autograd adds the four look-ups' gradients in PyG's loss (the last look-up first)
        return ((neg_rest + neg_start) + pos_rest) + pos_start, None, None


def skip_gram_loss(model: torch.nn.Module, positive: Tensor, negative: Tensor) -> Tensor:
    """PyG's ``Node2Vec.loss(positive, negative)`` (skip-gram with negative sampling; Grover and Leskovec, KDD
    2016, Eq. 2 as PyG computes it) with the same value and the same gradient for the embedding table, bit for
    bit, without materialising the ``[windows, context, dim]`` products at once: the scores and their
    gradient are formed a chunk of windows at a time (:data:`SKIP_GRAM_CHUNK`). ``tests/test_node_structure.py``
    compares both with ``model.loss`` on every batch of an epoch."""
    positive_scores, negative_scores = _SkipGramScores.apply(model.embedding.weight, positive, negative)
    positive_loss = -torch.log(torch.sigmoid(positive_scores) + model.EPS).mean()
    negative_loss = -torch.log(1 - torch.sigmoid(negative_scores) + model.EPS).mean()
    return positive_loss + negative_loss


def node2vec_features(edge_index: Tensor, num_nodes: int, width: int = 256, seed: int = 0, cache: bool = True,
                      **settings: Any) -> Tensor:
    """``float32[n, width]``: Node2Vec NSF (Table 8, App. H), trained as the official code's
    ``find_node2vect_embedings``: :func:`node2vec_model`, SparseAdam (``lr``), ``epochs`` passes of its loader
    (``batch_size``, shuffled), the embedding table at the end. Deterministic for ``seed``; cached on disk
    by graph, width, seed and settings.

    The embedding's gradient is formed dense (an index-add, instead of the official ``sparse=True`` table's
    uncoalesced sparse gradient, which took 2/3 of the time on Cora) and handed to SparseAdam as its
    nonzero rows: the same lazy update of the rows a batch touched. The loss is PyG's, computed by
    :func:`skip_gram_loss` (the same values and gradients, a chunk of windows at a time)."""
    o = {**NODE2VEC_DEFAULTS, **settings}
    payload = {"version": 1, "what": "node2vec", "width": int(width), "seed": int(seed), "settings": o,
               "graph": _graph_checksum(edge_index, num_nodes)}

    def compute() -> Tensor:
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            model = node2vec_model(edge_index, num_nodes, width, **o)
            optimizer = torch.optim.SparseAdam(list(model.parameters()), lr=o["lr"])
            loader = model.loader(batch_size=o["batch_size"], shuffle=True)
            model.train()
            for _ in range(o["epochs"]):
                for positive, negative in loader:
                    optimizer.zero_grad()
                    skip_gram_loss(model, positive, negative).backward()
                    grad = model.embedding.weight.grad
                    rows = grad.abs().sum(dim=1).nonzero().view(1, -1)  # the rows this batch touched
                    model.embedding.weight.grad = torch.sparse_coo_tensor(
                        rows, grad[rows[0]], grad.shape, is_coalesced=True, check_invariants=False)
                    optimizer.step()
            return model.embedding.weight.detach().clone().to(torch.float32)

    return _cached(payload, (num_nodes, width), compute, cache)


def gdv_features(edge_index: Tensor, num_nodes: int, cache: bool = True) -> Tensor:
    """``float32[n, 73]``: the GDV NSF of Table 8 (App. H, the server knows the global graph).

    The graphlet degree vector of every node (Pržulj, Bioinformatics 2007): its counts of the 73 automorphism
    orbits of the connected induced graphlets on 2-5 nodes, in ORCA's numbering (Hočevar and Demšar,
    Bioinformatics 2014), computed exactly by :func:`fglcore.data.graphlets.orbit_counts` on the undirected
    simple graph of ``edge_index``. As the official code's ``Graph.calc_GDV`` (``JavadAliakbari/FedStruct``,
    ``src/utils/graph.py``, counts by ``GDV().count5`` of ``src/utils/GDV.py``, an ORCA port), each of the 73
    columns is then standardised over all nodes by scikit-learn's ``StandardScaler`` (zero mean, unit
    population standard deviation; a constant column, e.g. an orbit that occurs nowhere, stays 0). The width is
    the orbit count, 73, whatever the configured NSF width (the official structure model takes its input width
    from the features). Cached on disk (``cache_root()/structure/``) by graph."""
    payload = {"version": 1, "what": "gdv standardised", "graph": _graph_checksum(edge_index, num_nodes)}

    def compute() -> Tensor:
        from sklearn.preprocessing import StandardScaler  # imported here: scikit-learn is slow to import

        counts = orbit_counts(edge_index, num_nodes).astype(np.float64)
        return torch.from_numpy(StandardScaler().fit_transform(counts)).to(torch.float32)

    return _cached(payload, (num_nodes, NUM_ORBITS), compute, cache)
