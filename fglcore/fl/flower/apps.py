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

Under secure aggregation with Flower's SecAgg+ (the default; :mod:`fglcore.fl.flower.secaggplus`) the
``train`` reply carries only the names, dtypes and shapes of the parameters: the client keeps its update, and
the four ``train`` messages of ``SecAggPlusWorkflow`` that follow (setup, share keys, collect masked vectors,
unmask) upload it quantised and masked. With ``secure-aggregation = "fglcore"`` the client masks it on its
own machine (:meth:`Client.masked_update <fglcore.fl.engine.Client.masked_update>`, fglcore's pairwise
masking) and the reply carries only ``ArrayRecord "masked"`` (one ``int64`` vector) with the names, dtypes
and shapes; the ServerApp's loop unmasks the sum as in-process.

So every message the channel records is one Flower message: a server payload becomes the ``payload`` record
of the next message to that client, an upload the ``update`` record of the ``train`` reply, tensor for
tensor under the channel's names. The channel on the ServerApp records the same ledger as in-process.

**Same numbers.** In-process, every client draws from the process's global random generators (dropout,
sampling) in the loop's order. Each message therefore carries the global random state of Python, NumPy and
torch (``ConfigRecord "rng"``, no pickle) and each reply brings it back, so the draws happen in the same
order on whichever machine: the ServerApp sends one message at a time, in :func:`run_rounds`' order, and a
run gives the in-process numbers bit for bit (same torch build and thread count). The price is that clients
train one after another, not in parallel. The **parallel** schedule (run config ``parallel = true``) sends each
round's messages to every client at once; each client then draws from its own random state (seeded
``client_seed(seed, cid)`` and kept in its state file), so the numbers equal the in-process ones only where no
client draws random numbers (e.g. dropout 0 and full-batch training), and differ otherwise. A payload reaches its client with the following ``train`` or
``evaluate`` message instead of at once; a client whose ``receive`` draws random numbers would change the
order, and the ClientApp refuses it (:class:`~fglcore.fl.flower.job.FlowerUnsupported`).

**Client side.** Each SuperNode's node config names its partition file (``partition-file``); for every
message the ClientApp loads the client from it, or from the client's state file of the current run
(``<state-dir>/<stem>.run<run id>.pt``, ``state-dir`` defaulting to the partition file's folder), runs the
call and saves the client's state again. It keeps nothing in memory between messages, so it runs the same in
Flower's default process per message and in one long-lived process per SuperNode
(:mod:`fglcore.fl.flower.worker`).

**Wire vs ledger.** :class:`FlowerLink` records, for every message, the tensor bytes (what the ledger counts:
``numel * element_size``), the bytes of its ``Array`` objects (NumPy ``.npy`` serialisation: a header of
about 128 bytes per array) and the bytes of every Flower object the message is made of (records, metadata,
the random state, evaluation predictions, which the in-process engine does not count as communication),
as :func:`flwr.supercore.inflatable.get_all_nested_objects` serialises them; HTTP framing is not included.
"""
from __future__ import annotations

import json
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
from fglcore.files import save_atomic
from fglcore.fl.channel import Channel
from fglcore.fl.checkpoint import rng_state, set_rng_state
from fglcore.fl.engine import Client, Payload, run_rounds
from fglcore.fl.flower.job import FlowerUnsupported, load_file
from fglcore.fl.flower.secaggplus import MODE as SECAGGPLUS, SecAggPlus, client_step, is_secaggplus
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


def _open(context: Context) -> tuple[dict[str, Any], Path]:
    """What the client's file holds (from its state file of this run, else its partition file: ``client``,
    ``secure``, ``rng_seed`` and, in a state file, ``rng``) and the state file's path."""
    partition, state = _files(context)
    runtime.set_threads()
    runtime.set_flush_denormal()
    source = state if state.exists() else partition
    content = load_file(source, "partition file" if source == partition else "client state file")
    return content, state


def _use_random_state(message: Message, content: Mapping[str, Any]) -> None:
    """The global random state the message carries (sequential schedule), else the client's own: the one its
    last message left, or, at its first message, its own seed (``client_seed(seed, cid)``)."""
    if "rng" in message.content:
        set_rng_state(decode_rng(message.content["rng"]))
    elif content.get("rng") is not None:
        set_rng_state(content["rng"])
    else:
        runtime.set_seed(int(content["rng_seed"]))


def _keep(content: dict[str, Any], client: Client, state: Path) -> None:
    save_atomic({**content, "client": client, "rng": rng_state()}, state)


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
    client = _open(context)[0]["client"]
    return Message(RecordDict({"client": ConfigRecord({"cid": int(client.cid), "name": client.name,
                                                       "num_samples": int(client.num_samples)})}),
                   reply_to=message)


@client_app.train()
def train(message: Message, context: Context) -> Message:
    content_in, state = _open(context)
    client, secure = content_in["client"], content_in.get("secure")
    if is_secaggplus(message):  # one of SecAgg+'s four messages (fglcore.fl.flower.secaggplus)
        reply, used = client_step(message, context, content_in.get("secagg_update"), int(client.num_samples),
                                  int(content_in["rng_seed"]))
        if used:  # the kept update has been uploaded, masked
            save_atomic({**content_in, "secagg_update": None}, state)
        return reply
    _use_random_state(message, content_in)
    _take_payload(client, message)
    round = int(message.content["config"]["round"])
    update = client.fit(round)
    info: dict[str, Any] = {"num_samples": int(client.num_samples), "has_update": update is not None}
    content: dict[str, Any] = {}
    mode = str(message.content["config"].get("secagg", "fglcore"))
    if update is not None and message.content["config"].get("secure", False) and mode == SECAGGPLUS:
        content_in["secagg_update"] = update  # uploaded by SecAgg+'s "collect masked vectors" message
        info["secaggplus"] = True
        info["names"] = list(update)
        info["dtypes"] = [str(v.dtype).removeprefix("torch.") for v in update.values()]
        info["shapes"] = json.dumps([list(v.shape) for v in update.values()])
    elif update is not None and message.content["config"].get("secure", False):
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
    _keep(content_in, client, state)
    return reply


@client_app.evaluate()
def evaluate(message: Message, context: Context) -> Message:
    content_in, state = _open(context)
    client = content_in["client"]
    _use_random_state(message, content_in)
    _take_payload(client, message)
    arrays, info = _predictions_record(client.evaluate())
    reply = _reply(message, {"predictions": arrays, "splits": info})
    _keep(content_in, client, state)
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

    def __init__(self, grid: Grid, message_timeout: float, events: Path | None = None, secure: bool = False,
                 parallel: bool = False, secagg: str = "fglcore"):
        self.grid = grid
        self.secure = secure
        self.secagg = secagg
        self.errors: dict[int, list[str]] = {}
        self.parallel = parallel
        self.proxies: list[RemoteClient] = []
        self.batch: dict[tuple[str, int], dict[int, RecordDict]] = {}
        self.message_timeout = float(message_timeout)
        self.poll = 0.1
        self.events = events
        self.wire: list[dict[str, Any]] = []

    def _log(self, **event: Any) -> None:
        if self.events is not None:
            with open(self.events, "a") as handle:
                handle.write(json.dumps({"time": time.time(), **event}) + "\n")

    def exchange(self, messages: list[Message]) -> dict[str, Message]:
        """Push ``messages``; pull their replies until all arrived or :attr:`message_timeout` passed; return
        the replies by the id of the message each answers (a message without a reply is missing).

        ``Grid.send_and_receive`` does the same but looks for replies every 3 s; this looks every
        :attr:`poll` seconds (a local request to the SuperLink), which saves up to 3 s per message."""
        ids = set(self.grid.push_messages(messages))
        deadline = time.monotonic() + self.message_timeout
        replies: dict[str, Message] = {}
        while ids:
            for reply in self.grid.pull_messages(ids):
                replies[reply.metadata.reply_to_message_id] = reply
                ids.discard(reply.metadata.reply_to_message_id)
            if not ids or time.monotonic() >= deadline:
                break
            time.sleep(self.poll)
        return replies

    def exchange_logged(self, messages: list[Message], kind: str, round: int) -> list[Message]:
        """Exchange ``messages`` (built by someone else, e.g. Flower's SecAgg+ workflow), account for their
        bytes under ``kind`` and return the replies that arrived; errors are kept in :attr:`errors`."""
        names = {proxy.node_id: proxy.name for proxy in self.proxies}
        sizes = [wire_bytes(m) for m in messages]
        started = time.perf_counter()
        replies = self.exchange(messages)
        seconds = time.perf_counter() - started
        arrived = []
        for message, sent in zip(messages, sizes):
            reply = replies.get(message.metadata.message_id)
            name = names.get(message.metadata.dst_node_id, str(message.metadata.dst_node_id))
            if reply is None:
                self._log(event="lost", client=name, kind=kind, round=round)
                continue
            if reply.has_error():
                self.errors.setdefault(round, []).append(f"{name}: {reply.error.reason}")
                self._log(event="error", client=name, kind=kind, round=round, error=reply.error.reason)
            else:
                upload = 0
                if kind == "secaggplus.collect_masked_vectors":  # the masked vector: its arrays' data bytes
                    from flwr.common import bytes_to_ndarray
                    from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key
                    upload = sum(bytes_to_ndarray(b).nbytes for b in
                                 reply.content.config_records[RECORD_KEY_CONFIGS][Key.MASKED_PARAMETERS])
                self.wire.append({"round": round, "client": name, "kind": kind, "seconds": seconds,
                                  "download_tensor_bytes": 0, "download_array_bytes": 0, "download_wire_bytes": sent,
                                  "upload_tensor_bytes": upload, "upload_array_bytes": 0,
                                  "upload_wire_bytes": wire_bytes(reply)})
                self._log(event="reply", client=name, kind=kind, round=round, seconds=seconds)
            arrived.append(reply)
        return arrived

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
        answered = {reply.metadata.src_node_id: reply for reply in self.exchange(requests).values()}
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
        self.proxies = proxies
        return proxies

    def reply_for(self, client: "RemoteClient", kind: str, round: int) -> RecordDict:
        """The reply of ``client`` to its ``kind`` message of ``round``.

        Sequential schedule: that one message, carrying the global random state. Parallel schedule: the first
        client asked sends this ``kind`` and round to every client at once and keeps the others' replies for
        them (the round loop asks every client in turn)."""
        if not self.parallel:
            return self.call_many([(client, kind, round)])[0]
        if (kind, round) not in self.batch:
            replies = self.call_many([(proxy, kind, round) for proxy in self.proxies])
            self.batch = {(kind, round): {proxy.cid: reply for proxy, reply in zip(self.proxies, replies)}}
        return self.batch[(kind, round)].pop(client.cid)

    def call_many(self, requests: Sequence[tuple["RemoteClient", str, int]]) -> list[RecordDict]:
        """Send each ``(client, kind, round)`` message at once and return the replies' contents in order."""
        messages = []
        for client, kind, round in requests:
            content = client.request(kind, round)
            if not self.parallel:
                content["rng"] = encode_rng(rng_state())
            messages.append(Message(RecordDict(content), dst_node_id=client.node_id, message_type=kind))
        sizes = [(_record_sizes(m.content), wire_bytes(m)) for m in messages]
        started = time.perf_counter()
        replies = self.exchange(messages)
        seconds = time.perf_counter() - started
        contents = []
        for (client, kind, round), message, ((sent_tensor, sent_array), sent_wire) in zip(requests, messages, sizes):
            reply = replies.get(message.metadata.message_id)
            if reply is None:
                self._log(event="lost", client=client.name, kind=kind, round=round)
                raise ClientLost(f"{client.name} (SuperNode {client.node_id}) sent no reply to its {kind} message "
                                 f"of round {round} within {self.message_timeout:g} s: the client was lost and the "
                                 "run is incomplete")
            if reply.has_error():
                self._log(event="error", client=client.name, kind=kind, round=round, error=reply.error.reason)
                unavailable = reply.error.code in (ErrorCode.NODE_UNAVAILABLE, ErrorCode.MESSAGE_UNAVAILABLE,
                                                   ErrorCode.REPLY_MESSAGE_UNAVAILABLE)
                raise (ClientLost if unavailable else ClientFailed)(
                    f"{client.name} (SuperNode {client.node_id}) answered its {kind} message of round {round} with "
                    f"Flower error {reply.error.code}: {reply.error.reason}"
                    + ("; the client was lost and the run is incomplete" if unavailable else ""))
            if not self.parallel:
                set_rng_state(decode_rng(reply.content["rng"]))
            got_tensor, got_array = _record_sizes(reply.content)
            if kind == "evaluate":
                got_array = sum(len(a.data) for a in reply.content["predictions"].values())
            self.wire.append({"round": round, "client": client.name, "kind": kind, "seconds": seconds,
                              "download_tensor_bytes": sent_tensor, "download_array_bytes": sent_array,
                              "download_wire_bytes": sent_wire, "upload_tensor_bytes": got_tensor,
                              "upload_array_bytes": got_array, "upload_wire_bytes": wire_bytes(reply)})
            self._log(event="reply", client=client.name, kind=kind, round=round, seconds=seconds)
            contents.append(reply.content)
        return contents


class RemoteClient(Client):
    """Stands in for a client on the ServerApp: its calls become messages to the client's SuperNode."""

    def __init__(self, link: FlowerLink, node_id: int, cid: int, num_samples: int):
        super().__init__(cid, num_samples)
        self.link = link
        self.node_id = node_id
        self.round = 0  # the last round this client trained (what its evaluation follows)
        self.secagg_round = 0  # the last round whose update this client keeps for SecAgg+
        self.pending: tuple[Payload, int] | None = None

    def request(self, kind: str, round: int) -> dict[str, Any]:
        """The content of this client's ``kind`` message of ``round``: the pending payload, if any, goes with it."""
        config: dict[str, Any] = {"round": round}
        content: dict[str, Any] = {}
        if self.pending is not None:
            payload, payload_round = self.pending
            content["payload"] = tensor_record(payload)
            config["payload_round"] = payload_round
            self.pending = None
        if kind == "train" and self.link.secure:
            config["secure"] = True
            config["secagg"] = self.link.secagg
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
        reply = self.link.reply_for(self, "train", round)
        info = reply["config"]
        self.num_samples = int(info["num_samples"])
        if not info["has_update"]:
            return None
        if info.get("secaggplus", False):
            self.secagg_round = round
            self.masked = (list(info["names"]), None)
            return {name: torch.empty(shape, dtype=getattr(torch, dtype), device="meta")
                    for name, dtype, shape in zip(info["names"], info["dtypes"], json.loads(info["shapes"]))}
        if "masked" in reply:
            self.masked = (list(info["names"]), record_tensors(reply["masked"])["masked_update"])
            return {name: torch.empty(shape, dtype=getattr(torch, dtype), device="meta")
                    for name, dtype, shape in zip(info["names"], info["dtypes"], json.loads(info["shapes"]))}
        update = record_tensors(reply["update"])
        update.pop("num_samples")
        return update

    def masked_update(self, update: Payload, secure: Any, round: int) -> Tensor:
        names, vector = self.masked
        if isinstance(secure, SecAggPlus):  # the first client asked runs SecAgg+ for every client of the round
            if list(update) != names:
                raise FlowerUnsupported(f"secure aggregation: {self.name} uploads its parameters in the order "
                                        f"{names}, the server sums in the order {list(update)}; SecAgg+ sums "
                                        "arrays position by position, so every client must use the same order")
            return secure.masked_vector(self, round)
        if list(update) != names:
            raise FlowerUnsupported(f"secure aggregation: {self.name} masked its update in the order {names}, the "
                                    f"server sums in the order {list(update)}; on Flower every client must upload "
                                    "its parameters in the same order")
        return vector

    def evaluate(self) -> dict[str, Prediction]:
        reply = self.link.reply_for(self, "evaluate", self.round)  # after round self.round
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
        secagg = str(config.get("secure-aggregation", SECAGGPLUS))
        if secagg not in (SECAGGPLUS, "fglcore"):
            raise ValueError(f"run config secure-aggregation: {secagg!r} is not one of 'secaggplus' (Flower's "
                             "SecAgg+), 'fglcore' (fglcore's masking on the SuperNodes)")
        link = FlowerLink(grid, float(config.get("message-timeout", 300)), events, secure=secure is not None,
                          parallel=bool(config.get("parallel", False)), secagg=secagg)
        proxies = link.connect(job["clients"], float(config.get("connect-timeout", 60)))
        if secure is not None and secagg == SECAGGPLUS:
            secure = SecAggPlus(link, {key.removeprefix("secaggplus-").replace("-", "_"): config[key]
                                       for key in config if str(key).startswith("secaggplus-")})
        set_rng_state(job["rng"])
        started = time.perf_counter()
        result = run_rounds(job["server"], proxies, Channel(), **job["loop"], secure=secure)
        if isinstance(secure, SecAggPlus):
            result.extras["flower_secaggplus"] = secure.means
        result.extras["flower_seconds"] = time.perf_counter() - started
        result.extras["flower_wire"] = link.wire
        result.extras["flower_run_id"] = context.run_id
        save_atomic(result, result_file)
    except BaseException as error:
        error_file.write_text(f"{type(error).__name__}: {error}\n")
        raise
