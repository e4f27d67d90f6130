"""Dataset registry: loading from the offline mirror, checksums, errors and status.

Expected statistics are those of the mirror's README (``../shared/data``),
which were checked against the published ones.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
from pathlib import Path

import pytest
import torch
from filelock import FileLock, Timeout
from torch_geometric.utils import degree

from fglcore.data import datasets as ds
from fglcore.data.datasets import (
    DATASETS,
    ChecksumMismatchError,
    DatasetUnavailableError,
    availability,
    available,
    data_checksum,
    dataset_names,
    dataset_status,
    ensure_raw,
    group_members,
    load_graph_dataset,
    load_node_data,
)
from fglcore.config import ConfigError
from fglcore.registry import UnknownNameError

MIRROR = Path(os.environ.get("FGL_DATA_MIRROR") or Path(__file__).resolve().parents[2] / "shared" / "data").resolve()
needs_mirror = pytest.mark.skipif(not (MIRROR / "Planetoid" / "Cora" / "raw").is_dir(),
                                  reason=f"offline data mirror not found at {MIRROR}")


@pytest.fixture(scope="module")
def shared_root(tmp_path_factory) -> Path:
    """One fresh data root for the loading tests of this module (PyG processes each dataset once)."""
    return tmp_path_factory.mktemp("fgl-data")


@pytest.fixture
def from_mirror(monkeypatch, shared_root) -> Path:
    monkeypatch.setenv("FGL_DATA", str(shared_root))
    monkeypatch.setenv("FGL_DATA_MIRROR", str(MIRROR))
    monkeypatch.delenv("FGL_VERIFY_CHECKSUMS", raising=False)
    return shared_root


@pytest.fixture
def fresh_root(monkeypatch, tmp_path) -> Path:
    root = tmp_path / "data"
    monkeypatch.setenv("FGL_DATA", str(root))
    monkeypatch.setenv("FGL_DATA_MIRROR", str(MIRROR))
    monkeypatch.delenv("FGL_VERIFY_CHECKSUMS", raising=False)
    return root


@pytest.fixture
def no_network(monkeypatch):
    """Every DNS lookup and connection fails at once, as on a machine without internet."""

    def refuse(*args, **kwargs):
        raise OSError("network blocked by test")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


# --------------------------------------------------------------------------- registry


def test_names_by_task_and_unknown_name():
    node, graph = dataset_names("node"), dataset_names("graph")
    for name in ["Cora", "CiteSeer", "PubMed", "Chameleon", "Squirrel", "Computers", "Photo", "CS", "Physics",
                 "WikiCS", "Flickr", "Amazon-ratings", "Roman-empire"]:
        assert name in node
    for name in ["MUTAG", "BZR", "COX2", "DHFR", "PTC_MR", "AIDS", "NCI1", "ENZYMES", "DD", "PROTEINS", "COLLAB",
                 "IMDB-BINARY", "IMDB-MULTI", "Letter-low", "Letter-med", "Letter-high", "chem", "biochem",
                 "biochemsn", "biosncv", *ds.EXTRA_TU]:
        assert name in graph
    for name in ["Texas", "Cornell", "Wisconsin", "Actor", "Minesweeper", "Tolokers", "Questions"]:
        assert name in node
    assert sorted(node + graph) == dataset_names()
    with pytest.raises(ValueError, match="task"):
        dataset_names("edge")
    with pytest.raises(UnknownNameError, match="did you mean 'Cora'.*accepted:.*CiteSeer"):
        load_node_data("Corra")


def test_unknown_name_says_how_to_use_your_own():
    with pytest.raises(ds.UnknownDatasetError) as info:
        ds.check_dataset("roman-empire")
    message = str(info.value)
    assert "did you mean 'Roman-empire'?" in message  # case slips are matched too
    assert 'README.md, section "Use your own dataset"' in message and "torch.save" in message
    assert all(name in message for name in dataset_names())
    assert isinstance(info.value, ConfigError) and isinstance(info.value, UnknownNameError)
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert "\n## Use your own dataset\n" in readme  # the section the message points to


def test_specs_follow_pyg_layout():
    assert DATASETS.get("Cora").raw_dir == "Planetoid/Cora/raw"
    assert DATASETS.get("PubMed").raw_files[2] == "ind.pubmed.allx"
    assert DATASETS.get("Chameleon").raw_dir == "WikipediaNetwork/chameleon/geom_gcn/raw"
    assert DATASETS.get("Squirrel").raw_files[-1] == "squirrel_split_0.6_0.2_9.npz"
    assert DATASETS.get("Photo").raw_files == ("amazon_electronics_photo.npz",)
    assert DATASETS.get("Physics").raw_files == ("ms_academic_phy.npz",)
    assert DATASETS.get("WikiCS").raw_dir == "WikiCS/raw"
    assert DATASETS.get("Roman-empire").raw_dir == "HeterophilousGraphDataset/roman_empire/raw"
    assert DATASETS.get("COLLAB").degree_features == 491
    assert DATASETS.get("Letter-med").use_node_attr
    for name in dataset_names():
        spec = DATASETS.get(name)
        generated = spec.pyg_class == "CSBMDataset"  # the local-bias CSBM substitutes: no raw files, a seed
        assert spec.is_group or ((spec.raw_files or generated) and spec.builder is not None), name


class _Captured(Exception):
    """Raised by a stubbed ``Dataset.__init__``: carries the PyG object before it touches any file."""


@pytest.mark.parametrize("name", [n for n in dataset_names() if not DATASETS.get(n).is_group])
def test_raw_files_are_what_the_pyg_class_reads(name, monkeypatch, tmp_path):
    """Each spec's folder and files, against the PyG 2.8 class itself (constructed, never downloaded)."""
    from torch_geometric.data.dataset import Dataset

    def capture(self, root=None, *args, **kwargs):
        self.root = root
        raise _Captured(self)

    monkeypatch.setattr(Dataset, "__init__", capture)
    spec = DATASETS.get(name)
    with pytest.raises(_Captured) as info:
        spec.builder(tmp_path)
    pyg = info.value.args[0]
    assert type(pyg).__name__ == spec.pyg_class
    files = pyg.raw_file_names
    files = (files,) if isinstance(files, str) else tuple(files)
    assert Path(pyg.raw_dir) == tmp_path / spec.raw_dir
    if spec.pyg_class == "TUDataset":  # PyG requires A and graph_indicator and reads the other parts if present
        assert set(files) <= set(spec.raw_files) and f"{name}_graph_labels.txt" in spec.raw_files
        assert not set(spec.optional_files) & set(spec.raw_files)
    else:
        assert spec.raw_files == files


def test_new_families_follow_pyg_layout():
    assert DATASETS.get("Texas").raw_dir == "WebKB/texas/raw"
    assert DATASETS.get("Actor").raw_files[2] == "film_split_0.6_0.2_0.npz"
    assert DATASETS.get("Minesweeper").raw_files == ("minesweeper.npz",)
    assert DATASETS.get("REDDIT-BINARY").degree_profile and DATASETS.get("REDDIT-BINARY").degree_features is None
    assert DATASETS.get("FRANKENSTEIN").use_node_attr
    assert "MSRC_21_edge_labels.txt" in DATASETS.get("MSRC_21").optional_files
    assert DATASETS.get("MUTAG").optional_files == ()  # pinned by the mirror: exactly its files


def test_group_members_are_fedstar_settings():
    chem = ["MUTAG", "BZR", "COX2", "DHFR", "PTC_MR", "AIDS", "NCI1"]
    assert group_members("chem") == chem
    assert group_members("biochem") == chem + ["ENZYMES", "DD", "PROTEINS"]
    assert group_members("biochemsn") == chem + ["ENZYMES", "DD", "PROTEINS", "COLLAB", "IMDB-BINARY", "IMDB-MULTI"]
    assert len(group_members("biosncv")) == 9 and "Letter-med" in group_members("biosncv")
    assert group_members("MUTAG") == ["MUTAG"]
    with pytest.raises(ValueError, match="node-classification"):
        group_members("Cora")
    with pytest.raises(ValueError, match="group_members"):
        load_graph_dataset("chem")
    with pytest.raises(ds.DatasetTaskError, match="'MUTAG' is a graph-classification dataset, but a "
                                                "node-classification dataset is needed"):
        load_node_data("MUTAG")


# --------------------------------------------------------------------------- loading from the mirror


@needs_mirror
@pytest.mark.parametrize("name, nodes, edges, features, classes, split_sizes", [
    ("Cora", 2708, 10556, 1433, 7, (140, 500, 1000)),
    ("CiteSeer", 3327, 9104, 3703, 6, (120, 500, 1000)),
])
def test_planetoid_from_mirror(from_mirror, name, nodes, edges, features, classes, split_sizes):
    data = load_node_data(name)
    assert (data.num_nodes, data.num_edges, data.num_features) == (nodes, edges, features)
    assert data.num_classes == classes and data.name == name
    assert data.is_undirected()
    masks = (data.train_mask, data.val_mask, data.test_mask)
    assert tuple(int(m.sum()) for m in masks) == split_sizes
    assert (from_mirror / "Planetoid" / name / "processed").is_dir()
    assert not (MIRROR / "Planetoid" / name / "processed").exists()


@needs_mirror
def test_planetoid_full_split(from_mirror):
    data = load_node_data("Cora", planetoid_split="full")
    assert int(data.train_mask.sum()) == 2708 - 500 - 1000
    assert not (data.train_mask & (data.val_mask | data.test_mask)).any()
    with pytest.raises(ValueError, match="planetoid_split"):
        load_node_data("Cora", planetoid_split="random")
    with pytest.raises(ValueError, match="only to Planetoid"):
        load_node_data("Chameleon", planetoid_split="full")


@needs_mirror
def test_chameleon_from_mirror(from_mirror):
    data = load_node_data("Chameleon")
    assert (data.num_nodes, data.num_features, data.num_classes) == (2277, 2325, 5)
    # The 36101 directed Geom-GCN edges, symmetrised: 62742 off-diagonal entries + 50 self-loops.
    assert data.is_undirected() and data.num_edges == 62792
    assert int((data.edge_index[0] == data.edge_index[1]).sum()) == 50
    assert torch.bincount(data.y).tolist() == [456, 460, 453, 521, 387]
    assert data.train_mask.shape == (2277, 10)
    assert [int(m[:, 0].sum()) for m in (data.train_mask, data.val_mask, data.test_mask)] == [1092, 729, 456]


@needs_mirror
def test_tu_without_features_gets_one_hot_degree(from_mirror):
    dataset = load_graph_dataset("IMDB-BINARY")
    assert (len(dataset), dataset.num_classes, dataset.num_node_features) == (1000, 2, 136)
    graph = dataset[0]
    assert torch.equal(graph.x.sum(dim=1), torch.ones(graph.num_nodes))
    assert torch.equal(graph.x.argmax(dim=1), degree(graph.edge_index[1], graph.num_nodes).long())


@needs_mirror
def test_letter_low_has_2d_coordinates(from_mirror):
    dataset = load_graph_dataset("Letter-low")
    assert (len(dataset), dataset.num_classes, dataset.num_node_features) == (2250, 15, 2)
    assert dataset[0].x.dtype == torch.float and not torch.all(dataset[0].x == dataset[0].x.round())


@needs_mirror
def test_mutag_loads(from_mirror):
    dataset = load_graph_dataset("MUTAG")
    assert (len(dataset), dataset.num_classes, dataset.num_node_features) == (188, 2, 7)
    assert dataset._data.num_nodes == 3371  # 188 graphs x 17.93 nodes


@needs_mirror
@pytest.mark.parametrize("name, loader", [("MUTAG", load_graph_dataset), ("Cora", load_node_data)])
def test_loading_holds_the_dataset_lock(fresh_root, monkeypatch, name, loader):
    """Raw files are copied and processed/ is written under the lock that other processes wait on."""
    spec = DATASETS.get(name)
    lock_path = (fresh_root / spec.raw_dir).parent / ds.LOCK_FILE
    raw_present_while_building = []

    def builder(root, **options):
        with pytest.raises(Timeout):
            FileLock(lock_path).acquire(timeout=0)
        raw_present_while_building.append(not ds._missing_files(fresh_root / spec.raw_dir, spec.raw_files))
        return spec.builder(root, **options)

    monkeypatch.setitem(DATASETS._items, name, dataclasses.replace(spec, builder=builder))
    loader(name)
    assert raw_present_while_building == [True]
    with FileLock(lock_path).acquire(timeout=0):  # released once loading is done
        pass


def test_groups_have_no_lock_of_their_own():
    with pytest.raises(ValueError, match="group_members"):
        ds.dataset_lock("chem")


# --------------------------------------------------------------------------- unavailable data and checksums


@needs_mirror
def test_missing_pubmed_names_allx(fresh_root, no_network, tmp_path, monkeypatch):
    """A mirror that lacks one raw file: the error names it, both folders and the failed download."""
    partial = tmp_path / "mirror" / "Planetoid" / "PubMed" / "raw"
    shutil.copytree(MIRROR / "Planetoid" / "PubMed" / "raw", partial)
    (partial / "ind.pubmed.allx").chmod(0o644)
    (partial / "ind.pubmed.allx").unlink()
    monkeypatch.setenv("FGL_DATA_MIRROR", str(tmp_path / "mirror"))
    with pytest.raises(DatasetUnavailableError) as info:
        load_node_data("PubMed")
    message = str(info.value)
    assert isinstance(info.value, FileNotFoundError)
    assert "ind.pubmed.allx" in message and "download failed" in message
    assert str(fresh_root / "Planetoid" / "PubMed" / "raw") in message
    assert f"{partial} (lacks ind.pubmed.allx)" in message
    assert "ind.pubmed.allx" in info.value.missing_files
    raw = fresh_root / "Planetoid" / "PubMed" / "raw"
    assert not raw.is_dir() or not os.listdir(raw)  # nothing partial left behind


def test_missing_without_mirror_says_none_checked(fresh_root, no_network, monkeypatch):
    monkeypatch.delenv("FGL_DATA_MIRROR")
    with pytest.raises(DatasetUnavailableError, match="FGL_DATA_MIRROR is not set"):
        ensure_raw("COLLAB")


@pytest.mark.parametrize("name, loader", [("Texas", load_node_data), ("Actor", load_node_data),
                                          ("Minesweeper", load_node_data), ("REDDIT-BINARY", load_graph_dataset),
                                          ("MSRC_21", load_graph_dataset)])
def test_new_families_offline_are_missing_with_a_clear_error(fresh_root, no_network, monkeypatch, tmp_path, name,
                                                             loader):
    """Not in the mirror and no network: status missing, and loading fails at once naming the files."""
    import time

    monkeypatch.setenv("FGL_DATA_MIRROR", str(tmp_path / "empty-mirror"))
    monkeypatch.setenv("FGL_DOWNLOAD_TIMEOUT", "0.5")
    assert dataset_status(name).status == "missing" and availability(name) == "missing"
    assert availability("ogbn-arxiv") == "not registered"
    spec = DATASETS.get(name)
    start = time.monotonic()
    with pytest.raises(DatasetUnavailableError) as info:
        loader(name)
    assert time.monotonic() - start < 10
    assert spec.raw_files[0] in str(info.value) and str(fresh_root / spec.raw_dir) in str(info.value)
    assert info.value.missing_files == list(spec.raw_files)


def _write_geom_gcn(raw: Path, prefix: str, n: int = 12) -> None:
    """A tiny graph in Geom-GCN's raw format (features/labels, directed edges, ten 60/20/20 split files)."""
    import numpy as np

    raw.mkdir(parents=True)
    lines = ["node_id\tfeature\tlabel"] + [f"{i}\t{i % 2},{1 - i % 2},{i % 3}\t{i % 3}" for i in range(n)]
    (raw / "out1_node_feature_label.txt").write_text("\n".join(lines) + "\n")
    edges = ["node_id\tnode_id"] + [f"{i}\t{(i + 1) % n}" for i in range(n)]
    (raw / "out1_graph_edges.txt").write_text("\n".join(edges) + "\n")
    for k in range(10):
        order = np.random.default_rng(k).permutation(n)
        masks = {key: np.zeros(n, dtype=bool) for key in ("train_mask", "val_mask", "test_mask")}
        masks["train_mask"][order[:7]], masks["val_mask"][order[7:9]], masks["test_mask"][order[9:]] = True, True, True
        np.savez(raw / f"{prefix}_split_0.6_0.2_{k}.npz", **masks)


def test_webkb_from_a_mirror_keeps_ten_splits_like_chameleon(fresh_root, tmp_path, monkeypatch):
    """WebKB's directed Geom-GCN edges are symmetrised and its [N, 10] masks kept, as for Chameleon."""
    from fglcore.data.splits import node_split_masks

    _write_geom_gcn(tmp_path / "mirror" / "WebKB" / "texas" / "raw", "texas")
    monkeypatch.setenv("FGL_DATA_MIRROR", str(tmp_path / "mirror"))
    assert dataset_status("Texas").status == "mirror"
    assert availability("Texas") == "available" and available(["ogbn-arxiv", "Texas", "Actor"]) == ["Texas"]
    data = load_node_data("Texas")
    assert dataset_status("Texas").status == "present" and availability("Texas") == "available"
    assert data.name == "Texas" and data.num_classes == 3 and data.num_nodes == 12
    assert data.is_undirected() and data.num_edges == 24
    assert data.train_mask.shape == data.val_mask.shape == data.test_mask.shape == (12, 10)
    assert [int(m[:, 0].sum()) for m in (data.train_mask, data.val_mask, data.test_mask)] == [7, 2, 3]
    with pytest.raises(ValueError, match="1-D masks"):  # the dataset-mask splits refuse ten splits ...
        node_split_masks("planetoid_public", data, torch.zeros(12, dtype=torch.long), None, 0)
    train, _, _ = node_split_masks("per_client_random", data, torch.zeros(12, dtype=torch.long), [0.5, 0.25, 0.25], 0)
    assert int(train.sum()) == 6  # ... and a random protocol draws its own
    assert (fresh_root / "WebKB" / "texas" / "processed").is_dir()


def test_tu_optional_files_come_along_from_the_mirror(fresh_root, tmp_path, monkeypatch):
    """A TU dataset with files beyond the required ones: the mirror's extras are copied and read by PyG."""
    raw = tmp_path / "mirror" / "TUDataset" / "MSRC_9" / "raw"
    raw.mkdir(parents=True)
    # two graphs: a triangle (nodes 1-3) and an edge (nodes 4-5), 1-based as in the TU format
    (raw / "MSRC_9_A.txt").write_text("1, 2\n2, 1\n2, 3\n3, 2\n1, 3\n3, 1\n4, 5\n5, 4\n")
    (raw / "MSRC_9_graph_indicator.txt").write_text("1\n1\n1\n2\n2\n")
    (raw / "MSRC_9_graph_labels.txt").write_text("1\n2\n")
    (raw / "MSRC_9_node_labels.txt").write_text("1\n2\n3\n1\n2\n")
    (raw / "MSRC_9_edge_labels.txt").write_text("1\n1\n2\n2\n1\n1\n2\n2\n")
    (raw / "README.txt").write_text("tiny stand-in\n")
    monkeypatch.setenv("FGL_DATA_MIRROR", str(tmp_path / "mirror"))
    assert dataset_status("MSRC_9").status == "mirror"
    dataset = load_graph_dataset("MSRC_9")
    copied = sorted(os.listdir(fresh_root / "TUDataset" / "MSRC_9" / "raw"))
    assert "MSRC_9_edge_labels.txt" in copied and "README.txt" in copied
    assert (len(dataset), dataset.num_classes, dataset.num_node_features) == (2, 2, 3)
    assert dataset[0].edge_attr is not None  # PyG read the optional edge labels
    assert torch.equal(dataset[0].x.argmax(dim=1), torch.tensor([0, 1, 2]))


def test_degree_profile_features_for_reddit(fresh_root, tmp_path, monkeypatch):
    raw = tmp_path / "mirror" / "TUDataset" / "REDDIT-BINARY" / "raw"
    raw.mkdir(parents=True)
    (raw / "REDDIT-BINARY_A.txt").write_text("1, 2\n2, 1\n1, 3\n3, 1\n4, 5\n5, 4\n")
    (raw / "REDDIT-BINARY_graph_indicator.txt").write_text("1\n1\n1\n2\n2\n")
    (raw / "REDDIT-BINARY_graph_labels.txt").write_text("-1\n1\n")
    monkeypatch.setenv("FGL_DATA_MIRROR", str(tmp_path / "mirror"))
    dataset = load_graph_dataset("REDDIT-BINARY")
    assert dataset.num_node_features == 5 and dataset.num_classes == 2
    assert dataset[0].x[:, 0].tolist() == [2.0, 1.0, 1.0]  # LocalDegreeProfile: degree first


@pytest.mark.parametrize("name, pyg_class", [("PubMed", "Planetoid"), ("Photo", "Amazon")])
def test_silent_server_fails_fast(fresh_root, monkeypatch, name, pyg_class):
    """A server that accepts but never answers is given up after FGL_DOWNLOAD_TIMEOUT (fsspec and urllib paths)."""
    import time

    import torch_geometric.datasets as pyg_datasets

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        monkeypatch.setattr(getattr(pyg_datasets, pyg_class), "url", f"http://127.0.0.1:{server.getsockname()[1]}/")
        monkeypatch.setenv("FGL_DOWNLOAD_TIMEOUT", "0.5")
        monkeypatch.delenv("FGL_DATA_MIRROR")
        start = time.monotonic()
        with pytest.raises(DatasetUnavailableError, match="download failed"):
            ensure_raw(name)
        assert time.monotonic() - start < 10


def test_network_timeouts_are_restored():
    import fsspec

    before = socket.getdefaulttimeout()
    with ds._network_timeouts(3.0):
        assert socket.getdefaulttimeout() == 3.0
        http = fsspec.filesystem("https", skip_instance_cache=True)
        assert http.client_kwargs["timeout"].sock_connect == 3.0
        assert http.client_kwargs["timeout"].total is None  # large downloads are not cut short
    assert socket.getdefaulttimeout() == before
    assert "timeout" not in fsspec.filesystem("https", skip_instance_cache=True).client_kwargs


def _copy_cora_mirror(target: Path) -> Path:
    raw = target / "Planetoid" / "Cora" / "raw"
    shutil.copytree(MIRROR / "Planetoid" / "Cora" / "raw", raw, dirs_exist_ok=True)
    return raw


@needs_mirror
def test_corrupted_mirror_copy_is_rejected(fresh_root, tmp_path, monkeypatch):
    bad_file = _copy_cora_mirror(tmp_path / "mirror") / "ind.cora.graph"
    content = bytearray(bad_file.read_bytes())
    content[100] ^= 0xFF
    bad_file.write_bytes(bytes(content))
    monkeypatch.setenv("FGL_DATA_MIRROR", str(tmp_path / "mirror"))

    with pytest.raises(ChecksumMismatchError) as info:
        load_node_data("Cora")
    message = str(info.value)
    expected = ds.known_checksums()["Planetoid/Cora/raw/ind.cora.graph"]
    assert "ind.cora.graph" in message and expected in message and "FGL_VERIFY_CHECKSUMS=0" in message
    assert [path.name for path, _, _ in info.value.mismatches] == ["ind.cora.graph"]
    assert not (fresh_root / "Planetoid" / "Cora" / "raw" / "ind.cora.graph").exists()  # bad copy not kept

    monkeypatch.setenv("FGL_VERIFY_CHECKSUMS", "0")
    assert (ensure_raw("Cora") / "ind.cora.graph").read_bytes() == bytes(content)


@needs_mirror
def test_verification_runs_once_until_a_file_changes(fresh_root, monkeypatch):
    raw = ensure_raw("CiteSeer")
    assert (raw / ds.VERIFIED_MARKER).is_file()

    def no_hashing(path):
        raise AssertionError(f"{path} hashed again")

    with monkeypatch.context() as patch:
        patch.setattr(ds, "sha256_file", no_hashing)
        assert ensure_raw("CiteSeer") == raw

    with open(raw / "ind.citeseer.y", "ab") as f:
        f.write(b"\0")
    with pytest.raises(ChecksumMismatchError, match="ind.citeseer.y"):
        ensure_raw("CiteSeer")
    assert (raw / "ind.citeseer.y").exists()  # files placed by the user are never deleted


@needs_mirror
def test_download_path_is_verified(fresh_root, monkeypatch):
    from torch_geometric.datasets import Planetoid

    def fake_download(self):
        _copy_cora_mirror(Path(self.root).parent)

    monkeypatch.delenv("FGL_DATA_MIRROR")
    monkeypatch.setattr(Planetoid, "download", fake_download)
    raw = ensure_raw("Cora")
    assert (raw / ds.VERIFIED_MARKER).is_file()
    assert dataset_status("Cora").status == "present"


@needs_mirror
def test_dataset_status(fresh_root, monkeypatch):
    status = dataset_status("Cora")
    assert (status.status, status.task, status.path) == ("mirror", "node", MIRROR / "Planetoid" / "Cora" / "raw")
    assert status.size_bytes == 572444
    assert dataset_status("PubMed").status == "mirror"
    assert dataset_status("WikiCS").status == "missing"
    assert dataset_status("chem").status == "mirror"

    ensure_raw("Cora")
    status = dataset_status("Cora")
    assert (status.status, status.size_bytes) == ("present", 572444)
    assert status.path == fresh_root / "Planetoid" / "Cora" / "raw"

    monkeypatch.delenv("FGL_DATA_MIRROR")
    assert dataset_status("CiteSeer").status == "missing"
    assert dataset_status("Cora").status == "present"


@needs_mirror
def test_checksums_json_is_provenance_without_unconfirmed_rebuilds():
    sums = json.loads(ds.CHECKSUMS_FILE.read_text())
    assert sums == ds.checksums_from_provenance(MIRROR / "PROVENANCE.tsv")
    assert "TUDataset/DD/raw/DD_A.txt" not in sums
    assert "TUDataset/DD/raw/DD_node_labels.txt" in sums
    assert "WikipediaNetwork/chameleon/geom_gcn/raw/out1_node_feature_label.txt" in sums
    assert "Planetoid/PubMed/raw/ind.pubmed.x" in sums
    for confirmed in ds.CONFIRMED_REBUILDS:  # rebuilt, but byte-identical to the original
        assert confirmed in sums


# --------------------------------------------------------------------------- data checksum


def test_data_checksum_is_stable_and_sensitive(tiny_graph):
    digest = data_checksum(tiny_graph)
    assert len(digest) == 64 and digest == data_checksum(tiny_graph.clone())
    moved = tiny_graph.clone()
    moved.edge_index[1, 0] = 5
    assert data_checksum(moved) != digest
    relabelled = tiny_graph.clone()
    relabelled.y[0] = 1
    assert data_checksum(relabelled) != digest
    no_features = tiny_graph.clone()
    no_features.x = None
    assert data_checksum(no_features) != digest


@needs_mirror
def test_data_checksum_on_cora(from_mirror):
    first, second = load_node_data("Cora"), load_node_data("Cora")
    assert data_checksum(first) == data_checksum(second)
    second.edge_index[0, 0] = (second.edge_index[0, 0] + 1) % second.num_nodes
    assert data_checksum(first) != data_checksum(second)
