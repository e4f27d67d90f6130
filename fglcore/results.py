"""The tidy results schema and its resumable CSV store.

Every number an experiment produces is one row with the columns
:data:`RESULT_COLUMNS`, one row per (configuration, metric):

==================  ====================================================================
column              meaning
==================  ====================================================================
``paper``           paper id the run belongs to (``fedspray``, ``opfgl``, ...; may be ``""``)
``table``           table (or figure) of that paper, e.g. ``"2"``; may be ``""``
``dataset``         dataset name as registered in :mod:`fglcore.data.datasets`; for a user's graph
                    ``<file stem>@<sha8>`` (:func:`~fglcore.data.datasets.dataset_label`)
``partition``       partitioner name
``num_clients``     number of clients
``method``          algorithm name (``ExperimentConfig.algorithm``)
``model``           backbone name (``gcn``, ``sgc``, ...)
``setting``         free label of a variant within a table cell (``"E=5"``, ``"S=0"``; ``""`` if none)
``metric``          see below
``seed``            the run's seed
``value``           the metric's value (unit below)
``selected_round``  the round reported by the model-selection rule
``config_id``       :func:`config_id` of the configuration that produced the row
==================  ====================================================================

Metrics, with the key of :attr:`fglcore.fl.engine.RunResult.metrics` they come from:

* ``accuracy`` (``test_accuracy``), ``macro_f1`` (``test_macro_f1``),
  ``minority_accuracy`` (``test_minority_accuracy``) and ``val_accuracy``
  (``val_accuracy``) are in **percent** (0-100), as the papers report them;
  :data:`PERCENT_METRICS` lists them.
* ``upload_bytes`` (clients to server), ``download_bytes`` (server to clients)
  and ``total_bytes`` (every message, peer-to-peer included) are raw byte
  counts over the whole run, from the communication ledger -- not only up to
  ``selected_round``.

A metric the run did not produce (e.g. minority accuracy where no client has
minority test nodes, so the value is NaN) gets no row.

Two opt-in families of rows (``rows_from_result(..., per_client=True,
curve=True)``, :func:`fglcore.experiment.sweep` likewise) keep the schema's
columns and put their extra key into the metric's name:

* ``accuracy[client=K]`` and ``minority_accuracy[client=K]``: client
  ``K``'s test (minority) accuracy, percent, at the selected round -- what
  papers that plot or average per-client statistics need
  (FedStar's "±" is the mean over clients of each client's std over seeds);
  :func:`client_values` reads them back with a ``client`` column;
* ``accuracy[round=R]``: the aggregated test accuracy at every evaluated round
  ``R`` (a learning curve); :func:`curve_values` reads them back with a
  ``round`` column.

Mean and standard deviation over seeds (:func:`summarize`) use the population
std (``ddof=0``, :data:`STD_DDOF`): it is what ``numpy.std`` -- and so most
official FGL code, e.g. FedStruct's -- reports, and it is defined for a single
seed (the smoke profile), where the sample std is not.

:class:`ResultStore` keeps the rows of a sweep in one CSV file that is always
either the old or the new complete file (atomic replace), so an interrupted
sweep resumes from the configurations already stored.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import math
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import pandas as pd
from filelock import FileLock

from fglcore.files import write_csv_atomic
from fglcore.provenance import PROVENANCE_COLUMNS

if TYPE_CHECKING:
    from fglcore.config import ExperimentConfig
    from fglcore.fl.engine import RunResult

LABEL_COLUMNS = ["paper", "table", "dataset", "partition", "num_clients", "method", "model", "setting"]
"""Columns that name a table cell; with ``metric`` they identify what a row measures."""
RESULT_COLUMNS = [*LABEL_COLUMNS, "metric", "seed", "value", "selected_round", "config_id"]
STRING_COLUMNS = ["paper", "table", "dataset", "partition", "method", "model", "setting", "metric", "config_id"]
INTEGER_COLUMNS = ["num_clients", "seed", "selected_round"]

METRIC_SOURCES = {
    "accuracy": "test_accuracy",
    "macro_f1": "test_macro_f1",
    "minority_accuracy": "test_minority_accuracy",
    "val_accuracy": "val_accuracy",
}
"""Reported metric -> key of ``RunResult.metrics`` it is read from."""
PERCENT_METRICS = frozenset(METRIC_SOURCES)
"""Metrics stored in percent; ``RunResult.metrics`` holds them as fractions."""
COMMUNICATION_METRICS = {
    "upload_bytes": {"sender": "clients", "receiver": "server"},
    "download_bytes": {"sender": "server", "receiver": "clients"},
    "total_bytes": {},
}
"""Communication metric -> filter of :meth:`fglcore.fl.channel.Ledger.total_bytes`."""

CLIENT_METRIC_SOURCES = {"accuracy": "test_accuracy", "minority_accuracy": "test_minority_accuracy"}
"""Per-client metrics (``per_client=True``) -> key of each ``RunResult.per_client`` entry, in percent."""

STD_DDOF = 0
"""Degrees of freedom of the std over seeds (population std); see the module docstring."""

NOISE_FACTOR = 2.0
"""A difference of two means over seeds is beyond seed noise when it exceeds this many standard errors of it."""

IGNORED_CONFIG_KEYS = frozenset({"progress", "device"})
"""Configuration keys that do not change a run's numbers, left out of :func:`config_id`."""


def _config_dict(config: ExperimentConfig | Mapping[str, Any]) -> dict[str, Any]:
    from fglcore.config import ExperimentConfig

    if isinstance(config, ExperimentConfig):
        return config.to_dict()
    if isinstance(config, Mapping):
        return ExperimentConfig.from_dict(config).to_dict()
    raise TypeError(f"expected an ExperimentConfig or a mapping, got {type(config).__name__}")


EMPTY_OMITTED_KEYS = frozenset({"model_options"})
"""Configuration keys added after results were stored: left out of the hashes while empty (their default), so
every earlier configuration keeps its id and its stored rows."""

RUN_LABEL_KEYS = frozenset({"paper", "table", "setting"})
"""Configuration keys that only label a run (the table it feeds), left out of :func:`run_id`."""


def _hash(config: ExperimentConfig | Mapping[str, Any], ignored: frozenset[str], *,
          fill_defaults: bool = False) -> str:
    values = {k: v for k, v in _config_dict(config).items() if k not in ignored}
    for key in EMPTY_OMITTED_KEYS:
        if key in values and not values[key]:
            del values[key]
    if "dataset" in values:  # a user's graph is identified by its content, not by where it lies
        from fglcore.data.datasets import dataset_label

        values["dataset"] = dataset_label(values["dataset"])
    if fill_defaults:
        from fglcore.algorithms import ALGORITHMS

        algorithm = ALGORITHMS.get(values["algorithm"])
        options = algorithm.check_options(values["algorithm_options"])
        for key in algorithm.late_options:  # added after runs were stored: out of the hash
            if key in options and options[key] == algorithm.default_options[key]:
                del options[key]
        values["algorithm_options"] = options
    text = json.dumps(values, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def config_id(config: ExperimentConfig | Mapping[str, Any]) -> str:
    """A short, stable hash of every setting that can change the results.

    The hash covers all fields of the (validated) configuration, defaults
    included, except :data:`IGNORED_CONFIG_KEYS` (and :data:`EMPTY_OMITTED_KEYS` while empty). A changed default therefore
    changes the id, so stored results are never mistaken for runs of the new
    default.
    """
    return _hash(config, IGNORED_CONFIG_KEYS)


def run_id(config: ExperimentConfig | Mapping[str, Any]) -> str:
    """The hash of the computation alone: :func:`config_id` without the labels :data:`RUN_LABEL_KEYS`.

    Algorithm options are compared with their defaults filled in, so a
    default given explicitly (``share="structure"``) and one left out are the
    same run; an algorithm's ``late_options`` (options added after runs were
    stored) are left out while at their default, so those runs keep their
    ids. Two configurations with the same ``run_id`` compute the same
    numbers -- e.g. a paper reporting one run in two tables -- so a sweep
    copies the stored rows of one to the other instead of running it again.
    """
    return _hash(config, IGNORED_CONFIG_KEYS | RUN_LABEL_KEYS, fill_defaults=True)


def client_metric(cid: int, metric: str = "accuracy") -> str:
    """The metric name of client ``cid``'s value of ``metric``, e.g. ``"accuracy[client=3]"``."""
    return f"{metric}[client={int(cid)}]"


def round_metric(round: int, metric: str = "accuracy") -> str:
    """The metric name of ``metric`` at round ``round``, e.g. ``"accuracy[round=5]"``."""
    return f"{metric}[round={int(round)}]"


_KEYED = re.compile(r"^(?P<metric>[a-z_]+)\[(?P<key>client|round)=(?P<value>-?\d+)\]$")


def _keyed_values(results: pd.DataFrame, key: str, metric: str) -> pd.DataFrame:
    parsed = results["metric"].astype(str).str.extract(_KEYED)
    keep = (parsed["key"] == key) & (parsed["metric"] == metric)
    out = results[keep.fillna(False).to_numpy()].copy()
    out["metric"] = metric
    out.insert(out.columns.get_loc("metric") + 1, key, parsed.loc[keep.fillna(False), "value"].astype(int).to_numpy())
    return out.reset_index(drop=True)


def client_values(results: pd.DataFrame, metric: str = "accuracy") -> pd.DataFrame:
    """The ``metric[client=K]`` rows of ``results`` as rows of ``metric`` with an int ``client`` column."""
    return _keyed_values(results, "client", metric)


def curve_values(results: pd.DataFrame, metric: str = "accuracy") -> pd.DataFrame:
    """The ``metric[round=R]`` rows of ``results`` as rows of ``metric`` with an int ``round`` column."""
    return _keyed_values(results, "round", metric)


def rows_from_result(config: ExperimentConfig, result: RunResult, *, per_client: bool = False,
                     curve: bool = False) -> list[dict[str, Any]]:
    """The tidy rows (:data:`RESULT_COLUMNS`) of one finished run.

    ``per_client`` adds each client's test accuracy (``accuracy[client=K]``)
    and, where it has minority test nodes, minority accuracy
    (``minority_accuracy[client=K]``),
    and ``curve`` the test accuracy of every evaluated round
    (``accuracy[round=R]``); see the module docstring.
    """
    from fglcore.data.datasets import dataset_label

    labels = {
        "paper": config.paper,
        "table": config.table,
        "dataset": dataset_label(config.dataset),
        "partition": config.partition,
        "num_clients": config.num_clients,
        "method": config.algorithm,
        "model": config.model,
        "setting": config.setting,
    }
    common = {"seed": config.seed, "selected_round": int(result.selected_round), "config_id": config_id(config)}
    values: dict[str, float] = {}
    for metric, source in METRIC_SOURCES.items():
        value = result.metrics.get(source)
        if value is not None and not math.isnan(value):
            values[metric] = 100.0 * float(value)
    for metric, selector in COMMUNICATION_METRICS.items():
        values[metric] = float(result.ledger.total_bytes(**selector))
    if per_client:
        for row in result.per_client:
            for metric, source in CLIENT_METRIC_SOURCES.items():
                value = row.get(source)
                if value is not None and not math.isnan(value):
                    values[client_metric(row["client"], metric)] = 100.0 * float(value)
    if curve:
        for row in result.history:
            value = row.get("test_accuracy")
            if value is not None and not math.isnan(value):
                values[round_metric(row["round"])] = 100.0 * float(value)
    rows = [{**labels, "metric": metric, "value": value, **common} for metric, value in values.items()]
    return [{column: row[column] for column in RESULT_COLUMNS} for row in rows]


def empty_results() -> pd.DataFrame:
    """A results frame with no rows and the schema's columns."""
    return _typed(pd.DataFrame({c: pd.Series(dtype=object) for c in RESULT_COLUMNS}))


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    for column in STRING_COLUMNS:
        frame[column] = frame[column].fillna("").astype(str)
    for column in INTEGER_COLUMNS:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("Int64")
    frame["value"] = frame["value"].map(_exact_float).astype(float)
    return frame[RESULT_COLUMNS]


def _exact_float(value: Any) -> float:
    """``value`` as Python's ``float`` parses it (the stored text is ``repr``'s, so the number comes back bit for
    bit), NaN for an empty cell or anything that is not a number. ``pd.to_numeric`` is exact with the pinned
    pandas but not with every version: on a GPU machine's pandas it missed the last bit of values such as
    29.998945508821834, and the local-bias study then found its stored logits stale (their fingerprint is
    that of the exact rows, :func:`fglcore.artifacts.rows_fingerprint`)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def check_rows(rows: Sequence[Mapping[str, Any]]) -> None:
    """Raise ``ValueError`` unless every row has exactly the columns :data:`RESULT_COLUMNS`."""
    expected = set(RESULT_COLUMNS)
    for i, row in enumerate(rows):
        keys = set(row)
        if keys != expected:
            missing, extra = sorted(expected - keys), sorted(keys - expected)
            raise ValueError(
                f"result row {i} does not follow the results schema: missing {missing}, unexpected {extra}; "
                f"expected columns: {', '.join(RESULT_COLUMNS)}"
            )


#: Columns of the run index beside a results file: the run, its cost, and how it was made
#: (:data:`fglcore.provenance.PROVENANCE_COLUMNS`).
INDEX_COLUMNS = ["config_id", "run_id", "seconds", "finished", *PROVENANCE_COLUMNS]


class ResultStore:
    """The rows of a sweep in one CSV file, written atomically.

    :meth:`append` rewrites the whole file through a temporary file in the
    same folder and :func:`os.replace`, so a crash or an interruption leaves
    either the previous complete file or the new one, never half a file.
    Rows of a ``config_id`` that is already stored **replace** the stored rows
    of that id (the newest run wins), so a configuration never has rows twice.
    Several processes may append to one store (two notebooks of a paper run
    side by side): each read-modify-write holds an exclusive
    :class:`filelock.FileLock` on ``.<name>.lock`` beside the file.

    Beside the file, ``<stem>.runs.csv`` maps each ``config_id`` to its
    :func:`run_id` (written by :meth:`append` when given one), so a sweep can
    recognise a computation already stored under other labels. It also
    records how long each run took (``seconds``, empty for a copied run),
    when it was stored (``finished``, UTC), the measure of a long sweep's
    cost that no single wall clock gives when it was interrupted and resumed,
    and how it was made (:data:`fglcore.provenance.PROVENANCE_COLUMNS`:
    device, torch and torch-geometric versions, git commit, switches in
    force); entries written before a column existed read as ``""``.
    """

    def __init__(self, path: str | os.PathLike[str]):
        path = Path(path)
        # A link to another store (a helper worker's scratch folder, ``fgl run --workers``) is that store:
        # its lock, index, log, checkpoints and claims all sit beside the real file.
        self.path = path.resolve() if path.is_symlink() else path
        self.index_path = self.path.with_name(f"{self.path.stem}.runs.csv")

    def run_ids(self) -> dict[str, str]:
        """``config_id`` -> ``run_id`` of the stored configurations that were recorded with one."""
        index = self.run_log()
        return dict(zip(index["config_id"], index["run_id"]))

    def run_log(self) -> pd.DataFrame:
        """The index beside the file (:data:`INDEX_COLUMNS`): ``config_id``, ``run_id``, ``seconds`` (float, NaN
        if copied), ``finished`` and the provenance columns, strings (``""`` where an older index lacks them)."""
        if not self.index_path.exists():
            return pd.DataFrame({c: pd.Series(dtype=str) for c in INDEX_COLUMNS}).astype({"seconds": float})
        frame = pd.read_csv(self.index_path, dtype=str, keep_default_na=False)
        for column in INDEX_COLUMNS[2:]:  # indexes written before these columns existed
            if column not in frame:
                frame[column] = ""
        frame = frame[INDEX_COLUMNS]
        return frame.assign(seconds=pd.to_numeric(frame["seconds"], errors="coerce"))

    def provenance(self, config_id: str) -> dict[str, str]:
        """How the stored run ``config_id`` was made (:data:`~fglcore.provenance.PROVENANCE_COLUMNS`; ``""`` unknown)."""
        log = self.run_log()
        entry = log[log["config_id"] == config_id]
        if entry.empty:
            return {column: "" for column in PROVENANCE_COLUMNS}
        return {column: str(entry[column].iloc[-1]) for column in PROVENANCE_COLUMNS}

    def cost(self) -> pd.Series:
        """What the stored runs cost: runs computed and copied, compute hours, the wall hours during which
        at least one run was computing (:func:`busy_seconds`), first and last finish (UTC)."""
        log = self.run_log()
        computed = log["seconds"].notna()
        recorded = log["finished"] != ""  # indexes written before timing was recorded have neither
        finished = log.loc[recorded, "finished"]
        return pd.Series({
            "runs computed": int(computed.sum()),
            "runs copied": int((~computed & recorded).sum()),
            "runs without timing": int((~recorded).sum()),
            "compute hours": round(float(log["seconds"].sum()) / 3600, 2),
            "wall hours with runs in progress": round(busy_seconds(log) / 3600, 2),
            "first finished": finished.min() if not finished.empty else "",
            "last finished": finished.max() if not finished.empty else "",
        })

    def seconds_per_run(self, rows: pd.DataFrame | None = None,
                        by: Sequence[str] = ("dataset", "method", "model")) -> pd.DataFrame:
        """Seconds per computed run of ``rows`` (default: every stored row), grouped by ``by`` (columns of
        :data:`RESULT_COLUMNS`) and the run's ``device``: ``runs``, ``mean`` and ``max`` seconds, for
        projecting what more seeds or settings cost. Copied runs (no seconds) do not count."""
        log = self.run_log()
        log = log[log["seconds"].notna()].assign(device=lambda f: f["device"].replace("", "unrecorded"))
        keys = (self.read() if rows is None else rows).drop_duplicates("config_id")[["config_id", *by]]
        runs = keys.merge(log[["config_id", "seconds", "device"]], on="config_id")
        return (runs.groupby([*by, "device"], dropna=False, sort=False)["seconds"]
                .agg(runs="count", mean="mean", max="max").round(1).reset_index())

    def read(self) -> pd.DataFrame:
        """All stored rows (an empty frame with :data:`RESULT_COLUMNS` if the file does not exist)."""
        if not self.path.exists():
            return empty_results()
        frame = pd.read_csv(self.path, dtype=str, keep_default_na=False)
        if list(frame.columns) != RESULT_COLUMNS:
            raise ValueError(
                f"{self.path} does not follow the results schema: its columns are {list(frame.columns)}, "
                f"expected {RESULT_COLUMNS}; move it aside or point the store to another file"
            )
        return _typed(frame)

    def done_ids(self) -> set[str]:
        """The ``config_id`` of every configuration with stored rows."""
        return set(self.read()["config_id"])

    def append(self, rows: Iterable[Mapping[str, Any]], run_id: str | None = None,
               seconds: float | None = None, provenance: Mapping[str, str] | None = None) -> None:
        """Add ``rows``, replacing stored rows of the same ``config_id``s, and write the file atomically.

        ``run_id`` (of the configuration that produced the rows) is recorded in
        the index beside the file, after the rows themselves, with the run's
        ``seconds`` (``None`` for rows copied from another run) and its
        ``provenance`` (:func:`fglcore.provenance.run_record`; keys outside
        :data:`~fglcore.provenance.PROVENANCE_COLUMNS` are refused).
        """
        provenance = dict(provenance or {})
        unknown = sorted(set(provenance) - set(PROVENANCE_COLUMNS))
        if unknown:
            raise ValueError(f"provenance: unknown column(s) {unknown}; accepted: {', '.join(PROVENANCE_COLUMNS)}")
        rows = list(rows)
        check_rows(rows)
        if not rows:
            return
        new = _typed(pd.DataFrame(rows, columns=RESULT_COLUMNS))
        with self._exclusive():
            stored = self.read()
            replaced = stored["config_id"].isin(set(new["config_id"]))
            if _same_rows(stored[replaced], new):  # rows a notebook stores again unchanged: the file stays as it is
                return
            combined = new if replaced.all() else pd.concat([stored[~replaced], new], ignore_index=True)
            self._write(combined)
            if run_id is not None:
                finished = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
                self._index(pd.DataFrame({"config_id": new["config_id"].unique()}).assign(
                    run_id=run_id, seconds=seconds, finished=finished,
                    **{column: str(provenance.get(column, "")) for column in PROVENANCE_COLUMNS}))

    def merge(self, other: "ResultStore") -> list[str]:
        """Add the configurations stored in ``other`` and not here, rows and index entries as they are there
        (run id, seconds, finish time, how each run was made); return their ``config_id``s.

        For runs made elsewhere (``tools/device_sweep.py``: a lent GPU machine) and brought home. A
        configuration stored here already keeps its rows: a merge never overwrites. ``other``'s index must
        cover every configuration it adds, so that no merged run loses its provenance.
        """
        theirs, log = other.read(), other.run_log()
        with self._exclusive():
            stored = self.read()
            new = theirs[~theirs["config_id"].isin(set(stored["config_id"]))]
            added = list(dict.fromkeys(new["config_id"]))
            if not added:
                return []
            unindexed = sorted(set(added) - set(log["config_id"]))
            if unindexed:
                raise ValueError(f"{other.index_path} has no entry for {len(unindexed)} configuration(s) of "
                                 f"{other.path} (e.g. {unindexed[0]}): merging them would lose how they were made")
            self._write(pd.concat([stored, new], ignore_index=True))
            self._index(log[log["config_id"].isin(set(added))])
        return added

    def forget(self, config_ids: Iterable[str]) -> int:
        """Remove the rows and index entries of ``config_ids``, so a sweep runs them again; returns the rows removed.

        For runs that a change of the code has made stale: the next sweep
        recomputes exactly these and copies nothing from them.
        """
        config_ids = set(config_ids)
        with self._exclusive():
            stored = self.read()
            kept = stored[~stored["config_id"].isin(config_ids)]
            if len(kept) == len(stored):
                return 0
            self._write(kept)
            if self.index_path.exists():
                index = self.run_log()
                write_csv_atomic(index[~index["config_id"].isin(config_ids)], self.index_path)
        return len(stored) - len(kept)

    def _exclusive(self) -> FileLock:
        """The store's lock (``.<name>.lock`` beside the file), held for each read-modify-write."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return FileLock(self.path.with_name(f".{self.path.name}.lock"), thread_local=False)

    def _write(self, frame: pd.DataFrame) -> None:
        write_csv_atomic(frame, self.path)

    def _index(self, entries: pd.DataFrame) -> None:
        """Record ``entries`` (:data:`INDEX_COLUMNS`) in the index, replacing those of the same ``config_id``s;
        called under the store's lock."""
        index = self.run_log()
        index = index[~index["config_id"].isin(entries["config_id"])]
        write_csv_atomic(entries if index.empty else pd.concat([index, entries], ignore_index=True), self.index_path)


def _same_rows(stored: pd.DataFrame, new: pd.DataFrame) -> bool:
    """Whether ``new`` holds exactly the rows of ``stored``, in the same order, as the CSV would write them."""
    return len(stored) == len(new) and stored.to_csv(index=False) == new.to_csv(index=False)


def busy_seconds(run_log: pd.DataFrame) -> float:
    """Wall-clock seconds during which at least one run was computing: the length of the union of the
    computed runs' intervals ``[finished - seconds, finished]`` in a :meth:`ResultStore.run_log`.

    Runs of parallel workers overlap and count once; the idle time between
    sessions counts not at all. A run resumed from a checkpoint records only
    its resumed part, so the interrupted part is missing here as it is from
    the compute hours.
    """
    timed = run_log[run_log["seconds"].notna() & (run_log["finished"] != "")]
    if timed.empty:
        return 0.0
    ends = pd.to_datetime(timed["finished"], utc=True, format="ISO8601")
    starts = ends - pd.to_timedelta(timed["seconds"], unit="s")
    busy, covered_until = 0.0, starts.min()
    for start, end in sorted(zip(starts, ends)):
        busy += max(0.0, (end - max(start, covered_until)).total_seconds())
        covered_until = max(covered_until, end)
    return busy


def mean_standard_error(std: float, n_seeds: int) -> float:
    """Standard error of a mean over ``n_seeds`` seeds from their std taken with :data:`STD_DDOF`.

    NaN with fewer than two seeds, or without a std.
    """
    if n_seeds < 2 or pd.isna(std):
        return math.nan
    sample_std = std * math.sqrt((n_seeds - STD_DDOF) / (n_seeds - 1))
    return sample_std / math.sqrt(n_seeds)


def difference_noise(error_a: float, error_b: float) -> float:
    """The difference of two means with standard errors ``error_a`` and ``error_b`` beyond which it is
    not seed noise: :data:`NOISE_FACTOR` standard errors of the difference (NaN if either is NaN)."""
    return NOISE_FACTOR * math.hypot(error_a, error_b)


def summarize(results: pd.DataFrame, by: Sequence[str] | None = None) -> pd.DataFrame:
    """Mean ± std of ``value`` over seeds, one row per group.

    ``by`` defaults to :data:`LABEL_COLUMNS` plus ``metric``. The result has
    the ``by`` columns, then ``mean``, ``std`` (population std,
    :data:`STD_DDOF`) and ``n_seeds``. Groups keep the order in which they
    first appear.
    """
    by = list(LABEL_COLUMNS) + ["metric"] if by is None else list(by)
    unknown = [c for c in by if c not in results.columns]
    if unknown:
        raise ValueError(f"summarize: unknown column(s) {unknown}; accepted: {', '.join(results.columns)}")
    if results.empty:
        return pd.DataFrame({**{c: pd.Series(dtype=object) for c in by}, "mean": [], "std": [], "n_seeds": []})
    grouped = results.groupby(by, sort=False, dropna=False)
    summary = grouped["value"].agg(mean="mean", std=lambda v: v.std(ddof=STD_DDOF)).reset_index()
    summary["n_seeds"] = grouped["seed"].nunique().to_numpy()
    return summary
