"""FedSpray's results grids (fglcore.papers.fedspray.tables) and params/fedspray/paper.yaml."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from fglcore.compare import check_claims, load_paper
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.papers.fedspray import motivation as fm
from fglcore.papers.fedspray import tables as ft


def settings_of(configs, algorithm):
    return sorted({c.setting for c in configs if c.algorithm == algorithm})


def test_protocol_is_the_papers():
    (config,) = ft.table2_configs(["Cora"], ["gcn"], ["fedavg"], [3])
    assert isinstance(config, ExperimentConfig)
    assert (config.paper, config.table, config.seed) == ("fedspray", "2", 3)
    assert (config.hidden, config.num_layers, config.lr, config.rounds, config.local_epochs) == (64, 2, 0.003, 300, 5)
    assert (config.dropout, config.weight_decay, config.optimizer) == (0.0, 0.0, "adam")
    assert (config.split, config.split_ratios, config.split_seed) == ("per_client_random", [0.4, 0.3, 0.3], None)
    assert config.partition_seed == 0  # the partition stays fixed across seeds, the split does not
    assert (config.selection, config.selection_metric, config.metric_aggregation) == ("best_val", "val_loss", "micro")
    assert ft.SEEDS == [0, 1, 2, 3, 4]


def test_table2_grid_is_complete_and_fedspray_runs_in_both_readings():
    datasets, seeds = ["Cora", "PubMed"], [0, 1]
    configs = ft.table2_configs(datasets, seeds=seeds)
    per_cell = len(ft.TABLE2_METHODS) + 1  # FedSpray twice
    assert len(configs) == len(datasets) * len(ft.BACKBONES) * per_cell * len(seeds)
    cells = {(c.dataset, c.model, c.algorithm, c.setting, c.seed) for c in configs}
    assert len(cells) == len(configs)
    assert {c.algorithm for c in configs} == set(ft.TABLE2_METHODS)
    assert settings_of(configs, "fedspray") == ["", "code"]
    assert all(c.setting == "" and c.algorithm_options == {} for c in configs if c.algorithm != "fedspray")
    for c in configs:
        if c.algorithm == "fedspray":
            assert c.algorithm_options == ({} if c.setting == "" else ft.CODE_OPTIONS)


def test_code_options_are_the_official_code_behaviour():
    assert ft.CODE_OPTIONS == {"labeled_proxies": "persistent", "kd_nodes": "confident",
                               "projector_from": "classifier", "gnn_init": "official", "encoder_init": "official"}
    (config,) = ft.table2_configs(["Cora"], ["gcn"], ["fedspray"], [0], variants=["code"])
    assert config.setting == "code" and config.algorithm_options == ft.CODE_OPTIONS
    with pytest.raises(ConfigError, match="variants: 'paper' is not accepted"):
        ft.table2_configs(["Cora"], ["gcn"], ["fedspray"], [0], variants=["paper"])


def test_paper_datasets_use_official_files_and_stand_ins_louvain_largest():
    pubmed = ft.dataset_setup("PubMed", stand_in_clients=3)
    assert pubmed == {"dataset": "PubMed", "partition": "files", "num_clients": 7,
                      "partition_options": {"path": "FedSpray/partition", "prefix": "PubMed"}}
    assert ft.dataset_setup("Flickr")["num_clients"] == 20
    assert ft.dataset_setup("Cora") == {"dataset": "Cora", "partition": "louvain_largest", "num_clients": 7,
                                        "partition_options": {}}
    configs = ft.table2_configs(["Cora", "WikiCS"], ["gcn"], ["local"], [0], stand_in_clients=4)
    assert [(c.dataset, c.partition, c.num_clients) for c in configs] == [("Cora", "louvain_largest", 4),
                                                                        ("WikiCS", "files", 12)]
    with pytest.raises(ConfigError, match="stand_in_clients"):
        ft.table2_configs(["Cora"], ["gcn"], ["local"], [0], num_clients=4)
    with pytest.raises(ConfigError, match="stand_in_clients"):
        ft.dataset_setup("Cora", stand_in_clients=0)


def test_overrides_are_validated():
    assert {c.rounds for c in ft.table2_configs(["Cora"], ["gcn"], ["local"], [0], rounds=7)} == {7}
    with pytest.raises(ConfigError, match="rounds"):
        ft.table2_configs(["Cora"], ["gcn"], ["local"], [0], rounds=0)
    with pytest.raises(ConfigError, match="not accepted"):
        ft.table2_configs(["Cora"], ["gcn"], ["fedspay"], [0])


def test_availability_lists_missing_paper_datasets():
    table = ft.dataset_availability(["Cora", "PubMed"], stand_in_clients=5)
    assert list(table["role"]) == ["stand-in", "paper"]
    assert list(table["num_clients"]) == [5, 7]
    assert table.set_index("dataset").loc["Cora", "available"]
    assert "status" not in table  # present or in the mirror reads the same on every machine


def test_table3_adds_both_readings_of_zero_proxies():
    configs = ft.table3_configs(["Cora"], seeds=[0])
    assert {c.model for c in configs} == {"gcn"} and {c.table for c in configs} == {"3"}
    options = {c.setting: c.algorithm_options for c in configs}
    assert options == {"": {}, "code": ft.CODE_OPTIONS, "S=0": {"zero_proxies": True},
                       "code, S=0": {**ft.CODE_OPTIONS, "zero_proxies": True},
                       "S=0 class-wise": {"zero_global_proxies": True},
                       "code, S=0 class-wise": {**ft.CODE_OPTIONS, "zero_global_proxies": True}}


def test_sweeps_of_lambda1_proxy_dim_and_epochs():
    l1 = ft.lambda1_configs(["Cora"], seeds=[0], variants=[""])
    assert [c.setting for c in l1] == ["lambda1=0.1", "lambda1=1", "lambda1=5", "lambda1=10", "lambda1=20"]
    assert [c.algorithm_options["lambda1"] for c in l1] == ft.LAMBDA1_VALUES
    assert {c.model for c in l1} == {"sage"} and {c.table for c in l1} == {"fig4"}
    ds = ft.proxy_dim_configs(["Cora"], seeds=[0, 1])
    assert len(ds) == len(ft.PROXY_DIMS) * 2 * 2
    assert {(c.setting, c.algorithm_options["proxy_dim"]) for c in ds if not c.setting.startswith("code")} == {
        (f"d_s={d}", d) for d in ft.PROXY_DIMS}
    t5 = ft.table5_configs(["Cora"], seeds=[0])
    assert len(t5) == len(ft.LOCAL_EPOCHS) * 3
    for c in t5:
        assert c.setting.endswith(f"E={c.local_epochs}") and c.table == "5"
    assert settings_of(t5, "fedavg") == ["E=10", "E=3", "E=5"]


def test_count_runs():
    counts = ft.count_runs(ft.table2_configs(["Cora"], ["gcn"], ["local", "fedspray"], [0, 1], rounds=10))
    assert counts.to_dict("records") == [
        {"table": "2", "method": "local", "runs": 2, "rounds": 20, "epochs": 100},
        {"table": "2", "method": "fedspray", "runs": 4, "rounds": 40, "epochs": 200},
    ]


# -- display helpers --------------------------------------------------------------------------------


def rows(cells):
    """Tidy rows from (method, setting, model, metric, seed, value)."""
    return pd.DataFrame([
        {"paper": "fedspray", "table": "2", "dataset": "Cora", "partition": "louvain_largest", "num_clients": 7,
         "method": m, "model": model, "setting": s, "metric": metric, "seed": seed, "value": v,
         "selected_round": 1, "config_id": f"{m}{s}{model}{seed}"}
        for m, s, model, metric, seed, v in cells
    ])


def test_layout_orders_methods_and_gives_mean_std():
    frame = rows([
        ("fedspray", "", "gcn", "accuracy", 0, 80.0), ("fedspray", "", "gcn", "accuracy", 1, 82.0),
        ("fedavg", "", "gcn", "accuracy", 0, 70.0), ("fedavg", "", "gcn", "accuracy", 1, 70.0),
        ("fedspray", "code", "gcn", "accuracy", 0, 75.0), ("fedspray", "code", "gcn", "accuracy", 1, 75.0),
    ])
    table = ft.layout(frame, row_order=ft.TABLE2_METHODS)
    assert list(table.index.get_level_values("method")) == ["fedavg", "fedspray", "fedspray [code]"]
    assert table.loc[("Cora", "fedspray"), ("gcn", "Overall")] == "81.00 ± 1.00"  # population std
    gaps = ft.gaps(frame, {"method": "fedavg"})
    assert gaps.loc[("Cora", "gcn", "fedspray"), "accuracy"] == pytest.approx(11.0)
    assert gaps.loc[("Cora", "gcn", "fedspray [code]"), "accuracy"] == pytest.approx(5.0)
    with pytest.raises(ValueError, match="no rows for the reference"):
        ft.gaps(frame, {"method": "local"})


def test_sensitivity_frame_parses_the_setting():
    frame = rows([("fedspray", "lambda1=0.1", "sage", "accuracy", 0, 1.0),
                  ("fedspray", "code, lambda1=20", "sage", "accuracy", 0, 2.0)])
    parsed = ft.sensitivity_frame(frame, "lambda1")
    assert list(parsed["lambda1"]) == [0.1, 20.0] and list(parsed["variant"]) == ["paper", "code"]
    with pytest.raises(ValueError, match="names no single d_s"):
        ft.sensitivity_frame(frame, "d_s")
    assert [ft.lambda1_text(v) for v in (0.1, 1.0, 20)] == ["0.1", "1", "20"]


# -- paper.yaml ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def paper():
    return load_paper("fedspray")


def test_paper_yaml_holds_every_cell_of_tables_1_2_3_5(paper):
    entries = paper["results"]
    table2 = [e for e in entries if e["table"] == "2" and e["setting"] == ""]
    assert len(table2) == 4 * 7 * 3 * 2
    assert {e["method"] for e in table2} == set(ft.TABLE2_METHODS)
    assert {(e["dataset"], e["num_clients"]) for e in table2} == set(ft.PAPER_DATASETS.items())
    pubmed_gcn = {(e["method"], e["metric"]): e["mean"] for e in table2 if e["dataset"] == "PubMed"
                  and e["model"] == "gcn"}
    assert pubmed_gcn[("fedspray", "minority_accuracy")] == 62.12 and pubmed_gcn[("fedavg", "accuracy")] == 87.06
    code = [e for e in entries if e["table"] == "2" and e["setting"] == "code"]
    assert len(code) == 4 * 3 * 2 and {e["method"] for e in code} == {"fedspray"}
    assert len([e for e in entries if e["table"] == "1"]) == 7 * 5
    table3 = [e for e in entries if e["table"] == "3"]
    assert len(table3) == 2 * 2 * 2 * 3  # datasets x metrics x readings x (proxies, S=0, S=0 class-wise)
    numbers = {(e["dataset"], e["metric"], e["setting"].replace("code", "").strip(", ")): e["mean"] for e in table3}
    assert numbers[("PubMed", "minority_accuracy", "S=0 class-wise")] == numbers[("PubMed", "minority_accuracy", "S=0")]
    assert len([e for e in entries if e["table"] == "5"]) == 3 * 2 * 3
    homophily = [e for e in entries if e["metric"].endswith("homophily")]
    assert all(e["tolerance"] < 0.01 for e in homophily)


def test_paper_entries_and_claims_name_settings_the_builders_produce(paper):
    produced = {(c.table, c.algorithm, c.setting) for c in [
        *ft.table2_configs(["Cora"], ["gcn"], seeds=[0]), *ft.table3_configs(["Cora"], seeds=[0]),
        *ft.lambda1_configs(["Cora"], seeds=[0]), *ft.proxy_dim_configs(["Cora"], seeds=[0]),
        *ft.table5_configs(["Cora"], seeds=[0]),
        *fm.plan("PubMed", ["Cora"], 7, 0, ["Cora"], ["mlp", "gcn"], 2, 1, 0.003, [0], [0.6], 0.25, 4, 20, 3, 4,
                 1.0)["fig2"]]}
    for e in paper["results"]:
        if e["table"] != "1":
            assert (e["table"], e["method"], e["setting"]) in produced, e
    for claim in paper["claims"]:
        for spec in [claim["winner"], *claim["losers"]]:
            setting = spec.get("setting", "")
            assert (claim["table"], spec["method"], setting) in produced, (claim["id"], spec)


def test_claims_evaluate_on_synthetic_rows(paper):
    frame = rows([(method, "", "gcn", "minority_accuracy", seed, value + seed)
                  for method, value in (("fedspray", 60.0), ("fedavg", 50.0), ("local", 65.0)) for seed in (0, 1)])
    claims = check_claims(frame, paper).set_index(["id", "group"])
    assert claims.loc[("fedspray_beats_fedavg_minority", "overall"), "holds"] is True  # 10 points, noise 1.41
    one_seed = check_claims(frame[frame["seed"] == 0], paper).set_index(["id", "group"])
    assert one_seed.loc[("fedspray_beats_fedavg_minority", "overall"), "holds"] is None  # "notable" needs seed noise
    assert claims.loc[("fedspray_beats_local_minority", "overall"), "holds"] is False
    assert claims.loc[("fedspray_best_minority", "overall"), "holds"] is None  # apfl etc. not run
    assert claims.loc[("fedspray_beats_fedavg_minority", "dataset=Cora, model=gcn"), "data"] == "stand-in"
    mine = check_claims(frame.assign(dataset="MyGraph"), paper, tables=["2"]).set_index(["id", "group"])
    assert mine.loc[("fedspray_beats_local_minority", "dataset=MyGraph, model=gcn"), "detail"] == (
        "not judged: not the paper's data (MyGraph)")
    assert mine["holds"].isna().all() and set(mine["data"]) == {"other", ""}  # "": claims on accuracy, not run


def test_labelled_comparison_for_side_by_side(paper):
    from fglcore.compare import compare, side_by_side

    frame = rows([("fedspray", "code", "gcn", "accuracy", 0, 80.0), ("fedspray", "code", "gcn", "accuracy", 1, 82.0)])
    frame["dataset"], frame["partition"], frame["num_clients"], frame["table"] = "PubMed", "files", 7, "2"
    comparison = compare(frame, paper, table="2")
    ran = ft.labelled(comparison[comparison["status"] != "missing"])
    table = side_by_side(ran, rows=("dataset", "method", "model"), columns="metric")
    assert table.loc[("PubMed", "fedspray [code]", "gcn"), ("Overall", "ours")] == "81.00 ± 1.00"  # population std
    assert table.loc[("PubMed", "fedspray [code]", "gcn"), ("Overall", "paper")] == ft.paper_table(
        paper, "2", settings=("code",)).loc[("PubMed", "fedspray [code]"), ("gcn", "Overall")]
    assert set(ran["data"]) == {"paper"}


def test_paper_table_layout(paper):
    table = ft.paper_table(paper, "3", columns=("metric",), settings=None)
    assert table.loc[("PubMed", "fedspray [S=0]"), "Overall"] == "77.11 ± 0.43"
    assert len(table) == 12
    with pytest.raises(ValueError, match="no results for table '9'"):
        ft.paper_table(paper, "9")
    assert not math.isnan(ft.PROTOCOL["lr"])


def test_selected_rounds_and_methods_identical_to_fedavg():
    frame = rows([
        ("fedavg", "", "gcn", "accuracy", 0, 70.0), ("fedavg", "", "gcn", "accuracy", 1, 71.0),
        ("gcfl", "", "gcn", "accuracy", 0, 70.0), ("gcfl", "", "gcn", "accuracy", 1, 71.0),
        ("local", "", "gcn", "accuracy", 0, 70.0), ("local", "", "gcn", "accuracy", 1, 72.0),
    ])
    frame["selected_round"] = [30, 40, 30, 40, 2, 4]
    rounds = ft.selected_rounds(frame)
    assert rounds.loc[("Cora", "gcn", "local")].tolist() == [3.0, 2, 4]
    assert rounds.loc[("Cora", "gcn", "fedavg")].tolist() == [35.0, 30, 40]
    same = ft.same_as(frame, "fedavg")
    assert same.to_dict("records") == [{"dataset": "Cora", "model": "gcn", "method": "gcfl", "seeds": 2}]


def test_figure2_runs_the_papers_datasets_on_their_official_partition():
    configs = fm.plan("PubMed", ["Cora"], 7, 0, ["PubMed", "Cora"], ["mlp"], 2, 1, 0.003, [0], [0.6], 0.25, 4, 20, 3,
                      4, 1.0)["fig2"]
    partitions = {c.dataset: (c.partition, c.num_clients) for c in configs}
    assert partitions == {"PubMed": ("files", 7), "Cora": ("louvain_largest", 7)}


def test_fedspray_margins_is_the_lead_over_the_best_other_method():
    rows = [{"dataset": "D", "model": "gcn", "method": m, "setting": st, "metric": metric, "seed": seed, "value": v}
            for m, st, metric, seed, v in [
                ("fedavg", "", "accuracy", 0, 80.0), ("fedavg", "", "accuracy", 1, 82.0),
                ("local", "", "accuracy", 0, 70.0), ("fedspray", "", "accuracy", 0, 79.0),
                ("fedspray", "code", "accuracy", 0, 85.0)]]
    margins = ft.fedspray_margins(pd.DataFrame(rows), metrics=["accuracy"]).set_index("label")
    assert margins.loc["fedspray", "accuracy"] == -2.0  # fedavg's mean over seeds is 81
    assert margins.loc["fedspray [code]", "accuracy"] == 4.0
    assert margins.loc["fedspray [code]", "best_other_accuracy"] == "fedavg"


def test_reading_steps_switch_one_code_option_at_a_time():
    from fglcore.results import run_id

    configs = ft.reading_steps_configs(["Cora"], seeds=[0], rounds=2, stand_in_clients=3)
    by_setting = {c.setting: c.algorithm_options for c in configs}
    assert len(configs) == 2 + 2 * len(ft.CODE_OPTIONS) and {c.table for c in configs} == {"readings"}
    assert by_setting["paper"] == {} and by_setting["code"] == ft.CODE_OPTIONS
    for option, value in ft.CODE_OPTIONS.items():
        assert by_setting[f"paper+{option}"] == {option: value}
        assert by_setting[f"code-{option}"] == {k: v for k, v in ft.CODE_OPTIONS.items() if k != option}
    table2 = {c.setting: c for c in ft.table2_configs(["Cora"], ["gcn"], ["fedspray"], [0], rounds=2,
                                                      stand_in_clients=3)}
    assert run_id(configs[0]) == run_id(table2[""])  # the store copies Table 2's runs
    assert run_id(configs[1]) == run_id(table2["code"])


def test_reading_steps_measure_each_setting_against_its_reading():
    rows = [{"table": "readings", "dataset": "D", "model": "gcn", "setting": st, "metric": "accuracy", "seed": seed,
             "value": v}
            for st, seed, v in [("paper", 0, 80.0), ("paper", 1, 82.0), ("code", 0, 86.0),
                                ("paper+kd_nodes", 0, 84.0), ("code-kd_nodes", 0, 83.0)]]
    steps = ft.reading_steps(pd.DataFrame(rows), metrics=["accuracy"]).set_index("setting")
    assert steps.loc["paper+kd_nodes", "against"] == "paper" and steps.loc["paper+kd_nodes", "accuracy_change"] == 3.0
    assert steps.loc["code-kd_nodes", "against"] == "code" and steps.loc["code-kd_nodes", "accuracy_change"] == -3.0


def test_longer_runs_rerun_table2_rows_with_more_rounds_only():
    from fglcore.results import run_id

    configs = ft.longer_runs_configs(["Cora"], ["sgc"], seeds=[0], stand_in_clients=3)
    assert ft.CODE_ROUNDS == 500 and {c.rounds for c in configs} == {500} and {c.table for c in configs} == {"rounds=500"}
    assert [(c.algorithm, c.setting) for c in configs] == [("local", ""), ("fedavg", ""), ("fedspray", ""),
                                                           ("fedspray", "code")]
    table2 = ft.table2_configs(["Cora"], ["sgc"], ft.ROUNDS_METHODS, [0], rounds=500, stand_in_clients=3)
    assert [run_id(c) for c in configs] == [run_id(c) for c in table2]  # only the rounds differ from Table 2's
    plan = ft.results_plan(["Cora"], 3, ["gcn"], ["local", "fedspray"], [""], 3, [0], longer_rounds=[6, 9],
                           longer_datasets=["Cora"], longer_models=["gcn"])
    assert [(c.table, c.algorithm, c.rounds) for c in plan["longer"]] == [
        ("rounds=6", "local", 6), ("rounds=6", "fedspray", 6), ("rounds=9", "local", 9), ("rounds=9", "fedspray", 9)]
    with pytest.raises(ConfigError, match="parameter 'longer_rounds'"):
        ft.results_plan(["Cora"], 3, ["gcn"], ["local"], [""], 3, [0], longer_rounds=[0], longer_datasets=["Cora"])


def test_rounds_effect_sets_longer_runs_beside_table2_and_the_paper():
    rows = [{"table": t, "dataset": "D", "model": "sgc", "method": m, "setting": st, "metric": metric, "seed": seed,
             "value": v, "selected_round": r}
            for t, m, st, seed, r, acc, mino in [("2", "fedavg", "", 0, 300, 76.0, 50.0), ("2", "fedavg", "", 1, 300, 78.0, 52.0),
                                                  ("rounds=500", "fedavg", "", 0, 420, 81.0, 55.0),
                                                  ("rounds=500", "fedavg", "", 1, 500, 83.0, 57.0),
                                                  ("rounds=1000", "fedavg", "", 0, 900, 84.0, 58.0),
                                                  ("2", "local", "", 0, 300, 86.0, 40.0)]
            for metric, v in (("accuracy", acc), ("minority_accuracy", mino))]
    paper = pd.DataFrame([{"dataset": "D", "model": "sgc", "method": "fedavg", "setting": "", "metric": metric,
                           "mean": v} for metric, v in (("accuracy", 82.0), ("minority_accuracy", 56.0))])
    effect = ft.rounds_effect(pd.DataFrame(rows), 300, paper)
    assert effect["label"].tolist() == ["fedavg"] * 4  # local did not run longer: left out
    assert effect["rounds"].tolist() == ["300", "500", "1000", "paper"]  # by number of rounds, not as text
    assert effect["accuracy"].tolist() == [77.0, 82.0, 84.0, 82.0]
    assert effect["minority_accuracy"].tolist() == [51.0, 56.0, 58.0, 56.0]
    assert effect["selected_round"].tolist()[:3] == [300.0, 460.0, 900.0]
    assert effect["seeds"].tolist() == [2, 2, 1, pd.NA]
    assert ft.rounds_effect(pd.DataFrame(rows).query("table == '2'"), 300).empty


def test_majority_node_accuracy_inverts_pooled_accuracy():
    profiles = pd.DataFrame({"dataset": ["D"], "minority_share_pooled": [0.2]})
    rows = [{"dataset": "D", "model": "gcn", "method": m, "setting": "", "metric": metric, "value": v}
            for m, metric, v in [("majority", "accuracy", 80.0), ("majority", "minority_accuracy", 0.0),
                                 ("other", "accuracy", 70.0), ("other", "minority_accuracy", 50.0)]]
    implied = ft.majority_node_accuracy(pd.DataFrame(rows), profiles).set_index("label")["majority_accuracy"]
    assert implied["majority"] == pytest.approx(100.0)  # every majority node right, no minority node
    assert implied["other"] == pytest.approx(75.0)  # 0.8 * 75 + 0.2 * 50 = 70
    assert ft.majority_node_accuracy(pd.DataFrame(rows).assign(dataset="E"), profiles).empty


def test_lambda1_against_rivals_sets_each_lambda1_against_the_best_other_table2_method():
    table2 = rows([
        ("fedavg", "", "sage", "minority_accuracy", 0, 60.0), ("fedavg", "", "sage", "minority_accuracy", 1, 62.0),
        ("fedlit", "", "sage", "minority_accuracy", 0, 66.0), ("fedlit", "", "sage", "minority_accuracy", 1, 64.0),
        ("fedspray", "", "sage", "minority_accuracy", 0, 99.0),  # FedSpray itself is never its own rival
        ("local", "", "sage", "accuracy", 0, 99.0),  # another metric
    ])
    sweep = rows([
        ("fedspray", "lambda1=1", "sage", "minority_accuracy", 0, 55.0),
        ("fedspray", "lambda1=1", "sage", "minority_accuracy", 1, 57.0),
        ("fedspray", "code, lambda1=10", "sage", "minority_accuracy", 0, 67.0),
    ]).assign(table="fig4")
    out = ft.lambda1_against_rivals(sweep, table2)
    assert out[["reading", "lambda1", "fedspray", "seeds", "best other", "other", "margin"]].values.tolist() == [
        ["code", 10.0, 67.0, 1, "fedlit", 65.0, 2.0], ["paper", 1.0, 56.0, 2, "fedlit", 65.0, -9.0]]
    assert ft.lambda1_against_rivals(sweep, table2.iloc[:0]).empty
