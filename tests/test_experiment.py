"""Running experiments: validation first, grids, resumable sweeps, determinism on the real stack."""
from __future__ import annotations

import os
import time
from types import SimpleNamespace

import pytest
import torch

from fglcore import experiment, runtime
from fglcore.algorithms import ALGORITHMS
from fglcore.artifacts import RunArtifact
from fglcore.claims import CLAIM_FOLDER, HEAVY_SHARE, RunClaims
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.fl import Channel, RunResult
from fglcore.fl.engine import TrainingDiverged
from fglcore.results import RESULT_COLUMNS, ResultStore, config_id, rows_from_result

BASE = {"dataset": "Cora", "num_clients": 3, "algorithm": "fake_fast", "rounds": 2, "device": "cpu"}  # forked workers below: CUDA forbids fork


class FakeAlgorithm:
    """A registered stand-in that runs instantly; numbers depend only on the configuration."""

    name = "fake_fast"
    tasks = ("node",)
    needs_cross_edges = True
    late_options: tuple[str, ...] = ()  # the part of the Algorithm interface that run ids read
    calls: list[tuple[int, float]] = []
    interrupt_at: int | None = None  # raise on this call number (1-based)
    interrupt_with: type[BaseException] = KeyboardInterrupt
    estimate: int | None = None  # memory_estimate()
    during_run = None  # called inside run()

    def __init__(self, config, federation, device):
        self.config, self.federation, self.device = config, federation, device

    @classmethod
    def check_config(cls, config):
        pass

    @classmethod
    def check_options(cls, options):
        return dict(options)

    def memory_estimate(self):
        estimate = FakeAlgorithm.estimate
        return estimate(self.config) if callable(estimate) else estimate

    def run(self, channel=None, checkpoint=None):
        if FakeAlgorithm.during_run is not None:
            FakeAlgorithm.during_run()
        FakeAlgorithm.calls.append((self.config.seed, self.config.lr))
        if len(FakeAlgorithm.calls) == FakeAlgorithm.interrupt_at:
            raise FakeAlgorithm.interrupt_with("interrupted")
        channel = channel or Channel()
        channel.send("server", "client0", {"w": torch.zeros(self.config.hidden)}, 1)
        accuracy = 0.5 + 0.01 * self.config.seed + self.config.lr
        metrics = {"test_accuracy": accuracy, "val_accuracy": accuracy / 2, "test_macro_f1": 1 / 3}
        return RunResult([], self.config.rounds, metrics, [], channel.ledger)


@pytest.fixture
def fake_stack(monkeypatch):
    """Register the fake algorithm and replace the federation builder by one that records its calls."""
    monkeypatch.setitem(ALGORITHMS._items, FakeAlgorithm.name, FakeAlgorithm)
    FakeAlgorithm.calls, FakeAlgorithm.interrupt_at = [], None
    FakeAlgorithm.estimate, FakeAlgorithm.during_run = None, None
    built = []

    def build_federation(config, keep_cross_edges=False):
        built.append(keep_cross_edges)
        return SimpleNamespace(task="node")

    monkeypatch.setattr(experiment, "build_federation", build_federation)
    return built


def test_run_validates_builds_and_tags_rows(fake_stack):
    rows = experiment.run({**BASE, "seed": 2, "paper": "toy", "table": "1", "device": "cpu"})
    assert fake_stack == [True]  # keep_cross_edges follows the algorithm
    values = {r["metric"]: r["value"] for r in rows}
    assert values["accuracy"] == pytest.approx(100 * (0.52 + 0.01))
    assert values["download_bytes"] == 64 * 4
    assert all(r["method"] == "fake_fast" and r["paper"] == "toy" and r["seed"] == 2 for r in rows)


def test_run_rejects_bad_config_before_loading_anything(fake_stack):
    with pytest.raises(ConfigError, match=r"lr: -1.0 is not accepted; accepted: a finite number >= 0"):
        experiment.run({**BASE, "lr": -1.0})
    with pytest.raises(ConfigError, match="unknown config key 'rounds_'"):
        experiment.run({**BASE, "rounds_": 3})
    assert fake_stack == [] and FakeAlgorithm.calls == []


def test_run_full_returns_the_run_result(fake_stack):
    rows, result = experiment.run_full(ExperimentConfig.from_dict(BASE))
    assert isinstance(result, RunResult) and result.selected_round == 2
    assert {r["selected_round"] for r in rows} == {2}


def test_grid_is_the_cartesian_product_last_axis_fastest(fake_stack):
    configs = experiment.grid(BASE, lr=[0.01, 0.1], seed=range(3))
    assert [(c.lr, c.seed) for c in configs] == [(0.01, 0), (0.01, 1), (0.01, 2), (0.1, 0), (0.1, 1), (0.1, 2)]
    assert all(isinstance(c, ExperimentConfig) and c.num_clients == 3 for c in configs)
    with pytest.raises(ConfigError, match="grid axis 'dataset' must be a list"):
        experiment.grid(BASE, dataset="Cora")


def test_grid_validates_every_config_before_any_run(fake_stack, tmp_path):
    # only the last combination is invalid
    with pytest.raises(ConfigError, match=r"grid configuration \(dataset='Cora', seed=-1\): seed: -1 is not accepted; accepted: an integer >= 0"):
        experiment.grid(BASE, dataset=["Cora"], seed=[0, 1, 2, -1])
    configs = [{**BASE, "seed": s} for s in range(3)] + [{**BASE, "dataset": "Corra"}]
    with pytest.raises(ConfigError, match="did you mean 'Cora'"):
        experiment.sweep(configs, tmp_path / "results.csv", progress=False)
    assert FakeAlgorithm.calls == [] and fake_stack == [] and not (tmp_path / "results.csv").exists()


def test_runs_that_need_a_large_share_of_the_memory_compute_one_at_a_time(fake_stack, tmp_path, monkeypatch):
    """While one computes, another process of the sweep cannot start a second one; usual runs do not wait."""
    monkeypatch.setattr(experiment.runtime, "memory_bytes", lambda: 10 * 2**30)
    other_worker = RunClaims(tmp_path / CLAIM_FOLDER)
    second_heavy = []

    def probe():
        with other_worker.memory_gate(heavy=True, blocking=False) as started:
            second_heavy.append(started)

    FakeAlgorithm.during_run = probe
    FakeAlgorithm.estimate = int(0.5 * 10 * 2**30)  # half the memory: above HEAVY_SHARE
    experiment.sweep([{**BASE, "seed": 0}], tmp_path / "results.csv", progress=False)
    FakeAlgorithm.estimate = int(0.1 * 10 * 2**30)
    experiment.sweep([{**BASE, "seed": 1}], tmp_path / "results.csv", progress=False)
    FakeAlgorithm.estimate = None  # a usual run
    experiment.sweep([{**BASE, "seed": 2}], tmp_path / "results.csv", progress=False)
    assert second_heavy == [False, True, True] and HEAVY_SHARE < 0.5


def test_a_heavy_run_waits_its_turn_while_the_sweep_goes_on_with_the_others(fake_stack, tmp_path, monkeypatch):
    """Another process computes a heavy run: this sweep leaves its own heavy run for later, computes the usual
    ones, and computes the heavy one once the gate is free."""
    import threading

    monkeypatch.setattr(experiment.runtime, "memory_bytes", lambda: 10 * 2**30)
    monkeypatch.setattr(experiment, "CLAIM_POLL_SECONDS", 0.05)
    FakeAlgorithm.estimate = lambda config: 5 * 2**30 if config.seed == 0 else None  # seed 0 is heavy
    other_worker, holding, release = RunClaims(tmp_path / CLAIM_FOLDER), threading.Event(), threading.Event()

    def other_heavy_run():
        with other_worker.memory_gate(heavy=True):
            holding.set()
            release.wait(10)

    thread = threading.Thread(target=other_heavy_run)
    thread.start()
    holding.wait(10)
    FakeAlgorithm.during_run = lambda: release.set() if len(FakeAlgorithm.calls) == 1 else None
    experiment.sweep([{**BASE, "seed": s} for s in range(3)], tmp_path / "results.csv", progress=False)
    thread.join(10)
    assert [seed for seed, _ in FakeAlgorithm.calls] == [1, 2, 0]


@pytest.mark.parametrize("interruption", [KeyboardInterrupt, RuntimeError])
def test_interrupted_sweep_resumes_to_the_same_rows(fake_stack, tmp_path, interruption):
    configs = experiment.grid(BASE, lr=[0.01, 0.1], seed=range(3))
    straight = tmp_path / "straight.csv"
    experiment.sweep(configs, straight, progress=False)
    assert len(FakeAlgorithm.calls) == 6

    FakeAlgorithm.calls, FakeAlgorithm.interrupt_at, FakeAlgorithm.interrupt_with = [], 4, interruption
    resumed = tmp_path / "resumed.csv"
    with pytest.raises(interruption):
        experiment.sweep(configs, resumed, progress=False)
    assert ResultStore(resumed).done_ids() == {config_id(c) for c in configs[:3]}  # finished cells kept

    FakeAlgorithm.calls, FakeAlgorithm.interrupt_at = [], None
    FakeAlgorithm.estimate, FakeAlgorithm.during_run = None, None
    frame = experiment.sweep(configs, resumed, progress=False)
    assert FakeAlgorithm.calls == [(c.seed, c.lr) for c in configs[3:]]  # only the unfinished cells ran
    assert resumed.read_bytes() == straight.read_bytes()
    assert list(frame.columns) == RESULT_COLUMNS and not frame.duplicated(["config_id", "metric"]).any()

    FakeAlgorithm.calls = []
    experiment.sweep(configs, resumed, progress=False)  # everything done: nothing runs, nothing changes
    assert FakeAlgorithm.calls == [] and resumed.read_bytes() == straight.read_bytes()


def test_a_diverged_run_is_not_stored_and_the_error_names_it(fake_stack, tmp_path):
    configs = experiment.grid(BASE, seed=range(3))
    FakeAlgorithm.interrupt_at, FakeAlgorithm.interrupt_with = 2, TrainingDiverged
    path = tmp_path / "results.csv"
    with pytest.raises(TrainingDiverged, match="^Table 9, Cora fake_fast gcn seed=1: interrupted$"):
        experiment.sweep(configs, path, progress=False, desc="Table 9")
    assert ResultStore(path).done_ids() == {config_id(configs[0])}


def test_sweep_runs_a_repeated_config_once_and_shows_progress(fake_stack, tmp_path, capsys):
    config = ExperimentConfig.from_dict(BASE)
    frame = experiment.sweep([config, dict(BASE), {**BASE, "progress": True}], tmp_path / "r.csv", desc="cells")
    assert len(FakeAlgorithm.calls) == 1 and frame["config_id"].nunique() == 1
    assert "cells" in capsys.readouterr().err


def test_sweep_returns_only_its_own_configurations(fake_stack, tmp_path):
    path = tmp_path / "r.csv"
    experiment.sweep(experiment.grid(BASE, lr=[0.01]), path, progress=False)
    frame = experiment.sweep(experiment.grid(BASE, lr=[0.1]), path, progress=False)
    assert ResultStore(path).read()["config_id"].nunique() == 2  # the earlier cell stays stored for resuming
    assert frame["config_id"].unique().tolist() == [config_id(experiment.grid(BASE, lr=[0.1])[0])]


def test_sweep_copies_a_run_stored_under_other_labels_instead_of_running_it(fake_stack, tmp_path):
    path = tmp_path / "r.csv"
    table1 = experiment.sweep(experiment.grid({**BASE, "table": "1"}, seed=[0, 1]), path, progress=False)
    assert len(FakeAlgorithm.calls) == 2
    configs2 = experiment.grid({**BASE, "table": "2", "setting": "SE"}, seed=[0, 1, 2])
    table2 = experiment.sweep(configs2, path, progress=False)
    assert FakeAlgorithm.calls == [(0, BASE.get("lr", 0.01)), (1, BASE.get("lr", 0.01)), (2, BASE.get("lr", 0.01))]
    assert set(table2["table"]) == {"2"} and set(table2["setting"]) == {"SE"}
    assert set(table2["config_id"]) == {config_id(c) for c in configs2}
    copied = table2[table2["seed"] < 2].drop(columns=["table", "setting", "config_id"]).reset_index(drop=True)
    assert copied.equals(table1.drop(columns=["table", "setting", "config_id"]))
    assert experiment.sweep(configs2, path, progress=False).equals(table2) and len(FakeAlgorithm.calls) == 3


class SeedArtifact(RunArtifact):
    """Keeps the seed each run was computed with, as a tensor."""

    folder = ".kept"

    def collect(self, algorithm, result):
        return {"seed": torch.tensor([algorithm.config.seed])}

    def check(self, payload):
        return isinstance(payload.get("seed"), torch.Tensor)


def test_a_sweep_keeps_each_runs_artifact_and_recomputes_a_run_whose_artifact_is_not_trusted(fake_stack, tmp_path):
    path, kept = tmp_path / "r.csv", SeedArtifact()
    configs = experiment.grid({**BASE, "table": "1"}, seed=[0, 1])
    first = experiment.sweep(configs, path, progress=False, artifact=kept)
    assert len(FakeAlgorithm.calls) == 2
    stored = ResultStore(path).read()
    for config in configs:
        cid = config_id(config)
        assert kept.path(path, cid) == tmp_path / ".kept" / f"{cid}.pt"
        assert kept.load(path, cid, stored[stored["config_id"] == cid])["seed"].item() == config.seed
    assert experiment.sweep(configs, path, progress=False, artifact=kept).equals(first)
    assert len(FakeAlgorithm.calls) == 2  # every artifact trusted: nothing computed
    kept.path(path, config_id(configs[1])).unlink()
    experiment.sweep(configs, path, progress=False, artifact=kept)
    assert [seed for seed, _ in FakeAlgorithm.calls] == [0, 1, 1]  # a lost file: that run again
    kept.path(path, config_id(configs[0])).write_bytes(b"partly written")
    experiment.sweep(configs, path, progress=False, artifact=kept)
    assert [seed for seed, _ in FakeAlgorithm.calls] == [0, 1, 1, 0]
    assert experiment.sweep(configs, path, progress=False).equals(first)  # a sweep without it: rows suffice
    relabelled = [c.replace(table="2") for c in configs]  # the same computations: copied with their files
    experiment.sweep(relabelled, path, progress=False, artifact=kept)
    stored = ResultStore(path).read()
    assert len(FakeAlgorithm.calls) == 4
    assert [kept.load(path, config_id(c), stored[stored["config_id"] == config_id(c)])["seed"].item()
            for c in relabelled] == [0, 1]


def test_a_sweep_checks_each_stored_artifact_once(fake_stack, tmp_path):
    class Counting(SeedArtifact):
        loads: list[str] = []

        def load(self, path, cid, rows):
            self.loads.append(cid)
            return super().load(path, cid, rows)

    path, kept = tmp_path / "r.csv", Counting()
    configs = experiment.grid({**BASE, "table": "1"}, seed=[0, 1, 2, 3, 4])
    experiment.sweep(configs, path, progress=False, artifact=kept)
    assert len(FakeAlgorithm.calls) == 5
    assert sorted(kept.loads) == sorted(config_id(c) for c in configs)  # once each, not after every later run


def test_an_artifact_saved_for_other_rows_or_another_configuration_is_not_trusted(tmp_path):
    kept, path = SeedArtifact(), tmp_path / "r.csv"
    rows = [{"metric": "accuracy", "value": 0.5}]
    kept.save(path, "a", rows, {"seed": torch.tensor([3])})
    assert kept.load(path, "a", rows)["seed"].item() == 3
    assert kept.load(path, "a", [{"metric": "accuracy", "value": 0.6}]) is None  # stored again since
    kept.path(path, "b").write_bytes(kept.path(path, "a").read_bytes())
    assert kept.load(path, "b", rows) is None  # another configuration's file
    kept.save(path, "c", rows, {"other": torch.tensor([3])})
    assert kept.load(path, "c", rows) is None  # not sound
    assert not list(tmp_path.glob(".kept/.*.part"))  # no partial file left behind


def test_a_preview_shows_whole_cells_of_what_is_stored_and_computes_nothing(fake_stack, tmp_path, capsys):
    path = tmp_path / "r.csv"
    experiment.sweep(experiment.grid({**BASE, "table": "1"}, seed=[0, 1]), path, progress=False)
    experiment.sweep(experiment.grid({**BASE, "table": "2", "lr": 0.1}, seed=[0]), path, progress=False)
    stored_before, calls_before = ResultStore(path).read(), list(FakeAlgorithm.calls)
    configs = (experiment.grid({**BASE, "table": "2", "setting": "SE"}, seed=[0, 1])  # both seeds stored as table 1
               + experiment.grid({**BASE, "table": "2", "lr": 0.1}, seed=[0, 1]))  # seed 1 missing
    preview = experiment.stored_rows(configs, path, desc="Table 2")
    assert FakeAlgorithm.calls == calls_before and ResultStore(path).read().equals(stored_before)
    assert set(preview["config_id"]) == {config_id(c) for c in configs[:2]}
    assert set(preview["setting"]) == {"SE"} and set(preview["table"]) == {"2"}
    assert ("Table 2: preview, 3 of 4 runs stored; 1 of 2 cells have every seed and are shown; "
            "1 run left, about 1 min of compute at the speed of the timed ones") in capsys.readouterr().out
    assert experiment.stored_rows(configs[2:], tmp_path / "empty.csv").empty
    assert "2 runs left (no run of this sweep is timed yet)" in capsys.readouterr().out
    experiment.stored_rows(configs[:2], path)
    assert "2 of 2 runs stored; 1 of 1 cells have every seed and are shown; no run left" in capsys.readouterr().out


def test_sweep_logs_each_computed_run_with_the_runs_left(fake_stack, tmp_path):
    path = tmp_path / "r.csv"
    experiment.sweep(experiment.grid({**BASE, "table": "1"}, seed=[0]), path, progress=False)
    # seeds 0..2 of table 2: seed 0 is a copy (no line), seeds 1 and 2 are computed
    table2 = {**BASE, "table": "2", "setting": "code"}
    experiment.sweep(experiment.grid(table2, seed=[0, 1, 2]), path, progress=False, desc="Table 2")
    lines = (tmp_path / "r.log").read_text().splitlines()
    closing = [line for line in lines if "[pid " in line]
    lines = [line for line in lines if "[pid " not in line]
    assert len(lines) == 3 and len(FakeAlgorithm.calls) == 3
    assert "  1/1  Cora fake_fast gcn seed=0  " in lines[0] and lines[0].endswith("last run")
    assert "  Table 2  2/3  Cora fake_fast [code] gcn seed=1  " in lines[1] and lines[1].endswith("of runs left")
    assert "  Table 2  3/3  Cora fake_fast [code] gcn seed=2  " in lines[2] and lines[2].endswith("last run")
    assert len(closing) == 2 and f"  sweep  1 run: 1 computed, 0 reused from {path}  [pid {os.getpid()}]" in closing[0]
    assert f"  Table 2  3 runs: 2 computed, 1 reused from {path}  [pid " in closing[1]


def test_a_sweep_says_what_it_computed_and_what_it_reused(fake_stack, tmp_path, monkeypatch):
    monkeypatch.setenv("FGL_OUTPUT_ROOT", str(tmp_path / "outputs"))
    path = tmp_path / "outputs" / "smoke" / "toy" / "results.csv"
    configs = experiment.grid(BASE, seed=[0, 1, 2])
    first = experiment.sweep(configs[:2], path, progress=False, desc="part")
    assert first.attrs["runs"] == {"computed": 2, "reused": 0, "by_others": 0, "total": 2}
    again = experiment.sweep(configs, path, progress=False, desc="all")
    assert again.attrs["runs"] == {"computed": 1, "reused": 2, "by_others": 0, "total": 3}
    relabelled = experiment.sweep([c.replace(table="9") for c in configs], path, progress=False, desc="copies")
    assert relabelled.attrs["runs"] == {"computed": 0, "reused": 3, "by_others": 0, "total": 3}
    assert len(FakeAlgorithm.calls) == 3
    last = (path.parent / "results.log").read_text().splitlines()[-1]
    assert "  copies  3 runs: 0 computed, 3 reused from outputs/smoke/toy/results.csv  [pid " in last


def test_a_copied_run_keeps_only_the_row_families_its_sweep_asks_for(fake_stack, tmp_path, monkeypatch):
    def rows_with_a_client_row(config, result, per_client=False, curve=False):
        rows = rows_from_result(config, result)
        return rows + [{**rows[0], "metric": "accuracy[client=0]"}] if per_client else rows

    monkeypatch.setattr(experiment, "rows_from_result", rows_with_a_client_row)
    path = tmp_path / "r.csv"
    experiment.sweep([{**BASE, "table": "1"}], path, progress=False, per_client=True)
    table2 = experiment.sweep([{**BASE, "table": "2"}], path, progress=False)
    assert len(FakeAlgorithm.calls) == 1 and not table2["metric"].str.contains("client=").any()


def test_summarize_is_the_population_std_over_seeds(fake_stack, tmp_path):
    frame = experiment.sweep(experiment.grid(BASE, seed=[0, 2]), tmp_path / "r.csv", progress=False)
    summary = experiment.summarize(frame, by=["method", "metric"]).set_index("metric")
    assert summary.loc["accuracy", "mean"] == pytest.approx(52.0)
    assert summary.loc["accuracy", "std"] == pytest.approx(1.0)
    assert summary.loc["accuracy", "n_seeds"] == 2


REAL = {"dataset": "Cora", "partition": "louvain", "num_clients": 3, "algorithm": "fedavg", "rounds": 2,
        "local_epochs": 1, "hidden": 16, "device": "cpu", "seed": 0}


def test_real_run_on_cora_is_deterministic(tmp_path):
    first = experiment.run(REAL)
    assert experiment.run(REAL) == first
    values = {r["metric"]: r["value"] for r in first}
    assert 0 < values["accuracy"] <= 100 and values["upload_bytes"] > 0 and values["download_bytes"] > 0
    assert {r["selected_round"] for r in first} <= {1, 2}
    a, b = ResultStore(tmp_path / "a.csv"), ResultStore(tmp_path / "b.csv")
    a.append(first)
    b.append(experiment.run(REAL))
    assert a.path.read_bytes() == b.path.read_bytes()


SUBNORMAL = 1e-40  # below float32's smallest normal number, 1.2e-38


@pytest.mark.parametrize("setting, kept", [(None, False), ("1", False), ("0", True), ("off", True)])
def test_runs_flush_subnormals_unless_told_not_to(fake_stack, monkeypatch, setting, kept):
    if setting is None:
        monkeypatch.delenv("FGL_FLUSH_DENORMAL", raising=False)
    else:
        monkeypatch.setenv("FGL_FLUSH_DENORMAL", setting)
    runtime.set_flush_denormal(not kept)  # the opposite, so that the run has to set it
    try:
        experiment.run_full(BASE)
        flushed = (torch.tensor([SUBNORMAL]) * 1.0).item() == 0.0
        assert flushed is not kept
    finally:
        runtime.set_flush_denormal(True)  # the default the other tests run with


def test_a_sweep_skips_what_another_sweep_on_the_same_file_stored_meanwhile(fake_stack, tmp_path, monkeypatch):
    path = tmp_path / "r.csv"
    configs = experiment.grid(BASE, seed=[0, 1, 2])
    other_rows, _ = experiment.run_full(configs[2])  # what a second process will have stored by then
    FakeAlgorithm.calls = []
    original_run = FakeAlgorithm.run

    def run_and_let_the_other_process_store(self, channel=None, checkpoint=None):
        result = original_run(self, channel, checkpoint)
        if len(FakeAlgorithm.calls) == 1:
            ResultStore(path).append(other_rows, run_id=experiment.run_id(configs[2]))
        return result

    monkeypatch.setattr(FakeAlgorithm, "run", run_and_let_the_other_process_store)
    frame = experiment.sweep(configs, path, progress=False)
    assert FakeAlgorithm.calls == [(0, configs[0].lr), (1, configs[1].lr)]
    assert frame["config_id"].nunique() == 3


def test_two_workers_share_one_sweep_and_return_the_same_rows(fake_stack, tmp_path, monkeypatch):
    """Two sweeps over one file at once (threads standing in for processes): every run is computed once."""
    import threading

    monkeypatch.setattr(experiment, "CLAIM_POLL_SECONDS", 0.02)
    fast_run = FakeAlgorithm.run
    computed_by: dict[float, list[str]] = {}

    def slow_run(self, channel=None, checkpoint=None):
        computed_by.setdefault(self.config.lr, []).append(threading.current_thread().name)
        time.sleep(0.05)
        return fast_run(self, channel, checkpoint)

    monkeypatch.setattr(FakeAlgorithm, "run", slow_run)
    configs = experiment.grid(BASE, lr=[0.01 * k for k in range(1, 9)])
    path, frames = tmp_path / "r.csv", {}

    def worker(name):
        frames[name] = experiment.sweep(configs, path, progress=False)

    threads = [threading.Thread(target=worker, args=(name,), name=name) for name in ("A", "B")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(computed_by) == sorted(c.lr for c in configs)
    assert all(len(names) == 1 for names in computed_by.values())  # no run computed twice
    assert {names[0] for names in computed_by.values()} == {"A", "B"}  # both did a share
    assert frames["A"].equals(frames["B"]) and frames["A"]["config_id"].nunique() == len(configs)
    assert _claims_held(tmp_path) == []


def _claims_held(folder) -> list[str]:
    """The runs whose claims beside a results file in ``folder`` someone still holds."""
    from fglcore.claims import RunClaims

    claims = RunClaims(folder / ".claims")
    return [p.stem for p in sorted((folder / ".claims").glob("*.lock")) if claims.held_by_other(p.stem)]


def test_a_sweep_waits_for_a_run_another_worker_holds(fake_stack, tmp_path, monkeypatch):
    from fglcore.claims import RunClaims
    from fglcore.results import run_id

    monkeypatch.setattr(experiment, "CLAIM_POLL_SECONDS", 0.02)
    configs = experiment.grid(BASE, seed=[0, 1])
    path = tmp_path / "r.csv"
    other = RunClaims(tmp_path / ".claims")
    assert other.acquire(run_id(configs[0]))
    waits = []

    def sleep(seconds):  # the other worker stores its run while this one waits
        waits.append(seconds)
        ResultStore(path).append(experiment.run(configs[0]), run_id=run_id(configs[0]))
        other.release(run_id(configs[0]))

    monkeypatch.setattr(experiment.time, "sleep", sleep)
    frame = experiment.sweep(configs, path, progress=False)
    assert [seed for seed, _ in FakeAlgorithm.calls] == [1, 0]  # seed 1 here, seed 0 by "the other worker"
    assert waits == [0.02] and frame["config_id"].nunique() == 2


def test_a_stop_request_ends_the_sweep_after_its_current_run_and_it_resumes(fake_stack, tmp_path, monkeypatch):
    configs = experiment.grid(BASE, lr=[0.01, 0.1], seed=range(3))
    straight = tmp_path / "straight" / "r.csv"
    experiment.sweep(configs, straight, progress=False)

    path = tmp_path / "stopped" / "r.csv"
    real_prepare = experiment.prepare

    def prepare_then_stop(config):  # `fgl stop` while the second run of the first sweep computes
        algorithm = real_prepare(config)
        run = algorithm.run

        def run_then_stop(**kwargs):
            result = run(**kwargs)
            if len(FakeAlgorithm.calls) == 2 and not stops:
                stops.append(experiment.request_stop(path.parent))
            return result

        algorithm.run = run_then_stop
        return algorithm

    stops = []

    monkeypatch.setattr(experiment, "prepare", prepare_then_stop)
    FakeAlgorithm.calls = []
    with pytest.raises(experiment.SweepStopped, match="4 of 6 runs are not stored yet"):
        experiment.sweep(configs, path, progress=False)
    assert ResultStore(path).done_ids() == {config_id(c) for c in configs[:2]}  # the run in progress was stored
    assert _claims_held(path.parent) == []  # no claim left behind for the next start

    assert experiment.withdraw_stop(path.parent) and not experiment.withdraw_stop(path.parent)
    FakeAlgorithm.calls = []
    experiment.sweep(configs, path, progress=False)
    assert FakeAlgorithm.calls == [(c.seed, c.lr) for c in configs[2:]]
    assert path.read_bytes() == straight.read_bytes()


def test_a_sweep_records_how_each_run_was_made_and_a_copy_its_sources_record(fake_stack, tmp_path, monkeypatch):
    from fglcore.provenance import PROVENANCE_COLUMNS

    path = tmp_path / "r.csv"
    monkeypatch.setenv("FGL_SPARSE_FEATURES", "0")
    experiment.sweep([{**BASE, "table": "1"}], path, progress=False)
    monkeypatch.setenv("FGL_SPARSE_FEATURES", "1")
    experiment.sweep([{**BASE, "table": "2"}], path, progress=False)  # a copy of table 1's run
    log = ResultStore(path).run_log()
    assert len(log) == 2 and log["seconds"].notna().tolist() == [True, False]
    computed, copied = (log.iloc[i][PROVENANCE_COLUMNS].to_dict() for i in (0, 1))
    assert computed == copied  # the copy's numbers were made as the source's were
    assert computed["sparse_features"] == "0" and computed["flush_denormal"] == "1"
    assert computed["torch"] == torch.__version__ and computed["device"].startswith("cpu")
    assert computed["threads"] == str(torch.get_num_threads()) and computed["git_commit"]


def test_a_run_uses_the_threads_fgl_threads_names(fake_stack, monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.setenv("FGL_THREADS", "1")
    torch.set_num_threads(2)
    try:
        experiment.run_full(BASE)
        assert torch.get_num_threads() == 1  # what the run index records is what ran
    finally:
        torch.set_num_threads(before)


def _sweep_until_killed(configs, path, ready):
    original = FakeAlgorithm.run

    def run(self, channel=None, checkpoint=None):
        if len(FakeAlgorithm.calls) == 2:  # the third run: stop here until killed
            ready.set()
            import signal

            signal.pause()
        return original(self, channel, checkpoint)

    FakeAlgorithm.run, FakeAlgorithm.calls = run, []
    experiment.sweep(configs, path, progress=False)


def test_a_sweep_killed_with_sigkill_loses_nothing_stored_and_frees_its_run(fake_stack, tmp_path):
    """kill -9 in the middle of a run: the stored runs stay, the killed run's claim is free at once, and a new
    sweep computes only what is missing, into the file an uninterrupted sweep writes."""
    import multiprocessing
    import signal

    configs = experiment.grid(BASE, seed=range(4))
    straight = tmp_path / "straight" / "r.csv"
    experiment.sweep(configs, straight, progress=False)

    path = tmp_path / "killed" / "r.csv"
    fork = multiprocessing.get_context("fork")
    ready = fork.Event()
    worker = fork.Process(target=_sweep_until_killed, args=(configs, path, ready))
    worker.start()
    try:
        assert ready.wait(30)
        from fglcore.claims import RunClaims

        assert RunClaims(path.parent / ".claims").held_by_other(experiment.run_id(configs[2]))
        os.kill(worker.pid, signal.SIGKILL)
        worker.join(30)
    finally:
        if worker.is_alive():
            worker.kill()
    assert ResultStore(path).done_ids() == {config_id(c) for c in configs[:2]}
    FakeAlgorithm.calls = []
    frame = experiment.sweep(configs, path, progress=False)
    assert FakeAlgorithm.calls == [(c.seed, c.lr) for c in configs[2:]]  # no waiting on the dead worker's claim
    assert frame.attrs["runs"] == {"computed": 2, "reused": 2, "by_others": 0, "total": 4}
    assert path.read_bytes() == straight.read_bytes()


def _sweep_in_a_process(configs, path, counts):
    original = FakeAlgorithm.run

    def slow_run(self, channel=None, checkpoint=None):
        time.sleep(0.05)
        return original(self, channel, checkpoint)

    FakeAlgorithm.run, FakeAlgorithm.calls = slow_run, []
    frame = experiment.sweep(configs, path, progress=False)
    counts.put((frame.attrs["runs"], sorted(seed for seed, _ in FakeAlgorithm.calls), len(frame)))


def test_processes_sharing_a_sweep_compute_each_run_once(fake_stack, tmp_path, monkeypatch):
    import multiprocessing

    monkeypatch.setattr(experiment, "CLAIM_POLL_SECONDS", 0.05)
    configs = experiment.grid(BASE, seed=range(8))
    path = tmp_path / "r.csv"
    fork = multiprocessing.get_context("fork")
    counts = fork.Queue()
    workers = [fork.Process(target=_sweep_in_a_process, args=(configs, path, counts)) for _ in range(2)]
    for worker in workers:
        worker.start()
    (first, seeds_a, rows_a), (second, seeds_b, rows_b) = counts.get(timeout=60), counts.get(timeout=60)
    for worker in workers:
        worker.join(30)
    assert sorted(seeds_a + seeds_b) == list(range(8))  # every run computed, none twice
    assert first["computed"] + second["computed"] == 8 and rows_a == rows_b
    assert first["computed"] + first["by_others"] + first["reused"] == 8
    log = ResultStore(path).run_log()
    assert len(log) == 8 and log["seconds"].notna().all() and _claims_held(tmp_path) == []
