"""The dataset registry: benchmark graphs by the names the papers print.

Every dataset is loaded through PyTorch Geometric's own class (``Planetoid``,
``WikipediaNetwork``, ``WebKB``, ``Actor``, ``TUDataset``, ``Amazon``,
``Coauthor``, ``WikiCS``, ``Flickr``, ``HeterophilousGraphDataset``) under the data root
:func:`fglcore.paths.data_root` (``FGL_DATA``), in PyG's folder layout.
Loading a dataset is two steps:

1. :func:`ensure_raw` makes its raw files present under the data root. Files
   already there are used as they are. Missing files are copied from the
   offline mirror :func:`fglcore.paths.mirror_root` (``FGL_DATA_MIRROR``, a
   folder in the same layout) when it holds every one of them (with them, the
   optional files the mirror has, e.g. a TU dataset's edge labels); otherwise PyG
   downloads them, with short connect/read timeouts (``FGL_DOWNLOAD_TIMEOUT``
   seconds, default 15) so that a machine without internet fails in seconds. Raw files with a known sha256
   (``checksums.json``) are verified once after they change; a marker in the
   raw folder records the verification. ``FGL_VERIFY_CHECKSUMS=0`` skips it.
2. The PyG class reads the raw files and writes ``processed/`` beside
   ``raw/`` under the data root (never into the mirror).

Both steps run under a file lock per dataset (``.fglcore.lock`` beside
``raw/``), so parallel workers on a cold data root never read a
``processed/`` file that another process is still writing.

A dataset that is neither present, nor in the mirror, nor downloadable raises
:class:`DatasetUnavailableError`, which names the missing files and the folder
to put them in.

Graph classification follows FedStar (Tan et al., AAAI 2023) and its official
code (``prepareData_multiDS``): one TU dataset per client, node labels as
one-hot features, ``OneHotDegree(max_degree)`` features for the social
datasets that have none (COLLAB 491, IMDB-BINARY 135, IMDB-MULTI 88) and the
2-d node coordinates of the Letter datasets (``use_node_attr=True``). Its four
settings are registered as groups: ``chem``, ``biochem``, ``biochemsn`` and
``biosncv``. Further TU datasets used across FGL benchmarks are registered
with the same rules (:data:`EXTRA_TU`); the REDDIT and GitHub social graphs,
whose maximum degrees (thousands) make one-hot degrees infeasible, get PyG's
``LocalDegreeProfile`` (5 features: degree and min/max/mean/std of the
neighbours' degrees; Cai & Wang 2018) instead.

A user's own graph is accepted wherever a registered name is: a path to a
file written by ``torch.save`` holding a PyG ``Data`` (node classification),
a list of ``Data`` (graph classification), or a PyG ``InMemoryDataset``
folder with its ``processed/`` file (or that file itself). A value is a
path when it contains a path separator, starts with ``~`` or ends in
``.pt``/``.pth`` (:func:`is_dataset_path`); no registered name does.
:func:`dataset_info` answers a name's or a path's task before any heavy
work, :func:`check_dataset` is the check configuration and notebook
validation call, and :func:`dataset_label` is what result rows record: the
registered name, or ``<file stem>@<first 8 hex digits of the file's
sha256>`` for a user's graph (README, "Use your own dataset").
"""
from __future__ import annotations

import contextlib
import difflib
import functools
import hashlib
import json
import os
import shutil
import socket
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import torch
from filelock import FileLock
from torch_geometric.data import Data, InMemoryDataset

from fglcore.config import ConfigError
from fglcore.files import sha256_file, update_with_tensor, write_atomic
from fglcore.paths import data_root, mirror_root
from fglcore.registry import Registry, UnknownNameError
from fglcore.settings import SETTINGS, setting

TASKS = ("node", "graph")
TASK_NAMES = {"node": "node-classification", "graph": "graph-classification"}
USER_FILE_SUFFIXES = (".pt", ".pth")
README_SECTION = 'README.md, section "Use your own dataset"'
TU_PARTS = ("A", "graph_indicator", "graph_labels", "node_labels", "node_attributes", "edge_labels",
            "edge_attributes", "graph_attributes")
PLANETOID_SPLITS = ("public", "full")
STATUSES = ("present", "mirror", "missing")

CHECKSUMS_FILE = Path(__file__).with_name("checksums.json")
VERIFIED_MARKER = ".fglcore_sha256_verified.json"
LOCK_FILE = ".fglcore.lock"
DEFAULT_DOWNLOAD_TIMEOUT_S: float = SETTINGS["download_timeout"].default

# Rebuilt mirror files whose bytes are confirmed identical to the original
# (git blob id equal to the canonical repository's, and for the later five a
# sha256 equal to an independent Git-LFS record; mirror README, note 1 and
# "added later"). Other rebuilt files (DD_A.txt, note 2) have no trusted sum.
CONFIRMED_REBUILDS = frozenset({
    "WikipediaNetwork/chameleon/geom_gcn/raw/out1_node_feature_label.txt",
    "Planetoid/PubMed/raw/ind.pubmed.allx",
    "Amazon/Computers/raw/amazon_electronics_computers.npz",
    "Coauthor/CS/raw/ms_academic_cs.npz",
    "Coauthor/Physics/raw/ms_academic_phy.npz",
})


class DatasetUnavailableError(FileNotFoundError):
    """A dataset's raw files are neither present, nor in the mirror, nor downloadable."""

    def __init__(self, message: str, *, name: str, missing_files: list[str], raw_dir: Path,
                 mirror_dir: Path | None = None):
        super().__init__(message)
        self.name = name
        self.missing_files = missing_files
        self.raw_dir = raw_dir
        self.mirror_dir = mirror_dir

    def __str__(self) -> str:
        return str(self.args[0])


class DatasetError(ConfigError):
    """A dataset value (registered name or path to a user's graph) is not accepted; the message says why."""


class UnknownDatasetError(DatasetError, UnknownNameError):
    """Neither a registered name nor a path: the message lists the names, a close match and the README section."""

    def __str__(self) -> str:
        return str(self.args[0])


class DatasetTaskError(DatasetError):
    """A node-classification dataset where a graph-classification one is needed, or the reverse."""


class UserDatasetError(DatasetError):
    """A user's graph file or folder is missing or malformed; the message names the file, the field and what is expected."""


class ChecksumMismatchError(RuntimeError):
    """A raw file's sha256 differs from the recorded one."""

    def __init__(self, message: str, *, mismatches: list[tuple[Path, str, str]]):
        super().__init__(message)
        self.mismatches = mismatches  # (path, expected, actual) per bad file


@dataclass(frozen=True)
class DatasetSpec:
    """How to obtain and load one registered dataset (or one group of TU datasets).

    ``raw_dir`` is relative to the data root and to the mirror, in PyG's
    layout; ``raw_files`` are the files PyG reads there, all required.
    ``optional_files`` are copied from the mirror too when it has them (TU
    files such as ``<NAME>_edge_labels.txt`` that PyG reads if present) but
    decide nothing about availability. A group has ``members`` (one TU
    dataset per client), ``raw_dir="TUDataset"`` and no raw files of its own.
    ``degree_features`` (``OneHotDegree(max_degree)``) or ``degree_profile``
    (``LocalDegreeProfile``) give node features to TU data that has none.
    """

    name: str
    task: str
    raw_dir: str
    raw_files: tuple[str, ...]
    members: tuple[str, ...] = ()
    description: str = ""
    pyg_class: str = ""
    use_node_attr: bool = False
    degree_features: int | None = None  # OneHotDegree(max_degree) for TU data without node features
    degree_profile: bool = False  # LocalDegreeProfile for TU data without node features and with huge degrees
    optional_files: tuple[str, ...] = ()
    builder: Callable[..., InMemoryDataset] | None = field(default=None, repr=False, compare=False)

    @property
    def is_group(self) -> bool:
        return bool(self.members)


@dataclass(frozen=True)
class DatasetStatus:
    """Where a dataset's raw files are.

    ``status`` is ``"present"`` (all raw files under the data root),
    ``"mirror"`` (the mirror can supply the missing ones) or ``"missing"``.
    ``path`` is the mirror's raw folder for ``"mirror"``, else the data
    root's raw folder (where missing files belong). ``size_bytes`` is the
    size the raw folder has (``"present"``/``"missing"``) or will have after
    copying (``"mirror"``).
    """

    name: str
    task: str
    status: str
    size_bytes: int
    path: Path


DATASETS: Registry[DatasetSpec] = Registry("dataset")


def is_dataset_path(value: str | os.PathLike) -> bool:
    """Whether a dataset value names a user's file or folder rather than a registered dataset.

    A path object, or a string containing a path separator (``/``, or the
    platform's), starting with ``~`` or ending in ``.pt``/``.pth``. No
    registered name has any of these (checked at registration), so
    ``"Cora"`` is always the registered Cora and ``"./Cora"`` always a path.
    """
    if isinstance(value, os.PathLike):
        return True
    if not isinstance(value, str):
        return False
    separators = {"/", os.sep} | ({os.altsep} if os.altsep else set())
    return (any(sep in value for sep in separators) or value.startswith("~")
            or value.lower().endswith(USER_FILE_SUFFIXES))


# --------------------------------------------------------------------------- registration


def _register(spec: DatasetSpec) -> None:
    if spec.task not in TASKS:
        raise ValueError(f"dataset {spec.name!r}: task must be one of {TASKS}, got {spec.task!r}")
    if is_dataset_path(spec.name):
        raise ValueError(f"dataset {spec.name!r}: a registered name must not look like a path "
                         f"(no path separator, no leading '~', no {'/'.join(USER_FILE_SUFFIXES)} suffix)")
    DATASETS.register(spec.name, spec)


def _planetoid(name: str, description: str) -> None:
    def build(root: Path, split: str = "public") -> InMemoryDataset:
        from torch_geometric.datasets import Planetoid

        return Planetoid(str(root / "Planetoid"), name, split=split)

    parts = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")
    files = tuple(f"ind.{name.lower()}.{part}" for part in parts)
    _register(DatasetSpec(name, "node", f"Planetoid/{name}/raw", files, description=description,
                          pyg_class="Planetoid", builder=build))


def _wikipedia_network(name: str, pyg_name: str, description: str) -> None:
    def build(root: Path) -> InMemoryDataset:
        from torch_geometric.datasets import WikipediaNetwork

        return WikipediaNetwork(str(root / "WikipediaNetwork"), pyg_name, geom_gcn_preprocess=True)

    _register(DatasetSpec(name, "node", f"WikipediaNetwork/{pyg_name}/geom_gcn/raw", _geom_gcn_files(pyg_name),
                          description=description, pyg_class="WikipediaNetwork", builder=build))


def _geom_gcn_files(prefix: str) -> tuple[str, ...]:
    """The raw files of Geom-GCN's preprocessing (Pei et al. 2020): features/labels, edges, ten 60/20/20 splits."""
    return ("out1_node_feature_label.txt", "out1_graph_edges.txt") + tuple(
        f"{prefix}_split_0.6_0.2_{i}.npz" for i in range(10))


def _webkb(name: str, description: str) -> None:
    pyg_name = name.lower()

    def build(root: Path) -> InMemoryDataset:
        from torch_geometric.datasets import WebKB

        return WebKB(str(root / "WebKB"), pyg_name)

    _register(DatasetSpec(name, "node", f"WebKB/{pyg_name}/raw", _geom_gcn_files(pyg_name), description=description,
                          pyg_class="WebKB", builder=build))


def _actor() -> None:
    def build(root: Path) -> InMemoryDataset:
        from torch_geometric.datasets import Actor

        return Actor(str(root / "Actor"))

    _register(DatasetSpec("Actor", "node", "Actor/raw", _geom_gcn_files("film"), pyg_class="Actor", builder=build,
                          description="actor co-occurrence graph, Geom-GCN preprocessing (Pei et al. 2020): "
                                      "7600 nodes, 932 features, 5 classes, 10 splits 60/20/20"))


def _amazon(name: str, description: str) -> None:
    def build(root: Path) -> InMemoryDataset:
        from torch_geometric.datasets import Amazon

        return Amazon(str(root / "Amazon"), name)

    _register(DatasetSpec(name, "node", f"Amazon/{name}/raw", (f"amazon_electronics_{name.lower()}.npz",),
                          description=description, pyg_class="Amazon", builder=build))


def _coauthor(name: str, description: str) -> None:
    def build(root: Path) -> InMemoryDataset:
        from torch_geometric.datasets import Coauthor

        return Coauthor(str(root / "Coauthor"), name)

    _register(DatasetSpec(name, "node", f"Coauthor/{name}/raw", (f"ms_academic_{name[:3].lower()}.npz",),
                          description=description, pyg_class="Coauthor", builder=build))


def _heterophilous(name: str, description: str) -> None:
    pyg_name = name.lower().replace("-", "_")

    def build(root: Path) -> InMemoryDataset:
        from torch_geometric.datasets import HeterophilousGraphDataset

        return HeterophilousGraphDataset(str(root / "HeterophilousGraphDataset"), pyg_name)

    _register(DatasetSpec(name, "node", f"HeterophilousGraphDataset/{pyg_name}/raw", (f"{pyg_name}.npz",),
                          description=description, pyg_class="HeterophilousGraphDataset", builder=build))


def _wikics() -> None:
    def build(root: Path) -> InMemoryDataset:
        from torch_geometric.datasets import WikiCS

        return WikiCS(str(root / "WikiCS"), is_undirected=True)

    _register(DatasetSpec("WikiCS", "node", "WikiCS/raw", ("data.json",), pyg_class="WikiCS", builder=build,
                          description="Wikipedia computer-science articles (Mernyei & Cangea 2020), 10 classes"))


def _flickr() -> None:
    def build(root: Path) -> InMemoryDataset:
        from torch_geometric.datasets import Flickr

        return Flickr(str(root / "Flickr"))

    _register(DatasetSpec("Flickr", "node", "Flickr/raw", ("adj_full.npz", "feats.npy", "class_map.json", "role.json"),
                          pyg_class="Flickr", builder=build,
                          description="Flickr image graph from GraphSAINT (Zeng et al. 2020), 7 classes"))


def _tu(name: str, parts: tuple[str, ...], description: str, *, use_node_attr: bool = False,
        degree_features: int | None = None, degree_profile: bool = False, optional: bool = False) -> None:
    """Register TU dataset ``name``; ``parts`` are the ``<name>_<part>.txt`` files it needs.

    With ``optional``, the other TU parts and the readme files are copied
    from the mirror as well when it has them (datasets whose complete file
    list is not pinned by the mirror).
    """
    def build(root: Path, force_reload: bool = False) -> InMemoryDataset:
        from torch_geometric.datasets import TUDataset
        from torch_geometric.transforms import LocalDegreeProfile, OneHotDegree

        # FedStar's code applies OneHotDegree(max_degree, cat=False) as a pre_transform.
        pre_transform = OneHotDegree(degree_features, cat=False) if degree_features is not None else None
        if degree_profile:
            pre_transform = LocalDegreeProfile()
        return TUDataset(str(root / "TUDataset"), name, use_node_attr=use_node_attr,
                         pre_transform=pre_transform, force_reload=force_reload)

    files = tuple(f"{name}_{part}.txt" for part in parts)
    extra = ()
    if optional:
        extra = tuple(f"{name}_{part}.txt" for part in TU_PARTS if part not in parts)
        extra += ("README.txt", f"{name}_label_readme.txt")
    _register(DatasetSpec(name, "graph", f"TUDataset/{name}/raw", files, description=description,
                          pyg_class="TUDataset", use_node_attr=use_node_attr, degree_features=degree_features,
                          degree_profile=degree_profile, optional_files=extra, builder=build))


def _group(name: str, members: tuple[str, ...], description: str) -> None:
    for member in members:
        DATASETS.get(member)  # members are registered first
    _register(DatasetSpec(name, "graph", "TUDataset", (), members=members, description=description))


_planetoid("Cora", "Planetoid citation graph (Yang et al. 2016): 2708 nodes, 1433 features, 7 classes")
_planetoid("CiteSeer", "Planetoid citation graph (Yang et al. 2016): 3327 nodes, 3703 features, 6 classes")
_planetoid("PubMed", "Planetoid citation graph (Yang et al. 2016): 19717 nodes, 500 features, 3 classes")
_wikipedia_network("Chameleon", "chameleon", "Wikipedia page graph, Geom-GCN preprocessing (Pei et al. 2020): "
                   "2277 nodes, 5 classes, 10 splits 60/20/20")
_wikipedia_network("Squirrel", "squirrel", "Wikipedia page graph, Geom-GCN preprocessing (Pei et al. 2020): "
                   "5201 nodes, 5 classes, 10 splits 60/20/20")
_amazon("Computers", "Amazon co-purchase graph (Shchur et al. 2018): 13752 nodes, 10 classes")
_amazon("Photo", "Amazon co-purchase graph (Shchur et al. 2018): 7650 nodes, 8 classes")
_coauthor("CS", "Microsoft Academic co-authorship graph (Shchur et al. 2018): 18333 nodes, 15 classes")
_coauthor("Physics", "Microsoft Academic co-authorship graph (Shchur et al. 2018): 34493 nodes, 5 classes")
_wikics()
_flickr()
_heterophilous("Amazon-ratings", "heterophilous product graph (Platonov et al. 2023): 24492 nodes, 5 classes")
_heterophilous("Roman-empire", "heterophilous word graph (Platonov et al. 2023): 22662 nodes, 18 classes")
_heterophilous("Minesweeper", "heterophilous synthetic grid (Platonov et al. 2023): 10000 nodes, 2 classes "
               "(the paper reports ROC AUC)")
_heterophilous("Tolokers", "heterophilous crowd-worker graph (Platonov et al. 2023): 11758 nodes, 2 classes "
               "(the paper reports ROC AUC)")
_heterophilous("Questions", "heterophilous question-answering graph (Platonov et al. 2023): 48921 nodes, 2 classes "
               "(the paper reports ROC AUC)")
_webkb("Cornell", "WebKB web-page graph, Geom-GCN preprocessing (Pei et al. 2020): 183 nodes, 5 classes, "
       "10 splits 60/20/20")
_webkb("Texas", "WebKB web-page graph, Geom-GCN preprocessing (Pei et al. 2020): 183 nodes, 5 classes, "
       "10 splits 60/20/20")
_webkb("Wisconsin", "WebKB web-page graph, Geom-GCN preprocessing (Pei et al. 2020): 251 nodes, 5 classes, "
       "10 splits 60/20/20")
_actor()


def _csbm(name: str, stands_for: str) -> None:
    def build(root: Path) -> InMemoryDataset:
        from fglcore.data.csbm import CSBMDataset

        return CSBMDataset(root / "CSBM" / name, name)

    from fglcore.data.csbm import SUBSTITUTES

    spec = SUBSTITUTES[name]
    _register(DatasetSpec(name, "node", f"CSBM/{name}/raw", (), pyg_class="CSBMDataset", builder=build,
                          description=f"SYNTHETIC substitute for {stands_for} (contextual SBM, local-bias digest "
                                      f"6.2): {spec.num_nodes} nodes, {spec.num_classes} classes, generated "
                                      f"from seed {spec.seed}"))


_csbm("Reddit-like", "Reddit")
_csbm("Products-like", "ogbn-products")

_A_GI_GL = ("A", "graph_indicator", "graph_labels")
_tu("MUTAG", _A_GI_GL + ("node_labels", "edge_labels"), "TU molecules: 188 graphs, 2 classes")
_tu("BZR", _A_GI_GL + ("node_labels", "node_attributes"), "TU molecules: 405 graphs, 2 classes")
_tu("COX2", _A_GI_GL + ("node_labels", "node_attributes"), "TU molecules: 467 graphs, 2 classes")
_tu("DHFR", _A_GI_GL + ("node_labels", "node_attributes"), "TU molecules: 756 graphs, 2 classes")
_tu("PTC_MR", _A_GI_GL + ("node_labels", "edge_labels"), "TU molecules: 344 graphs, 2 classes")
_tu("AIDS", _A_GI_GL + ("node_labels", "node_attributes", "edge_labels"), "TU molecules: 2000 graphs, 2 classes")
_tu("NCI1", _A_GI_GL + ("node_labels",), "TU molecules: 4110 graphs, 2 classes")
_tu("ENZYMES", _A_GI_GL + ("node_labels", "node_attributes"), "TU bioinformatics: 600 graphs, 6 classes")
_tu("DD", _A_GI_GL + ("node_labels",), "TU bioinformatics: 1178 graphs, 2 classes")
_tu("PROTEINS", _A_GI_GL + ("node_labels", "node_attributes"), "TU bioinformatics: 1113 graphs, 2 classes")
_tu("COLLAB", _A_GI_GL, "TU social: 5000 graphs, 3 classes; one-hot degree features (max 491)",
    degree_features=491)
_tu("IMDB-BINARY", _A_GI_GL, "TU social: 1000 graphs, 2 classes; one-hot degree features (max 135)",
    degree_features=135)
_tu("IMDB-MULTI", _A_GI_GL, "TU social: 1500 graphs, 3 classes; one-hot degree features (max 88)",
    degree_features=88)
for _level in ("low", "med", "high"):
    _tu(f"Letter-{_level}", _A_GI_GL + ("node_attributes",),
        f"TU computer vision: 2250 graphs, 15 classes; 2-d node coordinates ({_level} distortion)",
        use_node_attr=True)

# Further TU datasets of FGL benchmarks (GCFL/FedStar-style cross-dataset settings, FedGraphNN's social
# graphs, FS-G/OpenFGL molecule sets). Their file lists follow the TU collection's table (Morris et al.
# 2020): the files each needs are required, the others are copied from a mirror when it has them.
_NL = _A_GI_GL + ("node_labels",)
EXTRA_TU = (
    "REDDIT-BINARY", "REDDIT-MULTI-5K", "REDDIT-MULTI-12K", "github_stargazers",
    "NCI109", "Mutagenicity", "PTC_FM", "PTC_FR", "PTC_MM", "BZR_MD", "COX2_MD", "DHFR_MD", "ER_MD",
    "FRANKENSTEIN", "MSRC_9", "MSRC_21", "MSRC_21C",
)
"""TU datasets registered beyond FedStar's four groups (each alone, or with ``label_skew``)."""
for _name, _graphs, _classes in (("REDDIT-BINARY", 2000, 2), ("REDDIT-MULTI-5K", 4999, 5),
                                 ("REDDIT-MULTI-12K", 11929, 11), ("github_stargazers", 12725, 2)):
    _tu(_name, _A_GI_GL, f"TU social: {_graphs} graphs, {_classes} classes; LocalDegreeProfile features (5)",
        degree_profile=True, optional=True)
for _name, _graphs in (("NCI109", 4127), ("Mutagenicity", 4337), ("PTC_FM", 349), ("PTC_FR", 351),
                       ("PTC_MM", 336)):
    _tu(_name, _NL, f"TU molecules: {_graphs} graphs, 2 classes; one-hot node labels", optional=True)
for _name, _graphs in (("BZR_MD", 306), ("COX2_MD", 303), ("DHFR_MD", 393), ("ER_MD", 446)):
    _tu(_name, _NL, f"TU molecules, complete graphs with distances (Sutherland et al. 2003): {_graphs} graphs, "
        f"2 classes; one-hot node labels", optional=True)
_tu("FRANKENSTEIN", _A_GI_GL + ("node_attributes",), "TU molecules: 4337 graphs, 2 classes; 780-d node attributes",
    use_node_attr=True, optional=True)
for _name, _graphs, _classes in (("MSRC_9", 221, 8), ("MSRC_21", 563, 20), ("MSRC_21C", 209, 20)):
    _tu(_name, _NL, f"TU computer vision (image segments): {_graphs} graphs, {_classes} classes; one-hot node labels",
        optional=True)

_CHEM = ("MUTAG", "BZR", "COX2", "DHFR", "PTC_MR", "AIDS", "NCI1")
_BIO = ("ENZYMES", "DD", "PROTEINS")
_SN = ("COLLAB", "IMDB-BINARY", "IMDB-MULTI")
_CV = ("Letter-high", "Letter-low", "Letter-med")
_group("chem", _CHEM, "FedStar CHEM: 7 molecule datasets, one client each")
_group("biochem", _CHEM + _BIO, "FedStar BIO-CHEM: CHEM + 3 bioinformatics datasets, 10 clients")
_group("biochemsn", _CHEM + _BIO + _SN, "FedStar BIO-CHEM-SN: BIO-CHEM + 3 social datasets, 13 clients")
_group("biosncv", _BIO + _SN + _CV, "FedStar BIO-SN-CV: 3 bio + 3 social + 3 Letter datasets, 9 clients")


# --------------------------------------------------------------------------- names and paths


@dataclass(frozen=True)
class DatasetInfo:
    """What a dataset value is, answered without loading a registered dataset.

    ``name`` is the registered name, or the file's stem (a folder's name) for
    a user's graph; ``source`` is ``"registered"`` or ``"user"``; ``label``
    is what result rows record in their ``dataset`` column: the name, or
    ``"<stem>@<sha8>"`` with the first 8 hex digits of the sha256 of the
    file's bytes. ``path`` and ``sha256`` are set for a user's graph only.
    """

    name: str
    task: str
    source: str
    label: str
    description: str = ""
    path: Path | None = None
    sha256: str | None = None
    num_nodes: int | None = None  # of a node-classification graph: NODE_COUNTS, or the user's file

    @property
    def is_user(self) -> bool:
        return self.source == "user"


def dataset_info(value: str | os.PathLike) -> DatasetInfo:
    """Name or path -> :class:`DatasetInfo` (task, display name, label), before any heavy work.

    A registered name is looked up in the registry (nothing is read). A path
    (:func:`is_dataset_path`) is read once and validated
    (:mod:`fglcore.data.user_graphs`); the answer is cached until the file
    changes. Raises :class:`UnknownDatasetError` for an unknown name and
    :class:`UserDatasetError` for a missing or malformed file, both
    :class:`~fglcore.config.ConfigError`.
    """
    if not is_dataset_path(value):
        spec = _spec(value)
        return DatasetInfo(spec.name, spec.task, "registered", spec.name, spec.description,
                           num_nodes=NODE_COUNTS.get(spec.name))
    path = _user_path(value)
    if not path.exists():
        from fglcore.data.user_graphs import data_file

        data_file(path)  # raises the error naming the path
    source = _user_data_file(path)
    stat = source.stat()
    return _user_info(str(path), str(source), stat.st_size, stat.st_mtime_ns)


def check_dataset(value: Any, task: str | None = None) -> DatasetInfo:
    """The check configuration and notebook validation run on a ``dataset``/``datasets`` value.

    ``value`` must be a registered name or a path to a user's graph
    (:func:`dataset_info`); with ``task`` (``"node"`` or ``"graph"``) it must
    also be of that task, else :class:`DatasetTaskError` names both tasks.
    Every failure is a :class:`DatasetError` (a :class:`~fglcore.config.ConfigError`).
    """
    if task is not None and task not in TASKS:
        raise ValueError(f"task must be one of {TASKS} or None, got {task!r}")
    if not isinstance(value, (str, os.PathLike)):
        raise DatasetError(f"a dataset is a registered name or a path to your own graph, got "
                           f"{type(value).__name__} {value!r} (see {README_SECTION})")
    info = dataset_info(value)
    if task is not None and info.task != task:
        what = f"your graph {str(info.path)!r}" if info.is_user else f"{info.name!r}"
        raise DatasetTaskError(
            f"{what} is a {TASK_NAMES[info.task]} dataset, but a {TASK_NAMES[task]} dataset is needed here; "
            f"registered {task}-level datasets: {', '.join(dataset_names(task))}")
    return info


NODE_COUNTS: dict[str, int] = {
    "Cora": 2708, "CiteSeer": 3327, "PubMed": 19717, "Chameleon": 2277, "Squirrel": 5201, "Cornell": 183,
    "Texas": 183, "Wisconsin": 251, "Actor": 7600, "Computers": 13752, "Photo": 7650, "CS": 18333,
    "Physics": 34493, "WikiCS": 11701, "Flickr": 89250, "Roman-empire": 22662, "Amazon-ratings": 24492,
    "Minesweeper": 10000, "Tolokers": 11758, "Questions": 48921, "Reddit-like": 30000, "Products-like": 50000,
}
"""Nodes of every registered node-classification dataset, as PyG loads it, so that a configuration's number
of clients is checked before anything loads (``tests/test_datasets.py`` checks them against the loaded data)."""


GRAPH_COUNTS: dict[str, int] = {
    "AIDS": 2000, "BZR": 405, "COX2": 467, "DHFR": 756, "ENZYMES": 600, "IMDB-BINARY": 1000, "Letter-low": 2250,
    "MUTAG": 188, "NCI1": 4110, "PROTEINS": 1113, "PTC_MR": 344,
}
"""Graphs of TU datasets, as loaded here (checked by ``tests/test_checks.py``), so that partitioners that cut a
dataset into shards are checked before anything loads; a dataset missing here is checked when it loads."""


def num_nodes(value: str | os.PathLike) -> int:
    """Nodes of a node-classification dataset (registered name or user's graph), without loading a registered one."""
    info = check_dataset(value, "node")
    if info.num_nodes is None:
        raise ValueError(f"NODE_COUNTS has no entry for the registered node dataset {info.name!r}: add it")
    return info.num_nodes


def dataset_label(value: str | os.PathLike) -> str:
    """What result rows record for a dataset value: the registered name, or ``<stem>@<sha8>`` for a user's graph."""
    return dataset_info(value).label


def dataset_names(task: str | None = None) -> list[str]:
    """Registered names, optionally only those of one task (``"node"`` or ``"graph"``, groups included)."""
    if task is not None and task not in TASKS:
        raise ValueError(f"task must be one of {TASKS} or None, got {task!r}")
    return [name for name in DATASETS.names() if task is None or DATASETS.get(name).task == task]


def group_members(name: str) -> list[str]:
    """The TU datasets of a FedStar group (one per client), or ``[name]`` for a single graph dataset or user path."""
    info = check_dataset(name, "graph")
    if info.is_user:
        return [name]
    spec = DATASETS.get(name)
    return list(spec.members) if spec.is_group else [name]


# --------------------------------------------------------------------------- loading


def load_node_data(name: str, *, planetoid_split: str = "public") -> Data:
    """The single graph of a node-classification dataset (registered name or user's path), undirected.

    ``num_classes`` and ``name`` are set on the returned ``Data``. Planetoid
    datasets keep PyG's masks for ``planetoid_split`` (``"public"``: 20 per
    class / 500 / 1000; ``"full"``: every other node trains). The Geom-GCN
    datasets (Chameleon, Squirrel, Cornell, Texas, Wisconsin, Actor) and
    the heterophilous ones keep PyG's masks of shape ``[num_nodes, 10]``
    (ten fixed splits); a random split protocol draws its own masks, and the
    dataset-mask splits refuse them. Directed edges (Geom-GCN's) are
    symmetrised here, self-loops kept. A user's graph keeps its own masks
    (if any), is symmetrised the same way, and is named by its file stem.
    """
    info = check_dataset(name, "node")
    if planetoid_split not in PLANETOID_SPLITS:
        raise ValueError(f"planetoid_split must be one of {PLANETOID_SPLITS}, got {planetoid_split!r}")
    spec = None if info.is_user else DATASETS.get(name)
    if spec is None or spec.pyg_class != "Planetoid":
        if planetoid_split != "public":
            raise ValueError(f"planetoid_split applies only to Planetoid datasets (Cora, CiteSeer, PubMed), "
                             f"not to {name!r}")
    if info.is_user:
        from fglcore.data.user_graphs import read_user_dataset

        data = read_user_dataset(info.path)
        num_classes = int(data.num_classes)
    else:
        options: dict[str, Any] = {"split": planetoid_split} if spec.pyg_class == "Planetoid" else {}
        with dataset_lock(name):
            ensure_raw(name)
            dataset = spec.builder(data_root(), **options)
        data = dataset[0]
        num_classes = int(dataset.num_classes)
    if not data.is_undirected():
        from torch_geometric.transforms import ToUndirected

        data = ToUndirected()(data)
    data.num_classes = num_classes
    data.name = info.name
    return data


def load_graph_dataset(name: str) -> InMemoryDataset:
    """One graph-classification dataset (registered TU name or user's path) with node features ``x`` on every graph.

    Features follow FedStar's code: one-hot node labels (``use_node_attr=False``),
    ``OneHotDegree`` for the social datasets, 2-d coordinates for Letter-*,
    ``LocalDegreeProfile`` for the REDDIT and GitHub graphs.
    For a group, load each of :func:`group_members`. A user's graphs come as
    a :class:`~fglcore.data.user_graphs.UserGraphDataset` named by the file stem.
    """
    info = check_dataset(name, "graph")
    if info.is_user:
        from fglcore.data.user_graphs import read_user_dataset

        return read_user_dataset(info.path)
    spec = DATASETS.get(name)
    if spec.is_group:
        raise ValueError(f"{name!r} is a group of TU datasets; load each of group_members({name!r}) = "
                         f"{list(spec.members)} instead")
    with dataset_lock(name):
        ensure_raw(name)
        dataset = spec.builder(data_root())
        if dataset._data.x is None and (spec.degree_features is not None or spec.degree_profile):
            # processed/ was written without the degree pre_transform (e.g. by a bare TUDataset call).
            dataset = spec.builder(data_root(), force_reload=True)
    if dataset._data.x is None:
        raise RuntimeError(f"TU dataset {name!r} has no node features and no degree features are configured")
    return dataset


def dataset_lock(name: str) -> FileLock:
    """An inter-process lock on one dataset's folder under the data root (``<raw_dir>/../.fglcore.lock``).

    :func:`load_node_data` and :func:`load_graph_dataset` hold it while raw
    files are copied and PyG writes ``processed/``: without it, two workers
    starting on a cold data root can read a half-written processed file.
    A user's graph is only read, so it has no lock.
    """
    spec = _registered(name, "dataset_lock")
    if spec.is_group:
        raise ValueError(f"{name!r} is a group of TU datasets; lock each of group_members({name!r}) = "
                         f"{list(spec.members)} instead")
    folder = (data_root() / spec.raw_dir).parent
    folder.mkdir(parents=True, exist_ok=True)
    return FileLock(folder / LOCK_FILE)


def ensure_raw(name: str) -> Path:
    """Make the raw files of ``name`` present under the data root and return its raw folder.

    Order: files already there; else a copy of the missing files from the
    mirror (``<mirror>/<raw_dir>/``; with them, the optional files the
    mirror has and the data root lacks); else PyG's download. Known sha256
    sums are then verified (once per change). For a group, every member is
    ensured and the ``TUDataset`` folder returned.
    """
    spec = _registered(name, "ensure_raw")
    if spec.is_group:
        for member in spec.members:
            ensure_raw(member)
        return data_root() / spec.raw_dir

    raw = data_root() / spec.raw_dir
    missing = _missing_files(raw, spec.raw_files)
    written: list[Path] = []
    source = "already in the data root"
    if missing:
        _drop_processed(spec)  # processed/ must be rebuilt from the raw files about to be written
        mirror_dir = _mirror_dir(spec)
        if mirror_dir is not None and not _missing_files(mirror_dir, missing):
            extra = [f for f in spec.optional_files if not (raw / f).is_file() and (mirror_dir / f).is_file()]
            written = _copy_files(mirror_dir, raw, missing + extra)
            source = f"copied from the mirror {mirror_dir}"
        else:
            written = _download(spec, raw, missing, mirror_dir)
            source = "downloaded by PyG"
    if checksums_enabled():
        # The known sums are those of the mirror's copies; an official download may be
        # re-packed upstream (TU zips), so there a mismatch warns instead of failing.
        _verify(spec, raw, written, source, strict=source != "downloaded by PyG")
    return raw


def dataset_status(name: str) -> DatasetStatus:
    """Whether ``name`` is present, can be copied from the mirror, or is missing (nothing is copied).

    For a user's path: ``"present"`` with its task and size when the file
    (or folder) exists and is valid, ``"missing"`` with task ``""`` when
    nothing is there; a malformed file raises :class:`UserDatasetError`.
    """
    if is_dataset_path(name):
        path = _user_path(name)
        if not path.exists():
            return DatasetStatus(path.stem, "", "missing", 0, path)
        info = dataset_info(name)
        return DatasetStatus(info.name, info.task, "present", _user_data_file(path).stat().st_size, path)
    spec = _spec(name)
    if spec.is_group:
        statuses = [dataset_status(member) for member in spec.members]
        worst = max(STATUSES.index(s.status) for s in statuses)
        return DatasetStatus(name, spec.task, STATUSES[worst], sum(s.size_bytes for s in statuses),
                             data_root() / spec.raw_dir)
    raw = data_root() / spec.raw_dir
    missing = _missing_files(raw, spec.raw_files)
    present_bytes = sum((raw / f).stat().st_size for f in spec.raw_files if f not in missing)
    if not missing:
        return DatasetStatus(name, spec.task, "present", present_bytes, raw)
    mirror_dir = _mirror_dir(spec)
    if mirror_dir is not None and not _missing_files(mirror_dir, missing):
        mirror_bytes = sum((mirror_dir / f).stat().st_size for f in missing)
        return DatasetStatus(name, spec.task, "mirror", present_bytes + mirror_bytes, mirror_dir)
    return DatasetStatus(name, spec.task, "missing", present_bytes, raw)


AVAILABILITY = ("available", "missing", "not registered")
"""What a run can count on (:func:`availability`): present and in the mirror are the same to a run."""


def availability(name: str) -> str:
    """``"available"`` (raw files present, or in the mirror: a run copies them), ``"missing"`` (registered
    but nowhere here) or ``"not registered"`` (no loader, e.g. ogbn-arxiv); a user's path is available when
    it exists. The same answer on every machine that holds the same data, which :func:`dataset_status`'s
    present-or-mirror distinction is not: the tables of datasets in the notebooks print this."""
    if not is_dataset_path(name) and name not in DATASETS:
        return "not registered"
    return "missing" if dataset_status(name).status == "missing" else "available"


def available(names: Iterable[str]) -> list[str]:
    """The datasets of ``names`` that are :func:`availability` ``"available"``, in the given order."""
    return [name for name in names if availability(name) == "available"]


def datasets_table(values: list[str] | None = None) -> str:
    """The text ``fgl datasets`` prints: name, task, status, size and path of each value, then how to add your own.

    ``values`` are names or paths; by default every registered dataset.
    """
    lines = [f"{'name':<20}{'task':<7}{'status':<9}{'size':>10}  path"]
    for value in values or dataset_names():
        s = dataset_status(value)
        size = f"{s.size_bytes / 2**20:.1f} MiB" if s.size_bytes else "-"
        lines.append(f"{s.name:<20}{s.task or '?':<7}{s.status:<9}{size:>10}  {s.path}")
        if is_dataset_path(value) and s.status == "present":
            info = dataset_info(value)
            lines.append(f"{'':<20}{info.description}; results record it as {info.label!r}")
    lines += [
        "",
        "status: present = raw files in the data root (FGL_DATA); mirror = copied from FGL_DATA_MIRROR on first use;",
        "missing = neither (PyG downloads it when online, else the run stops naming the files to put where).",
        "Your own graph: pass the path of a file saved with torch.save (a torch_geometric.data.Data for node",
        "classification, a list of Data for graph classification, or a PyG dataset folder) wherever a dataset",
        f"name is accepted, e.g. fgl run NOTEBOOK -p dataset /path/to/graph.pt ({README_SECTION}).",
    ]
    return "\n".join(lines)


def data_checksum(data: Data) -> str:
    """A stable sha256 (hex) of a graph: ``num_nodes``, ``edge_index``, ``y`` and ``x`` (when set).

    Dtypes and shapes are hashed with the bytes, so equal digests mean equal
    tensors. Used in cache keys (partitions, structure encodings).
    """
    digest = hashlib.sha256(f"num_nodes={data.num_nodes}".encode())
    for key in ("edge_index", "y", "x"):
        value = getattr(data, key, None)
        if value is None:
            continue
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"data.{key} must be a tensor to be checksummed, got {type(value).__name__}")
        update_with_tensor(digest, key, value)
    return digest.hexdigest()


def checksums_enabled() -> bool:
    """False when ``FGL_VERIFY_CHECKSUMS`` is ``0``/``false``/``no``/``off``."""
    return setting("verify_checksums")


@functools.lru_cache(maxsize=1)
def known_checksums() -> dict[str, str]:
    """``{"<raw_dir>/<file>": sha256}`` from ``checksums.json``."""
    return json.loads(CHECKSUMS_FILE.read_text())


def checksums_from_provenance(provenance_tsv: str | os.PathLike) -> dict[str, str]:
    """Build ``checksums.json`` from the mirror's ``PROVENANCE.tsv``.

    Keeps files whose bytes are the original ones: rebuilt files only when
    confirmed identical (:data:`CONFIRMED_REBUILDS`).
    """
    sums: dict[str, str] = {}
    lines = Path(provenance_tsv).read_text().splitlines()
    header = lines[0].split("\t")
    for line in lines[1:]:
        if not line.strip():
            continue
        row = dict(zip(header, line.split("\t")))
        path = row["file"]
        if "RECONSTRUCTED" in row["source_path"] and path not in CONFIRMED_REBUILDS:
            continue
        sums[path] = row["sha256"]
    return dict(sorted(sums.items()))


# --------------------------------------------------------------------------- raw files


def _spec(name: Any) -> DatasetSpec:
    """The registered spec of ``name``, or an :class:`UnknownDatasetError` that says how to use your own graph."""
    if isinstance(name, str) and name in DATASETS:
        return DATASETS.get(name)
    accepted = DATASETS.names()
    close = difflib.get_close_matches(str(name), accepted, n=1)
    if not close:  # case slips ("cora", "roman-empire") are the commonest
        close = [n for n in accepted if n.lower() == str(name).lower()][:1]
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    exists = isinstance(name, str) and Path(name).exists()
    local = (f" A file or folder {name!r} exists here: write ./{name} to use it as your own dataset."
             if exists else "")
    raise UnknownDatasetError(
        f"unknown dataset {name!r}{hint}; accepted: {', '.join(accepted)}.{local} To use your own graph, give "
        f"the path of a file saved with torch.save (a torch_geometric.data.Data for node classification, a list "
        f"of Data for graph classification) or of a PyG dataset folder; see {README_SECTION}")


def _registered(name: str, caller: str) -> DatasetSpec:
    if is_dataset_path(name):
        raise ValueError(f"{caller} takes a registered dataset name; {str(name)!r} is a path to your own graph, "
                         f"which has no raw files to manage")
    return _spec(name)


def _user_path(value: str | os.PathLike) -> Path:
    if "\x00" in os.fspath(value):  # the OS would refuse it with a bare ValueError
        raise UserDatasetError(f"{os.fspath(value)!r} is not a path to a graph: it contains a NUL character "
                               f"(see {README_SECTION})")
    try:
        return Path(value).expanduser().resolve()
    except RuntimeError as error:  # "~name" of a user who does not exist
        raise UserDatasetError(f"{os.fspath(value)!r} is not a path to a graph: {error} (see {README_SECTION})") \
            from error


def _user_data_file(path: Path) -> Path:
    from fglcore.data.user_graphs import data_file

    return data_file(path)


@functools.lru_cache(maxsize=64)
def _user_info(path: str, source: str, size: int, mtime_ns: int) -> DatasetInfo:
    """:class:`DatasetInfo` of a user's graph; cached per (file, size, mtime), so a changed file is read again."""
    from fglcore.data.user_graphs import UserGraphDataset, describe, file_sha256, read_user_dataset

    content = read_user_dataset(Path(path))
    task = "graph" if isinstance(content, UserGraphDataset) else "node"
    sha = file_sha256(Path(path))
    name = Path(path).stem if Path(path).is_file() else Path(path).name
    nodes = None if task == "graph" else int(content.num_nodes)
    return DatasetInfo(name, task, "user", f"{name}@{sha[:8]}", f"your graph: {describe(content)}", Path(path), sha,
                       nodes)


def _missing_files(folder: Path, files: tuple[str, ...] | list[str]) -> list[str]:
    return [f for f in files if not (folder / f).is_file()]


def _mirror_dir(spec: DatasetSpec) -> Path | None:
    mirror = mirror_root()
    return None if mirror is None else mirror / spec.raw_dir


def _copy_files(source: Path, target: Path, files: list[str]) -> list[Path]:
    """Copy ``files`` from ``source`` to ``target``; each appears atomically (temp file, then rename)."""
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name in files:
        write_atomic(target / name, lambda partial: shutil.copyfile(source / name, partial))
        written.append(target / name)
    return written


def _drop_processed(spec: DatasetSpec) -> None:
    """Raw files changed: PyG must rebuild ``processed/`` from them."""
    processed = data_root() / Path(spec.raw_dir).parent / "processed"
    if processed.is_dir():
        shutil.rmtree(processed)


def _download_timeout() -> float:
    """``FGL_DOWNLOAD_TIMEOUT`` (:mod:`fglcore.settings`, default :data:`DEFAULT_DOWNLOAD_TIMEOUT_S`)."""
    return setting("download_timeout")


@contextlib.contextmanager
def _network_timeouts(seconds: float) -> Iterator[None]:
    """Bound connect and read waits of PyG's downloads (urllib and fsspec/aiohttp), not their total time."""
    import fsspec.config

    previous_socket = socket.getdefaulttimeout()
    previous_conf = {proto: fsspec.config.conf.get(proto) for proto in ("http", "https")}
    socket.setdefaulttimeout(seconds)
    try:
        import aiohttp

        timeout = aiohttp.ClientTimeout(total=None, sock_connect=seconds, sock_read=seconds)
        for proto in ("http", "https"):
            conf = dict(previous_conf[proto] or {})
            conf["client_kwargs"] = {**conf.get("client_kwargs", {}), "timeout": timeout}
            fsspec.config.conf[proto] = conf
    except ImportError:  # fsspec's http filesystem is unavailable without aiohttp anyway
        pass
    try:
        yield
    finally:
        socket.setdefaulttimeout(previous_socket)
        for proto, conf in previous_conf.items():
            if conf is None:
                fsspec.config.conf.pop(proto, None)
            else:
                fsspec.config.conf[proto] = conf


def _download(spec: DatasetSpec, raw: Path, missing: list[str], mirror_dir: Path | None) -> list[Path]:
    """Let PyG download (and process) ``spec``; on failure remove partial files and explain what is missing."""
    before = set(os.listdir(raw)) if raw.is_dir() else set()
    try:
        with _network_timeouts(_download_timeout()):
            spec.builder(data_root())
        failure = None
    except Exception as exc:  # noqa: BLE001 - network errors come as OSError, aiohttp or fsspec errors
        if not _missing_files(raw, spec.raw_files):
            raise  # the files arrived; processing failed, which is not an availability problem
        failure = exc
    new_entries = sorted(set(os.listdir(raw)) - before) if raw.is_dir() else []
    still_missing = _missing_files(raw, spec.raw_files)
    if failure is None and not still_missing:
        return [raw / entry for entry in new_entries if entry in spec.raw_files]
    for entry in new_entries:
        path = raw / entry
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    if failure is None:
        failure = FileNotFoundError(f"PyG's download did not produce {', '.join(still_missing)}")
    raise _unavailable(spec, raw, missing, mirror_dir, failure) from failure


def _unavailable(spec: DatasetSpec, raw: Path, missing: list[str], mirror_dir: Path | None,
                 failure: BaseException) -> DatasetUnavailableError:
    lines = [
        f"dataset {spec.name!r} is not available: {len(missing)} raw file(s) missing: {', '.join(missing)}.",
        f"Put them in {raw}",
        f"  (or set FGL_DATA_MIRROR to a folder holding {spec.raw_dir}/ in PyG's layout).",
    ]
    if mirror_dir is None:
        lines.append("Mirror: none checked (FGL_DATA_MIRROR is not set).")
    else:
        if mirror_dir.is_dir():
            lines.append(f"Mirror checked: {mirror_dir} (lacks {', '.join(_missing_files(mirror_dir, missing))}).")
        else:
            lines.append(f"Mirror checked: {mirror_dir} (no such folder).")
    lines.append(f"PyG's download failed: {type(failure).__name__}: {failure}")
    return DatasetUnavailableError("\n".join(lines), name=spec.name, missing_files=list(missing), raw_dir=raw,
                                   mirror_dir=mirror_dir)


def _file_signature(path: Path) -> list[int]:
    stat = path.stat()
    return [stat.st_size, stat.st_mtime_ns]


def _verify(spec: DatasetSpec, raw: Path, written: list[Path], source: str, strict: bool = True) -> None:
    """Check known sha256 sums of the raw files, unless a marker says these exact files passed already."""
    sums = known_checksums()
    checked = spec.raw_files + tuple(f for f in spec.optional_files if (raw / f).is_file())
    expected = {f: sums[f"{spec.raw_dir}/{f}"] for f in checked if f"{spec.raw_dir}/{f}" in sums}
    if not expected:
        return
    marker = raw / VERIFIED_MARKER
    signatures = {f: _file_signature(raw / f) + [sha] for f, sha in expected.items()}
    if marker.is_file():
        try:
            if json.loads(marker.read_text()) == signatures:
                return
        except (OSError, ValueError):
            pass
    mismatches = []
    for name, sha in expected.items():
        actual = sha256_file(raw / name)
        if actual != sha:
            mismatches.append((raw / name, sha, actual))
    if mismatches and not strict:
        warnings.warn(
            f"dataset {spec.name!r} ({source}): sha256 differs from the mirror's copy for "
            f"{', '.join(p.name for p, _, _ in mismatches)}; using the downloaded files",
            stacklevel=3,
        )
        return
    if mismatches:
        marker.unlink(missing_ok=True)
        _drop_processed(spec)
        removed = [p for p in written if p.exists()]
        for path in removed:
            path.unlink()
        lines = [f"sha256 mismatch in the raw files of dataset {spec.name!r} ({source}):"]
        lines += [f"  {path}: expected {exp}, got {act}" for path, exp, act in mismatches]
        if removed:
            lines.append(f"The files written by this call were removed again: {', '.join(p.name for p in removed)}.")
        lines.append("Replace them with the original files, or set FGL_VERIFY_CHECKSUMS=0 to skip this check.")
        raise ChecksumMismatchError("\n".join(lines), mismatches=mismatches)
    write_atomic(marker, lambda partial: partial.write_text(json.dumps(signatures, sort_keys=True)))


# --------------------------------------------------------------------------- structure only


def load_structure(name: str) -> Data:
    """A node dataset's graph without its node features: ``edge_index``, ``y`` and the split masks.

    For structure statistics such as FedSpray's Table 1 (Fu et al., KDD
    2024): the graph is loaded by :func:`load_node_data` (same node ids,
    labels, undirected edges and masks) and ``x`` is dropped, so large
    feature matrices are not kept alive. ``num_classes`` and ``name`` are set.
    """
    data = load_node_data(name)
    data.num_nodes = data.num_nodes  # fixed before x goes: PyG would otherwise infer it from edges
    data.x = None
    return data
