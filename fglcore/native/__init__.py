"""Optional C kernels, compiled on first use with the system's C compiler and loaded with :mod:`ctypes`.

An accelerator, never the reference: each kernel computes exactly what a
PyTorch expression computes (its caller probes that once, bit for bit,
before using it: :func:`fglcore.models.operators.native_matches`), only
faster; when no compiler is found, the compilation fails or ``FGL_NATIVE=0``
is set (:mod:`fglcore.settings`), :func:`library` returns ``None`` and
callers use the PyTorch expression. The kernels take raw pointers to tensor
data and depend on no PyTorch internals or headers.

The shared library is cached in ``native/`` of :func:`fglcore.paths.cache_root`
(beside the data, ``FGL_DATA``), keyed by the source, the compiler flags,
the machine and its CPU flags, because it is built with ``-march=native``.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path

from fglcore.paths import cache_root
from fglcore.settings import setting

_POINTER, _INT64 = ctypes.c_void_p, ctypes.c_int64

SIGNATURES: dict[str, dict[str, tuple[list, type | None]]] = {
    "spmm": {
        "csr_spmm_sum": ([_POINTER] * 7 + [_INT64] * 2, None),
        "csr_spmm_sum_unfused": ([_POINTER] * 7 + [_INT64] * 2, None),
        "transpose_f32": ([_POINTER] * 2 + [_INT64] * 2, None),
    },
}
"""The C functions of each kernel file, ``{file: {function: (argument types, return type)}}``."""

FLAGS = ("-O3", "-march=native", "-shared", "-fPIC", "-std=c99", "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off")


def enabled() -> bool:
    """Whether native kernels may be used (``FGL_NATIVE``, default on)."""
    return setting("native")


def _cpu_flags() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return line
    except OSError:
        pass
    return platform.processor()


def _cache_folder() -> Path:
    return cache_root() / "native"


def _compile(source: Path, target: Path) -> None:
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        raise RuntimeError("no C compiler found (set CC, or install cc/gcc/clang)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        built = Path(scratch) / target.name
        subprocess.run([compiler, *FLAGS, str(source), "-o", str(built)], check=True, capture_output=True, text=True)
        os.replace(built, target)  # atomic: parallel processes never load a half-written library


@functools.lru_cache(maxsize=None)
def library(name: str) -> ctypes.CDLL | None:
    """The compiled kernel ``<name>.c`` of this folder with the :data:`SIGNATURES` of its functions set,
    or ``None`` when native kernels are unavailable."""
    if not enabled():
        return None
    source = Path(__file__).with_name(f"{name}.c")
    key = hashlib.sha256(
        "\n".join([source.read_text(), " ".join(FLAGS), platform.machine(), _cpu_flags()]).encode()
    ).hexdigest()[:16]
    target = _cache_folder() / f"{name}-{key}.so"
    try:
        if not target.exists():
            _compile(source, target)
        compiled = ctypes.CDLL(str(target))
    except (OSError, RuntimeError, subprocess.CalledProcessError) as error:
        detail = getattr(error, "stderr", "") or error
        warnings.warn(f"fglcore.native: {name}.c not available, using the PyTorch path ({detail})", stacklevel=2)
        return None
    for function, (argtypes, restype) in SIGNATURES.get(name, {}).items():
        getattr(compiled, function).argtypes = argtypes
        getattr(compiled, function).restype = restype
    return compiled
