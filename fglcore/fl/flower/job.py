"""Build an algorithm's participants once, check that Flower can carry them, write what each machine needs.

:func:`prepare_job` follows :func:`fglcore.experiment.run_full` step for step (configuration and ``FGL_*``
checks, seeds, threads, subnormal flushing, federation, :meth:`Algorithm.build
<fglcore.algorithms.base.Algorithm.build>`), then writes

* ``client<k>.pt`` for every client: that :class:`~fglcore.fl.engine.Client` object alone (its model,
  optimizer, private state and its own subgraph), the file a data owner's SuperNode loads
  (node config ``partition-file``);
* ``server.pt``: the :class:`~fglcore.fl.engine.Server`, the arguments of
  :func:`~fglcore.fl.engine.run_rounds` (:meth:`Algorithm.loop_arguments
  <fglcore.algorithms.base.Algorithm.loop_arguments>`), the clients' ids, names and sample counts, and the
  global random state right after building, which the ServerApp carries through the run (see
  :mod:`fglcore.fl.flower.apps`).

Flower can carry an algorithm when all of its communication is the round loop's: payloads the server sends
(:meth:`Server.payload_for`) and updates the clients return from :meth:`Client.fit`. :class:`FlowerUnsupported`
names what else an algorithm needs: its own ``run`` (O-pFGL, FedPub, ... :meth:`Algorithm.round_loop_only
<fglcore.algorithms.base.Algorithm.round_loop_only>`), messages sent while building, a client that holds the
channel, the server or another client (it would talk outside the loop, or carry others' data).

Secure aggregation (``config.secure_aggregation``) runs Flower's SecAgg+ by default
(:mod:`fglcore.fl.flower.secaggplus`: key agreement, secret-shared masks, dropout recovery; the weighted mean
to its quantisation bound). With the run config ``secure-aggregation = "fglcore"`` it runs fglcore's pairwise
masking (:mod:`fglcore.fl.secure`) on the SuperNodes instead: each partition file holds the
:class:`~fglcore.fl.secure.SecureAggregator`, each client masks its own update
(:meth:`Client.masked_update <fglcore.fl.engine.Client.masked_update>`) and only the masked vector crosses
Flower; the ServerApp unmasks the sum, bit for bit as in-process. Its limits are the simulation's: the
pairwise seeds derive from the run's seed, which every file holds, so it shows what the server sees, not a
cryptographic guarantee.

These files are pickles of live objects, like round checkpoints (:mod:`fglcore.fl.checkpoint`): load them only
from a source you trust, with the same fglcore and torch versions.
"""
from __future__ import annotations

import io
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import torch

from fglcore.algorithms.training import client_seed
from fglcore.config import ExperimentConfig
from fglcore.files import save_atomic
from fglcore.fl.channel import Channel, Ledger
from fglcore.fl.checkpoint import rng_state
from fglcore.fl.engine import Client, Server
from fglcore.fl.secure import SecureAggregator

JOB_FORMAT = 1


class FlowerUnsupported(RuntimeError):
    """The algorithm needs a message or a step that the Flower adapter does not carry (the text says which)."""


@dataclass(frozen=True)
class Job:
    """The files :func:`prepare_job` wrote: the server's job file and one partition file per client id."""

    folder: Path
    server_file: Path
    partition_files: dict[int, Path]
    algorithm: str


class _NullWriter:
    def write(self, data: bytes) -> int:
        return len(data)


class _ReferenceCheck(pickle.Pickler):
    """Pickles an object into nothing, raising :class:`FlowerUnsupported` at any object it must not reach."""

    def __init__(self, forbidden: Mapping[int, str], owner: str):
        super().__init__(_NullWriter(), protocol=pickle.HIGHEST_PROTOCOL)
        self.forbidden = forbidden
        self.owner = owner

    def persistent_id(self, obj: Any) -> None:
        what = self.forbidden.get(id(obj))
        if what is None and isinstance(obj, (Channel, Ledger)):
            what = f"a {type(obj).__name__} (it would send messages outside the round loop)"
        if what is not None:
            raise FlowerUnsupported(f"{self.owner} holds {what}; the Flower adapter carries only the round loop's "
                                    "messages (Server.payload_for, Client.fit's update), and ships each client "
                                    "alone to its own machine")
        return None


def check_participants(algorithm: Any, server: Server | None, clients: list[Client], channel: Channel) -> None:
    """Raise :class:`FlowerUnsupported` unless Flower can run these participants of ``algorithm`` (module doc)."""
    name = getattr(algorithm, "name", type(algorithm).__name__)
    if not algorithm.round_loop_only():
        raise FlowerUnsupported(
            f"algorithm {name!r}: its run() adds steps of its own to the round loop ({type(algorithm).__name__}.run), "
            "which the Flower adapter does not carry; only algorithms whose run is build + run_rounds can run on Flower")
    if len(channel.ledger):
        sent = sorted({f"{m.name} ({m.sender} -> {m.receiver})" for m in channel.ledger.messages})
        raise FlowerUnsupported(f"algorithm {name!r} sends messages while building its participants, which the "
                                f"Flower adapter does not carry: {', '.join(sent[:6])}"
                                f"{' ...' if len(sent) > 6 else ''}")
    federation = getattr(algorithm, "federation", None)
    shared = {id(channel): "the channel (it would send messages outside the round loop)",
              id(channel.ledger): "the ledger", id(algorithm): "the algorithm object"}
    if federation is not None:
        shared[id(federation)] = "the whole federation (every client's data)"
    for client in clients:
        forbidden = dict(shared)
        if server is not None:
            forbidden[id(server)] = "the server"
        for other in clients:
            if other is not client:
                forbidden[id(other)] = f"another client ({other.name})"
        _ReferenceCheck(forbidden, f"{name} client {client.name}").dump(client)
    if server is not None:
        forbidden = {id(channel): "the channel", id(channel.ledger): "the ledger", id(algorithm): "the algorithm object"}
        forbidden.update({id(c): f"a client object ({c.name})" for c in clients})
        _ReferenceCheck(forbidden, f"{name} server").dump(server)


def prepare_job(config: ExperimentConfig | Mapping[str, Any], folder: str | os.PathLike[str]) -> Job:
    """Build ``config``'s algorithm as :func:`fglcore.experiment.run_full` does (:func:`fglcore.experiment.prepare`),
    check it (:func:`check_participants`) and write its server and partition files into ``folder``."""
    from fglcore import runtime
    from fglcore.experiment import as_config, prepare

    config = as_config(config)
    device = runtime.get_device(config.device)
    if device.type != "cpu":  # before any data is loaded
        raise FlowerUnsupported(f"device: the Flower adapter runs on CPU (its messages carry CPU arrays), got "
                                f"{config.device!r} resolving to {device}; set device to 'cpu'")
    algorithm = prepare(config)
    if not algorithm.round_loop_only():  # before building: say so at once
        check_participants(algorithm, None, [], Channel())
    channel = Channel()
    server, clients = algorithm.build(channel)
    state = rng_state()  # what the in-process run_rounds starts from
    check_participants(algorithm, server, clients, channel)
    secure = None
    if config.secure_aggregation and server is not None:  # as Algorithm.run
        secure = SecureAggregator([client.cid for client in clients], seed=config.seed)
    folder = Path(folder).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    partitions = {}
    for client in clients:
        path = folder / f"{client.name}.pt"
        save_atomic({"format": JOB_FORMAT, "client": client, "secure": secure,
                     "rng_seed": client_seed(config.seed, client.cid)}, path)
        partitions[client.cid] = path
    server_file = folder / "server.pt"
    save_atomic({
        "format": JOB_FORMAT,
        "algorithm": algorithm.name,
        "server": server,
        "clients": [{"cid": c.cid, "name": c.name, "num_samples": c.num_samples} for c in clients],
        "loop": algorithm.loop_arguments() | {"progress": False},
        "rng": state,
        "secure": secure,
    }, server_file)
    return Job(folder, server_file, partitions, algorithm.name)


def load_file(path: str | os.PathLike[str], what: str) -> dict[str, Any]:
    """A job or partition file written by :func:`prepare_job` (a trusted local pickle)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{what} {str(path)!r} does not exist; write it with fglcore.fl.flower.prepare_job")
    with open(path, "rb") as handle:
        content = torch.load(io.BytesIO(handle.read()), weights_only=False)
    if not isinstance(content, dict) or content.get("format") != JOB_FORMAT:
        raise ValueError(f"{what} {str(path)!r} is not a fglcore Flower file of format {JOB_FORMAT}")
    return content
