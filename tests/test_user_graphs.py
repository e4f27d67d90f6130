"""A user's own graph wherever a dataset name is accepted (fglcore.data.user_graphs, datasets.dataset_info)."""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data, HeteroData, InMemoryDataset

from fglcore.config import ConfigError, ExperimentConfig
from fglcore.experiment import check_datasets
from fglcore.data import datasets as ds
from fglcore.data.datasets import (
    DatasetTaskError,
    UnknownDatasetError,
    UserDatasetError,
    check_dataset,
    dataset_info,
    dataset_label,
    dataset_status,
    is_dataset_path,
    load_graph_dataset,
    load_node_data,
)

MIRROR = Path(os.environ.get("FGL_DATA_MIRROR") or Path(__file__).resolve().parents[2] / "shared" / "data").resolve()
needs_mirror = pytest.mark.skipif(not (MIRROR / "TUDataset" / "MUTAG" / "raw").is_dir(),
                                  reason=f"offline data mirror not found at {MIRROR}")


def node_graph(n: int = 30, classes: int = 3, masks: bool = True) -> Data:
    """A ring with chords: ``n`` nodes, one directed edge each way is *not* stored (loading symmetrises)."""
    generator = torch.Generator().manual_seed(0)
    src = torch.arange(n)
    edge_index = torch.stack([torch.cat([src, src]), torch.cat([(src + 1) % n, (src + 5) % n])])
    data = Data(x=torch.randn(n, 4, generator=generator), y=torch.arange(n) % classes, edge_index=edge_index)
    if masks:
        data.train_mask = torch.arange(n) % 3 == 0
        data.val_mask = torch.arange(n) % 3 == 1
        data.test_mask = torch.arange(n) % 3 == 2
    return data


def graph_list(count: int = 12) -> list[Data]:
    graphs = []
    for i in range(count):
        n = 3 + i % 4
        ring = torch.arange(n)
        graphs.append(Data(x=torch.full((n, 2), float(i % 2)), y=torch.tensor([i % 2]),
                           edge_index=torch.stack([ring, (ring + 1) % n])))
    return graphs


def save(obj, path: Path) -> str:
    torch.save(obj, path)
    return str(path)


# --------------------------------------------------------------------------- names and paths


def test_paths_and_names_are_told_apart(tmp_path, monkeypatch):
    assert not is_dataset_path("Cora") and not is_dataset_path("REDDIT-BINARY")
    assert is_dataset_path("./Cora") and is_dataset_path("/tmp/g") and is_dataset_path("g.pt")
    assert is_dataset_path("~/graphs/g") and is_dataset_path(tmp_path / "g") and is_dataset_path("g.PTH")
    assert not any(is_dataset_path(name) for name in ds.dataset_names())

    monkeypatch.chdir(tmp_path)
    save(node_graph(), tmp_path / "Cora")  # a file named like a registered dataset ...
    assert dataset_info("Cora").source == "registered"  # ... never shadows it
    assert dataset_info("./Cora").source == "user" and dataset_info("./Cora").name == "Cora"
    save(node_graph(), tmp_path / "mygraph")
    with pytest.raises(UnknownDatasetError, match=r"exists here: write \./mygraph"):
        dataset_info("mygraph")


def test_a_path_like_name_cannot_be_registered():
    with pytest.raises(ValueError, match="must not look like a path"):
        ds._register(ds.DatasetSpec("my/graph", "node", "x/raw", ("a",)))
    with pytest.raises(ValueError, match="must not look like a path"):
        ds._register(ds.DatasetSpec("graph.pt", "node", "x/raw", ("a",)))


# --------------------------------------------------------------------------- round trips


def test_node_graph_round_trip(tmp_path):
    original = node_graph()
    path = save(original, tmp_path / "ring.pt")
    sha = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    info = check_dataset(path, "node")
    assert (info.name, info.task, info.source, info.sha256) == ("ring", "node", "user", sha)
    assert info.label == dataset_label(path) == f"ring@{sha[:8]}"
    assert "30 nodes" in info.description and "3 classes" in info.description

    data = load_node_data(path)
    assert data.name == "ring" and data.num_classes == 3 and data.is_undirected()
    assert torch.equal(data.x, original.x) and torch.equal(data.y, original.y)
    assert data.num_edges == 2 * original.num_edges  # the directed ring, symmetrised
    for key in ("train_mask", "val_mask", "test_mask"):
        assert torch.equal(data[key], original[key])
    assert ds.load_structure(path).x is None

    status = dataset_status(path)
    assert (status.name, status.task, status.status, status.size_bytes) == ("ring", "node", "present",
                                                                           Path(path).stat().st_size)
    with pytest.raises(DatasetTaskError, match="graph-classification dataset is needed"):
        check_dataset(path, "graph")
    with pytest.raises(DatasetTaskError, match="is a node-classification dataset"):
        load_graph_dataset(path)
    with pytest.raises(ValueError, match="only to Planetoid"):
        load_node_data(path, planetoid_split="full")


def test_graph_list_round_trip(tmp_path):
    graphs = graph_list()
    path = save(graphs, tmp_path / "rings.pt")
    assert check_dataset(path, "graph").task == "graph"
    dataset = load_graph_dataset(path)
    assert isinstance(dataset, InMemoryDataset) and dataset.name == "rings"
    assert (len(dataset), dataset.num_classes, dataset.num_features) == (12, 2, 2)
    assert dataset.y.tolist() == [g.y.item() for g in graphs]
    assert torch.equal(dataset[5].edge_index, graphs[5].edge_index) and torch.equal(dataset[5].x, graphs[5].x)
    assert ds.group_members(path) == [path]
    with pytest.raises(DatasetTaskError, match="your graph .* is a graph-classification dataset, but a "
                                               "node-classification dataset is needed"):
        load_node_data(path)
    with pytest.raises(ValueError, match="registered dataset name"):
        ds.ensure_raw(path)


def test_scalar_graph_labels_are_accepted(tmp_path):
    graphs = [Data(x=g.x, edge_index=g.edge_index, y=g.y.view(())) for g in graph_list()]
    assert load_graph_dataset(save(graphs, tmp_path / "scalar.pt")).y.tolist() == [i % 2 for i in range(12)]


def test_dataset_folders(tmp_path):
    """A PyG InMemoryDataset folder (processed/ file): several graphs -> graph task, one graph -> node task."""
    InMemoryDataset.save(graph_list(), str(tmp_path / "many" / "processed" / "data.pt"))
    torch.save(None, tmp_path / "many" / "processed" / "pre_transform.pt")  # PyG's side files are ignored
    info = dataset_info(str(tmp_path / "many"))
    assert (info.name, info.task) == ("many", "graph")
    assert len(load_graph_dataset(str(tmp_path / "many"))) == 12
    assert dataset_info(str(tmp_path / "many" / "processed" / "data.pt")).task == "graph"  # the file itself

    InMemoryDataset.save([node_graph()], str(tmp_path / "one" / "processed" / "data.pt"))
    data = load_node_data(str(tmp_path / "one"))
    assert data.name == "one" and data.num_nodes == 30 and data.train_mask.dtype == torch.bool

    torch.save(None, tmp_path / "many" / "processed" / "other.pt")
    with pytest.raises(UserDatasetError, match="exactly one processed data file.*data.pt, other.pt"):
        dataset_info(str(tmp_path / "many"))


@needs_mirror
def test_a_pyg_dataset_folder_as_is(tmp_path, monkeypatch):
    """MUTAG processed by PyG's TUDataset (4-tuple format, pre_transform.pt beside it) read as a user folder."""
    monkeypatch.setenv("FGL_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("FGL_DATA_MIRROR", str(MIRROR))
    mutag = load_graph_dataset("MUTAG")
    folder = str(tmp_path / "data" / "TUDataset" / "MUTAG")
    mine = load_graph_dataset(folder)
    assert (len(mine), mine.num_classes, mine.num_features) == (188, 2, 7)
    assert torch.equal(mine.y, mutag.y) and torch.equal(mine[7].x, mutag[7].x)
    assert dataset_label(folder).startswith("MUTAG@")


def test_changed_file_is_read_again(tmp_path):
    path = save(node_graph(), tmp_path / "g.pt")
    first = dataset_label(path)
    save(node_graph(classes=2), tmp_path / "g.pt")
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert dataset_label(path) != first and dataset_info(path).description.endswith("2 classes, train/val/test masks")


# --------------------------------------------------------------------------- validation errors


def _node_case(**changes):
    data = node_graph()
    for key, value in changes.items():
        if value is None:
            del data[key]
        else:
            data[key] = value
    return data


NODE_ERRORS = [
    ("x missing", _node_case(x=None), "x is missing; expected float32 node features"),
    ("x integer", _node_case(x=torch.ones(30, 4, dtype=torch.long)), "x has dtype torch.int64; expected torch.float32"),
    ("x 1-D", _node_case(x=torch.ones(30)), r"x has shape \[30\]; expected \[num_nodes, num_features\]"),
    ("y missing", _node_case(y=None), r"y missing; expected int64 node labels of shape \[30\]"),
    ("y float", _node_case(y=torch.zeros(30)), "y has dtype torch.float32; expected torch.int64"),
    ("y column", _node_case(y=(torch.arange(30) % 3).view(-1, 1)), r"y has shape \[30, 1\]; expected \[30\]"),
    ("y negative", _node_case(y=torch.arange(30) % 3 - 1), "y holds the label -1; expected class ids 0..C-1"),
    ("one class", _node_case(y=torch.zeros(30, dtype=torch.long)), "y holds a single class"),
    ("edges missing", _node_case(edge_index=None), r"edge_index is missing; expected int64 \[2, num_edges\]"),
    ("edges int32", _node_case(edge_index=torch.zeros(2, 3, dtype=torch.int32)),
     "edge_index has dtype torch.int32; expected torch.int64"),
    ("edges transposed", _node_case(edge_index=torch.zeros(3, 2, dtype=torch.long)),
     r"edge_index has shape \[3, 2\]; expected \[2, num_edges\]"),
    ("edge out of range", _node_case(edge_index=torch.tensor([[0, 1], [1, 30]])),
     r"edge_index holds node ids 0..30; expected ids in 0..29"),
    ("mask not bool", _node_case(train_mask=torch.ones(30)), "train_mask has torch.float32; expected a torch.bool"),
    ("mask length", _node_case(val_mask=torch.ones(29, dtype=torch.bool)),
     r"val_mask has shape \[29\]; expected \[30\]"),
    ("some masks", _node_case(val_mask=None, test_mask=None), "has train_mask but not val_mask, test_mask"),
    ("num_nodes", _node_case(num_nodes=31), "num_nodes is 31 but x has 30 rows"),
]


@pytest.mark.parametrize("case, data, message", NODE_ERRORS, ids=[c[0] for c in NODE_ERRORS])
def test_node_graph_errors_name_file_field_and_expectation(tmp_path, case, data, message):
    path = save(data, tmp_path / "bad.pt")
    with pytest.raises(UserDatasetError, match=message) as info:
        check_dataset(path)
    assert str(info.value).startswith(f"{path}: ")
    assert isinstance(info.value, ConfigError)  # the CLI reports it as a rejected parameter (exit 2)


def _graphs_with(index: int, **changes) -> list[Data]:
    graphs = graph_list()
    for key, value in changes.items():
        graphs[index][key] = value
    return graphs


GRAPH_ERRORS = [
    ("feature width", _graphs_with(3, x=torch.zeros(6, 3)), "graph 3: x has 3 features; graph 0 has 2"),
    ("no features", _graphs_with(2, x=None), "graph 2: x is missing"),
    ("two labels", _graphs_with(0, y=torch.tensor([0, 1])), r"graph 0: y is torch.int64 of shape \[2\]; expected one"),
    ("float label", _graphs_with(4, y=torch.tensor([1.0])), "graph 4: y has dtype torch.float32"),
    ("edge out of range", _graphs_with(1, edge_index=torch.tensor([[0], [9]])),
     r"graph 1: edge_index holds node ids 0..9; expected ids in 0..3"),
    ("one graph", graph_list(1), "graph classification needs several graphs"),
    ("one class", [Data(x=g.x, edge_index=g.edge_index, y=torch.tensor([0])) for g in graph_list()],
     "y holds a single class"),
    ("mixed list", graph_list(3) + [torch.zeros(2)], "holds a list of 4 objects, not all Data"),
]


@pytest.mark.parametrize("case, graphs, message", GRAPH_ERRORS, ids=[c[0] for c in GRAPH_ERRORS])
def test_graph_list_errors(tmp_path, case, graphs, message):
    path = save(graphs, tmp_path / "bad.pt")
    with pytest.raises(UserDatasetError, match=message) as info:
        check_dataset(path)
    assert str(info.value).startswith(f"{path}: ")


def test_collated_graph_edges_are_checked_per_graph(tmp_path):
    graphs = graph_list()
    graphs[4].edge_index = torch.tensor([[0], [3]])  # graph 4 has 3 nodes: local id 3 is out of range
    data, slices = InMemoryDataset.collate(graphs)
    torch.save((data.to_dict(), slices, Data), tmp_path / "processed.pt")
    with pytest.raises(UserDatasetError, match="graph 4: edge_index refers to a node outside 0..2"):
        check_dataset(str(tmp_path / "processed.pt"))


def test_files_that_are_not_graphs(tmp_path):
    with pytest.raises(UserDatasetError, match="no such file or folder"):
        check_dataset(str(tmp_path / "absent.pt"))
    assert dataset_status(str(tmp_path / "absent.pt")).status == "missing"
    with pytest.raises(UserDatasetError, match="holds a dict; expected a torch_geometric.data.Data"):
        check_dataset(save({"x": torch.ones(2, 2)}, tmp_path / "dict.pt"))
    hetero = HeteroData()
    hetero["paper"].x = torch.ones(2, 2)
    with pytest.raises(UserDatasetError, match="holds"):
        check_dataset(save(hetero, tmp_path / "hetero.pt"))
    (tmp_path / "text.pt").write_text("not a tensor file")
    with pytest.raises(UserDatasetError, match="not readable as a file written by torch.save"):
        check_dataset(str(tmp_path / "text.pt"))
    with pytest.raises(ds.DatasetError, match="registered name or a path"):
        check_dataset(3)


class _Exploit:
    def __reduce__(self):
        return (os.system, (f"touch {_Exploit.marker}",))


def test_files_are_loaded_without_running_code(tmp_path):
    import numpy as np

    data = node_graph()
    data.extra = np.zeros(3)
    with pytest.raises(UserDatasetError, match="objects other than tensors and PyG Data.*numpy"):
        check_dataset(save(data, tmp_path / "numpy.pt"))
    _Exploit.marker = tmp_path / "pwned"
    data = node_graph()
    data.extra = _Exploit()
    with pytest.raises(UserDatasetError, match="can run code"):
        check_dataset(save(data, tmp_path / "exploit.pt"))
    assert not _Exploit.marker.exists()


# --------------------------------------------------------------------------- configs, results and runs


def test_configs_accept_paths_and_check_the_task(tmp_path):
    node, graphs = save(node_graph(), tmp_path / "g.pt"), save(graph_list(), tmp_path / "gg.pt")
    config = ExperimentConfig.from_dict({"dataset": node, "partition": "random", "num_clients": 2})
    assert config.dataset == node
    with pytest.raises(ConfigError, match="partitions node-level data, but dataset .* is a graph task"):
        ExperimentConfig.from_dict({"dataset": graphs, "partition": "random", "num_clients": 2})
    check_datasets("datasets", ["Cora", node, graphs])
    with pytest.raises(UnknownDatasetError, match=r"^parameter 'datasets': unknown dataset 'Corra' \(did you mean 'Cora'\?\)"):
        check_datasets("datasets", [node, "Corra"])
    with pytest.raises(UserDatasetError, match="^parameter 'dataset': .*no such file"):
        check_datasets("dataset", str(tmp_path / "nothing.pt"))
    with pytest.raises(ConfigError, match="^parameter 'dataset': .* is a graph-classification dataset"):
        check_datasets("dataset", graphs, "node")


def test_results_record_stem_and_checksum(tmp_path):
    from fglcore.results import config_id

    path = save(node_graph(), tmp_path / "g.pt")
    copy = tmp_path / "elsewhere" / "g.pt"
    copy.parent.mkdir()
    shutil.copyfile(path, copy)
    config = {"dataset": path, "partition": "random", "num_clients": 2}
    assert config_id(config) == config_id({**config, "dataset": str(copy)})  # same content, same id
    save(node_graph(classes=2), copy)
    assert config_id(config) != config_id({**config, "dataset": str(copy)})


def test_a_node_run_on_a_user_graph(tmp_path):
    from fglcore import experiment

    path = save(node_graph(n=60), tmp_path / "g.pt")
    config = ExperimentConfig.from_dict({"dataset": path, "partition": "random", "num_clients": 2, "rounds": 2,
                                         "local_epochs": 1, "hidden": 8})
    rows = experiment.run(config)
    assert rows and {row["dataset"] for row in rows} == {dataset_label(path)}


def test_a_graph_federation_on_a_user_dataset(tmp_path):
    from fglcore.data.federation import build_federation

    path = save(graph_list(40), tmp_path / "gg.pt")
    config = ExperimentConfig.from_dict({"dataset": path, "partition": "label_skew", "num_clients": 2,
                                         "split": "graph_stratified", "algorithm": "fedavg", "model": "gin"})
    federation = build_federation(config)
    assert [c.name for c in federation.clients] == ["0-gg", "1-gg"]
    assert sum(len(c.graphs) for c in federation.clients) == 40


def test_fgl_datasets_lists_registered_and_user_graphs(tmp_path, capsys):
    from fglcore.cli import main

    path = save(node_graph(), tmp_path / "g.pt")
    assert main(["datasets"]) == 0
    listing = capsys.readouterr().out
    for name in ("Cora", "Texas", "REDDIT-BINARY", "chem"):
        assert f"\n{name} " in listing
    assert 'Use your own dataset' in listing and "torch.save" in listing
    assert main(["datasets", path]) == 0
    listing = capsys.readouterr().out
    assert "g " in listing and "node" in listing and f"results record it as '{dataset_label(path)}'" in listing
