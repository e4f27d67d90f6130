"""GCFL and GCFL+: DTW, the bi-partition, the servers' split rules, and runs on node and graph federations."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from fglcore.algorithms import ALGORITHMS
from fglcore.algorithms.gcfl import (
    GCFLPlusServer,
    GCFLServer,
    bipartition,
    cosine_similarity_matrix,
    dtw_distance,
    dtw_distance_matrix,
    update_norms,
)
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.data.datasets import load_graph_dataset
from fglcore.data.federation import GraphClient, GraphFederation, NodeFederation, build_clients
from fglcore.data.splits import graph_split_indices

CPU = torch.device("cpu")
GROUP_A, GROUP_B = (0, 1, 2), (3, 4, 5)


# -- DTW ----------------------------------------------------------------------------------------------


def brute_force_dtw(a: list[float], b: list[float]) -> float:
    """Minimum over every monotone warping path, enumerated step by step."""
    best = math.inf

    def walk(i: int, j: int, total: float) -> None:
        nonlocal best
        total += (a[i] - b[j]) ** 2
        if (i, j) == (len(a) - 1, len(b) - 1):
            best = min(best, total)
            return
        for di, dj in ((1, 0), (0, 1), (1, 1)):
            if i + di < len(a) and j + dj < len(b):
                walk(i + di, j + dj, total)

    walk(0, 0, 0.0)
    return math.sqrt(best)


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ([1, 2, 3], [1, 2, 3], 0.0),
        ([0, 0, 1], [0, 1, 1], 0.0),  # warping absorbs the shift; the Euclidean distance would be 1
        ([1], [1, 1, 1, 1], 0.0),
        ([0], [1, 2], math.sqrt(5)),  # one point matched to both
        ([0, 1, 2], [3, 4, 5], math.sqrt(26)),  # 9 + 4 + 4 + 9, as augurs-dtw's documented example
    ],
)
def test_dtw_distance_on_hand_examples(a, b, expected):
    assert dtw_distance(a, b) == pytest.approx(expected)
    assert dtw_distance(b, a) == pytest.approx(expected)


def test_dtw_distance_equals_the_best_warping_path():
    rng = np.random.default_rng(0)
    for n, m in [(3, 3), (4, 2), (2, 5), (5, 4)]:
        a, b = rng.normal(size=n).tolist(), rng.normal(size=m).tolist()
        assert dtw_distance(a, b) == pytest.approx(brute_force_dtw(a, b))
    with pytest.raises(ValueError, match="non-empty"):
        dtw_distance([], [1.0])


def test_dtw_distance_matrix_is_symmetric_and_standardizes_by_the_std():
    sequences = [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [3.0, 2.0, 1.0], [5.0, 5.0, 5.0]]
    plain = dtw_distance_matrix(sequences)
    assert np.allclose(plain, plain.T) and np.all(np.diag(plain) == 0)
    assert plain[0, 2] == pytest.approx(dtw_distance(sequences[0], sequences[2]))
    scaled = dtw_distance_matrix(sequences, standardize=True)
    assert scaled[0, 1] == pytest.approx(0.0)  # the same trend at twice the scale
    std = np.std([1.0, 2.0, 3.0])
    assert scaled[0, 3] == pytest.approx(dtw_distance(np.array([1.0, 2.0, 3.0]) / std, [5.0, 5.0, 5.0]))


# -- similarity, bi-partition, criterion -----------------------------------------------------------


def two_block_similarity(
    sizes: tuple[int, int], within: float, across: float, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """A noisy symmetric similarity matrix of two blocks in shuffled order, and each row's block."""
    rng = np.random.default_rng(seed)
    labels = np.repeat([0, 1], sizes)
    order = rng.permutation(len(labels))
    labels = labels[order]
    similarity = np.where(labels[:, None] == labels[None, :], within, across)
    noise = rng.uniform(-0.05, 0.05, similarity.shape)
    return similarity + (noise + noise.T) / 2, labels


@pytest.mark.parametrize("sizes", [(3, 3), (2, 5), (4, 4)])
def test_bipartition_separates_two_obvious_blocks(sizes):
    similarity, labels = two_block_similarity(sizes, within=1.9, across=0.1, seed=sum(sizes))
    first, second = bipartition(similarity)
    assert 0 in first and sorted(first + second) == list(range(len(labels)))
    assert len(set(labels[first])) == 1 and len(set(labels[second])) == 1
    assert labels[first[0]] != labels[second[0]]


def test_bipartition_refuses_what_a_minimum_cut_cannot_use():
    with pytest.raises(ValueError, match="non-negative"):
        bipartition(np.array([[0.0, -1.0], [-1.0, 0.0]]))
    with pytest.raises(ValueError, match="at least 2"):
        bipartition(np.zeros((1, 1)))


def test_cosine_similarities_are_shifted_by_one_and_norms_follow_the_code():
    updates = torch.tensor([[1.0, 0.0], [2.0, 0.0], [-1.0, 0.0], [0.0, 3.0], [0.0, 0.0]])
    similarity = cosine_similarity_matrix(updates)
    assert similarity[0, 1] == pytest.approx(2.0) and similarity[0, 2] == pytest.approx(0.0)
    assert similarity[0, 3] == pytest.approx(1.0) and similarity[0, 4] == pytest.approx(1.0)
    mean_norm, max_norm = update_norms(updates)
    assert mean_norm == pytest.approx(math.hypot(0.4, 0.6)) and max_norm == pytest.approx(3.0)


def fake_updates(rng: np.random.Generator, scale_b: float = -1.0) -> dict[int, dict[str, torch.Tensor]]:
    """Group A pushes along u, group B along ``scale_b * u``, each with a little noise."""
    direction = np.array([1.0, 2.0, -1.0, 0.5])
    updates = {}
    for cid in GROUP_A + GROUP_B:
        sign = 1.0 if cid in GROUP_A else scale_b
        value = torch.tensor(sign * direction + rng.normal(scale=0.05, size=4), dtype=torch.float32)
        updates[cid] = {"w": value[:3], "b": value[3:]}
    return updates


def test_gcfl_server_splits_opposing_groups_after_warmup_and_averages_within_clusters():
    initial = {"w": torch.zeros(3), "b": torch.zeros(1)}
    server = GCFLServer(initial, range(6), epsilon1=0.5, epsilon2=1.0, warmup_rounds=2, min_split_size=3)
    weights = {cid: float(10 + cid) for cid in range(6)}
    rng = np.random.default_rng(0)
    for round in (1, 2):
        server.aggregate(fake_updates(rng), weights, round)
        assert server.clusters == [list(range(6))]
    updates = fake_updates(rng)
    server.aggregate(updates, weights, 3)
    assert server.clusters == [list(GROUP_A), list(GROUP_B)] and server.split_rounds == [3]
    split = server.splits[0]
    assert split.parent == tuple(range(6)) and split.mean_norm < 0.5 < 1.0 < split.max_norm
    before = [dict(p) for p in server.cluster_parameters]
    updates = fake_updates(rng)
    server.aggregate(updates, weights, 4)  # a cluster of agreeing clients has a large mean update: no split
    assert len(server.clusters) == 2
    for members, old, new in zip(server.clusters, before, server.cluster_parameters):
        total = sum(weights[c] for c in members)
        for name in ("w", "b"):
            expected = old[name] + sum(weights[c] * updates[c][name] for c in members) / total
            assert torch.allclose(new[name], expected, atol=1e-6)
    assert server.cluster_of(4) == 1 and server.norm_history[-1]["size"] == 3


def test_gcfl_server_respects_thresholds_and_minimum_size():
    initial = {"w": torch.zeros(3), "b": torch.zeros(1)}
    rng = np.random.default_rng(1)
    weights = dict.fromkeys(range(6), 1.0)
    for options in ({"epsilon1": 0.0, "epsilon2": 0.0}, {"epsilon1": 10.0, "epsilon2": 100.0}):
        server = GCFLServer(initial, range(6), warmup_rounds=0, min_split_size=3, **options)
        server.aggregate(fake_updates(rng), weights, 1)
        assert server.splits == []
    small = GCFLServer(initial, range(6), epsilon1=10.0, epsilon2=0.0, warmup_rounds=0, min_split_size=7)
    small.aggregate(fake_updates(rng), weights, 1)
    assert small.splits == []
    with pytest.raises(ValueError, match=r"missing clients \[5\]"):
        small.aggregate({cid: u for cid, u in fake_updates(rng).items() if cid != 5}, weights, 2)


def test_gcfl_plus_server_waits_for_full_sequences_cuts_by_dtw_and_restarts_them():
    initial = {"w": torch.zeros(3), "b": torch.zeros(1)}
    server = GCFLPlusServer(initial, range(6), epsilon1=100.0, epsilon2=0.0, warmup_rounds=0, min_split_size=3,
                            seq_length=3, standardize=False, sequence="gradient_norm")
    weights = dict.fromkeys(range(6), 1.0)
    rng = np.random.default_rng(2)
    rising, falling = [1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0]
    for round in range(1, 4):
        updates = fake_updates(rng, scale_b=1.0)  # cosine similarities alone would not separate the groups
        for cid, update in updates.items():
            trend = rising if cid in GROUP_A else falling
            update["gradient_norm"] = torch.tensor(trend[round - 1] + 0.01 * cid)
        server.aggregate(updates, weights, round)
        if round < 3:
            assert server.splits == [] and all(len(s) == round for s in server.sequences.values())
    assert server.clusters == [list(GROUP_A), list(GROUP_B)] and server.split_rounds == [3]
    assert all(s == [] for s in server.sequences.values())
    updates = fake_updates(rng)
    for update in updates.values():
        update["gradient_norm"] = torch.tensor(1.0)
    server.aggregate(updates, weights, 4)  # sequences restarted: no split for seq_length rounds
    assert server.split_rounds == [3]
    with pytest.raises(ValueError, match="gradient_norm"):
        server.aggregate(fake_updates(rng), weights, 5)


# -- runs ----------------------------------------------------------------------------------------------


def opposing_node_federation(seed: int = 0, nodes_per_client: int = 200) -> NodeFederation:
    """Six clients with i.i.d. features and one linear rule; clients 3-5 have every label flipped."""
    g = torch.Generator().manual_seed(seed)
    n = nodes_per_client * 6
    x = torch.randn(n, 8, generator=g)
    y = (x @ torch.randn(8, generator=g) > 0).long()
    assignment = torch.arange(n) // nodes_per_client
    src = torch.randint(0, nodes_per_client, (n,), generator=g) + assignment * nodes_per_client
    dst = torch.randint(0, nodes_per_client, (n,), generator=g) + assignment * nodes_per_client
    r = torch.rand(n, generator=g)
    data = Data(x=x, y=y, edge_index=torch.cat([torch.stack([src, dst]), torch.stack([dst, src])], 1),
                train_mask=r < 0.5, val_mask=(r >= 0.5) & (r < 0.75), test_mask=r >= 0.75)
    clients = build_clients(data, assignment)
    for k in GROUP_B:
        clients[k].y = 1 - clients[k].y
    return NodeFederation("opposing", data, clients, num_classes=2, num_features=8, assignment=assignment)


def node_config(**changes) -> ExperimentConfig:
    base = dict(dataset="Cora", partition="louvain", num_clients=6, model="mlp", hidden=8, dropout=0.0, rounds=5,
                local_epochs=2, lr=0.05, algorithm="gcfl",
                algorithm_options={"epsilon1": 0.35, "epsilon2": 0.5, "warmup_rounds": 3})
    return ExperimentConfig.from_dict({**base, **changes})


@pytest.fixture(scope="module")
def opposing():
    return opposing_node_federation()


def run(config: ExperimentConfig, federation):
    algorithm = ALGORITHMS.get(config.algorithm)(config, federation, CPU)
    return algorithm, algorithm.run()


def shared_values(algorithm, cid: int) -> dict[str, torch.Tensor]:
    client = algorithm.clients[cid]
    return {n: p.detach().clone() for n, p in client.model.named_parameters() if n in client.shared}


def test_gcfl_separates_clients_with_opposing_objectives_deterministically(opposing):
    algorithm, result = run(node_config(), opposing)
    server = algorithm.server
    assert server.clusters == [list(GROUP_A), list(GROUP_B)]
    assert server.split_rounds == [4]  # the first round after the warm-up
    assert result.extras == {"clusters": server.clusters, "splits": [
        {"round": 4, "parent": tuple(range(6)), "first": GROUP_A, "second": GROUP_B,
         "mean_norm": server.splits[0].mean_norm, "max_norm": server.splits[0].max_norm}]}
    a, b = shared_values(algorithm, 0), shared_values(algorithm, 3)
    for cid in range(6):
        same = shared_values(algorithm, cid)
        reference = a if cid in GROUP_A else b
        assert all(torch.equal(same[n], reference[n]) for n in same)
    assert not torch.equal(a["convs.0.weight"], b["convs.0.weight"])
    names = set(a)
    assert result.ledger.names(sender="server") == names
    assert result.ledger.names(sender="clients") == names | {"num_samples"}
    again, repeat = run(node_config(), opposing)
    assert repeat.history == result.history and again.server.norm_history == server.norm_history


def test_gcfl_plus_reports_gradient_norms_and_the_update_norm_variant_does_not(opposing):
    options = {"epsilon1": 0.35, "epsilon2": 0.5, "warmup_rounds": 1, "seq_length": 2}
    algorithm, result = run(node_config(algorithm="gcfl_plus", rounds=3, algorithm_options=options), opposing)
    names = set(shared_values(algorithm, 0))
    assert result.ledger.names(sender="clients") == names | {"num_samples", "gradient_norm"}
    norms = result.ledger.select(sender="client0", name="gradient_norm")
    assert [m.round for m in norms] == [1, 2, 3] and {m.nbytes for m in norms} == {4}
    assert algorithm.server.split_rounds == [2]  # first round with two values per client, past warm-up
    assert all(len(s) == 1 for s in algorithm.server.sequences.values())  # restarted after the split
    options = {**options, "sequence": "update_norm"}
    variant, plain = run(node_config(algorithm="gcfl_plus", rounds=2, algorithm_options=options), opposing)
    assert plain.ledger.names(sender="clients") == names | {"num_samples"}
    assert variant.server.split_rounds == [2]


def test_gcfl_runs_on_a_federation_of_tu_datasets_sharing_only_convolutions():
    clients = []
    mutag = load_graph_dataset("MUTAG")
    halves = (range(0, len(mutag), 2), range(1, len(mutag), 2))
    for k, half in enumerate(halves):
        graphs = [mutag[i] for i in half]
        if k == 1:  # the other half with flipped labels
            graphs = [Data(**{**g.to_dict(), "y": 1 - g.y}) for g in graphs]
        labels = torch.cat([g.y for g in graphs])
        train, val, test = graph_split_indices(labels, [0.8, 0.1, 0.1], 123)
        clients.append(GraphClient(f"MUTAG-{k}", "MUTAG", graphs, train, val, test, mutag.num_features, 2))
    ptc = load_graph_dataset("PTC_MR")[:100]
    train, val, test = graph_split_indices(ptc.y.view(-1), [0.8, 0.1, 0.1], 123)
    clients.append(GraphClient("PTC_MR", "PTC_MR", ptc, train, val, test, ptc.num_features, ptc.num_classes))
    federation = GraphFederation("MUTAG+MUTAG-flipped+PTC_MR", clients)
    config = ExperimentConfig.from_dict(dict(
        dataset="MUTAG", partition="by_dataset", split="graph_stratified", model="gin", num_layers=2, hidden=16,
        rounds=2, local_epochs=1, batch_size=64, algorithm="gcfl",
        algorithm_options={"epsilon1": 1e6, "epsilon2": 0.0, "warmup_rounds": 1}))
    algorithm, result = run(config, federation)
    conv_names = {n for n, _ in algorithm.clients[0].model.named_parameters() if n.startswith("convs.")}
    assert result.ledger.names(sender="server") == conv_names
    assert result.ledger.names(sender="clients") == conv_names | {"num_samples"}
    assert algorithm.server.split_rounds == [2]
    clusters = algorithm.server.clusters
    assert sorted(c for members in clusters for c in members) == [0, 1, 2] and len(clusters) == 2
    for members in clusters:
        first = shared_values(algorithm, members[0])
        for cid in members[1:]:
            assert all(torch.equal(first[n], shared_values(algorithm, cid)[n]) for n in conv_names)
    assert 0 <= result.metrics["test_accuracy"] <= 1


# -- configuration -----------------------------------------------------------------------------------


def test_both_algorithms_are_registered_with_their_paper():
    for name in ("gcfl", "gcfl_plus"):
        cls = ALGORITHMS.get(name)
        assert cls.name == name and "Xie et al." in cls.citation and set(cls.tasks) == {"node", "graph"}
    assert ALGORITHMS.get("gcfl_plus").check_options({}) == {
        "epsilon1": 0.05, "epsilon2": 0.1, "warmup_rounds": 20, "min_split_size": 3, "share": "auto",
        "reset_optimizer": False, "seq_length": 5, "standardize": False, "sequence": "gradient_norm"}


@pytest.mark.parametrize(
    "name, options, match",
    [
        ("gcfl", {"epsilon1": -0.1}, "epsilon1: must be >= 0"),
        ("gcfl", {"min_split_size": 1}, "min_split_size: must be >= 2"),
        ("gcfl", {"seq_length": 5}, "'seq_length'.*accepted"),
        ("gcfl_plus", {"seq_length": 0}, "seq_length: must be >= 1"),
        ("gcfl_plus", {"sequence": "loss"}, "accepted: gradient_norm, update_norm"),
    ],
)
def test_bad_options_are_refused(name, options, match):
    with pytest.raises(ConfigError, match=match):
        node_config(algorithm=name, algorithm_options=options)


def test_secure_aggregation_is_refused_because_the_server_must_see_each_update(opposing):
    for name in ("gcfl", "gcfl_plus"):
        with pytest.raises(ConfigError, match="secure_aggregation"):
            ALGORITHMS.get(name)(node_config(algorithm=name, secure_aggregation=True), opposing, CPU)
