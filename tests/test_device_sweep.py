"""tools/device_sweep.py: plan the unstored runs of a profile, run them on worker processes, merge them home."""
from __future__ import annotations

import dataclasses
import importlib.util
import json

from fglcore.fl import Channel, RunResult
from fglcore.paths import output_dir, repo_root
from fglcore.results import ResultStore, config_id, rows_from_result, run_id
from fglcore.runlog import format_group, group_key, plan_configs

spec = importlib.util.spec_from_file_location("device_sweep", repo_root() / "tools" / "device_sweep.py")
device_sweep = importlib.util.module_from_spec(spec)
spec.loader.exec_module(device_sweep)

TINY = {"dataset": "Cora", "partition": "louvain", "num_clients": 3, "algorithm": "fedavg", "rounds": 1,
        "local_epochs": 1, "hidden": 8, "device": "cpu"}


def stored_run(store: ResultStore, config) -> None:
    """Rows for ``config`` in ``store``, as a run would leave them (the numbers do not matter here)."""
    result = RunResult(history=[], selected_round=1, metrics={"test_accuracy": 0.5, "val_accuracy": 0.5},
                       per_client=[], ledger=Channel().ledger)
    store.append(rows_from_result(config, result), run_id=run_id(config), seconds=1.0)


def test_plan_takes_the_runs_the_store_lacks_one_per_computation(tmp_path, monkeypatch):
    monkeypatch.setenv("FGL_OUTPUT_ROOT", str(tmp_path / "outputs"))
    notebook = repo_root() / "notebooks" / "fedstruct" / "2_method.ipynb"
    planned = list({run_id(c): c for c in plan_configs(notebook, "smoke") if c.dataset == "Cora"}.values())
    assert len(planned) >= 3
    out = tmp_path / "plan.json"
    device_sweep.plan("fedstruct", "smoke", ["2_method"], ["Cora"], None, out)
    entries = json.loads(out.read_text())
    assert [run_id(e["config"]) for e in entries] == [run_id(c) for c in planned]
    assert {e["notebook"] for e in entries} == {"2_method"}

    store = ResultStore(output_dir("smoke", "fedstruct") / "results.csv")
    stored_run(store, planned[0])  # stored as planned
    stored_run(store, dataclasses.replace(planned[1], table="elsewhere"))  # the same computation, other labels
    device_sweep.plan("fedstruct", "smoke", ["2_method"], ["Cora"], None, out)
    assert [run_id(e["config"]) for e in json.loads(out.read_text())] == [run_id(c) for c in planned[2:]]

    # priced by a projection table: dearest first, and those above --max-cost left out
    groups = sorted({format_group(group_key(c)) for c in planned[2:]})
    costs = tmp_path / "costs.csv"
    costs.write_text("group,seconds_per_run\n" + "".join(f"{g},{10.0 * (i + 1)}\n" for i, g in enumerate(groups))
                     + f"{groups[0]},1000\n")  # a group's last row wins
    device_sweep.plan("fedstruct", "smoke", ["2_method"], ["Cora"], costs, out)
    ordered = [e["group"] for e in json.loads(out.read_text())]
    price = {g: 10.0 * (i + 1) for i, g in enumerate(groups)} | {groups[0]: 1000.0}
    assert ordered == sorted(ordered, key=lambda g: -price[g]) and ordered[0] == groups[0]
    device_sweep.plan("fedstruct", "smoke", ["2_method"], ["Cora"], costs, out, max_cost=999)
    assert groups[0] not in {e["group"] for e in json.loads(out.read_text())}


def test_workers_share_the_plan_survive_a_failing_run_and_their_runs_merge_home(tmp_path):
    good = [{**TINY, "seed": seed} for seed in (0, 1, 2)]
    broken = {**TINY, "seed": 3, "dataset": str(tmp_path / "no-such-graph.pt")}  # fails when loaded
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps([{"notebook": "test", "config": c} for c in [broken, *good]]))
    away = tmp_path / "away" / "results.csv"

    assert device_sweep.run(plan, away, workers=2, seconds=600) == 0
    stored = ResultStore(away)
    assert stored.done_ids() == {config_id(c) for c in good}
    logs = "".join((away.parent / f"worker{i}.log").read_text() for i in range(2))
    assert "FAILED Cora" not in logs and "FAILED " in logs and "no-such-graph" in logs
    assert set(stored.run_log()["device"]) == {stored.provenance(config_id(good[0]))["device"]} != {""}

    home = ResultStore(tmp_path / "home" / "results.csv")
    assert sorted(home.merge(stored)) == sorted(config_id(c) for c in good)
    assert home.read().equals(stored.read())


def test_the_time_limit_stops_the_workers_at_a_run_boundary(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps([{"notebook": "test", "config": {**TINY, "seed": s}} for s in range(4)]))
    away = tmp_path / "away" / "results.csv"
    assert device_sweep.run(plan, away, workers=2, seconds=0.01) == 0  # asked to stop before any run
    assert not away.exists()
    assert "stopped before Cora" in (away.parent / "worker0.log").read_text()
