"""Run one experiment, or a resumable sweep of many, into tidy result rows.

* :func:`run` validates a configuration, builds its federation, runs its
  algorithm and returns the rows of :mod:`fglcore.results`;
  :func:`run_full` also returns the :class:`~fglcore.fl.engine.RunResult`
  (history, per-client metrics, communication ledger).
* :func:`grid` expands axes into validated configurations;
  :func:`sweep` runs them into a :class:`~fglcore.results.ResultStore`,
  writing each finished configuration at once, so an interrupted sweep
  resumes where it stopped and never stores a configuration twice;
  :func:`stored_rows` previews a sweep still running elsewhere.
* :func:`summarize` gives the mean ± std over seeds (population std, as in
  :mod:`fglcore.compare`).

Example::

    configs = grid({"rounds": 50}, dataset=["Cora", "CiteSeer"], algorithm=["fedavg", "local"], seed=range(5))
    results = sweep(configs, "outputs/quick/tour/results.csv")
    summarize(results)
"""
from __future__ import annotations

import contextlib
import itertools
import os
import re
import time
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import pandas as pd
from tqdm.auto import tqdm

from fglcore import runtime
from fglcore.algorithms import ALGORITHMS
from fglcore.algorithms.base import Algorithm
from fglcore.artifacts import RunArtifact
from fglcore.claims import CLAIM_FOLDER, HEAVY_SHARE, RunClaims, helpers_stop_here
from fglcore.checks import check_non_empty
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.data.federation import build_federation
from fglcore.fl.checkpoint import RoundCheckpoint
from fglcore.fl.engine import RunResult, TrainingDiverged
from fglcore.results import RUN_LABEL_KEYS, ResultStore, config_id, rows_from_result, run_id, summarize
from fglcore.paths import display_path
from fglcore.provenance import run_record
from fglcore.runlog import BY_OTHERS, COMPUTED, REUSED, SweepLog, runs_left
from fglcore.settings import settings

__all__ = ["as_config", "prepare", "run", "run_full", "grid", "sweep", "stored_rows", "summarize", "request_stop",
           "withdraw_stop", "SweepStopped", "parameters_named", "check_lists", "check_datasets", "helpers_stop_here"]


def as_config(config: ExperimentConfig | Mapping[str, Any]) -> ExperimentConfig:
    """Validate a mapping into an :class:`ExperimentConfig`; an ``ExperimentConfig`` is re-validated."""
    if isinstance(config, ExperimentConfig):
        config.validate()
        return config
    if isinstance(config, Mapping):
        return ExperimentConfig.from_dict(config)
    raise TypeError(f"expected an ExperimentConfig or a mapping of its fields, got {type(config).__name__}")


def prepare(config: ExperimentConfig | Mapping[str, Any]) -> Algorithm:
    """The algorithm of ``config`` on its federation, seeded and ready to :meth:`~fglcore.algorithms.base.Algorithm.run`.

    The configuration and the ``FGL_*`` variables (:func:`fglcore.settings.settings`)
    are validated before any data is loaded. Seeds are set
    from ``config.seed`` (:func:`fglcore.runtime.set_seed`), torch's threads
    follow ``FGL_THREADS`` (:func:`fglcore.runtime.set_threads`: the count the
    run index records is the one used), subnormal floats
    are flushed to zero unless ``FGL_FLUSH_DENORMAL=0``
    (:func:`fglcore.runtime.set_flush_denormal`), the federation
    is built with cross-client edges only for algorithms that need them, and
    the algorithm runs on :func:`fglcore.runtime.get_device` of
    ``config.device``.
    """
    config = as_config(config)
    settings()  # a bad FGL_* variable stops here, before any data is loaded
    algorithm = ALGORITHMS.get(config.algorithm)
    device = runtime.get_device(config.device)  # an unavailable device fails before data is loaded
    runtime.set_seed(config.seed)
    runtime.set_threads()
    runtime.set_flush_denormal()
    federation = build_federation(config, keep_cross_edges=algorithm.needs_cross_edges)
    return algorithm(config, federation, device)


def run_full(config: ExperimentConfig | Mapping[str, Any], *, per_client: bool = False,
             curve: bool = False, checkpoint: RoundCheckpoint | None = None) -> tuple[list[dict[str, Any]], RunResult]:
    """Run one configuration (:func:`prepare`); return its result rows and the full :class:`RunResult`.

    ``per_client`` and ``curve`` add the per-client and
    per-round rows of :func:`fglcore.results.rows_from_result`. A
    ``checkpoint`` (:mod:`fglcore.fl.checkpoint`) is saved while the run goes
    and, when it holds a round, resumed from.
    """
    config = as_config(config)
    result = prepare(config).run(checkpoint=checkpoint)
    return rows_from_result(config, result, per_client=per_client, curve=curve), result


def run(config: ExperimentConfig | Mapping[str, Any], *, per_client: bool = False,
        curve: bool = False, checkpoint: RoundCheckpoint | None = None) -> list[dict[str, Any]]:
    """Run one configuration and return its result rows (:data:`fglcore.results.RESULT_COLUMNS`)."""
    rows, _ = run_full(config, per_client=per_client, curve=curve, checkpoint=checkpoint)
    return rows


def grid(base: ExperimentConfig | Mapping[str, Any], **axes: Iterable[Any]) -> list[ExperimentConfig]:
    """Every combination of ``axes`` on top of ``base``, each validated before any is returned.

    ``grid(base, dataset=["Cora", "CiteSeer"], seed=range(5))`` gives 10
    configurations; the last axis varies fastest. An invalid combination
    raises :class:`~fglcore.config.ConfigError` naming it.
    """
    base = base.to_dict() if isinstance(base, ExperimentConfig) else dict(base)
    values: dict[str, list[Any]] = {}
    for key, axis in axes.items():
        if isinstance(axis, (str, bytes, Mapping)) or not isinstance(axis, Iterable):
            raise ConfigError(
                f"grid axis {key!r} must be a list of values, got {axis!r}; write {key}=[{axis!r}] for one value"
            )
        values[key] = list(axis)
    configs = []
    for combination in itertools.product(*values.values()):
        changes = dict(zip(values, combination))
        try:
            configs.append(ExperimentConfig.from_dict({**base, **changes}))
        except ConfigError as err:
            where = ", ".join(f"{k}={v!r}" for k, v in changes.items())
            raise ConfigError(f"grid configuration ({where}): {err}") from err
    return configs


_FIELD = re.compile(r"^(?:grid configuration \(.*?\): )?([A-Za-z_][\w.]*?)(?:\[\d+\])?: ")


@contextlib.contextmanager
def parameters_named(names: Mapping[str, str]) -> Iterator[None]:
    """Report a configuration field's :class:`ConfigError` under the notebook parameter it came from.

    ``names`` maps config fields (``seed``, ``algorithm``, ``algorithm_options.mu``) to parameters
    (``seeds``, ``methods``, ``fedprox_mu``); a field absent from it is its own parameter (``lr``). A
    notebook's plan builds its configurations inside this, so ``-p seeds "[-1]"`` is refused as
    ``parameter 'seeds': seed: -1 is not accepted; ...``.
    """
    try:
        yield
    except ConfigError as err:
        message = str(err)
        found = _FIELD.match(message)
        if found is None or message.startswith("parameter "):
            raise
        field = found.group(1)
        name = names.get(field) or names.get(field.split(".")[0]) or field
        raise ConfigError(f"parameter {name!r}: {message}") from None


def check_datasets(name: str, value: Any, task: str | None = None) -> None:
    """The notebook parameter ``name`` holds datasets (a registered name or a path to a user's graph, or a
    list of them), of ``task`` (``"node"``, ``"graph"``) when given; the error keeps its type
    (:class:`~fglcore.data.datasets.DatasetError` and its subclasses)."""
    from fglcore.data.datasets import check_dataset

    for v in value if isinstance(value, (list, tuple)) else [value]:
        try:
            check_dataset(v, task)
        except ConfigError as err:
            raise type(err)(f"parameter {name!r}: {err}") from None


def check_lists(**lists: Any) -> None:
    """Each keyword (a notebook parameter) is a non-empty list: what a notebook's sweep needs to run anything."""
    for name, value in lists.items():
        check_non_empty(f"parameter {name!r}", value)


#: Folder beside a results file that holds the round checkpoints of running configurations.
CHECKPOINT_FOLDER = ".checkpoints"
#: Seconds between two looks at the store while a sweep waits for runs that other workers compute.
CLAIM_POLL_SECONDS = 10.0
#: A file of this name beside a results file asks the sweeps storing there to stop before their next run.
STOP_FILE = ".stop"


class SweepStopped(RuntimeError):
    """A sweep stopped before computing its next run because a stop was requested (:func:`request_stop`)."""


def request_stop(results_dir: str | os.PathLike[str]) -> Path:
    """Ask every sweep storing in ``results_dir`` to stop once its current run is stored; return the stop file.

    Runs in progress finish and are stored; no new one starts (each sweep
    raises :class:`SweepStopped`). ``fgl stop`` does this; ``fgl run`` and
    ``fgl reproduce`` withdraw the request when they start
    (:func:`withdraw_stop`), and a sweep resumes where it stopped.
    """
    path = Path(results_dir) / STOP_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    return path


def withdraw_stop(results_dir: str | os.PathLike[str]) -> bool:
    """Remove a stop request from ``results_dir``; True if there was one."""
    try:
        (Path(results_dir) / STOP_FILE).unlink()
    except FileNotFoundError:
        return False
    return True


def _label(config: ExperimentConfig) -> str:
    setting = f" [{config.setting}]" if config.setting else ""
    return f"{config.dataset} {config.algorithm}{setting} {config.model} seed={config.seed}"


def _timing_keys(config: ExperimentConfig) -> tuple[tuple, tuple]:
    """``(data, method)`` of a run for the time estimate (:func:`fglcore.runlog.expected_seconds`):
    what it trains on, and how much work it does on each graph or node."""
    data = (config.dataset, config.partition, config.num_clients)
    method = (config.algorithm, config.model, config.setting, config.local_epochs, config.rounds)
    return data, method


def _timed_runs(store: ResultStore, timing_keys: Mapping[str, tuple[tuple, tuple]]) -> list[tuple[tuple, tuple, float]]:
    """``(data, method, seconds)`` of each run in ``timing_keys`` (run id -> :func:`_timing_keys`) with a recorded time."""
    timings = store.run_log().dropna(subset=["seconds"]).groupby("run_id")["seconds"].last()
    return [(*timing_keys[rid], seconds) for rid, seconds in timings.items() if rid in timing_keys]


def _done_ids(store: ResultStore, *, per_client: bool, curve: bool) -> set[str]:
    """Stored configurations that have every family of rows the sweep asks for."""
    if not (per_client or curve):
        return store.done_ids()
    rows = store.read()
    done = set(rows["config_id"])
    for wanted, marker in ((per_client, "[client="), (curve, "[round=")):
        if wanted:
            done &= set(rows.loc[rows["metric"].str.contains(marker, regex=False), "config_id"])
    return done


def _relabelled(rows: pd.DataFrame, source_id: str, config: ExperimentConfig, *, per_client: bool,
                curve: bool) -> list[dict[str, Any]]:
    """The rows stored for ``source_id``, labelled as ``config``'s (same computation, other table).

    Only the families of rows a run with ``per_client`` / ``curve`` would
    store are copied, so a copy equals a fresh run.
    """
    copy = rows[rows["config_id"] == source_id].copy()
    for wanted, marker in ((per_client, "[client="), (curve, "[round=")):
        if not wanted:
            copy = copy[~copy["metric"].str.contains(marker, regex=False)]
    for key in RUN_LABEL_KEYS:
        copy[key] = getattr(config, key)
    copy["config_id"] = config_id(config)
    return copy.to_dict("records")


def is_heavy(algorithm: Algorithm) -> bool:
    """Whether ``algorithm``'s run needs a large share of the machine: its
    :meth:`~fglcore.algorithms.base.Algorithm.memory_estimate` exceeds :data:`~fglcore.claims.HEAVY_SHARE` of the
    memory (:func:`fglcore.runtime.memory_bytes`). A sweep's processes compute one heavy run at a time."""
    estimate, memory = algorithm.memory_estimate(), runtime.memory_bytes()
    return bool(estimate and memory and estimate > HEAVY_SHARE * memory)


def sweep(
    configs: Iterable[ExperimentConfig | Mapping[str, Any]],
    path: str | os.PathLike[str],
    *,
    progress: bool = True,
    desc: str = "sweep",
    per_client: bool = False,
    curve: bool = False,
    artifact: RunArtifact | None = None,
) -> pd.DataFrame:
    """Run every configuration not yet stored in ``path`` and return the rows of ``configs``.

    All configurations are validated before the first runs. Configurations
    whose :func:`~fglcore.results.config_id` is already in the store are
    skipped (resume), as are repeats within ``configs``; the others run in
    order and each one's rows are written as soon as it finishes. An
    exception or ``KeyboardInterrupt`` propagates and loses only the rounds
    the running configuration did since its last checkpoint. Rows of other configurations in the
    store (an earlier sweep with other parameters) stay in the file but are
    not returned, so tables never mix settings.

    A configuration whose :func:`~fglcore.results.run_id` matches a stored
    one (the same computation under other labels: ``paper``, ``table``,
    ``setting``) is not run again: the stored rows are copied with its labels.

    A long run saves round checkpoints in ``.checkpoints/`` beside the file
    (every ``FGL_CHECKPOINT_SECONDS``, default 600), so an interrupted one
    resumes from its last saved round rather than from the start
    (:mod:`fglcore.fl.checkpoint`); ``seconds`` then counts the resumed part only.
    Each computed run records in the run index how it was made
    (:func:`fglcore.provenance.run_record`: device, versions, git commit,
    switches in force); a copied run carries its source's record.

    Each computed run also appends a progress line (how many are stored,
    what ran, how long it took, roughly how long the rest takes) to
    ``<stem>.log`` beside the file (:mod:`fglcore.runlog`), and the sweep
    ends with a line saying how many runs it computed and how many it reused
    from the store (stored before, or copied from the same computation);
    the returned frame's ``attrs["runs"]`` holds the same counts
    (``computed``, ``reused``, ``by_others``, ``total``).

    Several processes may run sweeps over one file at once (two notebooks
    of a paper side by side, or one notebook on several workers:
    ``fgl run --workers``): each claims a run before computing it
    (:mod:`fglcore.claims`, an OS file lock that dies with its process),
    skips runs another process has claimed, copies or skips what the others
    have stored, and, having done all it could, waits for the others' runs
    (looking every :data:`CLAIM_POLL_SECONDS`), so that every process
    returns the same complete rows. Runs that need a large share of the
    memory (:func:`is_heavy`) compute one at a time: a process that meets one
    while another computes one leaves it for later and goes on with the
    others (:meth:`fglcore.claims.RunClaims.memory_gate`).

    A file :data:`STOP_FILE` beside the results file (:func:`request_stop`,
    ``fgl stop``) stops the sweep before its next computed run, with
    :class:`SweepStopped`; every run it finished is stored.

    ``per_client`` / ``curve`` also store each run's per-client and
    per-round rows (:func:`fglcore.results.rows_from_result`). A stored
    configuration that lacks them (stored by a sweep that did not ask for
    them, e.g. another notebook sharing the file) is run again, and its new
    rows replace the old ones.

    An ``artifact`` (:class:`fglcore.artifacts.RunArtifact`) keeps more of
    each computed run than its rows (e.g. test logits) in a file written
    before the rows; a stored configuration of this sweep counts as done only
    while its file is there and trusted, else it is computed again, and a
    copy of the same computation copies the file too.
    """
    configs = [as_config(c) for c in configs]
    store = ResultStore(path)
    todo: dict[str, ExperimentConfig] = {}
    for config in configs:
        todo.setdefault(config_id(config), config)
    total = len(todo)
    run_ids = {cid: run_id(config) for cid, config in todo.items()}
    timing_keys = {rid: _timing_keys(todo[cid]) for cid, rid in run_ids.items()}
    log = SweepLog(store.path, desc)
    outcomes: dict[str, str] = {}  # config id -> REUSED | COMPUTED | BY_OTHERS

    def log_computed(config: ExperimentConfig, seconds: float) -> None:
        done, computed = snapshot
        log.computed(stored=len(done & todo.keys()), total=total, label=_label(config), seconds=seconds,
                     timed=_timed_runs(store, timing_keys),
                     pending=[keys for rid, keys in timing_keys.items() if rid not in computed],
                     workers=claims.live_holders())

    trusted: set[str] = set()  # artifacts checked once in this sweep: each later look loads only new ones

    def kept(done: set[str]) -> set[str]:
        """Those of ``done`` whose artifact is there and trusted (all of them without an artifact)."""
        if artifact is None:
            return done
        new = done - trusted
        if new:
            rows = store.read()
            by_id = {cid: mine for cid, mine in rows[rows["config_id"].isin(new)].groupby("config_id")}
            trusted.update(cid for cid in new if artifact.load(store.path, cid, by_id[cid]) is not None)
        return done & trusted

    def stored() -> tuple[set[str], dict[str, str]]:
        """Configurations stored with every family of rows asked for (and their artifact), and run id -> one
        such configuration."""
        done = kept(_done_ids(store, per_client=per_client, curve=curve))
        return done, {rid: cid for cid, rid in store.run_ids().items() if cid in done}

    def check_stop(config: ExperimentConfig) -> None:
        stop = store.path.parent / STOP_FILE
        if stop.exists():
            left = total - len(snapshot[0] & todo.keys())
            raise SweepStopped(f"{desc}: stopped before {_label(config)}, as {stop} asks; {left} of {total} runs "
                               "are not stored yet. Delete the file (fgl run does) and run again to resume.")

    def copy(cid: str, source: str) -> str:
        config, rid = todo[cid], run_ids[cid]
        rows = store.read()
        relabelled = _relabelled(rows, source, config, per_client=per_client, curve=curve)
        if artifact is not None:
            payload = artifact.load(store.path, source, rows[rows["config_id"] == source])
            artifact.save(store.path, cid, relabelled, payload)
        store.append(relabelled, run_id=rid, provenance=store.provenance(source))
        return REUSED

    def settle(cid: str) -> str | None:
        """Store configuration ``cid`` (copied or computed) and say how; None while another worker computes it."""
        nonlocal snapshot
        config, rid = todo[cid], run_ids[cid]
        done, computed = snapshot
        if cid in done:
            return BY_OTHERS
        if rid in computed:
            return copy(cid, computed[rid])
        check_stop(config)
        if not claims.acquire(rid):
            return None
        snapshot = done, computed = stored()  # another worker may have stored it since the last look
        if cid in done or rid in computed:
            claims.release(rid, stored=True)  # the run is in the store: its lock file can go
            return BY_OTHERS if cid in done else copy(cid, computed[rid])
        bar.set_postfix_str(_label(config))
        checkpoint = RoundCheckpoint(store.path.parent / CHECKPOINT_FOLDER / f"{rid}.pt")
        start = time.perf_counter()
        algorithm = prepare(config)
        with claims.memory_gate(heavy=is_heavy(algorithm), blocking=False) as admitted:
            if not admitted:  # another process computes a heavy run: this one waits its turn, the others go on
                claims.release(rid)
                return None
            try:
                result = algorithm.run(checkpoint=checkpoint)
            except TrainingDiverged as error:  # nothing is stored; say which run of the sweep it was
                raise TrainingDiverged(f"{desc}, {_label(config)}: {error}") from error
        rows = rows_from_result(config, result, per_client=per_client, curve=curve)
        seconds = round(time.perf_counter() - start, 2)
        if artifact is not None:  # before the rows: a stored run always had its artifact written
            artifact.save(store.path, cid, rows, artifact.collect(algorithm, result))
        store.append(rows, run_id=rid, seconds=seconds, provenance=run_record(runtime.get_device(config.device)))
        checkpoint.clear()
        claims.release(rid, stored=True)
        snapshot = stored()
        log_computed(config, seconds)
        return COMPUTED

    snapshot = stored()
    waiting = [cid for cid in todo if cid not in snapshot[0]]
    outcomes.update({cid: REUSED for cid in todo if cid in snapshot[0]})
    with tqdm(total=total, initial=total - len(waiting), desc=desc, disable=not progress) as bar, \
            RunClaims(store.path.parent / CLAIM_FOLDER) as claims:
        while waiting:
            left = []
            for cid in waiting:
                outcome = settle(cid)
                if outcome is None:
                    left.append(cid)
                else:
                    outcomes[cid] = outcome
                    bar.update()
            if left:
                bar.set_postfix_str(f"waiting for {len(left)} run(s) of other workers")
                time.sleep(CLAIM_POLL_SECONDS)
                snapshot = stored()
            waiting = left
        counts = {kind: sum(o == kind for o in outcomes.values()) for kind in (COMPUTED, REUSED, BY_OTHERS)}
        bar.set_postfix_str(log.finished(total=total, source=display_path(store.path), **counts))
    rows = store.read()
    wanted = {config_id(c) for c in configs}
    frame = rows[rows["config_id"].isin(wanted)].reset_index(drop=True)
    frame.attrs["runs"] = {**counts, "total": total}
    return frame


def stored_rows(
    configs: Iterable[ExperimentConfig | Mapping[str, Any]],
    path: str | os.PathLike[str],
    *,
    desc: str = "sweep",
    per_client: bool = False,
    curve: bool = False,
) -> pd.DataFrame:
    """The rows :func:`sweep` would return, from what is stored so far, computing nothing.

    A preview of a sweep that is still running elsewhere (another session,
    ``fgl run --workers``): nothing is computed, claimed or written. A
    configuration counts when it is stored with the families of rows asked
    for, or when the same computation is stored under other labels (copied
    in memory, as :func:`sweep` would copy it). Only whole cells come back:
    configurations that differ only in their seed come all or not at all, so
    no table mixes means over different seeds. Prints how many runs and
    cells are there, and how long the missing runs should take at the speed
    of this sweep's runs stored so far (:func:`fglcore.runlog.runs_left`).
    """
    todo = {config_id(c): c for c in map(as_config, configs)}
    store = ResultStore(path)
    rows = store.read()
    done = _done_ids(store, per_client=per_client, curve=curve)
    computed = {rid: cid for cid, rid in store.run_ids().items() if cid in done}
    found: dict[str, list[dict[str, Any]]] = {}
    cells: dict[str, list[str]] = {}
    timing_keys: dict[str, tuple[tuple, tuple]] = {}
    for cid, config in todo.items():
        rid = run_id(config)
        timing_keys[rid] = _timing_keys(config)
        if cid in done:
            found[cid] = rows[rows["config_id"] == cid].to_dict("records")
        elif rid in computed:
            found[cid] = _relabelled(rows, computed[rid], config, per_client=per_client, curve=curve)
        cells.setdefault(config_id(config.replace(seed=0)), []).append(cid)
    whole = [ids for ids in cells.values() if all(cid in found for cid in ids)]
    pending = [keys for rid, keys in timing_keys.items() if rid not in computed]
    print(f"{desc}: preview, {len(found)} of {len(todo)} runs stored; "
          f"{len(whole)} of {len(cells)} cells have every seed and are shown; "
          f"{runs_left(_timed_runs(store, timing_keys), pending)}")
    kept = [row for ids in whole for cid in ids for row in found[cid]]
    return pd.DataFrame(kept, columns=rows.columns).reset_index(drop=True)
