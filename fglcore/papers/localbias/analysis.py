r"""The local-bias paper's analyses (``notebooks/localbias/4_analysis``): Fig. 4, accuracy vs time, Table 1.

Zhang et al., arXiv 2110.12906, App. E.1-E.2 and Sec. 3.1 / App. C.

* **Fig. 4, step length** (:func:`step_configs`, :func:`step_study`): the
  paper fixes the nodes sampled per epoch (100,000 on Reddit/Products) and
  splits them into :math:`m` steps of :math:`100{,}000/m` nodes, one update
  each. Our engine takes one sampled subgraph and one step per round (A7), so
  step length :math:`m` is ``m * epochs`` rounds at ``sample_ratio = ratio /
  m``. Local computation is measured (the simulated engine, all clients in
  one process, divided by K: the share of one client); communication time is
  **modelled** from what was sent: per step each client's messages times a
  latency plus its bytes over a bandwidth (both parameters; the machine
  here has no network). The digest's scaled ratio is 43 % of N per epoch
  (Reddit's 100k/233k).
* **Accuracy against time** (:func:`time_configs`, :func:`accuracy_time`):
  ours and ours-full, test accuracy after every epoch against epochs × the
  run's median seconds per epoch (simulated engine, one process).
* **Table 1** (:func:`complexity_table`): the digest's reconstruction (§2.6)
  of the lost formulas, evaluated on each dataset's N, M, s, K, B, L, d
  (values, not seconds: the orderings are what the paper claims).
"""
from __future__ import annotations

import statistics
from typing import Any, Sequence

import pandas as pd

from fglcore.config import ConfigError, ExperimentConfig
from fglcore.papers.localbias.tables import dataset_role, row_fields

EPOCH_RATIO = 100000 / 232965
"""Fig. 4's nodes per epoch over Reddit's nodes (digest §6.2: about 43 %)."""
PAPER_BEST_STEP = 12
"""Fig. 4: total time is minimal at m = 12 (100,000 nodes per epoch)."""


def step_configs(dataset: str, steps: Sequence[int], epoch_ratio: float, epochs: int, num_clients: int,
                 seed: int, lr: float) -> list[ExperimentConfig]:
    """One Ours+GCN run per step length ``m``: ``m * epochs`` rounds of ``epoch_ratio / m`` of the nodes."""
    configs = []
    for m in steps:
        fields = row_fields("ours_gcn", dataset, num_clients, seed, lr, int(m) * epochs, "fig4")
        fields["algorithm_options"]["sample_ratio"] = float(epoch_ratio) / int(m)
        fields["evaluate_every"] = fields["rounds"]
        fields["setting"] = f"{fields['setting']}, m={int(m)}"
        configs.append(ExperimentConfig.from_dict(fields))
    return configs


def step_study(configs: Sequence[ExperimentConfig], bandwidth_mbps: float, latency_ms: float,
               progress: bool = False) -> pd.DataFrame:
    """Per step length: measured compute seconds per epoch per client, modelled communication seconds per
    epoch per client (messages × latency + bytes / bandwidth), their total, and bytes per epoch."""
    from tqdm.auto import tqdm

    from fglcore import experiment

    rows = []
    for config in tqdm(configs, disable=not progress, desc="Fig. 4"):
        m = int(config.setting.rsplit("m=", 1)[1])
        _, result = experiment.run_full(config)
        extras = result.extras["localbias"]
        k = config.num_clients
        step_seconds = statistics.mean(extras["epoch_seconds"]) / k
        frame = result.ledger.to_frame()
        train = frame[(frame["round"] >= 1) & ~frame["name"].str.endswith("_eval") & (frame["name"] != "degree")]
        messages_per_step = len(train) / config.rounds / k
        bytes_per_step = statistics.mean(c["measured_total"] for c in extras["communication"])
        comm = m * (messages_per_step * latency_ms / 1e3 + bytes_per_step * 8 / (bandwidth_mbps * 1e6))
        rows.append({"m": m, "nodes per step": round(config.algorithm_options["sample_ratio"]
                                                     * _num_nodes(config.dataset)),
                     "compute s/epoch": m * step_seconds, "communication s/epoch (model)": comm,
                     "total s/epoch": m * step_seconds + comm, "messages/epoch": m * messages_per_step,
                     "KiB/epoch": m * bytes_per_step / 1024})
    return pd.DataFrame(rows)


def _num_nodes(dataset: str) -> int:
    from fglcore.data.datasets import num_nodes

    return num_nodes(dataset)


def time_configs(datasets: Sequence[str], rounds: int, num_clients: int, seed: int, lr: float
                 ) -> list[ExperimentConfig]:
    """Ours+GCN and ours-full on each dataset, ``rounds`` epochs (0: the role's), evaluated every epoch."""
    configs = []
    for dataset in datasets:
        for row in ("ours_gcn", "cagnet"):
            fields = row_fields(row, dataset, num_clients, seed, lr, rounds, "accuracy_time", evaluate_every=1)
            fields["selection"] = "last"
            configs.append(ExperimentConfig.from_dict(fields))
    return configs


def accuracy_time(configs: Sequence[ExperimentConfig], progress: bool = False) -> pd.DataFrame:
    """Per run and epoch: test accuracy (%) and elapsed seconds (epoch × the run's mean epoch seconds)."""
    from tqdm.auto import tqdm

    from fglcore import experiment

    rows = []
    for config in tqdm(configs, disable=not progress, desc="accuracy vs time"):
        _, result = experiment.run_full(config)
        seconds = statistics.mean(result.extras["localbias"]["epoch_seconds"])
        label = "ours" if config.algorithm_options["variant"] == "ours" else "ours-full"
        for h in result.history:
            if "test_accuracy" in h:
                rows.append({"dataset": config.dataset, "method": label, "epoch": int(h["round"]),
                             "seconds": h["round"] * seconds, "accuracy": 100 * h["test_accuracy"]})
    return pd.DataFrame(rows)


def complexity_table(datasets: Sequence[str], num_clients: int, hidden: int = 128, bns_p: float = 0.1,
                     seed: int = 0) -> pd.DataFrame:
    r"""Table 1 as the digest rebuilds it (§2.6), per dataset: the inputs (N, M undirected edges, M_in intra
    edges under the random equal-size partition, s, M_S ≈ M s²/N², B boundary pairs, L, d) and each method's
    time, communication and memory terms (all hidden widths = ``hidden``; values in "units", not seconds)."""
    from fglcore.data.datasets import load_node_data
    from fglcore.papers.localbias.motivation import edge_share_table

    rows = []
    for dataset in datasets:
        role = dataset_role(dataset)
        data = load_node_data(dataset)
        n, m = int(data.num_nodes), int(data.edge_index.shape[1]) // 2
        share = edge_share_table([dataset], [num_clients], seed).iloc[0]
        m_in = m * (1 - share["cross-client edges (%)"] / 100)
        b = float(share["boundary pairs"])
        s = role.sample_ratio * n
        m_s = m * (s / n) ** 2
        big_l, d, k, p = role.layers, hidden, num_clients, bns_p
        terms = {
            ("CAGNET", "time"): big_l * (m * d + n * d * d),
            ("FedAvg+GCN", "time"): big_l * (m_in * d + n * d * d),
            ("BNS-GCN", "time"): big_l * ((m_in + p * (m - m_in)) * d + (n + p * b) * d * d),
            ("Ours", "time"): big_l * (m_s * d + s * d * d),
            ("CAGNET", "comm"): k * big_l * n * d,
            ("FedAvg+GCN", "comm"): k * big_l * d * d,
            ("BNS-GCN", "comm"): big_l * p * b * d + k * big_l * d * d,
            ("Ours", "comm"): k * big_l * s * d + k * big_l * d * d,
            ("CAGNET", "memory"): big_l * n * d + k * big_l * d * d,
            ("FedAvg+GCN", "memory"): big_l * n * d + k * big_l * d * d,
            ("BNS-GCN", "memory"): big_l * (n + p * b) * d + k * big_l * d * d,
            ("Ours", "memory"): big_l * s * d + k * big_l * d * d,
        }
        for (method, what), value in terms.items():
            rows.append({"dataset": dataset, "N": n, "M": m, "M_in": round(m_in), "s": round(s), "B": round(b),
                         "L": big_l, "K": k, "method": method, "cost": what, "value": float(value)})
    return pd.DataFrame(rows)


def plan(step_dataset: str, steps: Sequence[int], epoch_ratio: float, step_epochs: int, time_datasets: Sequence[str],
         time_rounds: int, complexity_datasets: Sequence[str], num_clients: int, seed: int, lr: float
         ) -> dict[str, Any]:
    """What ``notebooks/localbias/4_analysis`` runs: ``{"steps", "time", "complexity"}`` (validated up front).
    Called by the notebook and by ``fgl run``."""
    from fglcore import experiment
    from fglcore.checks import NON_NEGATIVE, POSITIVE, Bounds
    from fglcore.data.datasets import availability, available

    experiment.check_lists(steps=steps, time_datasets=time_datasets, complexity_datasets=complexity_datasets)
    experiment.check_datasets("step_dataset", step_dataset, "node")
    experiment.check_datasets("time_datasets", time_datasets, "node")
    experiment.check_datasets("complexity_datasets", complexity_datasets, "node")
    POSITIVE.check("parameter 'steps'", list(steps))
    POSITIVE.check("parameter 'step_epochs'", step_epochs)
    NON_NEGATIVE.check("parameter 'time_rounds'", time_rounds)
    POSITIVE.check("parameter 'num_clients'", num_clients)
    Bounds(above=0).check("parameter 'lr'", lr)
    if not 0 < epoch_ratio <= 1:
        raise ConfigError(f"parameter 'epoch_ratio': {epoch_ratio!r} is not accepted; accepted: 0 < ratio <= 1")
    for name, value in (("step_dataset", [step_dataset]), ("time_datasets", time_datasets),
                        ("complexity_datasets", complexity_datasets)):
        with experiment.parameters_named({"dataset": name}):
            for d in value:
                dataset_role(d)
    with experiment.parameters_named({"rounds": "step_epochs", "seed": "seed", "num_clients": "num_clients",
                                      "algorithm_options.sample_ratio": "epoch_ratio"}):
        steps_configs = step_configs(step_dataset, steps, epoch_ratio, step_epochs, num_clients, seed, lr) \
            if availability(step_dataset) == "available" else []
    with experiment.parameters_named({"rounds": "time_rounds", "seed": "seed", "num_clients": "num_clients",
                                      "dataset": "time_datasets"}):
        time = time_configs(available(time_datasets), time_rounds, num_clients,
                            seed, lr)
    return {"steps": steps_configs, "time": time,
            "complexity": available(complexity_datasets)}
