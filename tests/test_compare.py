"""Comparison with a paper's numbers: paper.yaml schema, tolerance, statuses, claims, report files."""
from __future__ import annotations

import math

import pandas as pd
import pytest
import yaml

from fglcore import compare as cmp
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


def paper(results=(), claims=()) -> dict:
    return {"paper": "toy", "title": "A toy paper", "results": list(results), "claims": list(claims), "settings": {"lr": 0.01}}


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
    monkeypatch.setattr(cmp.paths, "params_root", lambda: tmp_path)
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
    assert rows.loc["dataset=Cora", "detail"] == "fedspray 84.10 vs best loser fedavg 82.30"
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
    assert "| toy | 3 | 1 | 0 | 1 | 1 | 1 | 0 | 1 | 0 |" in markdown
    assert "`spray_wins` (all): fedspray 84.00 vs best loser fedavg 85.00" in markdown
