"""FedStar's table builders and layouts; its paper.yaml (numbers, aggregation A1, data) through fglcore.compare."""
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
from fglcore.results import RESULT_COLUMNS, client_values, curve_values, rows_from_result


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


def _client_rows(values: dict[tuple[str, int], list[float]], num_clients: int = 7) -> pd.DataFrame:
    """Results rows from {(method, client): [value per seed]}: ``accuracy[client=K]`` and the run's client average."""
    rows, runs = [], {}
    labels = {"paper": "fedstar", "table": "1", "dataset": "chem", "partition": "by_dataset",
              "num_clients": num_clients, "model": "gin", "setting": "", "selected_round": 200}
    for (method, client), per_seed in values.items():
        for seed, value in enumerate(per_seed, start=1):
            rows.append({**labels, "method": method, "metric": f"accuracy[client={client}]", "seed": seed,
                         "value": value, "config_id": f"{method}{seed}"})
            runs.setdefault((method, seed), []).append(value)
    rows += [{**labels, "method": method, "metric": "accuracy", "seed": seed, "value": float(np.mean(v)),
              "config_id": f"{method}{seed}"} for (method, seed), v in runs.items()]
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)


def test_paper_yaml_declares_the_official_aggregation_and_compare_applies_it():
    # client 0 wobbles a lot, client 1 moves against it: the client average barely moves.
    rows = _client_rows({("fedstar", 0): [70.0, 80.0, 90.0], ("fedstar", 1): [90.0, 80.0, 70.0],
                         ("local", 0): [60.0, 60.0, 60.0], ("local", 1): [70.0, 70.0, 70.0]})
    assert compare.load_paper("fedstar")["aggregation"] == {"std": "over_clients", "ddof": 1, "tables": {}}
    cells = compare.ours_cells(rows, "fedstar").set_index("method")
    assert cells.loc["fedstar", "mean"] == pytest.approx(80.0)
    assert cells.loc["fedstar", "std"] == pytest.approx(10.0)  # mean over clients of std(ddof=1) = 10
    assert cells.loc["fedstar", "std_of_mean"] == pytest.approx(0.0)  # the spread of the client average
    assert cells.loc["fedstar", "n_seeds"] == 3 and cells.loc["fedstar", "n_clients"] == 2
    assert cells.loc["local", "std"] == pytest.approx(0.0)
    gains = T.gains_over(cells.reset_index(), "local")
    assert list(gains) == pytest.approx([15.0, 0.0])
    single = compare.ours_cells(_client_rows({("local", 0): [60.0]}), "fedstar")
    assert math.isnan(single["std"].iloc[0])
    comparison = compare.compare(rows, "fedstar", table="1").set_index("method")
    fedstar = comparison.loc["fedstar"][lambda r: r["dataset"] == "chem"].iloc[0]
    assert fedstar["ours_std"] == pytest.approx(10.0) and fedstar["delta"] == pytest.approx(80.0 - 79.79)
    assert fedstar["tolerance"] == pytest.approx(2 * math.sqrt(2.44**2 + 10.0**2))
    assert fedstar["status"] == "match" and fedstar["data"] == "paper"


def test_a_setting_on_some_of_its_members_is_a_subset_and_collab_less_settings_stand_in():
    rows = _client_rows({("fedstar", 0): [80.0, 82.0], ("local", 0): [70.0, 71.0], ("fedavg", 0): [69.0, 70.0],
                         ("fedprox", 0): [68.0, 68.5]}, num_clients=2)
    comparison = compare.compare(rows, "fedstar", table="1")
    ran = comparison[comparison["status"] != "missing"]
    assert set(ran["status"]) == {"subset"} and set(ran["data"]) == {"subset"} and len(ran) == 4
    claims = compare.check_claims(rows, "fedstar", tables=["1"])
    judged = claims[claims["group"] == "dataset=chem"]
    assert judged["holds"].isna().all() and set(judged["data"]) == {"subset"}
    assert judged["detail"].iloc[0] == "not judged: a subset of the paper's setting (chem on 2 clients, the paper's 7)"
    paper = compare.load_paper("fedstar")
    assert compare.data_role(paper, "1", "biochemsn", 12) == "stand-in"  # without COLLAB, declared
    assert compare.data_role(paper, "2", "biosncv", 8) == "stand-in"
    assert compare.data_role(paper, "1", "biosncv", 9) == "paper"
    assert compare.data_role(paper, "fig4", "chem", 28) == "paper"  # 4 shards of every CHEM dataset
    assert compare.data_role(paper, "fig4", "chem", 8) == "subset"  # 4 shards of 2 CHEM datasets
    shards = _client_rows({("fedstar", 0): [80.0], ("gcfl", 0): [70.0], ("fedavg", 0): [75.0]}, num_clients=8)
    shards["table"], shards["setting"] = "fig4", "shards=4"
    detail = compare.check_claims(shards, paper, tables=["fig4"])["detail"].iloc[-1]
    assert detail == ("not judged: a subset of the paper's setting "
                      "(chem on 8 clients, the paper's 7, 14, 28, 42, 56, 70, 84)")
    assert compare.data_role(paper, "1", "MyGraph", 3) == "other"


def test_ours_table_and_setting_parts():
    ours = T.ours_table(compare.ours_cells(_client_rows({("local", 0): [60.0, 62.0], ("fedstar", 0): [70.0, 72.0]}),
                                          "fedstar"),
                        gain_over="local", row_order=["local", "fedstar"], row_labels=T.METHOD_LABELS)
    assert list(ours.index) == ["Local", "FedStar"]
    assert ours.loc["FedStar", ("chem", "gain")] == "+10.00" and ours.loc["Local", ("chem", "gain")] == "–"
    assert ours.loc["Local", ("chem", "avg.")] == "61.00 ± 1.41"
    cells = pd.DataFrame({"dataset": ["a", "b"], "setting": ["FE=gin,SE=gcn"] * 2})
    parts = T.setting_parts(cells)
    assert set(parts["FE"]) == {"gin"} and set(parts["SE"]) == {"gcn"}


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
    table1 = compare.paper_entries(paper, "1").set_index(["method", "dataset"])["mean"]
    printed_gains = {  # Table 1's "avg. gain" column, as printed
        "fedavg": [-0.13, -0.44, -0.45, -2.05], "fedprox": [-0.08, -0.34, -0.16, -1.72],
        "fedper": [1.70, 0.88, -0.01, -4.67], "fedsage": [0.51, -0.74, 0.18, 1.04],
        "gcfl": [1.11, 0.51, 1.28, -0.60], "fedstar": [4.41, 3.46, 2.78, 2.58]}
    for method, gains in printed_gains.items():
        for setting, gain in zip(T.SETTINGS, gains):
            # gains were computed before rounding, so rounded values can be off by 0.01
            assert table1[(method, setting)] - table1[("local", setting)] == pytest.approx(gain, abs=0.011)
    # the same FedStar run appears in Tables 1-4 and 10
    table2 = compare.paper_entries(paper, "2").set_index(["setting", "dataset"])["mean"]
    table3 = compare.paper_entries(paper, "3").set_index(["setting", "dataset"])["mean"]
    for setting in ("biochem", "biosncv"):
        assert table2[("share=SE,DC=yes", setting)] == table3[("SE=rw_dg", setting)] == table1[("fedstar", setting)]
    assert {c["id"] for c in paper["claims"]} >= {"t1_fedavg_fedprox_not_above_local", "t1_fedstar_beats_all",
                                                   "f4_fedstar_best_every_scale", "t10_default_backbones_best"}


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
    real_prepare = experiment.prepare  # every computed run of a sweep is prepared once
    monkeypatch.setattr(experiment, "prepare", lambda c: calls.append(c) or real_prepare(c))
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
