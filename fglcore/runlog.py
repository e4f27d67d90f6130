"""Progress of long sweeps: one line per finished run in a log beside the results file.

A full profile runs for hours inside papermill kernels whose output lands in
the executed notebook, so a sweep there shows no progress bar. Instead,
:func:`fglcore.experiment.sweep` appends a line to ``<stem>.log`` beside its
results file (``outputs/full/fedspray/results.log``) after every run it
computes::

    2026-11-23 21:04:51  Table 2  97/240  Chameleon fedspray gcn seed=1  71 s  about 2.3 h of runs left

The estimate (:func:`expected_seconds`) predicts each run the sweep still
has to compute (copies of stored runs are free) from the timed runs of the
same sweep in the store, earlier sessions' included: a run's time is the
size of its data times the cost of its method, so a FedStar run on BIO-CHEM
is priced from FedStar's cost relative to GIN on CHEM, before any FedStar run
on BIO-CHEM is timed. The sum is divided by the number of processes working
on the file at that moment (those holding claims, :mod:`fglcore.claims`).
Runs on data of which no run is timed yet are priced at the mean size and
counted in the line ("12 of them on data not timed yet"). ``fgl run``
and ``fgl reproduce`` print the lines as they appear (:class:`LogFollower`);
``tail -f`` on the file does the same from another shell.

A sweep ends with a line that says what it computed and what it reused
(:meth:`SweepLog.finished`)::

    2026-11-25 12:00:03  tour runs  56 runs: 0 computed, 56 reused from outputs/smoke/tour/results.csv  [pid 4242]

"Reused" runs were in the store before the sweep looked (an earlier
session, or the committed results) or are copies of a stored run with the
same computation under other labels; "computed by other processes" were
stored meanwhile by another sweep on the same file. :class:`RunTally` adds
these lines up for ``fgl run`` and ``fgl reproduce``'s closing summary.
"""
from __future__ import annotations

import math
import os
import re
import threading
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Callable, Hashable, Iterable, Mapping, Sequence


COMPUTED, REUSED, BY_OTHERS = "computed", "reused", "by_others"
"""How a sweep settled each of its runs (:func:`fglcore.experiment.sweep`)."""


def log_path(results_path: str | Path) -> Path:
    """The progress log beside a results file: ``results.csv`` -> ``results.log``."""
    results_path = Path(results_path)
    return results_path.with_name(f"{results_path.stem}.log")


def format_hours(seconds: float) -> str:
    """``95`` -> ``"2 min"``, ``8280`` -> ``"2.3 h"``: the size of the work left, for a person."""
    if seconds < 3600:
        return f"{max(1, round(seconds / 60))} min"
    return f"{seconds / 3600:.1f} h"


def expected_seconds(timed: Iterable[tuple[Hashable, Hashable, float]],
                     pending: Sequence[tuple[Hashable, Hashable]]) -> float:
    """Seconds the ``pending`` runs ``(data, method)`` should take, learnt from ``timed`` runs ``(data, method, seconds)``.

    A run's time is modelled as ``size[data] * cost[method]``, fitted by
    alternating means of the logarithms (a two-way additive model in log
    time). A pending run whose data or method has no timed run takes the
    mean of the known factors. Without any timed run the estimate is NaN.
    """
    logs = [(data, method, math.log(max(seconds, 1e-3))) for data, method, seconds in timed]
    if not pending:
        return 0.0
    if not logs:
        return math.nan
    size = {data: 0.0 for data, _, _ in logs}
    cost = {method: 0.0 for _, method, _ in logs}
    for _ in range(50):  # converges in a handful of sweeps on a table's grid
        size = _means((data, value - cost[method]) for data, method, value in logs)
        cost = _means((method, value - size[data]) for data, method, value in logs)
    mean_size, mean_cost = sum(size.values()) / len(size), sum(cost.values()) / len(cost)
    return sum(math.exp(size.get(data, mean_size) + cost.get(method, mean_cost)) for data, method in pending)


def runs_left(timed: Iterable[tuple[Hashable, Hashable, float]], pending: Sequence[tuple[Hashable, Hashable]]) -> str:
    """How many runs are left and, priced from the ``timed`` ones (:func:`expected_seconds`), about how long they
    take one after another: the summary line of a preview (:func:`fglcore.experiment.stored_rows`)."""
    if not pending:
        return "no run left"
    runs = f"{len(pending)} run{'s' if len(pending) > 1 else ''} left"
    seconds = expected_seconds(timed, pending)
    if math.isnan(seconds):
        return f"{runs} (no run of this sweep is timed yet)"
    return f"{runs}, about {format_hours(seconds)} of compute at the speed of the timed ones"


def _means(pairs: Iterable[tuple[Hashable, float]]) -> dict[Hashable, float]:
    groups: dict[Hashable, list[float]] = defaultdict(list)
    for key, value in pairs:
        groups[key].append(value)
    return {key: sum(values) / len(values) for key, values in groups.items()}


class SweepLog:
    """Appends a sweep's progress lines to :func:`log_path` of its results file."""

    def __init__(self, results_path: str | Path, desc: str):
        self.path = log_path(results_path)
        self.desc = desc

    def computed(self, *, stored: int, total: int, label: str, seconds: float,
                 timed: Iterable[tuple[Hashable, Hashable, float]], pending: Sequence[tuple[Hashable, Hashable]],
                 workers: int = 1) -> str:
        """Record a run that took ``seconds``.

        ``timed`` are the sweep's timed runs as ``(data, method, seconds)``,
        this one included; ``pending`` the ``(data, method)`` of the runs it
        still has to compute, shared among ``workers`` processes
        (:mod:`fglcore.claims`). See :func:`expected_seconds`.
        """
        timed = list(timed)
        left = expected_seconds(timed, pending) / max(1, workers)
        on = f" on {workers} workers" if workers > 1 else ""
        known = {data for data, _, _ in timed}
        untimed = sum(data not in known for data, _ in pending)
        rough = f" ({untimed} of them on data not timed yet)" if untimed else ""
        if not pending:
            estimate = "last run"
        elif math.isnan(left):
            estimate = f"runs left: {len(pending)}{on}"
        else:
            estimate = f"about {format_hours(left)} of runs left{on}{rough}"
        stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
        line = f"{stamp}  {self.desc}  {stored}/{total}  {label}  {seconds:.0f} s  {estimate}"
        with open(self.path, "a", encoding="utf-8") as log:  # one short write: lines of parallel sweeps stay whole
            log.write(line + "\n")
        return line


    def finished(self, *, total: int, computed: int, reused: int, by_others: int, source: str) -> str:
        """Record the end of a sweep of ``total`` runs, with how many were ``computed`` here, ``reused`` from the
        store at ``source`` and computed ``by_others`` (other processes on the same file); return the counts' text."""
        counts = runs_summary(computed, reused, by_others, source)
        stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
        with open(self.path, "a", encoding="utf-8") as log:
            log.write(f"{stamp}  {self.desc}  {total} run{'s' if total != 1 else ''}: {counts}  [pid {os.getpid()}]\n")
        return counts


def runs_summary(computed: int, reused: int, by_others: int, source: str) -> str:
    """``"3 computed, 53 reused from outputs/smoke/tour/results.csv"`` (and ``", 2 computed by other processes"``)."""
    text = f"{computed} computed, {reused} reused from {source}"
    return f"{text}, {by_others} computed by other processes" if by_others else text


_FINISHED = re.compile(
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d  (?P<desc>.+)  (?P<total>\d+) runs?: (?P<computed>\d+) computed, "
    r"(?P<reused>\d+) reused from (?P<source>.+?)(?:, (?P<by_others>\d+) computed by other processes)?"
    r"  \[pid (?P<pid>\d+)\]$")


class RunTally:
    """Adds up the closing lines of sweeps (:meth:`SweepLog.finished`) seen in progress logs.

    Every run counts once: a run computed by any process counts as computed;
    the others of a sweep as reused. Several processes sharing one
    notebook's sweeps (``fgl run --workers``) each write a closing line for
    the same sweep: lines of one results file with the same description and
    size, the k-th of each process, are one sweep.
    """

    def __init__(self):
        self._sweeps: dict[tuple, dict[str, int]] = {}
        self._seen: dict[tuple, int] = defaultdict(int)

    def add(self, line: str) -> None:
        """Count ``line`` if it is a sweep's closing line (any prefix allowed); ignore it otherwise."""
        found = _FINISHED.search(line)
        if found is None:
            return
        key = (found["source"], found["desc"], int(found["total"]))
        occurrence = self._seen[(*key, found["pid"])]
        self._seen[(*key, found["pid"])] += 1
        sweep = self._sweeps.setdefault((*key, occurrence), {"total": key[2], "computed": 0})
        sweep["computed"] += int(found["computed"])

    @property
    def sweeps(self) -> int:
        return len(self._sweeps)

    def counts(self) -> tuple[int, int]:
        """``(computed, reused)`` over every sweep seen."""
        computed = sum(min(s["computed"], s["total"]) for s in self._sweeps.values())
        return computed, sum(s["total"] for s in self._sweeps.values()) - computed

    def summary(self) -> str:
        """``"runs: 0 computed, 56 reused from outputs/smoke (5 sweeps)"``, or that no sweep ran."""
        if not self._sweeps:
            return "runs: none (no sweep ran)"
        sources = sorted({source for source, *_ in self._sweeps})
        where = sources[0] if len(sources) == 1 else os.path.commonpath(sources) or ", ".join(sources)
        computed, reused = self.counts()
        plural = "s" if self.sweeps > 1 else ""
        return f"runs: {computed} computed, {reused} reused from {where} ({self.sweeps} sweep{plural})"


class LogFollower:
    """Prints the lines appended to progress logs while a block runs (a ``with`` statement).

    ``logs`` maps each log to the prefix its lines are printed with
    (``[fedspray] ...``). Lines already in the files when the block starts are skipped; a file
    created later is read from its start.
    """

    def __init__(self, logs: Mapping[str | Path, str], emit: Callable[[str], None] = print, interval: float = 2.0):
        self.prefixes = {Path(path): prefix for path, prefix in logs.items()}
        self.emit = emit
        self.interval = interval
        self._offsets = {p: p.stat().st_size if p.exists() else 0 for p in self.prefixes}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, daemon=True)

    def __enter__(self) -> "LogFollower":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.poll()

    def _follow(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    def poll(self) -> None:
        """Emit the complete lines appended since the last poll."""
        for path, prefix in self.prefixes.items():
            if not path.exists():
                continue
            with open(path, "rb") as log:
                log.seek(self._offsets[path])
                chunk = log.read()
            complete = chunk[: chunk.rfind(b"\n") + 1]
            self._offsets[path] += len(complete)
            for line in complete.decode("utf-8", "replace").splitlines():
                self.emit(f"[{prefix}] {line}")


# ----------------------------------------------------------------------------- projecting a profile before it runs


def plan_configs(notebook: str | Path, profile: str = "full") -> list:
    """Every :class:`~fglcore.config.ExperimentConfig` the plan of ``notebook`` builds under ``profile``: the
    notebook's parameters cell, overridden by ``params/<paper>/<notebook>.<profile>.yaml``, through its plan
    function (:data:`fglcore.notebooks.PLANS`), the configurations found anywhere in what it returns (dicts,
    lists, tuples), in order. A notebook without a plan gives ``[]``."""
    from fglcore import notebooks

    declared = notebooks.read_parameters(notebook)
    params = {**{k: p.default for k, p in declared.items()}, **notebooks.load_profile(notebook, profile)}
    return notebooks.planned_configs(notebooks.check_plan(notebook, params))


def group_key(config) -> tuple[str, str, str, int]:
    """``(dataset, method, model, rounds)`` of a run, the unit a projection prices: ``method`` is the algorithm,
    with the ``variant`` and ``backbone`` of its options when it has them (the local-bias rows ``ours``,
    ``ours*``, ``ours-full`` cost differently)."""
    options = config.algorithm_options
    method = config.algorithm
    extra = [str(options[k]) for k in ("variant", "backbone") if k in options]
    if extra:
        method = f"{method}:{'/'.join(extra)}"
    return str(config.dataset), method, str(config.model), int(config.rounds)


def format_group(key: Sequence) -> str:
    """``("Cora", "opfgl", "gcn", 1)`` -> ``"Cora|opfgl|gcn|1"``: a group as one string (CSV, command line)."""
    return "|".join(str(part) for part in key)


def projection(plans: Mapping[str, Sequence], seconds: Mapping[str, float], *, workers: int = 2,
               key: Callable = group_key) -> "pd.DataFrame":
    """What the runs of ``plans`` (notebook -> planned configs, in the order the notebooks run) should cost,
    priced from ``seconds`` (:func:`format_group` of a group -> measured seconds per run).

    Each computation counts once (:func:`fglcore.results.run_id`), in the first notebook that plans it: a
    sweep copies a run another notebook of the paper already stored. Runs are grouped by ``key``
    (:func:`group_key`); a group is priced, in this order:

    * ``measured``: its own seconds;
    * ``scaled from R rounds``: a measured group of the same dataset, method and model at other rounds,
      scaled linearly by the rounds (cost linear in rounds; never from or to one round: a one-round run is a
      one-shot protocol whose cost is not per round);
    * ``as M``: the same dataset and method measured with another model ``M`` (a backbone of similar cost
      assumed; scaled by the rounds as above). A model list (:data:`fglcore.models.model_lists.MODEL_LISTS`:
      one architecture per client, and one student per architecture for DENSE and Co-Boost) is never priced
      as a single backbone, nor a backbone as a model list;
    * ``modelled``: :func:`expected_seconds` (dataset size x method cost, fitted on the measured groups;
      ``modelled, method not measured`` when the method has no measured group, priced at the mean cost);
    * ``not priced`` (NaN) when nothing is measured.

    Returns one row per notebook and group (``runs``, ``seconds_per_run``, ``priced``, ``cpu_hours``), the
    largest first within a notebook; ``attrs["summary"]`` says the total, the hours on ``workers`` workers
    (total / workers: a lower bound, the runs shared perfectly) and the share of the hours priced from
    measured groups.
    """
    import pandas as pd

    from fglcore.models.model_lists import MODEL_LISTS
    from fglcore.results import run_id

    seen: set[str] = set()
    counts: dict[tuple[str, tuple], int] = defaultdict(int)
    for notebook, configs in plans.items():
        for config in configs:
            rid = run_id(config)
            if rid in seen:
                continue
            seen.add(rid)
            counts[(notebook, tuple(key(config)))] += 1
    measured = {tuple(_parse_group(group)): float(value) for group, value in seconds.items()
                if value == value}  # NaN: not measured
    timed = [(k[0], tuple(k[1:]), value) for k, value in measured.items()]
    methods = {k[1:] for k in measured}
    rows = []
    for (notebook, group), runs in counts.items():
        group_s = tuple(str(part) for part in group)
        if group_s in measured:
            value, how = measured[group_s], "measured"
        else:
            same = [(k, v) for k, v in measured.items() if k[:-1] == group_s[:-1] and _scalable(k[-1], group_s[-1])]
            other_model = [(k, v) for k, v in measured.items()
                           if k[:2] == group_s[:2] and (k[2] in MODEL_LISTS) == (group_s[2] in MODEL_LISTS)
                           and (k[-1] == group_s[-1] or _scalable(k[-1], group_s[-1]))]
            if same:
                (k, v) = min(same, key=lambda kv: abs(int(kv[0][-1]) - int(group_s[-1])))
                value, how = v * int(group_s[-1]) / int(k[-1]), f"scaled from {k[-1]} rounds"
            elif other_model:
                (k, v) = min(other_model, key=lambda kv: abs(int(kv[0][-1]) - int(group_s[-1])))
                value = v * int(group_s[-1]) / int(k[-1])
                how = f"as {k[2]}" + (f", scaled from {k[-1]} rounds" if k[-1] != group_s[-1] else "")
            elif timed:
                value = expected_seconds(timed, [(group_s[0], group_s[1:])])
                how = "modelled" if group_s[1:] in methods else "modelled, method not measured"
            else:
                value, how = math.nan, "not priced"
        rows.append({"notebook": notebook, "group": format_group(group), "runs": runs,
                     "seconds_per_run": round(value, 1), "priced": how,
                     "cpu_hours": round(runs * value / 3600, 2)})
    table = pd.DataFrame(rows, columns=["notebook", "group", "runs", "seconds_per_run", "priced", "cpu_hours"])
    order = {nb: i for i, nb in enumerate(plans)}
    table = table.assign(_nb=table["notebook"].map(order)).sort_values(
        ["_nb", "cpu_hours"], ascending=[True, False], kind="stable").drop(columns="_nb").reset_index(drop=True)
    total = float(table["cpu_hours"].sum())
    share = float(table.loc[table["priced"] == "measured", "cpu_hours"].sum()) / total if total else math.nan
    table.attrs["summary"] = (f"{int(table['runs'].sum())} runs, {total:.1f} CPU hours (one thread), "
                              f"{total / max(1, workers):.1f} h on {workers} workers at best; "
                              f"{100 * share:.0f} % of the hours priced from measured groups")
    return table


def _parse_group(group: str) -> list[str]:
    return group.split("|")


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()


def _scalable(measured_rounds: str, planned_rounds: str) -> bool:
    """Whether a run's seconds scale from ``measured_rounds`` to ``planned_rounds``: both multi-round (a
    one-round run is a one-shot protocol, e.g. an epochs grid and fine-tuning, whose cost is not per round)."""
    return _is_int(measured_rounds) and _is_int(planned_rounds) and int(measured_rounds) > 1 \
        and int(planned_rounds) > 1
