"""Tiny node federations whose clients disagree on labels (shared by the one-shot baseline tests)."""
from __future__ import annotations

from types import SimpleNamespace

import torch
from torch_geometric.data import Data
from torch_geometric.utils import to_undirected

C, F_IN = 3, 6
"""Classes and feature width of every toy client."""


def toy_client(seed: int, shift: int, n: int = 45) -> Data:
    """Features announce a class ``c`` (one-hot plus noise); the client's label is ``(c + shift) % C``.

    Clients with different shifts disagree on every node, so no shared model fits two of them (the averaged
    model must lose validation accuracy that local fine-tuning can win back) and their soft-label moments
    differ. Edges join nodes of the same ``c``: a local model can be right on every node.
    """
    g = torch.Generator().manual_seed(seed)
    c = torch.arange(n) % C
    x = torch.randn(n, F_IN, generator=g) * 0.3 + torch.nn.functional.one_hot(c, F_IN).float()
    y = (c + shift) % C
    src, dst = torch.randint(0, n, (2, 8 * n), generator=g)
    keep = (src != dst) & (c[src] == c[dst])
    edge_index = to_undirected(torch.stack([src[keep], dst[keep]]), num_nodes=n)
    order = torch.randperm(n, generator=g)
    train, val = torch.zeros(n, dtype=torch.bool), torch.zeros(n, dtype=torch.bool)
    for k in range(C):
        members = order[y[order] == k]
        train[members[:4]] = True
        val[members[4:9]] = True
    return Data(x=x, y=y, edge_index=edge_index, train_mask=train, val_mask=val, test_mask=~(train | val),
                num_nodes=n)


def federation(shifts=(0, 0, 1)) -> SimpleNamespace:
    """One toy client per entry of ``shifts`` (client ``k`` has ``45 + 3k`` nodes), as a node federation."""
    clients = [toy_client(k, shift, n=45 + 3 * k) for k, shift in enumerate(shifts)]
    return SimpleNamespace(task="node", clients=clients, num_features=F_IN, num_classes=C)


def skewed_client(seed: int, n: int) -> Data:
    """Features announce the class (one-hot plus noise); about 60 % of the nodes have the client's own class
    ``seed % C``, so each client sees mostly one class and the ensemble knows more than any one member."""
    g = torch.Generator().manual_seed(seed)
    y = torch.where(torch.rand(n, generator=g) < 0.6, torch.full((n,), seed % C), torch.randint(0, C, (n,), generator=g))
    x = torch.randn(n, F_IN, generator=g) * 0.3 + torch.nn.functional.one_hot(y, F_IN).float()
    src, dst = torch.randint(0, n, (2, 6 * n), generator=g)
    keep = (src != dst) & (y[src] == y[dst])
    edge_index = to_undirected(torch.stack([src[keep], dst[keep]]), num_nodes=n)
    order = torch.randperm(n, generator=g)
    train = torch.zeros(n, dtype=torch.bool)
    val = torch.zeros(n, dtype=torch.bool)
    train[order[: n // 3]] = True
    val[order[n // 3: 2 * n // 3]] = True
    return Data(x=x, y=y, edge_index=edge_index, train_mask=train, val_mask=val, test_mask=~(train | val),
                num_nodes=n)


def skewed_federation() -> SimpleNamespace:
    """Three :func:`skewed_client` clients of 40, 44 and 48 nodes (the DENSE and Co-Boost tests' federation)."""
    return SimpleNamespace(task="node", clients=[skewed_client(k, 40 + 4 * k) for k in range(3)],
                           num_features=F_IN, num_classes=C)
