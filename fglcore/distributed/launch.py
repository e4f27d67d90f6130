"""Start one Gloo process per client on 127.0.0.1 and collect what each returns.

``run_gloo(function, payloads)`` spawns ``len(payloads)`` processes with
``torch.multiprocessing`` (``spawn``), each joining a ``torch.distributed``
process group on the Gloo backend (TCP rendezvous on a free port of
127.0.0.1 found at run time), calls ``function(rank, payloads[rank])``
and returns the results in rank order. Payloads and results travel as
``torch.save`` files in a temporary folder (no pipe to drain, no size limit).

Every wait is bounded: the rendezvous and every collective time out after
``timeout`` seconds (``init_process_group(timeout=...)``), and the parent
stops all processes and raises :class:`GlooError` if they have not finished
``timeout`` seconds after starting; a process that fails ends the others
and the error carries its traceback.
"""
from __future__ import annotations

import datetime
import importlib
import os
import socket
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


class GlooError(RuntimeError):
    """A Gloo run that failed to start, failed in a process, or ran past its time limit."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _entry(rank: int, world: int, port: int, timeout: float, folder: str, target: str, threads: int) -> None:
    torch.set_num_threads(threads)
    module, name = target.rsplit(":", 1)
    function = getattr(importlib.import_module(module), name)
    payload = torch.load(Path(folder) / f"payload_{rank}.pt", weights_only=False)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=timeout))
    try:
        result = function(rank, payload)
    except BaseException:  # noqa: BLE001 -- reported to the parent, which stops the other processes
        # exit at once: tearing down a process group whose peers wait in a collective can block
        (Path(folder) / f"error_{rank}.txt").write_text(traceback.format_exc())
        os._exit(1)
    dist.barrier()
    dist.destroy_process_group()
    torch.save(result, Path(folder) / f"result_{rank}.pt")


def run_gloo(function: Callable[[int, Any], Any], payloads: Sequence[Any], *, timeout: float = 120.0,
             threads: int = 1) -> list[Any]:
    """``function(rank, payloads[rank])`` in one Gloo process per payload; the results in rank order.

    ``function`` must be importable by name (a module-level function): spawn
    starts fresh interpreters. ``threads`` is each process's torch thread count.
    """
    world = len(payloads)
    if world < 1:
        raise GlooError("run_gloo needs at least one payload")
    target = f"{function.__module__}:{function.__qualname__}"
    with tempfile.TemporaryDirectory(prefix="fgl-gloo-") as folder:
        for rank, payload in enumerate(payloads):
            torch.save(payload, Path(folder) / f"payload_{rank}.pt")
        port = free_port()
        env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            context = mp.start_processes(_entry, args=(world, port, float(timeout), folder, target, threads),
                                         nprocs=world, join=False, start_method="spawn")
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        deadline = time.monotonic() + timeout + 30.0  # spawn and imports come on top of the Gloo timeout
        try:
            while not context.join(timeout=0.5):
                if time.monotonic() > deadline:
                    raise GlooError(f"Gloo run of {target} with {world} processes did not finish within "
                                    f"{timeout + 30:.0f} s; processes stopped")
        except mp.ProcessRaisedException as err:
            raise GlooError(f"a Gloo process of {target} failed:\n{err}") from None
        except mp.ProcessExitedException as err:
            errors = sorted(Path(folder).glob("error_*.txt"))
            detail = "\n".join(f"{e.stem}:\n{e.read_text()}" for e in errors) or str(err)
            raise GlooError(f"a Gloo process of {target} failed:\n{detail}") from None
        finally:
            for process in context.processes:
                if process.is_alive():
                    process.terminate()
            for process in context.processes:
                process.join(timeout=5)
        return [torch.load(Path(folder) / f"result_{rank}.pt", weights_only=False) for rank in range(world)]
