"""fglcore's clients and servers on Flower (``flwr`` >= 1.42, its Message API), from one machine to many.

The same :class:`~fglcore.fl.engine.Client` and :class:`~fglcore.fl.engine.Server` objects that the in-process
engine drives run as a Flower ``ClientApp`` (one per SuperNode, each holding one client's data) and a
``ServerApp`` (beside the SuperLink), and :func:`~fglcore.fl.engine.run_rounds` itself drives the rounds inside
the ServerApp: no algorithm is rewritten.

* :mod:`fglcore.fl.flower.job`: :func:`prepare_job` builds an algorithm exactly as
  :func:`fglcore.experiment.run_full` does, checks that Flower can carry it (:class:`FlowerUnsupported` says
  which message or step it lacks), and writes one partition file per client and the server's job file.
* :mod:`fglcore.fl.flower.apps`: the ``ClientApp`` and ``ServerApp`` and the records each channel message
  becomes (``ArrayRecord`` for tensors, ``ConfigRecord`` for rounds and random states).
* :mod:`fglcore.fl.flower.secaggplus`: secure aggregation with Flower's SecAgg+ (``SecAggPlusWorkflow`` on
  the ServerApp, ``secaggplus_mod`` on the SuperNodes), and its error bound against fglcore's exact mean.
* :mod:`fglcore.fl.flower.worker`: one long-lived ClientApp process per SuperNode (Flower's ``process``
  isolation mode) instead of Flower's default process per message.
* :mod:`fglcore.fl.flower.deploy`: :class:`LocalDeployment` starts a SuperLink and one SuperNode (with its
  ClientApp worker) per client as separate OS processes on 127.0.0.1 with bounded timeouts, runs the app with
  ``flwr run``, and stops every process it started; :func:`run_on_flower` is the whole round trip for one
  configuration.

Install the optional dependency with ``pip install "fglcore[flower]"`` (``flwr``).
"""
from __future__ import annotations

__all__ = ["FlowerUnsupported", "ClientLost", "prepare_job", "LocalDeployment", "DeploymentError",
           "run_on_flower", "FlowerRun"]


def __getattr__(name: str):
    # flwr is optional: import it only when the adapter is used.
    if name in ("FlowerUnsupported", "prepare_job"):
        from fglcore.fl.flower import job
        return getattr(job, name)
    if name == "ClientLost":
        from fglcore.fl.flower.apps import ClientLost
        return ClientLost
    if name in ("LocalDeployment", "DeploymentError", "run_on_flower", "FlowerRun"):
        from fglcore.fl.flower import deploy
        return getattr(deploy, name)
    raise AttributeError(f"module 'fglcore.fl.flower' has no attribute {name!r}")
