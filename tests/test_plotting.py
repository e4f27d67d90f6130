"""fglcore.plotting, fglcore.data.statistics and the partition explorer widget."""
from __future__ import annotations

import math
import sys
import types

import matplotlib

matplotlib.use("Agg", force=True)

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.container import BarContainer  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from torch_geometric.data import Data  # noqa: E402
from torch_geometric.utils import subgraph  # noqa: E402

from fglcore import plotting  # noqa: E402
from fglcore.data.statistics import class_columns, client_statistics  # noqa: E402
from fglcore.metrics import node_homophily  # noqa: E402


@pytest.fixture(autouse=True)
def no_open_figures():
    plt.close("all")
    yield
    assert plt.get_fignums() == [], "figure functions must not leave pyplot figures open"


def bars(ax):
    return [c for c in ax.containers if isinstance(c, BarContainer)]


def visible_axes(fig):
    return [ax for ax in fig.axes if ax.get_visible()]


@pytest.fixture
def two_clients():
    """Client 0: a 4-cycle labelled 0,0,0,1. Client 1: labels 2,2,1, one edge 0-1 (listed twice), node 2 isolated."""
    cycle = torch.tensor([[0, 1, 1, 2, 2, 3, 3, 0], [1, 0, 2, 1, 3, 2, 0, 3]])
    first = Data(y=torch.tensor([0, 0, 0, 1]), edge_index=cycle, num_nodes=4)
    second = Data(y=torch.tensor([2, 2, 1]), edge_index=torch.tensor([[0, 1, 0], [1, 0, 1]]), num_nodes=3)
    return [first, second]


def test_client_statistics_exact_counts_and_homophily(two_clients):
    stats = client_statistics(two_clients, num_classes=3)
    assert list(stats["client"]) == [0, 1]
    assert list(stats["nodes"]) == [4, 3]
    assert list(stats["edges"]) == [4, 1]
    assert class_columns(stats) == ["class_0", "class_1", "class_2"]
    assert stats[class_columns(stats)].values.tolist() == [[3, 1, 0], [0, 1, 2]]
    assert list(stats["majority_class"]) == [0, 2]
    assert list(stats["majority_nodes"]) == [3, 2]
    assert list(stats["minority_nodes"]) == [1, 1]
    # client 0: per-node homophily 1/2, 1, 1/2, 0; client 1: 1, 1, isolated
    assert stats["homophily"].tolist() == pytest.approx([0.5, 1.0])
    assert stats["majority_homophily"].tolist() == pytest.approx([2 / 3, 1.0])
    assert stats["minority_homophily"][0] == 0.0
    assert math.isnan(stats["minority_homophily"][1])
    for data, value in zip(two_clients, stats["homophily"]):
        assert value == pytest.approx(node_homophily(data.edge_index, data.y))


def test_client_statistics_rejects_labels_beyond_num_classes(two_clients):
    with pytest.raises(ValueError, match="outside 0..1"):
        client_statistics(two_clients, num_classes=2)


def test_client_label_mix_stacks_one_bar_per_client_and_class():
    counts = torch.tensor([[3, 1, 0, 0], [0, 2, 2, 0], [1, 1, 1, 1]])
    fig = plotting.client_label_mix(counts)
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    containers = bars(fig.axes[0])
    assert len(containers) == 4 and all(len(c) == 3 for c in containers)
    tops = [max(p.get_y() + p.get_height() for p in patches) for patches in zip(*containers)]
    assert tops == pytest.approx([1.0, 1.0, 1.0])
    raw = plotting.client_label_mix(counts, normalize=False)
    assert [p.get_height() for p in bars(raw.axes[0])[0]] == [3, 0, 1]


def test_client_label_mix_reads_a_statistics_table(two_clients):
    fig = plotting.client_label_mix(client_statistics(two_clients, num_classes=3))
    containers = bars(fig.axes[0])
    assert len(containers) == 3 and all(len(c) == 2 for c in containers)
    assert [p.get_height() for p in containers[0]] == pytest.approx([0.75, 0.0])


def test_client_homophily_bars_and_reference_line():
    fig = plotting.client_homophily({0: 0.9, 1: 0.4, 2: float("nan")}, reference=0.8)
    (ax,) = fig.axes
    (container,) = bars(ax)
    assert len(container) == 3
    assert container[0].get_height() == pytest.approx(0.9)
    assert len(ax.lines) == 1 and ax.lines[0].get_ydata()[0] == pytest.approx(0.8)
    assert len(plotting.client_homophily([0.2, 0.3]).axes[0].lines) == 0


def test_curves_mean_line_band_references_and_paper_points():
    rows = [
        {"round": r, "value": base + r + seed, "method": method, "seed": seed}
        for method, base in (("FedAvg", 0.0), ("Local", 10.0))
        for seed in range(3)
        for r in range(1, 6)
    ]
    paper = pd.DataFrame({"round": [2, 4], "value": [7.0, 9.0]})
    fig = plotting.curves(pd.DataFrame(rows), "round", ylabel="accuracy", references={"central (paper)": 12.5},
                          points=paper, log_x=2)
    (ax,) = fig.axes
    method_lines = [line for line in ax.lines if len(line.get_xdata()) == 5]
    assert len(method_lines) == 2
    assert np.asarray(method_lines[0].get_ydata()) == pytest.approx([2.0, 3.0, 4.0, 5.0, 6.0])  # mean over seeds
    assert len([c for c in ax.collections if isinstance(c, PolyCollection)]) == 2  # one band per method
    assert [line.get_ydata()[0] for line in ax.lines if line.get_linestyle() == "--"] == [12.5]
    stars = [c for c in ax.collections if not isinstance(c, PolyCollection)]
    assert len(stars) == 1 and stars[0].get_offsets().tolist() == [[2.0, 7.0], [4.0, 9.0]]
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "round"
    assert {"FedAvg", "Local", "central (paper)", "paper"} <= {t.get_text() for t in ax.get_legend().get_texts()}
    with pytest.raises(ValueError, match="missing column"):
        plotting.curves(pd.DataFrame(rows).drop(columns="method"), "round")
    empty = plotting.curves(pd.DataFrame(rows).iloc[:0], "round", ylabel="accuracy", title="Figure 4")
    (ax,) = empty.axes
    assert [t.get_text() for t in ax.texts] == ["no runs to show yet"] and not ax.lines
    assert ax.get_title() == "Figure 4" and ax.get_ylabel() == "accuracy"
    fig, axes = plotting.new_figure(2)
    assert plotting.curves(pd.DataFrame(rows), "round", ax=axes[1]) is fig and axes[1].lines and not axes[0].lines


def test_method_bars_mean_and_std_over_seeds():
    results = pd.DataFrame(
        [
            {"method": m, "partition": part, "seed": s, "value": base + s}
            for m, base in (("FedAvg", 80.0), ("Local", 70.0))
            for part in ("louvain", "random")
            for s in (0, 2)
        ]
    )
    fig = plotting.method_bars(results, x="method", hue="partition", ylabel="accuracy (%)")
    (ax,) = fig.axes
    containers = bars(ax)
    assert len(containers) == 2 and all(len(c) == 2 for c in containers)  # partitions x methods
    assert [p.get_height() for p in containers[0]] == pytest.approx([81.0, 71.0])
    assert len(plotting.method_bars(results[results.partition == "random"]).axes[0].patches) == 2
    with pytest.raises(ValueError, match="missing column"):
        plotting.method_bars(results, hue="dataset")


def test_comparison_bars_one_panel_per_dataset():
    comparison = pd.DataFrame(
        {
            "method": ["FedAvg", "FedSpray", "FedAvg", "FedSpray"],
            "dataset": ["PubMed", "PubMed", "WikiCS", "WikiCS"],
            "ours_mean": [85.0, 87.0, 80.0, 81.0],
            "ours_std": [0.5, 0.4, 0.3, 0.2],
            "paper_mean": [86.0, 87.5, float("nan"), 81.6],
        }
    )
    fig = plotting.comparison_bars(comparison)
    axes = visible_axes(fig)
    assert [ax.get_title() for ax in axes] == ["PubMed", "WikiCS"]
    for ax, rows in zip(axes, (comparison.iloc[:2], comparison.iloc[2:])):
        ours, paper = bars(ax)
        assert [p.get_height() for p in ours] == pytest.approx(rows["ours_mean"].tolist())
        assert len(paper) == 2
    with pytest.raises(ValueError, match="paper_mean"):
        plotting.comparison_bars(comparison.drop(columns="paper_mean"))


def test_comparison_bars_wraps_many_datasets():
    comparison = pd.DataFrame(
        {"method": "FedAvg", "dataset": list("ABCD"), "ours_mean": 1.0, "ours_std": 0.1, "paper_mean": 1.0}
    )
    assert len(visible_axes(plotting.comparison_bars(comparison))) == 4


def test_communication_bars_from_a_ledger_summary():
    summary = pd.DataFrame(
        {
            "direction": ["download", "upload", "upload"],
            "name": ["weight", "weight", "bias"],
            "messages": [10, 10, 10],
            "bytes": [2**20, 2**20, 2**19],
            "MiB": [1.0, 1.0, 0.5],
        }
    )
    fig = plotting.communication_bars(summary)
    (ax,) = fig.axes
    assert [c.get_label() for c in bars(ax)] == ["download", "upload"]
    assert all(len(c) == 2 for c in bars(ax))  # one bar per tensor name
    by_method = pd.concat([summary.assign(method="FedAvg"), summary.drop(columns="MiB").assign(method="FedStar")])
    fig = plotting.communication_bars(by_method)
    download, upload = bars(fig.axes[0])
    assert [p.get_height() for p in upload] == pytest.approx([1.5, 1.5])


def test_save_figure_writes_png(tmp_path):
    fig = plotting.client_homophily([0.5, 0.7])
    path = plotting.save_figure(fig, tmp_path / "figures" / "homophily")
    assert path.name == "homophily.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="PNG"):
        plotting.save_figure(fig, tmp_path / "homophily.pdf")


def test_set_style_fixes_the_theme():
    with matplotlib.rc_context():
        plotting.set_style()
        assert tuple(plt.rcParams["figure.figsize"]) == plotting.FIGSIZE
        assert plt.rcParams["savefig.dpi"] == plotting.DPI


@pytest.fixture
def fake_data_modules(monkeypatch, two_clients):
    """Stand-ins for the dataset, partition and federation modules with their documented API."""
    graph = Data(
        x=torch.eye(6),
        y=torch.tensor([0, 0, 1, 1, 2, 2]),
        edge_index=torch.tensor([[0, 1, 1, 2, 3, 4], [1, 0, 2, 1, 4, 3]]),
        num_nodes=6,
    )
    calls = []

    def cached_partition(data, method, num_clients, seed):
        calls.append((method, num_clients, seed))
        return torch.arange(data.num_nodes) % num_clients

    def build_clients(data, assignment):
        clients = []
        for cid in range(int(assignment.max()) + 1):
            nodes = (assignment == cid).nonzero().view(-1)
            edge_index, _ = subgraph(nodes, data.edge_index, relabel_nodes=True, num_nodes=data.num_nodes)
            clients.append(Data(x=data.x[nodes], y=data.y[nodes], edge_index=edge_index, global_id=nodes))
        return clients

    modules = {
        "fglcore.data.datasets": {"load_node_data": lambda name: graph},
        "fglcore.data.partition": {"cached_partition": cached_partition},
        "fglcore.data.federation": {"build_clients": build_clients},
    }
    for name, attributes in modules.items():
        module = types.ModuleType(name)
        module.__dict__.update(attributes)
        monkeypatch.setitem(sys.modules, name, module)
    return calls


def test_explorer_figures_and_table(fake_data_modules):
    from fglcore.widgets import _explore

    figures, table = _explore("Toy", "modulo", 2, 0, {})
    assert fake_data_modules == [("modulo", 2, 0)]
    assert len(figures) == 2 and all(isinstance(f, Figure) for f in figures)
    assert list(table["nodes"]) == [3, 3]
    assert len(bars(figures[0].axes[0])) == 3  # three classes stacked


def test_partition_explorer_redraws_on_change(fake_data_modules, capsys):
    import ipywidgets as widgets

    from fglcore.widgets import partition_explorer

    explorer = partition_explorer(["Toy"], ["modulo", "other"], max_clients=4)
    assert isinstance(explorer, widgets.VBox)
    controls, output = explorer.children
    dataset, partition, clients = controls.children
    assert isinstance(dataset, widgets.Dropdown) and isinstance(partition, widgets.Dropdown)
    assert isinstance(clients, widgets.IntSlider) and clients.max == 4
    assert isinstance(output, widgets.Output)
    clients.value = 3
    partition.value = "other"
    assert fake_data_modules == [("modulo", 4, 0), ("modulo", 3, 0), ("other", 3, 0)]
    assert "Error" not in capsys.readouterr().out  # draw() reports failures as text
    with pytest.raises(ValueError, match="max_clients"):
        partition_explorer(["Toy"], ["modulo"], max_clients=1)


def test_delta_dots_one_panel_per_dataset_filled_beyond_noise():
    gaps = pd.DataFrame({
        "dataset": ["chem", "chem", "biochem"], "method": ["fedavg", "fedstar", "fedavg"],
        "setting": ["", "", ""], "delta": [-2.5, -0.5, 1.0], "noise": [1.0, 1.5, float("nan")],
        "beyond_noise": [True, False, None], "known": ["code, A2", "—", "A12"],
    })
    fig = plotting.delta_dots(gaps, rows="method", title="gaps")
    chem, biochem = [ax for ax in fig.axes if ax.get_visible()][:2]
    assert chem.get_title() == "chem" and biochem.get_title() == "biochem"
    assert [t.get_text() for t in chem.get_yticklabels()] == ["fedstar", "fedavg [code, A2]"]  # first row on top
    filled, hollow = chem.collections[-2:]
    assert filled.get_offsets().tolist() == [[-2.5, 1.0]] and hollow.get_offsets().tolist() == [[-0.5, 0.0]]
    assert biochem.collections[-2].get_offsets().shape[0] == 0  # no noise estimate: hollow
    with pytest.raises(ValueError, match="delta_dots"):
        plotting.delta_dots(gaps.drop(columns="noise"))
    with pytest.raises(ValueError, match="no cell"):
        plotting.delta_dots(gaps.iloc[0:0])
