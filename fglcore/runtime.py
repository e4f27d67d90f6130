"""Seeds, threads and devices: the knobs that make runs repeatable."""
from __future__ import annotations

import os
import random

import numpy as np
import torch


def set_seed(seed: int) -> None:
    """Seed Python, NumPy and torch (CPU and CUDA) for one run."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def set_threads(num_threads: int | None = None) -> int:
    """Pin torch's intra-op thread count (``FGL_THREADS`` or all cores)."""
    n = num_threads or int(os.environ.get("FGL_THREADS", 0)) or os.cpu_count() or 1
    torch.set_num_threads(n)
    return n


def get_device(preference: str = "auto") -> torch.device:
    """``auto`` picks CUDA when present, else the CPU; ``cpu``/``cuda`` force one."""
    if preference == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if preference.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"device {preference!r} requested but CUDA is not available; use 'auto' or 'cpu'")
    return torch.device(preference)

