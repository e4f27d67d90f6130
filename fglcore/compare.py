"""Our results next to a paper's: reported numbers, tolerance, status and claims.

A paper's reported numbers and qualitative claims live in
``params/<paper>/paper.yaml``::

    paper: fedspray                 # required: the paper id (the rows' ``paper`` column)
    title: "..."                    # optional
    citation: "..."                 # optional
    notes: "..."                    # optional, free text
    results:                        # the paper's reported numbers, one entry per table cell
      - {table: "2", dataset: Cora, method: fedavg, metric: accuracy, mean: 80.12, std: 0.45,
         partition: louvain, num_clients: 10, model: gcn, setting: ""}
    claims:                         # its qualitative claims
      - {id: fedspray_beats_baselines, text: "FedSpray beats every baseline on overall accuracy",
         table: "2", metric: accuracy, winner: fedspray, losers: [local, fedavg], per: [dataset, model]}
    settings: {...}                 # free-form: hyperparameters and where each comes from

``results`` entries (errors name the entry and the field):

* required: ``table`` (str; a YAML number such as ``2`` is read as ``"2"``),
  ``dataset``, ``method``, ``metric`` (a metric of :mod:`fglcore.results`,
  e.g. ``accuracy`` in percent), ``mean`` (number);
* optional: ``std`` (number >= 0; omitted or null when the paper gives none),
  ``partition``, ``num_clients`` (int), ``model``, ``setting`` (str) --
  omitted (or null) means *any value*; ``setting: ""`` means "no setting";
  ``tolerance`` (number > 0, the floor of the tolerance, default 1.5 points;
  set it for metrics that are not percentages); ``note`` (free text, e.g.
  the row and column of the paper's table).

``claims`` entries:

* required: ``id`` (unique), ``text``, ``table``, ``metric``, ``winner`` and
  ``losers`` (a non-empty list). A participant is a method name, or a mapping
  ``{method: fedspray, setting: "S=0"}`` that also fixes label columns
  (``dataset``, ``partition``, ``num_clients``, ``model``, ``setting``);
* optional: ``per`` (label columns the claim is checked separately for,
  default ``[]``: once over everything), ``direction`` (``higher``, the
  default, or ``lower`` when less is better, e.g. bytes), ``beyond_noise``
  (bool, default false: the claim says "by a notable margin"), the filters
  ``dataset``, ``partition``, ``num_clients``, ``model``, ``setting``, and
  ``note``.

How the comparison is made
--------------------------
Our rows are those whose ``paper`` column is the paper's id. A paper entry
matches the rows with its table, dataset, method and metric and with each
optional label it gives. Those rows must form one group -- one value each of
``partition``, ``num_clients``, ``model`` and ``setting`` and one row per
seed -- otherwise the entry is ambiguous and :func:`compare` raises an error
naming it. Our mean ± std over seeds uses the population std
(:data:`fglcore.results.STD_DDOF`). With ``delta = ours - paper``::

    tolerance = max(1.5, 2 * sqrt(std_paper**2 + std_ours**2))     # points

and status ``match`` if ``|delta| <= tolerance``, else ``above`` / ``below``,
or ``missing`` if we have no rows for the entry.

A claim holds in a group when the winner's mean beats (strictly) every
loser's mean; it is ``None`` there when the winner or a loser has no rows.
With ``beyond_noise`` it must beat each by more than seed noise: the
margin must exceed :func:`fglcore.results.difference_noise` of the two
means' standard errors over seeds (``None`` with fewer than two seeds).
The overall row of a claim is ``False`` if it fails in any group, ``None``
if no group has all its data, and ``True`` otherwise (its detail says how
many groups were checked and how many lacked data).
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd
import yaml

from fglcore import paths
from fglcore.registry import unknown_name_message
from fglcore.results import (LABEL_COLUMNS, RESULT_COLUMNS, STD_DDOF, difference_noise, mean_standard_error,
                             write_csv_atomic)

DEFAULT_TOLERANCE = 1.5
"""Smallest tolerance, in points: seeds, library versions and hardware move results by about this much."""

OPTIONAL_LABELS = ["partition", "num_clients", "model", "setting"]
"""Label columns a paper entry may leave out (a wildcard)."""
CLAIM_GROUP_COLUMNS = ["dataset", *OPTIONAL_LABELS]
"""Label columns a claim may be checked ``per`` and a participant may fix."""

COMPARISON_COLUMNS = [
    *[c for c in LABEL_COLUMNS if c != "paper"],
    "metric",
    "paper_mean",
    "paper_std",
    "ours_mean",
    "ours_std",
    "n_seeds",
    "delta",
    "tolerance",
    "status",
]
CLAIM_COLUMNS = ["id", "text", "group", "holds", "detail"]
STATUSES = ("match", "above", "below", "missing")

TOP_LEVEL_FIELDS = ["paper", "title", "citation", "notes", "results", "claims", "settings"]
STR_OR_NUMBER = "str (a number is read as text)"
RESULT_FIELDS: dict[str, tuple[bool, str]] = {  # name -> (required, kind)
    "table": (True, STR_OR_NUMBER),
    "dataset": (True, "str"),
    "method": (True, "str"),
    "metric": (True, "str"),
    "mean": (True, "number"),
    "std": (False, "non-negative number"),
    "partition": (False, "str"),
    "num_clients": (False, "int"),
    "model": (False, "str"),
    "setting": (False, STR_OR_NUMBER),
    "tolerance": (False, "positive number"),
    "note": (False, "str"),
}
CLAIM_FIELDS: dict[str, tuple[bool, str]] = {
    "id": (True, "str"),
    "text": (True, "str"),
    "table": (True, STR_OR_NUMBER),
    "metric": (True, "str"),
    "winner": (True, "participant"),
    "losers": (True, "participants"),
    "per": (False, "label list"),
    "direction": (False, "direction"),
    "beyond_noise": (False, "bool"),
    "dataset": (False, "str"),
    "partition": (False, "str"),
    "num_clients": (False, "int"),
    "model": (False, "str"),
    "setting": (False, STR_OR_NUMBER),
    "note": (False, "str"),
}
DIRECTIONS = ("higher", "lower")


class PaperFileError(ValueError):
    """A ``paper.yaml`` does not follow the schema; the message names the entry and the field."""


# ----------------------------------------------------------------------------- paper.yaml


def paper_path(paper_id_or_path: str | os.PathLike[str]) -> Path:
    """``params/<id>/paper.yaml`` for a paper id, or the given file."""
    text = str(paper_id_or_path)
    if text.endswith((".yaml", ".yml")) or os.sep in text or "/" in text:
        return Path(text)
    return paths.params_root() / text / "paper.yaml"


def known_papers() -> list[str]:
    """Paper ids with a ``params/<id>/paper.yaml``."""
    root = paths.params_root()
    return sorted(p.parent.name for p in root.glob("*/paper.yaml")) if root.is_dir() else []


def load_paper(paper_id_or_path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and validate a paper's ``paper.yaml`` (by paper id or path)."""
    path = paper_path(paper_id_or_path)
    if not path.is_file():
        raise FileNotFoundError(
            f"no paper file {path}; papers with a paper.yaml: {', '.join(known_papers()) or 'none'}"
        )
    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    return validate_paper(data, source=str(path))


def _fail(where: str, message: str) -> PaperFileError:
    return PaperFileError(f"{where}: {message}")


def _check_field(where: str, name: str, value: Any, kind: str) -> Any:
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "str":
        if isinstance(value, str):
            return value
    elif kind == STR_OR_NUMBER:
        if isinstance(value, str):
            return value
        if is_number:
            return str(value)
    elif kind == "int":
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
        raise _fail(where, f"field {name!r} must be an int >= 1, got {value!r}")
    elif kind == "number":
        if is_number and math.isfinite(value):
            return float(value)
    elif kind == "non-negative number":
        if is_number and value >= 0:
            return float(value)
    elif kind == "positive number":
        if is_number and value > 0:
            return float(value)
    elif kind == "bool":
        if isinstance(value, bool):
            return value
    elif kind == "direction":
        if value in DIRECTIONS:
            return value
        raise _fail(where, f"field {name!r} must be one of {', '.join(DIRECTIONS)}, got {value!r}")
    elif kind == "label list":
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            for v in value:
                if v not in CLAIM_GROUP_COLUMNS:
                    unknown = unknown_name_message("label column", v, CLAIM_GROUP_COLUMNS)
                    raise _fail(where, f"field {name!r}: {unknown}")
            return list(value)
    elif kind == "participant":
        return _participant(where, name, value)
    elif kind == "participants":
        if isinstance(value, list) and value:
            return [_participant(where, f"{name}[{i}]", v) for i, v in enumerate(value)]
        raise _fail(where, f"field {name!r} must be a non-empty list of participants, got {value!r}")
    raise _fail(where, f"field {name!r} must be a {kind}, got {type(value).__name__} {value!r}")


def _participant(where: str, name: str, value: Any) -> dict[str, Any]:
    """A claim participant as ``{"method": ..., <label>: ...}``."""
    if isinstance(value, str):
        return {"method": value}
    if isinstance(value, Mapping):
        accepted = ["method", *CLAIM_GROUP_COLUMNS]
        for key in value:
            if key not in accepted:
                raise _fail(where, f"field {name!r}: {unknown_name_message('participant key', key, accepted)}")
        if not isinstance(value.get("method"), str):
            raise _fail(where, f"field {name!r} needs a 'method' (str), got {dict(value)!r}")
        spec = {"method": value["method"]}
        for key in CLAIM_GROUP_COLUMNS:
            if value.get(key) is not None:
                kind = "int" if key == "num_clients" else STR_OR_NUMBER if key == "setting" else "str"
                spec[key] = _check_field(where, f"{name}.{key}", value[key], kind)
        return spec
    raise _fail(where, f"field {name!r} must be a method name or a mapping with 'method', got {value!r}")


def _check_entry(where: str, entry: Any, fields: Mapping[str, tuple[bool, str]]) -> dict[str, Any]:
    if not isinstance(entry, Mapping):
        raise _fail(where, f"expected a mapping of fields, got {type(entry).__name__} {entry!r}")
    for key in entry:
        if key not in fields:
            raise _fail(where, unknown_name_message("field", key, list(fields)))
    clean: dict[str, Any] = {}
    for name, (required, kind) in fields.items():
        value = entry.get(name)
        if value is None:
            if required:
                raise _fail(where, f"missing required field {name!r}")
            clean[name] = None
            continue
        clean[name] = _check_field(where, name, value, kind)
    return clean


def _entry_name(source: str, index: int, entry: Any) -> str:
    if isinstance(entry, Mapping):
        label = ", ".join(str(entry[k]) for k in ("table", "dataset", "method", "metric") if entry.get(k) is not None)
        return f"{source}: results[{index}] ({label})"
    return f"{source}: results[{index}]"


def validate_paper(data: Any, source: str = "paper.yaml") -> dict[str, Any]:
    """Check a parsed ``paper.yaml`` and return it normalised.

    Every results and claims entry gets all its fields (``None`` where
    omitted); table and setting values become strings; claim participants
    become mappings with a ``method``. Raises :class:`PaperFileError`.
    Validating an already validated paper returns an equal dict.
    """
    if not isinstance(data, Mapping):
        raise PaperFileError(
            f"{source}: expected a mapping with keys {', '.join(TOP_LEVEL_FIELDS)}, got {type(data).__name__}"
        )
    for key in data:
        if key not in TOP_LEVEL_FIELDS:
            raise _fail(source, unknown_name_message("top-level key", key, TOP_LEVEL_FIELDS))
    if not isinstance(data.get("paper"), str) or not data["paper"]:
        raise _fail(source, f"'paper' must be the paper id (a non-empty str), got {data.get('paper')!r}")
    for key in ("results", "claims"):
        if data.get(key) is not None and not isinstance(data[key], list):
            raise _fail(source, f"{key!r} must be a list of entries, got {type(data[key]).__name__}")
    if data.get("settings") is not None and not isinstance(data["settings"], Mapping):
        raise _fail(source, f"'settings' must be a mapping, got {type(data['settings']).__name__}")

    results, seen = [], {}
    for i, raw in enumerate(data.get("results") or []):
        where = _entry_name(source, i, raw)
        entry = _check_entry(where, raw, RESULT_FIELDS)
        key = tuple(entry[k] for k in ("table", "dataset", "method", "metric", *OPTIONAL_LABELS))
        if key in seen:
            raise _fail(where, f"duplicates results[{seen[key]}] (same table, dataset, method, metric and labels)")
        seen[key] = i
        results.append(entry)

    claims, ids = [], {}
    for i, raw in enumerate(data.get("claims") or []):
        name = raw.get("id") if isinstance(raw, Mapping) else None
        where = f"{source}: claims[{i}]" + (f" ({name})" if name else "")
        claim = _check_entry(where, raw, CLAIM_FIELDS)
        claim["per"] = claim["per"] or []
        claim["direction"] = claim["direction"] or "higher"
        claim["beyond_noise"] = bool(claim["beyond_noise"])
        if claim["id"] in ids:
            raise _fail(where, f"id {claim['id']!r} is already used by claims[{ids[claim['id']]}]")
        ids[claim["id"]] = i
        if claim["winner"] in claim["losers"]:
            raise _fail(where, f"the winner {_participant_label(claim['winner'])} is also listed among the losers")
        claims.append(claim)

    return {
        "paper": data["paper"],
        "title": data.get("title") or "",
        "citation": data.get("citation") or "",
        "notes": data.get("notes") or "",
        "results": results,
        "claims": claims,
        "settings": dict(data.get("settings") or {}),
    }


# ----------------------------------------------------------------------------- comparison


def _paper_dict(paper: Mapping[str, Any] | str | os.PathLike[str]) -> dict[str, Any]:
    if isinstance(paper, Mapping):
        return validate_paper(paper)
    return load_paper(paper)


def _check_results(results: pd.DataFrame) -> None:
    missing = [c for c in RESULT_COLUMNS if c not in results.columns]
    if missing:
        raise ValueError(f"results frame lacks column(s) {missing}; expected the results schema {RESULT_COLUMNS}")


def _rows_of_paper(results: pd.DataFrame, paper_id: str) -> pd.DataFrame:
    _check_results(results)
    rows = results[results["paper"].astype(str) == paper_id].copy()
    for column in ("table", "dataset", "method", "metric", "partition", "model", "setting"):
        rows[column] = rows[column].fillna("").astype(str)
    return rows


def _select(rows: pd.DataFrame, filters: Mapping[str, Any]) -> pd.DataFrame:
    mask = pd.Series(True, index=rows.index)
    for column, value in filters.items():
        if value is not None:
            mask &= rows[column] == value
    return rows[mask]


def _describe_groups(rows: pd.DataFrame, columns: Sequence[str]) -> str:
    varying = [c for c in columns if rows[c].nunique(dropna=False) > 1]
    return "; ".join(f"{c} in {sorted(map(str, rows[c].unique()))}" for c in varying)


def _check_one_run_per_seed(rows: pd.DataFrame, what: str) -> None:
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


def compare(
    results: pd.DataFrame, paper: Mapping[str, Any] | str | os.PathLike[str], table: str | None = None
) -> pd.DataFrame:
    """One row per paper entry (of ``table``, if given): paper's and our mean ± std, delta, tolerance, status.

    Columns :data:`COMPARISON_COLUMNS`. Labels an entry leaves open are
    filled from our matching rows. Raises ``ValueError`` when an entry's
    rows are ambiguous (see the module docstring).
    """
    paper = _paper_dict(paper)
    entries = paper["results"]
    if table is not None:
        table = str(table)
        entries = [e for e in entries if e["table"] == table]
        if not entries:
            tables = sorted({e["table"] for e in paper["results"]})
            raise ValueError(
                f"paper {paper['paper']!r} reports no results for table {table!r}; its tables: {', '.join(tables)}"
            )
    ours = _rows_of_paper(results, paper["paper"])
    rows = []
    for entry in entries:
        name = (
            f"paper {paper['paper']!r} entry "
            f"(table {entry['table']}, {entry['dataset']}, {entry['method']}, {entry['metric']})"
        )
        labels = {k: entry[k] for k in ("table", "dataset", "method", "metric", *OPTIONAL_LABELS)}
        matched = _select(ours, labels)
        paper_std = math.nan if entry["std"] is None else entry["std"]
        row = {**labels, "paper_mean": entry["mean"], "paper_std": paper_std}
        floor = entry["tolerance"] or DEFAULT_TOLERANCE
        if matched.empty:
            row.update(
                ours_mean=math.nan, ours_std=math.nan, n_seeds=0, delta=math.nan, tolerance=math.nan, status="missing"
            )
        else:
            groups = matched[OPTIONAL_LABELS].drop_duplicates()
            if len(groups) > 1:
                raise ValueError(
                    f"{name} matches {len(groups)} distinct groups of our rows "
                    f"({_describe_groups(matched, OPTIONAL_LABELS)}); "
                    f"give the entry {', '.join(c for c in OPTIONAL_LABELS if entry[c] is None)} to pick one"
                )
            _check_one_run_per_seed(matched, name)
            values = matched["value"].astype(float)
            ours_mean, ours_std = float(values.mean()), float(values.std(ddof=STD_DDOF))
            delta = ours_mean - entry["mean"]
            tol = tolerance(entry["std"], ours_std, floor)
            for column in OPTIONAL_LABELS:  # fill the labels the entry left open
                if row[column] is None:
                    row[column] = groups[column].iloc[0]
            row.update(
                ours_mean=ours_mean,
                ours_std=ours_std,
                n_seeds=int(matched["seed"].nunique()),
                delta=delta,
                tolerance=tol,
                status=status(delta, tol),
            )
        rows.append(row)
    frame = pd.DataFrame(rows, columns=COMPARISON_COLUMNS)
    frame["num_clients"] = pd.to_numeric(frame["num_clients"], errors="coerce").astype("Int64")
    for column in ("partition", "model", "setting"):
        frame[column] = frame[column].fillna("")
    return frame


# ----------------------------------------------------------------------------- claims


def _participant_label(spec: Mapping[str, Any]) -> str:
    extra = ", ".join(f"{k}={v}" for k, v in spec.items() if k != "method")
    return f"{spec['method']} ({extra})" if extra else spec["method"]


def _group_label(per: Sequence[str], key: tuple) -> str:
    return ", ".join(f"{c}={v}" for c, v in zip(per, key)) if per else "all"


def _participant_rows(rows: pd.DataFrame, spec: Mapping[str, Any], per: Sequence[str], what: str) -> pd.DataFrame:
    """One participant's rows of a claim's group, one run per seed; empty when it has none."""
    own = _select(rows, spec)
    if own.empty:
        return own
    free = [c for c in CLAIM_GROUP_COLUMNS if c not in per and c not in spec]
    if len(own[free].drop_duplicates()) > 1:
        raise ValueError(
            f"{what}: the rows of {_participant_label(spec)} span several groups ({_describe_groups(own, free)}); "
            "add those columns to the claim's 'per' or fix them in the claim"
        )
    _check_one_run_per_seed(own, f"{what}, {_participant_label(spec)}")
    return own


def _seed_list(seeds: set) -> str:
    return f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, sorted(seeds)))}"


def _check_group(rows: pd.DataFrame, claim: Mapping[str, Any], what: str) -> tuple[bool | None, str]:
    """A claim's verdict in one group, or ``None`` with the reason when a participant lacks rows or seeds.

    Participants are compared only on the same seeds: a cell with fewer
    seeds than the others (a sweep still running) gives no verdict. A
    ``beyond_noise`` claim also needs two seeds or more, and its detail names
    the loser whose margin comes closest to the seed noise.
    """
    better = (lambda a, b: a > b) if claim["direction"] == "higher" else (lambda a, b: a < b)
    specs = [claim["winner"], *claim["losers"]]
    own = [_participant_rows(rows, spec, claim["per"], what) for spec in specs]
    absent = [_participant_label(s) for s, r in zip(specs, own) if r.empty]
    if absent:
        return None, f"no rows for {', '.join(absent)}"
    seeds = [set(r["seed"].tolist()) for r in own]
    if any(s != seeds[0] for s in seeds[1:]):
        listed = "; ".join(f"{_participant_label(spec)} {_seed_list(s)}" for spec, s in zip(specs, seeds))
        return None, f"participants ran different seeds ({listed}); compared only once all have the same seeds"
    values = [r["value"].astype(float) for r in own]
    winner, *means = [float(v.mean()) for v in values]
    losers = list(zip(claim["losers"], means))
    best_spec, best = losers[0]
    for spec, mean in losers[1:]:
        if better(mean, best):
            best_spec, best = spec, mean
    holds = all(better(winner, mean) for _, mean in losers)
    detail = f"{_participant_label(claim['winner'])} {winner:.2f} vs best loser {_participant_label(best_spec)} {best:.2f}"
    if not claim["beyond_noise"]:
        return holds, detail
    if len(seeds[0]) < 2:
        return None, f"{detail}; seed noise needs two seeds or more, got {len(seeds[0])}"
    holds, closest = _beyond_noise(values, claim["losers"], claim["direction"])
    return holds, f"{detail}; smallest margin over noise: {closest}"


def _beyond_noise(values: Sequence[pd.Series], losers: Sequence[Mapping[str, Any]], direction: str) -> tuple[bool, str]:
    """Whether the winner (``values[0]``, one value per seed) beats each loser by more than the seed noise of the
    difference of their means, and the margin that comes closest to its noise."""
    errors = [mean_standard_error(float(v.std(ddof=STD_DDOF)), len(v)) for v in values]
    sign = 1.0 if direction == "higher" else -1.0
    winner = float(values[0].mean())
    margins = [(spec, sign * (winner - float(v.mean())), difference_noise(errors[0], error))
               for spec, v, error in zip(losers, values[1:], errors[1:])]
    spec, margin, noise = min(margins, key=lambda m: m[1] - m[2])
    closest = f"{_participant_label(spec)} by {margin:.2f} {'>' if margin > noise else '<='} noise {noise:.2f}"
    return all(m > n for _, m, n in margins), closest


def check_claims(results: pd.DataFrame, paper: Mapping[str, Any] | str | os.PathLike[str]) -> pd.DataFrame:
    """Whether each of the paper's claims holds on our results.

    One row per claim and group of its ``per`` columns, then one row with
    group ``overall``; columns :data:`CLAIM_COLUMNS`. ``holds`` is ``True``,
    ``False`` or ``None`` (data missing: a participant without rows,
    participants with different seeds, or one seed for a ``beyond_noise``
    claim); ``detail`` gives the numbers.
    """
    paper = _paper_dict(paper)
    ours = _rows_of_paper(results, paper["paper"])
    out = []
    for claim in paper["claims"]:
        what = f"paper {paper['paper']!r} claim {claim['id']!r}"
        filters = {"table": claim["table"], "metric": claim["metric"], **{c: claim[c] for c in CLAIM_GROUP_COLUMNS}}
        rows = _select(ours, filters)
        participants = [claim["winner"], *claim["losers"]]
        involved = pd.concat([_select(rows, spec) for spec in participants])
        per = claim["per"]
        if involved.empty:
            detail = f"no rows for table {claim['table']}, metric {claim['metric']}"
            out.append((claim["id"], claim["text"], "overall", None, detail))
            continue
        keys = [()] if not per else list(involved[per].drop_duplicates().itertuples(index=False, name=None))
        verdicts = []
        for key in keys:
            group_rows = _select(rows, dict(zip(per, key)))
            holds, detail = _check_group(group_rows, claim, f"{what}, group {_group_label(per, key)}")
            verdicts.append(holds)
            out.append((claim["id"], claim["text"], _group_label(per, key), holds, detail))
        checked = [v for v in verdicts if v is not None]
        lacking = len(verdicts) - len(checked)
        if not checked:
            overall = None
        else:
            overall = all(checked)
        detail = f"holds in {sum(checked)} of {len(checked)} groups with data"
        if lacking:
            detail += f"; {lacking} group{'s' if lacking > 1 else ''} without data"
        out.append((claim["id"], claim["text"], "overall", overall, detail))
    frame = pd.DataFrame(out, columns=CLAIM_COLUMNS)
    frame["holds"] = frame["holds"].astype(object)
    return frame


# ----------------------------------------------------------------------------- display and files


def _mean_std(mean: float, std: float) -> str:
    if pd.isna(mean):
        return "—"
    return f"{mean:.2f}" if pd.isna(std) else f"{mean:.2f} ± {std:.2f}"


def format_table(comparison: pd.DataFrame) -> pd.DataFrame:
    """A display version of :func:`compare`'s frame: ``paper`` and ``ours`` as "83.12 ± 0.41", signed delta.

    Label columns that are empty in every row are dropped.
    """
    labels = ["table", "dataset", "partition", "num_clients", "method", "model", "setting", "metric"]
    always = ("table", "dataset", "method", "metric")
    keep = [c for c in labels if c in always or (comparison[c].notna() & comparison[c].astype(str).ne("")).any()]
    table = comparison[keep].astype(object).where(comparison[keep].notna(), "")
    table["paper"] = [_mean_std(m, s) for m, s in zip(comparison["paper_mean"], comparison["paper_std"])]
    table["ours"] = [_mean_std(m, s) for m, s in zip(comparison["ours_mean"], comparison["ours_std"])]
    table["n_seeds"] = comparison["n_seeds"]
    table["delta"] = ["—" if pd.isna(d) else f"{d:+.2f}" for d in comparison["delta"]]
    table["status"] = comparison["status"]
    return table.reset_index(drop=True)


def write_report(
    out_dir: str | os.PathLike[str], results: pd.DataFrame, paper: Mapping[str, Any] | str | os.PathLike[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Write ``comparison.csv`` and ``claims.csv`` into ``out_dir``; return both frames."""
    paper = _paper_dict(paper)
    comparison = compare(results, paper)
    claims = check_claims(results, paper)
    out_dir = Path(out_dir)
    write_csv_atomic(comparison, out_dir / "comparison.csv")
    write_csv_atomic(claims, out_dir / "claims.csv")
    return comparison, claims


COMPARISON_NUMBERS = [
    "num_clients", "paper_mean", "paper_std", "ours_mean", "ours_std", "n_seeds", "delta", "tolerance"
]


def _read_report(path: Path, kind: str, paper: str) -> pd.DataFrame:
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    if kind == "result":
        for column in COMPARISON_NUMBERS:
            frame[column] = pd.to_numeric(frame[column], errors="coerce")
        for column in ("num_clients", "n_seeds"):
            frame[column] = frame[column].astype("Int64")
    else:
        frame["holds"] = frame["holds"].map({"True": True, "False": False}).astype(object)
        frame.loc[frame["holds"].isna(), "holds"] = None
    frame.insert(0, "kind", kind)
    frame.insert(0, "paper", paper)
    return frame


def summary_counts(summary: pd.DataFrame) -> pd.DataFrame:
    """Per paper: table entries by status, and claims (overall rows) holding, failing and without data."""
    rows = []
    for paper in dict.fromkeys(summary["paper"]):
        mine = summary[summary["paper"] == paper]
        statuses = mine.loc[mine["kind"] == "result", "status"]
        overall = mine.loc[(mine["kind"] == "claim") & (mine["group"] == "overall"), "holds"]
        rows.append(
            {
                "paper": paper,
                "entries": len(statuses),
                **{s: int((statuses == s).sum()) for s in STATUSES},
                "claims": len(overall),
                "claims_hold": int((overall == True).sum()),  # noqa: E712 -- object column of True/False/None
                "claims_fail": int((overall == False).sum()),  # noqa: E712
                "claims_no_data": int(overall.isna().sum()),
            }
        )
    return pd.DataFrame(
        rows, columns=["paper", "entries", *STATUSES, "claims", "claims_hold", "claims_fail", "claims_no_data"]
    )


def _markdown_table(frame: pd.DataFrame) -> str:
    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def build_summary(profile_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """Gather every ``<profile_dir>/<paper>/comparison.csv`` and ``claims.csv``.

    Writes ``summary.csv`` (all rows, with ``paper`` = the folder name and
    ``kind`` = ``result`` for comparison rows or ``claim`` for claim rows)
    and ``summary.md`` (per paper: entries by status and claims holding,
    then the claims that fail) into ``profile_dir``; returns the frame of
    ``summary.csv``.
    """
    profile_dir = Path(profile_dir)
    if not profile_dir.is_dir():
        raise FileNotFoundError(f"no outputs folder {profile_dir}; run the notebooks of this profile first")
    parts = []
    for folder in sorted(p for p in profile_dir.iterdir() if p.is_dir()):
        for name, kind in (("comparison.csv", "result"), ("claims.csv", "claim")):
            if (folder / name).is_file():
                parts.append(_read_report(folder / name, kind, folder.name))
    columns = ["paper", "kind", *COMPARISON_COLUMNS, *CLAIM_COLUMNS]
    summary = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)
    summary = summary.reindex(columns=columns)
    write_csv_atomic(summary, profile_dir / "summary.csv")

    lines = [f"# Results summary: {profile_dir.name}", ""]
    if summary.empty:
        lines.append("No comparison.csv or claims.csv found.")
    else:
        lines += [
            "Table entries by status (match: within tolerance of the paper) and the papers' claims.",
            "",
            _markdown_table(summary_counts(summary)),
        ]
        is_group = (summary["kind"] == "claim") & (summary["group"] != "overall")
        failing = summary[is_group & (summary["holds"] == False)]  # noqa: E712 -- True/False/None column
        if not failing.empty:
            lines += ["", "## Claims that do not hold", ""]
            lines += [f"- {r.paper} `{r.id}` ({r.group}): {r.detail}" for r in failing.itertuples(index=False)]
    text = "\n".join(lines) + "\n"
    target = profile_dir / "summary.md"
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)
    return summary
