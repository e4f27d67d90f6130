"""Simulation overhead of the federated engine.

FedAvg on Cora (10 Louvain clients, GCN, 100 rounds x 3 local epochs) against
the same number of full-batch steps of central training on the union of the
client graphs. The ratio to a plain PyTorch loop is the price of simulating
federation (1.0 is the floor: the same arithmetic, split over 10 subgraphs,
plus the channel, aggregation and evaluation).

    python benchmarks/simulation_overhead.py [--repeats 3] [--threads 2]
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F
from torch_geometric.data import Batch

from fglcore import experiment, runtime
from fglcore.algorithms.training import make_optimizer
from fglcore.config import ExperimentConfig
from fglcore.data.federation import build_federation
from fglcore.models import build_model

ROUNDS, EPOCHS, CLIENTS = 100, 3, 10


def plain_central_seconds(config: ExperimentConfig) -> float:
    """Full-batch steps on the union of the client graphs, plain PyTorch, no evaluation."""
    federation = build_federation(config)
    union = Batch.from_data_list(federation.clients)
    runtime.set_seed(config.seed)
    model = build_model(config.model, federation.num_features, config.hidden, federation.num_classes,
                        dropout=config.dropout, cached=True)
    optimizer = make_optimizer(model.parameters(), config)  # the same optimiser the clients use
    start = time.perf_counter()
    model.train()
    for _ in range(ROUNDS * EPOCHS):
        optimizer.zero_grad()
        out = model(union.x, union.edge_index)
        F.cross_entropy(out[union.train_mask], union.y[union.train_mask]).backward()
        optimizer.step()
    return time.perf_counter() - start


def fglcore_seconds(config: ExperimentConfig) -> float:
    build_federation(config)  # partition cached before timing
    start = time.perf_counter()
    experiment.run_full(config)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    base = ExperimentConfig.from_dict(dict(dataset="Cora", partition="louvain", num_clients=CLIENTS, model="gcn",
                                           rounds=ROUNDS, local_epochs=EPOCHS, evaluate_every=ROUNDS))
    variants = {
        "central, plain PyTorch loop (floor)": lambda: plain_central_seconds(base),
        "central (union), fglcore": lambda: fglcore_seconds(
            base.replace(algorithm="central", algorithm_options={"graph": "union"})),
        "fedavg, fglcore, evaluated at the end": lambda: fglcore_seconds(base),
        "fedavg, fglcore, evaluated every round": lambda: fglcore_seconds(base.replace(evaluate_every=1)),
    }
    steps = ROUNDS * EPOCHS
    rows = []
    for name, fn in variants.items():
        times = [fn() for _ in range(args.repeats)]
        rows.append((name, statistics.median(times)))
    floor = rows[0][1]
    print(f"Cora, {CLIENTS} Louvain clients, GCN, {ROUNDS} rounds x {EPOCHS} local epochs "
          f"({steps} full-batch steps), {args.threads} threads, median of {args.repeats}")
    print(f"{'variant':<42}{'seconds':>9}{'ms/step':>9}{'ratio':>7}")
    for name, seconds in rows:
        print(f"{name:<42}{seconds:>9.2f}{1000 * seconds / steps:>9.2f}{seconds / floor:>7.2f}")


if __name__ == "__main__":
    main()
