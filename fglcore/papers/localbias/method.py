r"""The local-bias method step by step (``notebooks/localbias/2_method``): its runs and the ledger by layer.

Zhang et al., arXiv 2110.12906, Sec. 3.1 (Eq. 2, 4, 5) and App. C. The
notebook writes the two-client forward and backward out by hand and checks
them against :mod:`fglcore.distributed` and a centralised PyG GCN; then it
runs the method for a few epochs and reads what crossed the wire per layer
from the ledger (:func:`layer_traffic`), next to the dense schedule of
Table 1 (:func:`fglcore.distributed.cost.analytic_bytes`).
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from fglcore.config import ExperimentConfig
from fglcore.papers.localbias.tables import dataset_role, row_fields


def plan(dataset: str, num_clients: int, rounds: int, seed: int) -> dict[str, ExperimentConfig]:
    """``{"ours", "full"}``: Ours+GCN and ours-full on ``dataset`` (its role's depth and s/N), ``num_clients``
    clients, ``rounds`` epochs, simulated, lr 0.01. Called by the notebook and by ``fgl run``."""
    from fglcore import experiment
    from fglcore.checks import POSITIVE

    experiment.check_datasets("dataset", dataset, "node")
    POSITIVE.check("parameter 'num_clients'", num_clients)
    POSITIVE.check("parameter 'rounds'", rounds)
    with experiment.parameters_named({"dataset": "dataset"}):
        dataset_role(dataset)
    with experiment.parameters_named({"num_clients": "num_clients", "seed": "seed", "rounds": "rounds"}):
        return {name: ExperimentConfig.from_dict(row_fields(row, dataset, num_clients, seed, 0.01, rounds, "method",
                                                            evaluate_every=rounds))
                for name, row in (("ours", "ours_gcn"), ("full", "cagnet"))}


def layer_traffic(ledger_frame: pd.DataFrame, rounds: int) -> pd.DataFrame:
    """Bytes per epoch by message name (``local_term_l``, ``local_term_l_grad``, ``weight_grad``,
    ``sampled_ids``, ...), training epochs only (evaluation ``*_eval`` and the one-off degree exchange left
    out), summed over clients."""
    frame = ledger_frame[(ledger_frame["round"] >= 1) & ~ledger_frame["name"].str.endswith("_eval")]
    frame = frame[frame["name"] != "degree"]
    out = frame.groupby("name").agg(messages=("nbytes", "size"), bytes=("nbytes", "sum")).reset_index()
    out["messages per epoch"] = out.pop("messages") / rounds
    out["KiB per epoch"] = (out.pop("bytes") / rounds / 1024).round(2)
    return out


def communication_frame(result: Any) -> pd.DataFrame:
    """Per client: bytes per epoch counted from the messages and the dense formula (``extras``)."""
    return pd.DataFrame(result.extras["localbias"]["communication"])
