"""A user's own graph, accepted wherever a registered dataset name is.

Three forms are read (README, "Use your own dataset"):

* a file written by ``torch.save`` holding one PyG ``Data``: a
  node-classification graph with ``x`` (float32 ``[N, F]``), ``y`` (int64
  ``[N]``), ``edge_index`` (int64 ``[2, E]``, ids in ``0..N-1``) and
  optionally ``train_mask``/``val_mask``/``test_mask`` (bool ``[N]``, or
  ``[N, S]`` for ``S`` splits as Geom-GCN's datasets; all three or none);
* a file holding a list of ``Data``: a graph-classification dataset, each
  graph with ``x`` (float32 ``[n_i, F]``, the same ``F`` for all),
  ``edge_index`` (int64, ids in ``0..n_i-1``) and one label ``y`` (int64,
  shape ``[]`` or ``[1]``);
* a PyG ``InMemoryDataset`` folder saved with its ``processed/`` file (or
  that processed file itself, e.g. ``processed/data.pt``): graph
  classification when it holds several graphs, node classification when it
  holds one (as PyG stores Cora).

Files are read with ``torch.load(weights_only=True)``, allowing only PyG's
data containers besides tensors and plain Python values, so loading a file
never runs code from it; anything else (numpy arrays, custom classes) is
refused with a message saying so. Every check below fails with a
:class:`~fglcore.data.datasets.UserDatasetError` that names the file, the
field and what is expected, before any training starts.
"""
from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from torch_geometric.data import Data, InMemoryDataset

from fglcore.data.datasets import README_SECTION, UserDatasetError
from fglcore.files import sha256_file

PROCESSED_SKIPPED = ("pre_transform.pt", "pre_filter.pt")
"""Files PyG writes into ``processed/`` beside the data, never read as data."""


class UserGraphDataset(InMemoryDataset):
    """Graphs read from a user's file or folder, held in memory (PyG's collated ``data`` and ``slices``).

    Behaves as the PyG datasets :func:`~fglcore.data.datasets.load_graph_dataset`
    returns for registered names: ``len``, indexing and slicing, ``y``,
    ``num_classes``, ``num_features``. ``name`` is the file's stem.
    """

    def __init__(self, data: Data, slices: dict[str, Tensor], name: str):
        super().__init__(root=None)  # nothing to download or process: the graphs are given
        self._data, self.slices = data, slices
        self.name = name

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.name!r}, {len(self)} graphs)"


def read_user_dataset(path: Path) -> Data | UserGraphDataset:
    """The validated content of ``path``: a ``Data`` (node task) or a :class:`UserGraphDataset` (graph task).

    The node graph is returned as saved (no symmetrisation); ``num_classes``
    is set (the file's own when it is an int at least ``y.max() + 1``) and
    ``name`` is the file's stem.
    """
    path = Path(path)
    source = data_file(path)
    content = _safe_load(source)
    name = path.stem if path.is_file() else path.name
    if isinstance(content, Data):
        return _node_graph(content, source, name)
    if isinstance(content, (list, tuple)) and content and all(isinstance(g, Data) for g in content):
        return _graph_dataset(list(content), source, name)
    if isinstance(content, tuple) and len(content) in (2, 3, 4) and isinstance(content[1], (dict, type(None))):
        dataset = _processed_dataset(content, source, name)
        if len(dataset) == 1:  # one graph: a node dataset stored as PyG stores Cora
            return _node_graph(dataset[0], source, name)
        _check_graphs(dataset, source)
        return dataset
    what = f"a list of {len(content)} objects, not all Data" if isinstance(content, (list, tuple)) else \
        f"a {type(content).__name__}"
    raise UserDatasetError(
        f"{source}: holds {what}; expected a torch_geometric.data.Data (node classification), a list of Data "
        f"(graph classification) or a PyG InMemoryDataset processed file (see {README_SECTION})")


def data_file(path: Path) -> Path:
    """The file to read for ``path``: the path itself, or a dataset folder's single ``processed/*.pt`` file."""
    path = Path(path)
    if not path.exists():
        raise UserDatasetError(f"{path}: no such file or folder. A dataset value that is a path must name a file "
                               f"saved with torch.save or a PyG dataset folder (see {README_SECTION})")
    if path.is_file():
        return path
    folder = path / "processed" if (path / "processed").is_dir() else path
    candidates = sorted(p for p in folder.glob("*.pt") if p.name not in PROCESSED_SKIPPED)
    if len(candidates) != 1:
        found = ", ".join(p.name for p in candidates) or "none"
        raise UserDatasetError(f"{path}: a dataset folder must hold exactly one processed data file "
                               f"(processed/*.pt besides {', '.join(PROCESSED_SKIPPED)}); found: {found}. "
                               f"Give the path of the file to use instead")
    return candidates[0]


def file_sha256(path: Path) -> str:
    """sha256 (hex) of the bytes :func:`read_user_dataset` reads for ``path``."""
    return sha256_file(data_file(path))


def describe(content: Data | UserGraphDataset) -> str:
    """One line on what a user's dataset holds, e.g. ``300 nodes, 600 edges, 16 features, 3 classes, masks``."""
    if isinstance(content, Data):
        masks = "train/val/test masks" if getattr(content, "train_mask", None) is not None else "no masks"
        return (f"{content.num_nodes} nodes, {content.num_edges} edges, {content.num_features} features, "
                f"{content.num_classes} classes, {masks}")
    return f"{len(content)} graphs, {content.num_features} features, {content.num_classes} classes"


# --------------------------------------------------------------------------- reading


def _safe_load(path: Path) -> Any:
    from torch_geometric.data.data import DataEdgeAttr, DataTensorAttr
    from torch_geometric.data.storage import EdgeStorage, GlobalStorage, NodeStorage

    try:
        with torch.serialization.safe_globals([DataEdgeAttr, DataTensorAttr, GlobalStorage, NodeStorage,
                                               EdgeStorage]):
            return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        detail = next((line.strip() for line in str(err).splitlines() if "global" in line.lower()), "")
        if not detail:  # not a pickle torch.save wrote (a text file, a truncated file)
            raise UserDatasetError(f"{path}: not readable as a file written by torch.save ({_last_line(err)})") \
                from None
        raise UserDatasetError(
            f"{path}: holds objects other than tensors and PyG Data ({detail}); "
            f"such files are not loaded because unpickling them can run code. Save a Data whose attributes "
            f"are tensors, ints or strings (convert numpy arrays with torch.from_numpy)") from None
    except (RuntimeError, EOFError, OSError, ValueError) as err:
        raise UserDatasetError(f"{path}: not readable as a file written by torch.save "
                               f"({type(err).__name__}: {err})") from None


def _last_line(err: BaseException) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip() and "documentation" not in line]
    return lines[-1] if lines else type(err).__name__


def _processed_dataset(content: tuple, source: Path, name: str) -> UserGraphDataset:
    """PyG's processed format: ``(data, slices)``, ``(data, slices, data_cls)`` or ``(data, slices, sizes, data_cls)``.

    ``slices`` is ``None`` when PyG saved a single graph (the dataset then has length 1).
    """
    data, slices = content[0], content[1]
    data_cls = content[-1] if len(content) in (3, 4) else Data
    if data_cls is not Data:
        raise UserDatasetError(f"{source}: a processed dataset of {getattr(data_cls, '__name__', data_cls)}; "
                               f"only homogeneous torch_geometric.data.Data graphs are accepted")
    if isinstance(data, dict):
        data = Data.from_dict(data)
    if not isinstance(data, Data) or not all(isinstance(v, Tensor) for v in (slices or {}).values()):
        raise UserDatasetError(f"{source}: not a PyG InMemoryDataset processed file (expected collated Data and "
                               f"a dict of slice tensors)")
    return UserGraphDataset(data, slices, name)


# --------------------------------------------------------------------------- node classification


def _node_graph(data: Data, source: Path, name: str) -> Data:
    n = _features(data, source, "x")
    if data.num_nodes != n:
        raise UserDatasetError(f"{source}: num_nodes is {data.num_nodes} but x has {n} rows; expected one row of "
                               f"x per node")
    y = data.get("y")
    _require(isinstance(y, Tensor), source, "y", f"missing; expected int64 node labels of shape [{n}]")
    _require(y.dtype == torch.long, source, "y", f"has dtype {y.dtype}; expected torch.int64 (use y.long())")
    _require(tuple(y.shape) == (n,), source, "y", f"has shape {list(y.shape)}; expected [{n}], one label per node")
    num_classes = _classes(y, source, "y")
    _edges(data.get("edge_index"), n, source, "edge_index")
    masks = {key: data.get(key) for key in ("train_mask", "val_mask", "test_mask")}
    given = [key for key, mask in masks.items() if mask is not None]
    if given and len(given) != 3:
        raise UserDatasetError(f"{source}: has {', '.join(given)} but not "
                               f"{', '.join(k for k in masks if k not in given)}; give all three masks or none "
                               f"(without masks, use a split that draws them, e.g. per_client_random)")
    for key in given:
        mask = masks[key]
        _require(isinstance(mask, Tensor) and mask.dtype == torch.bool, source, key,
                 f"has {getattr(mask, 'dtype', type(mask).__name__)}; expected a torch.bool tensor")
        _require(mask.dim() in (1, 2) and mask.size(0) == n, source, key,
                 f"has shape {list(mask.shape)}; expected [{n}] (or [{n}, S] for S splits)")
    if given and len({tuple(masks[k].shape) for k in given}) != 1:
        raise UserDatasetError(f"{source}: train_mask, val_mask and test_mask must have the same shape, got "
                               f"{', '.join(f'{k} {list(masks[k].shape)}' for k in given)}")
    stated = data.get("num_classes")
    data.num_classes = stated if isinstance(stated, int) and stated >= num_classes else num_classes
    data.name = name
    return data


# --------------------------------------------------------------------------- graph classification


def _graph_dataset(graphs: list[Data], source: Path, name: str) -> UserGraphDataset:
    if len(graphs) < 2:
        raise UserDatasetError(f"{source}: a list of {len(graphs)} graph; graph classification needs several "
                               f"graphs (for node classification save the Data itself, not a list)")
    width = None
    clean = []
    for i, graph in enumerate(graphs):
        where = f"graph {i}: "
        n = _features(graph, source, "x", where)
        if width is None:
            width = graph.x.size(1)
        _require(graph.x.size(1) == width, source, "x", f"has {graph.x.size(1)} features; graph 0 has {width}, "
                 f"every graph needs the same number", where)
        y = graph.get("y")
        _require(isinstance(y, Tensor) and y.numel() == 1 and y.dim() <= 1, source, "y",
                 f"is {_shape_of(y)}; expected one int64 graph label, shape [] or [1]", where)
        _require(y.dtype == torch.long, source, "y", f"has dtype {y.dtype}; expected torch.int64 (use y.long())",
                 where)
        _edges(graph.get("edge_index"), n, source, "edge_index", where)
        graph = graph.clone()
        graph.y = y.view(1)
        clean.append(graph)
    data, slices = InMemoryDataset.collate(clean)
    dataset = UserGraphDataset(data, slices, name)
    _classes(dataset.y, source, "y")
    return dataset


def _check_graphs(dataset: UserGraphDataset, source: Path) -> None:
    """The checks of :func:`_graph_dataset` on collated graphs (edge ids are local to each graph there)."""
    data, slices = dataset._data, dataset.slices
    num_graphs = len(dataset)
    x = data.get("x")
    _require(isinstance(x, Tensor), source, "x", "missing; every graph needs float32 node features x")
    _require(x.dtype == torch.float32 and x.dim() == 2, source, "x",
             f"is {_shape_of(x)}; expected float32 [num_nodes, num_features] (use x.float())")
    y = data.get("y")
    _require(isinstance(y, Tensor) and y.dtype == torch.long, source, "y",
             f"is {_shape_of(y)}; expected int64 graph labels")
    _require(y.numel() == num_graphs and bool((slices["y"].diff() == 1).all()), source, "y",
             "expected exactly one label per graph")
    edge_index = data.get("edge_index")
    _require(isinstance(edge_index, Tensor) and edge_index.dtype == torch.long and edge_index.dim() == 2
             and edge_index.size(0) == 2, source, "edge_index", f"is {_shape_of(edge_index)}; expected int64 [2, E]")
    nodes = slices["x"].diff()
    graph_of_edge = torch.repeat_interleave(torch.arange(num_graphs), slices["edge_index"].diff())
    bad = (edge_index < 0).any(0) | (edge_index >= nodes[graph_of_edge]).any(0)
    if bad.any():
        g = int(graph_of_edge[bad.nonzero()[0, 0]])
        raise UserDatasetError(f"{source}: graph {g}: edge_index refers to a node outside 0..{int(nodes[g]) - 1}; "
                               f"expected node ids local to each graph")
    _classes(y, source, "y")


# --------------------------------------------------------------------------- field checks


def _require(condition: bool, source: Path, field: str, problem: str, where: str = "") -> None:
    if not condition:
        raise UserDatasetError(f"{source}: {where}{field} {problem}")


def _shape_of(value: Any) -> str:
    if isinstance(value, Tensor):
        return f"{value.dtype} of shape {list(value.shape)}"
    return "missing" if value is None else type(value).__name__


def _features(data: Data, source: Path, field: str, where: str = "") -> int:
    x = data.get(field)
    _require(isinstance(x, Tensor), source, field,
             f"is {_shape_of(x)}; expected float32 node features [num_nodes, num_features] (a graph without "
             f"features can use torch.ones(num_nodes, 1) or torch_geometric.transforms.OneHotDegree)", where)
    _require(x.dtype == torch.float32, source, field, f"has dtype {x.dtype}; expected torch.float32 (use x.float())",
             where)
    _require(x.dim() == 2 and x.size(0) > 0, source, field,
             f"has shape {list(x.shape)}; expected [num_nodes, num_features] with at least one node", where)
    return int(x.size(0))


def _edges(edge_index: Any, n: int, source: Path, field: str, where: str = "") -> None:
    _require(isinstance(edge_index, Tensor), source, field,
             f"is {_shape_of(edge_index)}; expected int64 [2, num_edges]", where)
    _require(edge_index.dtype == torch.long, source, field,
             f"has dtype {edge_index.dtype}; expected torch.int64 (use edge_index.long())", where)
    _require(edge_index.dim() == 2 and edge_index.size(0) == 2, source, field,
             f"has shape {list(edge_index.shape)}; expected [2, num_edges] (transpose an [E, 2] list with .t())",
             where)
    if edge_index.numel():
        low, high = int(edge_index.min()), int(edge_index.max())
        _require(low >= 0 and high < n, source, field,
                 f"holds node ids {low}..{high}; expected ids in 0..{n - 1} ({n} nodes, the rows of x)", where)


def _classes(y: Tensor, source: Path, field: str) -> int:
    low = int(y.min())
    _require(low >= 0, source, field, f"holds the label {low}; expected class ids 0..C-1")
    present = int(torch.unique(y).numel())
    _require(present >= 2, source, field, "holds a single class; classification needs at least two")
    return int(y.max()) + 1
