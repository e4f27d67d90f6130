"""Progress logs of long sweeps: lines written beside the results, followed by the fgl command."""
from __future__ import annotations

from fglcore.runlog import LogFollower, SweepLog, format_hours, log_path


def test_log_path_sits_beside_the_results_file(tmp_path):
    assert log_path(tmp_path / "results.csv") == tmp_path / "results.log"


def test_format_hours_reads_minutes_then_hours():
    assert format_hours(10) == "1 min"
    assert format_hours(95) == "2 min"
    assert format_hours(8280) == "2.3 h"


def test_sweep_log_estimates_from_the_mean_run_time(tmp_path):
    log = SweepLog(tmp_path / "results.csv", "Table 2")
    first = log.computed(stored=1, total=9, label="Cora fedavg gcn seed=0", seconds=600, runs_left=3)
    second = log.computed(stored=2, total=9, label="Cora fedavg gcn seed=1", seconds=1200, runs_left=4)
    assert first.endswith("Table 2  1/9  Cora fedavg gcn seed=0  600 s  about 30 min of runs left")
    assert second.endswith("about 1.0 h of runs left")  # mean 900 s x 4
    assert (tmp_path / "results.log").read_text().splitlines() == [first, second]
    third = log.computed(stored=3, total=9, label="Cora fedavg gcn seed=2", seconds=900, runs_left=4, workers=2)
    assert third.endswith("about 30 min of runs left on 2 workers")  # mean 900 s x 4 / 2


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
