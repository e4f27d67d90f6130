"""FedSage+ under FedStruct's protocol: accuracy runs, and CPU seconds per phase to project the paper's tables.

FedStruct (Aliakbari et al., ICLR 2025) ran FedSage+ with its port of the official code
(digest §4.5): NeighGen trained only in the federated phase (30-40 epochs, lr 0.002, every module
trains), counts rounded, then FedAvg ("WA": one local Adam step per round) of GraphSAGE on the
mended graphs with Table 5's lr, weight decay and epochs, the 10/10/80 global random split, last
round, client-size-weighted accuracy.

    FGL_THREADS=1 python benchmarks/fedsage_plus_fedstruct.py accuracy Cora random 0,1,2
    FGL_THREADS=1 python benchmarks/fedsage_plus_fedstruct.py accuracy Cora louvain 0,1,2
    FGL_THREADS=1 python benchmarks/fedsage_plus_fedstruct.py phases PubMed

``accuracy`` prints one JSON line per seed (test accuracy in %, seconds). ``phases`` prints the CPU
seconds (``time.process_time``: robust to other processes on a shared machine) of building the
NeighGens, one federated NeighGen epoch, mending and one FedSage round, and projects one run
(``gen_epochs`` epochs, Table 5's rounds). ``cross_exchange="outputs"`` is used (the same gradient
as shipping fGen's parameters, ``tests/test_fedsage_plus.py``, at far less traffic and compute);
pass ``--parameters`` to time the paper's exchange.
"""
from __future__ import annotations

import json
import sys
import time

import torch

from fglcore import runtime
from fglcore.algorithms import ALGORITHMS
from fglcore.algorithms.fedsage_plus import PRE_TRAINING, NeighGenOwner
from fglcore.config import ExperimentConfig
from fglcore.data.federation import build_federation
from fglcore.experiment import run_full
from fglcore.fl.channel import Channel
from fglcore.fl.engine import run_rounds

TABLE5 = {  # FedStruct Table 5 (lr, weight decay, epochs) and its code's dropout and GraphSAGE width (digest §4.4-4.5)
    "Cora": dict(lr=0.002, weight_decay=5e-4, rounds=40, dropout=0.7, hidden=128),
    "CiteSeer": dict(lr=0.002, weight_decay=5e-4, rounds=60, dropout=0.7, hidden=128),
    "PubMed": dict(lr=0.008, weight_decay=1e-3, rounds=125, dropout=0.5, hidden=256),
    "Chameleon": dict(lr=0.003, weight_decay=3e-4, rounds=60, dropout=0.7, hidden=128),
    "Photo": dict(lr=0.005, weight_decay=1e-3, rounds=150, dropout=0.8, hidden=256),
}
GEN_EPOCHS = 40


def config(dataset: str, partition: str, seed: int, exchange: str = "outputs", **changes) -> dict:
    return dict(paper="fedstruct", table="6", dataset=dataset, partition=partition, num_clients=10,
                partition_options={"cap": "plus"} if partition == "louvain" else {},
                split="global_random", split_ratios=[0.1, 0.1, 0.8], algorithm="fedsage_plus", model="sage",
                num_layers=2, local_epochs=1, selection="last", metric_aggregation="client_weighted", device="cpu",
                seed=seed, **{**TABLE5[dataset], **changes},
                algorithm_options=dict(local_generator_epochs=0, federated_generator_epochs=GEN_EPOCHS,
                                       generator_lr=0.002, federated_parameters="all", count_rounding="round",
                                       cross_exchange=exchange))


def accuracy(dataset: str, partition: str, seeds: list[int]) -> None:
    for seed in seeds:
        start = time.time()
        rows, _ = run_full(config(dataset, partition, seed))
        value = next(r["value"] for r in rows if r["metric"] == "accuracy")
        print(json.dumps(dict(dataset=dataset, partition=partition, seed=seed, accuracy=value,
                              seconds=round(time.time() - start, 1))), flush=True)


def phases(dataset: str, exchange: str) -> None:
    cfg = ExperimentConfig.from_dict(config(dataset, "random", 0, exchange, rounds=2))
    fed = build_federation(cfg)
    algorithm = ALGORITHMS.get("fedsage_plus")(cfg, fed, "cpu")
    channel, t = Channel(), {}
    clock = time.process_time()
    runtime.set_seed(0)
    owners = [NeighGenOwner(cid, d, algorithm.num_classes, cfg, algorithm.options, torch.device("cpu"))
              for cid, d in enumerate(fed.clients)]
    for owner in owners:
        owner.start_phase("all")
    t["build_neighgens"] = time.process_time() - clock
    clock = time.process_time()
    for owner in owners:  # one federated epoch, as FedSagePlus.mend_graphs runs it
        step = owner.local_loss()
        request = owner.request(step)
        replies = [channel.send(other.name, owner.name,
                                other.reply(channel.send(owner.name, other.name, request, PRE_TRAINING, copy=False),
                                            True),
                                PRE_TRAINING, copy=False) for other in owners if other is not owner]
        owner.step(step, replies)
    t["federated_epoch"] = time.process_time() - clock
    clock = time.process_time()
    algorithm.mended = [owner.mend() for owner in owners]
    t["mend"] = time.process_time() - clock
    del owners
    clock = time.process_time()
    server, clients = super(type(algorithm), algorithm).build(channel)
    run_rounds(server, clients, channel, rounds=2, num_classes=algorithm.num_classes, selection="last")
    t["round"] = (time.process_time() - clock) / 2
    rounds = TABLE5[dataset]["rounds"]
    t["projected_run"] = t["build_neighgens"] + GEN_EPOCHS * t["federated_epoch"] + t["mend"] + rounds * t["round"]
    print(json.dumps({"dataset": dataset, "exchange": exchange, "cpu_seconds": {k: round(v, 2) for k, v in t.items()},
                      "peer_MiB_per_epoch": round(channel.ledger.total_bytes(round=PRE_TRAINING) / 2**20, 1)}))


if __name__ == "__main__":
    runtime.set_threads(1)
    runtime.set_flush_denormal()
    if sys.argv[1] == "accuracy":
        accuracy(sys.argv[2], sys.argv[3], [int(s) for s in sys.argv[4].split(",")])
    else:
        phases(sys.argv[2], "parameters" if "--parameters" in sys.argv else "outputs")
