"""The channel every federated message goes through, and the ledger that records it.

Server and clients never share Python objects: :meth:`Channel.send` hands the
receiver a detached copy of each tensor and writes one :class:`Message` per
tensor into the :class:`Ledger`. The ledger is what the papers' communication
costs and privacy claims are checked against, e.g.::

    ledger.total_bytes(sender="clients", receiver="server")      # all uploads
    "x" not in ledger.names(sender="clients")                     # no node features uploaded

Participants are named ``"server"`` and ``"client{cid}"``. A message from the
server is a *download*, one to the server an *upload*, any other (client to
client) a *peer* message.
"""
from __future__ import annotations

from dataclasses import astuple, dataclass, fields
from typing import Mapping

import pandas as pd
import torch
from torch import Tensor

SERVER = "server"
ANY_CLIENT = "clients"
MIB = 2**20


@dataclass(frozen=True, slots=True)
class Message:
    """One tensor sent from ``sender`` to ``receiver`` in ``round`` (round 1 is the first)."""

    round: int
    sender: str
    receiver: str
    name: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int

    @property
    def direction(self) -> str:
        """``download`` (from the server), ``upload`` (to the server) or ``peer``."""
        if self.sender == SERVER:
            return "download"
        if self.receiver == SERVER:
            return "upload"
        return "peer"


MESSAGE_COLUMNS = tuple(f.name for f in fields(Message))


def tensor_nbytes(tensor: Tensor) -> int:
    """Exact size of a dense tensor's data: ``numel * element_size``."""
    return tensor.numel() * tensor.element_size()


def _participant_matches(pattern: str | None, participant: str) -> bool:
    if pattern is None:
        return True
    if pattern == ANY_CLIENT:
        return participant != SERVER
    return pattern == participant


class Ledger:
    """Append-only record of every message sent through a :class:`Channel`.

    Filters take a participant name (``"server"``, ``"client3"``) or the
    wildcard ``"clients"`` (any participant other than the server).
    """

    def __init__(self) -> None:
        self.messages: list[Message] = []

    def record(self, message: Message) -> None:
        self.messages.append(message)

    def __len__(self) -> int:
        return len(self.messages)

    def select(
        self,
        *,
        sender: str | None = None,
        receiver: str | None = None,
        name: str | None = None,
        round: int | None = None,
    ) -> list[Message]:
        """The messages that pass every given filter (``None`` passes all)."""
        return [
            m
            for m in self.messages
            if (round is None or m.round == round)
            and (name is None or m.name == name)
            and _participant_matches(sender, m.sender)
            and _participant_matches(receiver, m.receiver)
        ]

    def total_bytes(
        self,
        *,
        sender: str | None = None,
        receiver: str | None = None,
        name: str | None = None,
        round: int | None = None,
    ) -> int:
        """Bytes of the messages that pass every given filter."""
        return sum(m.nbytes for m in self.select(sender=sender, receiver=receiver, name=name, round=round))

    def names(self, *, sender: str | None = None, receiver: str | None = None) -> set[str]:
        """Names of the tensors sent (e.g. to check that node features never leave a client)."""
        return {m.name for m in self.select(sender=sender, receiver=receiver)}

    def to_frame(self) -> pd.DataFrame:
        """One row per message; the columns are the :class:`Message` fields."""
        return pd.DataFrame([astuple(m) for m in self.messages], columns=list(MESSAGE_COLUMNS))

    def summary(self) -> pd.DataFrame:
        """Totals by ``direction`` and ``name``: ``messages``, ``bytes`` and ``MiB``."""
        totals: dict[tuple[str, str], list[int]] = {}
        for m in self.messages:
            entry = totals.setdefault((m.direction, m.name), [0, 0])
            entry[0] += 1
            entry[1] += m.nbytes
        rows = [(d, n, count, nbytes, nbytes / MIB) for (d, n), (count, nbytes) in sorted(totals.items())]
        return pd.DataFrame(rows, columns=["direction", "name", "messages", "bytes", "MiB"])

    def per_round(self) -> pd.DataFrame:
        """Bytes uploaded and downloaded in each round.

        Columns ``round``, ``upload_bytes``, ``download_bytes`` (plus
        ``peer_bytes`` when clients talked to each other) and ``total_bytes``.
        Round numbers follow the sender's labelling: the payload a client
        receives before round 1 is counted in round 1.
        """
        directions = ["upload", "download"]
        if any(m.direction == "peer" for m in self.messages):
            directions.append("peer")
        totals: dict[int, dict[str, int]] = {}
        for m in self.messages:
            row = totals.setdefault(m.round, dict.fromkeys(directions, 0))
            row[m.direction] += m.nbytes
        rows = [(r, *(row[d] for d in directions), sum(row.values())) for r, row in sorted(totals.items())]
        return pd.DataFrame(rows, columns=["round", *(f"{d}_bytes" for d in directions), "total_bytes"])


class Channel:
    """The only path between participants; records each tensor it carries in :attr:`ledger`."""

    def __init__(self, ledger: Ledger | None = None) -> None:
        self.ledger = ledger if ledger is not None else Ledger()

    def send(self, sender: str, receiver: str, payload: Mapping[str, Tensor], round: int, *,
             copy: bool = True) -> dict[str, Tensor]:
        """Deliver ``payload`` and return what ``receiver`` gets: detached copies of its tensors.

        One :class:`Message` per tensor is recorded, with its exact size
        ``numel * element_size``. Values must be dense tensors. ``copy=False``
        delivers the tensors detached but not copied: for a payload its sender
        built for sending and never changes afterwards (a snapshot sent to many
        receivers, freshly computed gradients), where the copy would only cost
        memory traffic; receivers that share it must not change it in place.
        """
        if not isinstance(payload, Mapping):
            raise TypeError(f"payload must be a mapping name -> Tensor, got {type(payload).__name__}")
        for name, value in payload.items():
            if not isinstance(name, str):
                raise TypeError(f"payload names must be str, got {name!r} ({type(name).__name__})")
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"payload entry {name!r} from {sender} to {receiver} is a {type(value).__name__}; "
                    "only torch.Tensor values can be sent (wrap numbers with torch.tensor(...))"
                )
            if value.layout != torch.strided:
                raise TypeError(
                    f"payload entry {name!r} has layout {value.layout}; only dense (strided) tensors can be "
                    "sent, send a sparse tensor's indices and values as separate tensors"
                )
        received = {}
        for name, value in payload.items():
            self.ledger.record(
                Message(
                    round,
                    sender,
                    receiver,
                    name,
                    tuple(value.shape),
                    str(value.dtype).removeprefix("torch."),
                    tensor_nbytes(value),
                )
            )
            received[name] = value.detach().clone() if copy else value.detach()
        return received
