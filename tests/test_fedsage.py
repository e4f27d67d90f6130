"""FedSage as FedStar ran it: FedAvg of a 3-layer GraphSAGE (mean aggregation), no neighbour generator."""
from __future__ import annotations

import pytest
import torch
from torch_geometric.nn import SAGEConv

from fglcore.algorithms import ALGORITHMS
from fglcore.algorithms.fedavg import FedAvg
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.data.federation import build_federation
from fglcore.papers.fedstar import tables as T

CPU = torch.device("cpu")


def config(**changes) -> ExperimentConfig:
    return ExperimentConfig.from_dict(T.table1_config("chem", "fedsage", 1, members=["MUTAG", "PTC_MR"], rounds=1,
                                                      **changes))


def test_registered_as_fedavg_with_a_graphsage_backbone():
    cls = ALGORITHMS.get("fedsage")
    assert issubclass(cls, FedAvg) and set(cls.tasks) == {"node", "graph"}
    assert "Zhang" in cls.citation
    with pytest.raises(ConfigError, match="model must be 'sage'"):
        config(model="gin")
    with pytest.raises(ConfigError, match="share"):
        config(algorithm_options={"share": "everything"})


def test_averages_the_matching_sage_parameters_and_keeps_the_input_layers_personal():
    cfg = config()
    federation = build_federation(cfg)
    algorithm = ALGORITHMS.get("fedsage")(cfg, federation, CPU)
    result = algorithm.run()
    models = [c.model for c in algorithm.clients]
    convs = models[0].convs
    assert len(convs) == 3 and all(isinstance(c, SAGEConv) and c.aggr == "mean" for c in convs)
    first, second = (dict(m.named_parameters()) for m in models)
    shared = result.ledger.names(sender="server")
    # share="matching": every layer whose parameters all agree in shape (both datasets have 2 classes);
    # the input layer stays personal although its bias has the same shape on both clients
    assert shared == {n for n in first if n.startswith(("convs.", "head."))}
    assert first["input_encoder.bias"].shape == second["input_encoder.bias"].shape
    assert not any(n.startswith("input_encoder.") for n in shared)
    assert all(torch.equal(first[n], second[n]) for n in shared)
    assert first["input_encoder.weight"].shape != second["input_encoder.weight"].shape
    assert len(result.history) == 1 and 0.0 <= result.metrics["test_accuracy"] <= 1.0


def test_is_fedavg_with_sage_under_the_same_options():
    cfg = config()
    fedsage = ALGORITHMS.get("fedsage")(cfg, build_federation(cfg), CPU).run()
    fedavg_cfg = cfg.replace(algorithm="fedavg")
    fedavg = ALGORITHMS.get("fedavg")(fedavg_cfg, build_federation(fedavg_cfg), CPU).run()
    assert fedsage.history == fedavg.history
