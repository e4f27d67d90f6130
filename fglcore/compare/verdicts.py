"""Whether a paper's claims (``paper.yaml`` ``claims``) hold on our results, judged on the paper's data only.

:func:`check_claims` gives one row per claim and group plus an ``overall``
row; :func:`claims_table` turns that into one line per claim for the
notebooks ("holds in 3 of 4 (per dataset)"). The rules are in
:mod:`fglcore.compare`.
"""
from __future__ import annotations

import math
import os
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from fglcore.compare.cells import check_one_run_per_seed, describe_groups, rows_of_paper, select
from fglcore.compare.paper_file import (CLAIM_GROUP_COLUMNS, JUDGED_ROLES, data_role, paper_clients, paper_dict,
                                        participant_label)
from fglcore.results import STD_DDOF, difference_noise, mean_standard_error

CLAIM_COLUMNS = ["id", "text", "table", "group", "data", "holds", "margin", "noise", "detail"]
"""Columns of :func:`check_claims` (``claims.csv``)."""
CLAIMS_TABLE_COLUMNS = ["id", "claim", "verdict", "data"]
"""Columns of :func:`claims_table`."""


def _group_label(per: Sequence[str], key: tuple) -> str:
    return ", ".join(f"{c}={v}" for c, v in zip(per, key)) if per else "all"


def _participant_rows(rows: pd.DataFrame, spec: Mapping[str, Any], per: Sequence[str], what: str) -> pd.DataFrame:
    """One participant's rows of a claim's group, one run per seed; empty when it has none."""
    own = select(rows, spec)
    if own.empty:
        return own
    free = [c for c in CLAIM_GROUP_COLUMNS if c not in per and c not in spec]
    if len(own[free].drop_duplicates()) > 1:
        raise ValueError(
            f"{what}: the rows of {participant_label(spec)} span several groups ({describe_groups(own, free)}); "
            "add those columns to the claim's 'per' or fix them in the claim"
        )
    check_one_run_per_seed(own, f"{what}, {participant_label(spec)}")
    return own


def _seed_list(seeds: set) -> str:
    return f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, sorted(seeds)))}"


def _check_group(rows: pd.DataFrame, claim: Mapping[str, Any], what: str) -> tuple[bool | None, str, float, float]:
    """A claim's verdict in one group, or ``None`` with the reason when a participant lacks rows or seeds.

    Also the ``margin`` of the winner over the best loser (positive: the
    winner is better) and the seed ``noise`` of that difference (NaN with one
    seed or without data).

    Participants are compared only on the same seeds: a cell with fewer
    seeds than the others (a sweep still running) gives no verdict. With
    two seeds or more the detail names the loser whose margin comes closest
    to the seed noise; a ``beyond_noise`` claim holds only where every
    margin exceeds it (and needs two seeds).
    """
    better = (lambda a, b: a > b) if claim["direction"] == "higher" else (lambda a, b: a < b)
    specs = [claim["winner"], *claim["losers"]]
    own = [_participant_rows(rows, spec, claim["per"], what) for spec in specs]
    absent = [participant_label(s) for s, r in zip(specs, own) if r.empty]
    if absent:
        return None, f"no rows for {', '.join(absent)}", math.nan, math.nan
    seeds = [set(r["seed"].tolist()) for r in own]
    if any(s != seeds[0] for s in seeds[1:]):
        listed = "; ".join(f"{participant_label(spec)} {_seed_list(s)}" for spec, s in zip(specs, seeds))
        return (None, f"participants ran different seeds ({listed}); compared only once all have the same seeds",
                math.nan, math.nan)
    values = [r["value"].astype(float) for r in own]
    winner, *means = [float(v.mean()) for v in values]
    losers = list(zip(claim["losers"], means))
    best_index = 0
    for i, (_, mean) in enumerate(losers):
        if better(mean, losers[best_index][1]):
            best_index = i
    best_spec, best = losers[best_index]
    holds = all(better(winner, mean) for _, mean in losers)
    margin = (winner - best) * (1.0 if claim["direction"] == "higher" else -1.0)
    noise = difference_noise(*(mean_standard_error(float(v.std(ddof=STD_DDOF)), len(v))
                               for v in (values[0], values[1 + best_index])))
    detail = f"{participant_label(claim['winner'])} {winner:.2f} vs best loser {participant_label(best_spec)} {best:.2f}"
    if len(seeds[0]) < 2:
        if claim["beyond_noise"]:
            return None, f"{detail}; seed noise needs two seeds or more, got {len(seeds[0])}", margin, noise
        return holds, detail, margin, noise
    beyond, closest = _beyond_noise(values, claim["losers"], claim["direction"])
    verdict = beyond if claim["beyond_noise"] else holds
    return verdict, f"{detail}; smallest margin over noise: {closest}", margin, noise


def _beyond_noise(values: Sequence[pd.Series], losers: Sequence[Mapping[str, Any]], direction: str) -> tuple[bool, str]:
    """Whether the winner (``values[0]``, one value per seed) beats each loser by more than the seed noise of the
    difference of their means, and the margin that comes closest to its noise."""
    errors = [mean_standard_error(float(v.std(ddof=STD_DDOF)), len(v)) for v in values]
    sign = 1.0 if direction == "higher" else -1.0
    winner = float(values[0].mean())
    margins = [(spec, sign * (winner - float(v.mean())), difference_noise(errors[0], error))
               for spec, v, error in zip(losers, values[1:], errors[1:])]
    spec, margin, noise = min(margins, key=lambda m: m[1] - m[2])
    closest = f"{participant_label(spec)} by {margin:.2f} {'>' if margin > noise else '<='} noise {noise:.2f}"
    return all(m > n for _, m, n in margins), closest


def _keys(rows: pd.DataFrame, per: Sequence[str]) -> list[tuple]:
    if rows.empty:
        return []
    return [()] if not per else list(rows[per].drop_duplicates().itertuples(index=False, name=None))


def _judged_data(roles: Iterable[str]) -> str:
    roles = set(roles)
    return "stand-in" if "stand-in" in roles else "paper"


def _not_judged(paper: Mapping[str, Any], rows: pd.DataFrame) -> tuple[str, str]:
    """The data label (``subset``, ``other`` or ``subset+other``) and why rows off the paper's data are not judged."""
    labels, reasons = [], []
    subset = rows[rows["data"] == "subset"]
    if not subset.empty:
        parts = []
        for r in subset[["table", "dataset", "num_clients"]].drop_duplicates().itertuples(index=False):
            whole = paper_clients(paper, r.table, r.dataset)
            parts.append(f"{r.dataset} on {r.num_clients} clients"
                         + (f", the paper's {', '.join(map(str, whole))}" if whole else ""))
        labels.append("subset")
        reasons.append(f"a subset of the paper's setting ({'; '.join(parts)})")
    other = rows[rows["data"] != "subset"]
    if not other.empty:
        labels.append("other")
        reasons.append(f"not the paper's data ({', '.join(sorted(map(str, other['dataset'].unique())))})")
    return "+".join(labels), "not judged: " + "; ".join(reasons)


def check_claims(results: pd.DataFrame, paper: Mapping[str, Any] | str | os.PathLike[str],
                 tables: Sequence[str] | None = None) -> pd.DataFrame:
    """Whether each of the paper's claims (of ``tables``, if given) holds on our results.

    One row per claim and group of its ``per`` columns, then one row with
    group ``overall``; columns :data:`CLAIM_COLUMNS`. A claim is judged only
    on rows of the paper's data or a declared stand-in (``data`` =
    ``paper`` / ``stand-in``); groups on anything else (a user's dataset, a
    subset of a setting) get ``holds`` = ``None`` and a detail starting
    with "not judged". ``holds`` is also ``None`` where data is missing (a
    participant without rows, participants with different seeds, or one seed
    for a ``beyond_noise`` claim); ``detail`` gives the numbers.
    """
    paper = paper_dict(paper)
    ours = rows_of_paper(results, paper["paper"])
    claims = paper["claims"]
    if tables is not None:
        tables = [str(t) for t in tables]
        claims = [c for c in claims if c["table"] in tables]
    roles = {key: data_role(paper, *key) for key in
             ours[["table", "dataset", "num_clients"]].drop_duplicates().itertuples(index=False, name=None)}
    ours["data"] = [roles[key] for key in zip(ours["table"], ours["dataset"], ours["num_clients"])]
    out = []
    for claim in claims:
        what = f"paper {paper['paper']!r} claim {claim['id']!r}"
        head = (claim["id"], claim["text"], claim["table"])
        filters = {"table": claim["table"], "metric": claim["metric"], **{c: claim[c] for c in CLAIM_GROUP_COLUMNS}}
        rows = select(ours, filters)
        participants = [claim["winner"], *claim["losers"]]
        involved = pd.concat([select(rows, spec) for spec in participants])
        per = claim["per"]
        if involved.empty:
            detail = f"no rows for table {claim['table']}, metric {claim['metric']}"
            out.append((*head, "overall", "", None, math.nan, math.nan, detail))
            continue
        on_data = involved["data"].isin(JUDGED_ROLES)
        judged_rows = rows[rows["data"].isin(JUDGED_ROLES)]
        judged_keys = _keys(involved[on_data], per)
        verdicts, data = [], []
        for key in judged_keys:
            group_rows = select(judged_rows, dict(zip(per, key)))
            holds, detail, margin, noise = _check_group(group_rows, claim, f"{what}, group {_group_label(per, key)}")
            label = _judged_data(select(involved[on_data], dict(zip(per, key)))["data"])
            verdicts.append(holds)
            data.append(label)
            out.append((*head, _group_label(per, key), label, holds, margin, noise, detail))
        unjudged_keys = [k for k in _keys(involved[~on_data], per) if k not in judged_keys]
        for key in unjudged_keys:
            label, detail = _not_judged(paper, select(involved[~on_data], dict(zip(per, key))))
            out.append((*head, _group_label(per, key), label, None, math.nan, math.nan, detail))
        checked = [v for v in verdicts if v is not None]
        lacking = len(verdicts) - len(checked)
        overall = all(checked) if checked else None
        if judged_keys:
            detail = f"holds in {sum(checked)} of {len(checked)} groups with data"
            if lacking:
                detail += f"; {lacking} group{'s' if lacking > 1 else ''} without data"
            overall_data = "+".join(r for r in JUDGED_ROLES if r in set(data))
        else:
            overall_data, detail = _not_judged(paper, involved[~on_data])
        if unjudged_keys and judged_keys:
            detail += f"; {len(unjudged_keys)} not judged (not the paper's data)"
        out.append((*head, "overall", overall_data, overall, math.nan, math.nan, detail))
    frame = pd.DataFrame(out, columns=CLAIM_COLUMNS)
    frame["holds"] = frame["holds"].astype(object)
    return frame


def _unit(groups: Sequence[str]) -> str:
    """``"per dataset"`` / ``"per dataset, model"`` from group labels such as ``"dataset=Cora, model=gcn"``."""
    names = [part.split("=", 1)[0] for part in str(groups[0]).split(", ") if "=" in part]
    return f"per {', '.join(names)}" if names else ""


def _failure(row: Any) -> str:
    """``"biosncv: fedstar 67.99 vs best loser local 68.35 (within noise)"`` for a failing group."""
    where = ", ".join(part.split("=", 1)[1] for part in str(row.group).split(", ") if "=" in part)
    numbers = str(row.detail).split("; ")[0]
    if pd.isna(row.noise):
        tag = ""
    else:
        tag = " (within noise)" if abs(row.margin) <= row.noise else " (beyond noise)"
    return f"{where}: {numbers}{tag}" if where else f"{numbers}{tag}"


def claims_table(claims: pd.DataFrame, max_failures: int = 2) -> pd.DataFrame:
    """One line per claim of a :func:`check_claims` frame: ``id``, ``claim``, ``verdict``, ``data``.

    The verdict is a sentence: "holds in 3 of 3 (per dataset)", "fails in 1 of 4 (per dataset):
    dataset=biosncv: fedstar 67.99 vs best loser local 68.35; ...", "not judged: not the paper's data
    (MyGraph)", or why there is no verdict; the groups that fail are named (at most ``max_failures``,
    then how many more). ``data`` is where the verdict comes from (``paper``, ``stand-in``,
    ``paper+stand-in``) or why there is none (``subset``, ``other``).
    """
    rows = []
    for claim_id, mine in claims.groupby("id", sort=False):
        overall = mine[mine["group"] == "overall"].iloc[0]
        groups = mine[mine["group"] != "overall"]
        judged = groups[groups["data"].isin([*JUDGED_ROLES])]
        decided = judged[judged["holds"].notna()]
        if decided.empty:
            if judged.empty:  # no rows at all, or none on the paper's data: the overall row says why
                verdict = overall["detail"]
            else:
                verdict = f"no verdict: {judged['detail'].iloc[0]}"
        else:
            failing = decided[decided["holds"] == False]  # noqa: E712 -- object column of True/False/None
            n, unit = len(decided), _unit(list(decided["group"]))
            unit = f" ({unit})" if unit else ""
            if failing.empty:
                verdict = "holds" if list(decided["group"]) == ["all"] else f"holds in {n} of {n}{unit}"
            else:
                named = [_failure(r) for r in failing.head(max_failures).itertuples(index=False)]
                more = len(failing) - len(named)
                verdict = ("fails: " if list(decided["group"]) == ["all"]
                           else f"holds in {n - len(failing)} of {n}{unit}; fails in ") + "; ".join(named)
                if more:
                    verdict += f"; and {more} more"
            lacking = len(judged) - len(decided)
            if lacking:
                verdict += f"; {lacking} without data"
            off = len(groups) - len(judged)
            if off:
                verdict += f"; {off} not judged (not the paper's data)"
        rows.append({"id": claim_id, "claim": overall["text"], "verdict": verdict, "data": overall["data"]})
    return pd.DataFrame(rows, columns=CLAIMS_TABLE_COLUMNS)
