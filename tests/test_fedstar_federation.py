"""Graph-federation additions for FedStar: group members, _randChunk sharding, small-shard splits, structure input."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from fglcore.algorithms import ALGORITHMS
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.data.datasets import load_graph_dataset
from fglcore.data.federation import build_federation, split_graph_client
from fglcore.data.partition import partition_graphs, rand_chunks
from fglcore.data.splits import graph_split_indices
from fglcore.data.structure import StructureEncoding, structure_encodings
from fglcore.papers.fedstar import tables as T
from fglcore.results import run_id


def official_rand_chunk(num_graphs: int, num_client: int, seed: int) -> list[list[int]]:
    """GCFL / FedStar ``_randChunk(graphs, num_client, overlap=False, seed)`` on indices, as released."""
    np.random.seed(seed)
    graphs = list(range(num_graphs))
    min_size = min(50, int(num_graphs / num_client))
    chunks = [graphs[i * min_size:(i + 1) * min_size] for i in range(num_client)]
    for g in graphs[num_client * min_size:]:
        chunks[np.random.randint(low=0, high=num_client, size=1)[0]].append(g)
    return chunks


@pytest.mark.parametrize("n,k", [(188, 12), (188, 1), (4110, 7), (344, 5)])
def test_rand_chunks_matches_the_official_code(n, k):
    ours = rand_chunks(n, k, 123)
    official = official_rand_chunk(n, k, 123)
    assert [list(s) for s in ours] == [sorted(s) for s in official]
    assert sorted(np.concatenate(ours).tolist()) == list(range(n))
    with pytest.raises(ConfigError):
        rand_chunks(5, 6, 0)


def test_dataset_chunks_cuts_every_dataset_into_equal_numbers_of_shards():
    shards = partition_graphs("chem", "dataset_chunks", 6, 123, members=["MUTAG", "PTC_MR"])
    assert [s.dataset for s in shards] == ["MUTAG"] * 3 + ["PTC_MR"] * 3
    assert sum(len(s.indices) for s in shards[:3]) == 188 and sum(len(s.indices) for s in shards[3:]) == 344
    with pytest.raises(ConfigError, match="multiple of 2"):
        partition_graphs("chem", "dataset_chunks", 5, 123, members=["MUTAG", "PTC_MR"])


def test_by_dataset_members_and_exclude():
    assert [s.dataset for s in partition_graphs("chem", "by_dataset", 2, 0, members=["PTC_MR", "MUTAG"])] == [
        "MUTAG", "PTC_MR"]
    with pytest.raises(ConfigError, match="its members"):
        partition_graphs("chem", "by_dataset", 1, 0, members=["COLLAB"])
    with pytest.raises(ConfigError, match="leave no dataset"):
        partition_graphs("chem", "by_dataset", 1, 0, members=["MUTAG"], exclude=["MUTAG"])
    with pytest.raises(ConfigError, match="one client per member"):
        partition_graphs("chem", "by_dataset", 7, 0, exclude=["NCI1"])
    with pytest.raises(ConfigError, match="structure_input"):
        ExperimentConfig.from_dict({**T.table1_config("chem", "local", 1),
                                    "partition_options": {"structure_input": "degree"}})


def test_small_shards_fall_back_and_say_so():
    labels = torch.tensor([0] * 14 + [1])  # a class of one graph cannot be stratified
    train, val, test, stratified = split_graph_client(labels, [0.8, 0.1, 0.1], 123, "random")
    assert not stratified
    assert sorted(torch.cat([train, val, test]).tolist()) == list(range(15))
    assert (len(train), len(val), len(test)) == (12, 1, 2)
    *per_class, flag = split_graph_client(labels, [0.8, 0.1, 0.1], 123, "per_class")
    assert not flag
    assert all(torch.equal(a, b) for a, b in zip(per_class, graph_split_indices(labels, [0.8, 0.1, 0.1], 123)))
    big = load_graph_dataset("MUTAG").y.view(-1)
    *parts, flag = split_graph_client(big, [0.8, 0.1, 0.1], 123, "random")
    assert flag and all(torch.equal(a, b) for a, b in zip(parts, graph_split_indices(big, [0.8, 0.1, 0.1], 123)))
    with pytest.raises(ConfigError, match="small_split"):
        split_graph_client(big, [0.8, 0.1, 0.1], 123, "drop")


def test_figure4_federation_records_unstratified_shards():
    frame = T.split_fallbacks(T.figure4_config("fedavg", 12, 1, members=["MUTAG"]))
    assert len(frame) == 12 and frame["graphs"].sum() == 188
    assert (~frame["stratified"]).any()  # MUTAG / 12 = 15-16 graphs per shard
    assert (frame["train"] + frame["val"] + frame["test"] == frame["graphs"]).all()


def test_one_shard_per_dataset_is_table1s_federation_so_figure4_copies_its_runs():
    members = ["MUTAG", "PTC_MR"]
    table1 = ExperimentConfig.from_dict(T.table1_config("chem", "gcfl", 2, members=members))
    one_shard = ExperimentConfig.from_dict(T.figure4_config("gcfl", 1, 2, members=members))
    assert run_id(one_shard) == run_id(table1) and one_shard.setting == "shards=1" and one_shard.table == "fig4"
    # figure4_config's shortcut holds: cutting every dataset into one chunk gives Table 1's clients, bit for bit
    chunked = build_federation(one_shard.replace(partition="dataset_chunks", partition_seed=T.FIGURE4_PARTITION_SEED,
                                                 partition_options={**one_shard.partition_options,
                                                                    "small_split": "random"}))
    for ours, theirs in zip(chunked.clients, build_federation(table1).clients, strict=True):
        assert ours.dataset == theirs.dataset and len(ours.graphs) == len(theirs.graphs)
        for key in ("train_idx", "val_idx", "test_idx"):
            assert torch.equal(getattr(ours, key), getattr(theirs, key))
        assert all(torch.equal(a.x, b.x) and torch.equal(a.edge_index, b.edge_index) and torch.equal(a.y, b.y)
                   for a, b in zip(ours.graphs, theirs.graphs))


def test_structure_input_appends_the_cached_structure_embedding():
    base = T.table1_config("chem", "local", 1, members=["MUTAG", "PTC_MR"], rounds=1)
    plain = build_federation(ExperimentConfig.from_dict(base))
    config = ExperimentConfig.from_dict({**base, "partition_options": {**base["partition_options"],
                                                                       "structure_input": "rw_dg"}})
    federation = build_federation(config)
    for before, after in zip(plain.clients, federation.clients):
        assert after.num_features == before.num_features + 32
        graph, original = after.graphs[3], before.graphs[3]
        expected = structure_encodings([original], StructureEncoding("rw_dg"))[0]
        assert torch.equal(graph.x, torch.cat([original.x, expected], dim=1))
        assert original.x.shape[1] == before.num_features  # the dataset is untouched
        assert torch.equal(after.train_idx, before.train_idx)
    dg = build_federation(config.replace(partition_options={"members": ["MUTAG"], "structure_input": "dg"},
                                         num_clients=1))
    degree_part = dg.clients[0].graphs[0].x[:, -16:]
    assert torch.equal(degree_part.sum(1), torch.ones(degree_part.shape[0]))
    # any algorithm trains on [x || s]
    result = ALGORITHMS.get("local")(config, federation, torch.device("cpu")).run()
    assert 0.0 <= result.metrics["test_accuracy"] <= 1.0
