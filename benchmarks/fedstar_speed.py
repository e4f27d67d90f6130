"""Cost of FedStar's graph-classification protocol (Table 1) per client and projected for the whole table.

Every FedStar setting is one client per TU dataset (``partition="by_dataset"``,
80/10/10 split), so a round costs the sum of its clients' local epochs and
the clients' costs are the same in every setting. This script times, per
dataset and per model family, one local epoch (batch 128, Adam lr 1e-3 wd
5e-4, hidden 64, 3 layers, dropout 0.5) and one evaluation of the val and
test graphs, for three implementations:

* ``port``: a straightforward per-client loop as in the official code
  (PyG ``DataLoader(shuffle=True)`` collation every epoch, per-parameter
  Adam, message passing on ``edge_index``, val and test evaluated every
  round);
* ``plain``: fglcore with ``FGL_GRAPH_FAST=0`` (batches sliced from one
  collation, fused Adam, message passing on ``edge_index``, evaluation only
  when asked: at the end and every 5 rounds for Figure 3);
* ``fast``: fglcore's default (the same, with CSR sparse operators,
  :mod:`fglcore.models.operators`). Its numbers equal ``plain``'s bit for
  bit (``tests/test_fast_graph.py``, ``tests/test_native.py``).

Model families: ``fedstar`` (FeatureStructureGNN: GIN feature channel, GCN
structure channel), ``gin`` (GraphClassifier with GIN: Local, FedAvg,
FedProx, FedPer, GCFL, GCFL+) and ``sage`` (GraphSAGE: FedSage).

Projection of Table 1 (4 settings without COLLAB x 8 methods x 5 seeds, 200
rounds; Local = 200 epochs): a run costs ``200 x sum_clients epoch +
evaluations x sum_clients eval`` (``port``: 200 evaluations; ``plain`` and
``fast``: 40 = every 5 rounds, the last one included); server aggregation,
FedProx's proximal term and GCFL's clustering are neglected (< 1%). Seconds
are medians of ``--repeats`` epochs measured with ``--threads`` threads; the
wall time assumes ``--workers`` such runs in parallel on as many cores
(independent runs, e.g. one per seed), i.e. total / workers.

    FGL_DATA_MIRROR=... python benchmarks/fedstar_speed.py [--threads 1 --workers 2] [--datasets MUTAG DD]
"""
from __future__ import annotations

import argparse
import copy
import os
import statistics
import time

import torch
import torch.nn.functional as F
from torch_geometric.loader import DataLoader

from fglcore import runtime
from fglcore.algorithms import ALGORITHMS
from fglcore.config import ExperimentConfig
from fglcore.data.datasets import group_members, load_graph_dataset
from fglcore.data.federation import GraphClient, GraphFederation
from fglcore.data.splits import graph_split_indices

ROUNDS, SEEDS, EVAL_EVERY = 200, 5, 5
SETTINGS = {
    "CHEM": group_members("chem"),
    "BIO-CHEM": group_members("biochem"),
    "BIO-CHEM-SN\\COLLAB": [m for m in group_members("biochemsn") if m != "COLLAB"],
    "BIO-SN-CV\\COLLAB": [m for m in group_members("biosncv") if m != "COLLAB"],
}
METHODS = {  # Table 1 row -> model family
    "local": "gin", "fedavg": "gin", "fedprox": "gin", "fedper": "gin", "fedsage": "sage",
    "gcfl": "gin", "gcfl_plus": "gin", "fedstar": "fedstar",
}
FAMILIES = {"fedstar": ("fedstar", "gin"), "gin": ("fedavg", "gin"), "sage": ("fedavg", "sage")}
IMPLEMENTATIONS = ("port", "plain", "fast")


def config_for(family: str) -> ExperimentConfig:
    algorithm, model = FAMILIES[family]
    return ExperimentConfig.from_dict(dict(
        dataset="MUTAG", partition="by_dataset", split="graph_stratified", algorithm=algorithm, model=model,
        hidden=64, num_layers=3, dropout=0.5, batch_size=128, optimizer="adam", lr=1e-3, weight_decay=5e-4,
        rounds=ROUNDS, local_epochs=1, selection="last", metric_aggregation="client_mean"))


def one_client(name: str) -> GraphFederation:
    dataset = load_graph_dataset(name)
    train, val, test = graph_split_indices(dataset.y.view(-1), [0.8, 0.1, 0.1], 123)
    client = GraphClient(name, name, dataset, train, val, test, int(dataset.num_features), int(dataset.num_classes))
    return GraphFederation(name, [client])


def median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def fglcore_trainer(federation: GraphFederation, family: str, fast: bool):
    os.environ["FGL_GRAPH_FAST"] = "1" if fast else "0"
    cfg = config_for(family)
    algorithm = ALGORITHMS.get(cfg.algorithm)(cfg, federation, torch.device("cpu"))
    _, models = algorithm.init_models()
    return algorithm.make_trainer(models[0], 0)


def port_step_functions(trainer):
    """Epoch and evaluation of a straightforward loop over the same graphs and model (official-code style)."""
    model = copy.deepcopy(trainer.model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=5e-4)  # per-parameter (foreach off)
    uses_s = type(trainer).__name__ == "StructureGraphTrainer"
    graphs = [trainer.train_set.select(torch.tensor([i])) for i in range(trainer.train_set.num_graphs)]
    graphs = [_strip(g) for g in graphs]
    evals = {split: [_strip(g) for b in batches for g in b.to_data_list()] if hasattr(batches[0], "to_data_list")
             else [] for split, batches in trainer.eval_batches.items() if batches}
    train_loader = DataLoader(graphs, batch_size=128, shuffle=True)
    eval_loaders = [DataLoader(g, batch_size=128, shuffle=True) for g in evals.values() if g]

    def forward(batch):
        if uses_s:
            return model(batch.x, batch.s, batch.edge_index, batch.batch)
        return model(batch.x, batch.edge_index, batch.batch)

    def epoch():
        model.train()
        for batch in train_loader:
            optimizer.zero_grad()
            F.cross_entropy(forward(batch), batch.y.view(-1)).backward()
            optimizer.step()

    @torch.no_grad()
    def evaluate():
        model.eval()
        for loader in eval_loaders:
            for batch in loader:
                forward(batch).argmax(1)

    return epoch, evaluate


def _strip(graph):
    from torch_geometric.data import Data

    keys = {k: graph[k] for k in ("x", "s", "edge_index", "y") if k in graph}
    return Data(**keys, num_nodes=graph.num_nodes)


def measure(name: str, family: str, repeats: int) -> dict[str, tuple[float, float]]:
    """``{implementation: (seconds per local epoch, seconds per val+test evaluation)}`` for one client.

    The implementations take turns, one epoch each, ``repeats`` times (after
    one warm-up epoch each), so a shared machine's load spikes hit them alike.
    """
    federation = one_client(name)
    plain = fglcore_trainer(federation, family, fast=False)
    fast = fglcore_trainer(federation, family, fast=True)
    os.environ.pop("FGL_GRAPH_FAST", None)
    port_epoch, port_evaluate = port_step_functions(plain)
    steps = {
        "port": (port_epoch, port_evaluate),
        "plain": (lambda: plain.train_epochs(1), plain.predict),
        "fast": (lambda: fast.train_epochs(1), fast.predict),
    }
    times: dict[str, tuple[list[float], list[float]]] = {i: ([], []) for i in steps}
    for repeat in range(repeats + 1):
        for implementation, functions in steps.items():
            for k, fn in enumerate(functions):
                seconds = median_seconds(fn, 1)
                if repeat:
                    times[implementation][k].append(seconds)
    return {i: (statistics.median(t[0]), statistics.median(t[1])) for i, t in times.items()}


def run_seconds(costs: dict, members: list[str], family: str, implementation: str) -> float:
    """Seconds of one 200-round run of a family on the clients ``members``."""
    evaluations = ROUNDS if implementation == "port" else ROUNDS // EVAL_EVERY
    epoch = sum(costs[(m, family)][implementation][0] for m in members)
    evaluation = sum(costs[(m, family)][implementation][1] for m in members)
    return ROUNDS * epoch + evaluations * evaluation


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=int(os.environ.get("FGL_THREADS", 0) or 2))
    parser.add_argument("--workers", type=int, default=1, help="runs in parallel for the wall-time projection")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--datasets", nargs="*", default=None, help="only these datasets (no projection)")
    parser.add_argument("--families", nargs="*", default=list(FAMILIES), choices=list(FAMILIES))
    args = parser.parse_args()
    runtime.set_threads(args.threads)
    names = args.datasets or list(dict.fromkeys(m for members in SETTINGS.values() for m in members))
    costs = {}
    print(f"per-client seconds per local epoch (eval = val+test once), {args.threads} thread(s), "
          f"median of {args.repeats}")
    print(f"{'dataset':<12}{'model':<9}{'port':>8}{'plain':>8}{'fast':>8}{'x plain':>9}"
          f"{'eval port':>11}{'eval fast':>11}")
    for name in names:
        for family in args.families:
            costs[(name, family)] = c = measure(name, family, args.repeats)
            print(f"{name:<12}{family:<9}{c['port'][0]:>8.3f}{c['plain'][0]:>8.3f}{c['fast'][0]:>8.3f}"
                  f"{c['plain'][0] / c['fast'][0]:>9.2f}{c['port'][1]:>11.3f}{c['fast'][1]:>11.3f}", flush=True)
    if args.datasets is not None or set(args.families) != set(FAMILIES):
        return
    print(f"\nseconds per round (training, all clients) and per 200-round run (with evaluations)")
    print(f"{'setting':<20}{'model':<9}" + "".join(f"{i + ' s/rd':>12}" for i in IMPLEMENTATIONS)
          + f"{'speedup':>9}" + "".join(f"{i + ' run':>11}" for i in IMPLEMENTATIONS))
    totals = dict.fromkeys(IMPLEMENTATIONS, 0.0)
    for setting, members in SETTINGS.items():
        for family in FAMILIES:
            per_round = {i: sum(costs[(m, family)][i][0] for m in members) for i in IMPLEMENTATIONS}
            runs = {i: run_seconds(costs, members, family, i) for i in IMPLEMENTATIONS}
            print(f"{setting:<20}{family:<9}" + "".join(f"{per_round[i]:>12.2f}" for i in IMPLEMENTATIONS)
                  + f"{runs['port'] / runs['fast']:>9.2f}" + "".join(f"{runs[i] / 60:>9.1f}mn" for i in IMPLEMENTATIONS))
        for method, family in METHODS.items():
            for i in IMPLEMENTATIONS:
                totals[i] += SEEDS * run_seconds(costs, members, family, i)
    runs = len(SETTINGS) * len(METHODS) * SEEDS
    print(f"\nTable 1 protocol: {len(SETTINGS)} settings x {len(METHODS)} methods x {SEEDS} seeds = {runs} runs "
          f"of {ROUNDS} rounds; {args.workers} run(s) in parallel at {args.threads} thread(s) each")
    for i in IMPLEMENTATIONS:
        print(f"  {i:<6} {totals[i] / 3600:8.1f} h of compute -> {totals[i] / 3600 / args.workers:8.1f} h wall")


if __name__ == "__main__":
    main()
