"""FED-PUB (fedpub) on Cora under the two papers' protocols that use it as a baseline; prints one JSON line per run.

* ``opfgl``: O-pFGL's Table 1 cell (Cora, Louvain+, 10 clients; partition and split at seed 42, per-client
  stratified 20/40/40, metrics weighted by local nodes): one round, local epochs chosen on validation from
  1..100 (fedavg_ft's grid), no fine-tuning, OpenFGL's FedPUB model settings (hidden 64, dropout 0.5 as its
  MaskedGCN, lr 0.01, weight decay 5e-4), no opening download (shared seed).
* ``fedstruct``: FedStruct's Table 2 cell (Cora, random partition, 10 clients, global 10/10/80 split drawn
  per seed): 50 rounds of 1 local epoch, hidden 128, lr 0.01, weight decay 1e-6, dropout 0.5, n_proxy 10,
  last round reported, client-size-weighted.

Usage: ``FGL_THREADS=1 python benchmarks/fedpub_cora.py opfgl|fedstruct SEED [option=value ...]``
(options are fedpub algorithm options, values parsed as JSON; ``rounds=``/``local_epochs=`` set config fields).
"""
from __future__ import annotations

import json
import sys
import time

from fglcore.algorithms.fedavg_ft import EPOCHS_GRID
from fglcore.algorithms.opfgl import PROTOCOL
from fglcore.experiment import run_full

CONFIG_FIELDS = {"rounds", "local_epochs", "lr", "dropout", "hidden", "weight_decay"}


def config(protocol: str, seed: int, changes: dict) -> dict:
    options = {k: v for k, v in changes.items() if k not in CONFIG_FIELDS}
    fields = {k: v for k, v in changes.items() if k in CONFIG_FIELDS}
    if protocol == "opfgl":
        base = {**PROTOCOL, "dataset": "Cora", "partition": "louvain_plus", "num_clients": 10, "paper": "opfgl",
                "dropout": 0.5, "weight_decay": 5e-4, "lr": 0.01,
                "algorithm_options": {"local_epochs_grid": list(EPOCHS_GRID), "initial_download": False, **options}}
    elif protocol == "fedstruct":
        base = {"dataset": "Cora", "partition": "random", "num_clients": 10, "split": "global_random",
                "split_ratios": [0.1, 0.1, 0.8], "paper": "fedstruct", "model": "gcn", "hidden": 128,
                "num_layers": 2, "dropout": 0.5, "rounds": 50, "local_epochs": 1, "lr": 0.01, "weight_decay": 1e-6,
                "selection": "last", "metric_aggregation": "client_weighted",
                "algorithm_options": {"n_proxy": 10, **options}}
    else:
        raise SystemExit(f"protocol: {protocol!r}; accepted: opfgl, fedstruct")
    return {**base, **fields, "algorithm": "fedpub", "seed": seed}


def main() -> None:
    protocol, seed = sys.argv[1], int(sys.argv[2])
    changes = {k: json.loads(v) for k, v in (a.split("=", 1) for a in sys.argv[3:])}
    start = time.time()
    _, result = run_full(config(protocol, seed, changes))
    m = result.metrics
    print(json.dumps({"protocol": protocol, "seed": seed, "changes": changes, "seconds": round(time.time() - start, 1),
                      "test_accuracy": m.get("test_accuracy"), "test_macro_f1": m.get("test_macro_f1"),
                      "val_accuracy": m.get("val_accuracy"), "local_epochs": result.extras.get("local_epochs"),
                      "epochs_search": result.extras.get("epochs_search")}), flush=True)


if __name__ == "__main__":
    main()
