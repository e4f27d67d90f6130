"""params/opfgl/paper.yaml: valid, transcribed faithfully from the paper's tables, and every id known.

The transcription check reads the paper's own text (arXiv 2411.11304 as extracted in
``shared/papers/001_4da6b5b673fbf4e4.txt`` beside the checkout; skipped where absent): every entry of the main tables must sit in its
method's row, in its dataset's (and model's) column, with the printed mean and std; every entry
of the sensitivity tables (19-23) must appear as "mean ±std" in that table.
"""
from __future__ import annotations

import re

import pytest

from fglcore.algorithms import ALGORITHMS
from fglcore.compare import load_paper
from fglcore.data.datasets import dataset_names
from fglcore.data.partition import PARTITIONERS
from fglcore.models import MODELS

PAPER_NAME = "001_4da6b5b673fbf4e4.txt"

ROW_LABELS = {"local": "Standalone", "fedavg_ft": "FedAvg", "fedavg": "FedAvg", "fedpub": "FedPUB", "fedgta": "FedGTA",
              "fedtad": "FedTAD", "fedspray": "FedSpray", "fedlog": "FedLoG", "dense": "DENSE", "coboost": "Co-Boost",
              "opfgl": "O-pFGL (Ours)", "renode": "ReNode"}
"""Our method id -> the row label the paper prints."""
ARCHITECTURES = {"GraphSage": "sage", "GAT": "gat", "SGC": "sgc"}
MAIN_TABLES = ["1", "2", "3", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17", "18"]
SENSITIVITY_TABLES = ["19", "20", "21", "22", "23"]
CELL = re.compile(r"(\d+\.\d+)(?:\s*±\s*(\d+\.\d+))?|OOM|N/A")


@pytest.fixture(scope="module")
def paper():
    return load_paper("opfgl")


@pytest.fixture(scope="module")
def text(paper_text):
    return paper_text(PAPER_NAME).replace("±plus-or-minus\\pm±", "±").splitlines()


def table_lines(text: list[str], table: str) -> list[str]:
    """The lines of the paper's Table ``table``: its caption up to the next table or blank line."""
    starts = [i for i, line in enumerate(text) if line.startswith(f"Table {table}:")]
    assert starts, f"no Table {table} in the paper text"
    lines = []
    for line in text[starts[0] + 1:]:
        if not line.strip() or line.startswith("Table "):
            break
        lines.append(line)
    return lines


def columns(lines: list[str], table: str) -> list[tuple[str, str | None, str]]:
    """(dataset, architecture or None, metric) of each value column, from the table's header lines."""
    if table in ("17", "18"):
        archs, names = lines[0].split()[1:], lines[1].split()
        per = len(names) // len(archs)
        return [(name, ARCHITECTURES[archs[i // per]], metric) for i, name in enumerate(names)
                for metric in ("accuracy", "macro_f1")]
    names = lines[0].split()[1:]  # "Method Cora CiteSeer ..." or "Louvain Cora ..."
    return [(name, None, metric) for name in names for metric in ("accuracy", "macro_f1")]


def row_cells(line: str, table: str) -> list[tuple[str, str | None] | None]:
    """A row's values in column order: (mean, std) strings, None for a cell the paper leaves empty."""
    cells: list[tuple[str, str | None] | None] = []
    for match in CELL.finditer(line):
        if match.group(0) == "OOM":
            cells += [None, None]  # one OOM spans a dataset's Acc and F1
        elif match.group(0) == "N/A":
            cells += [None] * (6 if table in ("17", "18") else 1)  # all of SGC in 17/18; one Average cell in 9/10
        else:
            cells.append((match.group(1), match.group(2)))
    return cells


def blocks(text: list[str], table: str) -> dict[str, list[str]]:
    """The table's lines per partition block: Table 7 prints a Louvain and a Metis block, the others one."""
    lines = table_lines(text, table)
    if table != "7":
        return {"": lines}
    split = next(i for i, line in enumerate(lines) if line.startswith("Metis "))
    return {"louvain_plus": lines[:split], "metis_plus": lines[split:]}


def test_paper_file_loads_and_has_every_table(paper):
    tables = {e["table"] for e in paper["results"]}
    assert tables == set(MAIN_TABLES + SENSITIVITY_TABLES)
    assert paper["aggregation"]["std"] == "over_seeds" and paper["aggregation"]["ddof"] == 0
    assert {c["table"] for c in paper["claims"]} >= {"1", "5", "6", "8", "19", "22", "fig3", "fig4"}


@pytest.mark.parametrize("table", MAIN_TABLES)
def test_main_table_entries_are_the_papers_cells(paper, text, table):
    entries = [e for e in paper["results"] if e["table"] == table]
    checked = 0
    for block, lines in blocks(text, table).items():
        cols = columns(lines, table)
        rows = {}
        for line in lines[2 if table not in ("17", "18") else 3:]:
            label = next((lab for lab in sorted(set(ROW_LABELS.values()), key=len, reverse=True)
                          if line.startswith(lab + " ")), None)
            assert label, f"Table {table}: unknown row {line[:40]!r}"
            rows[label] = row_cells(line[len(label):], table)
            assert len(rows[label]) == len(cols), f"Table {table}, row {label}: {len(rows[label])} cells, {len(cols)} columns"
        for e in entries:
            if block and e["partition"] != block:
                continue
            arch = e["model"] if table in ("17", "18") else None
            col = cols.index((e["dataset"], arch, e["metric"]))
            value = rows[ROW_LABELS[e["method"]]][col]
            expected = (f"{e['mean']:.2f}", None if e["std"] is None else f"{e['std']:.2f}")
            assert value == expected, (f"Table {table}, {e['method']}, {e['dataset']} {e['metric']}: "
                                       f"yaml {expected}, paper {value}")
            checked += 1
    assert checked == len(entries)


@pytest.mark.parametrize("table", SENSITIVITY_TABLES)
def test_sensitivity_entries_are_printed_in_their_table(paper, text, table):
    lines = "\n".join(table_lines(text, table))
    entries = [e for e in paper["results"] if e["table"] == table]
    assert entries
    for e in entries:
        assert f"{e['mean']:.2f} ±{e['std']:.2f}" in lines, f"Table {table}: {e['setting']!r} {e['metric']} {e['mean']}"


def test_spot_values(paper):
    """A few cells read off the paper by hand (Table 1 Cora, Table 6 PubMed F1, Table 18 GAT/arxiv)."""
    def one(**labels):
        found = [e for e in paper["results"] if all(e[k] == v for k, v in labels.items())]
        assert len(found) == 1, labels
        return found[0]["mean"], found[0]["std"]
    assert one(table="1", dataset="Cora", method="opfgl", metric="accuracy") == (76.43, 1.24)
    assert one(table="6", dataset="PubMed", method="fedspray", metric="macro_f1") == (60.97, 1.27)
    assert one(table="18", dataset="ogbn-arxiv", method="opfgl", model="gat", metric="macro_f1") == (37.83, None)
    assert one(table="9", dataset="Cora", method="fedpub", metric="accuracy") == (78.32, 0.37)


def test_every_id_is_registered_or_documented(paper):
    ids = paper["settings"]["ids"]
    algorithms, models = set(ALGORITHMS.names()), set(MODELS.names())
    datasets, partitions = set(dataset_names("node")), set(PARTITIONERS.names())
    assert not set(ids["not_implemented_methods"]) & algorithms, "now registered: drop from not_implemented_methods"
    assert not set(ids["unregistered_models"]) & models, "now registered: drop from unregistered_models"
    assert not set(ids["unregistered_datasets"]) & datasets, "now registered: drop from unregistered_datasets"
    settings = {""} | set(ids["setting_labels"])
    participants = [p for c in paper["claims"] for p in (c["winner"], *c["losers"])]
    for e in [*paper["results"], *participants]:
        assert e["method"] in algorithms | set(ids["not_implemented_methods"]), e
        assert e.get("setting") is None or e["setting"] in settings, e
    for e in paper["results"]:
        assert e["model"] in models | set(ids["unregistered_models"]), e
        assert e["partition"] in partitions, e
        assert e["dataset"] in datasets | set(ids["unregistered_datasets"]), e
    for c in paper["claims"]:
        assert c["partition"] is None or c["partition"] in partitions, c["id"]
        assert c["dataset"] is None or c["dataset"] in datasets, c["id"]
    for d in paper["datasets"]:
        assert d["dataset"] in datasets | set(ids["unregistered_datasets"]), d
    assert set(ids["setting_labels"]) <= {e["setting"] for e in paper["results"]} | {
        p.get("setting") for p in participants}, "a documented setting label is used nowhere"


def test_claims_hold_in_the_papers_own_numbers(paper):
    """Each claim with numbers in the paper holds on those numbers (figure-only claims have none)."""
    results = paper["results"]
    for c in paper["claims"]:
        if c["table"].startswith("fig"):
            continue

        def value(p, group):
            found = [e for e in results if e["table"] == c["table"] and e["metric"] == c["metric"]
                     and e["method"] == p["method"] and e["setting"] == p.get("setting", e["setting"])
                     and all(e[k] == v for k, v in group.items())]
            return found[0]["mean"] if found else None

        groups = {tuple((k, e[k]) for k in c["per"]) for e in results if e["table"] == c["table"]
                  and (c["dataset"] is None or e["dataset"] == c["dataset"])}
        judged = 0
        for group in map(dict, groups):
            winner = value(c["winner"], group)
            if winner is None:
                continue
            losers = [v for v in (value(p, group) for p in c["losers"]) if v is not None]
            assert all(winner > v for v in losers), (c["id"], group, winner, losers)
            judged += 1
        assert judged, c["id"]
