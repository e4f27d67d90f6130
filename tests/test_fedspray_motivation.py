"""FedSpray's motivation (Table 1, Figure 2, Proposition 3.1) and the structure-only Planetoid loader."""
from __future__ import annotations

import math
import os
from pathlib import Path

import pandas as pd
import pytest
import torch
from torch_geometric.data import Data

from fglcore import experiment
from fglcore.data import datasets as ds
from fglcore.data.datasets import DatasetUnavailableError, load_node_data, load_structure
from fglcore.papers.fedspray import motivation as fm

MIRROR = Path(os.environ.get("FGL_DATA_MIRROR") or Path(__file__).resolve().parents[2] / "shared" / "data").resolve()
needs_mirror = pytest.mark.skipif(not (MIRROR / "Planetoid" / "PubMed" / "raw" / "ind.pubmed.allx").is_file()
                                  or not (MIRROR / "FedSpray" / "partition").is_dir(),
                                  reason=f"offline data mirror with PubMed structure not found at {MIRROR}")


# --------------------------------------------------------------------------- load_structure


@needs_mirror
@pytest.mark.parametrize("name", ["Cora", "CiteSeer"])
def test_structure_equals_full_load(name):
    s, d = load_structure(name), load_node_data(name)
    assert s.x is None and s.name == name and s.num_classes == d.num_classes
    assert torch.equal(s.edge_index, d.edge_index) and torch.equal(s.y, d.y)
    for mask in ("train_mask", "val_mask", "test_mask"):
        assert torch.equal(s[mask], d[mask])


@needs_mirror
def test_pubmed_structure_without_features():
    s = load_structure("PubMed")
    assert s.x is None
    assert s.num_nodes == 19717 and s.num_edges == 88648 and s.num_classes == 3
    assert s.is_undirected() and int(s.test_mask.sum()) == 1000 and int(s.train_mask.sum()) == 60


@needs_mirror
def test_structure_of_a_non_planetoid_dataset():
    s, d = load_structure("Chameleon"), load_node_data("Chameleon")
    assert s.x is None and torch.equal(s.edge_index, d.edge_index) and torch.equal(s.y, d.y)


def test_structure_missing_file_names_it(monkeypatch, tmp_path):
    monkeypatch.setenv("FGL_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("FGL_DATA_MIRROR", str(tmp_path / "mirror"))
    monkeypatch.setenv("FGL_DOWNLOAD_TIMEOUT", "0.5")
    monkeypatch.setattr("socket.getaddrinfo", lambda *a, **k: (_ for _ in ()).throw(OSError("network blocked by test")))
    with pytest.raises(DatasetUnavailableError, match="ind.pubmed.y"):
        load_structure("PubMed")


# --------------------------------------------------------------------------- Table 1


@needs_mirror
def test_table1_reproduces_paper_exactly():
    structure = load_structure("PubMed")
    ours = fm.table1(fm.official_partition_clients(structure), structure.num_classes)
    assert list(ours["client"]) == list(range(1, 8)) and ours["nodes"].sum() == 11258
    assert ours["edges"].sum() == 25203  # Table 4: 3,600 undirected edges per client on average
    comparison = fm.compare_table1(ours)
    assert comparison["exact"].all()
    assert list(comparison["our_client"]) == [1, 5, 3, 4, 6, 2, 7]  # files 01, 06, 03, 05, 08, 02, 12


def test_official_partition_needs_a_name(tiny_graph):
    with pytest.raises(ValueError, match="data.name"):
        fm.official_partition_clients(tiny_graph)


def _two_clients():
    # client 1: triangle of class 0 plus one class-1 node hanging on it; client 2: a class-1 pair
    a = Data(edge_index=torch.tensor([[0, 1, 1, 2, 2, 0, 3, 0], [1, 0, 2, 1, 0, 2, 0, 3]]), y=torch.tensor([0, 0, 0, 1]),
             num_nodes=4)
    b = Data(edge_index=torch.tensor([[0, 1], [1, 0]]), y=torch.tensor([1, 1]), num_nodes=2)
    return [a, b]


def test_table1_on_a_tiny_federation():
    table = fm.table1(_two_clients(), 2)
    first = table.iloc[0]
    assert first["client"] == 1 and first["majority_class"] == 0
    assert (first["majority_nodes"], first["minority_nodes"]) == (3, 1)
    # node 0 has neighbours 1, 2, 3 (2 of 3 agree); nodes 1, 2 agree fully; node 3's only neighbour disagrees
    assert math.isclose(first["majority_homophily"], (2 / 3 + 1 + 1) / 3)
    assert first["minority_homophily"] == 0.0
    assert math.isnan(table.iloc[1]["minority_homophily"])  # no minority node


def test_match_and_compare_reorder_and_flag():
    ours = fm.paper_table1().iloc[::-1].reset_index(drop=True).copy()
    ours["client"] = range(1, 8)
    assert fm.match_paper_clients(ours) == list(range(6, -1, -1))
    ours.loc[0, "minority_homophily"] = 0.71  # paper client 7 printed 0.70
    comparison = fm.compare_table1(ours)
    assert list(comparison["exact"]) == [True] * 6 + [False]
    with pytest.raises(ValueError, match="matches 0"):
        fm.match_paper_clients(ours.assign(majority_nodes=0))
    with pytest.raises(ValueError, match="lacks columns"):
        fm.match_paper_clients(ours.drop(columns="minority_nodes"))


def test_table1_rows_compare_with_paper_yaml():
    from fglcore import compare

    paper = fm.paper_table1()
    assert list(paper["client"]) == list(range(1, 8)) and paper["majority_nodes"].sum() == 8926
    ours = paper.copy()
    ours.loc[ours.client == 2, "minority_homophily"] = 0.30  # paper: 0.24
    rows = fm.table1_rows(fm.compare_table1(ours))
    assert len(rows) == 7 * len(fm.TABLE1_COLUMNS)
    comparison = compare.compare(pd.DataFrame(rows), "fedspray")
    table1 = comparison[comparison["table"] == "1"]
    assert len(table1) == 35 and (table1["status"] != "missing").all()
    wrong = table1[table1["status"] != "match"]
    assert list(zip(wrong["setting"], wrong["metric"])) == [("client=2", "minority_homophily")]


def test_homophily_long():
    long = fm.homophily_long(fm.paper_table1())
    assert len(long) == 14 and set(long["group"]) == {"majority", "minority"}
    assert long.loc[(long.client == 3) & (long.group == "minority"), "value"].item() == 0.17


@needs_mirror
def test_louvain_clients_are_largest_communities():
    clients = fm.louvain_clients(load_structure("Cora"), 3, seed=0)
    sizes = [c.num_nodes for c in clients]
    assert len(clients) == 3 and sizes == sorted(sizes, reverse=True)


# --------------------------------------------------------------------------- Figure 2


def _client_row(model: str, seed: int, client: int, metric: str, value: float) -> dict:
    return {"paper": "fedspray", "table": "fig2", "dataset": "Cora", "partition": "louvain_largest",
            "num_clients": 2, "method": "fedavg", "model": model, "setting": "", "seed": seed,
            "metric": f"{metric}[client={client}]", "value": value, "selected_round": 1,
            "config_id": f"{model}{seed}"}


def test_fig2_table_and_share():
    rows = []
    for seed, (mlp, gcn) in enumerate([(60.0, 50.0), (80.0, 50.0)]):
        for model, value in (("mlp", mlp), ("gcn", gcn)):
            rows.append(_client_row(model, seed, 0, "minority_accuracy", value))
            rows.append(_client_row(model, seed, 0, "accuracy", 90.0))
    rows.append(_client_row("mlp", 0, 1, "minority_accuracy", 10.0))
    rows.append(_client_row("gcn", 0, 1, "minority_accuracy", 20.0))
    results = pd.DataFrame(rows)
    table = fm.fig2_table(results)
    assert table.loc[("Cora", 1), "mlp"] == 70.0 and table.loc[("Cora", 1), "gcn"] == 50.0  # clients from 1
    assert fm.fig2_table(results, "accuracy").loc[("Cora", 1), "mlp"] == 90.0
    assert fm.share_of_clients_where(table, "mlp", "gcn")["Cora"] == 0.5
    with pytest.raises(ValueError, match="unknown metric"):
        fm.fig2_table(results, metric="f1")
    with pytest.raises(ValueError, match="no column"):
        fm.share_of_clients_where(table, "mlp", "sage")


@needs_mirror
def test_per_client_rows_pool_to_the_reported_accuracy(tmp_path):
    base = dict(paper="fedspray", table="fig2", dataset="Cora", partition="louvain_largest", num_clients=3,
                algorithm="fedavg", rounds=2, local_epochs=1, dropout=0.0, selection_metric="val_loss")
    rows, result = experiment.run_full(base, per_client=True)
    results = pd.DataFrame(rows)
    per_client = fm.client_metrics(results, "accuracy")
    assert per_client["client"].tolist() == [1, 2, 3]
    sizes = [c["test_size"] for c in result.per_client]
    pooled = results.loc[results.metric == "accuracy", "value"].item()
    assert math.isclose(pooled, (per_client["value"] * sizes).sum() / sum(sizes), rel_tol=1e-5)


# --------------------------------------------------------------------------- Proposition 3.1


def test_class_means_distance():
    mu = fm.class_means(9, 3.0)
    assert mu.shape == (2, 9) and math.isclose(float((mu[0] - mu[1]).norm()), 3.0)
    with pytest.raises(ValueError):
        fm.class_means(0, 1.0)


def test_sample_client_follows_the_model():
    mu = fm.class_means(4, 2.0)
    client = fm.sample_client(mu, 1, 0.8, 0.25, 5000, 10, torch.Generator().manual_seed(0))
    assert int((client.y == 1).sum()) == 4000 and int(client.minority.sum()) == 1000
    expected_h = 0.8 * mu[1] + 0.2 * mu[0]  # neighbours ignore the node's own class
    for c in (0, 1):
        assert torch.allclose(client.h[client.y == c].mean(0), expected_h, atol=0.05)
    assert torch.allclose(client.x[client.y == 0].mean(0), mu[0], atol=0.1)
    assert math.isclose(float(client.h.var(0).mean()), 0.1 + 0.8 * 0.2 * float(((mu[0] - mu[1]) ** 2).mean()) / 10,
                        rel_tol=0.1)
    with pytest.raises(ValueError, match="1/2 < p < 1"):
        fm.sample_client(mu, 0, 0.4, 0.5, 10, 2, torch.Generator())


def test_theoretical_distances():
    mu = fm.class_means(2, 2.0)
    dist, dist_prime = fm.theoretical_distances(mu, [0.75, 0.9], [0.5, 0.0])
    assert math.isclose(dist, 1.0) and math.isclose(dist_prime, 1 + 0.5 * 0.25 + 1.0 * 0.4)
    with pytest.raises(ValueError):
        fm.theoretical_distances(mu, [0.7], [])


def test_global_class_information_weights():
    def client(majority, h, n_major, n_minor):
        y = torch.tensor([majority] * n_major + [1 - majority] * n_minor)
        return fm.GenClient(torch.zeros(len(y), 1), y, torch.full((len(y), 1), h), majority, 0.8, 0.5)

    s = fm.global_class_information([client(0, 1.0, 4, 2), client(1, -2.0, 5, 1)])
    assert torch.allclose(s, torch.tensor([[1.0 + 0.2 * -2.0], [0.5 * 1.0 - 2.0]]))


def test_class_mean_distance_and_linear_accuracy():
    z = torch.tensor([[0.0], [2.0], [4.0], [6.0]])
    y = torch.tensor([0, 0, 1, 1])
    assert fm.class_mean_distance(z, y) == 2.0
    with pytest.raises(ValueError):
        fm.class_mean_distance(z, torch.zeros(4, dtype=torch.long))
    acc, minority = fm.linear_accuracy(z, y, torch.tensor([[0.5], [5.5]]), torch.tensor([0, 1]),
                                       torch.tensor([False, True]))
    assert acc == 100.0 and minority == 100.0
    q = fm.soft_class_weights(z, y, z)
    assert torch.allclose(q.sum(1), torch.ones(4, dtype=q.dtype)) and bool((q[:, 1].diff() > 0).all())


def test_simulation_matches_proposition():
    frame = fm.simulate_proposition([0.6, 0.9], q=0.25, num_clients=4, num_nodes=2000, degree=5, dim=4, seed=0)
    assert list(frame["p"]) == [0.6, 0.9]
    # local neighbour means add no within-client separation (Eq. 20) ...
    assert ((frame["dist_local"] - frame["dist"]).abs() < 0.06).all()
    # ... global class-wise information widens it to dist' (Eq. 26)
    assert ((frame["dist_global_oracle"] - frame["dist_prime"]).abs() < 0.06).all()
    # local aggregation hurts minority nodes more as p grows
    assert frame["minority_accuracy_local"].iloc[1] < frame["minority_accuracy_features"].iloc[1] - 5
    again = fm.simulate_proposition([0.6, 0.9], q=0.25, num_clients=4, num_nodes=2000, degree=5, dim=4, seed=0)
    pd.testing.assert_frame_equal(frame, again)
    with pytest.raises(ValueError, match="even"):
        fm.simulate_proposition([0.7], num_clients=3)
    fig = fm.plot_proposition(frame)
    assert len(fig.axes) == 2


@needs_mirror
def test_client_profiles_describe_the_clients_the_tables_run():
    profiles = fm.client_profiles(["PubMed", "Cora"], stand_in_clients=7).set_index("dataset")
    assert profiles.loc["PubMed", "role"] == "paper" and profiles.loc["Cora", "role"] == "stand-in"
    assert profiles["clients"].tolist() == [7, 7]
    assert ((profiles["majority_share"] + profiles["minority_share"]) - 1).abs().max() < 1e-9
    # Table 1's clients: majority nodes far more homophilous than minority nodes
    assert profiles.loc["PubMed", "majority_homophily"] > profiles.loc["PubMed", "minority_homophily"] + 0.3
    # PubMed's official clients are more skewed than Cora's seven largest Louvain communities
    assert profiles.loc["PubMed", "majority_share"] > profiles.loc["Cora", "majority_share"]
