"""Progress logs of long sweeps: lines written beside the results, followed by the fgl command."""
from __future__ import annotations

import math

import pytest

from fglcore.runlog import LogFollower, RunTally, SweepLog, expected_seconds, format_hours, log_path


def test_log_path_sits_beside_the_results_file(tmp_path):
    assert log_path(tmp_path / "results.csv") == tmp_path / "results.log"


def test_format_hours_reads_minutes_then_hours():
    assert format_hours(10) == "1 min"
    assert format_hours(95) == "2 min"
    assert format_hours(8280) == "2.3 h"


def test_expected_seconds_prices_a_method_on_data_where_it_has_not_run_yet():
    # GIN takes 100 s on CHEM and FedStar twice that; BIO-CHEM is three times CHEM's size
    timed = [("chem", "gin", 100.0), ("chem", "fedstar", 200.0), ("biochem", "gin", 300.0)]
    assert expected_seconds(timed, [("biochem", "fedstar")]) == pytest.approx(600.0)
    assert expected_seconds(timed, [("chem", "gin")] * 3) == pytest.approx(300.0)
    # data with no timed run takes the mean size (in log time): sqrt(1 * 3) x GIN's 100 s
    assert expected_seconds(timed, [("biosncv", "gin")]) == pytest.approx(100.0 * 3 ** 0.5)
    assert expected_seconds(timed, []) == 0.0
    assert math.isnan(expected_seconds([], [("chem", "gin")]))


def test_sweep_log_writes_the_estimate_of_the_runs_left(tmp_path):
    log = SweepLog(tmp_path / "results.csv", "Table 1")
    timed = [("chem", "gin", 600.0), ("chem", "fedstar", 1200.0)]
    first = log.computed(stored=2, total=9, label="chem fedstar gin seed=1", seconds=1200, timed=timed,
                         pending=[("chem", "gin"), ("chem", "fedstar")])
    assert first.endswith("Table 1  2/9  chem fedstar gin seed=1  1200 s  about 30 min of runs left")
    second = log.computed(stored=3, total=9, label="chem gin gin seed=2", seconds=600, timed=timed,
                          pending=[("chem", "fedstar"), ("chem", "fedstar"), ("biochem", "gin")], workers=2)
    # BIO-CHEM, never timed, takes the mean data size (CHEM's): (1200 + 1200 + 600) s / 2
    assert second.endswith("about 25 min of runs left on 2 workers (1 of them on data not timed yet)")
    last = log.computed(stored=9, total=9, label="chem gin gin seed=3", seconds=600, timed=timed, pending=[])
    assert last.endswith("600 s  last run")
    assert (tmp_path / "results.log").read_text().splitlines() == [first, second, last]
    untimed = log.computed(stored=1, total=9, label="copied", seconds=0, timed=[], pending=[("chem", "gin")])
    assert untimed.endswith("0 s  runs left: 1")


def test_follower_prints_new_complete_lines_with_their_prefix(tmp_path):
    old, new = tmp_path / "a.log", tmp_path / "b.log"
    old.write_text("written before\n")
    seen: list[str] = []
    with LogFollower({old: "fedspray", new: "fedstar"}, emit=seen.append, interval=60) as follower:
        with open(old, "a") as f:
            f.write("first\nhalf a li")
        new.write_text("created later\n")
        follower.poll()
        assert seen == ["[fedspray] first", "[fedstar] created later"]
        with open(old, "a") as f:
            f.write("ne\n")
    assert seen[-1] == "[fedspray] half a line"  # the last poll happens on leaving the block


def _closing(desc, total, computed, reused, others, pid, source="outputs/smoke/tour/results.csv"):
    extra = f", {others} computed by other processes" if others else ""
    return (f"[tour] 2026-11-25 12:00:00  {desc}  {total} runs: {computed} computed, {reused} reused from "
            f"{source}{extra}  [pid {pid}]")


def test_a_sweep_ends_with_a_line_of_what_it_computed_and_reused(tmp_path):
    log = SweepLog(tmp_path / "results.csv", "Table 2")
    assert log.finished(total=1, computed=1, reused=0, by_others=0, source="r.csv") == "1 computed, 0 reused from r.csv"
    assert log.finished(total=5, computed=1, reused=2, by_others=2, source="r.csv") == (
        "1 computed, 2 reused from r.csv, 2 computed by other processes")
    lines = log.path.read_text().splitlines()
    assert lines[0].endswith("  Table 2  1 run: 1 computed, 0 reused from r.csv  [pid " + str(__import__("os").getpid()) + "]")
    tally = RunTally()
    for line in lines:
        tally.add(line)
    assert tally.counts() == (1 + 1, 0 + 4) and tally.sweeps == 2


def test_the_tally_counts_each_run_once_across_sweeps_and_workers():
    tally = RunTally()
    assert tally.summary() == "runs: none (no sweep ran)"
    tally.add("[tour] 2026-11-25 12:00:00  tour runs  3/56  Cora fedavg gcn seed=0  5 s  about 2 min of runs left")
    assert tally.sweeps == 0  # a progress line is not a closing line
    # one notebook on two workers: both close the same two sweeps ("Table 2" twice, as a notebook may name them)
    for pid in (11, 12):
        computed = {11: (3, 1), 12: (1, 0)}[pid]
        tally.add(_closing("Table 2", 4, computed[0], 4 - computed[0] - (4 - sum(computed)), 4 - sum(computed), pid))
        tally.add(_closing("Table 2", 4, computed[1], 4 - computed[1], 0, pid))
    tally.add(_closing("Figure 1(a)", 6, 0, 6, 0, 11, source="outputs/smoke/fedstar/results.csv"))
    assert tally.counts() == (4 + 1, 0 + 3 + 6) and tally.sweeps == 3
    assert tally.summary() == "runs: 5 computed, 9 reused from outputs/smoke (3 sweeps)"


# ----------------------------------------------------------------------------- projection of a profile


def _config(**changes):
    from fglcore.config import ExperimentConfig

    base = {"dataset": "Cora", "algorithm": "fedavg", "model": "gcn", "rounds": 10, "seed": 0}
    return ExperimentConfig.from_dict({**base, **changes})


def test_group_key_names_the_local_bias_variant():
    from fglcore.runlog import format_group, group_key

    assert group_key(_config()) == ("Cora", "fedavg", "gcn", 10)
    ours = _config(algorithm="localbias", algorithm_options={"variant": "ours-full", "backbone": "gcn"})
    assert format_group(group_key(ours)) == "Cora|localbias:ours-full/gcn|gcn|10"


def test_projection_counts_each_computation_once_and_prices_by_measured_group():
    from fglcore.runlog import projection

    plans = {"a": [_config(seed=s) for s in range(3)],
             "b": [_config(seed=0, table="other"),  # the same computation as a's seed 0: copied, free
                   _config(seed=0, rounds=40),  # same method and data, 4x the rounds: scaled
                   _config(seed=0, dataset="CiteSeer")]}  # no measured group: the size x cost model
    table = projection(plans, {"Cora|fedavg|gcn|10": 36.0}, workers=2)
    rows = {(r.notebook, r.group): r for r in table.itertuples()}
    assert rows[("a", "Cora|fedavg|gcn|10")].runs == 3
    assert rows[("a", "Cora|fedavg|gcn|10")].priced == "measured"
    assert ("b", "Cora|fedavg|gcn|10") not in rows
    assert rows[("b", "Cora|fedavg|gcn|40")].seconds_per_run == pytest.approx(144.0)
    assert rows[("b", "Cora|fedavg|gcn|40")].priced == "scaled from 10 rounds"
    assert rows[("b", "CiteSeer|fedavg|gcn|10")].priced == "modelled"
    assert rows[("b", "CiteSeer|fedavg|gcn|10")].seconds_per_run == pytest.approx(36.0)
    assert table["cpu_hours"].sum() == pytest.approx((3 * 36 + 144 + 36) / 3600, abs=0.02)
    assert "5 runs" in table.attrs["summary"] and "on 2 workers" in table.attrs["summary"]


def test_projection_without_measurements_prices_nothing():
    from fglcore.runlog import projection

    table = projection({"a": [_config()]}, {})
    assert table["priced"].tolist() == ["not priced"] and math.isnan(table["seconds_per_run"].iloc[0])


def test_plan_configs_builds_a_notebooks_planned_runs_under_a_profile():
    from fglcore.paths import repo_root
    from fglcore.runlog import plan_configs

    configs = plan_configs(repo_root() / "notebooks" / "localbias" / "2_method.ipynb", "full")
    assert [c.dataset for c in configs] == ["Cora", "Cora"]
    assert {c.rounds for c in configs} == {10}  # params/localbias/2_method.full.yaml, not the cell's default


def test_projection_prices_another_backbone_as_the_measured_one_and_says_so():
    from fglcore.runlog import projection

    table = projection({"a": [_config(model="gat")]}, {"Cora|fedavg|gcn|5": 10.0})
    assert table["priced"].tolist() == ["as gcn, scaled from 5 rounds"]
    assert table["seconds_per_run"].tolist() == [pytest.approx(20.0)]


def test_projection_never_prices_a_model_list_as_a_backbone_or_a_backbone_as_a_model_list():
    from fglcore.runlog import projection

    backbone, model_list = _config(algorithm="local", model="sage"), _config(algorithm="local", model="hetero",
                                                                            num_clients=10)
    table = projection({"a": [backbone]}, {"Cora|local|hetero|5": 90.0, "CiteSeer|local|gcn|5": 10.0})
    assert table["priced"].iloc[0].startswith("modelled")
    table = projection({"a": [model_list]}, {"Cora|local|gcn|5": 10.0})
    assert table["priced"].iloc[0].startswith("modelled")
    table = projection({"a": [backbone]}, {"Cora|local|hetero|5": 90.0, "Cora|local|gcn|5": 10.0})
    assert table["priced"].tolist() == ["as gcn, scaled from 5 rounds"]


def test_projection_never_scales_a_one_round_run_to_many_rounds():
    from fglcore.runlog import projection

    table = projection({"a": [_config(rounds=100)]}, {"Cora|fedavg|gcn|1": 10.0, "Cora|local|gcn|100": 3.0})
    assert table["priced"].tolist() == ["modelled"] or table["priced"].tolist() == ["modelled, method not measured"]
    assert table["seconds_per_run"].iloc[0] < 1000  # not 100 x the one-shot run
