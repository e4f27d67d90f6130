"""Where things live: repository, data, mirror and outputs folders.

``FGL_DATA``, ``FGL_DATA_MIRROR`` and ``FGL_OUTPUT_ROOT`` move the data, the
offline mirror and the outputs; they are read, with every other ``FGL_*``
variable, by :mod:`fglcore.settings`.
"""
from __future__ import annotations

import os
from pathlib import Path

from fglcore.settings import setting


def repo_root() -> Path:
    """The checkout holding ``fglcore/``, ``notebooks/`` and ``params/``."""
    return Path(__file__).resolve().parent.parent


def data_root() -> Path:
    """``FGL_DATA`` (default ``~/.cache/fglcore/data``)."""
    return setting("data") or (Path.home() / ".cache" / "fglcore" / "data").resolve()


def mirror_root() -> Path | None:
    """``FGL_DATA_MIRROR``, or ``None`` when unset."""
    return setting("data_mirror")


def cache_root() -> Path:
    """Derived artefacts (partitions, structure encodings) live beside the data."""
    return data_root() / "_fglcore_cache"


def outputs_root() -> Path:
    """``FGL_OUTPUT_ROOT`` (default ``<repo>/outputs``)."""
    return setting("output_root") or repo_root() / "outputs"


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
    staged = _staging()
    if staged is not None and target.resolve() == staged[0]:
        target = staged[1]  # fgl runs this notebook: write beside the stored outputs, moved into place on success
    target.mkdir(parents=True, exist_ok=True)
    return target


def _staging() -> tuple[Path, Path] | None:
    """``(output folder, staging folder)`` from ``FGL_OUTPUT_STAGING`` (set by ``fgl`` for its kernels), or ``None``."""
    value = setting("output_staging")
    if not value:
        return None
    real, _, staging = value.partition(os.pathsep)
    return Path(real).resolve(), Path(staging)


def display_path(path: str | os.PathLike) -> str:
    """``path`` relative to the outputs root or the repository when inside one, for printing."""
    path = Path(path).resolve()
    staged = _staging()
    if staged is not None and (path == staged[1].resolve() or staged[1].resolve() in path.parents):
        path = staged[0] / path.relative_to(staged[1].resolve())  # where it lands once the run succeeds
    for root, prefix in ((outputs_root(), "outputs"), (repo_root(), "")):
        try:
            rel = path.relative_to(root).as_posix()
        except ValueError:
            continue
        return f"{prefix}/{rel}" if prefix else rel
    return str(path)
