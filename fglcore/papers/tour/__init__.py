"""The tour notebook (``notebooks/tour/fgl_basics``): what it runs, built from its parameters.

:func:`plan` is the one place the tour's runs are built: the notebook calls
it, and ``fgl run`` calls it before the kernel starts
(:data:`fglcore.notebooks.PLANS`), so every configuration is validated
before the first cell runs.
"""
from __future__ import annotations

from typing import Any, Sequence

from fglcore import experiment
from fglcore.config import ExperimentConfig

NAMES = {"seed": "seeds", "algorithm": "methods", "partition": "partitions", "algorithm_options": "fedprox_mu"}
"""Config fields and the tour parameters they come from."""


def plan(dataset: str, partitions: Sequence[str], num_clients: int, methods: Sequence[str], model: str,
         rounds: int, local_epochs: int, lr: float, fedprox_mu: float, seeds: Sequence[int]) -> dict[str, Any]:
    """``{"base", "training", "ledger"}``: the fields shared by every run, the training sweep (every partition,
    method and seed; FedProx with ``mu = fedprox_mu``), and the FedAvg run whose ledger the notebook reads.

    Raises :class:`~fglcore.config.ConfigError` naming the parameter.
    """
    experiment.check_lists(partitions=partitions, methods=methods, seeds=seeds)
    experiment.check_datasets("dataset", dataset, "node")
    with experiment.parameters_named(NAMES):
        base = dict(paper="tour", table="training", dataset=dataset, num_clients=num_clients, model=model,
                    rounds=rounds, local_epochs=local_epochs, lr=lr, progress=False)
        configs = [
            c.replace(algorithm_options={"mu": fedprox_mu}) if c.algorithm == "fedprox" else c
            for c in experiment.grid(base, partition=partitions, algorithm=methods, seed=seeds)
        ]
        ledger: ExperimentConfig = experiment.grid(
            {**base, "partition": partitions[0], "algorithm": "fedavg", "seed": seeds[0]})[0]
    return {"base": base, "training": configs, "ledger": ledger}
