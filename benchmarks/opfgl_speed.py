"""O-pFGL speed: the seconds of each phase of one run (statistics, condensation, Stage 1, Stage 2, evaluation).

O-pFGL (Yan et al., arXiv 2411.11304) on Cora, Louvain+ with 10 clients, the
authors' Cora settings (``fglcore.algorithms.opfgl.CORA_LOUVAIN``: 3000
condensation iterations, Stages 1 and 2 up to 3000 epochs with early stopping).
Prints one table row per seed (and the accuracy and macro-F1 of the run, so
a speed-up can be checked not to change the numbers)::

    FGL_THREADS=1 python benchmarks/opfgl_speed.py            # seed 0
    FGL_THREADS=1 python benchmarks/opfgl_speed.py --seeds 0 1 2 --iterations 300

``--iterations`` and ``--max-epochs`` shorten the run (a smoke benchmark);
the phase times scale about linearly with them.
"""
from __future__ import annotations

import argparse
import platform
import time

import torch


def main() -> None:
    from fglcore.algorithms.opfgl import CORA_LOUVAIN, cora_louvain_config
    from fglcore.experiment import run_full
    from fglcore.runtime import set_threads

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--dataset", default="Cora")
    parser.add_argument("--partition", default="louvain_plus")
    parser.add_argument("--num-clients", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=CORA_LOUVAIN["condense_iterations"])
    parser.add_argument("--max-epochs", type=int, default=CORA_LOUVAIN["max_epochs"])
    args = parser.parse_args()
    threads = set_threads()
    print(f"O-pFGL phase times on {args.dataset} {args.partition} K={args.num_clients}; torch {torch.__version__}, "
          f"{threads} thread(s), {platform.processor() or platform.machine()}")
    header = ("seed", "statistics_s", "condensation_s", "stage1_s", "stage2_s", "evaluation_s", "total_s",
              "stage1_epochs", "stage2_epochs", "accuracy", "macro_f1")
    print(" | ".join(header))
    for seed in args.seeds:
        config = cora_louvain_config(seed, dataset=args.dataset, partition=args.partition,
                                     num_clients=args.num_clients, condense_iterations=args.iterations,
                                     max_epochs=args.max_epochs)
        start = time.perf_counter()
        rows, result = run_full(config)
        total = time.perf_counter() - start
        s = result.extras["seconds"]
        values = {r["metric"]: r["value"] for r in rows}
        epochs1 = sum(r["stage1_epochs"] for r in result.per_client)
        epochs2 = sum(r["stage2_epochs"] for r in result.per_client)
        print(" | ".join([str(seed), *(f"{s[k]:.1f}" for k in ("statistics", "condensation", "stage1", "stage2",
                                                                "evaluation")),
                          f"{total:.1f}", f"{epochs1:.0f}", f"{epochs2:.0f}", f"{values['accuracy']:.2f}",
                          f"{values['macro_f1']:.2f}"]), flush=True)


if __name__ == "__main__":
    main()
