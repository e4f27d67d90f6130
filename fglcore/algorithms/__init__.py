"""Federated graph learning algorithms, one module each, registered by name in :data:`ALGORITHMS`.

Importing this package imports every module in it, so an algorithm is added
by adding one module whose :class:`~fglcore.algorithms.base.Algorithm`
subclass is decorated with :func:`~fglcore.algorithms.base.register_algorithm`.
``base`` (the interface) and ``training`` (the shared local trainers) hold no
algorithm.
"""
from __future__ import annotations

import importlib
import pkgutil

from fglcore.algorithms.base import ALGORITHMS, Algorithm, register_algorithm

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if not _module.startswith("_"):
        importlib.import_module(f"{__name__}.{_module}")
del _module

__all__ = ["ALGORITHMS", "Algorithm", "register_algorithm"]
