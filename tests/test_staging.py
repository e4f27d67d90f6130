"""A run replaces its stored outputs only when it succeeds, its kernel dies with fgl, and a helper kernel of
``fgl run --workers`` ends where the notebook says its share ends.

Each test executes a two-cell notebook in a scratch ``notebooks/<paper>/``
folder (a few seconds per kernel); nothing trains.
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from fglcore import notebooks

BODY = """
from pathlib import Path
from fglcore import paths
out = paths.resolve_output_dir(output_dir, profile, "scratch")
(out / "table.csv").write_text(f"written by the run with fail={fail}\\n")
with open(out / "results.csv", "a") as f:  # the run store: written through to the real one at once
    f.write(f"row fail={fail}\\n")
Path(pid_file).write_text(str(__import__("os").getpid())) if pid_file else None
import time
time.sleep(sleep)
assert not fail, "this run fails on purpose"
"""


def _notebook(folder: Path, body: str = BODY) -> Path:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell(
        'profile = "quick"  # profile\noutput_dir = ""  # output folder\nfail = False  # fail on purpose\n'
        'sleep = 0.0  # seconds to sleep\npid_file = ""  # where the kernel writes its pid')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(body)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    folder.mkdir(parents=True)
    path = folder / "nb.ipynb"
    nbformat.write(nb, str(path))
    return path


def test_a_failed_run_leaves_the_stored_notebook_and_tables_untouched(tmp_path):
    from papermill.exceptions import PapermillExecutionError

    notebook = _notebook(tmp_path / "notebooks" / "scratch")
    out = tmp_path / "out"
    notebooks.execute(notebook, "quick", {}, out, progress=False)
    stored = {name: (out / name).read_bytes() for name in ("nb.ipynb", "table.csv")}
    assert b"fail=False" in stored["table.csv"]

    with pytest.raises(PapermillExecutionError, match="fails on purpose"):
        notebooks.execute(notebook, "quick", {"fail": True}, out, progress=False)
    assert {name: (out / name).read_bytes() for name in stored} == stored
    assert (out / "results.csv").read_text().splitlines() == ["row fail=False", "row fail=True"]
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".staging-")]

    notebooks.execute(notebook, "quick", {}, out, progress=False)  # a run that succeeds replaces them
    assert (out / "table.csv").read_bytes() == stored["table.csv"]
    assert (out / "nb.ipynb").read_bytes() != stored["nb.ipynb"]  # a new execution (timestamps)


HELPER_BODY = """
from fglcore import experiment, paths
out = paths.resolve_output_dir(output_dir, profile, "scratch")
with open(out / "results.csv", "a") as f:  # a sweep's share: every kernel
    f.write("stored by a kernel\\n")
experiment.helpers_stop_here()
(out / "table.csv").write_text("timed by the first kernel alone\\n")
"""


def test_a_helper_kernel_ends_at_helpers_stop_here_and_the_first_kernel_goes_on(tmp_path):
    notebook = _notebook(tmp_path / "notebooks" / "scratch", HELPER_BODY)
    out, scratch = tmp_path / "out", tmp_path / "worker-2"
    scratch.mkdir()
    (scratch / "results.csv").symlink_to(out / "results.csv")  # as fgl run --workers links a helper's store
    out.mkdir()
    assert notebooks.execute(notebook, "quick", {}, scratch, progress=False, helper=True) is None
    assert (out / "results.csv").read_text() == "stored by a kernel\n"
    assert not (scratch / "table.csv").exists() and not (scratch / "nb.ipynb").exists()  # ended, nothing published
    assert notebooks.execute(notebook, "quick", {}, out, progress=False) == out / "nb.ipynb"
    assert (out / "table.csv").read_text() == "timed by the first kernel alone\n"
    assert (out / "results.csv").read_text() == "stored by a kernel\n" * 2


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie waiting for its (gone) parent is dead too
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc, uses prctl")
def test_the_kernel_dies_with_fgl(tmp_path):
    """Killed without any cleanup, fgl leaves an orphan kernel, which must exit by itself.

    The kernel's parent poller (ipykernel, given the launcher's pid in
    ``JPY_PARENT_PID`` by jupyter_client) exits it once its parent changes.
    This test process makes itself a child subreaper, as container inits and
    service managers are, so the orphan is re-parented to it rather than to
    PID 1: a poller that only watched for PID 1 would miss that.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_CHILD_SUBREAPER = 36
    assert libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    try:
        _kill_fgl_and_watch_its_kernel(tmp_path)
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def _kill_fgl_and_watch_its_kernel(tmp_path):
    notebook = _notebook(tmp_path / "notebooks" / "scratch")
    pid_file = tmp_path / "kernel.pid"
    fgl = subprocess.Popen([sys.executable, "-m", "fglcore.cli", "run", str(notebook), "--out", str(tmp_path / "out"),
                            "-p", "sleep", "120", "-p", "pid_file", str(pid_file)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 90
        while not (pid_file.exists() and pid_file.read_text()) and time.time() < deadline:
            time.sleep(0.2)
        kernel = int(pid_file.read_text())
        assert _alive(kernel)
    finally:
        fgl.send_signal(signal.SIGKILL)  # no cleanup at all: the kernel must notice by itself
        fgl.wait()
    try:
        deadline = time.time() + 10
        while _alive(kernel) and time.time() < deadline:
            time.sleep(0.2)
        assert not _alive(kernel), "the kernel outlived the fgl process that started it"
    finally:
        if _alive(kernel):
            os.kill(kernel, signal.SIGKILL)
        try:
            os.waitpid(kernel, 0)  # reap it: it was re-parented to this process
        except ChildProcessError:
            pass
