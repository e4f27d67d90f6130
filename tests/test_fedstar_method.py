"""FedStar method notebook helpers: embeddings on a molecule, Table 9 counts, a small federation, the ledger."""
from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.utils import to_undirected

from fglcore.data.datasets import load_graph_dataset
from fglcore.data.structure import StructureEncoding
from fglcore.fl.channel import Channel
from fglcore.models.fedstar import FeatureStructureGNN
from fglcore.papers.fedstar import method as fmethod


def test_smallest_mutag_graph_and_its_embedding_frame():
    dataset = load_graph_dataset("MUTAG")
    index, molecule = fmethod.smallest_graph(dataset)
    assert molecule.num_nodes == min(int(g.num_nodes) for g in dataset)
    assert dataset[index].num_nodes == molecule.num_nodes
    frame = fmethod.embedding_frame(molecule)
    assert frame.shape == (molecule.num_nodes, 1 + 32)
    dse, rwse = frame.filter(like="DSE").to_numpy(), frame.filter(like="RWSE").to_numpy()
    assert (dse.sum(1) == 1).all() and (dse.argmax(1) == frame["degree"].clip(1, 16) - 1).all()
    s = StructureEncoding()(molecule.edge_index, molecule.num_nodes)  # library order: RWSE, then DSE
    assert torch.equal(torch.from_numpy(rwse.copy()), s[:, :16]) and torch.equal(torch.from_numpy(dse.copy()), s[:, 16:])
    assert (rwse[:, 0] == 0).all()  # no self-loops: T_vv = 0
    fig = fmethod.draw_graph_with_embeddings(molecule, frame, [str(i) for i in range(molecule.num_nodes)])
    assert len(fig.axes) >= 3
    with pytest.raises(ValueError, match="rows"):
        fmethod.draw_graph_with_embeddings(molecule, frame.iloc[:3])
    with pytest.raises(ValueError, match="no graph"):
        fmethod.smallest_graph([])


def test_table9_counts_give_the_papers_sizes_and_match_the_model():
    counts = fmethod.table9_parameter_counts(7, 2)
    assert counts["structure_encoder"] + counts["structure_convs"] == 14_592
    assert sum(counts.values()) == 64_898
    assert sum(fmethod.table9_parameter_counts(89, 2).values()) == 70_146  # DD
    assert sum(fmethod.table9_parameter_counts(2, 15).values()) == 65_423  # Letter
    for n_feat, n_class, hidden, layers in ((5, 3, 16, 2), (7, 2, 64, 3)):
        model = FeatureStructureGNN(n_feat, 32, hidden, n_class, layers)
        table = fmethod.model_parameter_counts(model).set_index("module")
        assert table["parameters"].to_dict() == fmethod.table9_parameter_counts(n_feat, n_class, hidden, 32, layers)
        assert sorted(table.index[table["shared"]]) == ["structure_convs", "structure_encoder"]
    assert fmethod.baseline_parameter_count(7, 2) == 29_762
    with pytest.raises(ValueError, match="n_feat"):
        fmethod.table9_parameter_counts(0, 2)


def test_subset_federation_holds_stratified_splits_of_small_subsets():
    federation = fmethod.subset_federation(["MUTAG", "PTC_MR"], 40, seed=3)
    assert [c.name for c in federation.clients] == ["MUTAG", "PTC_MR"]
    for client in federation.clients:
        assert len(client.graphs) == 40
        idx = torch.cat([client.train_idx, client.val_idx, client.test_idx]).sort().values
        assert torch.equal(idx, torch.arange(40)) and len(client.train_idx) == 32
    again = fmethod.subset_federation(["MUTAG", "PTC_MR"], 40, seed=3)
    assert torch.equal(again.clients[0].graphs[0].x, federation.clients[0].graphs[0].x)
    with pytest.raises(ValueError, match="graphs_per_client"):
        fmethod.subset_federation(["MUTAG"], 5)
    with pytest.raises(ValueError, match="at least one"):
        fmethod.subset_federation([], 40)


def test_ledger_by_part_separates_the_structure_channel_from_the_rest():
    channel = Channel()
    model = FeatureStructureGNN(3, 32, 8, 2, 1)
    params = dict(model.named_parameters())
    channel.send("server", "client0", {"structure_encoder.weight": params["structure_encoder.weight"]}, 1)
    channel.send("client0", "server", {"structure_encoder.weight": params["structure_encoder.weight"],
                                       "structure_convs.0.bias": params["structure_convs.0.bias"],
                                       "num_samples": torch.tensor(4.0)}, 1)
    channel.send("client0", "server", {"head.3.weight": params["head.3.weight"]}, 2)
    table = fmethod.ledger_by_part(channel.ledger).set_index(["round", "direction", "part"])
    assert table.loc[(1, "download", "structure channel"), "elements"] == 8 * 32
    assert table.loc[(1, "upload", "structure channel"), "messages"] == 2
    assert table.loc[(1, "upload", "structure channel"), "bytes"] == 4 * (8 * 32 + 8)
    assert table.loc[(1, "upload", "other"), "elements"] == 1
    assert table.loc[(2, "upload", "feature channel"), "elements"] == 2 * 8
    assert [fmethod.parameter_part(n) for n in ("fusion.bias", "structure_convs.1.lin.weight", "num_samples")] == \
        ["feature channel", "structure channel", "other"]
    assert fmethod.ledger_by_part(Channel().ledger).empty
