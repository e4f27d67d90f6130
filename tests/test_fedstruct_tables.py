"""FedStruct's grids: every run is labelled as paper.yaml labels the cell it fills; rows without an algorithm are
listed, not run; Table 5's settings reach the configs."""
from __future__ import annotations

import pytest

from fglcore.config import ExperimentConfig
from fglcore.algorithms import ALGORITHMS
from fglcore.compare import paper_entries
from fglcore.config import ConfigError
from fglcore.papers.fedstruct import motivation, tables as ft


def _keys(table: str) -> set[tuple]:
    entries = paper_entries("fedstruct", table)
    return {(e["dataset"], e["partition"] if isinstance(e["partition"], str) else None,
             int(e["num_clients"]) if e["num_clients"] == e["num_clients"] else None, e["method"],
             e["model"] if isinstance(e["model"], str) else None, e["setting"]) for _, e in entries.iterrows()}


def _matches(config, keys: set[tuple]) -> bool:
    for dataset, partition, k, method, model, setting in keys:
        if (dataset, method, setting) == (config.dataset, config.algorithm, config.setting) and \
                partition in (None, config.partition) and k in (None, config.num_clients) and \
                model in (None, config.model):
            return True
    return False


@pytest.mark.parametrize("table,build", [
    ("2", lambda: ft.table2_configs(["Cora", "Chameleon"], [5, 10, 20], ft.TABLE2_ROWS, [0])),
    ("6", lambda: ft.partition_configs("6", ["Cora", "PubMed"], ["louvain", "random", "kmeans"], ft.TABLE6_ROWS, [0])),
    ("7", lambda: ft.partition_configs("7", ["Photo"], ["louvain", "random", "kmeans"], ft.TABLE7_ROWS, [0])),
    ("8", lambda: ft.partition_configs("8", ["Cora", "CiteSeer", "Chameleon", "Photo"], ["louvain", "random", "kmeans"],
                                       ["central_dgcn", "fedstruct_h2v", "fedstruct_n2v", "fedstruct_gnn_h2v",
                                        "fedstruct_gnn_n2v"], [0])),
    ("fig6", lambda: ft.figure6_configs("Photo", ft.FIG6_TRAIN, ft.FIG6_ROWS, [0])),
])
def test_every_run_fills_a_cell_of_the_paper(table, build):
    configs = build()
    keys = _keys(table)
    assert configs and all(_matches(c, keys) for c in configs), [c.setting for c in configs if not _matches(c, keys)]
    assert {c.paper for c in configs} == {"fedstruct"} and {c.table for c in configs} == {table}


def test_rows_without_an_algorithm_are_listed_not_run():
    run, missing = ft.split_rows(ft.TABLE2_ROWS)
    registered = set(ALGORITHMS.names())
    assert all(ft.ROWS[r].algorithm in registered for r in run)
    assert all(ft.ROWS[r].algorithm not in registered for r in missing)
    assert {"fedgcn_2hop", "fedstruct_h2v", "central", "local", "fedsgd"} <= set(run)
    configs = ft.table2_configs(["Cora"], [10], ft.TABLE2_ROWS, [0])
    assert {c.algorithm for c in configs} == {ft.ROWS[r].algorithm for r in run}
    table = ft.not_implemented_rows(missing, ["Cora"])
    assert set(table["ours"]) <= {"not implemented"}
    with pytest.raises(ConfigError, match="methods"):
        ft.split_rows(["fedstruct_h2v", "fedstruct_h2"])


def test_table5_reaches_the_configs():
    configs = {(c.algorithm, c.setting): c for c in ft.table2_configs(["PubMed"], [10], ft.TABLE2_ROWS, [3])}
    h2v = configs[("fedstruct", "nsf=h2v")]
    assert (h2v.lr, h2v.weight_decay, h2v.rounds, h2v.dropout, h2v.hidden) == (0.008, 0.001, 125, 0.5, 128)
    assert h2v.algorithm_options["structure_hops"] == 20 and h2v.algorithm_options["feature_hops"] == 2
    assert h2v.algorithm_options["structure_hidden"] == [128] and h2v.selection == "last"
    assert h2v.split_ratios == [0.1, 0.1, 0.8] and h2v.seed == 3 and h2v.evaluate_every == 125
    sage = configs[("fedsgd", "")]
    assert (sage.model, sage.hidden, sage.num_layers) == ("sage", 256, 2)
    quick = ft.table2_configs(["PubMed"], [10], ["fedsgd"], [0], rounds=4)
    assert quick[0].rounds == 4 and quick[0].evaluate_every == 4
    central = [c for c in ft.table2_configs(["Cora"], [5, 20], ["central"], [0, 1])]
    assert [c.num_clients for c in central] == [5, 5]  # once per dataset and seed


def test_labels_and_plans():
    assert ft.row_label("fedstruct", "nsf=h2v, pruning=none, cap=plus") == "FedStruct (H2V)-F"
    assert ft.row_label("fedsgd", "cap=plus", "mlp") == "FedSGD MLP"
    assert ft.row_label("fedsgd", "", "sage") == "FedSGD GNN"
    plan = ft.results_plan(["Cora", "Amazon-ratings"], [5], ["central", "fedstruct_h2v"], [0], 2, ["Photo"],
                           ["fedstruct_h2v"], 1)
    assert plan["missing"] == ["Amazon-ratings"] and len(plan["table2"]) == 2 and len(plan["cost"]) == 2
    with pytest.raises(ConfigError, match="parameter 'seeds'"):
        ft.results_plan(["Cora"], [5], ["central"], [-1], 2, [], ["central"], 1)
    with pytest.raises(ConfigError, match="partitions"):
        motivation.plan(["Cora"], ["metis"], [5], ["Cora"], ["central"], [0], 1)
    ablations = ft.ablations_plan(["Cora"], ["louvain"], ["fedstruct_h2v", "central"], ["fedstruct_h2v_f"], [0], 2,
                                  "Chameleon", [5], ["fedstruct_h2v"])
    assert sorted(c.setting for c in ablations["table6"]) == ["", "nsf=h2v, cap=plus"]
    assert all(c.partition_options == {"cap": "plus"} for c in ablations["table6"])
    assert ablations["table8"] == []  # no Table 8 unless asked for
    table8 = ft.ablations_plan(["Cora"], ["louvain", "random"], [], [], [0], 2, "Chameleon", [5], [],
                               table8_methods=["central_dgcn", "fedstruct_n2v"], table8_datasets=["Cora"])["table8"]
    assert sorted(c.setting for c in table8) == ["", "nsf=n2v, sgnn=decoupled_gcn", "nsf=n2v, sgnn=decoupled_gcn, cap=plus"]
    n2v = [c for c in table8 if c.algorithm == "fedstruct"]
    assert all(c.algorithm_options["nsf"] == "n2v" and c.algorithm_options["pruning"] == "none"
               and c.algorithm_options["abar_protocol"] == "server" and c.table == "8" for c in n2v)
    entries = paper_entries("fedstruct", "8")
    cora = entries[(entries["dataset"] == "Cora") & (entries["method"] == "fedstruct")]
    paper = set(zip(cora["partition"], cora["setting"]))
    assert {(c.partition, c.setting) for c in n2v} <= paper  # the paper's cells, so compare finds them


def test_table8_gdv_row_is_the_global_graphs_gdv_with_its_73_wide_structure_features():
    table8 = ft.ablations_plan(["Cora"], ["louvain", "random", "kmeans"], [], [], [0], 2, "Chameleon", [5], [],
                               table8_methods=["fedstruct_gdv"], table8_datasets=["Cora"])["table8"]
    assert sorted(c.setting for c in table8) == ["nsf=gdv, sgnn=decoupled_gcn", "nsf=gdv, sgnn=decoupled_gcn",
                                                 "nsf=gdv, sgnn=decoupled_gcn, cap=plus"]
    for c in table8:
        o = c.algorithm_options
        assert (o["nsf"], o["pruning"], o["abar_protocol"], o["structure_dim"], c.table) == \
            ("gdv", "none", "server", 73, "8")
        ALGORITHMS.get("fedstruct").check_config(c)
    assert ft.row_fields("fedstruct_n2v", "Cora")["algorithm_options"]["structure_dim"] == 256  # Table 5's d_s
    gnn = ExperimentConfig.from_dict({**ft.row_fields("fedstruct_gnn_gdv", "Cora"), "table": "8"})
    o = gnn.algorithm_options
    assert (o["nsf"], o["sgnn"], o["structure_dim"], o["sgnn_layers"], gnn.setting) == \
        ("gdv", "sage", 73, [128, 64, 32], "nsf=gdv, sgnn=sage")
    ALGORITHMS.get("fedstruct").check_config(gnn)
    assert all(_matches(c, _keys("8")) for c in table8)  # the paper's DGCN+GDV cells, so compare finds them


def test_app_h_rows_and_figure6_plan():
    """Table 8's GNN+X rows run the server's GraphSAGE with the official widths of the dataset; Fig. 6 is Fig.
    4(a)'s labelled-fraction plan on K-means, with every paper curve and fraction, and its own seeds."""
    cora, chameleon = ft.row_fields("fedstruct_gnn_n2v", "Cora"), ft.row_fields("fedstruct_gnn_h2v", "Chameleon")
    assert cora["algorithm_options"]["sgnn"] == "sage" and cora["algorithm_options"]["nsf"] == "n2v"
    assert cora["algorithm_options"]["abar_protocol"] == "server"
    assert cora["algorithm_options"]["sgnn_layers"] == [128, 64, 32]
    assert chameleon["algorithm_options"]["sgnn_layers"] == [256, 128]
    assert ft.row_label("fedstruct", "nsf=h2v, sgnn=sage, train=0.01") == "FedStruct (GNN+H2V)"
    plan = ft.ablations_plan(["Cora"], ["kmeans"], [], [], [0, 1], 2, "Chameleon", [5], [], fig6_dataset="Photo",
                             fig6_train=[0.01, 0.5], fig6_seeds=[3])
    fig6 = plan["fig6"]
    assert {c.table for c in fig6} == {"fig6"} and {c.partition for c in fig6} == {"kmeans"}
    assert {c.seed for c in fig6} == {3} and {c.dataset for c in fig6} == {"Photo"}
    assert {c.num_clients for c in fig6 if c.algorithm != "central"} == {10}
    assert sorted({tuple(c.split_ratios) for c in fig6}) == [(0.01, 0.1, 0.89), (0.5, 0.1, 0.4)]
    assert {ft.row_setting(c.setting) for c in fig6} == {"", "nsf=h2v", "nsf=n2v, sgnn=decoupled_gcn",
                                                         "nsf=h2v, sgnn=sage", "nsf=n2v, sgnn=sage"}
    assert len(fig6) == 2 * 6  # six curves (central once per fraction), two fractions, one seed
    assert plan["fig4a"] == [] and ft.ablations_plan(["Cora"], ["kmeans"], [], [], [0], 2, "Chameleon", [5],
                                                     [])["fig6"] == []  # none unless asked for
    assert ft.figure4a_configs("Cora", [0.05], ["fedsgd"], [0])[0].partition == "random"  # the shared path
    with pytest.raises(ConfigError, match="fig6_train"):
        ft.ablations_plan(["Cora"], ["kmeans"], [], [], [0], 2, "Chameleon", [5], [], fig6_train=[0.95])
    with pytest.raises(ConfigError, match="fig6_methods"):
        ft.ablations_plan(["Cora"], ["kmeans"], [], [], [0], 2, "Chameleon", [5], [], fig6_train=[0.1],
                          fig6_methods=["fedstruct_gnn"])


# ----------------------------------------------------------------------------- cells out of reach of the machine


GIB = 2**30


def test_the_unpruned_abar_is_refused_when_it_would_not_fit_in_half_the_memory(monkeypatch):
    from fglcore.algorithms import fedstruct

    n = 19_717  # PubMed
    assert fedstruct.unpruned_abar_bytes(n) == n**2 * fedstruct.UNPRUNED_BYTES_PER_VALUE
    assert fedstruct.unpruned_abar_bytes(n, ledger_only=True) == n**2 * fedstruct.LEDGER_ONLY_BYTES_PER_VALUE
    monkeypatch.setattr(fedstruct, "memory_bytes", lambda: 24 * GIB)
    assert fedstruct.unpruned_abar_refusal("Photo", {"pruning": "none"}) is None  # 7,650 nodes: 2.6 GB
    assert fedstruct.unpruned_abar_refusal("PubMed", {"simulation": "clients"}) is None  # pruned: no A-bar formed
    # the table's row: fused, Alg. 3 by the clients for the ledger only, dense rows: PubMed fits in 24 GiB
    pubmed_f = {**ft.PROTOCOL, **ft.row_fields("fedstruct_h2v_f", "PubMed"), "dataset": "PubMed", "num_clients": 10}
    assert pubmed_f["algorithm_options"]["simulation"] == "fused"
    assert ft.out_of_reach("fedstruct_h2v_f", "PubMed") is None
    ExperimentConfig.from_dict(pubmed_f)
    # rows formed to train with (the clients simulation) or by the server: not
    for change in ({"simulation": "clients"}, {"abar_protocol": "server"}):
        refusal = fedstruct.unpruned_abar_refusal("PubMed", {"pruning": "none", **change})
        assert "PubMed (19,717 nodes: up to 389 M values, about 17.1 GB to form its rows" in refusal
        assert "24.0 GiB" in refusal
        with pytest.raises(ConfigError, match="algorithm_options.pruning: 'none' forms the unpruned A-bar of PubMed"):
            ExperimentConfig.from_dict({**pubmed_f, "algorithm_options": {**pubmed_f["algorithm_options"], **change}})
    ExperimentConfig.from_dict({**pubmed_f, "algorithm_options": {**pubmed_f["algorithm_options"],
                                                                    "simulation": "clients", "pruning": "global"}})
    monkeypatch.setattr(fedstruct, "memory_bytes", lambda: 8 * GIB)
    assert "for the ledger" in ft.out_of_reach("fedstruct_h2v_f", "PubMed")
    # the server's GraphSAGE (App. H) forms no A-bar: neither refused nor priced
    sage = {"sgnn": "sage", "abar_protocol": "server", "simulation": "clients", "pruning": "none"}
    assert fedstruct.unpruned_abar_refusal("PubMed", sage) is None
    ExperimentConfig.from_dict({**pubmed_f, "algorithm_options": {**pubmed_f["algorithm_options"], **sage}})
    monkeypatch.setattr(fedstruct, "memory_bytes", lambda: 64 * GIB)
    assert fedstruct.unpruned_abar_refusal("PubMed", {"simulation": "clients", "pruning": "none"}) is None


def test_plans_leave_out_the_cells_out_of_reach_and_say_so(monkeypatch):
    from fglcore.algorithms import fedstruct

    monkeypatch.setattr(fedstruct, "memory_bytes", lambda: 8 * GIB)  # PubMed's unpruned A-bar does not fit
    rows = ["fedstruct_h2v", "fedstruct_h2v_f"]
    configs = ft.table2_configs(["Cora", "PubMed"], [10], rows, [0])
    assert sorted((c.dataset, c.setting) for c in configs) == [
        ("Cora", "nsf=h2v"), ("Cora", "nsf=h2v, pruning=none"), ("PubMed", "nsf=h2v")]
    table7 = ft.partition_configs("7", ["PubMed"], ["random"], ["fedstruct_deg", "fedstruct_deg_f"], [0])
    assert [c.setting for c in table7] == ["nsf=deg"]
    cells = ft.out_of_reach_cells(["Cora", "PubMed"], rows)
    assert cells[["row", "dataset"]].values.tolist() == [["FedStruct (H2V)-F", "PubMed"]]
    plan = ft.results_plan(["PubMed"], [10], rows, [0], 2, [], rows, 1)
    assert plan["out_of_reach"]["row"].tolist() == ["FedStruct (H2V)-F"] and len(plan["table2"]) == 1
    monkeypatch.setattr(fedstruct, "memory_bytes", lambda: 64 * GIB)
    assert len(ft.table2_configs(["PubMed"], [10], rows, [0])) == 2 and ft.out_of_reach_cells(["PubMed"], rows).empty


def test_fedpub_rounds_check_reruns_table2s_fedpub_cells_on_cora_with_the_later_configs_rounds():
    plan = ft.results_plan(["Cora", "CiteSeer"], [5, 10], ["fedpub", "central"], [0, 1], 0, [], ["central"], 1)
    check = plan["checks"][ft.FEDPUB_ROUNDS.table]
    row = {(c.num_clients, c.seed): c for c in plan["table2"] if c.algorithm == "fedpub" and c.dataset == "Cora"}
    assert sorted((c.num_clients, c.seed) for c in check) == sorted(row) and len(check) == 4
    for c in check:  # the same run but for its rounds, and a table no report reads
        same = row[(c.num_clients, c.seed)]
        assert (c.rounds, c.evaluate_every, c.table) == (30, 30, "2-fedpub-rounds") and same.rounds == 50
        assert c.replace(rounds=50, evaluate_every=50, table="2") == same
    assert set(plan["checks"]) == {ft.FEDPUB_ROUNDS.table}  # no FedGCN row asked for: no FedGCN check
    assert ft.results_plan(["Cora"], [5], ["fedpub"], [0], 3, [], ["central"], 1)["checks"] == {}
    assert ft.results_plan(["Cora"], [5], ["central"], [0], 0, [], ["central"], 1)["checks"] == {}


def test_fedgcn_features_check_reruns_the_ten_client_cells_with_the_ports_exchange_in_any_profile():
    plan = ft.results_plan(["Cora", "Chameleon"], [5, 10], ["fedgcn_2hop"], [0, 1], 3, [], ["central"], 1)
    check = plan["checks"][ft.FEDGCN_FEATURES.table]
    row = {(c.dataset, c.seed): c for c in plan["table2"] if c.num_clients == 10}
    assert sorted((c.dataset, c.seed) for c in check) == sorted(row) and len(check) == 4
    for c in check:
        same = row[(c.dataset, c.seed)]
        assert same.algorithm_options.get("exchange", "sums") == "sums"  # Table 2: the FedGCN paper's sums
        assert c.algorithm_options == {**same.algorithm_options, "exchange": "features"}
        assert c.replace(algorithm_options=same.algorithm_options, table="2") == same
    assert ft.results_plan(["Cora"], [5, 20], ["fedgcn_2hop"], [0], 3, [], ["central"], 1)["checks"] == {}


def _check_rows(method, table, values, dataset="Cora", num_clients=10, selected_round=50):
    model = {"fedpub": "gcn", "fedgcn_2hop": "sage"}[method]  # as the rows store them
    return [{"paper": "fedstruct", "table": table, "dataset": dataset, "partition": "random",
             "num_clients": num_clients, "method": method, "model": model, "setting": "", "metric": "accuracy",
             "seed": seed, "value": value, "selected_round": selected_round,
             "config_id": f"{table}-{num_clients}-{seed}"}
            for seed, value in enumerate(values)]


def test_reading_check_compares_both_readings_with_the_paper_on_the_checked_cells_only():
    import pandas as pd

    other = _check_rows("fedpub", "2", [60.0, 62.0], dataset="CiteSeer")
    results = pd.DataFrame(_check_rows("fedpub", "2", [55.0, 57.0]) + other
                           + _check_rows("fedpub", "2-fedpub-rounds", [61.0, 63.0])
                           + _check_rows("fedgcn_2hop", "2", [80.0, 80.0]))
    table = ft.reading_check(results, ft.FEDPUB_ROUNDS)
    assert list(table["reading"]) == ["30 rounds (e97e8e86)", "Table 2's row"]
    assert set(table["dataset"]) == {"Cora"}  # only where the check ran
    paper = 61.82  # params/fedstruct/paper.yaml, Table 2, Cora, 10 clients
    assert table["ours_mean"].tolist() == [62.0, 56.0] and table["paper_mean"].tolist() == [paper, paper]
    assert table["delta"].round(2).tolist() == [round(62.0 - paper, 2), round(56.0 - paper, 2)]
    assert ft.reading_check(results[results["table"] == "2"], ft.FEDPUB_ROUNDS).empty
    # FedGCN: the 5-client cell has no check run, so only the 10-client cell is compared
    fedgcn = pd.DataFrame(_check_rows("fedgcn_2hop", "2", [83.0, 84.0])
                          + _check_rows("fedgcn_2hop", "2", [70.0], num_clients=5)
                          + _check_rows("fedgcn_2hop", "2-fedgcn-features", [79.0, 81.0]))
    table = ft.reading_check(fedgcn, ft.FEDGCN_FEATURES)
    assert table[["num_clients", "reading", "ours_mean"]].values.tolist() == [
        [10, "Table 2's row", 83.5], [10, "exchange='features' (the port)", 80.0]]
    assert table["paper_mean"].tolist() == [82.90, 82.90]




def test_self_loops_check_reruns_fedstructs_rows_on_cora_and_citeseer_with_the_ports_self_loops():
    rows = ["fedstruct_deg", "fedstruct_h2v", "fedsgd"]
    plan = ft.results_plan(["Cora", "CiteSeer", "Chameleon"], [5, 20], rows, [0], 3, [], ["central"], 1)
    check = plan["checks"][ft.SELF_LOOPS.table]
    fedstruct = {(c.dataset, c.num_clients, c.setting): c for c in plan["table2"]
                 if c.algorithm == "fedstruct" and c.dataset != "Chameleon"}
    assert sorted((c.dataset, c.num_clients, c.setting) for c in check) == sorted(fedstruct) and len(check) == 8
    for c in check:
        same = fedstruct[(c.dataset, c.num_clients, c.setting)]
        assert c.algorithm_options == {**same.algorithm_options, "feature_self_loops": "official"}
        assert c.replace(algorithm_options=same.algorithm_options, table="2") == same


def test_reading_check_of_several_rows_gives_each_row_both_readings():
    import pandas as pd

    def rows(setting, table, values, num_clients):
        return [{"paper": "fedstruct", "table": table, "dataset": "CiteSeer", "partition": "random",
                 "num_clients": num_clients, "method": "fedstruct", "model": "decoupled_gcn", "setting": setting,
                 "metric": "accuracy", "seed": seed, "value": value, "selected_round": 60,
                 "config_id": f"{setting}-{table}-{num_clients}-{seed}"} for seed, value in enumerate(values)]

    results = pd.DataFrame(rows("nsf=deg", "2", [66.0, 67.0], 20) + rows("nsf=deg", "2-self-loops", [62.0, 61.0], 20)
                           + rows("nsf=h2v", "2", [66.5, 66.5], 20) + rows("nsf=h2v", "2-self-loops", [64.0, 65.0], 20)
                           + rows("nsf=h2v", "2", [67.0], 5))
    table = ft.reading_check(results, ft.SELF_LOOPS)
    assert table[["row", "num_clients", "reading", "ours_mean"]].values.tolist() == [
        ["FedStruct (Deg)", 20, "Table 2's row", 66.5], ["FedStruct (Deg)", 20, ft.SELF_LOOPS.reading, 61.5],
        ["FedStruct (H2V)", 20, "Table 2's row", 66.5], ["FedStruct (H2V)", 20, ft.SELF_LOOPS.reading, 64.5]]
    assert table["paper_mean"].tolist() == [62.34, 62.34, 64.33, 64.33]  # params/fedstruct/paper.yaml


def test_change_with_clients_is_the_drop_from_the_fewest_to_the_most_clients():
    import pandas as pd

    check = pd.DataFrame({"row": ["Deg"] * 4, "dataset": ["CiteSeer"] * 4, "num_clients": [5, 20, 5, 20],
                          "reading": ["a", "a", "b", "b"], "paper_mean": [65.0, 62.0, 65.0, 62.0],
                          "ours_mean": [66.0, 65.0, 66.5, 62.5]})
    table = ft.change_with_clients(check)
    assert table.columns.tolist() == ["row", "dataset", "reading", "ours K=20 - K=5", "paper K=20 - K=5",
                                      "ours - paper"]
    assert table[["reading", "ours K=20 - K=5", "paper K=20 - K=5", "ours - paper"]].values.tolist() == [
        ["a", -1.0, -3.0, 2.0], ["b", -4.0, -3.0, -1.0]]
