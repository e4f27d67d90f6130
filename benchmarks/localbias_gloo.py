"""Local-bias engine on real Gloo processes: seconds per training epoch and bytes per client and epoch (Cora).

For K in ``--clients`` (default 2 and 4) and the variants ``ours-full`` (no
sampling; CAGNET's computation) and ``ours`` (label-guided sampling, s/N =
0.25), Cora, random equal-size partition, PyG split "full", 2-layer GCN,
hidden 128, dropout 0.2: one run simulated in this process and one on K Gloo
processes (``fglcore.distributed.run``), ``--epochs`` epochs each. Printed
per line (JSON): the median seconds per training epoch of each Gloo rank
(first epoch left out), the simulation's median epoch (all K clients in one
process, one after the other), the wall time of the Gloo run including the
processes' start, the largest difference of the two runs' test logits, and
the mean bytes each client sent and received per epoch, counted from the
messages, next to the paper's dense schedule (:mod:`fglcore.distributed.cost`).

Usage: ``FGL_THREADS=1 python benchmarks/localbias_gloo.py [--epochs 20] [--clients 2,4]``.
Each Gloo process uses one thread. On a machine with fewer cores than K, the
processes share cores and the times say little about the paper's setting.
"""
import json
import statistics
import time

import torch

from fglcore.config import ExperimentConfig
from fglcore.data.federation import build_federation
from fglcore.distributed.cost import analytic_bytes, measured_bytes
from fglcore.distributed.run import RunSpec, merged_ledger, run_on_gloo, simulate
from fglcore.distributed.sampling import budget
from fglcore.distributed.trainer import SamplingOptions
from fglcore.models.distributed_gnn import DistributedGNN
from fglcore.runtime import set_threads



def main() -> None:
    set_threads()
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--clients", default="2,4")
    args = parser.parse_args()
    epochs = args.epochs
    for K in [int(k) for k in args.clients.split(",")]:
        cfg = ExperimentConfig.from_dict(dict(dataset="Cora", partition="random", num_clients=K, split="planetoid_full",
                                              hidden=128, dropout=0.2, lr=0.01, weight_decay=0.0, seed=0))
        fed = build_federation(cfg, keep_cross_edges=True)
        dims = (fed.num_features, 128, fed.num_classes, 2)
        for variant in ["ours-full", "ours"]:
            torch.manual_seed(0)
            model = DistributedGNN("gcn", *dims[:3], 2, 0.2)
            spec = RunSpec(cfg, SamplingOptions(variant), "gcn", dims, True, model.state_dict(), epochs, (epochs,))
            t = time.time(); sim = simulate(fed.clients, spec); t_sim = time.time() - t
            t = time.time(); gl = run_on_gloo(fed.clients, spec, timeout=600); t_gloo = time.time() - t
            same = max((a.logits[epochs]["test"] - b.logits[epochs]["test"]).abs().max().item() for a, b in zip(sim, gl))
            ledger = merged_ledger(gl)
            sizes = [c.num_nodes if variant == "ours-full" else budget(c.num_nodes, 0.25) for c in fed.clients]
            layer_dims = [dims[0], dims[1], dims[2]]
            meas = [measured_bytes(ledger, k, range(1, epochs + 1))["total"] for k in range(K)]
            ana = [analytic_bytes(sizes, layer_dims, k)["total"] for k in range(K)]
            row = {"K": K, "variant": variant, "epochs": epochs,
                   "gloo_epoch_s_median_per_rank": [round(statistics.median(r.epoch_seconds[1:]), 4) for r in gl],
                   "sim_epoch_s_median_all_clients": round(statistics.median(sim[0].epoch_seconds[1:]), 4),
                   "gloo_wall_s_incl_start": round(t_gloo, 1), "sim_wall_s": round(t_sim, 1),
                   "max_abs_diff_sim_vs_gloo_test_logits": same,
                   "bytes_per_client_epoch_measured_mean": statistics.mean(meas),
                   "bytes_per_client_epoch_dense_formula_mean": statistics.mean(ana)}
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
