"""Comparison with a paper's numbers: paper.yaml schema, tolerance, statuses, claims, report files."""
from __future__ import annotations

import math

import pandas as pd
import pytest
import yaml

from fglcore import compare as cmp
from fglcore import paths
from fglcore.compare import PaperFileError, build_summary, check_claims, compare, format_table, load_paper, write_report
from fglcore.results import RESULT_COLUMNS


def cell(method, values, *, dataset="Cora", metric="accuracy", table="2", partition="louvain", num_clients=10,
         model="gcn", setting="", paper="toy"):
    """Result rows of one table cell, one per seed."""
    labels = dict(paper=paper, table=table, dataset=dataset, partition=partition, num_clients=num_clients,
                  method=method, model=model, setting=setting, metric=metric)
    config = f"{method}-{dataset}-{model}-{setting}-{partition}-{num_clients}"
    return [{**labels, "seed": s, "value": v, "selected_round": 1, "config_id": f"{config}-{s}"} for s, v in enumerate(values)]


def frame(*cells) -> pd.DataFrame:
    return pd.DataFrame([row for c in cells for row in c], columns=RESULT_COLUMNS)


def paper(results=(), claims=(), datasets=("Cora", "CiteSeer", "PubMed"), **extra) -> dict:
    return {"paper": "toy", "title": "A toy paper", "datasets": list(datasets), "results": list(results),
            "claims": list(claims), "settings": {"lr": 0.01}, **extra}


def entry(method, mean, std=None, **labels):
    return {"table": "2", "dataset": "Cora", "method": method, "metric": "accuracy", "mean": mean, "std": std, **labels}


def test_tolerance_formula():
    assert cmp.tolerance(0.3, 0.4) == 1.5  # 2 * 0.5 = 1.0 < floor
    assert cmp.tolerance(1.5, 2.0) == pytest.approx(5.0)  # 2 * sqrt(2.25 + 4)
    assert cmp.tolerance(None, 1.0) == 2.0
    assert cmp.tolerance(math.nan, 0.0, floor=1000.0) == 1000.0


def test_statuses_match_above_below_missing():
    results = frame(
        cell("fedavg", [80.0, 82.0]),  # mean 81, std 1 -> tol max(1.5, 2*sqrt(0.25+1)) = 2.236
        cell("local", [90.0]),
        cell("fedprox", [70.0]),
    )
    spec = paper([entry("fedavg", 79.0, 0.5), entry("local", 80.0, 0.5), entry("fedprox", 80.0), entry("gcfl", 80.0, 1.0)])
    out = compare(results, spec).set_index("method")
    assert list(compare(results, spec).columns) == cmp.COMPARISON_COLUMNS
    fedavg = out.loc["fedavg"]
    assert (fedavg["ours_mean"], fedavg["ours_std"], fedavg["n_seeds"]) == (81.0, 1.0, 2)
    assert fedavg["delta"] == pytest.approx(2.0)
    assert fedavg["tolerance"] == pytest.approx(2 * math.sqrt(0.25 + 1.0))
    assert fedavg["status"] == "match"
    assert out.loc["local", "status"] == "above" and out.loc["local", "delta"] == pytest.approx(10.0)
    assert out.loc["fedprox", "status"] == "below" and out.loc["fedprox", "tolerance"] == 1.5
    assert out.loc["gcfl", "status"] == "missing" and out.loc["gcfl", "n_seeds"] == 0 and math.isnan(out.loc["gcfl", "ours_mean"])
    # labels the entry left open are filled from our rows
    assert (fedavg["partition"], fedavg["num_clients"], fedavg["model"]) == ("louvain", 10, "gcn")


def test_only_rows_of_this_paper_and_table_count():
    results = frame(cell("fedavg", [80.0], paper="other"), cell("fedavg", [80.0], table="3"))
    assert compare(results, paper([entry("fedavg", 80.0)]))["status"].item() == "missing"


def test_table_argument_selects_entries_and_names_unknown_tables():
    spec = paper([entry("fedavg", 80.0), {**entry("fedavg", 70.0), "table": 3}])
    assert compare(frame(), spec, table="3")["paper_mean"].tolist() == [70.0]
    with pytest.raises(ValueError, match="no results for table '9'.*its tables: 2, 3"):
        compare(frame(), spec, table="9")


def test_wildcard_covering_several_groups_is_an_error_naming_the_entry():
    results = frame(cell("fedavg", [80.0], model="gcn"), cell("fedavg", [70.0], model="sgc"))
    with pytest.raises(ValueError, match=r"\(table 2, Cora, fedavg, accuracy\) matches 2 distinct groups.*model"):
        compare(results, paper([entry("fedavg", 80.0)]))
    picked = compare(results, paper([entry("fedavg", 70.0, model="sgc")]))
    assert picked["status"].item() == "match" and picked["model"].item() == "sgc"


def test_explicit_empty_setting_is_not_a_wildcard():
    results = frame(cell("fedspray", [80.0], setting=""), cell("fedspray", [60.0], setting="S=0"))
    out = compare(results, paper([entry("fedspray", 80.0, setting=""), entry("fedspray", 60.0, setting="S=0")]))
    assert out["status"].tolist() == ["match", "match"]


def test_two_runs_with_the_same_seed_are_ambiguous():
    results = frame(cell("fedavg", [80.0]), cell("fedavg", [81.0], num_clients=10))
    results.loc[1, "config_id"] = "another-config"
    with pytest.raises(ValueError, match="several of our runs have seed 0"):
        compare(results, paper([entry("fedavg", 80.0)]))


def test_paper_file_errors_name_entry_and_field():
    with pytest.raises(PaperFileError, match=r"results\[0\] \(2, Cora, fedavg, accuracy\): missing required field 'mean'"):
        cmp.validate_paper(paper([{k: v for k, v in entry("fedavg", 1.0).items() if k != "mean"}]))
    with pytest.raises(PaperFileError, match=r"results\[0\].*unknown field 'meen' \(did you mean 'mean'\?\)"):
        cmp.validate_paper(paper([{**entry("fedavg", 1.0), "meen": 2.0}]))
    with pytest.raises(PaperFileError, match=r"results\[0\].*field 'std' must be a non-negative number"):
        cmp.validate_paper(paper([entry("fedavg", 1.0, std=-1)]))
    with pytest.raises(PaperFileError, match=r"results\[1\].*duplicates results\[0\]"):
        cmp.validate_paper(paper([entry("fedavg", 1.0), entry("fedavg", 2.0)]))
    with pytest.raises(PaperFileError, match="unknown top-level key 'claim'"):
        cmp.validate_paper({"paper": "toy", "claim": []})
    bad_claim = {"id": "c", "text": "t", "table": "2", "metric": "accuracy", "winner": "a", "losers": ["b"], "per": ["modle"]}
    with pytest.raises(PaperFileError, match=r"claims\[0\] \(c\): field 'per': unknown label column 'modle'"):
        cmp.validate_paper(paper(claims=[bad_claim]))
    with pytest.raises(PaperFileError, match="also listed among the losers"):
        cmp.validate_paper(paper(claims=[{**bad_claim, "per": [], "losers": ["a"]}]))


def test_validation_normalises_and_is_idempotent():
    spec = cmp.validate_paper(paper([{**entry("fedavg", 80), "table": 2, "num_clients": 10}]))
    assert spec["results"][0]["table"] == "2" and spec["results"][0]["mean"] == 80.0
    assert spec["results"][0]["partition"] is None
    assert cmp.validate_paper(spec) == spec


def test_load_paper_by_path_and_unknown_id(tmp_path, monkeypatch):
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "paper.yaml").write_text(yaml.safe_dump(paper([entry("fedavg", 80.0, 1.0)])))
    monkeypatch.setattr(paths, "params_root", lambda: tmp_path)
    assert load_paper("toy")["results"][0]["std"] == 1.0
    assert load_paper(tmp_path / "toy" / "paper.yaml")["paper"] == "toy"
    with pytest.raises(FileNotFoundError, match="papers with a paper.yaml: toy"):
        load_paper("nope")


CLAIM = {"id": "spray_wins", "text": "FedSpray beats the baselines", "table": "2", "metric": "accuracy",
         "winner": "fedspray", "losers": ["local", "fedavg"], "per": ["dataset"]}


def test_claim_holds_fails_and_lacks_data_per_group():
    results = frame(
        cell("fedspray", [84.0, 84.2], dataset="Cora"), cell("local", [80.0, 80.0], dataset="Cora"),
        cell("fedavg", [82.3, 82.3], dataset="Cora"),
        cell("fedspray", [70.0], dataset="CiteSeer"), cell("local", [71.0], dataset="CiteSeer"), cell("fedavg", [60.0], dataset="CiteSeer"),
        cell("fedspray", [90.0], dataset="PubMed"), cell("local", [80.0], dataset="PubMed"),
    )
    out = check_claims(results, paper(claims=[CLAIM]))
    assert list(out.columns) == cmp.CLAIM_COLUMNS
    rows = out.set_index("group")
    assert rows.loc["dataset=Cora", "holds"] is True
    assert rows.loc["dataset=Cora", "detail"] == (
        "fedspray 84.10 vs best loser fedavg 82.30; smallest margin over noise: fedavg by 1.80 > noise 0.20")
    assert rows.loc["dataset=Cora", "margin"] == pytest.approx(1.8)
    assert rows.loc["dataset=Cora", "noise"] == pytest.approx(0.2)  # 2 * standard error 0.1 of fedspray's mean
    assert rows.loc["dataset=CiteSeer", "holds"] is False
    assert rows.loc["dataset=PubMed", "holds"] is None and "no rows for fedavg" in rows.loc["dataset=PubMed", "detail"]
    assert rows.loc["overall", "holds"] is False
    assert rows.loc["overall", "detail"] == "holds in 1 of 2 groups with data; 1 group without data"


def test_claim_waits_until_every_participant_has_the_same_seeds():
    partial = frame(cell("fedspray", [84.0, 84.2, 83.0], dataset="Cora"), cell("local", [80.0, 90.0], dataset="Cora"),
                    cell("fedavg", [82.3, 82.3, 82.3], dataset="Cora"))
    rows = check_claims(partial, paper(claims=[CLAIM])).set_index("group")
    assert rows.loc["dataset=Cora", "holds"] is None
    assert rows.loc["dataset=Cora", "detail"] == (
        "participants ran different seeds (fedspray seeds 0, 1, 2; local seeds 0, 1; fedavg seeds 0, 1, 2); "
        "compared only once all have the same seeds")
    assert rows.loc["overall", "holds"] is None
    finished = frame(cell("fedspray", [84.0, 84.2, 83.0]), cell("local", [80.0, 90.0, 80.0]), cell("fedavg", [82.3] * 3))
    assert check_claims(finished, paper(claims=[CLAIM])).set_index("group").loc["dataset=Cora", "holds"] is True



def test_a_notable_margin_claim_needs_a_margin_beyond_seed_noise():
    # fedavg: population std 1 over 2 seeds -> standard error 1; fedspray and local have no spread.
    results = frame(cell("fedspray", [84.0, 84.0]), cell("fedavg", [80.0, 82.0]), cell("local", [70.0, 70.0]))
    notable = {**CLAIM, "beyond_noise": True}
    rows = check_claims(results, paper(claims=[notable])).set_index("group")
    assert rows.loc["dataset=Cora", "holds"] is True  # 3.0 > noise 2 * hypot(0, 1) = 2.0
    assert rows.loc["dataset=Cora", "detail"] == (
        "fedspray 84.00 vs best loser fedavg 81.00; smallest margin over noise: fedavg by 3.00 > noise 2.00")
    close = frame(cell("fedspray", [82.5, 82.5]), cell("fedavg", [80.0, 82.0]), cell("local", [70.0, 70.0]))
    rows = check_claims(close, paper(claims=[notable])).set_index("group")
    assert rows.loc["dataset=Cora", "holds"] is False  # ahead by 1.5, within noise 2.0
    assert check_claims(close, paper(claims=[CLAIM])).set_index("group").loc["dataset=Cora", "holds"] is True
    one_seed = frame(cell("fedspray", [90.0]), cell("fedavg", [80.0]), cell("local", [70.0]))
    rows = check_claims(one_seed, paper(claims=[notable])).set_index("group")
    assert rows.loc["dataset=Cora", "holds"] is None and "needs two seeds or more, got 1" in rows.loc["dataset=Cora", "detail"]
    lower = {"id": "cheap", "text": "FedStruct uploads far less", "table": "2", "metric": "upload_bytes",
             "winner": "fedstruct", "losers": ["fedsage"], "direction": "lower", "beyond_noise": True}
    traffic = frame(cell("fedstruct", [100.0, 102.0], metric="upload_bytes"), cell("fedsage", [103.0, 105.0], metric="upload_bytes"))
    assert check_claims(traffic, paper(claims=[lower])).set_index("group").loc["all", "holds"] is True  # 3 > 2*sqrt(2)
    with pytest.raises(PaperFileError, match="'beyond_noise' must be a bool"):
        cmp.validate_paper(paper(claims=[{**CLAIM, "beyond_noise": "yes"}]))

def test_claim_overall_true_lower_is_better_and_missing():
    results = frame(cell("fedstruct", [100.0], metric="upload_bytes"), cell("fedsage", [500.0], metric="upload_bytes"))
    claim = {"id": "cheap", "text": "FedStruct uploads less", "table": "2", "metric": "upload_bytes",
             "winner": "fedstruct", "losers": ["fedsage"], "direction": "lower"}
    missing = {**claim, "id": "none", "metric": "accuracy"}
    out = check_claims(results, paper(claims=[claim, missing]))
    assert out[(out["id"] == "cheap") & (out["group"] == "overall")]["holds"].item() is True
    none = out[out["id"] == "none"]
    assert len(none) == 1 and none["holds"].item() is None and "no rows for table 2, metric accuracy" in none["detail"].item()


def test_claim_participant_can_fix_a_setting_and_pooling_groups_is_an_error():
    results = frame(cell("fedspray", [70.0], setting="S=0"), cell("fedspray", [85.0]), cell("local", [80.0]))
    claim = {"id": "ablation", "text": "Without S, FedSpray falls below Local", "table": "2", "metric": "accuracy",
             "winner": "local", "losers": [{"method": "fedspray", "setting": "S=0"}]}
    out = check_claims(results, paper(claims=[claim]))
    assert out.set_index("group").loc["all", "detail"] == "local 80.00 vs best loser fedspray (setting=S=0) 70.00"
    assert out["holds"].tolist() == [True, True]
    unfixed = {**claim, "losers": ["fedspray"]}
    with pytest.raises(ValueError, match="claim 'ablation'.*fedspray span several groups.*setting"):
        check_claims(results, paper(claims=[unfixed]))


def test_format_table_strings():
    results = frame(cell("fedavg", [83.0, 83.82]))
    table = format_table(compare(results, paper([entry("fedavg", 80.12, 0.45), entry("gcfl", 70.0)])))
    first, second = table.iloc[0], table.iloc[1]
    assert first["ours"] == "83.41 ± 0.41" and first["paper"] == "80.12 ± 0.45" and first["delta"] == "+3.29"
    assert first["status"] == "above"
    assert second["ours"] == "—" and second["paper"] == "70.00" and second["status"] == "missing"
    assert "setting" not in table.columns and "model" in table.columns


def test_write_report_and_build_summary(tmp_path):
    results = frame(cell("fedspray", [84.0]), cell("local", [80.0]), cell("fedavg", [85.0]))
    spec = paper([entry("fedspray", 84.0, 0.5), entry("local", 90.0), entry("apfl", 80.0)], claims=[{**CLAIM, "per": []}])
    comparison, claims = write_report(tmp_path / "toy", results, spec)
    assert (tmp_path / "toy" / "comparison.csv").is_file() and (tmp_path / "toy" / "claims.csv").is_file()
    assert comparison["status"].tolist() == ["match", "below", "missing"]
    assert pd.read_csv(tmp_path / "toy" / "comparison.csv")["status"].tolist() == ["match", "below", "missing"]

    other = paper([entry("fedavg", 85.0)])
    other["paper"] = "second"
    write_report(tmp_path / "second", frame(cell("fedavg", [85.0], paper="second")), other)
    (tmp_path / "notes").mkdir()  # a folder without reports is ignored

    summary = build_summary(tmp_path)
    assert set(summary["paper"]) == {"toy", "second"} and set(summary["kind"]) == {"result", "claim"}
    assert len(summary) == 3 + 2 + 1
    assert len(pd.read_csv(tmp_path / "summary.csv")) == len(summary)
    counts = cmp.summary_counts(summary).set_index("paper")
    assert counts.loc["toy", ["match", "above", "below", "missing", "claims_fail"]].tolist() == [1, 0, 1, 1, 1]
    assert counts.loc["second", ["match", "claims"]].tolist() == [1, 0]
    markdown = (tmp_path / "summary.md").read_text()
    assert "| toy | 3 | 1 | 0 | 1 | 1 | 0 | 1 | 0 | 1 | 0 | 0 | 0 |" in markdown
    assert "`spray_wins` (all; paper): fedspray 84.00 vs best loser fedavg 85.00" in markdown


# ----------------------------------------------------------------------------- aggregation declared in paper.yaml


def client_cell(method, per_client, *, table="2", dataset="Cora", num_clients=None):
    """A cell's rows: per seed the run's client average and each client's value (``accuracy[client=K]``)."""
    num_clients = num_clients or len(per_client)
    rows = []
    for seed, values in enumerate(zip(*per_client)):
        base = cell(method, [sum(values) / len(values)], table=table, dataset=dataset, num_clients=num_clients)[0]
        base = {**base, "seed": seed, "config_id": f"{base['config_id'][:-2]}-{seed}"}
        rows.append(base)
        rows += [{**base, "metric": f"accuracy[client={k}]", "value": v} for k, v in enumerate(values)]
    return rows


# client 0: 70, 72, 74 (mean 72, sample std 2); client 1: 80, 80, 86 (mean 82, sample std sqrt(12));
# the client average per seed: 75, 76, 80 (mean 77, population std sqrt(14/3), sample std sqrt(7)).
TWO_CLIENTS = [[70.0, 72.0, 74.0], [80.0, 80.0, 86.0]]


def test_the_aggregation_paper_yaml_declares_forms_our_cell():
    results = frame(client_cell("fedavg", TWO_CLIENTS))
    by_default = compare(results, paper([entry("fedavg", 77.0, 1.0)])).iloc[0]
    assert by_default["ours_mean"] == pytest.approx(77.0)
    assert by_default["ours_std"] == pytest.approx(math.sqrt(14 / 3))  # over seeds, population std
    sample = compare(results, paper([entry("fedavg", 77.0)], aggregation={"ddof": 1})).iloc[0]
    assert sample["ours_std"] == pytest.approx(math.sqrt(7))
    fedstar_rule = {"std": "over_clients", "ddof": 1}
    clients = compare(results, paper([entry("fedavg", 77.0)], aggregation=fedstar_rule)).iloc[0]
    assert clients["ours_mean"] == pytest.approx(77.0)
    assert clients["ours_std"] == pytest.approx((2.0 + math.sqrt(12)) / 2)  # mean over clients of their stds
    assert clients["ours_std_of_mean"] == pytest.approx(math.sqrt(14 / 3))  # the seed noise stays population
    cells = cmp.ours_cells(results, paper(aggregation=fedstar_rule))
    assert cells[["n_seeds", "n_clients"]].iloc[0].tolist() == [3, 2]
    per_table = {"std": "over_clients", "ddof": 1, "tables": {"2": {"std": "over_seeds"}}}
    override = compare(results, paper([entry("fedavg", 77.0)], aggregation=per_table)).iloc[0]
    assert override["ours_std"] == pytest.approx(math.sqrt(7))  # table 2 over seeds, the block's ddof 1
    assert cmp.aggregation_for(cmp.validate_paper(paper(aggregation=per_table)), "3") == fedstar_rule
    without_clients = frame(cell("fedavg", [75.0, 76.0, 80.0]))
    with pytest.raises(ValueError, match=r"over_clients\) needs our per-client rows.*per_client=True"):
        compare(without_clients, paper([entry("fedavg", 77.0)], aggregation=fedstar_rule))
    with pytest.raises(PaperFileError, match="aggregation: 'std' must be one of over_seeds, over_clients"):
        cmp.validate_paper(paper(aggregation={"std": "pooled"}))
    with pytest.raises(PaperFileError, match=r"aggregation.tables\['3'\]: 'ddof' must be 0"):
        cmp.validate_paper(paper(aggregation={"tables": {"3": {"ddof": 2}}}))


# ----------------------------------------------------------------------------- whose data


def test_data_roles_paper_stand_in_subset_other():
    spec = cmp.validate_paper(paper(
        [entry("fedavg", 1.0, dataset="Flickr")],
        datasets=[{"dataset": "chem", "num_clients": 7}, {"dataset": "Cora", "tables": ["o1"]}],
        stand_ins=[{"dataset": "chem", "num_clients": 6, "for": "CHEM without one member"},
                   {"dataset": "Chameleon", "for": "WikiCS", "tables": ["2"]}]))
    assert cmp.data_role(spec, "2", "chem", 7) == "paper"
    assert cmp.data_role(spec, "2", "chem", 6) == "stand-in"
    assert cmp.data_role(spec, "2", "chem", 4) == "subset"
    assert cmp.data_role(spec, "o1", "Cora", 10) == "paper"
    assert cmp.data_role(spec, "2", "Cora", 10) == "other"  # Cora is the paper's only in table o1
    assert cmp.data_role(spec, "2", "Chameleon", 7) == "stand-in"
    assert cmp.data_role(spec, "3", "Chameleon", 7) == "other"
    assert cmp.data_role(spec, "2", "Flickr", 3) == "paper"  # the paper reports numbers on it in table 2
    assert cmp.data_role(spec, "2", "MyGraph", 3) == "other"
    with pytest.raises(PaperFileError, match="'datasets' must list the paper's datasets"):
        cmp.validate_paper({**paper(claims=[CLAIM]), "datasets": []})
    with pytest.raises(PaperFileError, match=r"stand_ins\[0\]: missing required field 'for'"):
        cmp.validate_paper(paper(stand_ins=[{"dataset": "Chameleon"}]))


def test_claims_are_not_judged_on_a_foreign_dataset_nor_listed_as_failing(tmp_path):
    results = frame(cell("fedspray", [60.0], dataset="MyGraph"), cell("local", [70.0], dataset="MyGraph"),
                    cell("fedavg", [65.0], dataset="MyGraph"),
                    cell("fedspray", [84.0], dataset="Cora"), cell("local", [80.0], dataset="Cora"),
                    cell("fedavg", [82.0], dataset="Cora"))
    out = check_claims(results, paper(claims=[CLAIM])).set_index("group")
    assert out.loc["dataset=MyGraph", "holds"] is None and out.loc["dataset=MyGraph", "data"] == "other"
    assert out.loc["dataset=MyGraph", "detail"] == "not judged: not the paper's data (MyGraph)"
    assert out.loc["dataset=Cora", "data"] == "paper" and out.loc["dataset=Cora", "holds"] is True
    assert out.loc["overall", "holds"] is True
    assert out.loc["overall", "detail"] == "holds in 1 of 1 groups with data; 1 not judged (not the paper's data)"
    only_mine = results[results["dataset"] == "MyGraph"]
    write_report(tmp_path / "toy", only_mine, paper(claims=[CLAIM]))
    summary = build_summary(tmp_path)
    counts = cmp.summary_counts(summary).set_index("paper")
    assert counts.loc["toy", ["claims", "claims_hold", "claims_fail", "claims_not_judged"]].tolist() == [1, 0, 0, 1]
    assert "do not hold" not in (tmp_path / "summary.md").read_text()


def test_stand_ins_and_subsets_are_marked_in_comparison_and_claims():
    spec = paper([entry("fedspray", 84.0, 0.5), entry("local", 80.0, 0.5)], claims=[CLAIM],
                 datasets=[{"dataset": "Cora", "num_clients": 10}],
                 stand_ins=[{"dataset": "Cora", "num_clients": 9, "for": "Cora without one client"}])
    whole = frame(cell("fedspray", [84.0]), cell("local", [80.0]), cell("fedavg", [82.0]))
    standing_in = frame(*(cell(m, [v], num_clients=9) for m, v in (("fedspray", 84.0), ("local", 80.0), ("fedavg", 90.0))))
    part = frame(*(cell(m, [v], num_clients=4) for m, v in (("fedspray", 60.0), ("local", 80.0), ("fedavg", 82.0))))
    assert compare(whole, spec)["data"].tolist() == ["paper", "paper"]
    comparison = compare(standing_in, spec)
    assert comparison["data"].tolist() == ["stand-in", "stand-in"] and comparison["status"].tolist() == ["match"] * 2
    claims = check_claims(standing_in, spec).set_index("group")
    assert claims.loc["dataset=Cora", "data"] == "stand-in" and claims.loc["dataset=Cora", "holds"] is False
    assert claims.loc["overall", "data"] == "stand-in"
    subset = compare(part, spec)
    assert subset["status"].tolist() == ["subset", "subset"] and subset["data"].tolist() == ["subset"] * 2
    assert subset["delta"].tolist() == pytest.approx([-24.0, 0.0])  # shown, not judged
    claims = check_claims(part, spec).set_index("group")
    assert claims.loc["dataset=Cora", "holds"] is None and claims.loc["dataset=Cora", "data"] == "subset"
    assert claims.loc["dataset=Cora", "detail"] == (
        "not judged: a subset of the paper's setting (Cora on 4 clients, the paper's 10)")
    assert claims.loc["overall", "data"] == "subset" and claims.loc["overall", "holds"] is None


# ----------------------------------------------------------------------------- display


def test_format_mean_std_is_the_one_formatter():
    assert cmp.format_mean_std(75.384, 2.256) == "75.38 ± 2.26"
    assert cmp.format_mean_std(75.0) == "75.00" and cmp.format_mean_std(75.0, math.nan) == "75.00"
    assert cmp.format_mean_std(math.nan, 1.0) == "—" and cmp.format_mean_std(None) == "—"
    assert cmp.format_mean_std(0.91234, 0.01, digits=3) == "0.912 ± 0.010"
    assert cmp.format_delta(3.291) == "+3.29" and cmp.format_delta(math.nan) == "—"


def test_side_by_side_puts_paper_ours_delta_status_under_each_column():
    results = frame(cell("fedavg", [83.0, 83.82]), cell("local", [70.0, 70.0], dataset="CiteSeer"))
    comparison = compare(results, paper([entry("fedavg", 80.12, 0.45), entry("local", 70.0, dataset="CiteSeer")]))
    table = cmp.side_by_side(comparison, rows="method", columns="dataset", row_labels={"fedavg": "FedAvg"})
    assert table.loc["FedAvg", ("Cora", "ours")] == "83.41 ± 0.41" and table.loc["FedAvg", ("Cora", "Δ")] == "+3.29"
    assert table.loc["local", ("CiteSeer", "status")] == "match"
    two = cmp.side_by_side(comparison, rows=["dataset", "method"], columns="metric")
    assert two.loc[("Cora", "fedavg"), ("accuracy", "paper")] == "80.12 ± 0.45"


def test_claims_table_gives_one_verdict_line_per_claim():
    results = frame(
        cell("fedspray", [84.0, 84.2], dataset="Cora"), cell("local", [80.0, 80.0], dataset="Cora"),
        cell("fedavg", [82.3, 82.3], dataset="Cora"),
        cell("fedspray", [70.0, 70.0], dataset="CiteSeer"), cell("local", [71.0, 71.0], dataset="CiteSeer"),
        cell("fedavg", [60.0, 60.0], dataset="CiteSeer"),
        cell("fedspray", [90.0], dataset="MyGraph"), cell("local", [80.0], dataset="MyGraph"),
        cell("fedavg", [80.0], dataset="MyGraph"),
    )
    everywhere = {**CLAIM, "id": "local_never_best", "text": "FedSpray beats Local on Cora", "winner": "fedspray",
                  "losers": ["local"], "dataset": "Cora"}
    elsewhere = {**CLAIM, "id": "only_mine", "text": "on my graph", "dataset": "MyGraph"}
    absent = {**CLAIM, "id": "absent", "text": "not run", "metric": "macro_f1"}
    table = cmp.claims_table(check_claims(results, paper(claims=[CLAIM, everywhere, elsewhere, absent])))
    assert list(table.columns) == cmp.CLAIMS_TABLE_COLUMNS
    rows = table.set_index("id")
    assert rows.loc["spray_wins", "verdict"] == (
        "holds in 1 of 2 (per dataset); fails in CiteSeer: fedspray 70.00 vs best loser local 71.00 (beyond noise); "
        "1 not judged (not the paper's data)")
    assert rows.loc["spray_wins", "data"] == "paper" and rows.loc["spray_wins", "claim"] == CLAIM["text"]
    assert rows.loc["local_never_best", "verdict"] == "holds in 1 of 1 (per dataset)"
    assert rows.loc["only_mine", "verdict"] == "not judged: not the paper's data (MyGraph)"
    assert rows.loc["only_mine", "data"] == "other"
    assert rows.loc["absent", "verdict"] == "no rows for table 2, metric macro_f1"


def test_rebuild_report_from_the_stored_results(tmp_path):
    folder = tmp_path / "toy"
    folder.mkdir()
    frame(cell("fedspray", [84.0]), cell("local", [80.0]), cell("fedavg", [85.0])).to_csv(folder / "results.csv",
                                                                                         index=False)
    spec = paper([entry("fedspray", 84.0, 0.5)], claims=[CLAIM])
    comparison, claims = cmp.rebuild_report(folder, spec)
    assert comparison["status"].tolist() == ["match"]
    assert claims.set_index("group").loc["overall", "holds"] is False  # fedavg 85 beats fedspray 84
    assert pd.read_csv(folder / "claims.csv")["group"].tolist() == ["dataset=Cora", "overall"]
    with pytest.raises(FileNotFoundError, match="no .*results.csv"):
        cmp.rebuild_report(tmp_path / "empty", spec)


def test_fgl_compare_rewrites_a_profile_from_its_stored_runs(tmp_path, monkeypatch, capsys):
    from fglcore.cli import main

    (tmp_path / "params" / "toy").mkdir(parents=True)
    (tmp_path / "params" / "toy" / "paper.yaml").write_text(
        yaml.safe_dump(paper([entry("fedspray", 84.0, 0.5)], claims=[CLAIM])))
    (tmp_path / "outputs" / "full" / "toy").mkdir(parents=True)
    frame(cell("fedspray", [84.0]), cell("local", [80.0]), cell("fedavg", [85.0])).to_csv(
        tmp_path / "outputs" / "full" / "toy" / "results.csv", index=False)
    monkeypatch.setattr(paths, "params_root", lambda: tmp_path / "params")
    monkeypatch.setattr(paths, "outputs_root", lambda: tmp_path / "outputs")
    assert main(["compare", "--profile", "full"]) == 0
    assert "toy: 1 entries, 1 claims" in capsys.readouterr().out
    assert pd.read_csv(tmp_path / "outputs" / "full" / "toy" / "comparison.csv")["status"].tolist() == ["match"]
    assert "`spray_wins` (dataset=Cora; paper)" in (tmp_path / "outputs" / "full" / "summary.md").read_text()
    assert main(["compare", "nope"]) == 2
    assert "compare: unknown paper 'nope'; papers with a paper.yaml: toy" in capsys.readouterr().err
    (tmp_path / "params" / "other").mkdir()
    (tmp_path / "params" / "other" / "paper.yaml").write_text(
        yaml.safe_dump(paper([entry("fedspray", 84.0, 0.5)], claims=[CLAIM])))
    assert main(["compare", "other", "--profile", "full"]) == 2
    assert "outputs/full/other holds no results.csv" in capsys.readouterr().err
