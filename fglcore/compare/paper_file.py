"""``params/<paper>/paper.yaml``: reading and validating a paper's numbers, data, aggregation and claims.

The schema is described in :mod:`fglcore.compare`; every error names the
file, the entry and the field, and what is accepted.
"""
from __future__ import annotations

import copy
import functools
import math
import os
from pathlib import Path
from typing import Any, Mapping

import yaml

from fglcore import paths
from fglcore.registry import unknown_name_message

OPTIONAL_LABELS = ["partition", "num_clients", "model", "setting"]
"""Label columns a paper entry may leave out (a wildcard)."""
CLAIM_GROUP_COLUMNS = ["dataset", *OPTIONAL_LABELS]
"""Label columns a claim may be checked ``per`` and a participant may fix."""

TOP_LEVEL_FIELDS = ["paper", "title", "citation", "notes", "datasets", "stand_ins", "aggregation", "results",
                    "claims", "settings"]
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
DATASET_FIELDS: dict[str, tuple[bool, str]] = {
    "dataset": (True, "str"),
    "num_clients": (False, "client counts"),
    "tables": (False, "table list"),
    "note": (False, "str"),
}
STAND_IN_FIELDS: dict[str, tuple[bool, str]] = {
    "dataset": (True, "str"),
    "for": (True, "str"),
    "num_clients": (False, "client counts"),
    "tables": (False, "table list"),
    "note": (False, "str"),
}
DIRECTIONS = ("higher", "lower")

AGGREGATIONS = ("over_seeds", "over_clients")
"""How our cell's std is formed (``aggregation: {std: ...}``):

* ``over_seeds``: mean and std over seeds of each run's value of the metric
  (the run's own average over clients, pooled or client-averaged as its
  config says);
* ``over_clients``: from the runs' per-client rows (``metric[client=K]``):
  the mean over clients of each client's mean over seeds, "±" the mean over
  clients of each client's std over seeds (FedStar's ``aggregateResults``).
"""
AGGREGATION_FIELDS = ("std", "ddof")
DEFAULT_AGGREGATION = {"std": "over_seeds", "ddof": 0}
"""Without an ``aggregation`` block: population std over seeds of the run values
(:data:`fglcore.results.STD_DDOF`)."""


class PaperFileError(ValueError):
    """A ``paper.yaml`` does not follow the schema; the message names the entry and the field."""


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
    """Read and validate a paper's ``paper.yaml`` (by paper id or path); a copy the caller may change.

    A file is parsed once per process while it is unchanged (a plan asks for its paper dozens of times;
    O-pFGL's file took seconds to parse each time).
    """
    path = paper_path(paper_id_or_path)
    if not path.is_file():
        raise FileNotFoundError(
            f"no paper file {path}; papers with a paper.yaml: {', '.join(known_papers()) or 'none'}"
        )
    stat = path.stat()
    return copy.deepcopy(_read_paper(str(path), stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=16)
def _read_paper(path: str, mtime_ns: int, size: int) -> dict[str, Any]:
    """The validated content of ``path`` as it was at ``mtime_ns`` and ``size`` (the cache's key)."""
    with open(path, encoding="utf-8") as f:
        data = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml when built with it
    return validate_paper(data, source=path)


def paper_dict(paper: Mapping[str, Any] | str | os.PathLike[str]) -> dict[str, Any]:
    """A validated paper from a mapping (validated again, cheap) or a paper id / path (loaded)."""
    if isinstance(paper, Mapping):
        return validate_paper(paper)
    return load_paper(paper)


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
    elif kind == "client counts":  # an int >= 1 or a non-empty list of them, normalised to a list
        counts = value if isinstance(value, list) else [value]
        if counts and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in counts):
            return list(counts)
        raise _fail(where, f"field {name!r} must be an int >= 1 or a list of them, got {value!r}")
    elif kind == "table list":
        if isinstance(value, list) and value and all(isinstance(v, (str, int, float)) and not isinstance(v, bool)
                                                     for v in value):
            return [str(v) for v in value]
        raise _fail(where, f"field {name!r} must be a non-empty list of table ids, got {value!r}")
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


def participant_label(spec: Mapping[str, Any]) -> str:
    """``fedspray`` or ``fedspray (setting=code)``: a claim participant as text."""
    extra = ", ".join(f"{k}={v}" for k, v in spec.items() if k != "method")
    return f"{spec['method']} ({extra})" if extra else spec["method"]


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


def _check_aggregation(where: str, value: Any) -> dict[str, Any]:
    """One aggregation rule: ``{std: over_seeds|over_clients, ddof: 0|1}`` (each key optional)."""
    if not isinstance(value, Mapping):
        raise _fail(where, f"expected a mapping with keys {', '.join(AGGREGATION_FIELDS)}, got {value!r}")
    for key in value:
        if key not in AGGREGATION_FIELDS:
            raise _fail(where, unknown_name_message("aggregation key", key, list(AGGREGATION_FIELDS)))
    rule = dict(DEFAULT_AGGREGATION)
    if value.get("std") is not None:
        if value["std"] not in AGGREGATIONS:
            raise _fail(where, f"'std' must be one of {', '.join(AGGREGATIONS)}, got {value['std']!r}")
        rule["std"] = value["std"]
    if value.get("ddof") is not None:
        if value["ddof"] not in (0, 1) or isinstance(value["ddof"], bool):
            raise _fail(where, f"'ddof' must be 0 (population std) or 1 (sample std), got {value['ddof']!r}")
        rule["ddof"] = int(value["ddof"])
    return rule


def _aggregation_block(source: str, value: Any) -> dict[str, Any]:
    where = f"{source}: aggregation"
    if value is None:
        return {**DEFAULT_AGGREGATION, "tables": {}}
    if not isinstance(value, Mapping):
        raise _fail(where, f"expected a mapping with keys std, ddof, tables, got {type(value).__name__}")
    rule = _check_aggregation(where, {k: v for k, v in value.items() if k != "tables"})
    tables = value.get("tables") or {}
    if not isinstance(tables, Mapping):
        raise _fail(where, f"'tables' must map a table id to {{std, ddof}}, got {tables!r}")
    per_table = {}
    for table, override in tables.items():
        per_table[str(table)] = _check_aggregation(f"{where}.tables[{table!r}]", {**{k: rule[k] for k in rule},
                                                                                   **(override or {})})
    return {**rule, "tables": per_table}


def _data_entries(source: str, key: str, value: Any, fields: Mapping[str, tuple[bool, str]]) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _fail(source, f"{key!r} must be a list of entries, got {type(value).__name__}")
    entries = []
    for i, raw in enumerate(value):
        where = f"{source}: {key}[{i}]"
        if isinstance(raw, str) and key == "datasets":
            raw = {"dataset": raw}
        entries.append(_check_entry(where, raw, fields))
    return entries


def validate_paper(data: Any, source: str = "paper.yaml") -> dict[str, Any]:
    """Check a parsed ``paper.yaml`` and return it normalised.

    Every results, claims, datasets and stand-ins entry gets all its fields
    (``None`` where omitted); table and setting values become strings;
    claim participants become mappings with a ``method``; ``aggregation``
    gets its defaults. Raises :class:`PaperFileError`. Validating an
    already validated paper returns an equal dict.
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
    datasets = _data_entries(source, "datasets", data.get("datasets"), DATASET_FIELDS)
    stand_ins = _data_entries(source, "stand_ins", data.get("stand_ins"), STAND_IN_FIELDS)
    if data.get("claims") and not datasets:
        raise _fail(source, "'datasets' must list the paper's datasets: its claims are judged only on them "
                            "(and on the 'stand_ins' it names)")

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
            raise _fail(where, f"the winner {participant_label(claim['winner'])} is also listed among the losers")
        claims.append(claim)

    return {
        "paper": data["paper"],
        "title": data.get("title") or "",
        "citation": data.get("citation") or "",
        "notes": data.get("notes") or "",
        "datasets": datasets,
        "stand_ins": stand_ins,
        "aggregation": _aggregation_block(source, data.get("aggregation")),
        "results": results,
        "claims": claims,
        "settings": dict(data.get("settings") or {}),
    }


def aggregation_for(paper: Mapping[str, Any], table: str) -> dict[str, Any]:
    """The aggregation rule (``{"std": ..., "ddof": ...}``) of ``table`` in a validated paper."""
    block = paper["aggregation"]
    return dict(block["tables"].get(str(table), {"std": block["std"], "ddof": block["ddof"]}))


DATA_ROLES = ("paper", "stand-in", "subset", "other")
"""What data a row of ours ran on, for a paper (:func:`data_role`)."""
JUDGED_ROLES = ("paper", "stand-in")
"""Roles on which the paper's claims are judged and its numbers compared as such."""


def data_role(paper: Mapping[str, Any], table: str, dataset: str, num_clients: Any) -> str:
    """``paper``, ``stand-in``, ``subset`` or ``other``: what ``dataset`` (with ``num_clients``) is to the paper.

    * ``paper``: one of the paper's ``datasets`` (that applies to ``table``
      and has the paper's number of clients, where the entry gives one), or
      a dataset the paper reports numbers on in ``table``;
    * ``stand-in``: a ``stand_ins`` entry that applies (its tables, its
      number of clients);
    * ``subset``: a paper dataset run with another number of clients than the
      paper's (e.g. a FedStar setting on some of its members), and no stand-in
      entry names that run;
    * ``other``: anything else (a user's own graph): the paper's claims are
      not judged on it.
    """
    table = str(table)
    try:
        clients = None if num_clients is None or num_clients != num_clients else int(num_clients)
    except (TypeError, ValueError):
        clients = None

    def applies(entry: Mapping[str, Any]) -> bool:
        if entry["dataset"] != dataset:
            return False
        return entry["tables"] is None or table in entry["tables"]

    def same_clients(entry: Mapping[str, Any]) -> bool:
        return entry["num_clients"] is None or clients in entry["num_clients"]

    own = [e for e in paper["datasets"] if applies(e)]
    if any(same_clients(e) for e in own):
        return "paper"
    if not own and any(e["table"] == table and e["dataset"] == dataset for e in paper["results"]):
        return "paper"
    if any(applies(s) and same_clients(s) for s in paper["stand_ins"]):
        return "stand-in"
    if own:
        return "subset"
    return "other"


def paper_clients(paper: Mapping[str, Any], table: str, dataset: str) -> list[int] | None:
    """The paper's numbers of clients for ``dataset`` in ``table`` (from ``datasets``, sorted), or ``None``."""
    counts = {n for entry in paper["datasets"]
              if entry["dataset"] == dataset and (entry["tables"] is None or str(table) in entry["tables"])
              for n in entry["num_clients"] or []}
    return sorted(counts) or None
