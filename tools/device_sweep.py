"""Compute a profile's not-yet-stored runs on another machine (a lent GPU machine) and bring their rows home.

The notebooks plan; the other machine has no papermill and no notebooks' outputs, only this checkout. Three
steps::

    # here: the runs of the notebooks' plans that the store lacks, as configurations
    python tools/device_sweep.py plan opfgl --profile full --notebooks 3_results --out .remote/plan.json
    # there: run them on N processes, each its own share, stopping at the first run boundary after S seconds
    python tools/device_sweep.py run .remote/plan.json --store /tmp/away/results.csv --workers 8 --seconds 420
    # here: add what came back to the paper's store (run ids, seconds, devices kept; nothing overwritten)
    python tools/device_sweep.py merge away/results.csv outputs/full/opfgl/results.csv

``plan`` leaves out configurations stored already (by ``config_id``) and those whose computation is stored
under other labels (by ``run_id``: the notebook's sweep copies them), and keeps one configuration per run id.
``--datasets`` narrows the plan to what the other machine holds (the data travels with the command);
``--costs`` (a projection table of ``benchmarks/full_projection.py``: ``group``, ``seconds_per_run``) orders it
by CPU seconds per run, dearest first, so that a short lease takes the runs that cost this machine most
(a group the table lacks is priced as its method's dearest dataset; unpriced methods go last, in plan order);
``--max-cost S`` then drops the runs priced above ``S`` CPU seconds (unpriced ones stay), so that a short lease is given runs it can
finish (the first lease, 2026-11-28, gave twelve processes O-pFGL's 2-4 CPU-hour runs and stored none).

``run`` gives worker ``i`` of ``N`` the configurations ``i, i + N, ...`` of the plan and runs each through
:func:`fglcore.experiment.sweep` (claims, checkpoints, the run index and its provenance: device, versions,
commit), one at a time: a configuration that fails is reported on the worker's log and the worker goes on.
After ``--seconds`` a stop file asks every worker to stop once its current run is stored
(:func:`fglcore.experiment.request_stop`). The workers' logs are ``worker<i>.log`` beside the store.

``merge`` is :meth:`fglcore.results.ResultStore.merge`; the home store's notebook then finds the runs stored.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def plan(paper: str, profile: str, notebooks: list[str] | None, datasets: list[str] | None, costs: Path | None,
         out: Path, max_cost: float | None = None) -> None:
    import pandas as pd

    from fglcore.paths import output_dir
    from fglcore.results import ResultStore, config_id, run_id
    from fglcore.runlog import format_group, group_key, plan_configs

    paths = sorted((REPO / "notebooks" / paper).glob("*.ipynb"))
    if notebooks:
        unknown = sorted(set(notebooks) - {p.stem for p in paths})
        if unknown:
            raise SystemExit(f"--notebooks: {unknown} are not notebooks of {paper}; "
                             f"accepted: {', '.join(p.stem for p in paths)}")
        paths = [p for p in paths if p.stem in notebooks]
    store = ResultStore(output_dir(profile, paper) / "results.csv")
    stored_configs, stored_runs = store.done_ids(), set(store.run_ids().values())
    chosen: dict[str, dict] = {}
    for path in paths:
        for config in plan_configs(path, profile):
            if datasets and str(config.dataset) not in datasets:
                continue
            rid = run_id(config)
            if config_id(config) in stored_configs or rid in stored_runs or rid in chosen:
                continue
            chosen[rid] = {"notebook": path.stem, "group": format_group(group_key(config)),
                           "config": config.to_dict()}
    entries, priced_out = list(chosen.values()), 0
    if costs is not None:
        table = pd.read_csv(costs).assign(kind=lambda f: f["group"].str.split("|", n=1).str[1])
        latest = table.drop_duplicates("group", keep="last")  # the table's rule: a group's last row wins
        by_group = latest.set_index("group")["seconds_per_run"].to_dict()
        by_kind = latest.groupby("kind")["seconds_per_run"].max().to_dict()  # method|model|rounds, any dataset

        def cost(entry: dict) -> float:
            return by_group.get(entry["group"], by_kind.get(entry["group"].split("|", 1)[1], 0.0))

        entries.sort(key=lambda entry: -cost(entry))
        if max_cost is not None:
            kept = [entry for entry in entries if cost(entry) <= max_cost]
            entries, priced_out = kept, len(entries) - len(kept)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(entries, indent=1))
    left_out = f" ({priced_out} more priced above {max_cost:g} CPU s left out)" if priced_out else ""
    print(f"{len(entries)} runs of {paper} ({profile}) not stored in {store.path} planned into {out}{left_out}")


def worker(plan_path: Path, store: Path, index: int, workers: int) -> None:
    """Child process: this worker's share of the plan, one sweep per configuration."""
    from fglcore import experiment

    entries = json.loads(plan_path.read_text())[index::workers]
    for number, entry in enumerate(entries, 1):
        config = entry["config"]
        label = f"{config['dataset']} {config['algorithm']} K={config['num_clients']} seed={config['seed']}"
        start = time.perf_counter()
        try:
            experiment.sweep([config], store, progress=False, desc=f"worker {index}")
        except experiment.SweepStopped:
            print(f"stopped before {label} ({number - 1} of {len(entries)} done)", flush=True)
            return
        except Exception:  # one failing configuration must not cost the others their turn
            print(f"FAILED {label}:\n{traceback.format_exc()}", flush=True)
            continue
        print(f"{number}/{len(entries)} {label} {time.perf_counter() - start:.1f} s", flush=True)


def run(plan_path: Path, store: Path, workers: int, seconds: float) -> int:
    from fglcore.experiment import request_stop, withdraw_stop

    store.parent.mkdir(parents=True, exist_ok=True)
    withdraw_stop(store.parent)
    timer = threading.Timer(seconds, lambda: print(f"stop requested: {request_stop(store.parent)}", flush=True))
    timer.start()
    children = []
    for index in range(workers):
        log = open(store.parent / f"worker{index}.log", "w")
        children.append(subprocess.Popen(
            [sys.executable, "-X", "faulthandler", __file__, "worker", str(plan_path), "--store", str(store),
             "--index", str(index), "--workers", str(workers)], stdout=log, stderr=subprocess.STDOUT, cwd=REPO))
    codes = [child.wait() for child in children]
    timer.cancel()
    print(f"workers ended with exit codes {codes}", flush=True)
    return max(codes, default=0)


def merge(source: Path, target: Path) -> None:
    from fglcore.results import ResultStore

    added = ResultStore(target).merge(ResultStore(source))
    print(f"{len(added)} runs of {source} added to {target}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan", help="the runs the notebooks plan and the store lacks, as a JSON file")
    p.add_argument("paper")
    p.add_argument("--profile", default="full")
    p.add_argument("--notebooks", nargs="+", help="notebook stems (default: all of the paper's)")
    p.add_argument("--datasets", nargs="+", help="only these datasets (what the other machine holds)")
    p.add_argument("--costs", type=Path, help="projection CSV (group, seconds_per_run): dearest runs first")
    p.add_argument("--max-cost", type=float, help="with --costs: leave out runs priced above this many CPU seconds")
    p.add_argument("--out", type=Path, required=True)
    r = sub.add_parser("run", help="run a plan on several processes, stopping at a run boundary after --seconds")
    r.add_argument("plan", type=Path)
    r.add_argument("--store", type=Path, required=True)
    r.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    r.add_argument("--seconds", type=float, default=float("inf"))
    w = sub.add_parser("worker", help=argparse.SUPPRESS)
    w.add_argument("plan", type=Path)
    w.add_argument("--store", type=Path, required=True)
    w.add_argument("--index", type=int, required=True)
    w.add_argument("--workers", type=int, required=True)
    m = sub.add_parser("merge", help="add a store's runs to another store (nothing overwritten)")
    m.add_argument("source", type=Path)
    m.add_argument("target", type=Path)
    args = parser.parse_args(argv)
    if args.command == "plan":
        if args.max_cost is not None and args.costs is None:
            parser.error("--max-cost prices runs by a projection table: give --costs too")
        plan(args.paper, args.profile, args.notebooks, args.datasets, args.costs, args.out, args.max_cost)
    elif args.command == "run":
        if args.workers < 1 or not args.seconds > 0:
            parser.error(f"--workers must be at least 1 (got {args.workers}) and --seconds positive "
                         f"(got {args.seconds})")
        return run(args.plan, args.store, args.workers, args.seconds)
    elif args.command == "worker":
        worker(args.plan, args.store, args.index, args.workers)
    else:
        merge(args.source, args.target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
