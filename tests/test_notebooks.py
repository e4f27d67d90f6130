"""Notebooks: built from their jupytext sources, committed smoke outputs current, smoke numbers reproduced.

``make test`` executes every notebook under the smoke profile once: nbval
(``pytest tests outputs/smoke --nbval-lax``) re-executes each committed
``outputs/smoke/<paper>/<nb>.ipynb`` and compares its ``# NBVAL_CHECK_OUTPUT``
cells. Three checks here make that one execution cover what the notebooks
promise:

* ``test_committed_smoke_notebook_is_its_source_under_smoke``: the committed
  smoke notebook is the current ``notebooks/<paper>/<nb>.ipynb`` with the smoke
  profile's parameters injected by papermill, so nbval runs today's notebook;
* ``test_smoke_results_reproduce_the_committed_ones``: the ``results.csv``
  those runs wrote (under ``FGL_OUTPUT_ROOT``, a scratch folder, see
  ``conftest.py``) equals the committed one to 1e-6. nbval's items run first
  (``conftest.py`` orders them); a paper whose notebooks nbval did not run in
  this session (``pytest tests/test_notebooks.py`` alone) is executed here with
  papermill instead;
* ``test_notebook_matches_its_source``: the ``.ipynb`` is what jupytext builds
  from the reviewed percent-format ``.py`` beside it (``make notebooks``).
"""
import re
import shutil
from pathlib import Path

import jupytext
import nbformat
import pytest
from papermill.iorw import load_notebook_node
from papermill.parameterize import parameterize_notebook

from fglcore import notebooks, paths
from fglcore.results import ResultStore

NOTEBOOKS = [nb for paper in notebooks.papers() for nb in notebooks.notebooks_of(paper)]
COMMITTED = paths.repo_root() / "outputs" / "smoke"
TOLERANCE = 1e-6


def _id(nb: Path) -> str:
    return f"{nb.parent.name}/{nb.stem}"


def _cells(nb: nbformat.NotebookNode) -> list[tuple[str, str, list[str]]]:
    return [(c.cell_type, c.source, list(c.metadata.get("tags", []))) for c in nb.cells]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=_id)
def test_notebook_matches_its_source(notebook):
    """The ``.ipynb`` holds the cells jupytext reads from its paired percent-format ``.py`` (jupytext.toml)."""
    source = notebook.with_suffix(".py")
    assert source.exists(), f"{notebook} has no jupytext source {source.name} beside it"
    built = jupytext.read(source, fmt="py:percent")
    stored = nbformat.read(str(notebook), as_version=4)
    assert _cells(built) == _cells(stored), f"{notebook} is out of date: run make notebooks"
    assert stored.metadata["kernelspec"]["name"] == "python3"
    assert built.metadata["kernelspec"]["name"] == "python3"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=_id)
def test_committed_smoke_notebook_is_its_source_under_smoke(notebook):
    """nbval re-executes ``outputs/smoke/<paper>/<nb>.ipynb``: it must be today's notebook with the smoke parameters."""
    committed = COMMITTED / notebook.parent.name / notebook.name
    assert committed.exists(), f"{committed} is not committed: run fgl reproduce {notebook.parent.name} --profile smoke"
    params, _ = notebooks.prepare(notebook, "smoke")
    expected = parameterize_notebook(load_notebook_node(str(notebook)), params,
                                     kernel_name="python3", language="python")
    stored = nbformat.read(str(committed), as_version=4)
    assert _cells(stored) == _cells(expected), (
        f"{committed} is not {notebook} under the smoke profile: "
        f"run fgl reproduce {notebook.parent.name} --profile smoke"
    )


def _nbval_ran(session: pytest.Session, paper: str) -> bool:
    """Whether this session's nbval items execute every committed smoke notebook of ``paper``."""
    executed = {Path(str(item.path)).resolve() for item in session.items if type(item).__module__.startswith("nbval")}
    return all((COMMITTED / paper / nb.name).resolve() in executed for nb in notebooks.notebooks_of(paper))


@pytest.mark.parametrize("paper", notebooks.papers())
def test_smoke_results_reproduce_the_committed_ones(paper, request, tmp_path):
    committed = COMMITTED / paper / "results.csv"
    if _nbval_ran(request.session, paper):
        produced = paths.output_dir("smoke", paper) / "results.csv"
        assert produced.resolve() != committed.resolve(), "FGL_OUTPUT_ROOT must not be the committed outputs/"
    else:
        for notebook in notebooks.notebooks_of(paper):
            notebooks.execute(notebook, "smoke", out_dir=tmp_path, progress=False)
        produced = tmp_path / "results.csv"
    assert produced.exists(), f"the smoke run of {paper} wrote no {produced}"
    assert committed.exists(), f"{paper}'s smoke run wrote results.csv but {committed} is not committed"
    ours = ResultStore(produced).read()
    theirs = ResultStore(committed).read()
    theirs = theirs[theirs["config_id"].isin(ours["config_id"])]
    assert not ours.empty and not theirs.empty, f"no committed smoke rows for {paper}'s runs in {committed}"
    keys = [c for c in ours.columns if c != "value"]
    merged = theirs.merge(ours, on=keys, how="outer", suffixes=("_committed", "_now"), indicator=True)
    assert (merged["_merge"] == "both").all(), merged[merged["_merge"] != "both"]
    diff = (merged["value_committed"] - merged["value_now"]).abs()
    assert diff.max() <= TOLERANCE, _where_made(merged[diff > TOLERANCE], ResultStore(committed), ResultStore(produced))


def _where_made(differing, committed: ResultStore, produced: ResultStore) -> str:
    """The differing rows, and the CPU and thread count of each of their runs, committed and now: a float32
    product's last bits depend on both (README, ``FGL_THREADS``), and a few runs (Co-Boost's Cora smoke run)
    carry them into a metric; the committed smoke runs are made on the CI's machine type with its thread count."""
    lines = [differing[["dataset", "method", "metric", "config_id", "value_committed", "value_now"]].to_string()]
    for config_id in differing["config_id"].unique():
        then, now = committed.provenance(config_id), produced.provenance(config_id)
        lines.append(f"{config_id}: committed on {then['device']} with {then['threads']} thread(s), "
                     f"now on {now['device']} with {now['threads']} thread(s)")
    return "\n".join(lines)


def test_the_fedstar_ablations_preview_computes_nothing(tmp_path):
    """``run_missing=False`` renders the stored cells of a sweep still running elsewhere and stores nothing."""
    stored = ResultStore(COMMITTED / "fedstar" / "results.csv").read()
    fedstar_table2 = (stored["table"] == "2") & (stored["method"] == "fedstar")
    dropped = stored[fedstar_table2 & (stored["seed"] == stored.loc[fedstar_table2, "seed"].max())]
    shutil.copy(COMMITTED / "fedstar" / "results.runs.csv", tmp_path)  # run ids: Table 1's runs are shared
    stored.drop(dropped.index).to_csv(tmp_path / "results.csv", index=False)
    before = (tmp_path / "results.csv").read_bytes()
    notebook = paths.repo_root() / "notebooks" / "fedstar" / "4_ablations.ipynb"
    executed = notebooks.execute(notebook, "smoke", {"run_missing": False}, out_dir=tmp_path, progress=False)
    assert (tmp_path / "results.csv").read_bytes() == before
    text = "".join(o.get("text", "") for c in nbformat.read(str(executed), as_version=4).cells
                   for o in c.get("outputs", []))
    assert "PREVIEW of seeds 1: nothing is computed" in text  # the smoke profile runs seed 1
    runs, asked, cells, all_cells = map(int, re.search(
        r"Table 2: preview, (\d+) of (\d+) runs stored; (\d+) of (\d+) cells", text).groups())
    assert runs < asked and 0 < cells < all_cells  # the seed dropped above hides its cell
    assert "Table 10: preview, " in text
