"""Train/validation/test split protocols, each as a paper uses it.

A split is drawn either inside each client (``scope="client"``), once on the
whole graph before partitioning (``"global"``; clients inherit the masks of
their nodes through their global ids), taken from the dataset itself
(``"dataset"``), or per client over graphs (``"graph"``, graph
classification). Ratios are ``(train, val, test)`` fractions, normally
``config.split_ratios``; the seed is ``config.effective_split_seed`` except
where a protocol fixes its own (see :func:`resolve_split_seed`).

Registered protocols (``SPLITS.names()``), with the paper that uses each:

* ``per_client_random`` (client): random, unstratified, inside each client --
  FedSpray, 40/30/30;
* ``per_client_stratified`` (client): inside each client and class -- O-pFGL,
  20/40/40;
* ``global_random`` (global): random over all nodes before partitioning --
  FedStruct, 10/10/80;
* ``planetoid_public`` (dataset): PyG Planetoid ``split="public"`` masks
  (20 per class / 500 / 1000);
* ``planetoid_full`` (dataset): PyG Planetoid ``split="full"`` masks -- the
  local-bias paper;
* ``graph_stratified`` (graph): stratified over graph labels inside each
  client -- FedStar, 80/10/10 with the fixed split seed 123.

Rounding rules (``n`` items, ratios ``r``):

* random splits cut a permutation at ``floor(r_train n)`` and
  ``floor((r_train + r_val) n)`` (FedSpray's ``data.py`` cuts at
  ``int(0.4 n)`` and ``int(0.7 n)``); the rest is test;
* stratified splits take, in each class of ``n_c`` items,
  ``floor(r_train n_c)`` train and ``floor(r_val n_c)`` validation items and
  put the rest in test (O-pFGL's ``construct_subgraph_dict_from_node_dict``).
  A class with fewer than ``1 / r_train`` items (5 at 20 %) therefore has no
  training item, and a class of one item is test only: tiny classes are
  never over-sampled into train, and every item lands in exactly one split.

A tolerance of ``1e-9`` keeps float noise (``0.7 * 30 = 20.999...``) from
moving a cut.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data

from fglcore.registry import Registry

TRAIN, VAL, TEST = 0, 1, 2
UNSPLIT = -1  # fold of a node in no split (left out by the partition, or outside the dataset's masks)
SCOPES = ("client", "global", "dataset", "graph")
_EPS = 1e-9

FoldDraw = Callable[[np.ndarray, Sequence[float], np.random.Generator], np.ndarray]


@dataclass(frozen=True)
class SplitSpec:
    """A registered split protocol.

    ``draw(labels, ratios, rng) -> folds`` gives every item a fold
    (:data:`TRAIN`, :data:`VAL`, :data:`TEST`) for the ``client`` and
    ``global`` scopes. ``planetoid_split`` is the split the dataset must be
    loaded with (``dataset`` scope). ``default_seed`` replaces the run seed
    when the config sets no ``split_seed`` (FedStar's fixed 123).
    """

    name: str
    scope: str
    paper: str
    paper_ratios: tuple[float, float, float] | None
    description: str
    draw: FoldDraw | None = field(default=None, repr=False)
    planetoid_split: str = "public"
    default_seed: int | None = None

    @property
    def task(self) -> str:
        return "graph" if self.scope == "graph" else "node"


SPLITS: Registry[SplitSpec] = Registry("split")


# --------------------------------------------------------------------------- fold rules


def check_ratios(ratios: Sequence[float]) -> tuple[float, float, float]:
    """Three non-negative fractions summing to 1, as a tuple."""
    values = tuple(float(r) for r in ratios)
    if len(values) != 3 or any(r < 0 for r in values) or abs(sum(values) - 1) > 1e-6:
        raise ValueError(f"split ratios: expected three non-negative fractions (train, val, test) summing to 1, "
                         f"got {list(ratios)}")
    return values  # type: ignore[return-value]


def random_folds(labels: np.ndarray, ratios: Sequence[float], rng: np.random.Generator) -> np.ndarray:
    """Unstratified: a random permutation cut at ``floor(r_train n)`` and ``floor((r_train + r_val) n)``."""
    r_train, r_val, _ = check_ratios(ratios)
    n = len(labels)
    cut_train = int(np.floor(r_train * n + _EPS))
    cut_val = max(cut_train, min(n, int(np.floor((r_train + r_val) * n + _EPS))))
    folds = np.empty(n, dtype=np.int64)
    order = rng.permutation(n)
    folds[order[:cut_train]] = TRAIN
    folds[order[cut_train:cut_val]] = VAL
    folds[order[cut_val:]] = TEST
    return folds


def stratified_folds(labels: np.ndarray, ratios: Sequence[float], rng: np.random.Generator) -> np.ndarray:
    """Per class (ascending label order): ``floor(r_train n_c)`` train, ``floor(r_val n_c)`` val, rest test."""
    r_train, r_val, _ = check_ratios(ratios)
    labels = np.asarray(labels).reshape(-1)
    folds = np.full(len(labels), TEST, dtype=np.int64)
    for c in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == c))
        n_c = len(members)
        n_train = int(np.floor(r_train * n_c + _EPS))
        n_val = min(n_c - n_train, int(np.floor(r_val * n_c + _EPS)))
        folds[members[:n_train]] = TRAIN
        folds[members[n_train:n_train + n_val]] = VAL
    return folds


def masks_from_folds(folds: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Boolean ``(train, val, test)`` masks from a fold vector."""
    return folds == TRAIN, folds == VAL, folds == TEST


# --------------------------------------------------------------------------- node-level splits


def resolve_split_seed(split: str, split_seed: int | None, run_seed: int) -> int:
    """The seed a split is drawn with.

    An explicit ``split_seed`` wins; otherwise a protocol's fixed
    ``default_seed`` (``graph_stratified``: FedStar's 123); otherwise the
    run seed. Without a default this equals ``config.effective_split_seed``.
    """
    if split_seed is not None:
        return int(split_seed)
    default = SPLITS.get(split).default_seed
    return int(run_seed if default is None else default)


def node_split_folds(split: str, data: Data, assignment: Tensor, ratios: Sequence[float], seed: int) -> Tensor:
    """Fold of every node of ``data`` (``LongTensor[num_nodes]``) under protocol ``split``.

    ``assignment`` is the partition (client id per node, ``-1`` for dropped
    nodes, which get :data:`UNSPLIT`). Client-scope splits draw client ``k``
    with its own generator ``numpy.random.default_rng([seed, k])``, so one
    client's split does not depend on the others'. Global-scope splits draw
    over all nodes with ``default_rng(seed)``. Dataset-scope splits read
    ``data.train_mask``/``val_mask``/``test_mask`` (1-D) and ignore ratios
    and seed.
    """
    spec = SPLITS.get(split)
    if spec.scope == "graph":
        raise ValueError(f"split {split!r} is for graph classification; node-level splits: "
                         f"{', '.join(split_names('node'))}")
    n = data.num_nodes
    if assignment.shape != (n,):
        raise ValueError(f"assignment must have one entry per node ({n}), got shape {tuple(assignment.shape)}")
    labels = data.y.view(-1).cpu().numpy() if data.y is not None else np.zeros(n, dtype=np.int64)
    folds = torch.full((n,), UNSPLIT, dtype=torch.long)
    if spec.scope == "dataset":
        folds = _dataset_folds(spec, data)
    elif spec.scope == "global":
        folds = torch.as_tensor(spec.draw(labels, ratios, np.random.default_rng(seed)))
    else:
        num_clients = int(assignment.max()) + 1 if assignment.numel() else 0
        for k in range(num_clients):
            nodes = torch.nonzero(assignment == k).view(-1)
            rng = np.random.default_rng([seed, k])
            folds[nodes] = torch.as_tensor(spec.draw(labels[nodes.numpy()], ratios, rng))
    folds[assignment < 0] = UNSPLIT
    return folds


def node_split_masks(split: str, data: Data, assignment: Tensor, ratios: Sequence[float],
                     seed: int) -> tuple[Tensor, Tensor, Tensor]:
    """Global boolean ``(train, val, test)`` masks of :func:`node_split_folds`."""
    return masks_from_folds(node_split_folds(split, data, assignment, ratios, seed))


def _dataset_folds(spec: SplitSpec, data: Data) -> Tensor:
    masks = [getattr(data, key, None) for key in ("train_mask", "val_mask", "test_mask")]
    if any(m is None for m in masks):
        raise ValueError(f"split {spec.name!r} uses the dataset's own train/val/test masks, "
                         f"but {getattr(data, 'name', 'the graph')} has none")
    if any(m.dim() != 1 for m in masks):
        raise ValueError(f"split {spec.name!r} needs 1-D masks; {getattr(data, 'name', 'the graph')} has "
                         f"{tuple(masks[0].shape)} (several splits); use a random split instead")
    train, val, test = (m.bool().cpu() for m in masks)
    if (train & val).any() or (train & test).any() or (val & test).any():
        raise ValueError(f"split {spec.name!r}: the dataset's masks overlap")
    folds = torch.full((data.num_nodes,), UNSPLIT, dtype=torch.long)
    folds[train], folds[val], folds[test] = TRAIN, VAL, TEST
    return folds


# --------------------------------------------------------------------------- graph-level split


def graph_split_indices(labels: Tensor | np.ndarray, ratios: Sequence[float],
                        seed: int) -> tuple[Tensor, Tensor, Tensor]:
    """FedStar's stratified graph split (``lib/utils.py`` ``split_data``; Tan et al., AAAI 2023).

    ``train_test_split(idx, test_size=r_val + r_test, stratify=y,
    shuffle=True, random_state=seed)`` and then the held-out part
    ``train_test_split(rest, train_size=r_val / (r_val + r_test),
    test_size=r_test / (r_val + r_test), stratify=y[rest], random_state=seed)``
    -- with FedStar's 0.8/0.1/0.1 and seed 123 this reproduces its train
    counts. scikit-learn rounds the test share up (``ceil``). Where
    scikit-learn cannot stratify (a class with a single graph, or fewer
    held-out graphs than classes) the per-class rule of
    :func:`stratified_folds` is used instead, drawn with
    ``default_rng(seed)``. Returns index tensors into ``labels``, in
    scikit-learn's shuffled order.
    """
    from sklearn.model_selection import train_test_split

    r_train, r_val, r_test = check_ratios(ratios)
    y = np.asarray(labels.cpu() if isinstance(labels, Tensor) else labels).reshape(-1)
    idx = np.arange(len(y))
    held = r_val + r_test
    try:
        if held <= _EPS:
            train, val, test = idx, idx[:0], idx[:0]
        else:
            if r_train <= _EPS:
                train, rest = idx[:0], idx
            else:
                train, rest = train_test_split(idx, test_size=held, stratify=y, shuffle=True, random_state=seed)
            if r_val <= _EPS:
                val, test = rest[:0], rest
            elif r_test <= _EPS:
                val, test = rest, rest[:0]
            else:
                val, test = train_test_split(rest, train_size=r_val / held, test_size=r_test / held,
                                             stratify=y[rest], shuffle=True, random_state=seed)
    except ValueError:
        folds = stratified_folds(y, ratios, np.random.default_rng(seed))
        train, val, test = (np.flatnonzero(folds == f) for f in (TRAIN, VAL, TEST))
    return tuple(torch.as_tensor(np.asarray(part, dtype=np.int64)) for part in (train, val, test))  # type: ignore


# --------------------------------------------------------------------------- registry


def split_names(task: str | None = None) -> list[str]:
    """Registered split protocols, optionally only those for one task (``"node"`` or ``"graph"``)."""
    return [n for n in SPLITS.names() if task is None or SPLITS.get(n).task == task]


def _register(spec: SplitSpec) -> None:
    if spec.scope not in SCOPES:
        raise ValueError(f"split {spec.name!r}: scope must be one of {SCOPES}, got {spec.scope!r}")
    SPLITS.register(spec.name, spec)


_register(SplitSpec(
    "per_client_random", "client", "FedSpray (Fu et al., KDD 2024, Sec. 5.1; code data.py)", (0.4, 0.3, 0.3),
    "inside each client, a random unstratified split (FedSpray: 40 % train, 30 % val, 30 % test)",
    draw=random_folds))
_register(SplitSpec(
    "per_client_stratified", "client", "O-pFGL (Yan et al., arXiv 2411.11304, Table 4; code base_data_util.py)",
    (0.2, 0.4, 0.4),
    "inside each client and class, floor(r n_c) train and val nodes, the rest test (O-pFGL: 20/40/40)",
    draw=stratified_folds))
_register(SplitSpec(
    "global_random", "global", "FedStruct (Aliakbari et al., ICLR 2025, Sec. 5; code random_split)",
    (0.1, 0.1, 0.8),
    "one random split of all nodes before partitioning; clients inherit their nodes' masks (FedStruct: 10/10/80)",
    draw=random_folds))
_register(SplitSpec(
    "planetoid_public", "dataset", "Planetoid public split (Yang et al. 2016; Kipf & Welling 2017)", None,
    "the dataset's own masks from PyG Planetoid(split='public'): 20 per class / 500 / 1000",
    planetoid_split="public"))
_register(SplitSpec(
    "planetoid_full", "dataset", "local-bias paper (Zhang et al., Sec. 5.1: PyG split='full')", None,
    "the dataset's own masks from PyG Planetoid(split='full'): all nodes outside val/test train",
    planetoid_split="full"))
_register(SplitSpec(
    "graph_stratified", "graph", "FedStar (Tan et al., AAAI 2023, Sec. 5.1; code main_multiDS.py seed 123)",
    (0.8, 0.1, 0.1),
    "per client, stratified over graph labels with scikit-learn (FedStar: 80/10/10, fixed split seed 123)",
    default_seed=123))

