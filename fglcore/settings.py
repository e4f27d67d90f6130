"""Every ``FGL_*`` environment variable, read in one place with one parser.

===========================  ========  =============================  ==============================================
variable                     kind      default                        what it does
===========================  ========  =============================  ==============================================
``FGL_DATA``                 folder    ``~/.cache/fglcore/data``      dataset root; derived caches (partitions,
                                                                      compiled kernels) live in its ``_fglcore_cache``
``FGL_DATA_MIRROR``          folder    none                           offline folder in PyG's raw layout that
                                                                      missing raw files are copied from
``FGL_OUTPUT_ROOT``          folder    ``<repo>/outputs``             where ``outputs/`` is written
``FGL_VERIFY_CHECKSUMS``     switch    on                             sha256 check of raw dataset files
``FGL_DOWNLOAD_TIMEOUT``     seconds   15                             how long a download waits on a connection
``FGL_CHECKPOINT_SECONDS``   seconds   600                            seconds between round checkpoints (0: every round)
``FGL_THREADS``              integer   all cores                      torch's intra-op threads: speed, and the
                                                                      last bits of some runs (reductions split
                                                                      over threads; the same count, the same bits)
``FGL_FLUSH_DENORMAL``       switch    on                             flush subnormal floats to zero: **changes numbers**
                                                                      of runs that meet subnormals (below 1.2e-38)
``FGL_SPARSE_FEATURES``      switch    on                             CSR first layers on sparse features: **changes
                                                                      numbers** in the last bits (other summation order)
``FGL_GRAPH_FAST``           switch    on                             CSR message passing instead of PyG's
                                                                      gather/scatter (speed only, same bits)
``FGL_NATIVE``               switch    on                             the optional C kernel ``fglcore/native/spmm.c``
                                                                      (speed only, same bits; self-checked at first use)
``FGL_OUTPUT_STAGING``       text      none                           set by ``fgl`` for its kernels: ``<output folder>``
                                                                      and ``<staging folder>`` joined by ``os.pathsep``;
                                                                      the notebook writes into the staging folder
``FGL_HELPER_KERNEL``        switch    off                            set by ``fgl run --workers N`` for its helper
                                                                      kernels, which end at ``helpers_stop_here``
===========================  ========  =============================  ==============================================

A switch accepts ``1``/``0``, ``true``/``false``, ``yes``/``no`` or
``on``/``off`` in any case; a number must parse and lie in its range; an
empty variable means its default. Anything else stops with a
:class:`SettingError` naming the variable and what it accepts, before any
work starts: :func:`settings` validates every variable at once;
``fgl run`` and ``fgl reproduce`` call it before the first notebook and
:func:`fglcore.experiment.run_full` before a run.

:func:`switches_in_force` gives the settings that can change a run's numbers
or the path it takes (the threads actually in use included); every run
stored by :func:`fglcore.experiment.sweep` records them in
``results.runs.csv`` (:mod:`fglcore.provenance`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fglcore.config import ConfigError

TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")


class SettingError(ConfigError):
    """An ``FGL_*`` variable holds a value its setting does not accept (``fgl`` exits with status 2)."""


@dataclass(frozen=True)
class Setting:
    """One environment variable: its key in :func:`settings`, its kind, default and range."""

    key: str
    variable: str
    kind: str  # "switch" | "integer" | "seconds" | "folder" | "text"
    default: Any
    help: str
    changes_numbers: bool = False
    recorded: bool = False
    minimum: float | None = None
    minimum_inclusive: bool = True

    def accepted(self) -> str:
        if self.kind == "switch":
            return "one of " + ", ".join(TRUE_WORDS + FALSE_WORDS) + " (any case)"
        if self.kind == "folder":
            return "a folder path"
        if self.kind == "text":
            return "text"
        bound = "" if self.minimum is None else f" {'>=' if self.minimum_inclusive else '>'} {self.minimum:g}"
        return f"{'an integer' if self.kind == 'integer' else 'a number of seconds'}{bound}"

    def parse(self, text: str | None) -> Any:
        """The value of ``text`` (the variable's content, ``None`` when unset)."""
        if text is None or not text.strip():
            return self.default
        text = text.strip()
        if self.kind == "folder":
            return Path(text).expanduser().resolve()
        if self.kind == "text":
            return text
        if self.kind == "switch":
            word = text.lower()
            if word in TRUE_WORDS:
                return True
            if word in FALSE_WORDS:
                return False
            raise self._error(text)
        try:
            value = int(text) if self.kind == "integer" else float(text)
        except ValueError:
            raise self._error(text) from None
        if self.minimum is not None and (value < self.minimum or (value == self.minimum and not self.minimum_inclusive)):
            raise self._error(text)
        return value

    def _error(self, text: str) -> SettingError:
        return SettingError(f"{self.variable}={text!r} is not accepted; accepted: {self.accepted()}. {self.help}")


SETTINGS: dict[str, Setting] = {s.key: s for s in (
    Setting("data", "FGL_DATA", "folder", None,
            "Dataset root (default ~/.cache/fglcore/data); derived caches live in its _fglcore_cache."),
    Setting("data_mirror", "FGL_DATA_MIRROR", "folder", None,
            "An offline folder in PyG's raw layout from which missing raw files are copied."),
    Setting("output_root", "FGL_OUTPUT_ROOT", "folder", None, "Where outputs/ is written (default <repo>/outputs)."),
    Setting("verify_checksums", "FGL_VERIFY_CHECKSUMS", "switch", True, "Check raw dataset files against sha256 sums."),
    Setting("download_timeout", "FGL_DOWNLOAD_TIMEOUT", "seconds", 15.0,
            "Seconds a dataset download may wait on a connection.", minimum=0, minimum_inclusive=False),
    Setting("checkpoint_seconds", "FGL_CHECKPOINT_SECONDS", "seconds", 600.0,
            "Seconds between two round checkpoints of a run (0 saves every round).", minimum=0),
    Setting("threads", "FGL_THREADS", "integer", 0,
            "Torch's intra-op threads (0: all cores); another count can change the last bits of a run's numbers.",
            changes_numbers=True, recorded=True, minimum=0),
    Setting("flush_denormal", "FGL_FLUSH_DENORMAL", "switch", True,
            "Flush subnormal floats to zero (changes the numbers of runs that meet them).",
            changes_numbers=True, recorded=True),
    Setting("sparse_features", "FGL_SPARSE_FEATURES", "switch", True,
            "CSR products for first layers on sparse features (changes the last bits of numbers).",
            changes_numbers=True, recorded=True),
    Setting("graph_fast", "FGL_GRAPH_FAST", "switch", True,
            "CSR message passing instead of PyG's gather/scatter (same numbers, faster).", recorded=True),
    Setting("native", "FGL_NATIVE", "switch", True,
            "The optional C kernel fglcore/native/spmm.c (same numbers, faster; self-checked at first use).",
            recorded=True),
    Setting("output_staging", "FGL_OUTPUT_STAGING", "text", None,
            "Set by fgl for its kernels: the output folder and the staging folder the notebook writes into instead, "
            "joined by os.pathsep (outputs replace the stored ones only when the run succeeds)."),
    Setting("helper_kernel", "FGL_HELPER_KERNEL", "switch", False,
            "Set by fgl run --workers N for its helper kernels: they share the sweeps and end where the notebook "
            "calls fglcore.claims.helpers_stop_here (before unstored timings)."),
)}
"""Every setting, by key."""


def setting(key: str) -> Any:
    """The current value of one setting (read from the environment at each call)."""
    try:
        spec = SETTINGS[key]
    except KeyError:
        raise KeyError(f"no setting {key!r}; settings: {', '.join(SETTINGS)}") from None
    return spec.parse(os.environ.get(spec.variable))


def settings() -> dict[str, Any]:
    """Every setting's current value, all validated: the first bad variable raises :class:`SettingError`."""
    return {key: setting(key) for key in SETTINGS}


def switches_in_force() -> dict[str, str]:
    """The settings that can change a run's numbers or its code path, as recorded for each run.

    ``threads`` is the thread count torch uses now (which :func:`fglcore.runtime.set_threads`
    set from ``FGL_THREADS``); switches read ``1`` or ``0``.
    """
    import torch

    values = settings()
    record = {}
    for key, spec in SETTINGS.items():
        if not spec.recorded:
            continue
        value = torch.get_num_threads() if key == "threads" else values[key]
        record[key] = str(int(value)) if isinstance(value, bool) else str(value)
    return record


RECORDED = [key for key, spec in SETTINGS.items() if spec.recorded]
"""Keys of :func:`switches_in_force`, in order."""
