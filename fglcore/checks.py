"""Value checks shared by configurations, notebook parameters and options.

A leaf module: it imports nothing from ``fglcore``, so the typed
configuration (:mod:`fglcore.config`), the registries (algorithms, models,
partitioners, datasets) and the notebook validation (:mod:`fglcore.notebooks`)
all use the same checks without importing one another.

Every check raises :class:`ConfigError` with a message that names the key,
the value and what is accepted (``lr: .nan is not accepted; accepted: a
finite number >= 0``). Ranges are declared per field (:class:`Bounds`, e.g. in
the metadata of :class:`fglcore.config.ExperimentConfig`'s fields), never by a
key's name, so a notebook parameter that happens to share a field's name is
not caught by that field's range.
"""
from __future__ import annotations

import difflib
import math
import types
import typing
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence


class ConfigError(ValueError):
    """A configuration value is not accepted; the message says which and why."""


SEED_MAX = 2**32 - 1
"""The largest seed every generator in use accepts (numpy's ``RandomState`` limit)."""


def show(value: Any) -> str:
    """A value as a user typed it in YAML: ``.nan``, ``.inf``, ``-.inf``; otherwise ``repr``."""
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
    return repr(value)


def did_you_mean(value: Any, accepted: Iterable[str]) -> str:
    close = difflib.get_close_matches(str(value), [str(a) for a in accepted], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


# --------------------------------------------------------------------------- types


def _type_name(tp: Any) -> str:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(tp))
    if tp is type(None):
        return "None"
    return getattr(tp, "__name__", str(tp))


def check_type(key: str, value: Any, expected: Any) -> Any:
    """Return ``value`` (ints widened to float where a float is expected) or raise :class:`ConfigError`.

    A float must be finite: ``.nan`` and ``.inf`` are never accepted.
    """
    origin = typing.get_origin(expected)
    if origin in (typing.Union, types.UnionType):
        for option in typing.get_args(expected):
            try:
                return check_type(key, value, option)
            except ConfigError:
                pass
        raise ConfigError(f"{key}: expected {_type_name(expected)}, got {type(value).__name__} {show(value)}")
    if expected is Any:
        return value
    if expected is type(None):
        if value is None:
            return value
    elif origin in (list, tuple):
        if isinstance(value, (list, tuple)):
            (item_type, *_) = typing.get_args(expected) or (Any,)
            return [check_type(f"{key}[{i}]", v, item_type) for i, v in enumerate(value)]
    elif origin is dict or expected is dict:
        if isinstance(value, dict):
            return dict(value)
    elif expected is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return check_finite(key, float(value))
    elif expected is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif isinstance(value, expected):
        return value
    raise ConfigError(f"{key}: expected {_type_name(expected)}, got {type(value).__name__} {show(value)}")


def check_finite(key: str, value: Any) -> Any:
    """``value`` unless it is a NaN or infinite number (anywhere inside lists and dicts too)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{key}: {show(value)} is not accepted; accepted: a finite number")
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            check_finite(f"{key}[{i}]", v)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            check_finite(f"{key}.{k}", v)
    return value


# --------------------------------------------------------------------------- ranges


@dataclass(frozen=True)
class Bounds:
    """The range of one number: ``minimum``/``maximum`` inclusive, ``above``/``below`` exclusive; ``None`` is open.

    Attached to a field (``field(metadata=Bounds(minimum=1).metadata())``) or
    passed to :func:`check_number`; ``None`` values pass (a field typed
    ``int | None`` checks its type separately).
    """

    minimum: float | None = None
    maximum: float | None = None
    above: float | None = None
    below: float | None = None

    def accepted(self, integer: bool = False) -> str:
        def num(x: float) -> str:
            return str(int(x)) if float(x).is_integer() else f"{x:g}"

        parts = []
        if self.minimum is not None:
            parts.append(f">= {num(self.minimum)}")
        if self.above is not None:
            parts.append(f"> {num(self.above)}")
        if self.maximum is not None:
            parts.append(f"<= {num(self.maximum)}")
        if self.below is not None:
            parts.append(f"< {num(self.below)}")
        what = "an integer" if integer else "a finite number"
        return f"{what} {' and '.join(parts)}" if parts else what

    def contains(self, value: float) -> bool:
        return ((self.minimum is None or value >= self.minimum) and (self.maximum is None or value <= self.maximum)
                and (self.above is None or value > self.above) and (self.below is None or value < self.below))

    def metadata(self) -> dict[str, "Bounds"]:
        return {"bounds": self}

    def check(self, key: str, value: Any) -> Any:
        """``value`` if it is ``None`` or a finite number (every member of a list) within the bounds."""
        if value is None:
            return value
        if isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                self.check(f"{key}[{i}]", v)
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return value  # the type check names the expected type
        integer = isinstance(value, int)
        if not math.isfinite(value) or not self.contains(value):
            raise ConfigError(f"{key}: {show(value)} is not accepted; accepted: {self.accepted(integer)}")
        return value


POSITIVE = Bounds(minimum=1)
NON_NEGATIVE = Bounds(minimum=0)
SEED = Bounds(minimum=0, maximum=SEED_MAX)
FRACTION = Bounds(minimum=0, below=1)
PROBABILITY = Bounds(minimum=0, maximum=1)


def check_number(key: str, value: Any, bounds: Bounds, *, integer: bool = False) -> Any:
    """``value`` if it is a finite number (an int when ``integer``) within ``bounds``."""
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok:
        raise ConfigError(f"{key}: expected {bounds.accepted(integer)}, got {type(value).__name__} {show(value)}")
    return bounds.check(key, value)


# --------------------------------------------------------------------------- names and lists


def check_choice(key: str, value: Any, accepted: Sequence[str]) -> None:
    """Every member of ``value`` (a name or a list of names) is one of ``accepted``."""
    values = value if isinstance(value, (list, tuple)) else [value]
    for v in values:
        if v not in accepted:
            raise ConfigError(f"{key}: {show(v)} is not accepted{did_you_mean(v, accepted)}; "
                              f"accepted: {', '.join(map(str, accepted))}")


def check_unknown_keys(given: Mapping[str, Any], known: Sequence[str], what: str) -> None:
    for key in given:
        if key not in known:
            raise ConfigError(f"unknown {what} {key!r}{did_you_mean(key, known)}; accepted: {', '.join(sorted(known))}")


def check_non_empty(key: str, value: Any, what: str = "at least one value") -> Any:
    """``value`` unless it is an empty list (or ``None``)."""
    if value is None or (isinstance(value, (list, tuple)) and not value):
        raise ConfigError(f"{key}: {show(value)} is not accepted; accepted: a list of {what}")
    return value
