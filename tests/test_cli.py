"""The fgl command: parameter validation fails fast with exit status 2 and a clear message."""
import os
from pathlib import Path

import pandas as pd
import pytest

from fglcore import notebooks
from fglcore.cli import main
from fglcore.config import ConfigError
from fglcore.paths import notebooks_root

TOUR = notebooks_root() / "tour" / "fgl_basics.ipynb"


def run_cli(capsys, *argv):
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def test_unknown_parameter_exits_2_with_suggestion(capsys):
    status, text = run_cli(capsys, "run", str(TOUR), "--profile", "smoke", "-p", "num_clientz", "3")
    assert status == 2
    assert "num_clientz" in text and "did you mean 'num_clients'" in text


def test_wrong_type_exits_2(capsys):
    status, text = run_cli(capsys, "run", str(TOUR), "--profile", "smoke", "-p", "rounds", "many")
    assert status == 2
    assert "rounds" in text and "int" in text


def test_invalid_choice_names_accepted_values(capsys):
    status, text = run_cli(capsys, "run", str(TOUR), "--profile", "smoke", "-p", "dataset", "Corra")
    assert status == 2
    assert "Corra" in text and "Cora" in text and "accepted" in text


def test_invalid_list_member_and_range(capsys):
    status, text = run_cli(capsys, "run", str(TOUR), "-p", "methods", "[fedavg, fedavgg]")
    assert status == 2 and "fedavgg" in text
    status, text = run_cli(capsys, "run", str(TOUR), "-p", "num_clients", "0")
    assert status == 2 and "num_clients" in text and ">= 1" in text


def test_unknown_profile_and_paper(capsys):
    status, text = run_cli(capsys, "run", str(TOUR), "--profile", "huge")
    assert status == 2 and "smoke, quick, full" in text
    status, text = run_cli(capsys, "reproduce", "nopaper", "--profile", "smoke")
    assert status == 2 and "tour" in text


def test_profiles_of_every_notebook_are_valid():
    for paper in notebooks.papers():
        for nb in notebooks.notebooks_of(paper):
            for profile in notebooks.PROFILES:
                params, _ = notebooks.prepare(nb, profile)
                assert params["profile"] == profile


def test_parameters_cell_is_literal_with_comments():
    for paper in notebooks.papers():
        for nb in notebooks.notebooks_of(paper):
            declared = notebooks.read_parameters(nb)
            assert {"profile", "output_dir"} <= set(declared)
            assert all(p.comment for p in declared.values()), f"{nb}: every parameter needs a comment"


def test_parse_override_types():
    assert notebooks.parse_override("3") == 3
    assert notebooks.parse_override("0.5") == 0.5
    assert notebooks.parse_override("[Cora, CiteSeer]") == ["Cora", "CiteSeer"]
    with pytest.raises(ConfigError):
        notebooks.validate_parameters(TOUR, {"seeds": 3})


def test_listing_commands(capsys):
    status, text = run_cli(capsys, "algorithms")
    assert status == 0 and "fedavg" in text and "central" in text
    status, text = run_cli(capsys, "datasets")
    assert status == 0
    assert any(line.startswith("Cora") for line in text.splitlines())
    assert "missing" in text  # PubMed is not in the offline mirror


def test_reproduce_runs_notebooks_side_by_side_and_reports_a_failure(capsys, monkeypatch, tmp_path):
    import threading

    from fglcore import compare, paths

    started, both_running = [], threading.Barrier(2, timeout=10)

    def execute(nb, profile, overrides=None, out_dir=None, *, progress=True):
        started.append(nb.name)
        if nb.name in ("1_motivation.ipynb", "2_method.ipynb"):
            both_running.wait()  # returns only if the two first notebooks run at the same time
        if nb.name == "4_ablations.ipynb":
            raise RuntimeError("a cell failed")
        return nb

    monkeypatch.setattr(notebooks, "execute", execute)
    monkeypatch.setattr(compare, "build_summary", lambda root: [])
    monkeypatch.setattr(paths, "outputs_root", lambda: tmp_path)
    with pytest.raises(RuntimeError, match="a cell failed"):
        main(["reproduce", "fedspray", "--profile", "smoke", "--jobs", "2"])
    assert sorted(started) == sorted(nb.name for nb in notebooks.notebooks_of("fedspray"))
    assert "2_method.ipynb (smoke) done" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        main(["reproduce", "tour", "--jobs", "0"])
    assert exit_info.value.code == 2 and "expected an integer >= 1" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["reproduce", "fedspray", "--profile", "smoke"],
                                     ["run", "notebooks/fedspray/3_results.ipynb", "--profile", "smoke"]])
def test_run_and_reproduce_print_the_progress_lines_of_the_sweeps(capsys, monkeypatch, tmp_path, command):
    from fglcore import compare, paths
    from fglcore.runlog import SweepLog

    def execute(nb, profile, overrides=None, out_dir=None, *, progress=True):  # a notebook whose sweep ran a run
        out = paths.output_dir(profile, "fedspray")
        out.mkdir(parents=True, exist_ok=True)
        SweepLog(out / "results.csv", "Table 2").computed(stored=1, total=2, label=nb.name, seconds=5,
                                                            timed=[("a", "b", 5.0)], pending=[("a", "b")])
        return nb

    monkeypatch.setattr(notebooks, "execute", execute)
    monkeypatch.setattr(compare, "build_summary", lambda root: [])
    monkeypatch.setattr(paths, "outputs_root", lambda: tmp_path)
    monkeypatch.chdir(paths.repo_root())
    assert main(command) == 0
    printed = [line for line in capsys.readouterr().out.splitlines() if "Table 2  1/2" in line]
    assert printed and all(line.startswith("[fedspray] ") for line in printed)


def test_run_with_workers_gives_helpers_a_scratch_folder_linked_to_the_store(capsys, monkeypatch, tmp_path):
    import threading

    from fglcore import paths
    from fglcore.results import ResultStore

    calls, all_running = [], threading.Barrier(3, timeout=10)

    def execute(nb, profile, overrides=None, out_dir=None, *, progress=True, helper=False):
        calls.append((out_dir, progress))
        assert helper == (out_dir is not None)  # the helpers, and only they, may end at helpers_stop_here
        if out_dir is None:
            os.chdir(nb.parent)  # as papermill does, for the whole process, while the notebook runs
        all_running.wait()  # the three kernels run at the same time
        assert nb.is_file()  # a path relative to the old working directory would be lost now
        if out_dir is None:
            return paths.output_dir(profile, "fedspray") / nb.name
        store = ResultStore(out_dir / "results.csv")
        assert store.path == paths.output_dir(profile, "fedspray").resolve() / "results.csv"
        assert store.index_path.parent == store.path.parent  # the index, lock and claims sit beside the real file
        return out_dir / nb.name

    monkeypatch.setattr(notebooks, "execute", execute)
    monkeypatch.setattr(paths, "outputs_root", lambda: tmp_path)
    monkeypatch.chdir(paths.repo_root())
    assert main(["run", "notebooks/fedspray/3_results.ipynb", "--profile", "smoke", "--workers", "3"]) == 0
    assert sorted(calls, key=lambda c: c[0] is not None)[0] == (None, True)  # the main kernel, with its progress bar
    helpers = [folder for folder, progress in calls if folder is not None and not progress]
    assert len(set(helpers)) == 2 and not any(folder.exists() for folder in helpers)  # scratch removed
    assert f"wrote {tmp_path / 'smoke' / 'fedspray' / '3_results.ipynb'}" in capsys.readouterr().out



def test_run_refreshes_the_profile_summary_unless_the_outputs_go_elsewhere(capsys, monkeypatch, tmp_path):
    from fglcore import paths

    def execute(nb, profile, overrides=None, out_dir=None, *, progress=True):  # a notebook that checks one claim
        out = out_dir or paths.output_dir(profile, "fedspray")
        out.mkdir(parents=True, exist_ok=True)
        pd.DataFrame([{"id": "wins", "text": "FedSpray wins", "group": "overall", "holds": False,
                       "detail": "fedspray 1.00 vs best loser fedavg 2.00"}]).to_csv(out / "claims.csv", index=False)
        return out / nb.name

    monkeypatch.setattr(notebooks, "execute", execute)
    monkeypatch.setattr(paths, "outputs_root", lambda: tmp_path / "outputs")
    monkeypatch.chdir(paths.repo_root())
    elsewhere = tmp_path / "elsewhere"
    assert main(["run", "notebooks/fedspray/3_results.ipynb", "--profile", "smoke", "--out", str(elsewhere)]) == 0
    assert not (tmp_path / "outputs" / "smoke" / "summary.md").exists() and not (tmp_path / "summary.md").exists()
    assert main(["run", "notebooks/fedspray/3_results.ipynb", "--profile", "smoke"]) == 0
    summary = (tmp_path / "outputs" / "smoke" / "summary.md").read_text()
    assert "| fedspray |" in summary and "summary of 1 comparisons" in capsys.readouterr().out

def test_a_failing_task_is_reported_while_the_others_still_run(monkeypatch):
    import threading

    from fglcore import cli

    warned = threading.Event()
    monkeypatch.setattr(cli, "_warn", lambda line: warned.set() if "FileNotFoundError: lost" in line else None)

    def helper():
        raise FileNotFoundError("lost")

    with pytest.raises(FileNotFoundError, match="lost"):
        cli._in_parallel([lambda: warned.wait(timeout=10), helper], 2)
    assert warned.is_set()


def test_reproduce_with_workers_runs_notebooks_in_turn_each_in_several_kernels(capsys, monkeypatch, tmp_path):
    import collections
    import threading

    from fglcore import compare, paths

    kernels = collections.Counter()
    running, lock = set(), threading.Lock()
    barriers = collections.defaultdict(lambda: threading.Barrier(2, timeout=10))

    def execute(nb, profile, overrides=None, out_dir=None, *, progress=True, helper=False):
        with lock:
            running.add(nb.name)
            assert running == {nb.name}, f"two notebooks at once: {running}"
            barrier = barriers[nb.name]
        kernels[nb.name] += 1
        barrier.wait()  # both kernels of this notebook run at the same time
        barrier.wait()  # ... and neither leaves before the other has checked
        with lock:
            running.discard(nb.name)
        return nb

    monkeypatch.setattr(notebooks, "execute", execute)
    monkeypatch.setattr(compare, "build_summary", lambda root: [])
    monkeypatch.setattr(paths, "outputs_root", lambda: tmp_path)
    assert main(["reproduce", "fedstar", "--profile", "smoke", "--workers", "2"]) == 0
    assert kernels == {nb.name: 2 for nb in notebooks.notebooks_of("fedstar")}
    status, text = run_cli(capsys, "reproduce", "fedstar", "--jobs", "2", "--workers", "2")
    assert status == 2 and "choose one" in text


def test_stop_asks_the_sweeps_to_stop_and_the_next_start_withdraws_it(capsys, monkeypatch, tmp_path):
    from papermill.exceptions import PapermillExecutionError

    from fglcore import paths
    from fglcore.experiment import STOP_FILE

    monkeypatch.setattr(paths, "outputs_root", lambda: tmp_path)
    monkeypatch.chdir(paths.repo_root())
    status, text = run_cli(capsys, "stop", "fedstar", "--profile", "full")
    stop = tmp_path / "full" / "fedstar" / STOP_FILE
    assert status == 0 and stop.exists() and "[fedstar] asked its sweeps to stop" in text

    def stopped(nb, profile, overrides=None, out_dir=None, *, progress=True):  # the kernel's sweep saw the file
        assert not stop.exists()  # ... but `fgl run` withdrew it before the kernel started
        raise PapermillExecutionError(3, 1, "sweep(...)", "SweepStopped", "Table 1: stopped before ...", [])

    monkeypatch.setattr(notebooks, "execute", stopped)
    status, text = run_cli(capsys, "run", "notebooks/fedstar/3_results.ipynb", "--profile", "full")
    assert status == 3 and "withdrew the stop request" in text and "fgl: Table 1: stopped before" in text
    assert run_cli(capsys, "stop", "nopaper")[0] == 2
    status, text = run_cli(capsys, "stop", "--profile", "huge")
    assert status == 2 and "smoke, quick, full" in text


def test_a_diverged_run_fails_with_its_own_words_not_a_traceback(capsys, monkeypatch, tmp_path):
    from papermill.exceptions import PapermillExecutionError

    from fglcore import paths

    monkeypatch.setattr(paths, "outputs_root", lambda: tmp_path)
    monkeypatch.chdir(paths.repo_root())
    words = "tour runs, Cora local gcn seed=0: local, round 1 of 5: the model of client(s) 0 of 5 outputs non-finite"

    def diverged(nb, profile, overrides=None, out_dir=None, *, progress=True):
        raise PapermillExecutionError(11, 1, "sweep(...)", "TrainingDiverged", words, ["Traceback (long)"])

    monkeypatch.setattr(notebooks, "execute", diverged)
    status, text = run_cli(capsys, "run", "notebooks/tour/fgl_basics.ipynb", "--profile", "smoke")
    assert status == 1 and f"fgl: error: {words}" in text and "stored nothing" in text
    assert "Traceback" not in text


def test_reproduce_says_what_it_computed_and_reused_and_fresh_recomputes_everything(capsys, monkeypatch, tmp_path):
    """The closing lines count computed and reused runs; --fresh computes every run anew in a new folder."""
    from fglcore import compare, experiment, paths
    from fglcore.fl import Channel, RunResult
    from fglcore.results import ResultStore

    computed, summaries = [], []

    class FakeRun:  # a run without data
        def __init__(self, config):
            self.config = config

        def memory_estimate(self):
            return None

        def run(self, checkpoint=None):
            computed.append(self.config.seed)
            return RunResult([], 1, {"test_accuracy": 0.5}, [], Channel().ledger)

    def execute(nb, profile, overrides=None, out_dir=None, *, progress=True):  # a notebook sweeping three runs
        out = Path(out_dir) if out_dir else paths.output_dir(profile, "tour")
        if nb.stem != "fgl_basics":  # the tour's other notebooks (flower) store no runs
            return out / nb.name
        configs = experiment.grid({"dataset": "Cora", "num_clients": 3, "algorithm": "fedavg"}, seed=[0, 1, 2])
        experiment.sweep(configs, out / "results.csv", progress=False, desc="tour runs")
        return out / nb.name

    monkeypatch.setattr(experiment, "prepare", FakeRun)
    monkeypatch.setattr(notebooks, "execute", execute)
    monkeypatch.setattr(compare, "build_summary", lambda root: summaries.append(root) or [])
    monkeypatch.setattr(paths, "outputs_root", lambda: tmp_path)

    assert main(["reproduce", "tour", "--profile", "smoke"]) == 0
    out = capsys.readouterr().out
    assert "runs: 3 computed, 0 reused from outputs/smoke/tour/results.csv (1 sweep)" in out and "--fresh" not in out
    assert "[tour] " in out and "tour runs  3 runs: 3 computed, 0 reused from outputs/smoke/tour/results.csv" in out

    assert main(["reproduce", "tour", "--profile", "smoke"]) == 0
    out = capsys.readouterr().out
    assert "runs: 0 computed, 3 reused from outputs/smoke/tour/results.csv (1 sweep)" in out
    assert "3 stored run(s) were reused, not recomputed; --fresh (make reproduce FRESH=1)" in out
    assert computed == [0, 1, 2] and summaries == [tmp_path / "smoke"] * 2

    assert main(["reproduce", "tour", "--profile", "smoke", "--fresh"]) == 0
    out = capsys.readouterr().out
    (fresh,) = tmp_path.glob("smoke-fresh-*")
    assert f"--fresh: every run is computed anew into {fresh}" in out
    assert f"runs: 3 computed, 0 reused from outputs/{fresh.name}/tour/results.csv (1 sweep)" in out
    assert computed == [0, 1, 2, 0, 1, 2] and summaries[-1] == fresh
    assert len(ResultStore(fresh / "tour" / "results.csv").done_ids()) == 3
    assert len(ResultStore(tmp_path / "smoke" / "tour" / "results.csv").run_log()) == 3  # the old store untouched

    assert main(["run", "notebooks/tour/fgl_basics.ipynb", "--profile", "smoke", "--fresh", "--out",
                 str(fresh / "tour")]) == 2
    assert "--fresh: " in capsys.readouterr().err and computed == [0, 1, 2, 0, 1, 2]
    assert main(["run", str(paths.repo_root() / "notebooks/tour/fgl_basics.ipynb"), "--profile", "smoke", "--fresh",
                 "--out", str(tmp_path / "mine")]) == 0
    assert "runs: 3 computed, 0 reused from outputs/mine/results.csv (1 sweep)" in capsys.readouterr().out


def test_a_bad_fgl_variable_exits_2_before_any_notebook_runs(capsys, monkeypatch):
    monkeypatch.setattr(notebooks, "execute", lambda *a, **k: pytest.fail("a notebook ran"))
    monkeypatch.setenv("FGL_FLUSH_DENORMAL", "maybe")
    status, text = run_cli(capsys, "reproduce", "tour", "--profile", "smoke")
    assert status == 2 and "FGL_FLUSH_DENORMAL='maybe' is not accepted; accepted: one of 1, true, yes, on" in text


FEDSPRAY3 = notebooks_root() / "fedspray" / "3_results.ipynb"
OPFGL3 = notebooks_root() / "opfgl" / "3_results.ipynb"


@pytest.mark.parametrize("notebook, key, value", [
    (TOUR, "lr", ".inf"), (TOUR, "lr", ".nan"), (TOUR, "fedprox_mu", ".nan"), (TOUR, "fedprox_mu", "-1"),
    (TOUR, "seeds", "[-1]"), (TOUR, "seeds", "[]"), (TOUR, "seeds", "null"), (TOUR, "seeds", "[0, 1"),
    (TOUR, "seeds", "a: b: c"), (TOUR, "num_clients", "5000"), (TOUR, "methods", "[]"),
    (TOUR, "methods", "[fedstar]"), (TOUR, "dataset", "MUTAG"), (TOUR, "partitions", "[by_dataset]"),
    (FEDSPRAY3, "stand_in_clients", "0"), (FEDSPRAY3, "stand_in_clients", "100000"),
    (FEDSPRAY3, "variants", "[bogus]"), (FEDSPRAY3, "datasets", "[]"),
    (OPFGL3, "tables", "[x99]"), (OPFGL3, "datasets", "[Coraa]"), (OPFGL3, "methods", "[bogus]"),
    (OPFGL3, "epochs_grid", "[0]"), (OPFGL3, "max_epochs", "0"), (OPFGL3, "seeds", "[-1]"),
    (notebooks_root() / "fedstar" / "3_results.ipynb", "settings", "[MUTAG]"),
])
def test_every_malformed_value_exits_2_naming_the_key(capsys, tmp_path, notebook, key, value):
    status, text = run_cli(capsys, "run", str(notebook), "--profile", "smoke", "-p", key, value,
                           "--out", str(tmp_path / "out"))
    assert status == 2, text
    assert f"parameter '{key}'" in text and "Traceback" not in text
    assert not (tmp_path / "out").exists()  # nothing ran, nothing was written


def test_paths_out_and_injected_keys_exit_2(capsys, tmp_path):
    (tmp_path / "file").write_text("")
    for argv, expected in (
        (["run", str(notebooks_root().parent / "README.md")], "is not a notebook"),
        (["run", str(notebooks_root() / "tour")], "is a folder"),
        (["run", str(TOUR), "--out", str(tmp_path / "file")], "--out: "),
        (["run", str(TOUR), "-p", "profile", "full"], "set by --profile"),
        (["run", str(TOUR), "-p", "output_dir", "/tmp/x"], "set by --out"),
    ):
        status, text = run_cli(capsys, *argv)
        assert status == 2 and expected in text, text


def test_stop_any_output_folder(capsys, tmp_path):
    from fglcore.experiment import STOP_FILE

    status, text = run_cli(capsys, "stop", "--out", str(tmp_path))
    assert status == 0 and (tmp_path / STOP_FILE).exists()
    status, text = run_cli(capsys, "stop", "--out", str(tmp_path / "missing"))
    assert status == 2 and "--out" in text


def test_a_dataset_that_cannot_be_had_exits_2_before_the_kernel_starts(capsys, monkeypatch, tmp_path):
    import socket

    def refuse(*args, **kwargs):
        raise OSError("network blocked by test")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setenv("FGL_DATA", str(tmp_path / "data"))
    monkeypatch.delenv("FGL_DATA_MIRROR", raising=False)
    monkeypatch.setattr(notebooks, "execute", lambda *a, **k: pytest.fail("a kernel was started"))
    status, text = run_cli(capsys, "run", str(TOUR), "--profile", "smoke", "--out", str(tmp_path / "out"))
    assert status == 2 and "dataset 'Cora' is not available" in text and "ind.cora.x" in text, text
    assert "Traceback" not in text and not (tmp_path / "out").exists()
    defaults = {k: p.default for k, p in notebooks.read_parameters(TOUR).items()}
    plan = notebooks.check_plan(TOUR, {**defaults, "dataset": "CiteSeer"})
    assert notebooks.planned_datasets({"nested": [plan]}) == ["CiteSeer"]
    fedstar = notebooks_root() / "fedstar" / "3_results.ipynb"
    defaults = {k: p.default for k, p in notebooks.read_parameters(fedstar).items()}
    used = notebooks.planned_datasets(notebooks.check_plan(fedstar, {**defaults, "settings": ["biosncv"], "members": []}))
    assert "IMDB-BINARY" in used and "COLLAB" not in used  # the members a setting loads, not those it leaves out
