"""Notebook parameters and execution under a profile (papermill).

A notebook's ``parameters`` cell (papermill tag) holds one literal per line,
each with a comment. That cell is the schema of the notebook: a parameter
set for a profile (``params/<paper>/<notebook>.<profile>.yaml``) or a
command-line override may only name keys it defines, with values of the same
type (members of lists too) and finite numbers. Then the notebook's plan
(:data:`PLANS`), the library function its cells call to build what they run,
builds every configuration from the full parameter set, so ranges, registered
names, tasks and combinations are checked by :mod:`fglcore.config` -- all
before the kernel starts (:func:`prepare`; a :class:`ConfigError` names the
parameter).

:func:`execute` runs the notebook into a staging folder beside the output
folder and moves the executed notebook and what it wrote into place only
when every cell succeeded; the run store ``results.csv`` is written through
as runs finish.
"""
from __future__ import annotations

import ast
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import nbformat
import yaml

from fglcore import paths
from fglcore.checks import ConfigError, check_finite, check_unknown_keys, show
from fglcore.claims import HelperFinished

PROFILES = ("smoke", "quick", "full")
INJECTED = {"profile": "--profile", "output_dir": "--out"}
"""Parameters ``fgl`` sets itself, and the option that sets each."""

PLANS: dict[str, str] = {
    "tour/fgl_basics": "fglcore.papers.tour:plan",
    "tour/flower": "fglcore.papers.tour.flower:plan",
    "fedspray/1_motivation": "fglcore.papers.fedspray.motivation:plan",
    "fedspray/2_method": "fglcore.papers.fedspray.tables:method_plan",
    "fedspray/3_results": "fglcore.papers.fedspray.tables:results_plan",
    "fedspray/4_ablations": "fglcore.papers.fedspray.tables:ablations_plan",
    "fedstar/1_motivation": "fglcore.papers.fedstar.motivation:plan",
    "fedstar/2_method": "fglcore.papers.fedstar.method:plan",
    "fedstar/3_results": "fglcore.papers.fedstar.tables:results_plan",
    "fedstar/4_ablations": "fglcore.papers.fedstar.tables:ablations_plan",
    "opfgl/1_motivation": "fglcore.papers.opfgl.motivation:plan",
    "opfgl/2_method": "fglcore.papers.opfgl.method:method_plan",
    "opfgl/3_results": "fglcore.papers.opfgl.tables:results_plan",
    "opfgl/4_ablations": "fglcore.papers.opfgl.tables:ablations_plan",
    "fedstruct/1_motivation": "fglcore.papers.fedstruct.motivation:plan",
    "fedstruct/2_method": "fglcore.papers.fedstruct.method:plan",
    "fedstruct/3_results": "fglcore.papers.fedstruct.tables:results_plan",
    "fedstruct/4_ablations": "fglcore.papers.fedstruct.tables:ablations_plan",
    "localbias/1_motivation": "fglcore.papers.localbias.motivation:plan",
    "localbias/2_method": "fglcore.papers.localbias.method:plan",
    "localbias/3_results": "fglcore.papers.localbias.tables:results_plan",
    "localbias/4_analysis": "fglcore.papers.localbias.analysis:plan",
}
"""Each notebook's plan: the library function its cells call to build everything it will run (configs,
settings, grids) from its parameters. :func:`prepare` calls the same function before the kernel starts, so
every combination the notebook builds is validated up front."""


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
    """``value`` if it has the type of the notebook's ``default`` (members of a list too); ints widen to floats."""
    if default is None:
        return value
    if isinstance(default, bool) or isinstance(value, bool):
        ok = isinstance(value, bool) and isinstance(default, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float))
        value = float(value) if ok else value
    elif isinstance(default, (list, tuple)):
        ok = isinstance(value, (list, tuple))
        if ok:
            kinds = {type(v) for v in default}
            if len(kinds) == 1 and default:
                value = [_check_type(f"{key}[{i}]", v, default[0]) for i, v in enumerate(value)]
    else:
        ok = isinstance(value, type(default))
    if not ok:
        raise ConfigError(
            f"parameter {key!r}: expected {type(default).__name__} like the notebook's default {default!r}, "
            f"got {'null' if value is None else f'{type(value).__name__} {show(value)}'}"
        )
    return check_finite(f"parameter {key!r}", value)


def validate_parameters(notebook: str | os.PathLike, values: Mapping[str, Any]) -> dict[str, Any]:
    """Check ``values`` against the notebook's parameters cell; return them with types normalised.

    Names and types only; :func:`check_plan` then builds what the notebook will run from them.
    """
    declared = read_parameters(notebook)
    check_unknown_keys(values, list(declared), f"parameter for {Path(notebook).name}")
    return {key: _check_type(key, value, declared[key].default) for key, value in values.items()}


def plan_function(notebook: str | os.PathLike):
    """The plan of ``notebook`` (:data:`PLANS`), or ``None`` for a notebook without one."""
    import importlib

    target = PLANS.get(f"{paper_of(Path(notebook))}/{Path(notebook).stem}")
    if target is None:
        return None
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


def check_plan(notebook: str | os.PathLike, params: Mapping[str, Any]) -> Any:
    """Build the notebook's plan from its full parameter set (defaults, profile, overrides), as its cells will.

    A :class:`ConfigError` names the parameter; the plan's own errors say which config field failed.
    """
    import inspect

    fn = plan_function(notebook)
    if fn is None:
        return None
    accepted = inspect.signature(fn).parameters
    return fn(**{k: v for k, v in params.items() if k in accepted})


def _absolute_paths(value: Any) -> Any:
    """Relative paths to a user's graph (``graph.pt``, ``data/g.pt``) made absolute: the kernel runs in the
    notebook's folder, not where ``fgl`` was started."""
    from fglcore.data.datasets import UserDatasetError, _user_path, is_dataset_path

    if isinstance(value, list):
        return [_absolute_paths(v) for v in value]
    if isinstance(value, str) and is_dataset_path(value):
        try:
            path = _user_path(value)
        except UserDatasetError:  # a NUL, "~name" of no user: left for validation to refuse by name
            return value
        return value if Path(value).is_absolute() or value.startswith("~") else str(path)
    return value


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


class _Loader(yaml.SafeLoader):
    """YAML as a person types it: ``1e-3`` is a float (YAML 1.2), not the string YAML 1.1 makes of it."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)?(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def parse_override(text: str, key: str = "value") -> Any:
    """``-p KEY VALUE`` values are YAML scalars or lists: ``3``, ``0.5``, ``1e-3``, ``true``, ``[Cora, CiteSeer]``."""
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as err:
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ConfigError(f"parameter {key!r}: {text!r} is not a YAML value ({problem}); accepted: a number, "
                          f"true/false, a name, or a list such as [a, b]") from None


def check_notebook(notebook: str | os.PathLike) -> Path:
    """``notebook`` if it is an existing ``.ipynb`` file, else a :class:`ConfigError` saying what it is."""
    notebook = Path(notebook)
    if not notebook.exists():
        raise ConfigError(f"notebook: {str(notebook)!r} not found; accepted: a notebook path such as "
                          f"notebooks/tour/fgl_basics.ipynb")
    if notebook.is_dir():
        found = ", ".join(sorted(p.name for p in notebook.glob("*.ipynb"))) or "none"
        raise ConfigError(f"notebook: {str(notebook)!r} is a folder; accepted: one .ipynb file (here: {found}); "
                          f"fgl reproduce <paper> runs a paper's notebooks")
    if notebook.suffix != ".ipynb":
        raise ConfigError(f"notebook: {str(notebook)!r} is not a notebook; accepted: a .ipynb file")
    return notebook


def check_out_dir(out_dir: str | os.PathLike | None) -> None:
    if out_dir is not None and Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise ConfigError(f"--out: {str(out_dir)!r} is a file; accepted: a folder (new or existing)")


def prepare(notebook: str | os.PathLike, profile: str, overrides: Mapping[str, Any] | None = None,
            out_dir: str | os.PathLike | None = None) -> tuple[dict[str, Any], Path]:
    """Validate everything and return (parameters to inject, output folder).

    Names and types against the parameters cell, then the notebook's plan (:data:`PLANS`): every
    configuration, setting and grid the notebook will build, built now by the same library function.
    """
    notebook = check_notebook(notebook)
    check_profile(profile)
    check_out_dir(out_dir)
    for key, option in INJECTED.items():
        if key in (overrides or {}):
            raise ConfigError(f"parameter {key!r} is set by {option}, not by -p; use {option} instead")
    overrides = {key: _absolute_paths(value) for key, value in (overrides or {}).items()}
    values = {**load_profile(notebook, profile), **overrides}
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
    check_data_available(check_plan(notebook, {**{k: p.default for k, p in declared.items()}, **params}))
    return params, out


def planned_configs(plan: Any) -> list:
    """Every :class:`~fglcore.config.ExperimentConfig` in a notebook's plan (dicts, lists and tuples are
    searched), in order."""
    from fglcore.config import ExperimentConfig

    if isinstance(plan, ExperimentConfig):
        return [plan]
    if isinstance(plan, Mapping):
        return [c for value in plan.values() for c in planned_configs(value)]
    if isinstance(plan, (list, tuple)):
        return [c for value in plan for c in planned_configs(value)]
    return []


def planned_datasets(plan: Any) -> list[str]:
    """The datasets every :class:`~fglcore.config.ExperimentConfig` in a notebook's plan loads
    (:func:`planned_configs`), in order of first appearance: for a FedStar group, the members its
    ``partition_options`` keep (``members`` / ``exclude``, e.g. the settings without COLLAB)."""
    from fglcore.data.datasets import DATASETS, is_dataset_path
    from fglcore.data.partition import select_members

    found: dict[str, None] = {}
    for config in planned_configs(plan):
        name, options = config.dataset, config.partition_options
        grouped = not is_dataset_path(name) and DATASETS.get(name).is_group
        for member in (select_members(name, options.get("members", ()), options.get("exclude", ()))
                       if grouped else [name]):
            found.setdefault(member, None)
    return list(found)


def check_data_available(plan: Any) -> None:
    """Fetch now the raw files of each planned dataset that is neither in the data root nor in the mirror
    (PyG's download, when online), so that data that cannot be had stops the run before the kernel starts
    (:class:`ConfigError`, with the files to put where) instead of in the middle of the notebook."""
    from fglcore.data.datasets import DatasetUnavailableError, dataset_status, ensure_raw, is_dataset_path

    for name in planned_datasets(plan):
        if is_dataset_path(name) or dataset_status(name).status != "missing":
            continue
        try:
            ensure_raw(name)
        except DatasetUnavailableError as err:
            raise ConfigError(str(err)) from None


def staging_folder(out: Path, notebook: Path) -> Path:
    """Where a run writes before its outputs replace the stored ones: ``.staging-<notebook>-<pid>/`` beside ``out``."""
    return out.parent / f".staging-{out.name}-{Path(notebook).stem}-{os.getpid()}-{threading.get_ident()}"


def _publish(staging: Path, out: Path) -> None:
    """Move every file the run wrote in ``staging`` over its namesake in ``out`` (each an atomic rename)."""
    for path in sorted(staging.rglob("*")):
        if path.is_symlink() or path.is_dir():
            continue
        target = out / path.relative_to(staging)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)


def execute(notebook: str | os.PathLike, profile: str, overrides: Mapping[str, Any] | None = None,
            out_dir: str | os.PathLike | None = None, *, progress: bool = True, helper: bool = False) -> Path | None:
    """Run ``notebook`` with papermill; on success, the executed copy, figures and tables replace those in the
    output folder.

    ``helper``: the kernel is a helper of ``fgl run --workers N``: it sees ``FGL_HELPER_KERNEL=1``, and
    its notebook may end early, at :func:`~fglcore.claims.helpers_stop_here`; nothing is published then and
    ``None`` is returned.

    The kernel writes into a staging folder beside the output folder (its ``results.csv`` a link to the
    real run store, so finished runs are stored as they complete and an interrupted sweep resumes); only a
    run that completes moves the executed notebook and what it wrote into place, so a failed run leaves the
    stored notebook, figures and tables untouched. The staging folder is removed either way.
    """
    import shutil

    import papermill

    params, out = prepare(notebook, profile, overrides, out_dir)
    out.mkdir(parents=True, exist_ok=True)
    staging = staging_folder(out, Path(notebook))
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    (staging / "results.csv").symlink_to((out / "results.csv").resolve())
    log = staging.parent / f"{staging.name}.kernel.log"  # beside, not inside: never published
    env = {"FGL_OUTPUT_STAGING": f"{out.resolve()}{os.pathsep}{staging}"}
    if helper:
        env["FGL_HELPER_KERNEL"] = "1"
    try:
        with open(log, "w") as kernel_stderr:
            papermill.execute_notebook(
                str(notebook), str(staging / Path(notebook).name), parameters=params, kernel_name="python3",
                cwd=str(Path(notebook).resolve().parent), progress_bar=progress,
                kernel_manager_class=kernel_manager(env, stderr=kernel_stderr),
            )
        _publish(staging, out)
    except papermill.PapermillExecutionError as error:
        if helper and error.ename == HelperFinished.__name__:
            return None
        raise
    except KeyboardInterrupt:
        log.unlink(missing_ok=True)  # the kernel's complaints about being shut down mid-cell say nothing
        raise
    finally:
        _relay_kernel_log(log)
        shutil.rmtree(staging, ignore_errors=True)
    return out / Path(notebook).name


KERNEL_NOISE = (
    "KeyboardInterrupt caught in kernel",  # the interrupt jupyter_client sends a kernel it shuts down
    "Kernel is running over TCP without encryption",
)
"""Lines of a kernel's own stderr that say nothing about the run; every other line is shown."""


def _relay_kernel_log(log: Path) -> None:
    """Print what the kernel process wrote to its stderr, less :data:`KERNEL_NOISE`, and remove the log."""
    import sys

    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return
    finally:
        log.unlink(missing_ok=True)
    for line in lines:
        if line.strip() and not any(noise in line for noise in KERNEL_NOISE):
            print(line, file=sys.stderr, flush=True)


def kernel_manager(env: Mapping[str, str], stderr: Any = None):
    """A jupyter kernel manager class whose kernels get ``env`` on top of this process's environment, and
    write their process's stderr to ``stderr`` (a file) when given.

    Its kernels talk over IPC (Unix sockets in a private temporary folder) rather than TCP on localhost,
    so they neither open ports nor warn that TCP runs without encryption.
    """
    import tempfile

    from jupyter_client.manager import AsyncKernelManager

    extra = dict(env)

    class FglKernelManager(AsyncKernelManager):
        async def start_kernel(self, **kw: Any) -> None:
            kw["env"] = {**os.environ, **kw.get("env", {}), **extra}
            if stderr is not None:
                kw["stderr"] = stderr
            if os.name == "posix":
                self._ipc_folder = tempfile.TemporaryDirectory(prefix="fgl-kernel-")
                self.transport = "ipc"
                self.ip = os.path.join(self._ipc_folder.name, "k")
            await super().start_kernel(**kw)

        async def _async_cleanup_resources(self, restart: bool = False) -> None:
            await super()._async_cleanup_resources(restart=restart)
            folder = getattr(self, "_ipc_folder", None)
            if folder is not None and not restart:
                folder.cleanup()

    return FglKernelManager


def notebooks_of(paper: str) -> list[Path]:
    folder = paths.notebooks_root() / paper
    if not folder.is_dir():
        known = sorted(p.name for p in paths.notebooks_root().iterdir() if p.is_dir())
        raise ConfigError(f"unknown paper {paper!r}; accepted: {', '.join(known)}")
    return sorted(folder.glob("*.ipynb"))


def papers() -> list[str]:
    return sorted(p.name for p in paths.notebooks_root().iterdir() if p.is_dir() and any(p.glob("*.ipynb")))
