"""Sparse first layers on bag-of-words features: FedSpray's Table 2 runs, dense vs sparse.

Each row times the same run twice, ``FGL_SPARSE_FEATURES=0`` (dense
products, as PyTorch does by default) and ``1`` (CSR products, see
:mod:`fglcore.models.sparse_input`), on FedSpray's protocol (7 largest
Louvain communities, 2-layer backbone with 64 units, E = 5) shortened to
``--rounds`` rounds, and reports the speed-up and how far the test accuracy
moved (rounding only: the same sums in another order).

    python benchmarks/sparse_features.py [--rounds 20] [--threads 1] [--repeats 2]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from fglcore import experiment
from fglcore.data.federation import build_federation
from fglcore.models.sparse_input import SPARSE_ENV
from fglcore.papers.fedspray_tables import table2_configs


def seconds_and_accuracy(config, sparse: bool, repeats: int) -> tuple[float, float]:
    os.environ[SPARSE_ENV] = "1" if sparse else "0"
    times, accuracy = [], float("nan")
    for _ in range(repeats):
        start = time.perf_counter()
        rows, _ = experiment.run_full(config)
        times.append(time.perf_counter() - start)
        accuracy = next(row["value"] for row in rows if row["metric"] == "accuracy")
    return statistics.median(times), accuracy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--datasets", nargs="+", default=["Cora", "CiteSeer", "Chameleon"])
    parser.add_argument("--models", nargs="+", default=["gcn", "sage", "sgc"])
    parser.add_argument("--methods", nargs="+", default=["fedavg", "fedspray"])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    print(f"{args.rounds} rounds x 5 local epochs, {args.threads} thread(s), median of {args.repeats}")
    header = f"{'dataset':<10} {'density':>8} {'model':<5} {'method':<9} {'dense s':>8} {'sparse s':>9} {'speed-up':>9} {'|d acc|':>8}"
    print(header)
    print("-" * len(header))
    for dataset in args.datasets:
        configs = table2_configs([dataset], models=args.models, methods=args.methods, seeds=[0],
                                 variants=["code"], rounds=args.rounds, stand_in_clients=7)
        federation = build_federation(configs[0])  # partition and data cached before timing
        x = torch.cat([client.x for client in federation.clients])
        density = torch.count_nonzero(x).item() / x.numel()
        for config in configs:
            dense_s, dense_acc = seconds_and_accuracy(config, False, args.repeats)
            sparse_s, sparse_acc = seconds_and_accuracy(config, True, args.repeats)
            print(f"{dataset:<10} {density:>8.2%} {config.model:<5} {config.algorithm:<9} {dense_s:>8.2f} "
                  f"{sparse_s:>9.2f} {dense_s / sparse_s:>8.2f}x {abs(dense_acc - sparse_acc):>8.2f}")
    os.environ.pop(SPARSE_ENV, None)


if __name__ == "__main__":
    main()
