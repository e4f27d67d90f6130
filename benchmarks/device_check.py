"""Every algorithm on every device: one planned run per (algorithm, model), its status, seconds and accuracy.

The notebooks plan the runs; this check takes, for each (algorithm, model) pair, the first configuration the
notebooks' ``smoke`` profiles plan (``quick`` for pairs no smoke plan has) and runs it once per device. It was
written for the GPU machines the ``device`` tool lends (no papermill there): plan here, run there::

    python benchmarks/device_check.py plan checks.json                        # here, where the notebooks are
    python benchmarks/device_check.py run checks.json --devices cuda cpu --jobs 12 --out checks.csv   # there

Each run is its own ``python -X faulthandler`` process, so a crash (a C kernel reading GPU memory, say) names
its line and the other runs go on. The table has one row per run and device: ``ok`` with the seconds and the
test accuracy (%), or the last line of what went wrong (data the other machine lacks says so; FedStar's
``2_method`` plans a configuration it only traces, which fails its own checks everywhere). Accuracies of one
configuration on two devices differ by rounding (sums in another order), which a short smoke run can amplify.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def plan(path: Path) -> None:
    from fglcore.runlog import plan_configs

    chosen: dict[tuple[str, str], dict] = {}
    for profile in ("smoke", "quick"):
        for notebook in sorted(REPO.glob("notebooks/*/*.ipynb")):
            for config in plan_configs(notebook, profile):
                key = (config.algorithm, str(config.model))
                if key not in chosen:
                    chosen[key] = {"notebook": str(notebook.relative_to(REPO)), "profile": profile,
                                   "config": config.to_dict()}
    path.write_text(json.dumps(list(chosen.values()), indent=1))
    print(f"{len(chosen)} (algorithm, model) pairs planned into {path}")


def run_one(config: dict, device: str) -> None:
    """Child process: run ``config`` on ``device``; print one JSON line."""
    from fglcore.experiment import run_full
    from fglcore.provenance import describe_device
    from fglcore.runtime import get_device, set_threads

    set_threads()
    start = time.perf_counter()
    rows, _ = run_full({**config, "device": device})
    values = {row["metric"]: row["value"] for row in rows}
    print(json.dumps({"seconds": round(time.perf_counter() - start, 1), "accuracy": values.get("accuracy"),
                      "on": describe_device(get_device(device))}))


def run(path: Path, devices: list[str], jobs: int, timeout: float, out: Path | None) -> None:
    entries = json.loads(path.read_text())
    tasks = [(entry, device) for entry in entries for device in devices]

    def launch(task: tuple[dict, str]) -> dict:
        entry, device = task
        config = entry["config"]
        row = {"algorithm": config["algorithm"], "model": config["model"], "dataset": config["dataset"],
               "clients": config["num_clients"], "rounds": config["rounds"], "device": device}
        command = [sys.executable, "-X", "faulthandler", __file__, "one", json.dumps(config), device]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=REPO)
        except subprocess.TimeoutExpired:
            return {**row, "status": f"over {timeout:.0f} s"}
        if done.returncode != 0:
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            frames = [line.strip() for line in lines if line.strip().startswith("File ")]
            # faulthandler lists the innermost frame first, a Python traceback last
            crash = frames[:3] if "Fatal Python error" in done.stderr else frames[-2:]
            last = lines[-1] if lines else f"exit {done.returncode}"
            where = f" | {' | '.join(crash)}" if crash else ""
            return {**row, "status": f"failed (exit {done.returncode}): {last}{where}"}
        result = json.loads(done.stdout.strip().splitlines()[-1])
        return {**row, "status": "ok", **result}

    rows = []
    with ThreadPoolExecutor(jobs) as pool:
        for row in pool.map(launch, tasks):
            rows.append(row)
            print(" | ".join(str(row.get(k, "")) for k in ("algorithm", "model", "dataset", "device", "status",
                                                             "seconds", "accuracy", "on")), flush=True)
    failed = [r for r in rows if r["status"] != "ok"]
    print(f"{len(rows) - len(failed)} of {len(rows)} runs ok")
    if out is not None:
        import pandas as pd

        pd.DataFrame(rows).to_csv(out, index=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    p = verbs.add_parser("plan", help="write one planned configuration per (algorithm, model) to a JSON file")
    p.add_argument("file", type=Path)
    r = verbs.add_parser("run", help="run the planned configurations on each device")
    r.add_argument("file", type=Path)
    r.add_argument("--devices", nargs="+", default=["auto"], choices=["auto", "cpu", "cuda"])
    r.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    r.add_argument("--timeout", type=float, default=300.0, help="seconds a run may take")
    r.add_argument("--out", type=Path, help="CSV of the table")
    o = verbs.add_parser("one")  # the child process of `run`
    o.add_argument("config")
    o.add_argument("device")
    args = parser.parse_args()
    if args.verb == "plan":
        plan(args.file)
    elif args.verb == "run":
        run(args.file, args.devices, args.jobs, args.timeout, args.out)
    else:
        run_one(json.loads(args.config), args.device)


if __name__ == "__main__":
    main()
