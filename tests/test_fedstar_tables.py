"""FedStar's table builders: configs, the paper's cell rule (A1), comparisons, formatting; paper.yaml numbers."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from fglcore import compare
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.fl.channel import Ledger
from fglcore.fl.engine import RunResult
from fglcore.papers.fedstar import tables as T
from fglcore.results import RESULT_COLUMNS, client_values, curve_values, mean_standard_error, rows_from_result


def test_every_table1_config_validates_with_the_papers_protocol():
    for setting in T.SETTINGS:
        for method in T.TABLE1_METHODS + T.EXTRA_METHODS:
            config = ExperimentConfig.from_dict(T.table1_config(setting, method, 1))
            assert (config.paper, config.table, config.dataset) == ("fedstar", "1", setting)
            assert (config.rounds, config.local_epochs, config.batch_size) == (200, 1, 128)
            assert (config.lr, config.weight_decay, config.hidden, config.num_layers, config.dropout) == (
                1e-3, 5e-4, 64, 3, 0.5)
            assert (config.selection, config.metric_aggregation, config.split) == (
                "last", "client_mean", "graph_stratified")
    assert T.table1_config("chem", "fedavg", 1)["algorithm_options"] == {"share": "matching"}
    assert T.table1_config("chem", "fedprox", 1)["algorithm_options"] == {"share": "matching", "mu": 0.01}
    assert T.table1_config("chem", "fedsage", 1)["model"] == "sage"
    assert T.table1_config("biochem", "gcfl", 1)["algorithm_options"]["epsilon2"] == 0.35
    assert T.table1_config("biosncv", "gcfl_plus", 1)["algorithm_options"] == {
        "epsilon1": 0.08, "epsilon2": 0.4, "share": "convs", "seq_length": 5}


def test_collab_is_left_out_and_members_restrict_the_setting():
    clients = {s: T.table1_config(s, "local", 1)["num_clients"] for s in T.SETTINGS}
    assert clients == {"chem": 7, "biochem": 10, "biochemsn": 12, "biosncv": 8}
    assert T.table1_config("biochemsn", "local", 1)["partition_options"] == {"exclude": ["COLLAB"]}
    small = T.table1_config("chem", "fedstar", 2, members=["PTC_MR", "MUTAG"], rounds=3,
                            algorithm_options={"encoding": "dg"})
    assert small["partition_options"] == {"members": ["MUTAG", "PTC_MR"]}  # group order
    assert small["num_clients"] == 2 and small["rounds"] == 3
    assert small["algorithm_options"] == {"fusion_before_pooling": True, "encoding": "dg"}  # merged
    with pytest.raises(ConfigError, match="ENZYMES"):
        T.table1_config("chem", "local", 1, members=["ENZYMES"])
    with pytest.raises(ConfigError, match="accepted"):
        T.table1_config("chemistry", "local", 1)
    with pytest.raises(ConfigError, match="accepted"):
        T.table1_config("chem", "fedsgd", 1)


def test_ablation_builders_give_valid_distinct_cells():
    labels = set()
    for setting in T.ABLATION_SETTINGS:
        for sharing, dc in T.TABLE2_ROWS:
            config = ExperimentConfig.from_dict(T.table2_config(setting, sharing, dc, 1))
            labels.add((setting, config.algorithm, config.setting))
            if dc:
                assert config.algorithm == "fedstar"
            else:
                assert config.partition_options["structure_input"] == "rw_dg"
                assert config.algorithm == {"All": "fedavg", "None": "local"}[sharing]
        for encoding in T.TABLE3_ROWS:
            ExperimentConfig.from_dict(T.table3_config(setting, encoding, 1))
    assert len(labels) == 3 * 6
    assert T.table2_config("biochem", "FE", True, 1)["algorithm_options"]["share"] == "feature"
    with pytest.raises(ConfigError, match="without decoupling"):
        T.table2_config("biochem", "SE", False, 1)
    for method in T.TABLE4_METHODS:
        config = ExperimentConfig.from_dict(T.table4_config(method, 3, 1))
        assert (config.local_epochs, config.setting, config.table) == (3, "E=3", "4")
        fig4 = ExperimentConfig.from_dict(T.figure4_config(method, 12, 1))
        assert (fig4.num_clients, fig4.partition, fig4.partition_seed) == (84, "dataset_chunks", 123)
    config = ExperimentConfig.from_dict(T.table10_config("sage", "gin", 1))
    assert config.algorithm_options["feature_conv"] == "sage" and config.setting == "FE=sage,SE=gin"
    with pytest.raises(ConfigError):
        T.table10_config("gat", "gcn", 1)


def _client_rows(values: dict[tuple[str, int], list[float]]) -> pd.DataFrame:
    """Results rows ``accuracy[client=K]`` from {(method, client): [value per seed]}."""
    rows = []
    for (method, client), per_seed in values.items():
        for seed, value in enumerate(per_seed, start=1):
            rows.append({"paper": "fedstar", "table": "1", "dataset": "chem", "partition": "by_dataset",
                         "num_clients": 2, "method": method, "model": "gin", "setting": "",
                         "metric": f"accuracy[client={client}]", "seed": seed, "value": value,
                         "selected_round": 200, "config_id": f"{method}{seed}"})
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)


def test_paper_cells_follow_the_official_aggregation():
    # client 0 wobbles a lot, client 1 moves against it: the client average barely moves.
    rows = _client_rows({("fedstar", 0): [70.0, 80.0, 90.0], ("fedstar", 1): [90.0, 80.0, 70.0],
                         ("local", 0): [60.0, 60.0, 60.0], ("local", 1): [70.0, 70.0, 70.0]})
    cells = T.paper_cells(rows).set_index("method")
    assert cells.loc["fedstar", "mean"] == pytest.approx(80.0)
    assert cells.loc["fedstar", "std"] == pytest.approx(10.0)  # mean over clients of std(ddof=1) = 10
    assert cells.loc["fedstar", "std_of_mean"] == pytest.approx(0.0)  # the other convention
    assert cells.loc["fedstar", "n_seeds"] == 3 and cells.loc["fedstar", "n_clients"] == 2
    assert cells.loc["local", "std"] == pytest.approx(0.0)
    gains = T.gains_over(cells.reset_index(), "local")
    assert list(gains) == pytest.approx([15.0, 0.0])
    single = T.paper_cells(_client_rows({("local", 0): [60.0]}))
    assert math.isnan(single["std"].iloc[0])


def test_compare_cells_uses_the_compare_rules_and_formats_like_the_paper():
    rows = _client_rows({("fedstar", 0): [70.0, 80.0, 90.0], ("fedstar", 1): [90.0, 80.0, 70.0]})
    cells = T.paper_cells(rows)
    paper = {"results": [
        {"table": "1", "dataset": "chem", "method": "fedstar", "metric": "accuracy", "mean": 79.79, "std": 2.44},
        {"table": "1", "dataset": "chem", "method": "fedavg", "metric": "accuracy", "mean": 75.26, "std": 2.0},
        {"table": "2", "dataset": "chem", "method": "fedstar", "metric": "accuracy", "mean": 1.0},
    ]}
    table = T.compare_cells(cells, paper, "1").set_index("method")
    assert table.loc["fedstar", "delta"] == pytest.approx(80.0 - 79.79)
    assert table.loc["fedstar", "tolerance"] == pytest.approx(2 * math.sqrt(2.44**2 + 10.0**2))
    assert table.loc["fedstar", "status"] == "match"
    assert table.loc["fedavg", "status"] == "missing"
    side = T.side_by_side(table.reset_index(), row_labels=T.METHOD_LABELS, column_labels=T.SETTING_LABELS)
    assert side.loc["FedStar", ("CHEM", "paper")] == "79.79 ± 2.44"
    assert side.loc["FedStar", ("CHEM", "ours")] == "80.00 ± 10.00"
    assert side.loc["FedStar", ("CHEM", "Δ")] == "+0.21"
    assert T.format_cell(float("nan"), 1.0) == "—" and T.format_cell(76.964, None) == "76.96"
    ours = T.ours_table(T.paper_cells(_client_rows({("local", 0): [60.0, 62.0], ("fedstar", 0): [70.0, 72.0]})),
                        gain_over="local", row_order=["local", "fedstar"], row_labels=T.METHOD_LABELS)
    assert list(ours.index) == ["Local", "FedStar"]
    assert ours.loc["FedStar", ("chem", "gain")] == "+10.00" and ours.loc["Local", ("chem", "gain")] == "–"
    assert ours.loc["Local", ("chem", "avg.")] == "61.00 ± 1.41"


def test_claim_holds_and_setting_parts():
    cells = pd.DataFrame({"dataset": ["a", "a", "b", "b", "c"], "method": ["fedstar", "local"] * 2 + ["fedstar"],
                          "setting": ["FE=gin,SE=gcn"] * 5, "mean": [80.0, 70.0, 60.0, 65.0, 50.0]})
    holds = T.claim_holds(cells, {"method": "fedstar"}, [{"method": "local"}]).set_index("dataset")["holds"]
    assert holds.to_dict() == {"a": True, "b": False, "c": None}
    parts = T.setting_parts(cells)
    assert set(parts["FE"]) == {"gin"} and set(parts["SE"]) == {"gcn"}


def test_claim_margin_is_judged_against_seed_noise():
    # Population std over 5 seeds of 2.0 -> sample std sqrt(5), standard error 1.0; noise of a difference 2*sqrt(2).
    cells = pd.DataFrame({"dataset": ["a", "a", "a", "b", "b", "b"], "method": ["fedstar", "local", "fedavg"] * 2,
                          "mean": [72.0, 70.0, 60.0, 74.0, 70.0, 69.0], "std_of_mean": [2.0] * 6,
                          "n_seeds": [5] * 6})
    assert mean_standard_error(2.0, 5) == pytest.approx(1.0)
    claims = T.claim_holds(cells, {"method": "fedstar"}, [{"method": "local"}, {"method": "fedavg"}])
    claims = claims.set_index("dataset")
    assert claims["holds"].to_dict() == {"a": True, "b": True}
    assert claims["margin"].to_dict() == {"a": 2.0, "b": 4.0}  # against the best loser, Local
    assert claims["beyond noise"].to_dict() == {"a": False, "b": True}  # 2 < 2.83 < 4
    reversed_claim = T.claim_holds(cells, {"method": "local"}, [{"method": "fedstar"}]).set_index("dataset")
    assert reversed_claim["holds"].to_dict() == {"a": False, "b": False}
    assert reversed_claim["beyond noise"].to_dict() == {"a": False, "b": True}  # a clear failure in b
    one_seed = T.claim_holds(cells.assign(n_seeds=1), {"method": "fedstar"}, [{"method": "local"}])
    assert one_seed["beyond noise"].isna().all()
    unfinished = cells.assign(n_seeds=[2, 5, 5, 5, 5, 5])  # FedStar in a: 2 of 5 seeds stored so far
    partial = T.claim_holds(unfinished, {"method": "fedstar"}, [{"method": "local"}]).set_index("dataset")
    assert partial["holds"].to_dict() == {"a": None, "b": True}
    assert partial["beyond noise"].to_dict() == {"a": None, "b": True}


def test_per_client_and_curve_rows_round_trip():
    config = ExperimentConfig.from_dict(T.table1_config("chem", "local", 4, members=["MUTAG", "PTC_MR"]))
    result = RunResult(
        history=[{"round": 5, "test_accuracy": 0.5}, {"round": 10, "test_accuracy": 0.625}],
        selected_round=10, metrics={"test_accuracy": 0.625},
        per_client=[{"client": 0, "test_accuracy": 0.5}, {"client": 1, "test_accuracy": 0.75}], ledger=Ledger())
    plain = rows_from_result(config, result)
    assert {r["metric"] for r in plain} == {"accuracy", "upload_bytes", "download_bytes", "total_bytes"}
    rows = pd.DataFrame(rows_from_result(config, result, per_client=True, curve=True))
    clients = client_values(rows)
    assert list(clients["client"]) == [0, 1] and list(clients["value"]) == [50.0, 75.0]
    assert set(clients["metric"]) == {"accuracy"} and (clients["seed"] == 4).all()
    curve = curve_values(rows)
    assert list(curve["round"]) == [5, 10] and list(curve["value"]) == [50.0, 62.5]
    assert np.mean(clients["value"]) == pytest.approx(rows.loc[rows.metric == "accuracy", "value"].item())


def test_paper_file_holds_every_number_and_consistent_gains():
    paper = compare.load_paper("fedstar")
    counts = pd.Series([str(e["table"]) for e in paper["results"]]).value_counts().to_dict()
    assert counts == {"1": 28, "2": 18, "3": 12, "4": 12, "10": 9}
    table1 = T.paper_entries(paper, "1").set_index(["method", "dataset"])["mean"]
    printed_gains = {  # Table 1's "avg. gain" column, as printed
        "fedavg": [-0.13, -0.44, -0.45, -2.05], "fedprox": [-0.08, -0.34, -0.16, -1.72],
        "fedper": [1.70, 0.88, -0.01, -4.67], "fedsage": [0.51, -0.74, 0.18, 1.04],
        "gcfl": [1.11, 0.51, 1.28, -0.60], "fedstar": [4.41, 3.46, 2.78, 2.58]}
    for method, gains in printed_gains.items():
        for setting, gain in zip(T.SETTINGS, gains):
            # gains were computed before rounding, so rounded values can be off by 0.01
            assert table1[(method, setting)] - table1[("local", setting)] == pytest.approx(gain, abs=0.011)
    # the same FedStar run appears in Tables 1-4 and 10
    table2 = T.paper_entries(paper, "2").set_index(["setting", "dataset"])["mean"]
    table3 = T.paper_entries(paper, "3").set_index(["setting", "dataset"])["mean"]
    for setting in ("biochem", "biosncv"):
        assert table2[("share=SE,DC=yes", setting)] == table3[("SE=rw_dg", setting)] == table1[("fedstar", setting)]
    assert {c["id"] for c in paper["claims"]} >= {"t1_fedavg_fedprox_not_above_local", "t1_fedstar_beats_all"}


def test_decomposition_walks_from_local_to_fedstar():
    settings = [T.TABLE2_LOCAL, T.table2_setting("None", False), T.table2_setting("None", True),
                T.table2_setting("SE", True)]
    cells = pd.DataFrame({"dataset": ["biochem"] * 4, "setting": settings, "mean": [71.09, 71.59, 74.08, 74.54]})
    steps = T.decomposition(cells)
    assert list(steps["accuracy"]) == [71.09, 71.59, 74.08, 74.54]
    assert list(steps["change"].round(2))[1:] == [0.50, 2.49, 0.46]
    reference = ExperimentConfig.from_dict(T.table2_local_config("biochem", 1))
    assert (reference.table, reference.setting, reference.algorithm) == ("2", T.TABLE2_LOCAL, "local")


def test_sweep_reruns_stored_configs_that_lack_the_requested_rows(tmp_path, monkeypatch):
    from fglcore import experiment

    config = T.table1_config("chem", "local", 1, members=["MUTAG"], rounds=1, evaluate_every=1)
    calls = []
    real_run = experiment.run
    monkeypatch.setattr(experiment, "run", lambda c, **kw: calls.append(kw) or real_run(c, **kw))
    path = tmp_path / "results.csv"
    plain = experiment.sweep([config], path, progress=False)
    assert client_values(plain).empty and len(calls) == 1
    rich = experiment.sweep([config], path, progress=False, per_client=True, curve=True)
    assert len(calls) == 2 and len(client_values(rich)) == 1 and len(curve_values(rich)) == 1
    assert experiment.sweep([config], path, progress=False, per_client=True).equals(rich)
    assert len(calls) == 2  # stored with every requested family: not run again
    assert rich.loc[rich.metric == "accuracy", "value"].item() == plain.loc[plain.metric == "accuracy", "value"].item()


def test_fedavg_readings_name_the_reading_closer_to_the_paper():
    comparison = pd.DataFrame([
        {"dataset": "CHEM", "method": "fedavg", "paper_mean": 75.26, "ours_mean": 71.9},
        {"dataset": "CHEM", "method": "fedper", "paper_mean": 74.5, "ours_mean": 75.0},
        {"dataset": "BIO-CHEM", "method": "fedavg", "paper_mean": 70.0, "ours_mean": 69.5},
        {"dataset": "BIO-CHEM", "method": "fedper", "paper_mean": 71.0, "ours_mean": 60.0},
        {"dataset": "BIO-SN-CV", "method": "fedavg", "paper_mean": 70.0, "ours_mean": 69.5},  # no FedPer run
    ])
    readings = T.fedavg_readings(comparison)
    assert readings["closer"].to_dict() == {"CHEM": "convs only", "BIO-CHEM": "same-shape layers"}
    assert readings.loc["CHEM", "FedAvg, convs only (FedPer)"] == 75.0
