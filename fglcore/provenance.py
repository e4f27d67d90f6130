"""How a run was made: device, library versions, code version and the switches in force.

:func:`fglcore.experiment.sweep` records :func:`run_record` for every run it
computes in the run index beside the results file (``results.runs.csv``,
:class:`fglcore.results.ResultStore`), one column each
(:data:`PROVENANCE_COLUMNS`), so that runs made under different conditions
(subnormals flushed or kept, dense or sparse first layers, another torch,
uncommitted code) can be told apart long after. A run copied from a stored
one (the same computation under other labels) carries the record of the run
it was copied from; rows stored before these columns existed read as ``""``.
"""
from __future__ import annotations

import functools
import os
import platform
import subprocess
from pathlib import Path

from fglcore.settings import RECORDED, switches_in_force

PROVENANCE_COLUMNS = ["device", "torch", "torch_geometric", "git_commit", *RECORDED]
"""Columns of :func:`run_record`: the device, the torch and torch-geometric versions, the git commit
(``-dirty`` when tracked code has uncommitted changes) and :func:`fglcore.settings.switches_in_force`."""

UNKNOWN = "unknown"


@functools.lru_cache(maxsize=None)
def git_commit(root: str | os.PathLike[str] | None = None) -> str:
    """The commit checked out at ``root`` (default: the repository holding ``fglcore``), with ``-dirty`` when a
    tracked file outside ``outputs/`` has uncommitted changes; :data:`UNKNOWN` outside a git checkout or
    without git. Never raises. Read once per process (a sweep's process runs one version of the code).
    """
    from fglcore.paths import repo_root

    root = Path(root) if root is not None else repo_root()

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True,
                              timeout=30).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        # Outputs are rewritten by the runs themselves; only the code and parameters make a run "dirty".
        changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)outputs")
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN
    return f"{commit}-dirty" if changed else commit or UNKNOWN


def describe_device(device) -> str:
    """``"cuda:0 (NVIDIA H100 80GB HBM3)"``, ``"cpu (AMD EPYC 7B13)"``: the device and what it is."""
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return f"cuda:{index} ({torch.cuda.get_device_name(index)})"
    if device.type == "cpu":
        model = _cpu_model()
        return f"cpu ({model})" if model else "cpu"
    return str(device)


@functools.lru_cache(maxsize=1)
def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def run_record(device) -> dict[str, str]:
    """The :data:`PROVENANCE_COLUMNS` of a run made now on ``device``, every value a string."""
    import torch
    import torch_geometric

    return {
        "device": describe_device(device),
        "torch": torch.__version__,
        "torch_geometric": torch_geometric.__version__,
        "git_commit": git_commit(),
        **switches_in_force(),
    }
