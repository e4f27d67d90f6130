"""A channel that keeps every payload it delivers (shared by the tests that check what crosses the channel)."""
from __future__ import annotations

from fglcore.fl import Channel


class RecordingChannel(Channel):
    """A channel that also keeps every payload it delivers: ``(sender, receiver, round, payload copy)``."""

    def __init__(self):
        super().__init__()
        self.payloads: list[tuple[str, str, int, dict]] = []

    def send(self, sender, receiver, payload, round, *, copy=True):
        received = super().send(sender, receiver, payload, round, copy=copy)
        self.payloads.append((sender, receiver, round, {k: v.clone() for k, v in received.items()}))
        return received
