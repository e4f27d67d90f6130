"""Test fixtures: an isolated data root fed from the offline mirror."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parent.parent
DEFAULT_MIRROR = REPO.parent / "shared" / "data"


def pytest_configure(config):
    # One data root for the whole session, so PyG processes each dataset once.
    os.environ.setdefault("FGL_DATA", str(REPO / ".cache" / "test-data"))
    if "FGL_DATA_MIRROR" not in os.environ and DEFAULT_MIRROR.is_dir():
        os.environ["FGL_DATA_MIRROR"] = str(DEFAULT_MIRROR)
    torch.set_num_threads(int(os.environ.get("FGL_THREADS", 2)))


@pytest.fixture
def tiny_graph():
    """Two triangles joined by one edge; labels 0 on the first, 1 on the second."""
    from torch_geometric.data import Data
    from torch_geometric.utils import to_undirected

    edges = torch.tensor([[0, 1, 1, 2, 2, 0, 3, 4, 4, 5, 5, 3, 2, 3]]).view(-1, 2).t()
    edge_index = to_undirected(edges, num_nodes=6)
    x = torch.eye(6)
    y = torch.tensor([0, 0, 0, 1, 1, 1])
    return Data(x=x, edge_index=edge_index, y=y, num_nodes=6)


@pytest.fixture(scope="session")
def paper_text():
    """``paper_text(file)``: the text of a paper in the first ``shared/papers/`` folder above the checkout
    (where sessions and CI have it); the test is skipped where it is absent."""

    def read(name: str) -> str:
        repo = Path(__file__).resolve().parent.parent
        for folder in repo.parents:
            path = folder / "shared" / "papers" / name
            if path.is_file():
                return path.read_text(encoding="utf-8")
        pytest.skip(f"the paper text {name} is not in a shared/papers/ folder above {repo}")

    return read


def pytest_sessionstart(session):
    # Re-executed notebooks (nbval, smoke runs) write under a scratch outputs root,
    # never over the committed outputs/.
    import tempfile

    os.environ.setdefault("FGL_OUTPUT_ROOT", tempfile.mkdtemp(prefix="fgl-outputs-"))


def pytest_collection_modifyitems(session, config, items):
    # nbval's notebook cells run first, so tests/test_notebooks.py compares the results.csv they wrote under
    # FGL_OUTPUT_ROOT instead of executing the notebooks a second time (stable sort: cell order is kept).
    items.sort(key=lambda item: 0 if type(item).__module__.startswith("nbval") else 1)
