"""A Flower deployment on one machine: a SuperLink and one SuperNode per client, as separate OS processes.

:class:`LocalDeployment` starts Flower's own executables on 127.0.0.1 in insecure mode (``flower-superlink``,
``flower-supernode``, each SuperNode with ``--node-config partition-file=...`` naming its client's file),
waits for each to listen (bounded by ``start_timeout``; a process that exits or does not listen in time is a
:class:`DeploymentError` quoting its log), runs the fglcore Flower app with ``flwr run`` (bounded by
``run_timeout``) and stops every process it started, in its own process group, on exit and on error (SIGTERM,
then SIGKILL after a grace period). Each process gets its own ``FLWR_HOME`` inside the deployment folder, where
Flower installs the app; runtime dependency installation is disabled (the app's dependency is this
environment's fglcore).

:func:`run_on_flower` is the whole round trip for one configuration: :func:`~fglcore.fl.flower.job.prepare_job`,
a deployment, the run, and a :class:`FlowerRun` with the :class:`~fglcore.fl.engine.RunResult` (the ServerApp's
ledger included) and the bytes each Flower message carried (:meth:`FlowerRun.wire_vs_ledger`).

Across machines the same pieces run apart: see the README's "Run across machines".
"""
from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import pandas as pd
import torch

import fglcore
from fglcore.config import ExperimentConfig
from fglcore.fl.engine import RunResult
from fglcore.fl.flower.apps import ClientLost
from fglcore.fl.flower.job import Job, prepare_job
from fglcore.fl.flower.worker import READY

APP_NAME = "fglcore-flower"
APP_PYPROJECT = """[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "{name}"
version = "1.0.0"
description = "fglcore's Client and Server objects run as a Flower ServerApp and ClientApp"
license = "MIT"
dependencies = []

[tool.hatch.build.targets.wheel]
packages = ["."]

[tool.flwr.app]
publisher = "fglcore"

[tool.flwr.app.components]
serverapp = "fglcore.fl.flower.apps:server_app"
clientapp = "fglcore.fl.flower.apps:client_app"

[tool.flwr.app.config]
job-file = ""
result-file = ""
connect-timeout = 60.0
message-timeout = 300.0
parallel = false
secure-aggregation = "secaggplus"
secaggplus-clipping-range = 8.0
secaggplus-quantization-range = 4194304
secaggplus-modulus-range = 4294967296
secaggplus-num-shares = 1.0
secaggplus-reconstruction-threshold = 0.5
"""
APP_README = ("The fglcore Flower app: its components live in the installed fglcore package "
              "(fglcore.fl.flower.apps); this folder only names them for `flwr run`.\n")


class DeploymentError(RuntimeError):
    """A Flower process failed to start, a run did not finish in time, or it ended without a result."""


def write_app(folder: str | os.PathLike[str]) -> Path:
    """The Flower app project ``flwr run`` ships (a ``pyproject.toml`` naming fglcore's apps); returns its folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pyproject.toml").write_text(APP_PYPROJECT.format(name=APP_NAME))
    (folder / "README.md").write_text(APP_README)
    return folder


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _tail(path: Path, lines: int = 12) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(text[-lines:])


@dataclass
class _Process:
    name: str
    popen: subprocess.Popen
    log: Path
    port: int


class LocalDeployment:
    """SuperLink + one SuperNode per partition file on 127.0.0.1 (context manager; see the module docstring).

    Args:
        folder: where logs, ``FLWR_HOME`` folders, the app and client state files go.
        partition_files: client id -> partition file (:func:`~fglcore.fl.flower.job.prepare_job`).
        start_timeout: seconds each process may take to listen.
        grace: seconds between SIGTERM and SIGKILL when stopping.
        warm: one long-lived ClientApp process per SuperNode, serving every message of every run (the
            SuperNode in ``--isolation process`` and :mod:`fglcore.fl.flower.worker` beside it); ``False``:
            Flower's default, a fresh ``flwr-clientapp`` process per message (``--isolation subprocess``).
            A worker stays resident with torch and fglcore loaded (about 410 MB each on CPU).
        early_run: :meth:`start` returns once the SuperLink listens, and :meth:`run` starts ``flwr run`` (whose
            ServerApp waits up to ``connect_timeout`` for the SuperNodes) while the SuperNodes and workers are
            still starting, then waits for them as :meth:`start` would (:meth:`wait_started`): the start-up of
            the ``flwr`` command and the ServerApp overlaps theirs.
    """

    worker_command = [sys.executable, "-m", "fglcore.fl.flower.worker"]  # + its arguments

    def __init__(self, folder: str | os.PathLike[str], partition_files: Mapping[int, str | os.PathLike[str]], *,
                 start_timeout: float = 60.0, grace: float = 5.0, warm: bool = True, early_run: bool = False):
        self.folder = Path(folder).resolve()
        self.partition_files = {int(k): Path(v).resolve() for k, v in partition_files.items()}
        for path in self.partition_files.values():
            if '"' in str(path) or " " in str(path):
                raise DeploymentError(f"partition file path {str(path)!r}: Flower's --node-config cannot hold quotes "
                                      "or spaces; use another folder")
        self.start_timeout = float(start_timeout)
        self.grace = float(grace)
        self.processes: list[_Process] = []
        self.supernodes: dict[int, _Process] = {}
        self.workers: dict[int, _Process] = {}
        self.warm = bool(warm)
        self.early_run = bool(early_run)
        self.starting: tuple[float, list[_Process]] | None = None
        self.superlink: _Process | None = None

    # -- environment and processes ---------------------------------------------------------------

    def env(self, home: str) -> dict[str, str]:
        """The environment of a Flower process: this interpreter's ``bin`` first on ``PATH`` (Flower starts
        ``flower-superexec``, ``flwr-serverapp`` and ``flwr-clientapp`` by name), this fglcore first on
        ``PYTHONPATH``, its own ``FLWR_HOME``, and a short SuperExec poll interval."""
        env = dict(os.environ)
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        root = str(Path(fglcore.__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join([root, *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
        env["FLWR_HOME"] = str(self.folder / home)
        env.setdefault("FLWR_SUPEREXEC_TASK_POLL_INTERVAL", "0.1")
        env.setdefault("FLWR_TELEMETRY_ENABLED", "0")
        (self.folder / home).mkdir(parents=True, exist_ok=True)
        return env

    def _executable(self, name: str) -> str:
        path = Path(sys.executable).parent / name
        if not path.exists():
            raise DeploymentError(f"{name} is not installed beside {sys.executable}; install Flower with "
                                  "pip install 'fglcore[flower]' (flwr)")
        return str(path)

    def _launch(self, name: str, command: list[str], home: str, port: int) -> _Process:
        log = self.folder / f"{name}.log"
        with open(log, "wb") as handle:
            popen = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, env=self.env(home),
                                     cwd=self.folder, start_new_session=True)
        process = _Process(name, popen, log, port)
        self.processes.append(process)
        return process

    def _wait(self, process: _Process, deadline: float) -> None:
        """Until ``process`` listens on its port (a ClientApp worker: says it is ready); a clear error if it
        exits or ``deadline`` passes first."""
        name, popen, log = process.name, process.popen, process.log
        ready = (lambda: _listening(process.port)) if process.port else (lambda: READY in _tail(log, 50))
        while not ready():
            if popen.poll() is not None:
                raise DeploymentError(f"{name} exited with status {popen.returncode} while starting:\n{_tail(log)}")
            if time.monotonic() > deadline:
                what = f"listen on 127.0.0.1:{process.port}" if process.port else f"say {READY!r}"
                raise DeploymentError(f"{name} did not {what} within {self.start_timeout:g} s:\n{_tail(log)}")
            time.sleep(0.1)

    def _check_alive(self, processes: list[_Process]) -> None:
        time.sleep(0.3)  # a process that found its port taken by another exits right after
        for process in processes:
            if process.popen.poll() is not None:
                raise DeploymentError(f"{process.name} exited with status {process.popen.returncode} while "
                                      f"starting:\n{_tail(process.log)}")

    def start(self) -> "LocalDeployment":
        """Start the SuperLink; then every SuperNode (and, ``warm``, its ClientApp worker) at once, and wait
        until each listens (a worker: is ready), all within ``start_timeout`` seconds (``early_run``: only
        the SuperLink; :meth:`run` waits for the others)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            port = free_port()
            self.superlink = self._launch("superlink", [
                self._executable("flower-superlink"), "--insecure", "--host", "127.0.0.1", "--port", str(port),
                "--disable-runtime-dependency-installation"], "home-superlink", port)
            self._wait(self.superlink, time.monotonic() + self.start_timeout)
            self._check_alive([self.superlink])
            ports = {port}
            for cid, partition in sorted(self.partition_files.items()):
                node_port = free_port()
                while node_port in ports:  # none of these listens yet: the OS may offer one twice
                    node_port = free_port()
                ports.add(node_port)
                self.supernodes[cid] = self._launch(f"supernode-client{cid}", [
                    self._executable("flower-supernode"), "--insecure", "--superlink", f"127.0.0.1:{port}",
                    "--host", "127.0.0.1", "--port", str(node_port),
                    *(["--isolation", "process"] if self.warm else []),
                    "--node-config", f'partition-file="{partition}"'], f"home-client{cid}", node_port)
                if self.warm:
                    self.workers[cid] = self._launch(f"worker-client{cid}", [
                        *self.worker_command, "--insecure",
                        "--runtime-api-address", f"127.0.0.1:{node_port}",
                        "--parent-pid", str(self.supernodes[cid].popen.pid)], f"home-client{cid}", 0)
            self.starting = (time.monotonic() + self.start_timeout, self.processes[1:])
            if not self.early_run:
                self.wait_started()
        except BaseException:
            self.stop()
            raise
        return self

    def wait_started(self) -> None:
        """Wait until every SuperNode listens and every ClientApp worker is ready (within ``start_timeout``
        of :meth:`start`); a :class:`DeploymentError` quoting its log if one exits or does not in time."""
        if self.starting is None:
            return
        deadline, processes = self.starting
        try:
            for process in processes:
                self._wait(process, deadline)
            self._check_alive(processes)
        except BaseException:
            self.stop()
            raise
        self.starting = None

    def _signal(self, process: _Process, sig: int) -> None:
        try:
            os.killpg(process.popen.pid, sig)  # its own session: Flower's SuperExec and app processes too
        except ProcessLookupError:
            pass

    def kill_supernode(self, cid: int) -> None:
        """Kill client ``cid``'s SuperNode, its children and its ClientApp worker at once (SIGKILL), as a
        crashed machine would."""
        for process in (self.supernodes[cid], *([self.workers[cid]] if cid in self.workers else [])):
            self._signal(process, signal.SIGKILL)
            process.popen.wait(timeout=self.grace)

    def stop(self) -> None:
        """Stop every process this deployment started (SIGTERM, then SIGKILL after ``grace`` seconds)."""
        for process in reversed(self.processes):
            if process.popen.poll() is None:
                self._signal(process, signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        for process in reversed(self.processes):
            try:
                process.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            self._signal(process, signal.SIGKILL)  # the group: children that outlived their parent too
            try:
                process.popen.wait(timeout=self.grace)
            except subprocess.TimeoutExpired:
                pass
        self.processes.clear()
        self.starting = None

    def __enter__(self) -> "LocalDeployment":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- runs ------------------------------------------------------------------------------------

    def run(self, job: Job, *, result_file: str | os.PathLike[str] | None = None, run_timeout: float = 600.0,
            connect_timeout: float = 60.0, message_timeout: float = 300.0, parallel: bool = False,
            secure_aggregation: str = "secaggplus", secaggplus: Mapping[str, float] | None = None) -> RunResult:
        """``flwr run`` the fglcore app on ``job``; return the ServerApp's :class:`RunResult`.

        ``parallel``: each round's messages go to every client at once and each client draws from its own
        random state (seeded ``client_seed(seed, cid)``), instead of one message at a time carrying the
        global random state (the default, which gives the in-process numbers bit for bit; see
        :mod:`fglcore.fl.flower.apps`).

        ``secure_aggregation`` (for a job written with ``secure_aggregation`` true): ``"secaggplus"``, Flower's
        SecAgg+ (:mod:`fglcore.fl.flower.secaggplus`; the weighted mean to its quantisation bound), or
        ``"fglcore"``, fglcore's pairwise masking on the SuperNodes (the in-process numbers bit for bit).
        ``secaggplus``: ``SecAggPlusWorkflow`` settings (``clipping_range``, ``quantization_range``,
        ``modulus_range``, ``num_shares``, ``reconstruction_threshold``; defaults
        :data:`fglcore.fl.flower.secaggplus.DEFAULTS`).

        Raises :class:`~fglcore.fl.flower.apps.ClientLost` (naming the client, its SuperNode, the message and
        round) when a client was lost, :class:`DeploymentError` when the run fails or does not finish within ``run_timeout`` seconds;
        either way no result file is left.
        """
        if self.superlink is None:
            raise DeploymentError("the deployment is not started; use it as a context manager or call start()")
        if secure_aggregation not in ("secaggplus", "fglcore"):
            raise ValueError(f"secure_aggregation: {secure_aggregation!r} is not one of 'secaggplus' (Flower's "
                             "SecAgg+), 'fglcore' (fglcore's masking on the SuperNodes)")
        unknown = sorted(set(secaggplus or {}) - {"clipping_range", "quantization_range", "modulus_range",
                                                  "num_shares", "reconstruction_threshold"})
        if unknown:
            raise ValueError(f"secaggplus: unknown settings {unknown}; accepted: clipping_range, "
                             "quantization_range, modulus_range, num_shares, reconstruction_threshold")
        result_file = Path(result_file or self.folder / "result.pt").resolve()
        error_file = result_file.with_name(result_file.name + ".error")
        for stale in (result_file, error_file):
            stale.unlink(missing_ok=True)
        home = self.folder / "home-cli"
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(
            f'[superlink]\ndefault = "local"\n\n[superlink.local]\naddress = "127.0.0.1:{self.superlink.port}"\n'
            "insecure = true\n")
        app = write_app(self.folder / "app")
        run_config = " ".join([f'job-file="{job.server_file}"', f'result-file="{result_file}"',
                               f"connect-timeout={float(connect_timeout)}",
                               f"message-timeout={float(message_timeout)}",
                               f"parallel={'true' if parallel else 'false'}",
                               f'secure-aggregation="{secure_aggregation}"',
                               *(f"secaggplus-{k.replace('_', '-')}={v!r}" for k, v in (secaggplus or {}).items())])
        command = [self._executable("flwr"), "run", str(app), "local", "--stream", "--run-config", run_config]
        log = self.folder / "flwr-run.log"
        with open(log, "wb") as handle:
            popen = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, env=self.env("home-cli"),
                                     cwd=self.folder, start_new_session=True)
            cli = _Process("flwr run", popen, log, 0)
            try:
                self.wait_started()
            except BaseException:
                self._signal(cli, signal.SIGKILL)
                popen.wait()
                raise
            try:
                popen.wait(timeout=run_timeout)
            except subprocess.TimeoutExpired:
                self._signal(cli, signal.SIGKILL)
                popen.wait()
                raise DeploymentError(f"the Flower run did not finish within {run_timeout:g} s "
                                      f"(command: {shlex.join(command)}):\n{_tail(log)}") from None
        # The ServerApp writes its result (or error) before it exits; --stream may end first.
        deadline = time.monotonic() + 10
        while not result_file.exists() and not error_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        if error_file.exists():
            text = error_file.read_text().strip()
            if text.startswith(f"{ClientLost.__name__}: "):
                raise ClientLost(text.removeprefix(f"{ClientLost.__name__}: "))
            raise DeploymentError(f"the Flower run failed: {text}")
        if not result_file.exists():
            raise DeploymentError(f"the Flower run ended (status {popen.returncode}) without a result:\n{_tail(log)}")
        return torch.load(result_file, weights_only=False)


@dataclass
class FlowerRun:
    """What :func:`run_on_flower` returns: the result, the job and the wall time of the run on Flower."""

    result: RunResult
    job: Job
    seconds: float
    folder: Path

    def wire(self) -> pd.DataFrame:
        """One row per Flower message exchange: round, client, kind, seconds, tensor / array / wire bytes both ways."""
        return pd.DataFrame(self.result.extras.get("flower_wire", []))

    def wire_vs_ledger(self) -> pd.DataFrame:
        """Per client and round: the ledger's bytes next to the bytes Flower carried (see
        :mod:`fglcore.fl.flower.apps` for what each column counts).

        ``ledger_*``: the channel's record (tensor data); ``tensor_*``: tensor data in the Flower messages'
        payload and update records (equal to the ledger); ``array_*``: the same as NumPy ``.npy`` arrays
        (a header per array); ``wire_*``: every object of every message (records, metadata, the random state,
        evaluation predictions and the messages that carry no payload); ``evaluation_upload``: the part of
        ``wire_upload`` that answers ``evaluate`` messages. Summed over the run: a payload of ledger round
        ``r + 1`` travels with the next message after round ``r``."""
        ledger = self.result.ledger.to_frame()
        rows = []
        wire = self.wire()
        for client in sorted(set(wire["client"])) if len(wire) else []:
            mine_down = ledger[ledger.receiver == client]
            mine_up = ledger[ledger.sender == client]
            sent = wire[wire.client == client]
            rows.append({
                "client": client,
                "messages": len(sent),
                "ledger_download": int(mine_down.nbytes.sum()),
                "tensor_download": int(sent.download_tensor_bytes.sum()),
                "array_download": int(sent.download_array_bytes.sum()),
                "wire_download": int(sent.download_wire_bytes.sum()),
                "ledger_upload": int(mine_up.nbytes.sum()),
                "tensor_upload": int(sent.upload_tensor_bytes.sum()),
                "array_upload": int(sent[sent.kind != "evaluate"].upload_array_bytes.sum()),
                "wire_upload": int(sent.upload_wire_bytes.sum()),
                "evaluation_upload": int(sent[sent.kind == "evaluate"].upload_wire_bytes.sum()),
            })
        return pd.DataFrame(rows)


def run_on_flower(config: ExperimentConfig | Mapping[str, Any], folder: str | os.PathLike[str] | None = None, *,
                  start_timeout: float = 60.0, run_timeout: float = 600.0, connect_timeout: float = 60.0,
                  message_timeout: float = 300.0, parallel: bool = False, warm: bool = True,
                  secure_aggregation: str = "secaggplus", secaggplus: Mapping[str, float] | None = None) -> FlowerRun:
    """Run ``config`` on a local Flower deployment (SuperLink + one SuperNode per client) and return its result.

    ``folder`` (default: a new temporary folder) receives the job and partition files, logs and the result;
    ``parallel``, ``secure_aggregation`` and ``secaggplus`` as in :meth:`LocalDeployment.run`, ``warm`` as in
    :class:`LocalDeployment`.
    """
    folder = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="fgl-flower-"))
    job = prepare_job(config, folder / "job")
    started = time.perf_counter()
    with LocalDeployment(folder / "deployment", job.partition_files, start_timeout=start_timeout,
                         warm=warm, early_run=True) as deployment:
        result = deployment.run(job, result_file=folder / "result.pt", run_timeout=run_timeout,
                                connect_timeout=connect_timeout, message_timeout=message_timeout,
                                parallel=parallel, secure_aggregation=secure_aggregation,
                                secaggplus=secaggplus)
    return FlowerRun(result, job, time.perf_counter() - started, folder)
