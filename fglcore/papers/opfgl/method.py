"""O-pFGL's pipeline traced step by step (``notebooks/opfgl/2_method``): its plan and the analytic message sizes.

Yan et al., "Towards Federated Graph Learning in One-shot Communication" (arXiv 2411.11304), Sec. 4 and
App. A.4 (Table 25: communication of each method). :func:`method_plan` builds the O-pFGL run the notebook
traces and the runs whose ledgers it sets beside O-pFGL's (Figure 6); :func:`analytic_bytes` counts the
bytes Table 25's formulas give for them, which the notebook checks against the ledgers.
"""
from __future__ import annotations

from typing import Any

from fglcore.config import ExperimentConfig

FLOAT32, INT64 = 4, 8


def method_plan(dataset: str, partition: str, num_clients: int, condense_iterations: int, max_epochs: int,
                multi_rounds: int, seed: int) -> dict[str, Any]:
    """``{"config": O-pFGL's run, "baselines": {name: config}}``: O-pFGL with the authors' command for
    ``dataset`` / ``partition`` (``condense_iterations`` and ``max_epochs`` shortened), and the runs whose
    communication Figure 6 compares: one-round FedAvg + fine-tuning and FedSpray (one ``E`` = 5), and FedAvg
    for ``multi_rounds`` rounds. Called by the notebook and by ``fgl run``.
    """
    from fglcore import experiment
    from fglcore.papers.opfgl import tables

    experiment.check_datasets("dataset", dataset, "node")
    options, _ = tables.opfgl_options(dataset, partition)
    base = {**tables.paper_protocol(), "table": "method", "dataset": dataset, "partition": partition,
            "num_clients": num_clients, "seed": seed}
    with experiment.parameters_named({"algorithm_options.condense_iterations": "condense_iterations",
                                      "algorithm_options.max_epochs": "max_epochs", "rounds": "multi_rounds"}):
        config = ExperimentConfig.from_dict({**base, "algorithm": "opfgl", "algorithm_options": {
            **options, "condense_iterations": condense_iterations, "max_epochs": max_epochs}})
        fields = dict(epochs_grid=[5], max_epochs=max_epochs, local_rounds=1)
        baselines = {
            "fedavg_ft": ExperimentConfig.from_dict({**base, "algorithm": "fedavg_ft",
                                                     **tables.baseline_fields("fedavg_ft", **fields)}),
            "fedspray": ExperimentConfig.from_dict({**base, "algorithm": "fedspray",
                                                    **tables.baseline_fields("fedspray", **fields)}),
            f"fedavg x{multi_rounds}": ExperimentConfig.from_dict({
                **base, "algorithm": "fedavg",
                **tables.baseline_fields("fedavg", **fields, multi_rounds=multi_rounds)}),
        }
    return {"config": config, "baselines": baselines}


def gcn_parameters(num_features: int, hidden: int, num_classes: int) -> int:
    """Parameters of the 2-layer GCN: :math:`Fd + d + dC + C` (Table 25's :math:`O(fd+dC)`)."""
    return num_features * hidden + hidden + hidden * num_classes + num_classes


def analytic_bytes(method: str, *, num_features: int, num_classes: int, hidden: int, hops: int,
                   pseudo_nodes: int, rounds: int = 1, one_shot: bool = False) -> dict[str, int]:
    """Bytes one client uploads and downloads under Table 25's formulas, as this package encodes the messages.

    * ``opfgl``: upload :math:`C(2(h+1)F+3)` ``int64`` words (the masked sufficient statistics,
      :func:`fglcore.algorithms.opfgl.sufficient_statistics`; the paper's :math:`O(Chf)` counts float32 means
      and variances, about half); download :math:`n'(F+n'+1)` float32 (:math:`X'\\Vert A'\\Vert Y'`, the
      paper's :math:`O(n'f+n'^2)`);
    * ``fedavg`` (``rounds`` rounds): :math:`Fd+d+dC+C` float32 each way per round
      (:func:`gcn_parameters`), each upload with its sample count :math:`n_k` (one float32, the aggregation
      weight, :func:`fglcore.fl.engine.run_rounds`); ``one_shot`` (``fedavg_ft``) has no opening broadcast
      (the clients share the seed), the multi-round loop sends the initial model first, so ``rounds + 1``
      downloads.
    """
    if method == "opfgl":
        up = num_classes * (2 * (hops + 1) * num_features + 3) * INT64
        down = pseudo_nodes * (num_features + pseudo_nodes + 1) * FLOAT32
        return {"upload": up, "download": down}
    if method == "fedavg":
        size = gcn_parameters(num_features, hidden, num_classes) * FLOAT32
        return {"upload": (size + FLOAT32) * rounds, "download": size * (rounds if one_shot else rounds + 1)}
    raise ValueError(f"analytic_bytes: no formula for {method!r}; accepted: opfgl, fedavg")
