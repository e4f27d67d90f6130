"""FedSage+ as FedStruct's tables run it: accuracy per seed, and CPU seconds per phase to project the tables.

The configurations are those of ``fglcore.papers.fedstruct.tables`` (row ``fedsage_plus``: the official port's
NeighGen settings, then FedSGD on the mended graphs; Table 5's lr, weight decay and epochs; the random partition,
the 10/10/80 global random split, last round, client-size-weighted accuracy).

    FGL_THREADS=1 python benchmarks/fedsage_plus_fedstruct.py accuracy Cora 10 0,1,2
    FGL_THREADS=1 python benchmarks/fedsage_plus_fedstruct.py phases PubMed 10 [--outputs]

``accuracy`` prints one JSON line per seed: test accuracy (%), the nodes NeighGen added to the clients' graphs, CPU
seconds. ``phases`` times three short runs of the row (``time.process_time``: robust to other processes on a shared
machine): no NeighGen epoch and one round, one NeighGen epoch and one round, no epoch and 11 rounds. The
differences are one federated NeighGen epoch and one FedSGD round; the projection is a whole run at the row's
epochs and rounds. ``--outputs`` times ``cross_exchange="outputs"`` (generated features and their gradients cross
instead of fGen's parameters and gradients) beside the row's own exchange.
"""
from __future__ import annotations

import json
import sys
import time

from fglcore import runtime
from fglcore.config import ExperimentConfig
from fglcore.experiment import prepare
from fglcore.papers.fedstruct import tables as ft
from fglcore.results import rows_from_result

EXTRA_ROUNDS = 10


def row_config(dataset: str, num_clients: int, seed: int, **options) -> ExperimentConfig:
    """Table 2's FedSage+ configuration, its algorithm options updated with ``options``."""
    config = ft.table2_configs([dataset], [num_clients], ["fedsage_plus"], [seed])[0]
    return config.replace(algorithm_options={**config.algorithm_options, **options})


def accuracy(dataset: str, num_clients: int, seeds: list[int]) -> None:
    for seed in seeds:
        config = row_config(dataset, num_clients, seed)
        clock = time.process_time()
        algorithm = prepare(config)
        result = algorithm.run()
        value = next(r["value"] for r in rows_from_result(config, result) if r["metric"] == "accuracy")
        generated = sum(m.num_nodes - d.num_nodes for m, d in zip(algorithm.mended, algorithm.clients_data))
        print(json.dumps(dict(dataset=dataset, num_clients=num_clients, seed=seed, accuracy=round(value, 2),
                              generated_nodes=generated, cpu_seconds=round(time.process_time() - clock, 1))),
              flush=True)


def run_seconds(config: ExperimentConfig) -> float:
    algorithm = prepare(config)  # loading and partitioning are not timed
    clock = time.process_time()
    algorithm.run()
    return time.process_time() - clock


def phases(dataset: str, num_clients: int, exchange: str | None) -> None:
    options = {"cross_exchange": exchange} if exchange else {}
    row = row_config(dataset, num_clients, 0, **options)
    base = run_seconds(row.replace(algorithm_options={**row.algorithm_options, "federated_generator_epochs": 0},
                                   rounds=1, evaluate_every=1))
    one_epoch = run_seconds(row.replace(algorithm_options={**row.algorithm_options, "federated_generator_epochs": 1},
                                        rounds=1, evaluate_every=1))
    more_rounds = run_seconds(row.replace(algorithm_options={**row.algorithm_options, "federated_generator_epochs": 0},
                                          rounds=1 + EXTRA_ROUNDS, evaluate_every=1 + EXTRA_ROUNDS))
    epoch, round_ = one_epoch - base, (more_rounds - base) / EXTRA_ROUNDS
    epochs = row.algorithm_options["federated_generator_epochs"]
    projected = base - round_ + epochs * epoch + row.rounds * round_
    print(json.dumps({"dataset": dataset, "num_clients": num_clients,
                      "exchange": row.algorithm_options.get("cross_exchange", "parameters"),
                      "cpu_seconds": {"one_off": round(base - round_, 2), "generator_epoch": round(epoch, 2),
                                      "round": round(round_, 3), f"run ({epochs} epochs, {row.rounds} rounds)":
                                      round(projected, 1)}}), flush=True)


if __name__ == "__main__":
    runtime.set_threads(1)
    dataset, num_clients = sys.argv[2], int(sys.argv[3])
    if sys.argv[1] == "accuracy":
        accuracy(dataset, num_clients, [int(s) for s in sys.argv[4].split(",")])
    else:
        phases(dataset, num_clients, None)
        if "--outputs" in sys.argv:
            phases(dataset, num_clients, "outputs")
