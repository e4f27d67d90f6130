"""Build a notebook from a compact cell list (so notebooks are reviewed as Python, not JSON).

    python tools/nbbuild.py notebooks/tour/fgl_basics.py

A source file is Python whose top-level string ``CELLS`` separates cells with
lines ``# %% [markdown]``, ``# %% [code]`` or ``# %% [parameters]``; a code cell whose
first line is ``# NBVAL_CHECK_OUTPUT`` is checked by nbval.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

MARK = re.compile(r"^# %% \[(markdown|code|parameters)\]\s*$", re.M)


def cells_of(source: Path) -> list[tuple[str, str]]:
    """``(kind, text)`` per cell, kind being markdown, code or parameters."""
    parts = MARK.split(source.read_text())
    cells = []
    for kind, body in zip(parts[1::2], parts[2::2]):
        body = body.strip("\n")
        if kind == "markdown":
            body = "\n".join(line[2:] if line.startswith("# ") else line.lstrip("#") for line in body.splitlines())
        cells.append((kind, body))
    return cells


def build(source: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for kind, body in cells_of(source):
        if kind == "markdown":
            nb.cells.append(nbformat.v4.new_markdown_cell(body))
        else:
            cell = nbformat.v4.new_code_cell(body)
            if kind == "parameters":
                cell.metadata["tags"] = ["parameters"]
            nb.cells.append(cell)
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:02d}"
    target = source.with_suffix(".ipynb")
    nbformat.write(nb, str(target))
    return target


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(build(Path(arg)))
