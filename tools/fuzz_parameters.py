"""Feed malformed parameters to ``fgl run`` as a new user would, and tabulate what happens.

Each case runs a real ``fgl run --profile smoke ... --out <scratch>`` in a
subprocess (a rejected case takes seconds; a case that runs the smoke
notebook takes about a minute). For every case the table gives the exit
status, the first line of the message, whether a Python traceback was
printed, and whether anything was written (a results.csv, an executed
notebook, a figure or table in ``--out``; for the cases without ``--out``, a
change to the stored smoke outputs of a scratch ``FGL_OUTPUT_ROOT``).

Usage (from a checkout; ``--repo`` runs another checkout's code, e.g. a
clean export of the base commit for a before/after comparison)::

    FGL_DATA=... FGL_DATA_MIRROR=... python tools/fuzz_parameters.py [--repo DIR] [--only SUBSTRING] \
        [--timeout 300] [--json table.json]

Outcomes: ``rejected`` (exit 2, the key named, nothing written), ``rejected,
key not named``, ``failed in notebook`` (exit 1), ``traceback``,
``accepted`` (exit 0; for an invalid case, garbage stored), ``timeout``.
A case marked ``valid`` is odd but meaningful input: it must run, or be
refused with a reason (exit 2).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

TOUR = "notebooks/tour/fgl_basics.ipynb"
FS3 = "notebooks/fedspray/3_results.ipynb"
FST3 = "notebooks/fedstar/3_results.ipynb"


@dataclass
class Case:
    notebook: str
    params: list[tuple[str, str]] = field(default_factory=list)
    key: str = ""  # what the message must name
    valid: bool = False  # odd but meaningful: run, or refuse with a reason
    out: str = "tmp"  # "tmp": --out <scratch>; "none": no --out (scratch FGL_OUTPUT_ROOT); "file": --out <a file>
    extra: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        nb = {TOUR: "tour", FS3: "fedspray/3", FST3: "fedstar/3"}.get(self.notebook, self.notebook)
        parts = [f"-p {k} {v}" for k, v in self.params] + self.extra
        if self.out == "none":
            parts.append("(no --out)")
        elif self.out == "file":
            parts.append("--out <a file>")
        return f"{nb} {' '.join(parts)}".strip()


def _p(nb: str, key: str, value: str, valid: bool = False, **kw) -> Case:
    return Case(nb, [(key, value)], key=kw.pop("named", key), valid=valid, **kw)


CASES: list[Case] = [
    # --- the tour: every parameter with malformed values
    _p(TOUR, "lr", ".inf"), _p(TOUR, "lr", ".nan"), _p(TOUR, "lr", "-1"), _p(TOUR, "lr", "abc"),
    _p(TOUR, "lr", "1e-3", valid=True), _p(TOUR, "lr", "0", valid=True),
    _p(TOUR, "fedprox_mu", ".nan"), _p(TOUR, "fedprox_mu", ".inf"), _p(TOUR, "fedprox_mu", "-1"),
    _p(TOUR, "seeds", "[-1]"), _p(TOUR, "seeds", "[]"), _p(TOUR, "seeds", "null"), _p(TOUR, "seeds", "[0.5]"),
    _p(TOUR, "seeds", "[a]"), _p(TOUR, "seeds", "3"), _p(TOUR, "seeds", "[0, 1"), _p(TOUR, "seeds", "a: b: c"),
    _p(TOUR, "seeds", "[0, 0]", valid=True),
    _p(TOUR, "num_clients", "null"), _p(TOUR, "num_clients", "0"), _p(TOUR, "num_clients", "-3"),
    _p(TOUR, "num_clients", "5000"), _p(TOUR, "num_clients", "100000"), _p(TOUR, "num_clients", "2.5"),
    _p(TOUR, "num_clients", "true"), _p(TOUR, "num_clients", ".inf"), _p(TOUR, "num_clients", "1", valid=True),
    _p(TOUR, "methods", "[]"), _p(TOUR, "methods", "[fedstar]"), _p(TOUR, "methods", "[fedavgg]"),
    _p(TOUR, "methods", "fedavg"), _p(TOUR, "methods", "[null]"),
    _p(TOUR, "dataset", "MUTAG"), _p(TOUR, "dataset", "Coraa"), _p(TOUR, "dataset", "/nonexistent/g.pt"),
    _p(TOUR, "dataset", "null"), _p(TOUR, "dataset", "3"), _p(TOUR, "dataset", "chem"),
    _p(TOUR, "partitions", "[by_dataset]"), _p(TOUR, "partitions", "[]"), _p(TOUR, "partitions", "[louvian]"),
    _p(TOUR, "model", "bogus"), _p(TOUR, "model", "null"), _p(TOUR, "model", "fedstar_gnn"),
    _p(TOUR, "rounds", "0"), _p(TOUR, "rounds", "-1"), _p(TOUR, "rounds", ".inf"), _p(TOUR, "rounds", "1.5"),
    _p(TOUR, "local_epochs", "0"), _p(TOUR, "local_epochs", ".nan"),
    _p(TOUR, "progress", "maybe"), _p(TOUR, "interactive", "[true]"),
    _p(TOUR, "bogus_key", "1"), _p(TOUR, "profile", "full"), _p(TOUR, "output_dir", "/tmp/elsewhere"),
    _p(TOUR, "seeds", "[-1]", out="none"),
    Case(TOUR, key="--out", out="file"),
    Case("README.md", key="README.md"), Case("notebooks/tour", key="notebooks/tour"),
    Case("notebooks/tour/missing.ipynb", key="missing.ipynb"),
    Case(TOUR, key="profile", extra=["--profile", "huge"]),
    # --- FedSpray 3_results
    _p(FS3, "stand_in_clients", "0"), _p(FS3, "stand_in_clients", "-2"), _p(FS3, "stand_in_clients", "100000"),
    _p(FS3, "stand_in_clients", "null"),
    _p(FS3, "variants", "[bogus]"), _p(FS3, "variants", "[]"),
    _p(FS3, "datasets", "[]"), _p(FS3, "datasets", "[PubMed]", valid=True),  # valid where PubMed is available
    _p(FS3, "datasets", "[MUTAG]"),
    _p(FS3, "datasets", "[Coraa]"), _p(FS3, "models", "[]"), _p(FS3, "models", "[bogus]"),
    _p(FS3, "methods", "[fedstar]"), _p(FS3, "methods", "[]"), _p(FS3, "rounds", "0"), _p(FS3, "seeds", "[]"),
    _p(FS3, "opfgl_datasets", "[Coraa]"), _p(FS3, "opfgl_tables", "[opfgl99]"), _p(FS3, "opfgl_rounds", "0"),
    _p(FS3, "opfgl_seeds", "[]"), _p(FS3, "opfgl_datasets", "[MUTAG]"), _p(FS3, "opfgl_rounds", ".nan"),
    # --- FedStar 3_results
    _p(FST3, "settings", "[MUTAG]"), _p(FST3, "members", "[Coraa]"), _p(FST3, "methods", "[fedspray]"),
    _p(FST3, "seeds", "[-1]"), _p(FST3, "settings", "[]"),
]


@dataclass
class Outcome:
    case: str
    valid: bool
    status: int | None
    outcome: str
    message: str
    traceback: bool
    written: bool
    seconds: float


def _written(out: Path) -> bool:
    if not out.exists():
        return False
    if out.is_file():
        return False
    names = [p for p in out.rglob("*") if p.is_file() and not p.name.startswith(".") and p.suffix != ".log"]
    return bool(names)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*")
            if p.is_file() and p.suffix in (".ipynb", ".csv", ".png")}


def run_case(case: Case, repo: Path, timeout: float) -> Outcome:
    env = {**os.environ, "PYTHONPATH": str(repo), "FGL_THREADS": os.environ.get("FGL_THREADS", "1")}
    with tempfile.TemporaryDirectory(prefix="fgl-fuzz-") as scratch:
        scratch = Path(scratch)
        out = scratch / "out"
        argv = [sys.executable, "-m", "fglcore.cli", "run", case.notebook]
        if not any(e == "--profile" for e in case.extra):
            argv += ["--profile", "smoke"]
        argv += case.extra
        for key, value in case.params:
            argv += ["-p", key, value]
        before: dict[str, bytes] = {}
        if case.out == "tmp":
            argv += ["--out", str(out)]
        elif case.out == "file":
            out = scratch / "a-file"
            out.write_text("not a folder\n")
            argv += ["--out", str(out)]
        else:  # no --out: a scratch outputs root holding a copy of the stored smoke outputs
            root = scratch / "outputs"
            shutil.copytree(repo / "outputs" / "smoke" / "tour", root / "smoke" / "tour")
            env["FGL_OUTPUT_ROOT"] = str(root)
            out = root / "smoke" / "tour"
            before = _snapshot(out)
        start = time.time()
        try:
            proc = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, timeout=timeout)
            status, text = proc.returncode, proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as err:
            status = None
            text = (err.stdout or b"").decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
        seconds = time.time() - start
        written = (_snapshot(out) != before) if case.out == "none" else _written(out)
    lines = [line for line in text.splitlines() if line.strip()]
    error = next((line for line in lines if line.startswith("fgl: ")), None)
    message = error or (lines[-1] if lines else "")
    traceback = "Traceback (most recent call last)" in text or "---------------------------------------" in text
    if status is None:
        outcome = "timeout"
    elif status == 2:
        named = case.key in (error or "")
        outcome = "rejected" if named else "rejected, key not named"
    elif status == 0:
        outcome = "accepted"
    elif status == 1 and "notebook failed" in text:
        outcome = "failed in notebook"
    else:
        outcome = "traceback" if traceback else f"exit {status}"
    return Outcome(case.name, case.valid, status, outcome, message[:160], traceback, written, round(seconds, 1))


def table(results: list[Outcome]) -> str:
    counts: dict[str, int] = {}
    for r in results:
        label = f"{'valid' if r.valid else 'invalid'}: {r.outcome}"
        counts[label] = counts.get(label, 0) + 1
    lines = ["| outcome | cases |", "|---|---|"] + [f"| {k} | {v} |" for k, v in sorted(counts.items())]
    lines += ["", "| case | kind | exit | outcome | traceback | written | s | message |", "|---|---|---|---|---|---|---|---|"]
    for r in results:
        message = r.message.replace("|", "\\|")
        lines.append(f"| `{r.case}` | {'valid' if r.valid else 'invalid'} | {r.status} | {r.outcome} | "
                     f"{'yes' if r.traceback else ''} | {'yes' if r.written else ''} | {r.seconds:g} | {message} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--json", type=Path, default=None, help="also write the outcomes as JSON")
    parser.add_argument("--table", type=Path, default=None, help="print the table of a --json file and exit")
    args = parser.parse_args(argv)
    if args.table:
        valid = {case.name: case.valid for case in CASES}
        rows = [Outcome(**{**r, "valid": valid.get(r["case"], r["valid"])}) for r in json.loads(args.table.read_text())]
        print(table(rows))
        return 0
    results = []
    for case in CASES:
        if args.only and args.only not in case.name:
            continue
        results.append(run_case(case, args.repo.resolve(), args.timeout))
        r = results[-1]
        print(f"{r.outcome:<24} exit={r.status} {r.seconds:6.1f}s  {r.case}  | {r.message}", file=sys.stderr, flush=True)
        if args.json:
            args.json.write_text(json.dumps([asdict(x) for x in results], indent=1))
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
