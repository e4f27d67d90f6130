"""FedStar's gap report: which known differences bear on which cell, the seed noise, systematic shifts."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from fglcore import compare
from fglcore.papers.fedstar import gaps as G
from fglcore.papers.fedstar import tables as T


def _cell(table="1", dataset="chem", method="fedstar", setting=""):
    return {"table": table, "dataset": dataset, "method": method, "setting": setting}


def test_known_differences_bear_on_the_cells_they_name():
    keys = lambda cell: [d.key for d in G.differences_for(cell)]  # noqa: E731
    assert keys(_cell()) == []  # FedStar on CHEM: nothing known
    assert keys(_cell(method="local")) == []  # Local follows the released code
    assert keys(_cell(method="fedavg")) == ["code", "A2"]
    assert keys(_cell(dataset="biosncv", method="gcfl")) == ["no COLLAB", "A12", "code", "A4", "A5"]
    assert keys(_cell(dataset="biochem", method="gcfl")) == ["A12", "code", "A4"]
    assert keys(_cell(table="2", dataset="biochem", method="fedavg", setting=T.table2_setting("All", False))) == [
        "A12", "code", "A2", "A8", "marks"]
    assert keys(_cell(table="2", dataset="biochem", method="fedstar", setting=T.table2_setting("FE", True))) == [
        "A12", "A7", "marks"]
    assert keys(_cell(table="2", dataset="biochem", method="fedstar", setting=T.table2_setting("SE", True))) == [
        "A12"]
    assert keys(_cell(table="3", dataset="biochem", setting="SE=ones")) == ["A12", "marks", "A9"]
    assert keys(_cell(table="4", method="gcfl", setting="E=1")) == ["code", "A4"]
    assert keys(_cell(table="4", setting="E=3")) == ["A15"]
    assert keys(_cell(table="10", setting="FE=gin,SE=gcn")) == []  # the default backbones
    assert keys(_cell(table="10", setting="FE=sage,SE=gin")) == ["A16"]
    with_every_key = {d.key for d in G.KNOWN_DIFFERENCES}
    assert len(with_every_key) == len(G.KNOWN_DIFFERENCES)  # keys name one difference each


def _comparison(rows):
    columns = ["table", "dataset", "method", "setting", "paper_mean", "ours_mean", "ours_std_of_mean", "n_seeds",
               "status"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["delta"] = frame["ours_mean"] - frame["paper_mean"]
    return frame


def test_gap_table_orders_by_size_and_measures_seed_noise():
    comparison = _comparison([
        ("1", "chem", "fedstar", "", 79.0, 78.5, 1.0, 5, "match"),
        ("1", "chem", "fedavg", "", 75.0, 72.0, 1.0, 5, "match"),
        ("1", "chem", "local", "", 75.0, 75.5, math.nan, 1, "match"),
        ("1", "chem", "gcfl", "", 76.0, math.nan, math.nan, 0, "missing"),
    ])
    gaps = G.gap_table(comparison)
    assert list(gaps["method"]) == ["fedavg", "fedstar", "local"]  # largest |delta| first; unrun cells left out
    # population std 1.0 over 5 seeds -> sample std sqrt(5/4), standard error sqrt(5/4)/sqrt(5) = 0.5
    assert gaps.loc[0, "noise"] == pytest.approx(2 * math.sqrt(2) * 0.5)
    assert gaps.loc[0, "beyond_noise"] is True and gaps.loc[1, "beyond_noise"] is False
    assert math.isnan(gaps.loc[2, "noise"]) and gaps.loc[2, "beyond_noise"] is None  # one seed: no noise estimate
    assert list(gaps["known"]) == ["code, A2", "—", "—"]
    legend = G.legend(gaps)
    assert list(legend["key"]) == ["code", "A2"] and list(legend["cells"]) == [1, 1]


def test_shifts_find_methods_that_sit_on_one_side_beyond_noise():
    gaps = pd.DataFrame({
        "method": ["fedavg", "fedavg", "fedstar", "fedstar", "local", "local"],
        "delta": [-2.0, -1.5, 0.5, -0.4, 1.2, 1.8],
        "beyond_noise": [True, True, False, False, True, None],
    })
    shift = G.shifts(gaps)
    assert shift.loc["fedavg", "mean Δ"] == pytest.approx(-1.75)
    assert shift.loc["fedavg", "below"] == 2 and shift.loc["fedstar", "below"] == 1
    assert shift.loc["local", "beyond noise"] == 1
    assert G.systematic(shift) == ["fedavg"]  # local: one side, but only half of its cells beyond noise


def test_comparison_carries_the_spread_of_the_client_average():
    rows = []
    for seed, values in enumerate([(70.0, 90.0), (80.0, 80.0), (90.0, 90.0)], start=1):
        labels = {"paper": "fedstar", "table": "1", "dataset": "chem", "partition": "by_dataset", "num_clients": 7,
                  "method": "fedstar", "model": "gin", "setting": "", "seed": seed, "selected_round": 200,
                  "config_id": f"c{seed}"}
        rows.append({**labels, "metric": "accuracy", "value": sum(values) / 2})
        rows += [{**labels, "metric": f"accuracy[client={client}]", "value": v} for client, v in enumerate(values)]
    comparison = compare.compare(pd.DataFrame(rows), "fedstar", table="1")
    cell = comparison[(comparison["method"] == "fedstar") & (comparison["dataset"] == "chem")].iloc[0]
    assert cell["ours_std_of_mean"] == pytest.approx(pd.Series([80.0, 80.0, 90.0]).std(ddof=0))
    assert G.gap_table(comparison)["noise"].iloc[0] > 0


def test_report_names_every_part_and_says_when_nothing_compares():
    comparison = _comparison([("1", "chem", "fedavg", "", 75.0, 72.0, 1.0, 5, "match"),
                              ("1", "biochem", "fedavg", "", 70.0, 68.0, 1.0, 5, "match")])
    text = G.report(comparison)
    assert "A2 (2 cells): the paper does not say which layers FedAvg averages" in text
    assert "A12 (1 cell): " in text
    assert text.splitlines()[-1].endswith(": fedavg")
    assert "setting" not in text.splitlines()[1]  # Table 1 has no setting labels: the column is left out
    assert G.report(comparison.iloc[0:0]).startswith("no cell of ours")
