"""One long-lived ClientApp process per SuperNode: Flower's ``process`` isolation mode, without a process per message.

By default a Flower 1.42 SuperNode (``--isolation subprocess``) starts ``flower-superexec``, which starts a
fresh ``flwr-clientapp`` process for every message; that process imports flwr, torch and fglcore (about 3.5 s
of imports on this project's machine, more under load), serves the one message and exits
(``flwr/supernode/runtime/run_clientapp.py`` ends in ``flwr_exit``). Flower's own prestarted "warm" workers
(``flwr/supercore/model_worker.py``, Kubernetes only) are single-use too, and 1.42 offers none for ClientApps.

With ``flower-supernode --isolation process`` the SuperNode starts no SuperExec: whatever connects to its
Runtime API (``--host``/``--port``) and asks for a task runs it. :func:`serve` is such a process: it imports
the fglcore ClientApp once, then, in a loop, acquires one ClientApp task at a time from its SuperNode
(``AcquireTask``, as ``flower-superexec`` does) and runs it exactly as ``flwr-clientapp`` does, with
Flower's own functions: pull the message, context, run and FAB (``pull_task_input``), install the FAB, load
the ``ClientApp`` named by its ``pyproject.toml``, call it, push the reply (``push_message``) and the context
(``push_task_output``), sending task heartbeats meanwhile. Only the process exit differs: it goes on to the
next task. Runtime dependency installation is not offered (the app's dependency is this environment's
fglcore).

One process serving many messages is safe for fglcore's ClientApp because it keeps no state in memory
between messages: every message loads its client from the partition or state file and saves it again, and
sets the global random state the message carries (:mod:`fglcore.fl.flower.apps`), so the numbers are those
of a fresh process (checked by ``tests/test_flower.py``).

Run it beside a SuperNode started with ``--isolation process``::

    python -m fglcore.fl.flower.worker --runtime-api-address 127.0.0.1:9094 --insecure [--parent-pid PID]

(:class:`~fglcore.fl.flower.deploy.LocalDeployment` does so with ``warm=True``, its default).
"""
from __future__ import annotations

import argparse
import sys
import time
from logging import DEBUG, ERROR, INFO

READY = "fglcore ClientApp worker ready"


def _connect(address: str, insecure: bool, certificates: bytes | None, interceptors: list):
    from flwr.supercore.retry import make_simple_http_retry_invoker
    from flwr.supercore.runtime import RuntimeHttpClient

    return RuntimeHttpClient.from_server_address(server_address=address, insecure=insecure,
                                                 root_certificates=certificates, interceptors=interceptors,
                                                 retry_invoker=make_simple_http_retry_invoker())


def run_task(address: str, token: str, insecure: bool, certificates: bytes | None) -> bool:
    """Run the ClientApp task ``token`` names, as ``flwr.supernode.runtime.run_clientapp`` does, and return
    whether it completed (a ClientApp error is sent back to the ServerApp as Flower's error reply)."""
    from flwr.app import Message
    from flwr.app.error import Error
    from flwr.cli.install import install_from_fab
    from flwr.clientapp.client_app import LoadClientAppError
    from flwr.clientapp.utils import get_load_client_app_fn
    from flwr.common.constant import ErrorCode, SubStatus
    from flwr.supercore import log
    from flwr.supercore.heartbeat import HeartbeatSender, make_task_heartbeat_fn_http
    from flwr.supercore.interceptors import RuntimeTokenHttpInterceptor, RuntimeVersionHttpInterceptor
    from flwr.supernode.runtime.run_clientapp import pull_task_input, push_message, push_task_output

    client = _connect(address, insecure, certificates, [
        RuntimeVersionHttpInterceptor(component_name="flwr-clientapp"), RuntimeTokenHttpInterceptor(token)])
    heartbeat = None
    message = reply = context = None
    sub_status, details = SubStatus.FAILED, "ClientApp task failed due to unknown reason"
    try:
        heartbeat = HeartbeatSender(make_task_heartbeat_fn_http(client))
        heartbeat.start()
        message, context, run, fab = pull_task_input(client)
        install_from_fab(fab.content, skip_prompt=True)
        load = get_load_client_app_fn(default_app_ref="", app_path=None, multi_app=True)
        client_app = load(run.fab_id, run.fab_version, fab.hash_str)  # imported once: sys.modules
        started = time.perf_counter()
        reply = client_app(message=message, context=context)
        log(DEBUG, "[fglcore worker] %s message handled in %.3f s", message.metadata.message_type,
            time.perf_counter() - started)
        sub_status, details = SubStatus.COMPLETED, ""
    except Exception as error:  # as run_clientapp: the error goes back to the ServerApp
        code = ErrorCode.CLIENT_APP_RAISED_EXCEPTION
        reason = str(type(error)) + ":<'" + str(error) + "'>"
        if isinstance(error, LoadClientAppError):
            code, reason = ErrorCode.LOAD_CLIENT_APP_EXCEPTION, "An exception was raised when attempting to load `ClientApp`"
        log(ERROR, "ClientApp raised an exception", exc_info=error)
        details = reason
        if message is not None:
            reply = Message(Error(code=code, reason=reason), reply_to=message)
    finally:
        try:
            if reply is not None and context is not None:
                push_message(client, reply, context)
        except Exception as error:  # noqa: BLE001 - as run_clientapp: log it, the ServerApp times out
            log(ERROR, "Failed to push reply message", exc_info=error)
            sub_status = SubStatus.FAILED
        push_task_output(client=client, context=context, sub_status=sub_status, details=details)
        if heartbeat is not None and heartbeat.is_running:
            heartbeat.stop()
        client.close()
    return sub_status == SubStatus.COMPLETED


def serve(address: str, *, insecure: bool = True, root_certificates: str | None = None,
          parent_pid: int | None = None, poll: float = 0.05, app_module: str = "fglcore.fl.flower.apps") -> None:
    """Import ``app_module`` once, then run the ClientApp tasks of the SuperNode whose Runtime API listens at
    ``address``, one at a time, until this process is stopped (or ``parent_pid`` exits)."""
    import importlib

    from flwr.proto.runtime_pb2 import AcquireTaskRequest  # pylint: disable=E0611
    from flwr.supercore import log
    from flwr.supercore.app_utils import start_parent_process_monitor
    from flwr.supercore.constant import TaskType
    from flwr.supercore.interceptors import RuntimeVersionHttpInterceptor
    from flwr.supercore.tls import validate_and_resolve_root_certificates

    importlib.import_module(app_module)  # torch, fglcore: paid once, before the first message
    if parent_pid is not None:
        start_parent_process_monitor(parent_pid)
    certificates = validate_and_resolve_root_certificates(root_certificates, insecure)
    superexec = _connect(address, insecure, certificates, [RuntimeVersionHttpInterceptor(component_name="SuperExec")])
    request = AcquireTaskRequest(supported_task_types=[TaskType.CLIENT_APP])
    print(READY, flush=True)
    log(INFO, "%s: serving ClientApp tasks of the SuperNode at %s", READY, address)
    try:
        while True:
            response = superexec.AcquireTask(request)
            if response.HasField("task") and response.token:
                run_task(address, response.token, insecure, certificates)
            else:
                time.sleep(poll)
    finally:
        superexec.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtime-api-address", required=True,
                        help="the SuperNode's Runtime API (its --host:--port), e.g. 127.0.0.1:9094")
    parser.add_argument("--insecure", action="store_true", help="plain HTTP to the SuperNode (same machine)")
    parser.add_argument("--root-certificates", default=None, help="CA certificate of the SuperNode's Runtime API")
    parser.add_argument("--parent-pid", type=int, default=None, help="exit when this process (the SuperNode) exits")
    parser.add_argument("--poll", type=float, default=0.05, help="seconds between requests for a task when idle")
    args = parser.parse_args(argv)
    serve(args.runtime_api_address, insecure=args.insecure, root_certificates=args.root_certificates,
          parent_pid=args.parent_pid, poll=args.poll)
    return 0


if __name__ == "__main__":
    sys.exit(main())
