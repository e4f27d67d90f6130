"""Project a paper's ``full`` profile: count its planned runs, measure the CPU seconds of representative ones.

The developers' guide asks to "measure a full protocol's cost on a few runs
before launching it, and say the projection in the notebook". This script
does both steps for a paper's notebooks:

* ``count``: every run the notebooks plan under ``full`` (their own plan
  functions, :data:`fglcore.notebooks.PLANS`, on the parameters cell
  overridden by ``params/<paper>/<nb>.full.yaml``), each computation once
  (:func:`fglcore.results.run_id`: a run another notebook of the paper
  already stores is copied, not computed), grouped by ``--key``;
* ``measure GROUP...``: one run of each named group (seed 0, the first
  planned config of the group), possibly **truncated** (``--rounds``,
  ``--condense``), in this process with one thread, timed in CPU seconds
  (``time.process_time``, plus the CPU of child processes for the Gloo
  runs), appended to a CSV (``--out``);
* ``project``: :func:`fglcore.runlog.projection` of the counted runs from
  the CSV's seconds per run (the last row of a group wins); ``markdown``: the
  same as the tables the notebooks show (per method, then the biggest groups).

``--profile quick`` counts and projects another profile's runs from the same
CSV. A group is keyed by dataset, method, model and rounds, not by options:
a profile that cuts an option the seconds depend on (O-pFGL's condensation
iterations, the epochs candidates) is priced as the full run of its group,
an upper bound.

CPU time, not wall time: the project's machine has two cores shared by
several sessions, so wall seconds inflate with the load while a
single-threaded process's CPU seconds do not (much). In this process
``time.perf_counter`` reads the process's CPU time, so the phase times that
algorithms record (O-pFGL's ``extras["seconds"]``) are CPU seconds too.

Truncation, and how a truncated run is extrapolated to the planned one:

* ``--rounds R``: rounds (epochs) cut to ``R``; the run's training part is
  scaled by ``planned_rounds / R`` (cost linear in rounds: every round or
  epoch does the same work, evaluation included), the set-up part
  (:func:`fglcore.experiment.prepare`: data, partition, split) is kept;
* ``--rounds R --rounds2 R2``: two truncated runs, ``R`` and ``R2`` rounds,
  fit a one-time part (NeighGen, GraphSAINT's normalisation: work inside the
  run that does not repeat each round) and a per-round part, the latter
  clamped at 0 when the two runs differ by less than their noise (the
  2026-11-26 FedSAGE+ row then priced its epochs as FedAvg's on the same
  data, by hand, as its ``truncation`` says);
* ``--condense N`` (O-pFGL): the server's condensation cut to ``N``
  iterations, its CPU scaled by ``planned / N`` (each iteration is one Adam
  step on the same pseudo-graph); Stages 1-2 run in full (their length
  comes from early stopping, not from a fixed count).
* ``--distill N`` (DENSE, Co-Boost): the server's distillation cut to ``N``
  of its ``epochs`` rounds (every distillation, one per architecture under a
  model list). The CPU of the servers' ``synthesize`` (a fixed number of
  generator steps a round) is scaled by ``planned / N``; the rest of
  ``distill`` (the student's steps, Co-Boost's re-weighting and ODS, one
  pass over a pool that grows by one graph a round) by the pooled graphs
  visited, ``planned (planned + 1) / (N (N + 1))``; local training,
  choice of the local epochs and fine-tuning run in full.

Example::

    FGL_THREADS=1 python benchmarks/full_projection.py opfgl count
    FGL_THREADS=1 python benchmarks/full_projection.py opfgl measure "Cora|opfgl|gcn|1" --condense 300
    FGL_THREADS=1 python benchmarks/full_projection.py opfgl project
"""
from __future__ import annotations

import argparse
import csv
import os
import resource
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = {"opfgl": ["1_motivation", "2_method", "3_results", "4_ablations"],
             "localbias": ["1_motivation", "2_method", "3_results", "4_analysis"]}
FIELDS = ["paper", "group", "truncation", "prepare_cpu_s", "run_cpu_s", "children_cpu_s", "wall_s",
          "seconds_per_run", "how", "measured_on", "load_1min"]


def planned(paper: str, profile: str = "full"):
    """``{notebook: [configs]}`` of ``paper``'s notebooks under ``profile`` (see :func:`fglcore.runlog.plan_configs`)."""
    from fglcore.runlog import plan_configs

    return {nb: plan_configs(ROOT / "notebooks" / paper / f"{nb}.ipynb", profile) for nb in NOTEBOOKS[paper]}


def left_out(paper: str, profile: str = "full") -> dict[str, list[str]]:
    """``{dataset: [notebooks]}``: the datasets the notebooks' ``datasets`` parameter names under ``profile`` that
    are not available here (:func:`fglcore.data.datasets.availability`: not registered, or registered but in
    neither the data folder nor ``FGL_DATA_MIRROR``): their plans skip them, so a projection made here leaves
    their runs out."""
    from fglcore import notebooks
    from fglcore.data.datasets import availability

    missing: dict[str, list[str]] = {}
    for nb in NOTEBOOKS[paper]:
        path = ROOT / "notebooks" / paper / f"{nb}.ipynb"
        params = {**{k: v.default for k, v in notebooks.read_parameters(path).items()},
                  **notebooks.load_profile(path, profile)}
        for name in params.get("datasets") or []:
            if availability(name) != "available":
                missing.setdefault(name, []).append(nb)
    return missing


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class _DistillationTimer:
    """CPU seconds spent in the distillation servers' ``distill`` and, inside it, ``synthesize`` (while in use)."""

    def __init__(self):
        from fglcore.algorithms.coboost import CoBoostServer
        from fglcore.algorithms.dense import DenseServer

        self.seconds = {"distill": 0.0, "synthesize": 0.0}
        self.saved = [(cls, name, cls.__dict__[name]) for cls in (DenseServer, CoBoostServer)
                      for name in ("distill", "synthesize")]

    def __enter__(self):
        for cls, name, method in self.saved:
            setattr(cls, name, self._timed(name, method))
        return self

    def __exit__(self, *exc):
        for cls, name, method in self.saved:
            setattr(cls, name, method)

    def _timed(self, name, method):
        def timed(*args, **kwargs):
            start = time.process_time()
            try:
                return method(*args, **kwargs)
            finally:
                self.seconds[name] += time.process_time() - start
        return timed


def measure(config, *, rounds: int | None, condense: int | None, distill: int | None = None) -> dict:
    """CPU seconds of one run of ``config`` (truncated as asked) and its extrapolation to the planned run."""
    import contextlib

    from fglcore.experiment import prepare

    planned_rounds = config.rounds
    options = dict(config.algorithm_options)
    planned_iterations = None
    if condense is not None:
        from fglcore.algorithms.opfgl import Opfgl

        planned_iterations = options.get("condense_iterations", Opfgl.default_options["condense_iterations"])
        options["condense_iterations"] = condense
    planned_distill = None
    if distill is not None:
        from fglcore.algorithms.base import ALGORITHMS

        planned_distill = options.get("epochs", ALGORITHMS.get(config.algorithm).default_options["epochs"])
        options["epochs"] = distill
    run_config = config.replace(rounds=rounds or planned_rounds, algorithm_options=options,
                                evaluate_every=min(config.evaluate_every, rounds or planned_rounds))
    prepare(run_config)  # warm: data and partition caches, imports (not timed)
    wall, cpu, children = time.time(), time.process_time(), _cpu_children()
    algorithm = prepare(run_config)
    prepared = time.process_time()
    with (_DistillationTimer() if distill is not None else contextlib.nullcontext()) as timer:
        result = algorithm.run()
    run_cpu = time.process_time() - prepared
    child_cpu = _cpu_children() - children
    prepare_cpu = prepared - cpu
    train = run_cpu + child_cpu
    parts = []
    if condense is not None:
        condensation = result.extras["seconds"]["condensation"]  # CPU: perf_counter reads process time here
        train += condensation * (planned_iterations / condense - 1)
        parts.append(f"condensation {condense} of {planned_iterations} iterations ({condensation:.1f} s CPU), "
                     "scaled linearly")
    if distill is not None:
        synthesis = timer.seconds["synthesize"]
        pooled = timer.seconds["distill"] - synthesis
        visits = planned_distill * (planned_distill + 1) / (distill * (distill + 1))
        train += synthesis * (planned_distill / distill - 1) + pooled * (visits - 1)
        parts.append(f"distillation {distill} of {planned_distill} rounds (synthesis {synthesis:.1f} s CPU, scaled "
                     f"linearly; the rest of the distillation {pooled:.1f} s CPU, scaled by the pooled graphs "
                     f"visited, x{visits:.0f})")
    if rounds is not None and rounds != planned_rounds:
        train *= planned_rounds / rounds
        parts.append(f"{rounds} of {planned_rounds} rounds, scaled linearly")
    return {"truncation": "; ".join(parts) or "none (full run)", "prepare_cpu_s": round(prepare_cpu, 2),
            "run_cpu_s": round(run_cpu, 2), "children_cpu_s": round(child_cpu, 2),
            "wall_s": round(time.time() - wall, 1), "seconds_per_run": round(prepare_cpu + train, 1),
            "how": "measured" if not parts else "measured, truncated",
            "measured_on": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "load_1min": round(os.getloadavg()[0], 1)}


def two_point(first: dict, second: dict, r1: int, r2: int, planned: int) -> dict:
    """One row from runs of ``r1`` and ``r2`` rounds: a one-time part plus a per-round part (at least 0)."""
    per_round = max(0.0, (second["run_cpu_s"] - first["run_cpu_s"]) / (r2 - r1))
    fixed = first["run_cpu_s"] - per_round * r1
    total = first["prepare_cpu_s"] + fixed + per_round * planned
    return {**first, "truncation": f"{r1} and {r2} of {planned} rounds ({first['run_cpu_s']:.1f} and "
                                   f"{second['run_cpu_s']:.1f} s CPU): one-time {fixed:.1f} s + {per_round:.2f} s "
                                   "per round", "wall_s": round(first["wall_s"] + second["wall_s"], 1),
            "seconds_per_run": round(total, 1), "how": "measured, truncated, two points"}


def markdown(table, workers: int) -> str:
    """Per notebook: CPU hours per method (runs, hours, share priced from measured groups) and the biggest
    groups, as markdown tables to paste into the notebooks."""
    import pandas as pd

    parts = []
    for notebook, mine in table.groupby("notebook", sort=False):
        mine = mine.assign(method=[g.split("|")[1] for g in mine["group"]],
                           measured_h=mine["cpu_hours"].where(mine["priced"] == "measured", 0.0))
        by_method = mine.groupby("method", sort=False).agg(runs=("runs", "sum"), cpu_hours=("cpu_hours", "sum"),
                                                           measured_h=("measured_h", "sum"))
        by_method = by_method.sort_values("cpu_hours", ascending=False)
        total = float(mine["cpu_hours"].sum())
        lines = [f"**{notebook}**: {int(mine['runs'].sum())} runs, {total:.1f} CPU h, "
                 f"{total / workers:.1f} h on {workers} workers at best", "",
                 "| method | runs | CPU h | of which measured groups |", "|---|---:|---:|---:|"]
        lines += [f"| {m} | {int(r.runs)} | {r.cpu_hours:.2f} | {r.measured_h:.2f} |" for m, r in by_method.iterrows()]
        lines += ["", "| biggest groups (dataset, method, model, rounds) | runs | CPU s/run | CPU h | priced |",
                  "|---|---:|---:|---:|---|"]
        lines += [f"| {r.group.replace('|', ', ')} | {r.runs} | {r.seconds_per_run:.0f} | {r.cpu_hours:.2f} | "
                  f"{r.priced} |" for r in mine.nlargest(8, "cpu_hours").itertuples()]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paper", choices=sorted(NOTEBOOKS))
    parser.add_argument("action", choices=["count", "measure", "project", "markdown"])
    parser.add_argument("groups", nargs="*", help="groups to measure, as printed by count (fields joined by |)")
    parser.add_argument("--rounds", type=int, help="truncate rounds/epochs to this many (scaled linearly)")
    parser.add_argument("--rounds2", type=int, help="with --rounds: a second length, to fit a one-time part")
    parser.add_argument("--condense", type=int, help="truncate O-pFGL's condensation to this many iterations")
    parser.add_argument("--distill", type=int, help="truncate DENSE/Co-Boost's distillation to this many rounds")
    parser.add_argument("--out", type=Path, help="CSV of measured seconds (default benchmarks/projection_<paper>.csv)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--profile", default="full", help="the profile whose runs are counted and projected "
                        "(default full; the seconds measured for full price the same groups of another profile)")
    args = parser.parse_args()
    out = args.out or ROOT / "benchmarks" / f"projection_{args.paper}.csv"

    import pandas as pd

    from fglcore import runtime
    from fglcore.runlog import format_group, group_key, projection

    runtime.set_threads()
    pd.set_option("display.width", 250)
    pd.set_option("display.max_rows", 500)
    plans = planned(args.paper, args.profile)
    for name, notebooks_ in left_out(args.paper, args.profile).items():
        print(f"note: {name} is not available here; {', '.join(notebooks_)} plan no runs on it and this projection "
              f"leaves them out")
    if args.action == "count":
        table = projection(plans, {}, workers=args.workers)
        print(table[["notebook", "group", "runs"]].to_string(index=False))
        print(table.groupby("notebook", sort=False)["runs"].sum().to_string())
        return
    if args.action in ("project", "markdown"):
        measured = pd.read_csv(out) if out.exists() else pd.DataFrame(columns=FIELDS)
        measured = measured.drop_duplicates("group", keep="last")
        seconds = dict(zip(measured["group"], measured["seconds_per_run"]))
        table = projection(plans, seconds, workers=args.workers)
        if args.action == "project":
            print(table.to_string(index=False))
            print(table.attrs["summary"])
        else:
            print(markdown(table, args.workers))
        return
    time.perf_counter = time.process_time  # phase times recorded by the algorithms become CPU seconds
    by_group = {}
    for configs in plans.values():
        for config in configs:
            if config.seed == 0:
                by_group.setdefault(format_group(group_key(config)), config)
    for group in args.groups:
        if group not in by_group:
            raise SystemExit(f"no planned run of group {group!r}; groups: {', '.join(sorted(by_group))}")
        row = {"paper": args.paper, "group": group, **measure(by_group[group], rounds=args.rounds,
                                                              condense=args.condense, distill=args.distill)}
        if args.rounds2:
            if not args.rounds:
                raise SystemExit("--rounds2 needs --rounds")
            second = measure(by_group[group], rounds=args.rounds2, condense=args.condense, distill=args.distill)
            row = two_point(row, second, args.rounds, args.rounds2, by_group[group].rounds)
        new = not out.exists()
        with open(out, "a", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=FIELDS)
            if new:
                writer.writeheader()
            writer.writerow(row)
        print(row, flush=True)


if __name__ == "__main__":
    main()
