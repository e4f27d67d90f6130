"""Progress of long sweeps: one line per finished run in a log beside the results file.

A full profile runs for hours inside papermill kernels whose output lands in
the executed notebook, so a sweep there shows no progress bar. Instead,
:func:`fglcore.experiment.sweep` appends a line to ``<stem>.log`` beside its
results file (``outputs/full/fedspray/results.log``) after every run it
computes::

    2026-11-23 21:04:51  Table 2  97/240  Chameleon fedspray gcn seed=1  71 s  about 2.3 h of runs left

The estimate is the mean time of the runs this sweep computed so far times
the runs it still has to compute (copies of stored runs are free), divided
by the number of processes working on the file at that moment (those
holding claims, :mod:`fglcore.claims`). ``fgl run``
and ``fgl reproduce`` print the lines as they appear (:class:`LogFollower`);
``tail -f`` on the file does the same from another shell.
"""
from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from typing import Callable, Mapping


def log_path(results_path: str | Path) -> Path:
    """The progress log beside a results file: ``results.csv`` -> ``results.log``."""
    results_path = Path(results_path)
    return results_path.with_name(f"{results_path.stem}.log")


def format_hours(seconds: float) -> str:
    """``95`` -> ``"2 min"``, ``8280`` -> ``"2.3 h"``: the size of the work left, for a person."""
    if seconds < 3600:
        return f"{max(1, round(seconds / 60))} min"
    return f"{seconds / 3600:.1f} h"


class SweepLog:
    """Appends a sweep's progress lines to :func:`log_path` of its results file."""

    def __init__(self, results_path: str | Path, desc: str):
        self.path = log_path(results_path)
        self.desc = desc
        self.seconds: list[float] = []

    def computed(self, *, stored: int, total: int, label: str, seconds: float, runs_left: int,
                 workers: int = 1) -> str:
        """Record a run that took ``seconds``; ``runs_left`` is what the sweep still has to compute,
        shared among ``workers`` processes (:mod:`fglcore.claims`)."""
        self.seconds.append(seconds)
        left = sum(self.seconds) / len(self.seconds) * runs_left / max(1, workers)
        on = f" on {workers} workers" if workers > 1 else ""
        estimate = f"about {format_hours(left)} of runs left{on}" if runs_left else "last run"
        stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
        line = f"{stamp}  {self.desc}  {stored}/{total}  {label}  {seconds:.0f} s  {estimate}"
        with open(self.path, "a", encoding="utf-8") as log:  # one short write: lines of parallel sweeps stay whole
            log.write(line + "\n")
        return line


class LogFollower:
    """Prints the lines appended to progress logs while a block runs (a ``with`` statement).

    ``logs`` maps each log to the prefix its lines are printed with
    (``[fedspray] ...``). Lines already in the files when the block starts are skipped; a file
    created later is read from its start.
    """

    def __init__(self, logs: Mapping[str | Path, str], emit: Callable[[str], None] = print, interval: float = 2.0):
        self.prefixes = {Path(path): prefix for path, prefix in logs.items()}
        self.emit = emit
        self.interval = interval
        self._offsets = {p: p.stat().st_size if p.exists() else 0 for p in self.prefixes}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, daemon=True)

    def __enter__(self) -> "LogFollower":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.poll()

    def _follow(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    def poll(self) -> None:
        """Emit the complete lines appended since the last poll."""
        for path, prefix in self.prefixes.items():
            if not path.exists():
                continue
            with open(path, "rb") as log:
                log.seek(self._offsets[path])
                chunk = log.read()
            complete = chunk[: chunk.rfind(b"\n") + 1]
            self._offsets[path] += len(complete)
            for line in complete.decode("utf-8", "replace").splitlines():
                self.emit(f"[{prefix}] {line}")
