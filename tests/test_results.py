"""The tidy results schema, config ids and the atomic, duplicate-free result store."""
from __future__ import annotations

import math
import os

import pandas as pd
import pytest
import torch

from fglcore.config import ExperimentConfig
from fglcore.fl import Channel, RunResult
from fglcore.provenance import PROVENANCE_COLUMNS, run_record
from fglcore.results import RESULT_COLUMNS, ResultStore, _typed, config_id, rows_from_result, summarize


def make_config(**changes) -> ExperimentConfig:
    # The dataclass constructor skips validation: these tests need no registry.
    return ExperimentConfig(paper="fedspray", table="2", dataset="Cora", num_clients=3, **changes)


def make_result(metrics: dict[str, float], selected_round: int = 4) -> RunResult:
    channel = Channel()
    channel.send("server", "client0", {"w": torch.zeros(10)}, 1)  # 40 bytes down
    channel.send("client0", "server", {"w": torch.zeros(10), "num_samples": torch.tensor(1.0)}, 1)  # 44 up
    channel.send("client0", "client1", {"h": torch.zeros(2, dtype=torch.float64)}, 1)  # 16 peer
    return RunResult(history=[], selected_round=selected_round, metrics=metrics, per_client=[], ledger=channel.ledger)


def rows_for(config: ExperimentConfig, value: float) -> list[dict]:
    return rows_from_result(config, make_result({"test_accuracy": value, "val_accuracy": value}))


def test_rows_follow_schema_with_percent_and_raw_units():
    config = make_config(setting="E=5", seed=3)
    result = make_result(
        {"test_accuracy": 0.8125, "test_macro_f1": 0.5, "test_minority_accuracy": 0.25, "val_accuracy": 0.75, "test_loss": 0.3}
    )
    rows = rows_from_result(config, result)
    assert all(list(row) == RESULT_COLUMNS for row in rows)
    values = {row["metric"]: row["value"] for row in rows}
    assert values == {
        "accuracy": 81.25,
        "macro_f1": 50.0,
        "minority_accuracy": 25.0,
        "val_accuracy": 75.0,
        "upload_bytes": 44.0,
        "download_bytes": 40.0,
        "total_bytes": 100.0,
    }
    row = rows[0]
    assert (row["paper"], row["table"], row["dataset"], row["method"], row["model"], row["setting"]) == (
        "fedspray", "2", "Cora", "fedavg", "gcn", "E=5"
    )
    assert (row["num_clients"], row["seed"], row["selected_round"]) == (3, 3, 4)
    assert {r["config_id"] for r in rows} == {config_id(config)}


def test_metric_absent_or_nan_gets_no_row():
    rows = rows_from_result(make_config(), make_result({"test_accuracy": 0.5, "test_minority_accuracy": math.nan}))
    metrics = [r["metric"] for r in rows]
    assert "minority_accuracy" not in metrics and "macro_f1" not in metrics and "accuracy" in metrics


def test_config_id_is_stable_and_ignores_progress_and_device():
    base = make_config()
    assert config_id(base) == config_id(make_config())
    assert config_id(base) == config_id(make_config(progress=True, device="cpu"))
    assert config_id(base) != config_id(make_config(seed=1))
    assert config_id(base) != config_id(make_config(partition_options={"delta": 20}))
    assert len(config_id(base)) == 16


def test_read_of_missing_store_is_empty_frame_with_schema(tmp_path):
    frame = ResultStore(tmp_path / "results.csv").read()
    assert list(frame.columns) == RESULT_COLUMNS and frame.empty
    assert ResultStore(tmp_path / "results.csv").done_ids() == set()


def test_append_round_trips_and_keeps_types(tmp_path):
    store = ResultStore(tmp_path / "sub" / "results.csv")
    config = make_config()
    store.append(rows_for(config, 0.5))
    frame = store.read()
    assert list(frame.columns) == RESULT_COLUMNS
    assert store.done_ids() == {config_id(config)}
    assert frame["setting"].tolist() == [""] * len(frame)  # empty labels stay "", not NaN
    assert frame["table"].iloc[0] == "2" and frame["num_clients"].iloc[0] == 3
    assert frame.loc[frame["metric"] == "accuracy", "value"].item() == 50.0
    assert not [p for p in os.listdir(store.path.parent) if p.endswith(".tmp")]


def test_stored_values_come_back_bit_for_bit(tmp_path):
    """Seventeen-digit values (accuracies from float32 sums times 100) are read back exactly, whatever parser
    the installed pandas has; empty and non-numeric cells read as NaN."""
    values = [29.998945508821834, 47.600001096725464, 50.199997425079346, 38.600000739097595, 1e-310, 0.1 + 0.2]
    values += (torch.rand(200, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 100).tolist()
    store = ResultStore(tmp_path / "results.csv")
    rows = rows_for(make_config(), 0.5)
    store.append([{**rows[0], "metric": f"m{i}", "value": v} for i, v in enumerate(values)])
    assert store.read()["value"].tolist() == values
    typed = _typed(pd.DataFrame([{**rows[0], "value": text} for text in ("", "nan", "abc", "2.5")]))
    assert typed["value"].isna().tolist() == [True, True, True, False]


def test_reappending_a_config_replaces_its_rows(tmp_path):
    store = ResultStore(tmp_path / "results.csv")
    first, second = make_config(seed=0), make_config(seed=1)
    store.append(rows_for(first, 0.5))
    store.append(rows_for(second, 0.6))
    store.append(rows_for(first, 0.7))
    frame = store.read()
    assert len(frame) == 2 * len(rows_for(first, 0.5))
    assert not frame.duplicated(["config_id", "metric"]).any()
    accuracy = frame[frame["metric"] == "accuracy"].set_index("seed")["value"]
    assert accuracy.to_dict() == {0: 70.0, 1: 60.0}


def test_storing_unchanged_rows_again_leaves_the_file_and_its_row_order_alone(tmp_path):
    store = ResultStore(tmp_path / "results.csv")
    first, second = make_config(seed=0), make_config(seed=1)
    store.append(rows_for(first, 0.5))
    store.append(rows_for(second, 0.6))
    before, modified = store.path.read_bytes(), store.path.stat().st_mtime_ns
    store.append(rows_for(first, 0.5))  # as a notebook re-executed on stored runs does
    assert store.path.read_bytes() == before and store.path.stat().st_mtime_ns == modified
    store.append(rows_for(first, 0.7))  # a changed value is stored, after the rows it did not replace
    assert store.read()["seed"].tolist()[-1] == 0 and 70.0 in store.read()["value"].tolist()


def test_crash_during_write_leaves_old_file_intact(tmp_path, monkeypatch):
    store = ResultStore(tmp_path / "results.csv")
    store.append(rows_for(make_config(seed=0), 0.5))
    before = store.path.read_bytes()

    def crash(*args, **kwargs):
        raise KeyboardInterrupt("interrupted while replacing")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        store.append(rows_for(make_config(seed=1), 0.6))
    monkeypatch.undo()
    assert store.path.read_bytes() == before
    left = [name for name in os.listdir(tmp_path) if not name.endswith(".lock")]  # the lock file stays
    assert left == ["results.csv"]  # the temporary file was removed


def test_append_rejects_rows_off_schema(tmp_path):
    store = ResultStore(tmp_path / "results.csv")
    row = rows_for(make_config(), 0.5)[0]
    del row["seed"]
    with pytest.raises(ValueError, match="missing \\['seed'\\]"):
        store.append([row])
    assert not store.path.exists()


def test_store_refuses_a_file_with_other_columns(tmp_path):
    path = tmp_path / "results.csv"
    pd.DataFrame({"a": [1]}).to_csv(path, index=False)
    with pytest.raises(ValueError, match="does not follow the results schema"):
        ResultStore(path).read()


def test_summarize_mean_and_population_std_over_seeds(tmp_path):
    store = ResultStore(tmp_path / "results.csv")
    for seed, value in enumerate([0.80, 0.84]):
        store.append(rows_for(make_config(seed=seed), value))
    summary = summarize(store.read())
    accuracy = summary[summary["metric"] == "accuracy"].iloc[0]
    assert accuracy["mean"] == pytest.approx(82.0)
    assert accuracy["std"] == pytest.approx(2.0)  # ddof=0
    assert accuracy["n_seeds"] == 2
    by_metric = summarize(store.read(), by=["metric"])
    assert list(by_metric.columns) == ["metric", "mean", "std", "n_seeds"]
    with pytest.raises(ValueError, match="unknown column"):
        summarize(store.read(), by=["dataset", "nope"])


def test_run_id_ignores_labels_and_explicit_default_options():
    from fglcore.results import run_id

    base = {"dataset": "Cora", "num_clients": 3, "algorithm": "fedprox"}
    same = {**base, "paper": "x", "table": "2", "setting": "S", "algorithm_options": {"mu": 0.01}}
    assert run_id(base) == run_id(same) and config_id(base) != config_id(same)
    assert run_id(base) != run_id({**base, "algorithm_options": {"mu": 0.1}})
    assert run_id(base) != run_id({**base, "seed": 1})


def _append_many(path, first, count):
    from fglcore.results import ResultStore as Store

    for i in range(first, first + count):
        row = {c: "" for c in RESULT_COLUMNS}
        row.update(paper="p", dataset="Cora", method="local", metric="accuracy", seed=0, value=1.0,
                   config_id=f"{i:016x}", num_clients=1, selected_round=0)
        Store(path).append([row], run_id=f"{i:016x}")


def test_processes_appending_to_one_store_lose_no_rows(tmp_path):
    import multiprocessing

    path = tmp_path / "results.csv"
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_append_many, args=(path, 100 * k, 15)) for k in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert all(worker.exitcode == 0 for worker in workers)
    store = ResultStore(path)
    assert len(store.done_ids()) == 45 and len(store.run_ids()) == 45


def test_the_run_index_records_seconds_and_reads_old_indexes(tmp_path):
    store = ResultStore(tmp_path / "results.csv")
    store.append(rows_for(make_config(seed=0), 0.5), run_id="a" * 16, seconds=12.5)
    store.append(rows_for(make_config(seed=1), 0.6), run_id="a" * 16)  # a copy: no seconds of its own
    log = store.run_log()
    assert list(log.columns) == ["config_id", "run_id", "seconds", "finished", *PROVENANCE_COLUMNS]
    assert log["seconds"].iloc[0] == 12.5 and math.isnan(log["seconds"].iloc[1])
    assert log["finished"].str.endswith("+00:00").all()
    cost = store.cost()
    assert (cost["runs computed"], cost["runs copied"], cost["compute hours"]) == (1, 1, round(12.5 / 3600, 2))
    store.index_path.write_text("config_id,run_id\n" + f"{'b' * 16},{'c' * 16}\n")  # written by an older version
    assert store.run_ids() == {"b" * 16: "c" * 16} and math.isnan(store.run_log()["seconds"].iloc[0])
    assert (store.run_log()[PROVENANCE_COLUMNS] == "").all(axis=None)


def test_seconds_per_run_groups_computed_runs_by_cell_and_device(tmp_path):
    store = ResultStore(tmp_path / "results.csv")
    for seed, seconds, device in ((0, 10.0, "cpu"), (1, 20.0, "cpu"), (2, 4.0, "cuda:0 (H200)")):
        store.append(rows_for(make_config(seed=seed), 0.5), run_id=f"{seed}" * 16, seconds=seconds,
                     provenance={"device": device})
    store.append(rows_for(make_config(seed=3), 0.5), run_id="3" * 16)  # copied: no seconds
    costs = store.seconds_per_run(by=["dataset"]).set_index("device")
    assert costs.loc["cpu", ["runs", "mean", "max"]].tolist() == [2, 15.0, 20.0]
    assert costs.loc["cuda:0 (H200)", "runs"] == 1 and len(costs) == 2
    only_seed_0 = store.read()[lambda f: f["seed"] == 0]
    assert store.seconds_per_run(only_seed_0, by=["dataset"])["runs"].tolist() == [1]


def test_the_run_index_records_how_each_run_was_made_and_reads_indexes_without_it(tmp_path):
    store = ResultStore(tmp_path / "results.csv")
    old, new = make_config(seed=0), make_config(seed=1)
    # An index of the previous version: timing, no provenance.
    store.append(rows_for(old, 0.5))
    store.index_path.write_text(f"config_id,run_id,seconds,finished\n{config_id(old)},{'a' * 16},3.0,"
                                "2026-11-24T10:00:00+00:00\n")
    record = run_record("cpu")
    store.append(rows_for(new, 0.6), run_id="b" * 16, seconds=1.0, provenance=record)
    log = store.run_log().set_index("config_id")
    assert log.loc[config_id(old), PROVENANCE_COLUMNS].tolist() == [""] * len(PROVENANCE_COLUMNS)
    assert log.loc[config_id(new), PROVENANCE_COLUMNS].to_dict() == record
    assert log.loc[config_id(old), "seconds"] == 3.0 and log.loc[config_id(new), "seconds"] == 1.0
    assert store.provenance(config_id(new)) == record and store.provenance("never-stored")["torch"] == ""
    assert record["torch"] == torch.__version__ and record["device"].startswith("cpu")
    assert {"flush_denormal", "sparse_features", "graph_fast", "native", "threads"} <= set(record)
    with pytest.raises(ValueError, match="unknown column\\(s\\) \\['colour'\\]"):
        store.append(rows_for(new, 0.6), run_id="b" * 16, provenance={"colour": "red"})


def test_the_git_commit_is_recorded_dirty_or_unknown_never_an_error(tmp_path):
    import subprocess

    from fglcore.provenance import UNKNOWN, git_commit

    assert git_commit(tmp_path) == UNKNOWN  # not a checkout
    repo = tmp_path / "repo"
    (repo / "outputs").mkdir(parents=True)

    def git(*args):
        return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()

    try:
        git("init", "-q")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("git is not available")
    (repo / "code.py").write_text("x = 1\n")
    (repo / "outputs" / "results.csv").write_text("a\n1\n")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    head = git("rev-parse", "HEAD")
    assert git_commit(repo) == head
    (repo / "outputs" / "results.csv").write_text("a\n2\n")  # runs rewrite outputs: not a code change
    git_commit.cache_clear()
    assert git_commit(repo) == head
    (repo / "code.py").write_text("x = 2\n")
    git_commit.cache_clear()
    assert git_commit(repo) == f"{head}-dirty"
    git_commit.cache_clear()


def test_wall_hours_count_overlapping_runs_once_and_idle_gaps_not_at_all():
    import pandas as pd

    from fglcore.results import busy_seconds

    log = pd.DataFrame({
        "config_id": list("abcde"), "run_id": list("abcde"),
        # two workers 10:00-10:30 (runs of 20 and 30 min), a copy, then a session the next day 09:00-09:10
        "seconds": [1200.0, 1800.0, float("nan"), 600.0, 300.0],
        "finished": ["2026-11-23T10:20:00+00:00", "2026-11-23T10:30:00+00:00", "2026-11-23T10:31:00+00:00",
                     "2026-11-24T09:10:00+00:00", "2026-11-24T09:05:00+00:00"],
    })
    assert busy_seconds(log) == 1800 + 600
    assert busy_seconds(log.iloc[:0]) == 0.0


def test_forget_removes_rows_and_index_entries_so_a_sweep_reruns_them(tmp_path):
    store = ResultStore(tmp_path / "results.csv")
    stale, kept = make_config(seed=0), make_config(seed=1)
    store.append(rows_for(stale, 0.5), run_id="a" * 16, seconds=3.0)
    store.append(rows_for(kept, 0.6), run_id="b" * 16, seconds=4.0)
    assert store.forget([config_id(stale), "not-stored"]) == len(rows_for(stale, 0.5))
    assert store.done_ids() == {config_id(kept)}
    assert store.run_ids() == {config_id(kept): "b" * 16}
    assert ResultStore(tmp_path / "other.csv").forget([config_id(stale)]) == 0
    assert not (tmp_path / "other.csv").exists()  # nothing stored: nothing written


def test_merge_adds_runs_made_elsewhere_with_their_records_and_overwrites_nothing(tmp_path):
    home, away = ResultStore(tmp_path / "home" / "results.csv"), ResultStore(tmp_path / "away" / "results.csv")
    both, new = make_config(seed=0), make_config(seed=1)
    home.append(rows_for(both, 0.5), run_id="a" * 16, seconds=3.0)
    gpu = {**run_record("cpu"), "device": "cuda:0 (Accelerator 0)"}
    away.append(rows_for(both, 0.9), run_id="a" * 16, seconds=1.0, provenance=gpu)
    away.append(rows_for(new, 0.7), run_id="b" * 16, seconds=2.0, provenance=gpu)

    assert home.merge(away) == [config_id(new)]
    accuracy = home.read().query("metric == 'accuracy'").set_index("config_id")["value"]
    assert accuracy[config_id(both)] == 50.0  # home's run kept
    assert accuracy[config_id(new)] == 70.0
    log = home.run_log().set_index("config_id")
    assert log.loc[config_id(both), "seconds"] == 3.0
    theirs = away.run_log().set_index("config_id").loc[config_id(new)]
    assert log.loc[config_id(new)].to_dict() == theirs.to_dict()  # run id, seconds, finish time, device
    assert log.loc[config_id(new), "device"] == "cuda:0 (Accelerator 0)"
    assert home.merge(away) == []  # merging again adds nothing

    away.index_path.unlink()
    stray = make_config(seed=2)
    away.append(rows_for(stray, 0.1))  # rows without an index entry
    with pytest.raises(ValueError, match="no entry for 1 configuration"):
        home.merge(away)
    assert config_id(stray) not in home.done_ids()


def test_atomic_writes_give_the_file_the_mode_open_would(tmp_path):
    import stat

    from fglcore.files import write_csv_atomic

    mask = os.umask(0o022)
    try:
        write_csv_atomic(pd.DataFrame({"a": [1]}), tmp_path / "t.csv")
    finally:
        os.umask(mask)
    assert stat.S_IMODE((tmp_path / "t.csv").stat().st_mode) == 0o644  # not mkstemp's 0600


def test_the_device_is_recorded_with_what_it_is(monkeypatch):
    from fglcore import provenance

    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index: f"Accelerator {index}")
    assert provenance.describe_device("cuda") == "cuda:0 (Accelerator 0)"
    assert provenance.describe_device(torch.device("cuda", 1)) == "cuda:1 (Accelerator 1)"
    assert provenance.describe_device("cpu").startswith("cpu")
