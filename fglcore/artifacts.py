"""What a sweep keeps of each run beyond its result rows: one torch file per run (e.g. test logits).

:func:`fglcore.experiment.sweep` stores numbers (``results.csv``). Some
studies need more of a run than its numbers -- the local-bias study needs the
test logits of every model to compare them with a reference model's. A
:class:`RunArtifact` says what to keep (:meth:`RunArtifact.collect`, given
the trained algorithm and its result) and what a sound payload looks like
(:meth:`RunArtifact.check`); ``sweep(..., artifact=...)`` then writes the
file of each computed run **before** its rows, so a stored run always had its
file written, and counts a stored run as done only while its file is there
and trusted (:meth:`RunArtifact.load`): named for that configuration and for
the exact rows stored for it (:func:`rows_fingerprint`). A lost, partly
written, foreign or stale file makes the sweep compute that run again.

Files live in ``<results folder>/<folder>/<config_id>.pt`` beside the store
(the real folder when the store is a link, as ``fgl run`` stages it).
"""
from __future__ import annotations

import hashlib
import os
import pickle
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import torch

from fglcore.files import save_atomic

if TYPE_CHECKING:
    from fglcore.algorithms.base import Algorithm
    from fglcore.fl.engine import RunResult

__all__ = ["RunArtifact", "rows_fingerprint"]


def rows_fingerprint(rows: pd.DataFrame | list[dict[str, Any]]) -> str:
    """sha256 of one run's ``metric``/``value`` rows as the results CSV writes them: ties an artifact
    to the rows it was saved with."""
    frame = (pd.DataFrame(rows)[["metric", "value"]].astype({"metric": str, "value": float})
             .sort_values("metric", kind="stable"))
    return hashlib.sha256(frame.to_csv(index=False, lineterminator="\n").encode()).hexdigest()


class RunArtifact:
    """One torch file per stored run, kept by :func:`fglcore.experiment.sweep` beside the result rows.

    Subclasses set :attr:`folder` and implement :meth:`collect`; :meth:`check`
    may refuse payloads that are not sound (wrong dtypes or shapes).
    """

    folder: str = ".artifacts"
    """Folder beside the results store that holds the files, ``<config_id>.pt``."""

    def collect(self, algorithm: Algorithm, result: RunResult) -> dict[str, torch.Tensor]:
        """What to keep of a finished run (tensors by name), from the trained ``algorithm`` and its ``result``."""
        raise NotImplementedError(f"{type(self).__name__} does not say what to keep (collect)")

    def check(self, payload: dict[str, Any]) -> bool:
        """Whether a loaded payload is sound; the default accepts any."""
        return True

    def path(self, store: str | os.PathLike[str], config_id: str) -> Path:
        """``<store folder>/<folder>/<config_id>.pt``, in the real folder when ``store`` is a link."""
        from fglcore.results import ResultStore

        return ResultStore(store).path.parent / self.folder / f"{config_id}.pt"

    def save(self, store: str | os.PathLike[str], config_id: str, rows: pd.DataFrame | list[dict[str, Any]],
             payload: dict[str, torch.Tensor]) -> None:
        """Write ``payload`` (tensors moved to the CPU) for the run ``config_id`` whose stored rows will be
        ``rows``, atomically: a temporary file in the same folder, then :func:`os.replace`."""
        tensors = {name: value.detach().cpu().contiguous() for name, value in payload.items()}
        save_atomic({"config_id": config_id, "fingerprint": rows_fingerprint(rows), "payload": tensors},
                    self.path(store, config_id))

    def load(self, store: str | os.PathLike[str], config_id: str, rows: pd.DataFrame | list[dict[str, Any]]
             ) -> dict[str, torch.Tensor] | None:
        """The payload saved for ``config_id``, or ``None`` when its file is missing, unreadable (partly
        written, damaged), saved for another configuration or for other rows than ``rows`` (the run was
        stored again since), or not sound (:meth:`check`)."""
        path = self.path(store, config_id)
        if not path.is_file():
            return None
        try:
            saved = torch.load(path, weights_only=True)
        except (OSError, EOFError, RuntimeError, ValueError, pickle.UnpicklingError, zipfile.BadZipFile):
            return None
        if (not isinstance(saved, dict) or saved.get("config_id") != config_id
                or saved.get("fingerprint") != rows_fingerprint(rows) or not isinstance(saved.get("payload"), dict)):
            return None
        payload = saved["payload"]
        return payload if self.check(payload) else None
