"""The baselines of the local-bias paper's Table 2 and RQ1/RQ2: samplers, exchanges, engine plans, runs, options."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from fglcore.algorithms import ALGORITHMS
from fglcore.algorithms.graph_sampling import RandomWalkSampler, csr, pyg_sampling_available, sample_neighbours
from fglcore.algorithms.graphsaint import block_forward, propagation_weights
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.data.federation import build_clients
from fglcore.distributed.cost import cagnet_1d_bytes
from fglcore.distributed.exchange import LocalExchange
from fglcore.distributed.shard import Shard
from fglcore.distributed.trainer import BNS, DistributedTrainer
from fglcore.models import build_model
from fglcore.models.distributed_gnn import DistributedGNN
from localbias_graphs import federated, small_graph, spec_for


def toy_federation(n: int = 60, edges: int = 150, num_clients: int = 3, seed: int = 0) -> SimpleNamespace:
    data = small_graph(n=n, edges=edges, seed=seed)
    g = torch.Generator().manual_seed(seed)
    assignment = torch.randperm(n, generator=g) % num_clients
    clients = build_clients(data, assignment, keep_cross_edges=True)
    return SimpleNamespace(task="node", clients=clients, data=data, assignment=assignment,
                           num_features=data.num_features, num_classes=int(data.y.max()) + 1)


def run(algorithm: str, federation=None, **config):
    federation = federation or toy_federation()
    settings = dict(algorithm=algorithm, rounds=3, hidden=8, dropout=0.2, seed=0, weight_decay=0.0, lr=0.01)
    settings.update(config)
    cfg = ExperimentConfig.from_dict(settings)
    algo = ALGORITHMS.get(algorithm)(cfg, federation, "cpu")
    return algo, algo.run()


# -- GraphSAGE's neighbour sampler ------------------------------------------------------------------------------


def test_neighbour_sampler_respects_fanouts_and_samples_without_replacement():
    data = small_graph(n=80, edges=400)
    ptr, nbrs = csr(data.edge_index, 80, "target")
    seeds = torch.tensor([5, 17, 3, 40])
    sample = sample_neighbours(ptr, nbrs, seeds, [3, 2], torch.Generator().manual_seed(0))
    assert torch.equal(sample.n_id[:4], seeds) and sample.batch_size == 4
    assert sample.n_id.unique().numel() == sample.n_id.numel()
    edges = set(map(tuple, data.edge_index.t().tolist()))
    glob = sample.n_id[sample.edge_index]
    assert all((int(u), int(v)) in edges for u, v in glob.t())  # every sampled edge u -> v is an edge
    in_degree = torch.bincount(data.edge_index[1], minlength=80)
    # hop 1: each seed gets min(deg, 3) distinct in-neighbours
    assert torch.equal(sample.sampled_per_hop[0], in_degree[seeds].clamp(max=3))
    hop1 = glob[:, : int(sample.sampled_per_hop[0].sum())]
    assert hop1.t().unique(dim=0).size(0) == hop1.size(1)
    # hop 2 samples the nodes hop 1 added, at most 2 each
    new = sample.n_id[4: 4 + sample.sampled_per_hop[1].numel()]
    assert torch.equal(sample.sampled_per_hop[1], in_degree[new].clamp(max=2))
    again = sample_neighbours(ptr, nbrs, seeds, [3, 2], torch.Generator().manual_seed(0))
    assert torch.equal(again.edge_index, sample.edge_index) and torch.equal(again.n_id, sample.n_id)
    every = sample_neighbours(ptr, nbrs, seeds, [-1], torch.Generator().manual_seed(0))
    assert torch.equal(every.sampled_per_hop[0], in_degree[seeds])


def test_neighbour_sampler_is_uniform():
    """A node with 5 in-neighbours and fan-out 2: each neighbour is kept with probability 2/5."""
    edge_index = torch.tensor([[1, 2, 3, 4, 5], [0, 0, 0, 0, 0]])
    ptr, nbrs = csr(edge_index, 6, "target")
    g = torch.Generator().manual_seed(1)
    hits = torch.zeros(6)
    reps = 3000
    for _ in range(reps):
        s = sample_neighbours(ptr, nbrs, torch.tensor([0]), [2], g)
        hits[s.n_id[1:]] += 1
    freq = hits[1:] / reps
    assert ((freq - 0.4).abs() < 4 * (0.4 * 0.6 / reps) ** 0.5).all()


@pytest.mark.parametrize("fanouts", [[3, 2], [4, 3, 2], [-1, 2]])
def test_neighbour_sampler_keeps_distinct_in_neighbours_of_every_node_at_every_hop(fanouts):
    data = small_graph(n=80, edges=500, seed=2)
    ptr, nbrs = csr(data.edge_index, 80, "target")
    in_neighbours = [set(nbrs[ptr[v]:ptr[v + 1]].tolist()) for v in range(80)]
    seeds = torch.tensor([7, 0, 33, 61, 12])
    sample = sample_neighbours(ptr, nbrs, seeds, fanouts, torch.Generator().manual_seed(4))
    glob = sample.n_id[sample.edge_index]
    assert sample.num_sampled_nodes[0] == 5 and sum(sample.num_sampled_nodes) == sample.n_id.numel()
    reached, edges = 0, 0
    for hop, fanout in enumerate(fanouts):
        frontier = sample.n_id[reached: reached + sample.num_sampled_nodes[hop]]
        hop_edges = glob[:, edges: edges + sample.num_sampled_edges[hop]]
        assert (sample.edge_index[1, edges: edges + sample.num_sampled_edges[hop]] >= reached).all()
        for v, count in zip(frontier.tolist(), sample.sampled_per_hop[hop].tolist()):
            kept = hop_edges[0, hop_edges[1] == v].tolist()
            assert len(kept) == count == (len(in_neighbours[v]) if fanout < 0 else min(len(in_neighbours[v]), fanout))
            assert len(set(kept)) == len(kept) and set(kept) <= in_neighbours[v]  # distinct real in-neighbours
        reached += sample.num_sampled_nodes[hop]
        edges += sample.num_sampled_edges[hop]
    assert edges == sample.edge_index.size(1)
    again = sample_neighbours(ptr, nbrs, seeds, fanouts, torch.Generator().manual_seed(4))
    other = sample_neighbours(ptr, nbrs, seeds, fanouts, torch.Generator().manual_seed(5))
    assert torch.equal(again.edge_index, sample.edge_index) and torch.equal(again.n_id, sample.n_id)
    assert fanouts[0] < 0 or not torch.equal(other.n_id[other.edge_index], glob)


def test_neighbour_sampler_draws_every_subset_equally_often():
    """Floyd's algorithm: each of the C(6, 3) = 20 subsets of a node's 6 in-neighbours has probability 1/20
    (chi-square over 6,000 draws, below the 0.1% critical value 43.8 for 19 degrees of freedom)."""
    edge_index = torch.tensor([[1, 2, 3, 4, 5, 6], [0, 0, 0, 0, 0, 0]])
    ptr, nbrs = csr(edge_index, 7, "target")
    g = torch.Generator().manual_seed(3)
    counts: dict[tuple, int] = {}
    reps = 6000
    for _ in range(reps):
        s = sample_neighbours(ptr, nbrs, torch.tensor([0]), [3], g)
        key = tuple(sorted(s.n_id[1:].tolist()))
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == 20 and all(len(k) == 3 for k in counts)
    expected = reps / 20
    assert sum((c - expected) ** 2 / expected for c in counts.values()) < 43.8


def _trimmed_and_whole(model, x, graph, sample):
    trim = dict(num_sampled_nodes_per_hop=sample.num_sampled_nodes, num_sampled_edges_per_hop=sample.num_sampled_edges)
    outputs, grads = [], []
    for kwargs in ({}, trim):
        model.zero_grad()
        out = model(x, graph, **kwargs)
        assert out.size(0) == (sample.batch_size if kwargs else x.size(0))  # trimmed: the last layer, the seeds only
        out = out[: sample.batch_size]
        torch.nn.functional.cross_entropy(out, torch.arange(sample.batch_size) % 3).backward()
        outputs.append(out.detach())
        grads.append([p.grad.clone() for p in model.parameters()])
    return outputs, grads


@pytest.mark.parametrize("operators", [True, False])
@pytest.mark.parametrize("fanouts", [[4, 3], [5, 3, 2], [3, 2, 2, 2]])
def test_trimmed_layers_give_the_seeds_the_whole_sample_logits_and_gradients(fanouts, operators):
    """Layer l computing only the nodes within L - l hops (Hamilton et al., Alg. 2; PyG's trim_to_layer): the
    seeds' logits and every gradient are those of the whole sampled subgraph through every layer, up to float
    rounding (the same sums over the same in-edges; BLAS may round a product over a few rows differently)."""
    from fglcore.algorithms.training import whole_graph_operators
    from fglcore.models.operators import required_operators

    data = small_graph(n=120, edges=700, features=16, seed=1)
    ptr, nbrs = csr(data.edge_index, 120, "target")
    sample = sample_neighbours(ptr, nbrs, torch.tensor([3, 50, 8, 77, 101, 64]), fanouts,
                               torch.Generator().manual_seed(0))
    assert sample.num_sampled_nodes[-1] > 0  # the last hop adds nodes: trimming drops work
    torch.manual_seed(0)
    model = build_model("sage", 16, 32, 3, num_layers=len(fanouts), dropout=0.0, task="node", cached=False)
    model.train()
    x = data.x[sample.n_id]
    graph = whole_graph_operators(sample.edge_index, x.size(0), required_operators(model), x.dtype) \
        if operators else sample.edge_index
    (whole, trimmed), (whole_grads, trimmed_grads) = _trimmed_and_whole(model, x, graph, sample)
    torch.testing.assert_close(trimmed, whole, rtol=1e-6, atol=1e-6)
    for got, expected in zip(trimmed_grads, whole_grads):  # the dense products over fewer rows may round otherwise
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


def test_sampled_batch_operators_are_the_whole_graph_operators_without_sorting():
    """A neighbour sample lists its edges by target: its CSR rows are the edge list (target_ordered_operators),
    the same matrix, degrees, transpose and gradients as whole_graph_operators' sorted build, bit for bit."""
    from fglcore.algorithms.training import whole_graph_operators
    from fglcore.models.operators import SUM, target_ordered_operators

    data = small_graph(n=120, edges=700, features=16, seed=1)
    ptr, nbrs = csr(data.edge_index, 120, "target")
    sample = sample_neighbours(ptr, nbrs, torch.tensor([3, 50, 8, 77]), [5, 3], torch.Generator().manual_seed(0))
    n = sample.n_id.numel()
    fast = target_ordered_operators(sample.edge_index, n, torch.float32)
    sorted_ = whole_graph_operators(sample.edge_index, n, frozenset({SUM}), torch.float32)
    assert fast.adjacency.transpose is None and torch.equal(fast.in_degree, sorted_.in_degree)
    for a, b in ((fast.adjacency.matrix, sorted_.adjacency.matrix),
                 (fast.adjacency.transposed(), sorted_.adjacency.transpose)):
        assert a.shape == b.shape
        for part in ("crow_indices", "col_indices", "values"):
            assert torch.equal(getattr(a, part)(), getattr(b, part)())
    torch.manual_seed(0)
    model = build_model("sage", 16, 32, 3, num_layers=2, dropout=0.0, task="node", cached=False)
    x = data.x[sample.n_id]
    (outputs, grads), (outputs_ref, grads_ref) = (_trimmed_and_whole(model, x, g, sample) for g in (fast, sorted_))
    assert all(map(torch.equal, outputs, outputs_ref))  # untrimmed and trimmed, each on both builds
    assert all(torch.equal(a, b) for g, h in zip(grads, grads_ref) for a, b in zip(g, h))
    with pytest.raises(ValueError, match="by target"):
        target_ordered_operators(sample.edge_index.flip(1), n, torch.float32)


def test_graphsage_trim_option_is_checked_and_can_be_switched_off():
    with pytest.raises(ConfigError, match="trim"):
        ExperimentConfig.from_dict({"algorithm": "graphsage", "model": "sage", "algorithm_options": {"trim": "yes"}})
    algo, _ = run("graphsage", model="sage", algorithm_options={"fanouts": [4, 2], "trim": False}, batch_size=8,
                  rounds=1)
    assert all(trim == {} for *_, trim in algo.clients[0].learner.trainer.batches())
    algo, _ = run("graphsage", model="sage", algorithm_options={"fanouts": [4, 2]}, batch_size=8, rounds=1)
    assert all(trim["num_sampled_nodes_per_hop"][0] == seeds.numel()
               for _, _, seeds, trim in algo.clients[0].learner.trainer.batches())


# -- GraphSAINT ---------------------------------------------------------------------------------------------------


def test_random_walk_subgraphs_are_induced_and_within_budget():
    data = small_graph(n=80, edges=300)
    sampler = RandomWalkSampler(data.edge_index, 80, roots=10, walk_length=2,
                                generator=torch.Generator().manual_seed(0))
    for _ in range(5):
        sub = sampler.sample()
        assert sub.node_idx.numel() <= 10 * 3
        inside = torch.zeros(80, dtype=torch.bool)
        inside[sub.node_idx] = True
        induced = torch.nonzero(inside[data.edge_index[0]] & inside[data.edge_index[1]]).view(-1)
        assert torch.equal(sub.edge_id, induced)
        assert torch.equal(sub.node_idx[sub.edge_index], data.edge_index[:, sub.edge_id])
    walk = RandomWalkSampler(data.edge_index, 80, 1, 6, torch.Generator().manual_seed(3)).walk_nodes()
    edges = set(map(tuple, data.edge_index.t().tolist()))
    assert all(a == b or (int(a), int(b)) in edges for a, b in zip(walk[:-1], walk[1:]))  # a walk follows edges


@pytest.mark.parametrize("end", ["target", "source"])
def test_saint_normalisation_is_the_counted_ratio(end):
    """node_norm = n / (C_v N), edge_norm = C_end / C_e, recounted from the same subgraphs (PyG's estimator)."""
    data = small_graph(n=40, edges=90)
    a = RandomWalkSampler(data.edge_index, 40, 4, 2, torch.Generator().manual_seed(7))
    node_norm, edge_norm = a.normalisation(num_steps=3, coverage=5.0, edge_norm_node=end)
    b = RandomWalkSampler(data.edge_index, 40, 4, 2, torch.Generator().manual_seed(7))
    cv, ce = torch.zeros(40, dtype=torch.float64), torch.zeros(data.edge_index.size(1), dtype=torch.float64)
    total, samples = 0, 0
    while total < 40 * 5.0:
        for _ in range(3):
            sub = b.sample()
            cv[sub.node_idx] += 1
            ce[sub.edge_id] += 1
            total += sub.node_idx.numel()
        samples += 3
    tip = data.edge_index[1] if end == "target" else data.edge_index[0]
    seen = ce > 0
    assert torch.allclose(edge_norm[seen].double(), (cv[tip] / ce)[seen].clamp(max=1e4), rtol=1e-6)
    assert (edge_norm[~seen & (cv[tip] > 0)] == 1e4).all()
    assert torch.allclose(node_norm.double(), samples / cv.clamp(min=0.1) / 40, rtol=1e-6)
    assert (edge_norm[seen] >= 1).all()  # an edge is never sampled more often than its end


@pytest.mark.parametrize("backbone", ["gcn", "1gnn"])
def test_saint_block_forward_on_the_whole_graph_is_the_model(backbone):
    data = small_graph(n=50, edges=120)
    torch.manual_seed(0)
    model = DistributedGNN(backbone, data.num_features, 8, 3, 2, dropout=0.0)
    model.eval()
    w, loops = propagation_weights(data.edge_index, 50, backbone)
    rows, cols, vals = data.edge_index[1], data.edge_index[0], w
    if loops is not None:
        loop = torch.arange(50)
        rows, cols, vals = torch.cat([rows, loop]), torch.cat([cols, loop]), torch.cat([vals, loops])
    op = torch.sparse_coo_tensor(torch.stack([rows, cols]), vals, (50, 50), check_invariants=False).coalesce()
    with torch.no_grad():
        assert torch.allclose(block_forward(model, data.x, op, train=False), model(data.x, data.edge_index), atol=1e-5)


# -- the centralised algorithms -----------------------------------------------------------------------------------


@pytest.mark.parametrize("algorithm,model,options", [
    ("graphsage", "sage", {"fanouts": [5, 3]}),
    ("graphsaint", "gcn", {"sample_coverage": 5.0}),
    ("graphsaint", "1gnn", {"sample_coverage": 5.0, "edge_norm_node": "source"}),
    ("central", "1gnn", {}),
])
def test_centralised_baselines_run_deterministically(algorithm, model, options):
    _, a = run(algorithm, model=model, algorithm_options=options, batch_size=16)
    _, b = run(algorithm, model=model, algorithm_options=options, batch_size=16)
    assert a.history == b.history and 0 <= a.metrics["test_accuracy"] <= 1
    assert not a.ledger.messages  # centralised: nothing is sent


def test_graphsage_trains_on_mini_batches_of_the_whole_graph():
    algo, _ = run("graphsage", model="sage", algorithm_options={"fanouts": [4, 2]}, batch_size=8, rounds=1)
    trainer = algo.clients[0].learner.trainer
    assert trainer.num_nodes == 60 and not trainer.use_pyg
    batches = list(trainer.batches())
    assert sum(seeds.numel() for _, _, seeds, _ in batches) == 30  # every training node once per epoch
    assert max(seeds.numel() for _, _, seeds, _ in batches) == 8


def test_graphsage_fanouts_default_to_the_library_ones_for_every_depth():
    from fglcore.algorithms.graphsage import default_fanouts

    assert default_fanouts(2) == [25, 10] and default_fanouts(3) == [15, 10, 5]  # digest A21
    assert default_fanouts(1) == [25] and default_fanouts(4) == [15, 10, 5, 5]
    config = ExperimentConfig.from_dict({"algorithm": "graphsage", "model": "sage", "num_layers": 4})
    assert config.algorithm_options.get("fanouts") is None  # Reddit's four layers need no fan-out given


def test_centralised_options_are_checked_before_any_work():
    with pytest.raises(ConfigError, match="fanouts"):
        ExperimentConfig.from_dict({"algorithm": "graphsage", "model": "sage", "num_layers": 3,
                                    "algorithm_options": {"fanouts": [25, 10]}})
    with pytest.raises(ConfigError, match="fanouts"):
        ExperimentConfig.from_dict({"algorithm": "graphsage", "model": "sage",
                                    "algorithm_options": {"fanouts": [0, 3]}})
    with pytest.raises(ConfigError, match="model"):
        ExperimentConfig.from_dict({"algorithm": "graphsage", "model": "gcn"})
    with pytest.raises(ConfigError, match="model"):
        ExperimentConfig.from_dict({"algorithm": "graphsaint", "model": "sage"})
    with pytest.raises(ConfigError, match="walk_length"):
        ExperimentConfig.from_dict({"algorithm": "graphsaint", "algorithm_options": {"walk_length": 0}})
    with pytest.raises(ConfigError, match="edge_norm_node"):
        ExperimentConfig.from_dict({"algorithm": "graphsaint", "algorithm_options": {"edge_norm_node": "both"}})
    if not pyg_sampling_available():
        with pytest.raises(ConfigError, match="pyg-lib"):
            ExperimentConfig.from_dict({"algorithm": "graphsage", "model": "sage",
                                        "algorithm_options": {"sampler": "pyg"}})


# -- FedAvg+nc ----------------------------------------------------------------------------------------------------


def test_fedavg_nc_collects_a_fifth_of_the_external_nodes_through_the_channel():
    federation = toy_federation()
    algo, result = run("fedavg_nc", federation)
    for k, client in enumerate(federation.clients):
        m = int(client.external_id.numel())
        got = [msg for msg in result.ledger.messages if msg.name == "nc_features" and msg.receiver == f"client{k}"]
        assert len(got) == 1 and got[0].shape[0] == round(0.2 * m)
        graph = algo.training_graphs[k]
        copies = graph.global_id[client.num_nodes:]
        assert set(copies.tolist()) <= set(client.external_id.tolist())
        # edges: the client's own intra edges plus, both ways, its cross edges to the copies; none between copies
        src, dst = client.cross_edge_index
        to_copies = int(torch.isin(dst, copies).sum())
        assert graph.edge_index.size(1) == client.edge_index.size(1) + 2 * to_copies
        assert not (graph.train_mask[client.num_nodes:] | graph.test_mask[client.num_nodes:]).any()
    assert not {"y", "labels"} & {m.name for m in result.ledger.messages}


def test_fedavg_nc_without_collection_is_fedavg():
    federation = toy_federation()
    _, nc = run("fedavg_nc", federation, algorithm_options={"collect_ratio": 0.0})
    _, plain = run("fedavg", federation)
    assert nc.history == plain.history
    with pytest.raises(ConfigError, match="collect_ratio"):
        ExperimentConfig.from_dict({"algorithm": "fedavg_nc", "algorithm_options": {"collect_ratio": 1.5}})


# -- LLCG ---------------------------------------------------------------------------------------------------------


def test_llcg_without_correction_is_fedavg_and_the_correction_changes_the_model():
    federation = toy_federation()
    _, none = run("llcg", federation, algorithm_options={"server_updates": 0})
    _, plain = run("fedavg", federation, algorithm_options={"share": "all"})
    assert none.history == plain.history
    algo, corrected = run("llcg", federation, algorithm_options={"server_updates": 2, "server_batch_ratio": 0.5})
    assert corrected.history != plain.history
    server = algo.server
    assert len(server.correction_losses) == 2 * 3
    nodes, edges, scored = server.sampler.draw()
    assert nodes.numel() == scored == 30 and (edges < 30).all()
    inside = torch.zeros(60, dtype=torch.bool)
    inside[nodes] = True
    assert edges.size(1) == int((inside[federation.data.edge_index[0]] & inside[federation.data.edge_index[1]]).sum())
    algo, neighbour = run("llcg", federation, algorithm_options={"server_sampler": "neighbour",
                                                                 "server_fanouts": [3, 2], "server_batch_ratio": 0.2})
    nodes, edges, scored = algo.server.sampler.draw()
    assert scored == 12 and nodes.numel() >= 12 and neighbour.history != corrected.history
    in_degree = torch.bincount(federation.data.edge_index[1], minlength=60)
    assert int((edges[1] < 12).sum()) == int(in_degree[nodes[:12]].clamp(max=3).sum())  # the seeds' fan-out
    with pytest.raises(ConfigError, match="server_fanouts"):
        ExperimentConfig.from_dict({"algorithm": "llcg", "algorithm_options": {"server_sampler": "neighbour",
                                                                              "server_fanouts": [5]}})
    with pytest.raises(ConfigError, match="server_batch_ratio"):
        ExperimentConfig.from_dict({"algorithm": "llcg", "algorithm_options": {"server_batch_ratio": 0.0}})


def test_llcg_local_mini_batches_train_on_sampled_subgraphs_of_the_clients_own_graph(monkeypatch):
    from fglcore.algorithms.llcg import LocalBatchTrainer

    federation = toy_federation()
    options = {"server_updates": 0, "local_sampler": "subgraph", "local_updates": 3, "local_batch_ratio": 0.5}
    algo, batched = run("llcg", federation, algorithm_options=options)
    _, full = run("llcg", federation, algorithm_options={"server_updates": 0})
    assert batched.history != full.history  # another local step than the full-batch one
    assert batched.history == run("llcg", federation, algorithm_options=options)[1].history  # deterministic
    for client, data in zip(algo.clients, federation.clients):
        trainer = client.trainer
        assert isinstance(trainer, LocalBatchTrainer) and trainer.sampler.num_nodes == int(data.num_nodes)
        for nodes, edges, scored, train in trainer.batches():  # local nodes, local edges, some training node
            assert scored == nodes.numel() == max(1, round(0.5 * int(data.num_nodes)))
            assert int(nodes.max()) < int(data.num_nodes) and train.any() and (edges < scored).all()
    seen = []
    real = LocalBatchTrainer.batch_loss
    monkeypatch.setattr(LocalBatchTrainer, "batch_loss", lambda self, batch: (seen.append(batch[2]),
                                                                              real(self, batch))[1])
    run("llcg", federation, algorithm_options=options)
    steps = algo.config.rounds * len(federation.clients) * algo.config.local_epochs * 3  # batches with no training
    assert 0 < len(seen) <= steps  # node are drawn and skipped
    with pytest.raises(ConfigError, match="local_fanouts"):
        ExperimentConfig.from_dict({"algorithm": "llcg", "algorithm_options": {"local_sampler": "neighbour",
                                                                              "local_fanouts": [5]}})
    with pytest.raises(ConfigError, match="local_sampler"):
        ExperimentConfig.from_dict({"algorithm": "llcg", "algorithm_options": {"local_sampler": "cluster"}})


# -- BNS-GCN and CAGNET on the distributed engine -----------------------------------------------------------------


def _bns_trainer(ratio: float, layers: int = 2):
    data = small_graph(n=60, edges=200)
    clients = federated(data, 3)
    spec = spec_for(data, variant=BNS, layers=layers, boundary_ratio=ratio)
    shards = [Shard(k, c, "gcn") for k, c in enumerate(clients)]
    return DistributedTrainer(shards, LocalExchange(3), spec.model(), spec.config, spec.options), shards


def test_bns_with_every_boundary_node_is_the_full_graph():
    trainer, shards = _bns_trainer(1.0)
    with torch.no_grad():
        full = trainer.forward(trainer.full_plans(), train=False)
        bns = trainer.forward(trainer.bns_plans(), train=False)
    for s in shards:
        assert torch.allclose(bns[s.cid], full[s.cid], atol=1e-6)


def test_bns_samples_int_p_boundary_nodes_per_pair_and_is_unbiased():
    trainer, shards = _bns_trainer(0.5, layers=1)
    trainer.exchange.epoch = 1
    plans = trainer.bns_plans()
    sent = {(m.sender, m.receiver): m.shape[0] for m in trainer.exchange.ledger.messages if m.name == "sampled_ids"}
    for s in shards:
        assert plans[s.cid].everything and plans[s.cid].scale is None  # every own node, no 1/p on the self term
        for j, b in s.boundary.items():
            assert sent.get((f"client{s.cid}", f"client{j}"), 0) == int(0.5 * b.numel())
    with torch.no_grad():
        full = trainer.forward(trainer.full_plans(), train=False)
        total = {s.cid: torch.zeros_like(full[s.cid]) for s in shards}
        reps = 600
        for _ in range(reps):
            out = trainer.forward(trainer.bns_plans(), train=False)
            for s in shards:
                total[s.cid] += out[s.cid]
    for s in shards:
        assert (total[s.cid] / reps - full[s.cid]).abs().max() < 0.1 < full[s.cid].abs().max()


def test_bns_gcn_run_sends_less_than_the_full_graph_and_checks_options():
    federation = toy_federation(n=80, edges=300)
    _, bns = run("bns_gcn", federation, rounds=2, algorithm_options={"boundary_ratio": 0.1})
    _, full = run("localbias", federation, rounds=2, algorithm_options={"variant": "ours-full"})
    _, again = run("bns_gcn", federation, rounds=2, algorithm_options={"boundary_ratio": 0.1})
    assert bns.history == again.history

    def terms(result):
        return sum(m.nbytes for m in result.ledger.messages if m.name.startswith("local_term") and m.round >= 1
                   and not m.name.endswith("_eval"))

    assert 0 < terms(bns) < terms(full)
    comm = bns.extras["localbias"]["communication"][0]
    assert comm["measured_total"] > 0 and not any(k.startswith("analytic") for k in comm)
    with pytest.raises(ConfigError, match="boundary_ratio"):
        ExperimentConfig.from_dict({"algorithm": "bns_gcn", "algorithm_options": {"boundary_ratio": 1.5}})
    with pytest.raises(ConfigError, match="variant"):
        ExperimentConfig.from_dict({"algorithm": "bns_gcn", "algorithm_options": {"variant": "ours"}})
    with pytest.raises(ConfigError, match="variant"):
        ExperimentConfig.from_dict({"algorithm": "localbias", "algorithm_options": {"variant": "bns"}})


def test_cagnet_1d_broadcast_cost_by_hand_and_in_the_ours_full_extras():
    # sizes (5, 6, 7), dims (4, 3, 2), client 0: forward widths 4, 3, backward widths 3, 2 -> 12 per node
    got = cagnet_1d_bytes([5, 6, 7], [4, 3, 2], 0)
    weights = 5 * 3 + 4 * 2
    assert got["upload"] == 4 * (2 * 5 * 12 + weights) and got["download"] == 4 * (13 * 12 + weights)
    federation = toy_federation()
    _, full = run("localbias", federation, rounds=1, algorithm_options={"variant": "ours-full"})
    _, ours = run("localbias", federation, rounds=1, algorithm_options={"variant": "ours"})
    comm = full.extras["localbias"]["communication"]
    sizes = [int(c.num_nodes) for c in federation.clients]
    for k, row in enumerate(comm):
        assert row["cagnet_1d_total"] == cagnet_1d_bytes(sizes, [8, 8, 3], k)["total"]
        assert row["cagnet_1d_total"] > row["analytic_total"]  # broadcasting whole blocks costs more
    assert not any(k.startswith("cagnet") for k in ours.extras["localbias"]["communication"][0])


def test_one_gnn_model_is_the_local_bias_backbone():
    torch.manual_seed(0)
    a = build_model("1gnn", 6, 8, 3, num_layers=2, dropout=0.0)
    torch.manual_seed(0)
    b = DistributedGNN("1gnn", 6, 8, 3, 2, 0.0)
    data = small_graph(features=6)
    assert torch.equal(a(data.x, data.edge_index), b(data.x, data.edge_index))


@pytest.mark.parametrize("algorithm,model,options", [
    ("graphsage", "sage", {"fanouts": [5, 3]}),
    ("central", "1gnn", {}),
    ("graphsaint", "1gnn", {"sample_coverage": 5.0}),
])
def test_centralised_baselines_on_sparse_operators_equal_the_edge_index_path(algorithm, model, options, monkeypatch):
    """Sparse operators (FGL_GRAPH_FAST, the default) change no number: per-round history and final weights."""
    results = {}
    for fast in ("1", "0"):
        monkeypatch.setenv("FGL_GRAPH_FAST", fast)
        algo, result = run(algorithm, model=model, algorithm_options=options, batch_size=16, rounds=4)
        trainer = algo.clients[0].learner.trainer
        assert (fast == "1") == (not isinstance(trainer.graph, torch.Tensor))
        results[fast] = result.history, trainer.model.state_dict()
    assert results["1"][0] == results["0"][0]
    for name, value in results["1"][1].items():
        assert torch.equal(value, results["0"][1][name]), name
