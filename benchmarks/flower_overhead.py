"""Overhead of Flower over the in-process engine, per round: one configuration both ways, a table.

    FGL_THREADS=1 python benchmarks/flower_overhead.py                        # FedAvg, Cora, 10 clients, 2 rounds
    FGL_THREADS=1 python benchmarks/flower_overhead.py --clients 2 --rounds 3 --algorithm fedprox
    FGL_THREADS=1 python benchmarks/flower_overhead.py --parallel --dropout 0    # every client at once
    FGL_THREADS=1 python benchmarks/flower_overhead.py --clients 2 --cold       # a flwr-clientapp process per message

Flower runs on a local deployment (a SuperLink and one SuperNode per client, :mod:`fglcore.fl.flower.deploy`).
Columns: seconds per round in-process and on Flower (the ServerApp's round loop; the deployment's start and
the ``flwr run`` hand-over are reported apart), messages per round and seconds per message, bytes per round
in the ledger and on the wire, and whether metrics and ledgers agree. By default each SuperNode has one
long-lived ClientApp process (:mod:`fglcore.fl.flower.worker`); ``--cold`` uses Flower's default, a fresh
``flwr-clientapp`` process per message (importing torch and fglcore). An idle SuperNode polls its SuperLink
every 3 s either way, so the overhead is per message, not per byte, on small graphs.
"""
from __future__ import annotations

import argparse
import math
import tempfile
import time

import pandas as pd

from fglcore.experiment import run_full
from fglcore.fl.flower import run_on_flower


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="Cora")
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--algorithm", default="fedavg")
    parser.add_argument("--evaluate-every", type=int, default=None, help="default: only the last round")
    parser.add_argument("--out", default=None, help="folder for Flower's files (default: a temporary one)")
    parser.add_argument("--parallel", action="store_true", help="each round's messages to every client at once")
    parser.add_argument("--dropout", type=float, default=None, help="the model's dropout (default: the config's)")
    parser.add_argument("--cold", action="store_true", help="Flower's default: a flwr-clientapp process per message")
    args = parser.parse_args()
    config = {"dataset": args.dataset, "num_clients": args.clients, "rounds": args.rounds,
              "algorithm": args.algorithm, "device": "cpu", "evaluate_every": args.evaluate_every or args.rounds}
    if args.dropout is not None:
        config["dropout"] = args.dropout
    started = time.perf_counter()
    _, expected = run_full(config)
    in_process = time.perf_counter() - started
    flower = run_on_flower(config, args.out or tempfile.mkdtemp(prefix="fgl-flower-bench-"), run_timeout=3600,
                           parallel=args.parallel, warm=not args.cold)
    result = flower.result
    wire = flower.wire()
    rounds_seconds = result.extras["flower_seconds"]
    gaps = [abs(result.metrics[k] - v) for k, v in expected.metrics.items() if not math.isnan(v)]
    ledger = expected.ledger.total_bytes()
    on_wire = int(wire.download_wire_bytes.sum() + wire.upload_wire_bytes.sum())
    table = pd.DataFrame([{
        "dataset": args.dataset, "clients": args.clients, "rounds": args.rounds, "algorithm": args.algorithm,
        "schedule": "parallel" if args.parallel else "sequential",
        "clientapp": "process per message" if args.cold else "one process per SuperNode",
        "in_process_s_per_round": in_process / args.rounds,
        "flower_s_per_round": rounds_seconds / args.rounds,
        "overhead_x": rounds_seconds / in_process,
        "deployment_and_handover_s": flower.seconds - rounds_seconds,
        "flower_whole_s": flower.seconds,
        "messages_per_round": len(wire) / args.rounds,
        "s_per_message": wire.seconds.mean(),
        "ledger_bytes_per_round": ledger / args.rounds,
        "wire_bytes_per_round": on_wire / args.rounds,
        "max_metric_gap": max(gaps, default=0.0),
        "ledgers_equal": result.ledger.to_frame().equals(expected.ledger.to_frame()),
    }])
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.T.to_string(header=False))
    print(flower.wire_vs_ledger().to_string(index=False))


if __name__ == "__main__":
    main()
