"""Where things live: repository, data, mirror and outputs folders.

Environment variables:

* ``FGL_DATA``: dataset root (default ``~/.cache/fglcore/data``).
* ``FGL_DATA_MIRROR``: an offline folder in PyG's raw layout (e.g.
  ``../shared/data``) from which missing raw files are copied.
* ``FGL_OUTPUT_ROOT``: where ``outputs/`` is written (default ``<repo>/outputs``).
* ``FGL_VERIFY_CHECKSUMS=0``: skip the sha256 check of raw files (:mod:`fglcore.data.datasets`).
* ``FGL_DOWNLOAD_TIMEOUT``: seconds PyG's downloads may wait on a connection (default 15).
* ``FGL_THREADS``: torch threads (:func:`fglcore.runtime.set_threads`).
* ``FGL_FLUSH_DENORMAL=0``: keep IEEE subnormal floats (:func:`fglcore.runtime.set_flush_denormal`).
"""
from __future__ import annotations

import os
from pathlib import Path


OFF_VALUES = ("0", "false", "no", "off")


def env_switch(name: str) -> bool:
    """A default-on switch: False when the variable ``name`` is ``0``/``false``/``no``/``off`` (any case)."""
    return os.environ.get(name, "1").strip().lower() not in OFF_VALUES


def repo_root() -> Path:
    """The checkout holding ``fglcore/``, ``notebooks/`` and ``params/``."""
    return Path(__file__).resolve().parent.parent


def data_root() -> Path:
    root = os.environ.get("FGL_DATA") or Path.home() / ".cache" / "fglcore" / "data"
    return Path(root).expanduser().resolve()


def mirror_root() -> Path | None:
    mirror = os.environ.get("FGL_DATA_MIRROR")
    if not mirror:
        return None
    return Path(mirror).expanduser().resolve()


def cache_root() -> Path:
    """Derived artefacts (partitions, structure encodings) live beside the data."""
    return data_root() / "_fglcore_cache"


def outputs_root() -> Path:
    root = os.environ.get("FGL_OUTPUT_ROOT")
    return Path(root).expanduser().resolve() if root else repo_root() / "outputs"


def notebooks_root() -> Path:
    return repo_root() / "notebooks"


def params_root() -> Path:
    return repo_root() / "params"


def output_dir(profile: str, paper: str) -> Path:
    """``outputs/<profile>/<paper>/``."""
    return outputs_root() / profile / paper


def resolve_output_dir(path: str | os.PathLike | None, profile: str, paper: str) -> Path:
    """Resolve a notebook's ``output_dir`` parameter.

    Empty means ``outputs/<profile>/<paper>``; a relative path starting with
    ``outputs/`` is placed under :func:`outputs_root` (so ``FGL_OUTPUT_ROOT``
    redirects re-executions, e.g. under nbval); any other relative path is
    taken from the repository root, never from the working directory.
    """
    if not path:
        target = output_dir(profile, paper)
    else:
        p = Path(path)
        if p.is_absolute():
            target = p
        elif p.parts and p.parts[0] == "outputs":
            target = outputs_root().joinpath(*p.parts[1:])
        else:
            target = repo_root() / p
    target.mkdir(parents=True, exist_ok=True)
    return target


def display_path(path: str | os.PathLike) -> str:
    """``path`` relative to the outputs root or the repository when inside one, for printing."""
    path = Path(path).resolve()
    for root, prefix in ((outputs_root(), "outputs"), (repo_root(), "")):
        try:
            rel = path.relative_to(root).as_posix()
        except ValueError:
            continue
        return f"{prefix}/{rel}" if prefix else rel
    return str(path)
