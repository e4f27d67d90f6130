"""Claims on runs, so that several processes share one sweep's work.

A sweep (:func:`fglcore.experiment.sweep`) run by two processes over the
same results file would otherwise compute the same pending run twice. Before
computing a run, a process claims it: it takes, without waiting, an OS file
lock (:class:`filelock.FileLock`) on ``.claims/<run_id>.lock`` beside the
results file. Another process that tries the same lock fails at once and
skips the run, coming back to it once it has done everything else, by which
time the holder has usually stored it.

The operating system releases a lock when its process ends, however it ends
(``kill -9`` included), so a run whose holder died is free to claim at once
and no heartbeat is needed; the run's round checkpoint, if any, then lets the
new holder resume it (:mod:`fglcore.fl.checkpoint`). A holder that stored
its run deletes the lock file before releasing it (a process that opened
the old file then finds it unlinked and retries, :mod:`filelock`); a claim
given up without storing leaves an empty, unlocked file, harmless.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator

from filelock import FileLock, Timeout

from fglcore.settings import setting

#: Folder beside a results file that holds the claims of running configurations.
CLAIM_FOLDER = ".claims"

#: A run whose memory estimate exceeds this share of the machine's memory is heavy: a sweep's processes compute one
#: heavy run at a time (:meth:`RunClaims.memory_gate`); one heavy run, usual runs (a few GB at most) beside it, the
#: processes themselves (about 0.5 GB each) and the operating system fit together.
HEAVY_SHARE = 0.35

#: The lock file of the memory gate, in :data:`CLAIM_FOLDER`.
GATE_FILE = "memory.gate"


class HelperFinished(Exception):
    """Ends a helper kernel's notebook where its share of the work ends (:func:`helpers_stop_here`); ``fgl run``
    takes it as the helper's normal end (:func:`fglcore.notebooks.execute`)."""


def helpers_stop_here() -> None:
    """In a helper kernel of ``fgl run --workers N``, end the notebook here; elsewhere, do nothing.

    Helpers exist to share the sweeps' runs. A notebook calls this before work that is not stored and that the
    first kernel does anyway, above all timings (Local bias: Table 3's seconds per epoch, Fig. 4's step
    lengths): a helper doing it too would compute it twice and, worse, beside the first kernel's measurement,
    on the same cores. The first kernel has by then passed every sweep before this point, so the helpers have
    no runs of them left.
    """
    if setting("helper_kernel"):  # fgl run --workers N sets it in every kernel but the first
        raise HelperFinished("this helper kernel's share of the notebook ends here (fglcore.claims."
                             "helpers_stop_here): what follows is computed by the first kernel alone")


class RunClaims:
    """This process's claims on the runs of one results file (a folder of lock files).

    ``acquire(run_id)`` returns whether the run is now this holder's to
    compute; ``release(run_id, stored=True)`` gives it up after storing it.
    Use as a context manager so that every claim still held is released,
    also when a run fails or is interrupted.
    """

    def __init__(self, folder: str | os.PathLike[str]):
        self.folder = Path(folder)
        self.held: dict[str, FileLock] = {}

    def __enter__(self) -> "RunClaims":
        return self

    def __exit__(self, *exc) -> None:
        for run_id in list(self.held):
            self.release(run_id)

    def path(self, run_id: str) -> Path:
        return self.folder / f"{run_id}.lock"

    def acquire(self, run_id: str) -> bool:
        """Claim ``run_id`` unless another holder (process, or another :class:`RunClaims`) has it."""
        if run_id in self.held:
            return True
        self.folder.mkdir(parents=True, exist_ok=True)
        lock = FileLock(self.path(run_id), thread_local=False)
        try:
            lock.acquire(blocking=False)
        except Timeout:
            return False
        self.held[run_id] = lock
        return True

    def release(self, run_id: str, *, stored: bool = False) -> None:
        """Give up ``run_id`` if held here; ``stored=True`` (its rows are in the store) also deletes its lock file."""
        lock = self.held.pop(run_id, None)
        if lock is None:
            return
        if stored:
            with contextlib.suppress(FileNotFoundError):
                self.path(run_id).unlink()
        lock.release()

    def held_by_other(self, run_id: str) -> bool:
        """Whether another holder has ``run_id`` now (probed by trying its lock)."""
        if run_id in self.held or not self.path(run_id).exists():
            return False
        lock = FileLock(self.path(run_id), thread_local=False)
        try:
            lock.acquire(blocking=False)
        except Timeout:
            return True
        lock.release()
        return False

    @contextlib.contextmanager
    def memory_gate(self, heavy: bool, blocking: bool = True) -> Iterator[bool]:
        """Hold the gate while a ``heavy`` run computes (its :meth:`~fglcore.algorithms.base.Algorithm.memory_estimate`
        above :data:`HEAVY_SHARE` of the memory), so that the processes of a sweep compute one such run at a time;
        usual runs go on beside it. An OS lock (``flock``) on :data:`GATE_FILE`, released however the process ends.
        Yields whether the gate is held (always when ``blocking``; a usual run holds nothing and never waits, and
        without ``flock``, on other platforms, nothing waits).
        """
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not on Linux or macOS
            fcntl = None
        if not heavy or fcntl is None:
            yield True
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / GATE_FILE, "a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def live_holders(self) -> int:
        """How many holders compute a run of this file now, this one included (each holds one claim at a time)."""
        others = self.folder.glob("*.lock") if self.folder.is_dir() else ()
        return 1 + sum(self.held_by_other(path.name.removesuffix(".lock")) for path in others)
