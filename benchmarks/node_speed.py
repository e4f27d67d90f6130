"""Node classification, plain vs fast path: FedSpray's Table 2 runs.

Each row times the same run twice: *plain* (``FGL_SPARSE_FEATURES=0``,
``FGL_GRAPH_FAST=0``: dense feature products and PyG's gather/scatter
message passing) and *fast* (both ``1``, the defaults: CSR products with the
bag-of-words features, :mod:`fglcore.models.sparse_input`, and with the
client graph, :mod:`fglcore.models.operators`), on FedSpray's protocol (7
largest Louvain communities, 2-layer backbone with 64 units, E = 5)
shortened to ``--rounds`` rounds. It reports the speed-up and how far the
test accuracy moved (rounding only: the same sums in another order).

    python benchmarks/node_speed.py [--rounds 20] [--threads 1] [--repeats 2]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from fglcore import experiment
from fglcore.data.federation import build_federation
from fglcore.algorithms.training import FAST_ENV
from fglcore.models.sparse_input import SPARSE_ENV
from fglcore.papers.fedspray.tables import table2_configs


def seconds_and_accuracy(config, fast: bool, repeats: int) -> tuple[float, float]:
    for switch in (SPARSE_ENV, FAST_ENV):
        os.environ[switch] = "1" if fast else "0"
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
    header = f"{'dataset':<10} {'density':>8} {'model':<5} {'method':<9} {'plain s':>8} {'fast s':>9} {'speed-up':>9} {'|d acc|':>8}"
    print(header)
    print("-" * len(header))
    for dataset in args.datasets:
        configs = table2_configs([dataset], models=args.models, methods=args.methods, seeds=[0],
                                 variants=["code"], rounds=args.rounds, stand_in_clients=7)
        federation = build_federation(configs[0])  # partition and data cached before timing
        x = torch.cat([client.x for client in federation.clients])
        density = torch.count_nonzero(x).item() / x.numel()
        for config in configs:
            plain_s, plain_acc = seconds_and_accuracy(config, False, args.repeats)
            fast_s, fast_acc = seconds_and_accuracy(config, True, args.repeats)
            print(f"{dataset:<10} {density:>8.2%} {config.model:<5} {config.algorithm:<9} {plain_s:>8.2f} "
                  f"{fast_s:>9.2f} {plain_s / fast_s:>8.2f}x {abs(plain_acc - fast_acc):>8.2f}")
    for switch in (SPARSE_ENV, FAST_ENV):
        os.environ.pop(switch, None)


if __name__ == "__main__":
    main()
