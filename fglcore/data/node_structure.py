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
  :math:`\mathrm{diag}(\hat A^k) = \mathrm{diag}((\tilde A\tilde D^{-1})^k)`
  (similar matrices), so FedStar's RWSE code
  (:func:`~fglcore.data.structure.random_walk_encoding`) on the self-looped
  graph computes them.

Hop2Vec (learnable NSFs) has no generator: it is a parameter of the
algorithm (:mod:`fglcore.algorithms.fedstruct`). GDV and Node2Vec (Table 8)
need the global graph and are not implemented yet.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.utils import add_remaining_self_loops

from fglcore.config import ConfigError
from fglcore.data.structure import random_walk_encoding


def degree_features(degree: Tensor, width: int = 256) -> Tensor:
    """``float32[n, width]``: one-hot of ``clip(degree, 0, width - 1)`` (Deg NSF)."""
    if width < 1:
        raise ConfigError(f"structure_dim: must be >= 1, got {width}")
    return F.one_hot(degree.long().clamp(0, width - 1), width).to(torch.float32)


def return_probabilities(edge_index: Tensor, num_nodes: int, steps: int) -> Tensor:
    r"""``float32[n, steps]``: :math:`(\hat A^k)_{vv}` for ``k = 1..steps`` on the graph with self-loops."""
    looped, _ = add_remaining_self_loops(edge_index.cpu(), num_nodes=num_nodes)
    return random_walk_encoding(looped, num_nodes, steps)


def fedstar_features(edge_index: Tensor, num_nodes: int, width: int = 256, rw_steps: int = 50) -> Tensor:
    """``float32[n, width]``: Fed⋆ NSF, ``[return probabilities (rw_steps) ‖ one-hot degree (width - rw_steps)]``."""
    if not 1 <= rw_steps < width:
        raise ConfigError(f"rw_steps: must be in 1..structure_dim - 1 = {width - 1}, got {rw_steps}")
    degree = torch.bincount(edge_index[0].cpu(), minlength=num_nodes)
    return torch.cat([return_probabilities(edge_index, num_nodes, rw_steps),
                      degree_features(degree, width - rw_steps)], dim=1)
