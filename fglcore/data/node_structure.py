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
  graph gives the same numbers, in minutes for Cora). The result is cached
  on disk by graph and step count (``cache_root()/structure/``).

Hop2Vec (learnable NSFs) has no generator: it is a parameter of the
algorithm (:mod:`fglcore.algorithms.fedstruct`). GDV and Node2Vec (Table 8)
need the global graph and are not implemented yet.
"""
from __future__ import annotations

import hashlib
import json
import os
import uuid

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.data import Data

from fglcore.config import ConfigError
from fglcore.data.multihop import self_loop_adjacency
from fglcore.paths import cache_root


def degree_features(degree: Tensor, width: int = 256) -> Tensor:
    """``float32[n, width]``: one-hot of ``clip(degree, 0, width - 1)`` (Deg NSF)."""
    if width < 1:
        raise ConfigError(f"structure_dim: must be >= 1, got {width}")
    return F.one_hot(degree.long().clamp(0, width - 1), width).to(torch.float32)


def return_probabilities(edge_index: Tensor, num_nodes: int, steps: int, cache: bool = True) -> Tensor:
    r"""``float32[n, steps]``: :math:`(\hat A^k)_{vv}` for ``k = 1..steps`` (module docstring), cached on disk."""
    from fglcore.data.datasets import data_checksum

    payload = {"version": 1, "what": "fedstruct return probabilities", "steps": int(steps),
               "graph": data_checksum(Data(edge_index=edge_index.cpu(), num_nodes=num_nodes))}
    path = cache_root() / "structure" / f"{hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()}.pt"
    if cache and path.is_file():
        values = torch.load(path, weights_only=True)
        if isinstance(values, Tensor) and values.shape == (num_nodes, steps):
            return values
    adj = self_loop_adjacency(edge_index, num_nodes)
    scale = 1.0 / np.sqrt(np.asarray(adj.sum(axis=1)).ravel())
    symmetric = (sp.diags(scale) @ adj @ sp.diags(scale)).toarray()
    eigenvalues, eigenvectors = np.linalg.eigh(symmetric)
    powers = eigenvalues[:, None] ** np.arange(1, steps + 1)[None, :]  # (n, steps)
    values = torch.from_numpy((eigenvectors**2) @ powers).to(torch.float32)
    if cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{uuid.uuid4().hex}.part")
        torch.save(values, partial)
        os.replace(partial, path)
    return values


def fedstar_features(edge_index: Tensor, num_nodes: int, width: int = 256, rw_steps: int = 50) -> Tensor:
    """``float32[n, width]``: Fed⋆ NSF, ``[return probabilities (rw_steps) ‖ one-hot degree (width - rw_steps)]``."""
    if not 1 <= rw_steps < width:
        raise ConfigError(f"rw_steps: must be in 1..structure_dim - 1 = {width - 1}, got {rw_steps}")
    degree = torch.bincount(edge_index[0].cpu(), minlength=num_nodes)
    return torch.cat([return_probabilities(edge_index, num_nodes, rw_steps),
                      degree_features(degree, width - rw_steps)], dim=1)
