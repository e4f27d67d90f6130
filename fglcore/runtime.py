"""Seeds, threads and devices: the knobs that make runs repeatable."""
from __future__ import annotations

import os
import random

import numpy as np
import torch

from fglcore.settings import setting


def set_seed(seed: int) -> None:
    """Seed Python, NumPy and torch (CPU and CUDA) for one run."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def set_threads(num_threads: int | None = None) -> int:
    """Pin torch's intra-op thread count (``FGL_THREADS`` or all cores)."""
    n = num_threads or setting("threads") or os.cpu_count() or 1
    torch.set_num_threads(n)
    return n


def set_flush_denormal(enabled: bool | None = None) -> bool:
    """Flush subnormal floats to zero in CPU arithmetic (``FGL_FLUSH_DENORMAL``, default on).

    Weights that get no gradient but weight decay (e.g. the one-hot input
    columns of features a client never sees) and Adam's second moments decay
    into the subnormal range (below 1.2e-38), where x86 arithmetic is an
    order of magnitude slower: one FedStar CHEM client's epoch took 9.5 s
    with subnormals and 0.85 s flushed. Flushing changes values only below
    1.2e-38 and is as deterministic as IEEE arithmetic, but a run that meets
    subnormals is not bit-identical to the same run with
    ``FGL_FLUSH_DENORMAL=0`` (IEEE subnormals kept, the behaviour before
    this option). Returns whether flushing is on (CPUs without SSE3 cannot).
    """
    if enabled is None:
        enabled = setting("flush_denormal")
    return bool(torch.set_flush_denormal(enabled)) and enabled


def get_device(preference: str = "auto") -> torch.device:
    """``auto`` picks CUDA when present, else the CPU; ``cpu``/``cuda`` force one."""
    if preference == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if preference.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"device {preference!r} requested but CUDA is not available; use 'auto' or 'cpu'")
    return torch.device(preference)


def memory_bytes() -> int:
    """This machine's physical memory in bytes (``os.sysconf``; 0 where the platform does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return 0
