"""Round checkpoints: a long run that is interrupted resumes from its last saved round.

:func:`fglcore.fl.engine.run_rounds` saves, at the end of a round and at
most every ``every_seconds``, everything the rest of the run depends on:
the server and clients as objects (models, optimizer states, personal
state such as FedSpray's proxies or GCFL's clusters, private generators),
the channel with its ledger, the loop's history and selected round, and the
global random states of Python, NumPy and torch. :meth:`Algorithm.run
<fglcore.algorithms.base.Algorithm.run>` loads a checkpoint instead of
building, so the resumed run continues exactly where the saved one was and
ends with the numbers of an uninterrupted run (``tests/test_checkpoint.py``).

A checkpoint is a pickle of live objects: it is meant for resuming the same
code, not for archiving. Node features registered as constant sparse inputs
(:func:`fglcore.models.sparse_input.constant_features`) are written as their
CSR matrix and densified on load, registered again: every object that held
one tensor holds one tensor again, with the same values (Coauthor Physics'
8,415 bag-of-words columns made a FedSpray checkpoint 2.7 GB dense). One that no longer loads (the code changed) is
ignored with a warning and the run starts over. :func:`fglcore.experiment.sweep`
keeps one per running configuration under ``.checkpoints/`` beside its
results file and deletes it when the run's rows are stored.
"""
from __future__ import annotations

import os
import random
import time
import warnings
from pathlib import Path
from typing import Any

import pickle
import types

import numpy as np
import torch

from fglcore.files import save_atomic
from fglcore.settings import SETTINGS, setting

CHECKPOINT_ENV = SETTINGS["checkpoint_seconds"].variable
#: Default seconds between two checkpoints of one run: short runs never write one.
DEFAULT_EVERY_SECONDS: float = SETTINGS["checkpoint_seconds"].default


def checkpoint_interval() -> float:
    """Seconds between checkpoints: ``FGL_CHECKPOINT_SECONDS`` (default 600; 0 saves every round; :mod:`fglcore.settings`)."""
    return setting("checkpoint_seconds")


def rng_state() -> dict[str, Any]:
    """The global random states a run draws from (Python, NumPy, torch CPU and CUDA)."""
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


class _CompactPickler(pickle.Pickler):
    """Pickles a registered constant feature tensor as its CSR matrix (:func:`_restore_features` on load)."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, torch.Tensor) and obj.layout == torch.strided:
            from fglcore.models.sparse_input import registered_csr

            matrix = registered_csr(obj)
            if matrix is not None and matrix.device.type == "cpu":
                return _restore_features, (matrix,)
        return NotImplemented


def _restore_features(matrix: torch.Tensor) -> torch.Tensor:
    from fglcore.models.sparse_input import restore_constant

    return restore_constant(matrix)


_COMPACT = types.SimpleNamespace(Pickler=_CompactPickler, Unpickler=pickle.Unpickler, load=pickle.load,
                                 __name__="pickle")
"""``torch.save``'s ``pickle_module`` for checkpoints: the standard pickle with :class:`_CompactPickler`."""


class RoundCheckpoint:
    """One run's checkpoint file, written atomically at most every ``every_seconds``."""

    def __init__(self, path: str | os.PathLike[str], every_seconds: float | None = None):
        self.path = Path(path)
        self.every_seconds = checkpoint_interval() if every_seconds is None else float(every_seconds)
        self._last_save = time.monotonic()

    def due(self) -> bool:
        return time.monotonic() - self._last_save >= self.every_seconds

    def save(self, state: dict[str, Any]) -> None:
        save_atomic({**state, "rng": rng_state()}, self.path, pickle_module=_COMPACT)
        self._last_save = time.monotonic()

    def load(self, restore_rng: bool = True) -> dict[str, Any] | None:
        """The saved state with the random states restored, or ``None`` (no file, or one that does not load).

        ``restore_rng=False`` leaves the random states alone and the saved ones in the state's ``"rng"``
        (:func:`set_rng_state`), for a caller that first checks the state is the one it can resume from."""
        if not self.path.exists():
            return None
        try:
            with warnings.catch_warnings():  # CSR features (see the module docstring) rebuild with a beta warning
                warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")
                state = torch.load(self.path, weights_only=False)
        except Exception as error:  # noqa: BLE001 -- any unpickling failure means "start over"
            warnings.warn(f"ignoring checkpoint {self.path} that does not load ({error}); the run starts over")
            return None
        if restore_rng:
            set_rng_state(state.pop("rng"))
        self._last_save = time.monotonic()
        return state

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)
