"""O-pFGL's results plan (fglcore.papers.opfgl.tables), its method plan, and FedSpray's one-shot protocol."""
from __future__ import annotations

import pandas as pd
import pytest

from fglcore.algorithms import ALGORITHMS
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.papers.opfgl import method as om
from fglcore.papers.opfgl import tables as ot

ALL = ot.METHODS + ["fedavg"]


def plan(**changes):
    args = dict(tables=["1", "9", "17"], datasets=["Cora", "ogbn-arxiv"], methods=ALL, seeds=[0, 1],
                condense_iterations=10, max_epochs=20, epochs_grid=[5], local_rounds=3, multi_rounds=2)
    return ot.results_plan(**{**args, **changes})


def test_plan_runs_the_registered_methods_on_available_data_and_names_the_rest():
    p = plan()
    registered = [m for m in ot.METHODS if m in ALGORITHMS]
    t1 = p["configs"]["1"]
    assert {c.algorithm for c in t1} == set(registered)
    assert {c.dataset for c in t1} == {"Cora"}  # ogbn-arxiv is not registered here
    assert len(t1) == len(registered) * 2
    for c in t1:
        assert (c.paper, c.partition, c.num_clients, c.partition_seed, c.split_seed, c.metric_aggregation) == (
            "opfgl", "louvain_plus", 10, 42, 42, "client_weighted")
    assert {c.model for c in p["configs"]["17"]} == set(ot.BACKBONES)
    status = p["status"].set_index(["table", "dataset", "method"])["why"]
    for m in ot.METHODS:
        expected = "runs" if m in ALGORITHMS else "not implemented"
        assert status[("1", "Cora", m)] == expected
    assert status[("1", "ogbn-arxiv", "opfgl")].startswith("data not available")
    assert status[("9", "Cora", "fedavg")] == "ran 2 rounds, paper 100"


def test_opfgl_runs_the_authors_command_and_baselines_the_one_shot_protocol():
    by = {(c.table, c.algorithm): c for c in plan()["configs"]["1"] + plan()["configs"]["9"] if c.seed == 0}
    o = by[("1", "opfgl")].algorithm_options
    assert (o["hre_min_degree"], o["hre_confidence"], o["stage2_lr"], o["condense_iterations"]) == (20, 1.0, 5e-5, 10)
    assert by[("1", "fedavg_ft")].algorithm_options["local_epochs_grid"] == [5]
    assert by[("1", "fedspray")].algorithm_options["one_shot"] == {"local_epochs_grid": [5], "max_epochs": 20}
    assert by[("1", "fedspray")].rounds == 1 and by[("1", "local")].selection == "best_val"
    for method in ("dense", "coboost", "fedtad"):  # the one-shot protocol: epochs grid, fine-tuning cap
        options = by[("1", method)].algorithm_options
        assert (by[("1", method)].rounds, options["local_epochs_grid"], options["max_epochs"]) == (1, [5], 20)
    assert by[("1", "fedtad")].algorithm_options["fine_tune"] is True
    for method in ("fedpub", "fedgta", "fedlog"):  # the grid of every one-round baseline, without fine-tuning
        assert by[("1", method)].algorithm_options["local_epochs_grid"] == [5]
    assert {by[("1", m)].algorithm_options["epochs_selection"] for m in ("dense", "coboost")} == {"teachers"}
    assert not any("epochs" in by[("1", m)].algorithm_options for m in ("dense", "coboost"))  # their own 200
    cut = {c.algorithm: c.algorithm_options for c in plan(distill_epochs=7)["configs"]["1"] if c.seed == 0}
    assert (cut["dense"]["epochs"], cut["coboost"]["epochs"]) == (7, 7)
    assert all("epochs" not in options for m, options in cut.items() if m not in ("dense", "coboost"))
    assert (by[("9", "fedavg")].rounds, by[("9", "fedavg")].setting) == (2, "rounds=2")
    assert (by[("9", "opfgl")].rounds, by[("9", "opfgl")].setting) == (1, "")


@pytest.mark.parametrize("key, value, match", [
    ("tables", ["2"], "tables"), ("methods", ["bogus"], "methods"), ("datasets", ["Coraa"], "datasets"),
    ("epochs_grid", [0], "epochs_grid"), ("max_epochs", 0, "max_epochs"), ("seeds", [], "seeds"),
    ("distill_epochs", -1, "distill_epochs"),
])
def test_bad_parameters_name_themselves(key, value, match):
    with pytest.raises(ConfigError, match=match):
        plan(**{key: value})


def test_fedspray_one_shot_searches_epochs_and_fine_tunes():
    from fglcore.experiment import run_full

    config = ExperimentConfig.from_dict({**ot.paper_protocol(), "dataset": "Cora", "partition": "louvain_plus",
                                         "num_clients": 10, "algorithm": "fedspray", "lr": 0.003, "rounds": 1,
                                         "algorithm_options": {"one_shot": {"local_epochs_grid": [1, 3],
                                                                            "max_epochs": 10, "eval_every": 5}}})
    rows, result = run_full(config)
    search = result.extras["epochs_search"]
    assert [s["local_epochs"] for s in search] == [1, 3]
    best = max(search, key=lambda s: s["val_accuracy"])
    assert result.metrics["val_accuracy"] == best["val_accuracy"]
    assert all(row["ft_epochs"] == 11 for row in result.per_client)  # 11 steps: 0..10, as O-pFGL's loop


@pytest.mark.parametrize("options, match", [
    ({"one_shot": {"foo": 1}}, "one_shot: unknown key 'foo'"),
    ({"one_shot": {"local_epochs_grid": [0]}}, "one_shot.local_epochs_grid"),
])
def test_fedspray_one_shot_options_are_checked(options, match):
    with pytest.raises(ConfigError, match=match):
        ExperimentConfig.from_dict({"algorithm": "fedspray", "rounds": 1, "algorithm_options": options})
    with pytest.raises(ConfigError, match="rounds"):
        ExperimentConfig.from_dict({"algorithm": "fedspray", "rounds": 3,
                                    "algorithm_options": {"one_shot": {"max_epochs": 5}}})


def test_analytic_bytes_are_table_25_counted():
    assert om.gcn_parameters(1433, 64, 7) == 92231  # the digest's count for Cora
    up = om.analytic_bytes("opfgl", num_features=1433, num_classes=7, hidden=64, hops=1, pseudo_nodes=7)
    assert up == {"upload": 7 * (2 * 2 * 1433 + 3) * 8, "download": 7 * (1433 + 7 + 1) * 4}
    one = om.analytic_bytes("fedavg", num_features=1433, num_classes=7, hidden=64, hops=1, pseudo_nodes=0,
                            one_shot=True)
    many = om.analytic_bytes("fedavg", num_features=1433, num_classes=7, hidden=64, hops=1, pseudo_nodes=0, rounds=3)
    assert one["download"] == 92231 * 4 and many["download"] == 4 * 92231 * 4
    with pytest.raises(ValueError, match="fedspray"):
        om.analytic_bytes("fedspray", num_features=1, num_classes=1, hidden=1, hops=1, pseudo_nodes=1)


def test_the_ablation_plan_runs_focal_fine_tuning_and_the_link_predictor_variants():
    from fglcore.algorithms.opfgl import Opfgl

    p = ot.ablations_plan(["fig3", "fig4", "23"], ["Cora"], [0], 10, 20, {}, ["Cora"], [10], ["opfgl"], [5], 3)
    assert set(p["status"]["why"]) == {"runs"}
    by = {(c.table, c.setting): c for c in p["configs"]["fig3"] + p["configs"]["fig4"] + p["configs"]["23"]}
    for table in ("fig3", "fig4"):
        options = Opfgl.check_options(by[(table, "stage2=ft_focal")].algorithm_options)
        assert (options["stage2"], options["focal_gamma"], options["focal_alpha"]) == ("ft_focal", 2.0, "none")
    assert by[("fig4", "stage2=ft_focal")].partition == "metis_plus"
    for kind in ("direct", "inner_product"):
        config = by[("23", f"pge={kind}")]
        assert Opfgl.check_options(config.algorithm_options)["pge"] == kind and config.partition == "louvain_plus"
    assert Opfgl.check_options(by[("23", "")].algorithm_options)["pge"] == "mlp"
    for settings in ot.ABLATION_SETTINGS.values():
        for changes in settings.values():
            Opfgl.check_options(changes)  # every variant is a valid option set


def test_tables_3_and_11_give_every_client_its_own_model_and_name_what_cannot_run():
    p = plan(tables=["3", "11"], datasets=["Cora", "CiteSeer", "ogbn-arxiv"])
    for table, partition in (("3", "louvain_plus"), ("11", "metis_plus")):
        configs = p["configs"][table]
        assert {c.algorithm for c in configs} == set(ot.HETERO_METHODS)
        assert {c.dataset for c in configs} == {"Cora", "CiteSeer"}
        assert len(configs) == 6 * 2 * 2  # methods x datasets x seeds
        for c in configs:
            assert (c.model, c.num_clients, c.partition, c.table) == ("hetero", 10, partition, table)
    status = p["status"].set_index(["table", "dataset", "method"])["why"]
    for method in ot.HETERO_METHODS:
        assert status[("3", "Cora", method)] == "runs"
    assert status[("11", "CiteSeer", "opfgl")] == "runs"
    p = plan(tables=["3"], datasets=["Cora"], methods=["local", "fedspray", "opfgl"])  # a profile's rows
    assert p["status"].set_index(["table", "dataset", "method"])["why"][("3", "Cora", "dense")] == \
        "not in this profile"
    assert status[("3", "ogbn-arxiv", "local")].startswith("data not available")


def test_tables_3_and_11_rows_are_the_papers():
    from fglcore.compare import load_paper

    rows = [e for e in load_paper("opfgl")["results"] if e["table"] in ("3", "11")]
    assert {e["method"] for e in rows} == set(ot.HETERO_METHODS)
    assert {e["model"] for e in rows} == {"hetero"}
    keys = {(e["table"], e["dataset"], e["partition"], e["num_clients"], e["model"], e["method"]) for e in rows}
    for c in [c for cs in plan(tables=["3", "11"], datasets=["Cora", "CiteSeer"])["configs"].values() for c in cs]:
        assert (c.table, c.dataset, c.partition, c.num_clients, c.model, c.algorithm) in keys, c


def test_ablation_layout_orders_rows_as_planned_whatever_the_store_order():
    rows = pd.DataFrame([
        {"table": "fig3", "setting": s, "dataset": "Cora", "metric": "accuracy", "seed": 0, "value": v}
        for s, v in (("stage2=fixed", 1.0), ("hre=off", 2.0), ("stage2=ft_focal", 3.0), ("", 4.0), ("stage2=ft", 5.0))
    ])
    expected = ["(full method)", "stage2=ft", "stage2=ft_focal", "stage2=fixed", "hre=off"]
    for order in (rows, rows.iloc[::-1]):
        layout = ot.ablation_layout(order, "accuracy")
        assert list(layout.index.get_level_values("setting")) == expected


def test_one_round_fedgta_and_fedpub_choose_their_local_epochs_on_validation_without_fine_tuning():
    for method in ("fedgta", "fedpub"):
        fields = ot.baseline_fields(method, epochs_grid=[5, 50], max_epochs=300, local_rounds=100)
        assert fields["rounds"] == 1 and fields["algorithm_options"]["local_epochs_grid"] == [5, 50]
        assert not fields["algorithm_options"].get("fine_tune", False)
        ExperimentConfig.from_dict({"algorithm": method, **fields})  # accepted by the algorithm


def test_the_partition_check_draws_table_1s_louvain_plus_at_each_seed_and_rejects_bad_seeds():
    p = ot.ablations_plan(["partitions"], ["Cora"], [0, 1], 10, 20, {}, ["Cora"], [10], ["opfgl"], [5], 3,
                          partition_seeds=[42, 7], partition_methods=["local", "opfgl"])
    configs = p["configs"]["partitions"]
    assert len(configs) == 2 * 2 * 2  # draws x methods x seeds
    for c in configs:
        assert (c.partition, c.num_clients, c.split_seed) == ("louvain_plus", 10, 42)
        assert c.setting == f"partition_seed={c.partition_seed}"
    assert {c.partition_seed for c in configs} == {42, 7}
    default = ot.ablations_plan(["partitions"], ["Cora"], [0], 10, 20, {}, ["Cora"], [10], ["opfgl"], [5], 3)
    assert {c.partition_seed for c in default["configs"]["partitions"]} == {42}
    assert {c.algorithm for c in default["configs"]["partitions"]} == set(ot.PARTITION_METHODS)
    for bad, named in (([-1], "partition_seeds"), (["a"], "partition_seeds"), ([], "partition_seeds")):
        with pytest.raises(ConfigError, match=named):
            ot.ablations_plan(["partitions"], ["Cora"], [0], 10, 20, {}, ["Cora"], [10], ["opfgl"], [5], 3,
                              partition_seeds=bad)
    with pytest.raises(ConfigError, match="partition_methods.*'fedx'"):
        ot.ablations_plan(["partitions"], ["Cora"], [0], 10, 20, {}, ["Cora"], [10], ["opfgl"], [5], 3,
                          partition_methods=["fedx"])


def test_partition_margins_are_opfgl_minus_each_rival_per_draw_with_the_papers_table_1_margin():
    rows = pd.DataFrame([
        {"table": "partitions", "setting": f"partition_seed={d}", "dataset": "Cora", "method": m, "metric": metric,
         "seed": s, "value": base + shift + s}
        for d, shift in ((42, 0.0), (0, 4.0))
        for m, base in (("opfgl", 70.0), ("fedtad", 68.0))
        for metric in ("accuracy", "macro_f1") for s in (0, 1)
    ])
    rows.loc[(rows["method"] == "fedtad") & (rows["setting"] == "partition_seed=0"), "value"] -= 3.0
    margins = ot.partition_margins(rows).set_index(["rival", "draw"])
    assert margins.loc[("fedtad", "partition_seed=42"), "accuracy"] == "+2.00"
    assert margins.loc[("fedtad", "partition_seed=0"), "accuracy"] == "+5.00"
    assert margins.loc[("fedtad", "mean over draws"), "macro_f1"] == "+3.50"
    assert margins.loc[("fedtad", "lowest .. highest"), "accuracy"] == "+2.00 .. +5.00"
    # Table 1, Cora, Louvain+ 10 clients: O-pFGL 76.43 / 61.58, FedTAD 70.10 / 45.57 (paper.yaml)
    assert margins.loc[("fedtad", "paper (Table 1)"), "accuracy"] == "+6.33"
    assert margins.loc[("fedtad", "paper (Table 1)"), "macro_f1"] == "+16.01"
    assert ot.partition_margins(rows[rows["method"] != "opfgl"]).empty
    # a seed O-pFGL has not run yet is left out of the rival's side too (paired per seed)
    unpaired = rows[~((rows["method"] == "opfgl") & (rows["seed"] == 1) & (rows["setting"] == "partition_seed=0"))]
    margins = ot.partition_margins(unpaired).set_index(["rival", "draw"])
    assert margins.loc[("fedtad", "partition_seed=0"), "accuracy"] == "+5.00"
