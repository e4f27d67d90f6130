"""CPU seconds of FedStruct's table runs: the one-off part (build, FedStruct's Alg. 3) and one training round.

FedStruct (Aliakbari et al., ICLR 2025) rows as ``fglcore.papers.fedstruct.tables`` plans them (Table 5's
settings, 10 clients, random partition, seed 0). For each row: the seconds to build the participants (loading is
not counted; for FedStruct rows this is Alg. 3 through the channel, built twice: the second reads Alg. 3's stored
result back, as the next row on the same partition does), the seconds of one round (mean of ``rounds`` rounds,
one evaluation included)
and the projected run at Table 5's epochs (first build + epochs x round). ``time.process_time`` (robust to other
processes on a shared machine). One JSON line per row::

    FGL_THREADS=1 python benchmarks/fedstruct_speed.py PubMed fedstruct_h2v,fedstruct_deg,fedsgd,central 5
    FGL_THREADS=1 python benchmarks/fedstruct_speed.py Photo fedstruct_h2v_f 5

Measured 2026-11-26 on the project's shared two-core machine (one thread): Photo ``fedstruct_h2v_f`` builds in
12 s (0.1 s read back) and takes 0.23 s a round (before the fused "-F" simulation applied the unpruned
:math:`\\bar A` as :math:`L_s` products with :math:`\\hat A`: 17 s and 1.69 s); Cora 6.9 s and 0.062 s (8.5 s and
0.52 s); pruned rows read Alg. 3 back in 0.1 s (Photo 1.4 s, Cora 0.6 s computed).
"""
from __future__ import annotations

import json
import sys
import time

from fglcore import runtime
from fglcore.algorithms import ALGORITHMS
from fglcore.config import ExperimentConfig
from fglcore.data.federation import build_federation
from fglcore.fl.channel import Channel
from fglcore.fl.engine import run_rounds
from fglcore.papers.fedstruct import tables


def config(row: str, dataset: str, rounds: int) -> ExperimentConfig:
    fields = tables.row_fields(row, dataset)
    fields["rounds"] = rounds
    return ExperimentConfig.from_dict({**tables.PROTOCOL, **fields, "table": "speed", "dataset": dataset,
                                       "num_clients": 10, "seed": 0, "evaluate_every": rounds})


def measure(row: str, dataset: str, rounds: int) -> dict:
    cfg = config(row, dataset, rounds)
    algorithm_class = ALGORITHMS.get(cfg.algorithm)
    federation = build_federation(cfg, keep_cross_edges=algorithm_class.needs_cross_edges)
    builds = []
    for _ in range(2):
        algorithm = algorithm_class(cfg, federation, "cpu")
        channel = Channel()
        clock = time.process_time()
        server, clients = algorithm.build(channel)
        builds.append(time.process_time() - clock)
    clock = time.process_time()  # the rounds and one evaluation at the end, as a run
    run_rounds(server, clients, channel, rounds=rounds, num_classes=algorithm.num_classes, selection="last")
    per_round = (time.process_time() - clock) / rounds
    epochs = int(tables.table5(dataset)["epochs"])
    return {"dataset": dataset, "row": row, "build_s": round(builds[0], 2), "build_again_s": round(builds[1], 2),
            "round_s": round(per_round, 4), "epochs": epochs, "run_s": round(builds[0] + epochs * per_round, 1)}


if __name__ == "__main__":
    runtime.set_threads(1)
    dataset, rows, rounds = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]) if len(sys.argv) > 3 else 5
    for row in rows:
        print(json.dumps(measure(row, dataset, rounds)), flush=True)
