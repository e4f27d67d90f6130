"""Our cells formed as the paper declares (``aggregation``), and set next to the paper's numbers.

:func:`ours_cells` is the one place a mean ± std of ours is computed for a
paper's tables; :func:`compare` matches it with every reported number of
``paper.yaml`` (delta, tolerance, status; the rules are in
:mod:`fglcore.compare`).
"""
from __future__ import annotations

import math
import os
from typing import Any, Mapping, Sequence

import pandas as pd

from fglcore.compare.paper_file import OPTIONAL_LABELS, aggregation_for, data_role, paper_dict
from fglcore.results import LABEL_COLUMNS, RESULT_COLUMNS, STD_DDOF, client_values

DEFAULT_TOLERANCE = 1.5
"""Smallest tolerance, in points: seeds, library versions and hardware move results by about this much."""

STATUSES = ("match", "above", "below", "missing", "subset")

CELL_LABELS = [c for c in LABEL_COLUMNS if c != "paper"]
"""Columns that name one cell of ours (with ``metric``)."""
CELL_COLUMNS = [*CELL_LABELS, "metric", "data", "mean", "std", "std_of_mean", "n_seeds", "n_clients"]
"""Columns of :func:`ours_cells`."""

COMPARISON_COLUMNS = [
    *CELL_LABELS,
    "metric",
    "data",
    "paper_mean",
    "paper_std",
    "ours_mean",
    "ours_std",
    "ours_std_of_mean",
    "n_seeds",
    "delta",
    "tolerance",
    "status",
]
"""Columns of :func:`compare` (``comparison.csv``)."""


def check_results(results: pd.DataFrame) -> None:
    missing = [c for c in RESULT_COLUMNS if c not in results.columns]
    if missing:
        raise ValueError(f"results frame lacks column(s) {missing}; expected the results schema {RESULT_COLUMNS}")


def rows_of_paper(results: pd.DataFrame, paper_id: str) -> pd.DataFrame:
    """The rows whose ``paper`` is ``paper_id``, with text labels (empty instead of missing)."""
    check_results(results)
    rows = results[results["paper"].astype(str) == paper_id].copy()
    for column in ("table", "dataset", "method", "metric", "partition", "model", "setting"):
        rows[column] = rows[column].fillna("").astype(str)
    return rows


def select(rows: pd.DataFrame, filters: Mapping[str, Any]) -> pd.DataFrame:
    """The rows equal to every non-``None`` value of ``filters``."""
    mask = pd.Series(True, index=rows.index)
    for column, value in filters.items():
        if value is not None:
            mask &= rows[column] == value
    return rows[mask]


def describe_groups(rows: pd.DataFrame, columns: Sequence[str]) -> str:
    varying = [c for c in columns if rows[c].nunique(dropna=False) > 1]
    return "; ".join(f"{c} in {sorted(map(str, rows[c].unique()))}" for c in varying)


def check_one_run_per_seed(rows: pd.DataFrame, what: str) -> None:
    repeated = rows[rows["seed"].duplicated(keep=False)]
    if not repeated.empty:
        seed = repeated["seed"].iloc[0]
        ids = sorted(map(str, repeated.loc[repeated["seed"] == seed, "config_id"].unique()))
        raise ValueError(
            f"{what}: several of our runs have seed {seed} (config_ids {', '.join(ids)}); "
            "give the variants distinct 'setting' labels or keep only one in the results"
        )


def tolerance(paper_std: float | None, ours_std: float | None, floor: float = DEFAULT_TOLERANCE) -> float:
    """``max(floor, 2 * sqrt(paper_std**2 + ours_std**2))``; a missing std counts as 0."""
    sp = 0.0 if paper_std is None or math.isnan(paper_std) else paper_std
    so = 0.0 if ours_std is None or math.isnan(ours_std) else ours_std
    return max(floor, 2.0 * math.sqrt(sp**2 + so**2))


def status(delta: float, tol: float) -> str:
    """``match`` within the tolerance, else ``above`` or ``below``; ``missing`` when ``delta`` is NaN."""
    if math.isnan(delta):
        return "missing"
    if abs(delta) <= tol:
        return "match"
    return "above" if delta > 0 else "below"


# ----------------------------------------------------------------------------- our cells


def _std(values: pd.Series, ddof: int) -> float:
    return float(values.std(ddof=ddof)) if len(values) > ddof else math.nan


def _cells_over_seeds(runs: pd.DataFrame, ddof: int) -> pd.DataFrame:
    keys = [*CELL_LABELS, "metric"]
    grouped = runs.groupby(keys, sort=False, dropna=False)
    cells = grouped["value"].agg(mean="mean", std=lambda v: _std(v, ddof),
                                 std_of_mean=lambda v: _std(v, STD_DDOF)).reset_index()
    cells["n_seeds"] = grouped["seed"].nunique().to_numpy()
    cells["n_clients"] = 0
    return cells


def _cells_over_clients(runs: pd.DataFrame, clients: pd.DataFrame, ddof: int) -> pd.DataFrame:
    """FedStar's ``aggregateResults``: per client mean and std over seeds, both averaged over clients.

    Cells without per-client rows keep the runs' mean over seeds, a NaN std
    and ``n_clients`` 0 (:func:`compare` refuses to set such a cell next to
    the paper).
    """
    keys = [*CELL_LABELS, "metric"]
    plain = _cells_over_seeds(runs, ddof)
    if clients.empty:
        plain["std"] = math.nan
        return plain
    per_client = clients.groupby([*keys, "client"], sort=False, dropna=False)["value"].agg(
        client_mean="mean", client_std=lambda v: _std(v, ddof)).reset_index()
    cells = per_client.groupby(keys, sort=False, dropna=False).agg(
        mean=("client_mean", "mean"), std=("client_std", "mean"), n_clients=("client", "nunique")).reset_index()
    by_seed = clients.groupby([*keys, "seed"], sort=False, dropna=False)["value"].mean().reset_index()
    spread = by_seed.groupby(keys, sort=False, dropna=False)["value"].agg(
        std_of_mean=lambda v: _std(v, STD_DDOF), n_seeds="count").reset_index()
    cells = cells.merge(spread, on=keys, how="left", sort=False)
    with_clients = plain.merge(cells[keys], on=keys, how="left", indicator=True)["_merge"].eq("both").to_numpy()
    without = plain[~with_clients].assign(std=math.nan)
    return pd.concat([cells, without], ignore_index=True)


def ours_cells(results: pd.DataFrame, paper: Mapping[str, Any] | str | os.PathLike[str],
               metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """Every cell of ours for ``paper``, formed by the paper's declared ``aggregation`` (per table).

    One row per label combination (:data:`CELL_LABELS`) and metric of the
    paper's rows (per-client and per-round rows are inputs, not cells),
    columns :data:`CELL_COLUMNS`: ``mean`` and ``std`` as the paper forms
    its cells, ``std_of_mean`` the population std over seeds of the
    run values (the seed noise of a cell's mean, :func:`fglcore.results.mean_standard_error`),
    ``n_seeds``, ``n_clients`` (``over_clients`` only, else 0) and ``data``
    (:func:`fglcore.compare.paper_file.data_role`). ``metrics`` restricts the metrics.
    """
    paper = paper_dict(paper)
    rows = rows_of_paper(results, paper["paper"])
    keyed = rows["metric"].str.contains("[", regex=False)
    runs = rows[~keyed]
    if metrics is not None:
        runs = runs[runs["metric"].isin(list(metrics))]
    parts = []
    for table, group in runs.groupby("table", sort=False):
        rule = aggregation_for(paper, table)
        if rule["std"] == "over_clients":
            per_client = pd.concat([client_values(rows[keyed & (rows["table"] == table)], metric)
                                    for metric in dict.fromkeys(group["metric"])], ignore_index=True)
            parts.append(_cells_over_clients(group, per_client, rule["ddof"]))
        else:
            parts.append(_cells_over_seeds(group, rule["ddof"]))
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in CELL_COLUMNS})
    cells = pd.concat(parts, ignore_index=True)
    cells["data"] = [data_role(paper, t, d, n) for t, d, n in zip(cells["table"], cells["dataset"],
                                                                   cells["num_clients"])]
    cells["n_seeds"] = cells["n_seeds"].astype(int)
    cells["n_clients"] = cells["n_clients"].fillna(0).astype(int)
    return cells[CELL_COLUMNS].reset_index(drop=True)


# ----------------------------------------------------------------------------- the paper's entries


def paper_entries(paper: Mapping[str, Any] | str | os.PathLike[str], table: str | None = None) -> pd.DataFrame:
    """The paper's reported numbers (of ``table``, if given) as a frame; ``setting`` is ``""`` where open."""
    paper = paper_dict(paper)
    entries = [e for e in paper["results"] if table is None or e["table"] == str(table)]
    if table is not None and not entries:
        tables = sorted({e["table"] for e in paper["results"]})
        raise ValueError(f"paper {paper['paper']!r} reports no results for table {table!r}; its tables: "
                         f"{', '.join(tables)}")
    frame = pd.DataFrame(entries, columns=list(paper["results"][0]) if paper["results"] else None)
    frame["setting"] = frame["setting"].fillna("").astype(str)
    return frame


def compare(
    results: pd.DataFrame, paper: Mapping[str, Any] | str | os.PathLike[str], table: str | None = None
) -> pd.DataFrame:
    """One row per paper entry (of ``table``, if given): paper's and our mean ± std, delta, tolerance, status.

    Columns :data:`COMPARISON_COLUMNS`; our cell is :func:`ours_cells`'s (the
    paper's declared aggregation). Labels an entry leaves open are filled
    from our matching rows. A cell run on a subset of the paper's setting
    (``data`` = ``subset``) gets status ``subset``: it is shown, not judged.
    Raises ``ValueError`` when an entry's rows are ambiguous (see
    :mod:`fglcore.compare`) or when an ``over_clients`` cell has no per-client rows.
    """
    paper = paper_dict(paper)
    entries = paper["results"]
    if table is not None:
        table = str(table)
        entries = [e for e in entries if e["table"] == table]
        if not entries:
            tables = sorted({e["table"] for e in paper["results"]})
            raise ValueError(
                f"paper {paper['paper']!r} reports no results for table {table!r}; its tables: {', '.join(tables)}"
            )
    rows = rows_of_paper(results, paper["paper"])
    wanted_tables = {e["table"] for e in entries}
    wanted_metrics = {e["metric"] for e in entries}
    ours = rows[rows["table"].isin(wanted_tables) & rows["metric"].isin(wanted_metrics)]
    keyed = rows[rows["table"].isin(wanted_tables) & rows["metric"].str.contains("[", regex=False)]
    cells = ours_cells(pd.concat([ours, keyed]), paper, metrics=sorted(wanted_metrics))
    cells = cells.astype({"num_clients": object})
    out = []
    for entry in entries:
        name = (
            f"paper {paper['paper']!r} entry "
            f"(table {entry['table']}, {entry['dataset']}, {entry['method']}, {entry['metric']})"
        )
        labels = {k: entry[k] for k in ("table", "dataset", "method", "metric", *OPTIONAL_LABELS)}
        matched = select(ours, labels)
        paper_std = math.nan if entry["std"] is None else entry["std"]
        row = {**labels, "paper_mean": entry["mean"], "paper_std": paper_std}
        floor = entry["tolerance"] or DEFAULT_TOLERANCE
        if matched.empty:
            row.update(data="", ours_mean=math.nan, ours_std=math.nan, ours_std_of_mean=math.nan, n_seeds=0,
                       delta=math.nan, tolerance=math.nan, status="missing")
            out.append(row)
            continue
        groups = matched[OPTIONAL_LABELS].drop_duplicates()
        if len(groups) > 1:
            raise ValueError(
                f"{name} matches {len(groups)} distinct groups of our rows "
                f"({describe_groups(matched, OPTIONAL_LABELS)}); "
                f"give the entry {', '.join(c for c in OPTIONAL_LABELS if entry[c] is None)} to pick one"
            )
        check_one_run_per_seed(matched, name)
        for column in OPTIONAL_LABELS:  # fill the labels the entry left open
            if row[column] is None:
                row[column] = groups[column].iloc[0]
        key = {c: row[c] for c in ("table", "dataset", "method", "metric", "partition", "model", "setting")}
        cell = select(cells, key)
        cell = cell[cell["num_clients"].astype(int) == int(row["num_clients"])].iloc[0]
        if paper_rule_needs_clients(paper, entry["table"]) and cell["n_clients"] == 0:
            raise ValueError(f"{name}: the paper's aggregation (over_clients) needs our per-client rows "
                             f"({entry['metric']}[client=K]); run its sweep with per_client=True")
        ours_std = float(cell["std"])
        delta = float(cell["mean"]) - entry["mean"]
        tol = tolerance(entry["std"], ours_std, floor)
        verdict = "subset" if cell["data"] == "subset" else status(delta, tol)
        row.update(data=cell["data"], ours_mean=float(cell["mean"]), ours_std=ours_std,
                   ours_std_of_mean=float(cell["std_of_mean"]), n_seeds=int(cell["n_seeds"]), delta=delta,
                   tolerance=tol, status=verdict)
        out.append(row)
    frame = pd.DataFrame(out, columns=COMPARISON_COLUMNS)
    frame["num_clients"] = pd.to_numeric(frame["num_clients"], errors="coerce").astype("Int64")
    for column in ("partition", "model", "setting"):
        frame[column] = frame[column].fillna("")
    return frame


def paper_rule_needs_clients(paper: Mapping[str, Any], table: str) -> bool:
    return aggregation_for(paper, table)["std"] == "over_clients"
