"""Cora, K clients: localbias ours / ours* / ours-full and FedAvg against the centralised GCN (accuracy, local bias).

Usage: ``FGL_THREADS=1 python benchmarks/localbias_cora.py K SEEDS ROUNDS METHODS``, e.g. ``4 0,1,2 200
ours-full,ours,ours*,fedavg``. One JSON line per run. Settings: random equal-size partition, PyG split "full",
2-layer GCN, hidden 128, dropout 0.2, Adam lr 0.01, no weight decay, ``ROUNDS`` epochs (FedAvg: one local epoch
per round), the last epoch reported (``selection="last"``). The centralised reference is ``localbias`` with one
client (``ours-full`` on the whole graph = full-batch GCN), same seed; a second centralised run with seed + 100
gives the seed-to-seed noise floor (digest A11). Local bias = mean Euclidean distance of test logits
(``lb``) and of softmax outputs (``lb_prob``). Until the local-bias notebooks exist, this is how the numbers of
the first measurement were made.
"""
import json, sys, time, torch
from fglcore.algorithms import ALGORITHMS
from fglcore.config import ExperimentConfig
from fglcore.data.federation import build_federation
from fglcore.metrics import local_bias
from fglcore.runtime import set_flush_denormal, set_seed, set_threads
set_threads(); set_flush_denormal()

K = int(sys.argv[1]); seeds = [int(s) for s in sys.argv[2].split(",")]; rounds = int(sys.argv[3])
methods = sys.argv[4].split(",")
base = dict(dataset="Cora", partition="random", split="planetoid_full", hidden=128, dropout=0.2, lr=0.01,
            weight_decay=0.0, rounds=rounds, selection="last", num_layers=2, evaluate_every=10)

def run(cfg, algorithm):
    config = ExperimentConfig.from_dict(cfg)
    set_seed(config.seed)
    alg = ALGORITHMS.get(config.algorithm)
    fed = build_federation(config, keep_cross_edges=alg.needs_cross_edges)
    a = alg(config, fed, "cpu")
    t = time.time(); res = a.run(); secs = time.time() - t
    if config.algorithm == "localbias":
        test = res.extras["localbias"]["test_logits"]
        ids, logits = test["global_id"], test["logits"]
        extra = {"epoch_seconds_median": res.extras["localbias"]["epoch_seconds"][0],
                 "comm": res.extras["localbias"]["communication"]}
    else:
        ids = torch.cat([c.global_id[c.test_mask] for c in fed.clients])
        logits = torch.cat([cl.evaluate()["test"].logits for cl in a.clients])
        order = torch.argsort(ids); ids, logits = ids[order], logits[order]
        extra = {}
    return res, ids, logits, secs, extra

out = []
for seed in seeds:
    central = {}
    for cs in (seed, seed + 100):  # the centralised model, and a second seed for the noise floor
        res, ids, logits, secs, _ = run({**base, "num_clients": 1, "seed": cs, "algorithm": "localbias",
                                         "algorithm_options": {"variant": "ours-full"}}, "central")
        central[cs] = (res, ids, logits)
        print(json.dumps({"K": 1, "seed": cs, "method": "central", "acc": res.metrics["test_accuracy"], "secs": secs}), flush=True)
    ref = central[seed][2]
    row = {"K": K, "seed": seed, "method": "central(seed+100)", "acc": central[seed + 100][0].metrics["test_accuracy"],
           "lb": local_bias(central[seed + 100][2], ref), "lb_prob": local_bias(central[seed + 100][2], ref, "probabilities")}
    print(json.dumps(row), flush=True)
    for method in methods:
        if method == "fedavg":
            cfg = {**base, "num_clients": K, "seed": seed, "algorithm": "fedavg", "local_epochs": 1, "model": "gcn"}
        else:
            cfg = {**base, "num_clients": K, "seed": seed, "algorithm": "localbias", "algorithm_options": {"variant": method}}
        res, ids, logits, secs, extra = run(cfg, method)
        assert torch.equal(ids, central[seed][1])
        row = {"K": K, "seed": seed, "method": method, "acc": res.metrics["test_accuracy"], "lb": local_bias(logits, ref),
               "lb_prob": local_bias(logits, ref, "probabilities"), "secs": secs, **extra}
        print(json.dumps(row), flush=True)
