"""Showing and writing a comparison: the one mean ± std formatter, paper-shaped tables, report files, summary."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from fglcore.compare.cells import COMPARISON_COLUMNS, STATUSES, compare
from fglcore.compare.paper_file import paper_dict
from fglcore.compare.verdicts import CLAIM_COLUMNS, check_claims
from fglcore.files import write_csv_atomic
from fglcore.results import ResultStore

NO_VALUE = "—"


def format_mean_std(mean: float | None, std: float | None = None, digits: int = 2) -> str:
    """``"75.38 ± 2.26"``; ``"75.38"`` without a std; ``"—"`` without a mean. The one formatter of a cell."""
    if mean is None or pd.isna(mean):
        return NO_VALUE
    if std is None or pd.isna(std):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def format_delta(delta: float | None) -> str:
    """``"+3.29"``, ``"-0.12"``; ``"—"`` without a delta."""
    return NO_VALUE if delta is None or pd.isna(delta) else f"{delta:+.2f}"


def format_table(comparison: pd.DataFrame) -> pd.DataFrame:
    """A display version of :func:`compare`'s frame: ``paper`` and ``ours`` as "83.12 ± 0.41", signed delta.

    Label columns that are empty in every row are dropped.
    """
    labels = ["table", "dataset", "partition", "num_clients", "method", "model", "setting", "metric"]
    always = ("table", "dataset", "method", "metric")
    keep = [c for c in labels if c in always or (comparison[c].notna() & comparison[c].astype(str).ne("")).any()]
    table = comparison[keep].astype(object).where(comparison[keep].notna(), "")
    table["data"] = comparison["data"]
    table["paper"] = [format_mean_std(m, s) for m, s in zip(comparison["paper_mean"], comparison["paper_std"])]
    table["ours"] = [format_mean_std(m, s) for m, s in zip(comparison["ours_mean"], comparison["ours_std"])]
    table["n_seeds"] = comparison["n_seeds"]
    table["delta"] = [format_delta(d) for d in comparison["delta"]]
    table["status"] = comparison["status"]
    return table.reset_index(drop=True)


def _two_levels(columns: pd.Index) -> pd.MultiIndex:
    """``(column, field)`` tuples as a MultiIndex; empty when there is no cell (a preview)."""
    return pd.MultiIndex.from_tuples(columns) if len(columns) else pd.MultiIndex.from_arrays([[], []])


def side_by_side(comparison: pd.DataFrame, rows: str | Sequence[str] = "method", columns: str = "dataset",
                 row_labels: Mapping[Any, str] | None = None,
                 column_labels: Mapping[Any, str] | None = None) -> pd.DataFrame:
    """A paper-shaped table of a :func:`compare` frame: per ``columns`` value "paper", "ours", "Δ" and status.

    One row per value of ``rows`` (one column name or several, which make a
    MultiIndex), in the order first seen; ``row_labels`` and
    ``column_labels`` rename values (e.g. ``{"fedstar": "FedStar"}``).
    """
    rows = [rows] if isinstance(rows, str) else list(rows)
    row_labels = dict(row_labels or {})
    column_labels = dict(column_labels or {})
    out: dict[Any, dict] = {}
    for _, r in comparison.iterrows():
        key = tuple(row_labels.get(r[c], str(r[c])) for c in rows)
        col = column_labels.get(r[columns], str(r[columns]))
        cell = out.setdefault(key if len(rows) > 1 else key[0], {})
        cell[(col, "paper")] = format_mean_std(r["paper_mean"], r["paper_std"])
        cell[(col, "ours")] = format_mean_std(r["ours_mean"], r["ours_std"])
        cell[(col, "Δ")] = format_delta(r["delta"])
        cell[(col, "status")] = r["status"]
    frame = pd.DataFrame.from_dict(out, orient="index")
    frame.columns = _two_levels(frame.columns)
    if len(rows) > 1 and len(frame):
        frame.index = pd.MultiIndex.from_tuples(frame.index, names=rows)
    else:
        frame.index.name = rows[0]
    return frame


# ----------------------------------------------------------------------------- report files


def write_report(
    out_dir: str | os.PathLike[str], results: pd.DataFrame, paper: Mapping[str, Any] | str | os.PathLike[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Write ``comparison.csv`` and ``claims.csv`` into ``out_dir``; return both frames."""
    paper = paper_dict(paper)
    comparison = compare(results, paper)
    claims = check_claims(results, paper)
    out_dir = Path(out_dir)
    write_csv_atomic(comparison, out_dir / "comparison.csv")
    write_csv_atomic(claims, out_dir / "claims.csv")
    return comparison, claims


def rebuild_report(out_dir: str | os.PathLike[str],
                   paper: Mapping[str, Any] | str | os.PathLike[str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rewrite ``comparison.csv`` and ``claims.csv`` of ``out_dir`` from its ``results.csv`` (nothing is run).

    ``paper`` defaults to the folder's name (``outputs/full/fedstar`` -> ``fedstar``).
    """
    out_dir = Path(out_dir)
    store = out_dir / "results.csv"
    if not store.is_file():
        raise FileNotFoundError(f"no {store}: run the paper's notebooks under this profile first")
    return write_report(out_dir, ResultStore(store).read(), out_dir.name if paper is None else paper)


COMPARISON_NUMBERS = [
    "num_clients", "paper_mean", "paper_std", "ours_mean", "ours_std", "ours_std_of_mean", "n_seeds", "delta",
    "tolerance",
]


def _read_report(path: Path, kind: str, paper: str) -> pd.DataFrame:
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    if kind == "result":
        for column in COMPARISON_NUMBERS:
            if column in frame:
                frame[column] = pd.to_numeric(frame[column], errors="coerce")
        for column in ("num_clients", "n_seeds"):
            frame[column] = frame[column].astype("Int64")
    else:
        frame["holds"] = frame["holds"].map({"True": True, "False": False}).astype(object)
        frame.loc[frame["holds"].isna(), "holds"] = None
    frame.insert(0, "kind", kind)
    frame.insert(0, "paper", paper)
    return frame


SUMMARY_COUNT_COLUMNS = ["paper", "entries", *STATUSES, "claims", "claims_hold", "claims_fail", "claims_no_data",
                         "claims_not_judged", "claims_on_stand_ins"]


def summary_counts(summary: pd.DataFrame) -> pd.DataFrame:
    """Per paper: table entries by status, and claims (overall rows) holding, failing, without data and not judged.

    ``claims_not_judged`` counts claims with no group on the paper's data (or a
    stand-in); ``claims_on_stand_ins`` the judged claims whose verdict rests,
    at least in part, on stand-ins.
    """
    rows = []
    for paper in dict.fromkeys(summary["paper"]):
        mine = summary[summary["paper"] == paper]
        statuses = mine.loc[mine["kind"] == "result", "status"]
        overall = mine[(mine["kind"] == "claim") & (mine["group"] == "overall")]
        data = overall["data"].astype(object).fillna("").astype(str)
        not_judged = data.isin(["subset", "other", "subset+other"])
        holds = overall["holds"]
        rows.append(
            {
                "paper": paper,
                "entries": len(statuses),
                **{s: int((statuses == s).sum()) for s in STATUSES},
                "claims": len(overall),
                "claims_hold": int((holds == True).sum()),  # noqa: E712 -- object column of True/False/None
                "claims_fail": int((holds == False).sum()),  # noqa: E712
                "claims_no_data": int((holds.isna() & ~not_judged).sum()),
                "claims_not_judged": int(not_judged.sum()),
                "claims_on_stand_ins": int((holds.notna() & data.str.contains("stand-in")).sum()),
            }
        )
    return pd.DataFrame(rows, columns=SUMMARY_COUNT_COLUMNS)


def _markdown_table(frame: pd.DataFrame) -> str:
    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def build_summary(profile_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """Gather every ``<profile_dir>/<paper>/comparison.csv`` and ``claims.csv``.

    Writes ``summary.csv`` (all rows, with ``paper`` = the folder name and
    ``kind`` = ``result`` for comparison rows or ``claim`` for claim rows)
    and ``summary.md`` (per paper: entries by status and claims holding,
    then the claims that fail on the paper's data or a stand-in, each marked
    with its data; claims not judged are counted, never listed as failing)
    into ``profile_dir``; returns the frame of ``summary.csv``.
    """
    profile_dir = Path(profile_dir)
    if not profile_dir.is_dir():
        raise FileNotFoundError(f"no outputs folder {profile_dir}; run the notebooks of this profile first")
    parts = []
    for folder in sorted(p for p in profile_dir.iterdir() if p.is_dir()):
        for name, kind in (("comparison.csv", "result"), ("claims.csv", "claim")):
            if (folder / name).is_file():
                parts.append(_read_report(folder / name, kind, folder.name))
    columns = ["paper", "kind", *COMPARISON_COLUMNS, *[c for c in CLAIM_COLUMNS if c not in COMPARISON_COLUMNS]]
    summary = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)
    summary = summary.reindex(columns=columns)
    write_csv_atomic(summary, profile_dir / "summary.csv")

    lines = [f"# Results summary: {profile_dir.name}", ""]
    if summary.empty:
        lines.append("No comparison.csv or claims.csv found.")
    else:
        lines += [
            "Table entries by status (match: within tolerance of the paper; subset: run on part of the paper's "
            "setting, not judged) and the papers' claims, judged only on the paper's data or a declared stand-in "
            "(claims_on_stand_ins: verdicts that rest on stand-ins).",
            "",
            _markdown_table(summary_counts(summary)),
        ]
        is_group = (summary["kind"] == "claim") & (summary["group"] != "overall")
        failing = summary[is_group & (summary["holds"] == False)]  # noqa: E712 -- True/False/None column
        if not failing.empty:
            lines += ["", "## Claims that do not hold", ""]
            lines += [f"- {r.paper} `{r.id}` ({r.group}; {r.data}): {r.detail}" for r in failing.itertuples(index=False)]
    text = "\n".join(lines) + "\n"
    target = profile_dir / "summary.md"
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)
    return summary
