"""Claims on runs, so that several processes share one sweep's work.

A sweep (:func:`fglcore.experiment.sweep`) run by two processes over the
same results file would otherwise compute the same pending run twice. Before
computing a run, a process claims it with a file ``.claims/<run_id>`` beside
the results file, created atomically (``O_CREAT | O_EXCL``); another process
skips a run claimed by someone else and comes back to it once it has done
everything else, by which time the holder has usually stored it.

A claim holds while its holder lives. The file names the host and process;
its modification time is refreshed every :data:`HEARTBEAT_SECONDS` by a
background thread of the holder. A claim is stale, and may be taken over,
when its process is gone (same host) or its file has not been refreshed for
:data:`STALE_SECONDS` (a process killed on another machine, or a session
that ended): the run's round checkpoint, if any, then lets the new holder
resume it (:mod:`fglcore.fl.checkpoint`).
"""
from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from pathlib import Path

#: Folder beside a results file that holds the claims of running configurations.
CLAIM_FOLDER = ".claims"
#: How often a holder refreshes its claims.
HEARTBEAT_SECONDS = 30.0
#: A claim not refreshed for this long is stale.
STALE_SECONDS = 300.0


class RunClaims:
    """This process's claims on the runs of one results file (a folder of claim files).

    ``acquire(run_id)`` returns whether the run is now this process's to
    compute; ``release(run_id)`` gives it up (after storing it). Use as a
    context manager so that the heartbeat stops and every claim still held
    is released, also when a run fails or is interrupted.
    """

    def __init__(self, folder: str | os.PathLike[str]):
        self.folder = Path(folder)
        self.owner = f"{socket.gethostname()} {os.getpid()}"
        self.held: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None

    def __enter__(self) -> "RunClaims":
        self._stop.clear()
        self._heartbeat = threading.Thread(target=self._refresh, name="fgl-claims", daemon=True)
        self._heartbeat.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join()
        for run_id in list(self.held):
            self.release(run_id)

    def path(self, run_id: str) -> Path:
        return self.folder / run_id

    def acquire(self, run_id: str) -> bool:
        """Claim ``run_id`` unless another live process holds it; a stale claim is taken over."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.path(run_id)
        if run_id in self.held:
            return True
        if path.exists():
            if not self.is_stale(run_id):
                return False
            with contextlib.suppress(FileNotFoundError):  # of two processes taking it over, O_EXCL lets one in
                os.remove(path)
        try:
            descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return False
        with os.fdopen(descriptor, "w") as file:
            file.write(self.owner)
        with self._lock:
            self.held.add(run_id)
        return True

    def release(self, run_id: str) -> None:
        """Give up ``run_id`` if this process holds it (another process's claim is left alone)."""
        with self._lock:
            if run_id not in self.held:
                return
            self.held.discard(run_id)
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.path(run_id))

    def held_by_other(self, run_id: str) -> bool:
        """Whether another live process holds ``run_id``."""
        return run_id not in self.held and self.path(run_id).exists() and not self.is_stale(run_id)

    def live_holders(self) -> int:
        """How many processes (this one included) hold live claims on runs of this file."""
        owners = set()
        for path in self.folder.glob("*") if self.folder.is_dir() else ():
            if self.is_stale(path.name):
                continue
            with contextlib.suppress(FileNotFoundError):
                owners.add(path.read_text())
        return len(owners | {self.owner})

    def is_stale(self, run_id: str) -> bool:
        path = self.path(run_id)
        try:
            owner = path.read_text().split()
            age = time.time() - path.stat().st_mtime
        except FileNotFoundError:
            return False
        if age > STALE_SECONDS:
            return True
        if len(owner) == 2 and owner[0] == socket.gethostname() and owner[1].isdigit():
            return not _process_alive(int(owner[1]))
        return False

    def _refresh(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            with self._lock:
                held = list(self.held)
            for run_id in held:
                with contextlib.suppress(FileNotFoundError):
                    os.utime(self.path(run_id))


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    return True
