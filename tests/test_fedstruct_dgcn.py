"""FedStruct's DGCN baselines and Fig. 4(a)/(b): the decoupled GCN with its depth as ``config.model_options``
(shapes, the feature branch's equivalence, validation before any work, ids of earlier configs kept) and the
figure plans (grids, tokens, what "layers" sets per row, parameter errors)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.utils import to_undirected

from fglcore import results
from fglcore.algorithms import ALGORITHMS
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.data.federation import NodeFederation, build_clients
from fglcore.models import DecoupledGCN, build_model
from fglcore.models.fedstruct import FedStructModel, feature_branch_options
from fglcore.papers.fedstruct import tables as ft

CPU = torch.device("cpu")


def small_graph(n: int = 24, features: int = 8, classes: int = 3, seed: int = 0) -> Data:
    generator = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % classes
    src = torch.randint(0, n, (3 * n,), generator=generator)
    dst = torch.randint(0, n, (3 * n,), generator=generator)
    keep = src != dst
    edge_index = to_undirected(torch.stack([src[keep], dst[keep]]), num_nodes=n)
    x = F.one_hot(y, features).float() + 0.5 * torch.randn(n, features, generator=generator)
    masks = [torch.zeros(n, dtype=torch.bool) for _ in range(3)]
    masks[0][: n // 2], masks[1][n // 2: 3 * n // 4], masks[2][3 * n // 4:] = True, True, True
    return Data(x=x, y=y, edge_index=edge_index, train_mask=masks[0], val_mask=masks[1], test_mask=masks[2],
                num_nodes=n)


def dense_rw(edge_index: torch.Tensor, n: int) -> torch.Tensor:
    """:math:`\\tilde D^{-1}(A + I)`, written out."""
    a = torch.zeros(n, n)
    a[edge_index[0], edge_index[1]] = 1.0
    a = a + torch.eye(n)
    return a / a.sum(1, keepdim=True)


# ----------------------------------------------------------------------------- the model


@pytest.mark.parametrize("depth", [0, 1, 3])
def test_dgcn_is_the_mlp_then_depth_row_normalised_steps(depth):
    data = small_graph()
    model = build_model("decoupled_gcn", 8, 16, 3, dropout=0.0, seed=1, **feature_branch_options(depth)).eval()
    out = model(data.x, data.edge_index)
    assert out.shape == (data.num_nodes, 3)
    expected = torch.linalg.matrix_power(dense_rw(data.edge_index, data.num_nodes), depth) @ model.mlp(data.x)
    assert torch.allclose(out, expected, atol=1e-5)


def test_dgcn_baseline_is_fedstructs_feature_branch():
    data = small_graph()
    fedstruct = FedStructModel(8, 16, 3, structure_channels=4, structure_hidden=[4], num_layers=2, feature_hops=2,
                               dropout=0.0, cached=False)
    baseline = build_model("decoupled_gcn", 8, 16, 3, num_layers=2, dropout=0.0, **feature_branch_options(2))
    theirs, ours = fedstruct.feature.state_dict(), baseline.state_dict()
    assert {k: v.shape for k, v in theirs.items()} == {k: v.shape for k, v in ours.items()}
    baseline.load_state_dict(theirs)
    baseline.eval(), fedstruct.eval()
    assert torch.allclose(baseline(data.x, data.edge_index), fedstruct.feature(data.x, data.edge_index))
    assert baseline.propagation.K == 2 and baseline.propagation.normalization == "rw"


# ----------------------------------------------------------------------------- the config field


def cfg(**changes) -> ExperimentConfig:
    base = dict(dataset="Cora", partition="random", num_clients=3, split="global_random", algorithm="fedsgd",
                model="decoupled_gcn", hidden=16, num_layers=2, dropout=0.0, rounds=2, lr=0.01, selection="last")
    return ExperimentConfig.from_dict({**base, **changes})


@pytest.mark.parametrize("options,match", [
    ({"K": -1}, r"model_options\.K: -1 is not accepted; accepted: an integer >= 0"),
    ({"K": 2.5}, r"model_options\.K: expected int"),
    ({"alpha": 1.5}, r"model_options\.alpha"),
    ({"normalization": "row"}, r"model_options\.normalization: 'row' is not accepted.*accepted: sym, rw"),
    ({"k": 2}, r"unknown model_options key of model 'decoupled_gcn'.*accepted: K, alpha"),
    ({"hidden_channels": 8}, r"unknown model_options key"),
])
def test_model_options_are_validated_before_any_work(options, match):
    with pytest.raises(ConfigError, match=match):
        cfg(model_options=options)


@pytest.mark.parametrize("algorithm", ["fedprox", "fedpub", "fedstruct"])
def test_algorithms_that_do_not_pass_model_options_refuse_them(algorithm):
    with pytest.raises(ConfigError, match=rf"model_options: {algorithm} does not pass model_options.*"
                                          r"central, fedavg, fedgcn_1hop, fedgcn_2hop, fedsage, fedsage_plus, fedsgd, local"):
        cfg(algorithm=algorithm, model_options={"K": 2})


@pytest.mark.parametrize("algorithm", ["central", "local", "fedavg", "fedsgd"])
def test_model_options_reach_the_model(algorithm):
    config = cfg(algorithm=algorithm, model_options={"K": 4, "normalization": "rw"})
    runner = ALGORITHMS.get(algorithm)(config, SimpleNamespace(task="node", clients=[]), CPU)
    model = runner.make_model(8, 3)
    assert isinstance(model, DecoupledGCN)
    assert (model.propagation.K, model.propagation.normalization) == (4, "rw")


def test_empty_model_options_keep_earlier_config_ids(monkeypatch):
    plain = cfg()
    explicit = cfg(model_options={"K": 10})  # the default K, given: another config (the hash sees what is set)
    assert results.config_id(plain) != results.config_id(explicit)
    before = results.config_id(plain)
    monkeypatch.setattr(results, "EMPTY_OMITTED_KEYS", frozenset())  # as if the empty field were hashed
    assert results.config_id(plain) != before


def test_dgcn_rows_train_under_every_algorithm():
    data = small_graph(n=60, features=8)
    assignment = torch.as_tensor(np.random.default_rng(0).integers(0, 3, 60))
    federation = NodeFederation("g", data, build_clients(data, assignment), 3, 8, assignment)
    accuracies = {}
    for algorithm in ("central", "local", "fedavg", "fedsgd"):
        config = cfg(algorithm=algorithm, rounds=15, model_options=feature_branch_options(2))
        accuracies[algorithm] = ALGORITHMS.get(algorithm)(config, federation, CPU).run().metrics["test_accuracy"]
    assert all(0.0 <= a <= 1.0 for a in accuracies.values())
    assert accuracies["central"] > 1 / 3, accuracies  # better than chance on class-correlated features


# ----------------------------------------------------------------------------- Table 6's rows and the plans


def test_gnn_and_mlp_baselines_start_with_the_official_input_layer_norm():
    with_norm = ["central", "central_union", "local", "fedsgd", "fedavg", "fedsage_plus", "central_mlp", "local_mlp",
                 "fedsgd_mlp", "fedavg_mlp", "fedgcn_1hop", "fedgcn_2hop"]
    for row in with_norm:
        assert ft.row_fields(row, "Cora")["model_options"] == {"input_layer_norm": True}, row
    for row in ["fedavg", "fedgcn_1hop", "fedgcn_2hop"]:  # FedAvg-trained: the LayerNorm stays on the client
        assert ft.row_fields(row, "Cora")["algorithm_options"]["norm_layers"] == "local", row
    assert "model_options" not in ft.row_fields("fedpub", "Cora")  # its own port and model
    # the official table prints FedSage+'s "GA" run: FedSGD on the mended graphs, as the FedSGD row, after the
    # port's NeighGen (federated from the start, every parameter, lr 0.002, rounded counts, 40 epochs on Cora)
    cora, photo = (ft.row_fields("fedsage_plus", d)["algorithm_options"] for d in ("Cora", "Photo"))
    assert cora == {"federation": "fedsgd", "weighting": "nodes", "local_generator_epochs": 0, "generator_lr": 0.002,
                    "federated_parameters": "all", "count_rounding": "round", "federated_generator_epochs": 40}
    assert photo["federated_generator_epochs"] == 30


def test_fedpub_rows_take_the_official_ports_own_settings():
    cora, photo = ft.row_fields("fedpub", "Cora"), ft.row_fields("fedpub", "Photo")
    assert (cora["rounds"], cora["lr"], photo["rounds"], photo["lr"]) == (50, 0.01, 150, 0.005)
    for fields in (cora, photo):
        assert (fields["hidden"], fields["num_layers"], fields["dropout"], fields["weight_decay"],
                fields["local_epochs"], fields["algorithm_options"]) == (128, 2, 0.5, 1e-6, 1, ft.FEDPUB_OPTIONS)
    assert ft.FEDPUB_OPTIONS == {"n_proxy": 10, "penalties": "detached", "tau": 3.0, "evaluate": "personalized"}
    assert ft.row_fields("fedsgd", "Cora")["rounds"] == 40  # the other rows keep Table 5's epochs


def test_table6_dgcn_rows_take_table5s_theta_f_and_L():
    configs = ft.partition_configs("6", ["PubMed", "Chameleon"], ["random"], ["central_dgcn", "fedsgd_dgcn"], [0])
    by = {(c.dataset, c.algorithm): c for c in configs}
    pubmed, chameleon = by[("PubMed", "central")], by[("Chameleon", "fedsgd")]
    assert (pubmed.model, pubmed.hidden, pubmed.num_layers, pubmed.setting) == ("decoupled_gcn", 128, 2, "")
    assert pubmed.model_options == {"K": 2, "normalization": "rw", "input_layer_norm": True}
    assert chameleon.model_options["K"] == 1 and chameleon.hidden == 64 and chameleon.rounds == 60
    assert ft.row_label("fedsgd", "", "decoupled_gcn") == "FedSGD DGCN"
    assert ft.row_label("central", "layers=3", "decoupled_gcn") == "Central DGCN"
    assert {"central_dgcn", "fedavg_dgcn", "fedsgd_dgcn", "local_dgcn"} <= set(ft.TABLE6_ROWS)


def test_figure_plans():
    plan = ft.ablations_plan(["Cora"], ["random"], ["central"], ["fedstruct_h2v"], [0, 1], 2, "Chameleon", [5],
                             ["fedsgd"], fig4a_train=[0.05, 0.3], fig4a_methods=["central", "fedstruct_h2v"],
                             fig4b_layers=[1, 7], fig4b_methods=["fedstruct_h2v", "central", "fedsgd_dgcn"],
                             fig4b_seeds=[3])
    fig4a, fig4b = plan["fig4a"], plan["fig4b"]
    assert len(fig4a) == 2 * 2 * 2 and {c.table for c in fig4a} == {"fig4a"}
    assert {(c.partition, c.num_clients) for c in fig4a} == {("random", 10)}
    h2v = next(c for c in fig4a if c.algorithm == "fedstruct" and c.split_ratios[0] == 0.05)
    assert h2v.setting == "nsf=h2v, train=0.05" and h2v.split_ratios == [0.05, 0.1, 0.85]
    assert len(fig4b) == 3 * 2 and {(c.partition, c.num_clients, c.seed) for c in fig4b} == {("kmeans", 5, 3)}
    at7 = {c.algorithm: c for c in fig4b if c.setting.endswith("layers=7")}
    assert at7["fedstruct"].algorithm_options["structure_hops"] == 7
    assert at7["fedstruct"].algorithm_options["feature_hops"] == 2  # reading "structure": Table 5's L stays
    assert (at7["central"].model, at7["central"].hidden, at7["central"].num_layers) == ("sage", 64, 7)
    assert at7["fedsgd"].model_options["K"] == 7 and at7["fedsgd"].setting == "layers=7"
    both = ft.figure4b_configs("Cora", [5], ["fedstruct_deg"], [0], reading="both")
    assert both[0].algorithm_options["feature_hops"] == 5 and both[0].algorithm_options["structure_hops"] == 5
    curve = ft.curve_table(pd_rows(fig4b), "fig4b", "layers")
    assert curve["layers"].tolist() == [1, 7, 1, 7, 1, 7] and set(curve["runs"]) == {1}
    assert ft.token_value("nsf=h2v, train=0.05", "train") == 0.05 and ft.token_value("nsf=h2v", "layers") is None


def pd_rows(configs):
    """Stored-result rows of ``configs`` with a made-up accuracy (the curve's layout, not its numbers)."""
    import pandas as pd

    return pd.DataFrame([{"paper": c.paper, "table": c.table, "dataset": c.dataset, "partition": c.partition,
                          "num_clients": c.num_clients, "method": c.algorithm, "model": c.model,
                          "setting": c.setting, "metric": "accuracy", "seed": c.seed, "value": 50.0,
                          "selected_round": c.rounds, "config_id": results.config_id(c)} for c in configs],
                        columns=results.RESULT_COLUMNS)


@pytest.mark.parametrize("changes,match", [
    ({"fig4b_layers": [0]}, "parameter 'fig4b_layers'"),
    ({"fig4a_train": [0.9]}, "parameter 'fig4a_train'"),
    ({"fig4b_layers": [2], "fig4b_reading": "feature"}, "parameter 'fig4b_reading'.*accepted: structure, both"),
    ({"fig4b_layers": [2], "fig4b_methods": ["central_mlp"]}, "parameter 'fig4b_methods'.*no number of layers"),
    ({"fig4b_layers": [2], "fig4b_methods": ["fedpub"]}, "parameter 'fig4b_methods'.*no number of layers"),
    ({"fig4a_train": [0.1], "fig4a_methods": ["central_dgnc"]}, "parameter 'fig4a_methods'"),
    ({"fig4b_layers": [2], "fig4b_clients": 0}, "parameter 'fig4b_clients'"),
    ({"fig4b_layers": [2], "fig4b_seeds": []}, "parameter 'fig4b_seeds'"),
])
def test_figure_plan_errors_name_the_parameter(changes, match):
    with pytest.raises(ConfigError, match=match):
        ft.ablations_plan(["Cora"], ["random"], ["central"], ["fedstruct_h2v"], [0], 2, "Chameleon", [5], ["fedsgd"],
                          **changes)


def test_figure4b_h2v_s_row_is_the_structure_branch_alone():
    """Fig. 4(b)'s "H2V s": FedStruct (Hop2Vec) trained and predicting on z_v alone (official data_type="structure")."""
    assert "fedstruct_h2v_s" in ft.FIG4B_ROWS
    configs = ft.figure4b_configs("Cora", [10], ["fedstruct_h2v", "fedstruct_h2v_s"], [0])
    h2v, h2v_s = configs
    assert h2v_s.algorithm == "fedstruct" and h2v_s.setting == "nsf=h2v, branches=structure, layers=10"
    assert {k: v for k, v in h2v_s.algorithm_options.items() if k != "branches"} == h2v.algorithm_options
    assert h2v_s.algorithm_options["branches"] == "structure" and h2v_s.algorithm_options["structure_hops"] == 10
    assert ft.row_label("fedstruct", h2v_s.setting, "decoupled_gcn") == "FedStruct (H2V s)"
    assert ft.row_label("fedstruct", h2v.setting, "decoupled_gcn") == "FedStruct (H2V)"
    curve = ft.curve_table(pd_rows(configs), "fig4b", "layers")
    assert set(curve["row"]) == {"FedStruct (H2V)", "FedStruct (H2V s)"}
    assert results.config_id(h2v) != results.config_id(h2v_s)


def test_table6_fedavg_rows_keep_norm_layers_local():
    """The official FedAvg keeps LayerNorm out of the averaging (digest 4.5); FedSGD rows average everything."""
    for row in ("fedavg", "fedavg_dgcn", "fedavg_mlp"):
        assert ft.row_fields(row, "Cora")["algorithm_options"] == {"norm_layers": "local"}, row
    assert ft.row_fields("fedsgd_dgcn", "Cora")["algorithm_options"] == {}
    assert ft.row_label("fedavg", "", "decoupled_gcn") == "FedAvg DGCN"
