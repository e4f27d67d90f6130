"""fglcore.papers.localbias: plans, the learning-rate choice, Table 3's memory accounting, the local-bias study."""
import pandas as pd
import pytest
import torch

from fglcore.config import ConfigError
from fglcore.data.federation import build_federation
from fglcore.papers.localbias import analysis as la
from fglcore.papers.localbias import motivation as lm
from fglcore.papers.localbias import tables as lt


def _search_rows(values):
    """Validation rows of the learning-rate search: {(row setting, lr, seed): value}."""
    rows = []
    for (setting, lr, seed), value in values.items():
        rows.append({"paper": "localbias", "table": "lr", "dataset": "Cora", "partition": "random", "num_clients": 8,
                     "method": "localbias", "model": "gcn", "setting": lt.with_lr(setting, lr), "metric": "val_accuracy",
                     "seed": seed, "value": value, "selected_round": 1, "config_id": f"{setting}{lr}{seed}"})
    return pd.DataFrame(rows)


def test_choose_lr_takes_the_best_mean_validation_and_breaks_ties_upwards():
    ours = "variant=ours, backbone=gcn"
    full = "variant=ours-full, backbone=gcn"
    rows = _search_rows({(ours, 0.1, 0): 70.0, (ours, 0.1, 1): 80.0, (ours, 0.01, 0): 76.0, (ours, 0.01, 1): 76.0,
                         (full, 0.01, 0): 60.0, (full, 0.001, 0): 60.0})
    chosen = lt.choose_lr(rows).set_index("row")
    assert chosen.loc["ours_gcn", "lr"] == 0.01  # mean 76 beats mean 75
    assert chosen.loc["cagnet", "lr"] == 0.01  # tie: the larger rate
    assert chosen.loc["ours_gcn", "seeds"] == 2


def test_table_configs_reuse_the_search_computation():
    from fglcore.results import run_id

    chosen = pd.DataFrame([{"dataset": "Cora", "row": "ours_gcn", "lr": 0.01, "val_accuracy": 1.0, "seeds": 1}])
    (search,) = lt.lr_search_configs(["ours_gcn"], ["Cora"], [0], [0.01], rounds=2)
    (table,) = lt.table_configs("2", ["ours_gcn"], chosen, [0], rounds=2)
    assert table.table == "2" and table.setting == "variant=ours, backbone=gcn"
    assert search.setting == "variant=ours, backbone=gcn, lr=0.01"
    assert run_id(search) == run_id(table)  # the store copies, never recomputes


def test_rows_not_registered_are_not_implemented_and_the_plan_validates_first(monkeypatch):
    import dataclasses

    assert all(lt.row_status(r) == "runs" for r in lt.ROWS)  # every row of the paper is registered
    monkeypatch.setitem(lt.ROWS, "1gnn", dataclasses.replace(lt.ROWS["1gnn"], model="no_such_model"))
    assert lt.row_status("ours_gcn") == "runs" and lt.row_status("1gnn") == "not implemented"
    plan = lt.results_plan(["Cora"], ["gcn", "1gnn", "ours_gcn"], ["ours_star"], [0], [0.01], 2, 1, ["Cora"], [4], 2,
                           "simulated")
    assert {c.algorithm for c in plan["search"]} == {"central", "localbias"}
    cover = plan["coverage"].set_index(["table", "paper column", "row"])["status"]
    assert cover[("2", "PubMed", "1-GNN [17]")] == "not implemented"
    assert cover[("2", "PubMed", "Ours+GCN")] == "runs on Cora"
    assert cover[("2", "Reddit", "Ours+GCN")] == "not in this profile"
    with pytest.raises(ConfigError, match="parameter 'lrs'"):
        lt.results_plan(["Cora"], ["gcn"], ["ours_star"], [0], [0.0], 2, 1, [], [4], 2, "simulated")
    with pytest.raises(ConfigError, match="table2_methods"):
        lt.results_plan(["Cora"], ["nope"], ["ours_star"], [0], [0.01], 2, 1, [], [4], 2, "simulated")
    with pytest.raises(ConfigError, match="cost_engine"):
        lt.results_plan(["Cora"], ["gcn"], ["ours_star"], [0], [0.01], 2, 1, ["Cora"], [4], 2, "mpi")
    with pytest.raises(ConfigError, match="Chameleon"):
        lt.results_plan(["Chameleon"], ["gcn"], ["ours_star"], [0], [0.01], 2, 1, [], [4], 2, "simulated")


def test_learning_rate_searched_on_some_seeds_the_others_run_at_the_chosen_rate():
    from fglcore.results import run_id

    plan = lt.results_plan(["Cora"], ["ours_gcn"], ["ours_gcn"], [0, 1, 2], [0.1, 0.01], 2, 1, [], [4], 2, "simulated",
                           search_seeds=[0])
    assert sorted((c.seed, c.lr) for c in plan["search"]) == [(0, 0.01), (0, 0.1)]
    assert sorted((c.seed, c.lr) for c in plan["after_search"]) == [(1, 0.1), (2, 0.1)]
    every = lt.results_plan(["Cora"], ["ours_gcn"], ["ours_gcn"], [0, 1, 2], [0.1, 0.01], 2, 1, [], [4], 2, "simulated")
    assert len(every["search"]) == 6 and every["after_search"] == []
    chosen = pd.DataFrame([{"dataset": "Cora", "row": "ours_gcn", "lr": 0.01, "val_accuracy": 80.0, "seeds": 1}])
    table = lt.table_configs("2", ["ours_gcn"], chosen, [0, 1, 2], 2)
    searched = {run_id(c) for c in plan["search"]}
    assert [run_id(c) in searched for c in table] == [True, False, False]  # seed 0 is copied from the search
    with pytest.raises(ConfigError, match="search_seeds.*not in seeds"):
        lt.results_plan(["Cora"], ["ours_gcn"], ["ours_gcn"], [0, 1], [0.1], 2, 1, [], [4], 2, "simulated", search_seeds=[5])


def test_substitutes_take_the_role_of_the_paper_datasets():
    reddit, products = lt.dataset_role("Reddit-like"), lt.dataset_role("Products-like")
    assert (reddit.layers, reddit.epochs, reddit.stands_for) == (4, 200, "Reddit")
    assert (products.layers, products.epochs, products.stands_for) == (3, 1000, "ogbn-products")
    (config,) = lt.lr_search_configs(["ours_gcn"], ["Reddit-like"], [0], [0.01], rounds=1)
    assert config.split == "global_random" and config.split_ratios == [0.66, 0.10, 0.24]
    assert config.algorithm_options["sample_ratio"] == pytest.approx(50000 / 232965)


def test_memory_accounting_reproduces_the_papers_pubmed_example():
    """Digest §6.3: ours on PubMed at K = 4 holds 1,250 sampled rows: 2.5 MB of features, 0.64 MB hidden,
    0.26 MB of W1 -- the paper prints 3.50 MB; CAGNET's full rows give about (N/K)/s_k times as much."""
    full, fedavg, ours = lt.cost_configs(["PubMed"], [4], 1, "simulated")  # TABLE3_ROWS order
    assert ours.setting == "variant=ours, backbone=gcn" and fedavg.algorithm == "fedavg"
    memory = {name: lt.memory_mb_per_client(c, build_federation(c, keep_cross_edges=True))
              for name, c in (("ours", ours), ("fedavg", fedavg), ("full", full))}
    features_hidden_w1 = (1250 * 500 + 1250 * 128 + 1250 * 3 + 501 * 128 + 129 * 3) * 4 / 1e6
    assert memory["ours"][0] == pytest.approx(features_hidden_w1, rel=0.05)
    assert abs(sum(memory["ours"]) / 4 - 3.50) / 3.50 < 0.1
    assert all(f > 3 * o for f, o in zip(memory["full"], memory["ours"]))
    assert all(f > a for f, a in zip(memory["full"], memory["fedavg"]))  # cross-client edges cost memory


def test_edge_share_is_about_one_minus_one_over_k():
    table = lm.edge_share_table(["Cora"], [4, 8])
    for row in table.itertuples():
        assert abs(row[3] - 100 * (1 - 1 / row.clients)) < 2.0


def test_local_bias_study_runs_and_aligns_every_method_with_its_reference():
    plan = lm.plan(["Cora"], [4], ["Cora"], [4], ["fedavg", "fedavg_nc", "ours_gcn"], ["normal"], 4, [0], 2, 0.01)
    kinds = [kind for kind, _ in plan["runs"]]
    assert kinds.count("reference") == kinds.count("floor") == 1
    assert ("fedavg_nc" in kinds) == (lt.row_status("fedavg_nc") == "runs")
    table, curves = lm.bias_study(plan["runs"])
    assert set(table["method"]) >= {"FedAvg+GCN", "Ours+GCN", "noise floor (central GCN, other seed)"}
    assert (table["local bias (logits)"] > 0).all() and (curves["epoch"].max() == 2)
    with pytest.raises(ConfigError, match="selection"):
        lm.run_with_logits(lt.lr_search_configs(["fedavg"], ["Cora"], [0], [0.01], rounds=1)[0])


def test_local_bias_study_stores_each_run_and_computes_only_what_is_missing(tmp_path, monkeypatch):
    from fglcore import experiment
    from fglcore.results import ResultStore, config_id, curve_values, run_id

    plan = lm.plan(["Cora"], [4], ["Cora"], [4], ["fedavg"], ["normal"], 4, [0], 2, 0.01)
    runs = plan["runs"]
    by_kind = {kind: config for kind, config in runs}
    table, curves = lm.bias_study(runs)  # in memory, nothing stored
    store = tmp_path / "results.csv"
    computed = []
    real = experiment.prepare

    def counted(config):
        computed.append(config_id(config))
        return real(config)

    monkeypatch.setattr(experiment, "prepare", counted)

    def study():
        computed.clear()
        out = lm.bias_study(runs, store)
        pd.testing.assert_frame_equal(out[0], table, check_exact=True)  # the same numbers as in memory
        pd.testing.assert_frame_equal(out[1], curves, check_exact=True)
        return sorted(computed)

    everything = sorted(config_id(c) for _, c in runs)
    assert study() == everything
    rows = ResultStore(store).read()
    assert set(rows["config_id"]) == set(everything) and set(rows["table"]) == {"motivation"}
    assert len(curve_values(rows)) == 2 * len(runs)  # the per-epoch curve of every run
    index = ResultStore(store).run_log().set_index("config_id")
    assert all(index.loc[config_id(c), "run_id"] == run_id(c) for _, c in runs) and index["seconds"].notna().all()
    files = {kind: lm.TEST_LOGITS.path(store, config_id(config)) for kind, config in runs}
    assert all(f.parent == tmp_path / lm.LOGITS_FOLDER and f.is_file() for f in files.values())
    assert study() == []  # a second call computes nothing

    files["fedavg"].unlink()
    assert study() == [config_id(by_kind["fedavg"])]  # a lost logits file: only that run again
    whole = files["reference"].read_bytes()
    files["reference"].write_bytes(whole[: len(whole) // 2])  # partly written: not trusted
    assert study() == [config_id(by_kind["reference"])]
    files["floor"].write_bytes(files["fedavg"].read_bytes())  # another run's logits under this name
    assert study() == [config_id(by_kind["floor"])]
    stale = ResultStore(store).read()
    stale = stale[stale["config_id"] == config_id(by_kind["fedavg"])]
    ResultStore(store).append(stale.assign(value=stale["value"] + 1).to_dict("records"))  # stored again since
    assert study() == [config_id(by_kind["fedavg"])]
    assert study() == []


def test_local_bias_logits_live_beside_the_real_store_when_fgl_links_it(tmp_path):
    """fgl run gives the kernel a link to the real results.csv in a staging folder that is removed afterwards."""
    real, staging = tmp_path / "out" / "results.csv", tmp_path / ".staging" / "results.csv"
    real.parent.mkdir()
    staging.parent.mkdir()
    staging.symlink_to(real)
    assert lm.TEST_LOGITS.path(staging, "some-config").parent == real.parent / lm.LOGITS_FOLDER


def test_an_interrupted_local_bias_study_keeps_its_finished_runs(tmp_path, monkeypatch):
    from fglcore import experiment
    from fglcore.experiment import SweepStopped, request_stop, withdraw_stop
    from fglcore.results import ResultStore, config_id

    plan = lm.plan(["Cora"], [4], ["Cora"], [4], ["fedavg"], ["normal"], 4, [0], 1, 0.01)
    store, real, computed = tmp_path / "results.csv", experiment.prepare, []

    def interrupted(config):
        if computed:
            raise KeyboardInterrupt
        computed.append(config_id(config))
        return real(config)

    monkeypatch.setattr(experiment, "prepare", interrupted)
    with pytest.raises(KeyboardInterrupt):
        lm.bias_study(plan["runs"], store)
    first = config_id(plan["runs"][0][1])
    assert computed == [first] and ResultStore(store).done_ids() == {first}
    monkeypatch.setattr(experiment, "prepare", lambda config: (computed.append(config_id(config)), real(config))[1])
    computed.clear()
    request_stop(tmp_path)  # fgl stop: nothing more is computed
    with pytest.raises(SweepStopped, match="stopped before"):
        lm.bias_study(plan["runs"], store)
    assert computed == [] and withdraw_stop(tmp_path)
    table, _ = lm.bias_study(plan["runs"], store)
    assert sorted(computed) == sorted(config_id(c) for _, c in plan["runs"][1:]) and len(table) == 2


def test_local_bias_study_leaves_a_run_claimed_by_another_worker_until_it_is_free(tmp_path, monkeypatch):
    import threading
    import time

    from fglcore import experiment
    from fglcore.claims import CLAIM_FOLDER, RunClaims
    from fglcore.results import config_id, run_id

    runs = lm.plan(["Cora"], [4], ["Cora"], [4], ["fedavg"], ["normal"], 4, [0], 1, 0.01)["runs"]
    claimed = runs[0][1]
    monkeypatch.setattr(experiment, "CLAIM_POLL_SECONDS", 0.05)
    computed, real, done = [], experiment.prepare, {}
    monkeypatch.setattr(experiment, "prepare", lambda config: (computed.append(config_id(config)), real(config))[1])
    other = RunClaims(tmp_path / CLAIM_FOLDER)  # another worker computing the first run
    assert other.acquire(run_id(claimed))
    worker = threading.Thread(target=lambda: done.update(out=lm.bias_study(runs, tmp_path / "results.csv")))
    worker.start()
    deadline = time.monotonic() + 120
    while len(computed) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    assert computed == [config_id(c) for _, c in runs[1:]] and worker.is_alive()  # skipped, then waiting
    other.release(run_id(claimed))  # that worker died without storing it: this one computes it
    worker.join(120)
    assert computed[-1] == config_id(claimed) and len(done["out"][0]) == 2


def test_the_step_length_plan_keeps_the_nodes_per_epoch():
    configs = la.step_configs("Cora", [1, 4], 0.4, 2, 8, 0, 0.01)
    assert [c.rounds for c in configs] == [2, 8]
    assert [c.algorithm_options["sample_ratio"] for c in configs] == pytest.approx([0.4, 0.1])
    with pytest.raises(ConfigError, match="epoch_ratio"):
        la.plan("Cora", [1], 1.5, 1, ["Cora"], 1, ["Cora"], 8, 0, 0.01)


def test_complexity_orderings_of_the_papers_communication_claim():
    table = la.complexity_table(["Cora"], 8)
    comm = table[table["cost"] == "comm"].set_index("method")["value"]
    assert comm["FedAvg+GCN"] < comm["BNS-GCN"] < comm["Ours"] < comm["CAGNET"]
    memory = table[table["cost"] == "memory"].set_index("method")["value"]
    assert memory["Ours"] < memory["FedAvg+GCN"] <= memory["CAGNET"]
    assert torch.tensor(table["value"].to_numpy()).isfinite().all()


def test_table3_ratios_read_the_papers_cells():
    paper = lt.paper_cost_table()
    assert len(paper) == 18 and set(paper["row"]) == {"CAGNET [23]", "FedAvg+GCN", "Ours+GCN"}
    ratios = lt.cost_ratios(paper).set_index(["dataset", "clients"])
    assert ratios.loc[("PubMed", 4), "time ours / CAGNET"] == pytest.approx(0.0526 / 0.3063)
    assert ratios.loc[("Reddit", 8), "memory ours / FedAvg"] == pytest.approx(30.43 / 104.38)
    assert "bytes ours / FedAvg" not in ratios  # Table 3 has no communication column
