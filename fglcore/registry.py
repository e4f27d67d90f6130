"""Name -> object registries shared by datasets, partitioners, models and algorithms."""
from __future__ import annotations

import difflib
from typing import Callable, Generic, Iterator, TypeVar

T = TypeVar("T")


class UnknownNameError(KeyError):
    """Raised when a registry is asked for a name it does not hold."""

    def __str__(self) -> str:  # KeyError quotes its message; show it plainly.
        return str(self.args[0])


class Registry(Generic[T]):
    """A named collection of objects, e.g. ``ALGORITHMS.get("fedavg")``.

    Names are case-sensitive; an unknown name raises :class:`UnknownNameError`
    listing every accepted name and the closest match.
    """

    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str, obj: T | None = None) -> Callable[[T], T] | T:
        """Register ``obj`` under ``name``; usable as a decorator."""

        def add(item: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._items[name] = item
            return item

        return add(obj) if obj is not None else add

    def get(self, name: str) -> T:
        if name not in self._items:
            raise UnknownNameError(unknown_name_message(self.kind, name, self.names()))
        return self._items[name]

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items)


def unknown_name_message(kind: str, name: object, accepted: list[str]) -> str:
    """``unknown dataset 'Corra' (did you mean 'Cora'?); accepted: ...``"""
    close = difflib.get_close_matches(str(name), accepted, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown {kind} {name!r}{hint}; accepted: {', '.join(accepted)}"
