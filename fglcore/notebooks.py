"""Notebook parameters and execution under a profile (papermill).

A notebook's ``parameters`` cell (papermill tag) holds one literal per line,
each with a comment. That cell is the schema of the notebook: a parameter
set for a profile (``params/<paper>/<notebook>.<profile>.yaml``) or a
command-line override may only name keys it defines, with values of the same
type, and registered names (datasets, partitions, algorithms, models) or
ranges are checked by :mod:`fglcore.config` -- all before anything runs.
"""
from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import nbformat
import yaml

from fglcore import paths
from fglcore.config import ConfigError, check_unknown_keys, check_value

PROFILES = ("smoke", "quick", "full")
INJECTED = ("profile", "output_dir")


@dataclass(frozen=True)
class Parameter:
    name: str
    default: Any
    comment: str


def parameters_cell(notebook: Path) -> str:
    nb = nbformat.read(str(notebook), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and "parameters" in cell.metadata.get("tags", []):
            return cell.source
    raise ConfigError(f"{notebook}: no cell tagged 'parameters'")


def read_parameters(notebook: str | os.PathLike) -> dict[str, Parameter]:
    """Parse the ``parameters`` cell: ``name = literal  # comment`` per line."""
    notebook = Path(notebook)
    source = parameters_cell(notebook)
    lines = source.splitlines()
    params: dict[str, Parameter] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            raise ConfigError(f"{notebook}: parameters cell line {node.lineno} is not 'name = literal'")
        try:
            value = ast.literal_eval(node.value)
        except ValueError as err:
            raise ConfigError(f"{notebook}: parameter {node.targets[0].id!r} is not a literal") from err
        line = lines[node.lineno - 1]
        comment = line.split("#", 1)[1].strip() if "#" in line else ""
        params[node.targets[0].id] = Parameter(node.targets[0].id, value, comment)
    return params


def paper_of(notebook: Path) -> str:
    """The paper id is the notebook's folder name (``notebooks/<paper>/...``)."""
    return Path(notebook).resolve().parent.name


def profile_file(notebook: Path, profile: str) -> Path:
    notebook = Path(notebook)
    return paths.params_root() / paper_of(notebook) / f"{notebook.stem}.{profile}.yaml"


def _check_type(key: str, value: Any, default: Any) -> Any:
    if default is None or value is None:
        return value
    if isinstance(default, bool) or isinstance(value, bool):
        ok = isinstance(value, bool) and isinstance(default, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float))
        value = float(value) if ok else value
    elif isinstance(default, (list, tuple)):
        ok = isinstance(value, (list, tuple))
    else:
        ok = isinstance(value, type(default))
    if not ok:
        raise ConfigError(
            f"parameter {key!r}: expected {type(default).__name__} like the notebook's default {default!r}, "
            f"got {type(value).__name__} {value!r}"
        )
    return value


def validate_parameters(notebook: str | os.PathLike, values: Mapping[str, Any]) -> dict[str, Any]:
    """Check ``values`` against the notebook's parameters cell; return them with types normalised."""
    declared = read_parameters(notebook)
    check_unknown_keys(values, list(declared), f"parameter for {Path(notebook).name}")
    clean = {}
    for key, value in values.items():
        clean[key] = _check_type(key, value, declared[key].default)
        try:
            check_value(key, clean[key])
        except ConfigError as err:
            raise ConfigError(f"parameter {err}") from None
    return clean


def check_profile(profile: str) -> None:
    """Raise :class:`ConfigError` naming the accepted profiles unless ``profile`` is one of :data:`PROFILES`."""
    if profile not in PROFILES:
        raise ConfigError(f"profile: {profile!r} is not accepted; accepted: {', '.join(PROFILES)}")


def load_profile(notebook: str | os.PathLike, profile: str) -> dict[str, Any]:
    """The parameter set of ``profile``; ``quick`` falls back to the notebook's own defaults."""
    check_profile(profile)
    path = profile_file(Path(notebook), profile)
    if not path.exists():
        if profile == "quick":
            return {}
        raise ConfigError(f"no parameter set for profile {profile!r}: expected {path}")
    values = yaml.safe_load(path.read_text()) or {}
    if not isinstance(values, dict):
        raise ConfigError(f"{path}: expected a mapping of parameter names to values")
    return values


def parse_override(text: str) -> Any:
    """``-p KEY VALUE`` values are YAML scalars or lists: ``3``, ``0.5``, ``true``, ``[Cora, CiteSeer]``."""
    return yaml.safe_load(text)


def prepare(notebook: str | os.PathLike, profile: str, overrides: Mapping[str, Any] | None = None,
            out_dir: str | os.PathLike | None = None) -> tuple[dict[str, Any], Path]:
    """Validate everything and return (parameters to inject, output folder)."""
    notebook = Path(notebook)
    if not notebook.exists():
        raise ConfigError(f"notebook not found: {notebook}")
    values = {**load_profile(notebook, profile), **(overrides or {})}
    params = validate_parameters(notebook, values)
    if out_dir:
        out = Path(out_dir).resolve()
        injected_dir = str(out)
    else:
        # Relative, so a re-execution elsewhere (nbval, another clone) writes under its own outputs root.
        out = paths.output_dir(profile, paper_of(notebook))
        injected_dir = f"outputs/{profile}/{paper_of(notebook)}"
    declared = read_parameters(notebook)
    for key, value in (("profile", profile), ("output_dir", injected_dir)):
        if key in declared:
            params[key] = value
    return params, out


def execute(notebook: str | os.PathLike, profile: str, overrides: Mapping[str, Any] | None = None,
            out_dir: str | os.PathLike | None = None, *, progress: bool = True) -> Path:
    """Run ``notebook`` with papermill; write the executed copy into the output folder."""
    import papermill

    params, out = prepare(notebook, profile, overrides, out_dir)
    out.mkdir(parents=True, exist_ok=True)
    target = out / Path(notebook).name
    papermill.execute_notebook(
        str(notebook), str(target), parameters=params, kernel_name="python3",
        cwd=str(Path(notebook).resolve().parent), progress_bar=progress,
    )
    return target


def notebooks_of(paper: str) -> list[Path]:
    folder = paths.notebooks_root() / paper
    if not folder.is_dir():
        known = sorted(p.name for p in paths.notebooks_root().iterdir() if p.is_dir())
        raise ConfigError(f"unknown paper {paper!r}; accepted: {', '.join(known)}")
    return sorted(folder.glob("*.ipynb"))


def papers() -> list[str]:
    return sorted(p.name for p in paths.notebooks_root().iterdir() if p.is_dir() and any(p.glob("*.ipynb")))
