"""FedStar motivation: JSD, degree distributions, Erdos-Renyi references, Tables 5-8 statistics, Figure 1(a)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.spatial.distance import jensenshannon
from torch_geometric.data import Data
from torch_geometric.utils import to_undirected

from fglcore.papers.fedstar import motivation as fm
from fglcore.results import config_id

CHEM = ["MUTAG", "BZR", "COX2", "DHFR", "PTC_MR", "AIDS", "NCI1"]


def graph(pairs, num_nodes):
    edges = torch.tensor(pairs, dtype=torch.long).t() if pairs else torch.zeros(2, 0, dtype=torch.long)
    return Data(edge_index=to_undirected(edges, num_nodes=num_nodes), num_nodes=num_nodes)


# --------------------------------------------------------------------------- Jensen-Shannon divergence


def test_jsd_is_zero_on_equal_one_on_disjoint_symmetric_and_matches_scipy():
    rng = np.random.default_rng(0)
    assert fm.jensen_shannon_divergence([0.3, 0.7], [0.3, 0.7]) == pytest.approx(0.0, abs=1e-12)
    assert fm.jensen_shannon_divergence([1, 0, 0], [0, 0.5, 0.5]) == pytest.approx(1.0)
    for _ in range(20):
        p, q = rng.random(10), rng.random(10)
        p[rng.integers(10)] = 0.0
        value = fm.jensen_shannon_divergence(p, q)
        assert 0.0 <= value <= 1.0
        assert value == pytest.approx(fm.jensen_shannon_divergence(q, p))
        assert value == pytest.approx(jensenshannon(p, q, base=2) ** 2, abs=1e-12)
        # inputs are normalised, as scipy.stats.entropy normalises them in the official js_diver
        assert value == pytest.approx(fm.jensen_shannon_divergence(3 * p, q / 7))
    # in nats the value scales by ln 2
    assert fm.jensen_shannon_divergence([1, 0], [0, 1], base=math.e) == pytest.approx(math.log(2))


@pytest.mark.parametrize("p, q, message", [
    ([0.5, 0.5], [1.0], "same length"),
    ([0.5, -0.5], [0.5, 0.5], "non-negative"),
    ([0.0, 0.0], [0.5, 0.5], "not all zero"),
    ([np.nan, 1.0], [0.5, 0.5], "finite"),
])
def test_jsd_rejects_bad_distributions(p, q, message):
    with pytest.raises(ValueError, match=message):
        fm.jensen_shannon_divergence(p, q)


def test_jsd_matrix_is_symmetric_with_zero_diagonal():
    dists = {"a": np.array([1.0, 0, 0]), "b": np.array([0, 1.0, 0]), "c": np.array([0.5, 0.5, 0])}
    matrix = fm.jsd_matrix(dists)
    assert list(matrix.index) == list(matrix.columns) == ["a", "b", "c"]
    assert np.allclose(matrix.to_numpy(), matrix.to_numpy().T) and np.allclose(np.diag(matrix), 0)
    assert matrix.loc["a", "b"] == pytest.approx(1.0)
    assert matrix.loc["a", "c"] == pytest.approx(fm.jensen_shannon_divergence([1, 0, 0], [0.5, 0.5, 0]))
    with pytest.raises(ValueError, match="no distribution"):
        fm.jsd_matrix({})


# --------------------------------------------------------------------------- degree distributions


def test_degree_histogram_pools_graphs_and_puts_high_degrees_in_the_overflow_bin():
    path_and_isolated = graph([(0, 1), (1, 2)], 4)  # degrees 1, 2, 1, 0
    star = graph([(0, leaf) for leaf in range(1, 11)], 11)  # centre 10, ten leaves of degree 1
    hist = fm.degree_histogram([path_and_isolated, star], num_bins=4)
    counts = np.array([1, 2 + 10, 1, 1]) / 15  # degree 0, 1, 2, >=3
    assert np.allclose(hist, counts) and hist.sum() == pytest.approx(1.0)
    assert torch.equal(fm.node_degrees(path_and_isolated), torch.tensor([1, 2, 1, 0]))
    with pytest.raises(ValueError, match="num_bins"):
        fm.degree_histogram([star], num_bins=1)
    with pytest.raises(ValueError, match="no node"):
        fm.degree_histogram([])


def test_dataset_degree_distribution_of_mutag_is_molecular():
    dist = fm.dataset_degree_distribution("MUTAG")
    assert dist.shape == (fm.DEFAULT_BINS,) and dist.sum() == pytest.approx(1.0)
    assert dist[1:4].sum() > 0.99 and dist[5:].sum() == 0  # valences 1-4, no isolated atom
    # 2 x 19.79 edges over 17.93 nodes: mean degree ~ 2.21
    assert (np.arange(fm.DEFAULT_BINS) * dist).sum() == pytest.approx(2 * 19.79 / 17.93, abs=0.01)


def test_erdos_renyi_degrees_follow_the_binomial_law_and_are_seeded():
    n, p = 30, 0.2
    exact = fm.binomial_degree_distribution(n, p)
    assert exact.sum() == pytest.approx(1.0) and (np.arange(fm.DEFAULT_BINS) * exact).sum() == pytest.approx((n - 1) * p)
    state = torch.random.get_rng_state()
    sampled = fm.erdos_renyi_degree_distribution(n, p, num_graphs=200, seed=3)
    assert torch.equal(state, torch.random.get_rng_state())  # the global RNG is untouched
    assert fm.jensen_shannon_divergence(sampled, exact) < 0.005
    assert (np.arange(fm.DEFAULT_BINS) * sampled).sum() == pytest.approx((n - 1) * p, rel=0.05)
    assert np.array_equal(sampled, fm.erdos_renyi_degree_distribution(n, p, num_graphs=200, seed=3))
    assert not np.array_equal(sampled, fm.erdos_renyi_degree_distribution(n, p, num_graphs=200, seed=4))
    # the overflow bin of the binomial holds the tail: all of it when every degree is >= num_bins - 1
    assert fm.binomial_degree_distribution(50, 1.0, num_bins=8)[-1] == pytest.approx(1.0)
    assert np.allclose(fm.erdos_renyi_degree_distribution(10, 0.0, 5), np.eye(fm.DEFAULT_BINS)[0])


@pytest.mark.parametrize("kwargs, message", [
    (dict(num_nodes=10, p=1.5, num_graphs=2), "edge probability"),
    (dict(num_nodes=0, p=0.5, num_graphs=2), "num_nodes"),
    (dict(num_nodes=10, p=0.5, num_graphs=0), "num_graphs"),
])
def test_erdos_renyi_rejects_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        fm.erdos_renyi_graphs(**kwargs)


def test_matched_erdos_renyi_twins_keep_sizes_and_expected_edges():
    triangle, pair = graph([(0, 1), (1, 2), (2, 0)], 3), graph([(0, 1)], 2)
    twins = fm.matched_erdos_renyi_graphs([triangle, pair, graph([], 1)])
    assert [t.num_nodes for t in twins] == [3, 2, 1]
    assert twins[0].edge_index.size(1) == 6 and twins[1].edge_index.size(1) == 2  # density 1: the same graphs
    big = [graph([(i, (i + 1) % 40) for i in range(40)], 40) for _ in range(50)]  # cycles: 40 edges each
    edges = np.mean([t.edge_index.size(1) / 2 for t in fm.matched_erdos_renyi_graphs(big, seed=1)])
    assert edges == pytest.approx(40, rel=0.1)


# --------------------------------------------------------------------------- the claim and the density sweep


def test_density_sweep_shows_that_dense_random_graphs_are_far_and_matched_ones_close():
    real = {"x": fm.erdos_renyi_degree_distribution(30, 0.1, 100, seed=1),
            "y": fm.erdos_renyi_degree_distribution(30, 0.1, 100, seed=2)}
    sweep = fm.er_density_sweep(real, 30, [0.1, 0.9], num_graphs=100, seed=5, domains={"x": "A", "y": "B"})
    assert set(sweep.columns) >= {"dataset", "p", "mean_degree", "jsd_to_er", "nearest_real_jsd",
                                  "nearest_other_domain_jsd", "mean_real_jsd"}
    assert sweep["mean_degree"].tolist() == pytest.approx([2.9, 2.9, 26.1, 26.1])
    claims = fm.claim_by_density(sweep).set_index("p")
    assert claims.loc[0.9, "holds_nearest"] == 2 and claims.loc[0.9, "holds_cross_domain"] == 2
    assert claims.loc[0.9, "fails_on_average"] == ""
    assert claims.loc[0.1, "mean_jsd_to_er"] < 0.05  # sampled from the same law as the "real" ones
    with pytest.raises(ValueError, match="at least two"):
        fm.er_density_sweep({"x": real["x"]}, 30, [0.5])


def test_real_vs_random_summary_applies_each_reading_of_the_claim():
    names = ["m1", "m2", "p1", "ER"]
    values = np.array([[0.0, 0.1, 0.5, 0.3],
                       [0.1, 0.0, 0.6, 0.7],
                       [0.5, 0.6, 0.0, 0.2],
                       [0.3, 0.7, 0.2, 0.0]])
    matrix = pd.DataFrame(values, index=names, columns=names)
    summary = fm.real_vs_random_summary(matrix, ["m1", "m2", "p1"], ["ER"], domains={"m1": "C", "m2": "C", "p1": "B"})
    assert summary.loc["m1", "nearest_real"] == "m2" and summary.loc["m1", "nearest_other_domain_jsd"] == 0.5
    assert summary.loc["m1", "mean_real_jsd"] == pytest.approx(0.3)
    assert summary["claim_nearest"].tolist() == [True, True, False]
    assert summary["claim_cross_domain"].tolist() == [False, True, False]
    assert summary["claim_on_average"].tolist() == [False, True, False]
    with pytest.raises(ValueError, match="not in the matrix"):
        fm.real_vs_random_summary(matrix, ["m1", "zz"], ["ER"])


# --------------------------------------------------------------------------- Tables 5-8


def test_chem_statistics_match_table5_and_the_tu_collection_exactly():
    stats = fm.dataset_statistics(CHEM)
    assert list(stats.index) == CHEM and (stats["domain"] == "CHEM").all()
    comparison = fm.statistics_comparison(stats)
    assert len(comparison) == len(CHEM) * len(fm.STAT_COLUMNS)
    assert comparison["match"].all(), comparison[~comparison["match"]]
    # Table 5, printed in the paper
    assert stats["train_graphs"].tolist() == [150, 324, 373, 604, 275, 1600, 3288]
    assert stats["train_avg_nodes"].round(2).tolist()[:5] == [17.95, 35.87, 41.14, 42.43, 14.19]
    assert stats.loc["AIDS", "train_avg_nodes"] == pytest.approx(15.745)  # printed 15.75: half up
    wide = fm.paper_vs_ours(stats)
    assert wide[("train_graphs", "paper")].tolist() == wide[("train_graphs", "ours")].tolist()


def test_statistics_of_bio_differ_from_table6_as_the_digest_reports():
    stats = fm.dataset_statistics(["ENZYMES"])
    comparison = fm.statistics_comparison(stats).set_index("statistic")
    assert comparison.loc["train_graphs", "match"]  # 480
    assert comparison.loc["train_avg_nodes", "ours"] == pytest.approx(32.16, abs=0.005)  # paper 33.19
    assert not comparison.loc["train_avg_nodes", "match"]


def test_statistics_comparison_flags_differences_and_rejects_incomplete_tables():
    ours = fm.PAPER_STATISTICS.loc[["MUTAG", "AIDS"]].copy()
    ours.loc["MUTAG", "avg_edges"] = 19.8
    ours.loc["AIDS", "train_avg_nodes"] = 15.745  # rounds half up to the printed 15.75
    comparison = fm.statistics_comparison(ours).set_index(["dataset", "statistic"])
    assert not comparison.loc[("MUTAG", "avg_edges"), "match"]
    assert comparison.loc[("MUTAG", "avg_edges"), "delta"] == pytest.approx(0.01)
    assert comparison.loc[("AIDS", "train_avg_nodes"), "match"]
    assert comparison.loc[("MUTAG", "train_graphs"), "source"] == "paper"
    assert comparison.loc[("MUTAG", "graphs"), "source"] == "TU"
    with pytest.raises(ValueError, match="lacks columns"):
        fm.statistics_comparison(ours.drop(columns="classes"))
    with pytest.raises(ValueError, match="is a group"):
        fm.dataset_statistics(["chem"])


# --------------------------------------------------------------------------- Figure 1(a)


def test_figure1a_configs_are_table1_configs():
    from fglcore.papers.fedstar.tables import table1_config

    full = fm.figure1a_configs(["biochem", "biosncv"], ["local", "fedavg", "gcfl"], [1, 2])
    assert len(full) == 12
    assert config_id(full[0]) == config_id(table1_config("biochem", "local", 1))
    assert config_id(full[-1]) == config_id(table1_config("biosncv", "gcfl", 2))
    small = fm.figure1a_configs(["biochem", "biosncv"], ["fedavg"], [1], members=["MUTAG", "ENZYMES", "DD"],
                                rounds=2)
    assert config_id(small[0]) == config_id(table1_config("biochem", "fedavg", 1, members=["MUTAG", "ENZYMES", "DD"],
                                                          rounds=2))
    assert small[1]["num_clients"] == 2  # biosncv holds ENZYMES and DD, not MUTAG
    with pytest.raises(ValueError, match="none of"):
        fm.figure1a_configs(["chem"], ["local"], [1], members=["ENZYMES"])
    with pytest.raises(ValueError, match="at least one"):
        fm.figure1a_configs([], ["local"], [1])


def test_figure1a_table_gives_means_over_seeds_and_gaps_to_local():
    rows = []
    for method, values in {"local": [70.0, 72.0], "fedavg": [69.0, 69.0], "gcfl": [71.0, 75.0]}.items():
        for seed, value in enumerate(values):
            rows.append({"dataset": "biochem", "method": method, "metric": "accuracy", "seed": seed, "value": value})
            rows.append({"dataset": "biochem", "method": method, "metric": "macro_f1", "seed": seed, "value": 1.0})
    table = fm.figure1a_table(pd.DataFrame(rows)).set_index("method")
    assert table.loc["local", "mean"] == 71.0 and table.loc["local", "std"] == 1.0
    assert table.loc["fedavg", "gap_to_local"] == -2.0 and table.loc["gcfl", "gap_to_local"] == 2.0
    with pytest.raises(ValueError, match="no 'accuracy'"):
        fm.figure1a_table(pd.DataFrame(rows).query("metric == 'macro_f1'"))


# --------------------------------------------------------------------------- figures


def test_figures_draw_what_they_are_given():
    dists = {"a": fm.binomial_degree_distribution(20, 0.1), fm.er_label(20, 0.5): fm.binomial_degree_distribution(20, 0.5)}
    heat = fm.jsd_heatmap(fm.jsd_matrix(dists))
    assert len(heat.axes[0].texts) == 4  # one annotation per cell
    lines = fm.degree_distribution_plot(dists, max_degree=10)
    drawn = lines.axes[0].get_lines()
    assert [line.get_linestyle() for line in drawn] == ["-", "--"] and len(drawn[0].get_xdata()) == 12
    with pytest.raises(ValueError, match="max_degree"):
        fm.degree_distribution_plot(dists, max_degree=0)
    sweep = pd.DataFrame({"dataset": ["a", "a"], "p": [0.1, 0.5], "mean_degree": [1.9, 9.5], "jsd_to_er": [0.2, 0.9],
                          "nearest_real_jsd": [0.3, 0.3]})
    assert len(fm.density_sweep_plot(sweep).axes[0].get_lines()) == 2  # the curve and its dashed reference
