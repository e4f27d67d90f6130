"""O-pFGL memory: peak resident memory (RSS) and seconds of each phase of one run.

O-pFGL (Yan et al., arXiv 2411.11304) on a dataset of Tables 15/16 (Amazon and
Coauthor; Louvain+ or Metis+, 10 clients, the code defaults as in
``fglcore.papers.opfgl.tables``). Each phase's peak is the process's resident
high-water mark while the phase runs (Linux: ``VmHWM`` of
``/proc/self/status``, reset before the phase by writing 5 to
``/proc/self/clear_refs``), so it counts everything the process holds then
(the dataset, the federation, earlier clients), not the phase's own
allocations. Phases: ``load`` (dataset, partition, algorithm), ``trainer``
(each client's ``NodeTrainer``), ``homophily`` (Eqs. 1-3), ``label_propagation``
and ``hre`` (Eq. 7), ``propagation`` (the client's :math:`X^{prop}`, Eq. 5),
``statistics`` (Eq. 6), ``masked_upload`` (``fglcore.fl.secure``: masking and
unmasking), ``condensation`` (Sec. 4.3, PGE), ``stage1``, ``stage2`` and
``evaluation``; seconds are summed over clients. Prints the table, then the
run's metrics with every digit (``repr``), so a change can be checked not to
move any number::

    FGL_THREADS=1 python benchmarks/opfgl_memory.py --dataset CS
    FGL_THREADS=1 python benchmarks/opfgl_memory.py --dataset Physics --partition metis_plus

``--iterations`` (condensation) and ``--max-epochs`` (Stages 1-2) default to
short runs: the peaks do not grow with them. ``--dump FILE`` writes the
metrics, per-client rows and checksums of the pooled statistics and the
pseudo-graph as JSON, for a before/after comparison.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import json
import platform
import time
from typing import Any, Callable

import torch

PHASES = ("load", "trainer", "homophily", "label_propagation", "hre", "propagation", "statistics", "masked_upload",
          "condensation", "stage1", "stage2", "evaluation")


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


class Meter:
    """Peak RSS and seconds per phase; a phase entered inside another counts to the outer one."""

    def __init__(self) -> None:
        self.peak_kib: dict[str, int] = {}
        self.seconds: dict[str, float] = {}
        self.overall_kib = _status_kib("VmHWM")
        self.depth = 0

    @contextlib.contextmanager
    def phase(self, name: str):
        if self.depth:
            yield
            return
        self.overall_kib = max(self.overall_kib, _status_kib("VmHWM"))
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")  # reset VmHWM to the current RSS
        self.depth += 1
        start = time.perf_counter()
        try:
            yield
        finally:
            self.depth -= 1
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start
            peak = _status_kib("VmHWM")
            self.peak_kib[name] = max(self.peak_kib.get(name, 0), peak)
            self.overall_kib = max(self.overall_kib, peak)

    def wrap(self, name: str, function: Callable) -> Callable:
        @functools.wraps(function)
        def measured(*args: Any, **kwargs: Any) -> Any:
            with self.phase(name):
                return function(*args, **kwargs)
        return measured


def instrument(meter: Meter) -> None:
    """Route O-pFGL's phases through ``meter`` (module attributes, looked up at call time)."""
    from fglcore.algorithms import opfgl

    for name, phase in (("NodeTrainer", "trainer"), ("train_node_homophily", "homophily"),
                        ("class_homophily", "homophily"), ("label_propagation", "label_propagation"),
                        ("reliable_nodes", "hre"), ("propagated_features", "propagation"),
                        ("class_statistics", "statistics"), ("condense", "condensation"),
                        ("evaluate_clients", "evaluation")):
        if hasattr(opfgl, name):
            setattr(opfgl, name, meter.wrap(phase, getattr(opfgl, name)))
    for name in ("client_statistics", "selected_propagated_features"):  # helpers of the lower-memory path
        if hasattr(opfgl, name):
            setattr(opfgl, name, meter.wrap("propagation" if "propagated" in name else "statistics",
                                            getattr(opfgl, name)))
    opfgl.SecureAggregator.mask = meter.wrap("masked_upload", opfgl.SecureAggregator.mask)
    opfgl.SecureAggregator.unmask_sum = meter.wrap("masked_upload", opfgl.SecureAggregator.unmask_sum)
    opfgl.OpfglClient.stage1 = meter.wrap("stage1", opfgl.OpfglClient.stage1)
    opfgl.OpfglClient.stage2 = meter.wrap("stage2", opfgl.OpfglClient.stage2)


def checksum(*tensors: torch.Tensor) -> str:
    digest = hashlib.sha256()
    for t in tensors:
        digest.update(t.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


def main() -> None:
    from fglcore.experiment import prepare
    from fglcore.config import ExperimentConfig
    from fglcore.papers.opfgl.tables import opfgl_options, paper_protocol
    from fglcore.results import rows_from_result
    from fglcore.runtime import set_threads

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="CS")
    parser.add_argument("--partition", default="louvain_plus", choices=("louvain_plus", "metis_plus"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--max-epochs", type=int, default=200)
    parser.add_argument("--dump", default="")
    args = parser.parse_args()
    threads = set_threads()
    meter = Meter()
    instrument(meter)
    options = {**opfgl_options(args.dataset, args.partition)[0], "max_epochs": args.max_epochs,
               "condense_iterations": args.iterations}  # as fglcore.papers.opfgl.tables.table_configs
    config = ExperimentConfig.from_dict({**paper_protocol(), "dataset": args.dataset, "partition": args.partition,
                                         "num_clients": 10, "algorithm": "opfgl", "model": "gcn",
                                         "seed": args.seed, "algorithm_options": options})
    start = time.perf_counter()
    with meter.phase("load"):
        algorithm = prepare(config)
    result = algorithm.run()
    total = time.perf_counter() - start
    print(f"O-pFGL memory on {args.dataset} {args.partition} K=10 seed {args.seed} ({args.iterations} condensation "
          f"iterations, Stages 1-2 <= {args.max_epochs} epochs); torch {torch.__version__}, {threads} thread(s), "
          f"{platform.processor() or platform.machine()}")
    print("phase | peak RSS MB | seconds")
    for name in PHASES:
        if name in meter.peak_kib:
            print(f"{name} | {meter.peak_kib[name] / 1024:.0f} | {meter.seconds[name]:.1f}")
    print(f"whole run | {meter.overall_kib / 1024:.0f} | {total:.1f}")
    rows = rows_from_result(config, result, per_client=True)
    metrics = {f"{r['metric']}@{r.get('client', '')}": r["value"] for r in rows}
    print("metrics:", {k: repr(v) for k, v in metrics.items() if k.endswith("@") and "[" not in k})
    if args.dump:
        target, graph = result.extras["pooled_statistics"], result.extras["pseudo_graph"]
        with open(args.dump, "w") as out:
            json.dump({"metrics": {k: repr(v) for k, v in metrics.items()},
                       "per_client": [{k: repr(v) for k, v in row.items()} for row in result.per_client],
                       "pooled_statistics": checksum(target.count, target.mean, target.var),
                       "pseudo_graph": checksum(graph.x, graph.adj, graph.y),
                       "peak_mb": {k: v / 1024 for k, v in meter.peak_kib.items()},
                       "seconds": meter.seconds}, out, indent=1)


if __name__ == "__main__":
    main()
