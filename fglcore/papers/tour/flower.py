"""The Flower notebook (``notebooks/tour/flower``): the one configuration it runs in-process and on Flower.

:func:`plan` builds it from the notebook's parameters; ``fgl run`` calls it before the kernel starts
(:data:`fglcore.notebooks.PLANS`), so a bad value stops before any Flower process does.
"""
from __future__ import annotations

import math
from typing import Any

from fglcore import experiment
from fglcore.config import ConfigError, ExperimentConfig


def flower_algorithms() -> list[str]:
    """Registered algorithms that may run on Flower: their ``run`` is the round loop, or they say for which
    options it is (:meth:`Algorithm.round_loop_only <fglcore.algorithms.base.Algorithm.round_loop_only>`);
    :func:`fglcore.fl.flower.prepare_job` makes the exact check."""
    from fglcore.algorithms import ALGORITHMS
    from fglcore.algorithms.base import Algorithm

    return [name for name in ALGORITHMS.names()
            if ALGORITHMS.get(name).run is Algorithm.run
            or ALGORITHMS.get(name).round_loop_only is not Algorithm.round_loop_only]


def plan(dataset: str, algorithm: str, num_clients: int, rounds: int, local_epochs: int, seed: int,
         message_timeout: float) -> dict[str, Any]:
    """``{"config"}``: the run both engines execute (on CPU). Raises :class:`~fglcore.config.ConfigError`
    naming the parameter."""
    experiment.check_datasets("dataset", dataset, "node")
    if isinstance(message_timeout, bool) or not isinstance(message_timeout, (int, float)) \
            or not math.isfinite(message_timeout) or message_timeout <= 0:
        raise ConfigError(f"parameter 'message_timeout': {message_timeout!r} is not accepted; accepted: a "
                          "number of seconds > 0")
    from fglcore.algorithms import ALGORITHMS

    accepted = flower_algorithms()
    if algorithm in ALGORITHMS.names() and algorithm not in accepted:  # an unknown name: the config says so
        raise ConfigError(f"parameter 'algorithm': {algorithm!r} runs a loop of its own, which the Flower adapter "
                          f"does not carry; accepted: {', '.join(accepted)}")
    with experiment.parameters_named({}):
        config = ExperimentConfig.from_dict(dict(paper="tour", table="flower", dataset=dataset, algorithm=algorithm,
                                                 num_clients=num_clients, rounds=rounds, local_epochs=local_epochs,
                                                 seed=seed, device="cpu", progress=False))
    return {"config": config}
