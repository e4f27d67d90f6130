"""The Flower ``ClientApp`` and ``ServerApp`` that run fglcore's participants, and the messages between them.

**Server side.** The ServerApp loads the job file (:mod:`fglcore.fl.flower.job`) and calls
:func:`~fglcore.fl.engine.run_rounds` itself on the job's :class:`~fglcore.fl.engine.Server`, with one
:class:`RemoteClient` per SuperNode in place of each client. A ``RemoteClient`` is a
:class:`~fglcore.fl.engine.Client` whose methods send Flower messages:

==========================  ===============================  ==================================================
in-process call              Flower message (type)            content (request -> reply)
==========================  ===============================  ==================================================
``client.receive(payload)``  carried by the next message      ``ArrayRecord "payload"`` + its round
``client.fit(r)``            ``train``                        ``ConfigRecord "config"`` (round) -> ``ArrayRecord
                                                              "update"`` with ``num_samples``
``client.evaluate()``        ``evaluate``                     -> ``ArrayRecord "predictions"`` (logits, labels,
                                                              minority marks per split)
(start)                      ``query.describe``               -> the client's id, name and sample count
==========================  ===============================  ==================================================

Under secure aggregation the ``train`` message asks for a masked update: the client masks it on its own
machine (:meth:`Client.masked_update <fglcore.fl.engine.Client.masked_update>`, fglcore's pairwise masking)
and the reply carries only ``ArrayRecord "masked"`` (one ``int64`` vector) with the names, dtypes and shapes
of the parameters; the ServerApp's loop unmasks the sum as in-process.

So every message the channel records is one Flower message: a server payload becomes the ``payload`` record
of the next message to that client, an upload the ``update`` record of the ``train`` reply, tensor for
tensor under the channel's names. The channel on the ServerApp records the same ledger as in-process.

**Same numbers.** In-process, every client draws from the process's global random generators (dropout,
sampling) in the loop's order. Each message therefore carries the global random state of Python, NumPy and
torch (``ConfigRecord "rng"``, no pickle) and each reply brings it back, so the draws happen in the same
order on whichever machine: the ServerApp sends one message at a time, in :func:`run_rounds`' order, and a
run gives the in-process numbers bit for bit (same torch build and thread count). The price is that clients
train one after another, not in parallel. A payload reaches its client with the following ``train`` or
``evaluate`` message instead of at once; a client whose ``receive`` draws random numbers would change the
order, and the ClientApp refuses it (:class:`~fglcore.fl.flower.job.FlowerUnsupported`).

**Client side.** Each SuperNode's node config names its partition file (``partition-file``); the ClientApp
process, which Flower starts afresh for every message, loads the client from it, or from the client's state
file of the current run (``<state-dir>/<stem>.run<run id>.pt``, ``state-dir`` defaulting to the partition
file's folder), runs the call and saves the client's state again.

**Wire vs ledger.** :class:`FlowerLink` records, for every message, the tensor bytes (what the ledger counts:
``numel * element_size``), the bytes of its ``Array`` objects (NumPy ``.npy`` serialisation: a header of
about 128 bytes per array) and the bytes of every Flower object the message is made of (records, metadata,
the random state, evaluation predictions, which the in-process engine does not count as communication),
as :func:`flwr.supercore.inflatable.get_all_nested_objects` serialises them; HTTP framing is not included.
"""
from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.common.constant import ErrorCode
from flwr.serverapp import Grid, ServerApp
from flwr.supercore.inflatable.inflatable_object import get_all_nested_objects
from torch import Tensor

from fglcore import runtime
from fglcore.fl.channel import Channel, tensor_nbytes
from fglcore.fl.checkpoint import rng_state, set_rng_state
from fglcore.fl.engine import Client, Payload, run_rounds
from fglcore.fl.flower.job import FlowerUnsupported, _save, load_file
from fglcore.metrics import Prediction

PARTITION_KEY = "partition-file"
STATE_DIR_KEY = "state-dir"


class ClientLost(RuntimeError):
    """A client's SuperNode did not answer, or Flower reports it unavailable: the run is incomplete."""


class ClientFailed(RuntimeError):
    """A client's ClientApp raised an error (its reason is Flower's error reply)."""


# -- records -------------------------------------------------------------------------------------------------

def tensor_record(payload: Mapping[str, Tensor]) -> ArrayRecord:
    """One ``Array`` per tensor, under the tensor's name (CPU copies; dtypes and shapes kept)."""
    arrays = {}
    for name, value in payload.items():
        try:
            arrays[name] = Array(value.detach().cpu().contiguous().numpy())
        except TypeError as error:
            raise FlowerUnsupported(f"tensor {name!r} of dtype {value.dtype} has no NumPy dtype, so Flower's "
                                    f"Array cannot carry it ({error})") from error
    return ArrayRecord(arrays)


def record_tensors(record: ArrayRecord) -> dict[str, Tensor]:
    return {name: torch.from_numpy(np.array(array.numpy(), copy=True)) for name, array in record.items()}


def encode_rng(state: Mapping[str, Any]) -> ConfigRecord:
    """The global random states of :func:`fglcore.fl.checkpoint.rng_state` as plain record values (no pickle)."""
    version, internal, gauss = state["python"]
    kind, keys, position, has_gauss, cached = state["numpy"]
    return ConfigRecord({
        "python.version": int(version), "python.state": [int(v) for v in internal],
        "python.has_gauss": gauss is not None, "python.gauss": 0.0 if gauss is None else float(gauss),
        "numpy.kind": str(kind), "numpy.keys": np.asarray(keys, dtype=np.uint32).tobytes(),
        "numpy.pos": int(position), "numpy.has_gauss": int(has_gauss), "numpy.cached": float(cached),
        "torch": state["torch"].numpy().tobytes(),
    })


def decode_rng(record: ConfigRecord) -> dict[str, Any]:
    python = (int(record["python.version"]), tuple(int(v) for v in record["python.state"]),
              float(record["python.gauss"]) if record["python.has_gauss"] else None)
    keys = np.frombuffer(record["numpy.keys"], dtype=np.uint32).copy()
    numpy_state = (str(record["numpy.kind"]), keys, int(record["numpy.pos"]), int(record["numpy.has_gauss"]),
                   float(record["numpy.cached"]))
    torch_state = torch.frombuffer(bytearray(record["torch"]), dtype=torch.uint8).clone()
    return {"python": python, "numpy": numpy_state, "torch": torch_state}


def _predictions_record(outputs: Mapping[str, Prediction]) -> tuple[ArrayRecord, ConfigRecord]:
    arrays: dict[str, Tensor] = {}
    info: dict[str, Any] = {"splits": list(outputs)}
    for split, pred in outputs.items():
        arrays[f"{split}.logits"] = pred.logits
        arrays[f"{split}.y"] = pred.y
        if pred.minority is not None:
            arrays[f"{split}.minority"] = pred.minority
        if pred.weight is not None:
            info[f"{split}.weight"] = float(pred.weight)
    return tensor_record(arrays), ConfigRecord(info)


def _record_predictions(arrays: ArrayRecord, info: ConfigRecord) -> dict[str, Prediction]:
    tensors = record_tensors(arrays)
    return {split: Prediction(tensors[f"{split}.logits"], tensors[f"{split}.y"], tensors.get(f"{split}.minority"),
                              info.get(f"{split}.weight"))
            for split in info["splits"]}


# -- the ClientApp -------------------------------------------------------------------------------------------

client_app = ClientApp()


def _files(context: Context) -> tuple[Path, Path]:
    if PARTITION_KEY not in context.node_config:
        raise ValueError(f"this SuperNode's node config has no {PARTITION_KEY!r}; start it with "
                         f"--node-config '{PARTITION_KEY}=\"/path/to/client<k>.pt\"' (a file written by "
                         "fglcore.fl.flower.prepare_job)")
    partition = Path(str(context.node_config[PARTITION_KEY]))
    folder = Path(str(context.node_config.get(STATE_DIR_KEY, partition.parent)))
    return partition, folder / f"{partition.stem}.run{context.run_id}.pt"


def _open_client(context: Context) -> tuple[Client, Path, Any]:
    """The client (from its state file of this run, else its partition file), the state file, and the
    partition's :class:`~fglcore.fl.secure.SecureAggregator` (``None`` without secure aggregation)."""
    partition, state = _files(context)
    runtime.set_threads()
    runtime.set_flush_denormal()
    source = state if state.exists() else partition
    content = load_file(source, "partition file" if source == partition else "client state file")
    if "secure" not in content:
        content["secure"] = load_file(partition, "partition file").get("secure")
    return content["client"], state, content["secure"]


def _take_payload(client: Client, message: Message) -> None:
    """Run the client's ``receive`` on a payload the message carries; it must not draw random numbers."""
    if "payload" not in message.content:
        return
    before = torch.get_rng_state()
    before_np = np.random.get_state()[1].copy()
    before_py = random.getstate()
    client.receive(record_tensors(message.content["payload"]), int(message.content["config"]["payload_round"]))
    if (not torch.equal(before, torch.get_rng_state()) or not np.array_equal(before_np, np.random.get_state()[1])
            or before_py != random.getstate()):
        raise FlowerUnsupported(f"{type(client).__name__}.receive draws random numbers; the Flower adapter hands a "
                                "payload over with the client's next message, which would change the order of the "
                                "draws and so the numbers")


def _reply(message: Message, content: dict[str, Any]) -> Message:
    content["rng"] = encode_rng(rng_state())
    return Message(RecordDict(content), reply_to=message)


@client_app.query("describe")
def describe(message: Message, context: Context) -> Message:
    client, _, _ = _open_client(context)
    return Message(RecordDict({"client": ConfigRecord({"cid": int(client.cid), "name": client.name,
                                                       "num_samples": int(client.num_samples)})}),
                   reply_to=message)


@client_app.train()
def train(message: Message, context: Context) -> Message:
    client, state, secure = _open_client(context)
    set_rng_state(decode_rng(message.content["rng"]))
    _take_payload(client, message)
    round = int(message.content["config"]["round"])
    update = client.fit(round)
    info: dict[str, Any] = {"num_samples": int(client.num_samples), "has_update": update is not None}
    content: dict[str, Any] = {}
    if update is not None and message.content["config"].get("secure", False):
        if secure is None:
            raise ValueError("the server asks for a masked update but this partition file holds no secure "
                             "aggregator; write the files with secure_aggregation true")
        content["masked"] = tensor_record({"masked_update": client.masked_update(update, secure, round)})
        info["names"] = list(update)
        info["dtypes"] = [str(v.dtype).removeprefix("torch.") for v in update.values()]
        info["shapes"] = json.dumps([list(v.shape) for v in update.values()])
    elif update is not None:
        content["update"] = tensor_record({**update, "num_samples": torch.tensor(float(client.num_samples))})
    content["config"] = ConfigRecord(info)
    reply = _reply(message, content)
    _save({"format": 1, "client": client, "secure": secure}, state)
    return reply


@client_app.evaluate()
def evaluate(message: Message, context: Context) -> Message:
    client, state, secure = _open_client(context)
    set_rng_state(decode_rng(message.content["rng"]))
    _take_payload(client, message)
    arrays, info = _predictions_record(client.evaluate())
    reply = _reply(message, {"predictions": arrays, "splits": info})
    _save({"format": 1, "client": client, "secure": secure}, state)
    return reply


# -- the ServerApp -------------------------------------------------------------------------------------------

def wire_bytes(message: Message) -> int:
    """Bytes of every Flower object ``message`` is made of, as serialised for transport (no HTTP framing)."""
    return sum(len(obj.deflate()) for obj in get_all_nested_objects(message).values())


def _record_sizes(content: RecordDict) -> tuple[int, int]:
    tensor, array = 0, 0
    for key in content.keys():
        record = content[key]
        if isinstance(record, ArrayRecord) and key in ("payload", "update", "masked"):
            for a in record.values():
                tensor += int(np.prod(a.shape, dtype=np.int64)) * np.dtype(a.dtype).itemsize
                array += len(a.data)
    return tensor, array


class FlowerLink:
    """The ServerApp's end: sends one message at a time through the ``Grid`` and accounts for its bytes."""

    def __init__(self, grid: Grid, message_timeout: float, events: Path | None = None, secure: bool = False):
        self.grid = grid
        self.secure = secure
        self.message_timeout = float(message_timeout)
        self.poll = 0.1
        self.events = events
        self.wire: list[dict[str, Any]] = []

    def _log(self, **event: Any) -> None:
        if self.events is not None:
            with open(self.events, "a") as handle:
                handle.write(json.dumps({"time": time.time(), **event}) + "\n")

    def exchange(self, messages: list[Message]) -> list[Message]:
        """Push ``messages`` and pull their replies until all arrived or :attr:`message_timeout` passed.

        ``Grid.send_and_receive`` does the same but looks for replies every 3 s; this looks every
        :attr:`poll` seconds (a local request to the SuperLink), which saves up to 3 s per message."""
        ids = set(self.grid.push_messages(messages))
        deadline = time.monotonic() + self.message_timeout
        replies: list[Message] = []
        while ids:
            got = list(self.grid.pull_messages(ids))
            replies.extend(got)
            ids.difference_update(m.metadata.reply_to_message_id for m in got)
            if not ids or time.monotonic() >= deadline:
                break
            time.sleep(self.poll)
        return replies

    def connect(self, clients: Sequence[Mapping[str, Any]], timeout: float) -> list["RemoteClient"]:
        """Wait (at most ``timeout`` s) for one SuperNode per client, ask each whose data it holds, and return
        one :class:`RemoteClient` per client, in the job's client order."""
        expected = {int(c["cid"]): c for c in clients}
        deadline = time.monotonic() + timeout
        nodes = list(self.grid.get_node_ids())
        while len(nodes) < len(expected) and time.monotonic() < deadline:
            time.sleep(0.2)
            nodes = list(self.grid.get_node_ids())
        if len(nodes) < len(expected):
            raise ClientLost(f"only {len(nodes)} of the {len(expected)} SuperNodes connected to the SuperLink "
                             f"within {timeout:g} s")
        requests = [Message(RecordDict({}), dst_node_id=node, message_type="query.describe") for node in nodes]
        replies = self.exchange(requests)
        answered = {reply.metadata.src_node_id: reply for reply in replies}
        found: dict[int, tuple[int, Mapping[str, Any]]] = {}
        for node in nodes:
            reply = answered.get(node)
            if reply is None or reply.has_error():
                why = "no reply" if reply is None else f"error {reply.error.code}: {reply.error.reason}"
                raise ClientLost(f"SuperNode {node} did not say which client it holds ({why} within "
                                 f"{self.message_timeout:g} s)")
            info = reply.content["client"]
            cid = int(info["cid"])
            if cid not in expected:
                raise ClientLost(f"SuperNode {node} holds client {cid}, which is not one of this job's clients "
                                 f"{sorted(expected)}")
            if cid in found:
                raise ClientLost(f"SuperNodes {found[cid][0]} and {node} both hold client {cid}")
            found[cid] = (node, info)
        missing = sorted(set(expected) - set(found))
        if missing:
            raise ClientLost(f"no SuperNode holds clients {missing}")
        proxies = []
        for cid, entry in expected.items():
            node, info = found[cid]
            if int(info["num_samples"]) != int(entry["num_samples"]) or str(info["name"]) != entry["name"]:
                raise ClientLost(f"SuperNode {node}'s client {cid} ({info['name']}, {info['num_samples']} samples) "
                                 f"is not the job's ({entry['name']}, {entry['num_samples']} samples): its partition "
                                 "file belongs to another job")
            proxies.append(RemoteClient(self, node, cid, int(entry["num_samples"])))
        self._log(event="connected", nodes={str(p.cid): p.node_id for p in proxies})
        return proxies

    def call(self, client: "RemoteClient", kind: str, round: int, content: dict[str, Any]) -> RecordDict:
        """Send ``content`` to ``client``'s SuperNode as a ``kind`` message and return the reply's content."""
        content["rng"] = encode_rng(rng_state())
        message = Message(RecordDict(content), dst_node_id=client.node_id, message_type=kind)
        sent_tensor, sent_array = _record_sizes(message.content)
        sent_wire = wire_bytes(message)
        started = time.perf_counter()
        replies = self.exchange([message])
        seconds = time.perf_counter() - started
        if not replies:
            self._log(event="lost", client=client.name, kind=kind, round=round)
            raise ClientLost(f"{client.name} (SuperNode {client.node_id}) sent no reply to its {kind} message of "
                             f"round {round} within {self.message_timeout:g} s: the client was lost and the run is "
                             "incomplete")
        reply = replies[0]
        if reply.has_error():
            self._log(event="error", client=client.name, kind=kind, round=round, error=reply.error.reason)
            unavailable = reply.error.code in (ErrorCode.NODE_UNAVAILABLE, ErrorCode.MESSAGE_UNAVAILABLE,
                                               ErrorCode.REPLY_MESSAGE_UNAVAILABLE)
            raise (ClientLost if unavailable else ClientFailed)(
                f"{client.name} (SuperNode {client.node_id}) answered its {kind} message of round {round} with "
                f"Flower error {reply.error.code}: {reply.error.reason}"
                + ("; the client was lost and the run is incomplete" if unavailable else ""))
        set_rng_state(decode_rng(reply.content["rng"]))
        got_tensor, got_array = _record_sizes(reply.content)
        got_wire = wire_bytes(reply)
        if kind == "evaluate":
            got_array = sum(len(a.data) for a in reply.content["predictions"].values())
        self.wire.append({"round": round, "client": client.name, "kind": kind, "seconds": seconds,
                          "download_tensor_bytes": sent_tensor, "download_array_bytes": sent_array,
                          "download_wire_bytes": sent_wire, "upload_tensor_bytes": got_tensor,
                          "upload_array_bytes": got_array, "upload_wire_bytes": got_wire})
        self._log(event="reply", client=client.name, kind=kind, round=round, seconds=seconds)
        return reply.content


class RemoteClient(Client):
    """Stands in for a client on the ServerApp: its calls become messages to the client's SuperNode."""

    def __init__(self, link: FlowerLink, node_id: int, cid: int, num_samples: int):
        super().__init__(cid, num_samples)
        self.link = link
        self.node_id = node_id
        self.round = 0  # the last round this client trained (what its evaluation follows)
        self.pending: tuple[Payload, int] | None = None

    def _content(self, round: int) -> dict[str, Any]:
        config: dict[str, Any] = {"round": round}
        content: dict[str, Any] = {}
        if self.pending is not None:
            payload, payload_round = self.pending
            content["payload"] = tensor_record(payload)
            config["payload_round"] = payload_round
        content["config"] = ConfigRecord(config)
        return content

    def receive(self, payload: Payload, round: int) -> None:
        if self.pending is not None:
            raise FlowerUnsupported(f"the server sent {self.name} two payloads (rounds {self.pending[1]} and "
                                    f"{round}) without a fit or evaluate between them")
        self.pending = (payload, round)

    def fit(self, round: int) -> Payload | None:
        """The client's update; under secure aggregation the client masks it on its machine and this returns
        shape-only (``meta``) tensors of its names, shapes and dtypes, the masked vector kept for
        :meth:`masked_update`."""
        self.round = round
        content = self._content(round)
        if self.link.secure:
            content["config"]["secure"] = True
        reply = self.link.call(self, "train", round, content)
        self.pending = None
        info = reply["config"]
        self.num_samples = int(info["num_samples"])
        if not info["has_update"]:
            return None
        if "masked" in reply:
            self.masked = (list(info["names"]), record_tensors(reply["masked"])["masked_update"])
            return {name: torch.empty(shape, dtype=getattr(torch, dtype), device="meta")
                    for name, dtype, shape in zip(info["names"], info["dtypes"], json.loads(info["shapes"]))}
        update = record_tensors(reply["update"])
        update.pop("num_samples")
        return update

    def masked_update(self, update: Payload, secure: Any, round: int) -> Tensor:
        names, vector = self.masked
        if list(update) != names:
            raise FlowerUnsupported(f"secure aggregation: {self.name} masked its update in the order {names}, the "
                                    f"server sums in the order {list(update)}; on Flower every client must upload "
                                    "its parameters in the same order")
        return vector

    def evaluate(self) -> dict[str, Prediction]:
        reply = self.link.call(self, "evaluate", self.round, self._content(self.round))  # after round self.round
        self.pending = None
        return _record_predictions(reply["predictions"], reply["splits"])


server_app = ServerApp()


@server_app.main()
def main(grid: Grid, context: Context) -> None:
    """Run the job named by the run config (``job-file``) and write its result (``result-file``) once complete.

    Run config: ``job-file``, ``result-file`` (absolute paths on the SuperLink's machine), ``connect-timeout``
    and ``message-timeout`` (seconds). A lost client or any other failure writes ``<result-file>.error``
    (one line) instead, and no result.
    """
    config = context.run_config
    result_file = Path(str(config["result-file"]))
    error_file = result_file.with_name(result_file.name + ".error")
    events = result_file.with_name(result_file.name + ".events")
    try:
        job = load_file(str(config["job-file"]), "job file")
        runtime.set_threads()
        runtime.set_flush_denormal()
        secure = job.get("secure")
        link = FlowerLink(grid, float(config.get("message-timeout", 300)), events, secure=secure is not None)
        proxies = link.connect(job["clients"], float(config.get("connect-timeout", 60)))
        set_rng_state(job["rng"])
        started = time.perf_counter()
        result = run_rounds(job["server"], proxies, Channel(), **job["loop"], secure=secure)
        result.extras["flower_seconds"] = time.perf_counter() - started
        result.extras["flower_wire"] = link.wire
        result.extras["flower_run_id"] = context.run_id
        _save(result, result_file)
    except BaseException as error:
        error_file.write_text(f"{type(error).__name__}: {error}\n")
        raise
