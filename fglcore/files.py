"""The files the library writes for itself: written atomically, named by content.

* :func:`write_atomic` -- any writer, through a temporary file in the target's folder and :func:`os.replace`:
  readers see the old file or the new one, never a partial write; on any error the temporary file is removed
  and the old file is left as it was. Concurrent writers of the same bytes are harmless (the last rename wins).
  :func:`save_atomic` is its ``torch.save`` (caches, checkpoints, artifacts), :func:`write_csv_atomic` its CSV
  (result stores, comparisons), flushed to disk.
* :func:`cached_tensor` -- a computed tensor kept in a file and read back, computed once when processes ask at
  once (structure encodings).
* :func:`json_key` -- the sha256 of a JSON payload with sorted keys: the name of a cached file.
* :func:`update_with_tensor` -- a tensor's dtype, shape and bytes added to a running sha256, so that equal
  digests mean equal tensors (graph checksums, upload fingerprints).
* :func:`sha256_file` -- the sha256 of a file's bytes (raw datasets, a user's graph).
"""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import uuid
from pathlib import Path
from typing import Any, Callable, Mapping

import pandas as pd
import torch
from filelock import FileLock
from torch import Tensor


def write_atomic(path: str | os.PathLike[str], write: Callable[[Path], Any], *, durable: bool = False) -> None:
    """``write(temporary)`` then :func:`os.replace` onto ``path`` (its folder created when missing).

    ``durable``: the bytes are flushed to disk (:func:`os.fsync`) before the rename, for files a crash must not
    lose (result stores). The file gets the mode :func:`open` gives, as ``write`` creates it with ``open``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex}.part")
    try:
        write(partial)
        if durable:
            with open(partial, "rb+") as handle:
                os.fsync(handle.fileno())
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def save_atomic(obj: Any, path: str | os.PathLike[str], **save_options: Any) -> None:
    """``torch.save(obj, ...)`` through :func:`write_atomic`; ``save_options`` go to :func:`torch.save`
    (``pickle_module``)."""
    write_atomic(path, lambda partial: torch.save(obj, partial, **save_options))


def write_csv_atomic(frame: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """``frame`` as CSV (no index, ``\\n`` line ends, UTF-8) through :func:`write_atomic`, flushed to disk."""
    write_atomic(path, lambda partial: frame.to_csv(partial, index=False, lineterminator="\n", encoding="utf-8"),
                 durable=True)


def cached_tensor(path: str | os.PathLike[str], shape: tuple[int, ...], compute: Callable[[], Tensor]) -> Tensor:
    """The tensor of ``shape`` stored in ``path``, else ``compute()``'s, saved there (:func:`save_atomic`).

    A file lock beside ``path`` (``.<name>.lock``) makes one process compute while the others wait and read its
    result. An unreadable file, or one holding something else, is computed again and replaced.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path.with_name(f".{path.name}.lock")):
        if path.is_file():
            try:
                values = torch.load(path, weights_only=True)
            except (OSError, EOFError, RuntimeError, pickle.UnpicklingError):
                values = None
            if isinstance(values, Tensor) and tuple(values.shape) == tuple(shape):
                return values
        values = compute()
        save_atomic(values, path)
    return values


def json_key(payload: Mapping[str, Any]) -> str:
    """sha256 (hex) of ``json.dumps(payload, sort_keys=True)``: a cached file's name from what it holds."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def update_with_tensor(digest: "hashlib._Hash", label: str, tensor: Tensor) -> None:
    """Add ``;<label>:<dtype>:<shape>;`` and the tensor's bytes (on the CPU, dense, contiguous) to ``digest``."""
    tensor = tensor.detach().cpu()
    if tensor.layout != torch.strided:
        tensor = tensor.to_dense()
    digest.update(f";{label}:{str(tensor.dtype)}:{tuple(tensor.shape)};".encode())
    digest.update(memoryview(tensor.contiguous().reshape(-1).view(torch.uint8).numpy()))


def sha256_file(path: str | os.PathLike[str]) -> str:
    """sha256 (hex) of the file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
