"""Small graphs for the local-bias tests (shared by the simulated and the Gloo tests)."""
from __future__ import annotations

import torch
from torch_geometric.data import Data
from torch_geometric.utils import to_undirected

from fglcore.config import ExperimentConfig
from fglcore.data.federation import build_clients
from fglcore.distributed.run import RunSpec
from fglcore.distributed.trainer import SamplingOptions
from fglcore.models.distributed_gnn import DistributedGNN


def small_graph(n: int = 60, features: int = 8, classes: int = 3, edges: int = 150, seed: int = 0) -> Data:
    """A random undirected graph with train/val/test masks (half / quarter / quarter)."""
    g = torch.Generator().manual_seed(seed)
    pairs = torch.randint(0, n, (2, edges), generator=g)
    pairs = pairs[:, pairs[0] != pairs[1]]
    edge_index = to_undirected(pairs, num_nodes=n)
    x = torch.randn(n, features, generator=g)
    y = torch.randint(0, classes, (n,), generator=g)
    fold = torch.randperm(n, generator=g)
    masks = {name: torch.zeros(n, dtype=torch.bool) for name in ("train_mask", "val_mask", "test_mask")}
    masks["train_mask"][fold[: n // 2]] = True
    masks["val_mask"][fold[n // 2: 3 * n // 4]] = True
    masks["test_mask"][fold[3 * n // 4:]] = True
    return Data(x=x, edge_index=edge_index, y=y, num_nodes=n, **masks)


def federated(data: Data, num_clients: int, seed: int = 0) -> list[Data]:
    g = torch.Generator().manual_seed(seed)
    assignment = torch.randperm(data.num_nodes, generator=g) % num_clients
    return build_clients(data, assignment, keep_cross_edges=True)


def spec_for(data: Data, *, backbone: str = "gcn", variant: str = "ours-full", dropout: float = 0.0,
             rounds: int = 2, hidden: int = 16, layers: int = 2, seed: int = 0, **sampling) -> RunSpec:
    config = ExperimentConfig(dropout=dropout, seed=seed, hidden=hidden, num_layers=layers, weight_decay=0.0)
    torch.manual_seed(seed)
    classes = int(data.y.max()) + 1
    model = DistributedGNN(backbone, data.num_features, hidden, classes, layers, dropout)
    return RunSpec(config, SamplingOptions(variant, **sampling), backbone, (data.num_features, hidden, classes, layers),
                   True, model.state_dict(), rounds, tuple(range(1, rounds + 1)))


def central_pass(data: Data, spec: RunSpec) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The centralised model (PyG layers on the whole graph): logits and gradients of the mean training CE."""
    model = spec.model()
    model.eval()  # no dropout (the specs used with it have dropout 0)
    out = model(data.x, data.edge_index)
    loss = torch.nn.functional.cross_entropy(out[data.train_mask], data.y[data.train_mask])
    loss.backward()
    return out.detach(), {name: p.grad.detach().clone() for name, p in model.named_parameters()}
