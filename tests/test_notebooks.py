"""Every notebook runs under the smoke profile and reproduces the committed smoke results."""
import re
import shutil
from pathlib import Path

import nbformat
import pytest

from fglcore import notebooks, paths
from fglcore.results import ResultStore

NOTEBOOKS = [nb for paper in notebooks.papers() for nb in notebooks.notebooks_of(paper)]
COMMITTED = paths.repo_root() / "outputs" / "smoke"


def _id(nb: Path) -> str:
    return f"{nb.parent.name}/{nb.stem}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=_id)
def test_notebook_matches_its_source(notebook):
    """A notebook with a percent-format source beside it must be built from it (tools/nbbuild.py)."""
    source = notebook.with_suffix(".py")
    if not source.exists():
        pytest.skip("no percent-format source")
    import importlib.util

    spec = importlib.util.spec_from_file_location("nbbuild", paths.repo_root() / "tools" / "nbbuild.py")
    nbbuild = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(nbbuild)
    built = [("code" if kind == "parameters" else kind, text) for kind, text in nbbuild.cells_of(source)]
    stored = [(c.cell_type, c.source) for c in nbformat.read(str(notebook), as_version=4).cells]
    assert built == stored, f"{notebook} is out of date: run python tools/nbbuild.py {source}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=_id)
def test_notebook_runs_under_smoke_and_matches_committed(notebook, tmp_path):
    executed = notebooks.execute(notebook, "smoke", out_dir=tmp_path, progress=False)
    assert executed.exists()
    committed = COMMITTED / notebook.parent.name / "results.csv"
    produced = tmp_path / "results.csv"
    if not produced.exists():
        pytest.skip(f"{notebook.name} writes no results.csv")
    if not committed.exists():
        pytest.fail(f"{notebook.name} wrote results.csv but {committed} is not committed")
    ours = ResultStore(produced).read()
    # The notebooks of one paper share the committed results.csv: compare this notebook's runs only.
    theirs = ResultStore(committed).read()
    theirs = theirs[theirs["config_id"].isin(ours["config_id"])]
    assert not ours.empty and not theirs.empty, f"no committed smoke rows for {notebook.name} in {committed}"
    keys = [c for c in ours.columns if c not in ("value",)]
    merged = theirs.merge(ours, on=keys, how="outer", suffixes=("_committed", "_now"), indicator=True)
    assert (merged["_merge"] == "both").all(), merged[merged["_merge"] != "both"]
    diff = (merged["value_committed"] - merged["value_now"]).abs()
    assert diff.max() <= 1e-6, merged[diff > 1e-6]


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
