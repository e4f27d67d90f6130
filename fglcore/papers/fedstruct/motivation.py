"""FedStruct's motivation: how interconnected the clients are, and what ignoring the interconnections costs.

Aliakbari, Östman and Graell i Amat, ICLR 2025, Sec. 1 and 4, Fig. 1 and
App. F: a random partition (every node picks its client uniformly) leaves
most edges between clients; Louvain (with the FedSage+ cap and FedStruct's
packing) few; K-means on features, in between. ``notebooks/fedstruct/
1_motivation`` measures that share per partitioner and number of clients
(:func:`interconnection_table`) and runs Fig. 1's methods (:func:`plan`).
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

import pandas as pd

from fglcore.config import ConfigError, ExperimentConfig
from fglcore.data.datasets import available
from fglcore.papers.fedstruct.tables import PROTOCOL, split_rows, table2_configs

PARTITIONS: dict[str, dict[str, Any]] = {
    "random": {},
    "louvain": {"cap": "plus"},
    "kmeans": {},
}
"""FedStruct's three partitioners with its options (App. F; ``paper.yaml`` settings.partitions)."""

FIG1_ROWS = ["central", "central_union", "local", "fedsgd", "fedsage_plus", "fedgcn_2hop", "fedstruct_h2v"]
"""Fig. 1's bars (Central GNN, FedStruct, FedGCN, FedSage+, FedSGD) plus Local GNN and the central model without
the cross-client edges (what is lost when the interconnections are dropped)."""


def partition_config(dataset: str, partition: str, num_clients: int, seed: int) -> ExperimentConfig:
    """The federation of one (dataset, partitioner, clients, seed), FedStruct's options, the table protocol."""
    if partition not in PARTITIONS:
        raise ConfigError(f"partitions: {partition!r} is not accepted; accepted: {', '.join(PARTITIONS)}")
    return ExperimentConfig.from_dict({**PROTOCOL, "table": "motivation", "dataset": dataset, "partition": partition,
                                       "partition_options": PARTITIONS[partition], "num_clients": num_clients,
                                       "seed": seed, "algorithm": "central", "model": "sage"})


def interconnection_table(configs: Iterable[ExperimentConfig]) -> pd.DataFrame:
    """Per federation: dataset, partition, clients, edge homophily, the share of edges between clients, the mean
    number of external nodes per client and the smallest and largest client."""
    from fglcore.data.federation import build_federation, interconnection_summary
    from fglcore.metrics import edge_homophily

    rows = []
    for config in configs:
        federation = build_federation(config, keep_cross_edges=True)
        summary = interconnection_summary(federation.clients)
        clients = summary[summary["client"] != "total"]
        total = summary[summary["client"] == "total"].iloc[0]
        rows.append({"dataset": config.dataset, "partition": config.partition, "clients": config.num_clients,
                     "edge homophily": round(edge_homophily(federation.data.edge_index, federation.data.y), 3),
                     "cross-client edges (%)": round(100 * float(total["cross_share"]), 1),
                     "external nodes per client": round(float(clients["external_nodes"].mean()), 1),
                     "smallest client": int(clients["nodes"].min()), "largest client": int(clients["nodes"].max())})
    return pd.DataFrame(rows)


def plan(datasets: Sequence[str], partitions: Sequence[str], num_clients: Sequence[int], fig1_datasets: Sequence[str],
         methods: Sequence[str], seeds: Sequence[int], rounds: int) -> dict[str, Any]:
    """What ``notebooks/fedstruct/1_motivation`` builds: ``{"federations", "ready", "fig1"}``.

    ``federations``: one config per available dataset × partitioner × number of clients (seed 0), whose
    interconnection the notebook measures; ``fig1``: Fig. 1's rows (:data:`FIG1_ROWS` ids) on the available
    ``fig1_datasets``, random partition, 10 clients. Called by the notebook and by ``fgl run``.
    """
    from fglcore import experiment
    from fglcore.checks import NON_NEGATIVE, POSITIVE

    experiment.check_lists(datasets=datasets, partitions=partitions, num_clients=num_clients, seeds=seeds)
    experiment.check_datasets("datasets", datasets, "node")
    experiment.check_datasets("fig1_datasets", fig1_datasets, "node")
    POSITIVE.check("parameter 'num_clients'", list(num_clients))
    NON_NEGATIVE.check("parameter 'rounds'", rounds)
    ready = available(datasets)
    with experiment.parameters_named({"partition": "partitions", "num_clients": "num_clients",
                                      "dataset": "datasets"}):
        federations = [partition_config(d, p, int(k), 0) for d in ready for p in partitions for k in num_clients]
    fig1_ready = available(fig1_datasets)
    with experiment.parameters_named({"algorithm": "methods", "seed": "seeds", "dataset": "fig1_datasets",
                                      "rounds": "rounds"}):
        run, _ = split_rows(methods)
        fig1 = table2_configs(fig1_ready, [10], methods, seeds, rounds, table="fig1")
    return {"federations": federations, "ready": ready, "fig1_ready": fig1_ready, "fig1": fig1}
