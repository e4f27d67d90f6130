"""fglcore's ClientApp and ServerApp on Flower's simulation engine (``flwr.simulation.run_simulation``).

The simulation engine runs the ServerApp in a thread of this process and the ClientApps of many virtual
SuperNodes in a pool of long-lived Ray actors, all on one machine: no SuperLink, SuperNode or app process is
started, and no message crosses a socket (Flower's in-memory grid). It needs Ray (``pip install
"flwr[simulation]"``, which pins ``ray``); the deployment (:mod:`fglcore.fl.flower.deploy`) does not.

The apps are the deployment's (:mod:`fglcore.fl.flower.apps`), wrapped for what the engine gives them: a
virtual SuperNode's node config holds only ``partition-id`` and ``num-partitions``, so the ClientApp maps
partition ``i`` to the ``i``-th client's partition file of the job (by client id), and the run config is
empty, so the ServerApp is handed the job file, result file and settings here. Messages, records, the random
state each carries, SecAgg+ and the ledger are the deployment's, so the numbers are the in-process ones in the
same cases (sequential schedule: bit for bit).
"""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping

import torch

from fglcore.config import ExperimentConfig
from fglcore.fl.engine import RunResult
from fglcore.fl.flower.job import Job, prepare_job


def simulation_apps(job: Job, result_file: str | os.PathLike[str], *, message_timeout: float = 300.0,
                    parallel: bool = False, secure_aggregation: str = "secaggplus") -> tuple[Any, Any]:
    """The ``ServerApp`` and ``ClientApp`` that run ``job`` on the simulation engine (module docstring)."""
    from flwr.clientapp import ClientApp
    from flwr.serverapp import ServerApp

    from fglcore.fl.flower import apps
    from fglcore.fl.flower.secaggplus import DEFAULTS

    files = [str(job.partition_files[cid]) for cid in sorted(job.partition_files)]
    run_config = {"job-file": str(job.server_file), "result-file": str(Path(result_file).resolve()),
                  "connect-timeout": 60.0, "message-timeout": float(message_timeout), "parallel": bool(parallel),
                  "secure-aggregation": secure_aggregation,
                  **{f"secaggplus-{k.replace('_', '-')}": v for k, v in DEFAULTS.items()}}

    def with_file(context: Any) -> Any:
        partition = int(context.node_config["partition-id"])
        context.node_config = {**context.node_config, apps.PARTITION_KEY: files[partition]}
        return context

    client_app = ClientApp()
    client_app.query("describe")(lambda message, context: apps.describe(message, with_file(context)))
    client_app.train()(lambda message, context: apps.train(message, with_file(context)))
    client_app.evaluate()(lambda message, context: apps.evaluate(message, with_file(context)))

    server_app = ServerApp()

    @server_app.main()
    def main(grid: Any, context: Any) -> None:
        context.run_config = dict(run_config)
        apps.main(grid, context)

    return server_app, client_app


def run_in_simulation(config: ExperimentConfig | Mapping[str, Any], folder: str | os.PathLike[str] | None = None,
                      *, num_cpus: int | None = None, message_timeout: float = 300.0, parallel: bool = False,
                      secure_aggregation: str = "secaggplus") -> tuple[RunResult, Job, float]:
    """Run ``config`` on Flower's simulation engine, one virtual SuperNode per client; return the result, the
    job and the seconds the simulation took. ``num_cpus``: Ray's CPUs (default: all), one per ClientApp actor."""
    from flwr.simulation import run_simulation

    folder = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="fgl-flower-sim-"))
    job = prepare_job(config, folder / "job")
    result_file = (folder / "result.pt").resolve()
    error_file = result_file.with_name(result_file.name + ".error")
    for stale in (result_file, error_file):
        stale.unlink(missing_ok=True)
    server_app, client_app = simulation_apps(job, result_file, message_timeout=message_timeout, parallel=parallel,
                                             secure_aggregation=secure_aggregation)
    init_args: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
    if num_cpus is not None:
        init_args["num_cpus"] = int(num_cpus)
    started = time.perf_counter()
    run_simulation(server_app, client_app, num_supernodes=len(job.partition_files),
                   backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0}, "init_args": init_args})
    seconds = time.perf_counter() - started
    if error_file.exists():
        raise RuntimeError(f"the Flower simulation failed: {error_file.read_text().strip()}")
    if not result_file.exists():
        raise RuntimeError("the Flower simulation ended without a result; see its log")
    return torch.load(result_file, weights_only=False), job, seconds
