"""O-pFGL: secure-aggregated statistics, the one-shot ledger, HRE by hand, Eq. 3/17 weights, determinism, options."""
from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.utils import to_undirected

from fglcore.algorithms import opfgl as O
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.fl.channel import Channel
from fglcore.fl.secure import SecureAggregator
from fglcore.metrics import Prediction, summarize_predictions

C, F_IN = 3, 6
FAST = {"condense_iterations": 60, "max_epochs": 300, "eval_every": 100, "patience": 2}


def synthetic_client(seed: int, n: int = 36) -> Data:
    """A random undirected graph whose features depend on the label; 40/30/30 split stratified by class."""
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % C
    x = torch.randn(n, F_IN, generator=g) + 2.0 * torch.nn.functional.one_hot(y, F_IN).float()
    src = torch.randint(0, n, (3 * n,), generator=g)
    dst = torch.randint(0, n, (3 * n,), generator=g)
    keep = src != dst
    edge_index = to_undirected(torch.stack([src[keep], dst[keep]]), num_nodes=n)
    order = torch.randperm(n, generator=g)
    train = torch.zeros(n, dtype=torch.bool)
    val = torch.zeros(n, dtype=torch.bool)
    for c in range(C):
        members = order[y[order] == c]
        train[members[: 4 + seed % 2]] = True
        val[members[6:9]] = True
    test = ~(train | val)
    return Data(x=x, y=y, edge_index=edge_index, train_mask=train, val_mask=val, test_mask=test, num_nodes=n)


def federation(num_clients: int = 3) -> SimpleNamespace:
    clients = [synthetic_client(k) for k in range(num_clients)]
    return SimpleNamespace(task="node", clients=clients, num_features=F_IN, num_classes=C)


def config(seed: int = 0, num_clients: int = 3, **options) -> ExperimentConfig:
    return ExperimentConfig.from_dict({
        "algorithm": "opfgl", "rounds": 1, "num_clients": num_clients, "seed": seed, "hidden": 16, "dropout": 0.0,
        "weight_decay": 0.0, "metric_aggregation": "client_weighted", "algorithm_options": {**FAST, **options},
    })


def run(seed: int = 0, **options):
    algorithm = O.Opfgl(config(seed, **options), federation(), "cpu")
    return algorithm, algorithm.run()


# --------------------------------------------------------------------------- secure aggregation and Eq. 9


def test_masked_sums_give_the_union_statistics_exactly():
    """Eq. 9 from masked sums: the class means are those of the union of the clients' nodes, the
    pooled variance is the union's unbiased variance times (N - 1) / (N - m) (paper) or equals it (exact)."""
    g = torch.Generator().manual_seed(3)
    feats = [torch.randn(n, 5, generator=g) * 3 + 1 for n in (9, 14, 7)]
    labels = [torch.tensor([0, 0, 0, 1, 1, 2, 2, 2, 2]), torch.randint(0, 3, (14,), generator=g),
              torch.tensor([0, 0, 1, 1, 1, 1, 2])]  # client 2 has one class-2 node: left out (A3)
    stats = [O.class_statistics(f, y, 3) for f, y in zip(feats, labels)]
    vectors = [O.sufficient_statistics(s, torch.bincount(y, minlength=3)) for s, y in zip(stats, labels)]
    secure = SecureAggregator([0, 1, 2], seed=9)
    masked = [secure.mask(k, v, round=1) for k, v in enumerate(vectors)]
    for m, v in zip(masked, vectors):  # what the server receives is not the statistics
        assert m.dtype == torch.int64 and not torch.allclose(secure.decode(m), v)
    total = secure.unmask_sum(masked, 1, [0, 1, 2])
    for denominator in ("paper", "exact"):
        pooled = O.pooled_statistics(total, denominator)
        for c in range(3):
            rows = torch.cat([f[y == c] for f, y, s in zip(feats, labels, stats) if s.count[c] > 0]).double()
            used = [s for s in stats if s.count[c] > 0]
            assert pooled.count[c] == rows.size(0)
            assert pooled.reporters[c] == len(used)
            assert torch.allclose(pooled.mean[c], rows.mean(0), atol=1e-6)
            union_var = rows.var(0, unbiased=True)
            if denominator == "exact":
                assert torch.allclose(pooled.var[c], union_var, atol=1e-5)
            else:
                n, m = rows.size(0), len(used)
                assert torch.allclose(pooled.var[c], union_var * (n - 1) / (n - m), atol=1e-5)
    assert stats[2].count[2] == 0 and pooled.count[2] == 4 + int((labels[1] == 2).sum())


def test_the_run_aggregates_the_clients_nodes_exactly():
    """End to end: the server's statistics equal those of the union of every client's propagated training rows."""
    algorithm, _ = run(pooled_variance="exact")
    target = algorithm.server.target
    rows, ys = [], []
    for data in federation().clients:
        xp = O.propagated_features(data.x, data.edge_index, 1)
        rows.append(xp[data.train_mask])
        ys.append(data.y[data.train_mask])
    rows, ys = torch.cat(rows).double(), torch.cat(ys)
    for c in range(C):
        assert target.count[c] == int((ys == c).sum())
        assert torch.allclose(target.mean[c], rows[ys == c].mean(0), atol=1e-6)
        assert torch.allclose(target.var[c], rows[ys == c].var(0), atol=1e-5)


@pytest.mark.parametrize("hops", [1, 2])
def test_chunked_propagation_of_selected_rows_is_bit_identical(monkeypatch, hops):
    """Eq. 5 in edge chunks and for some rows only: the same bits as one ``index_add`` over all edges
    (the former computation), and the dense :math:`[X \\Vert \\hat AX \\Vert \\hat A^2X]` up to rounding."""
    from torch_geometric.nn.conv.gcn_conv import gcn_norm

    data = synthetic_client(5, n=40)
    x = torch.randn(40, 7, generator=torch.Generator().manual_seed(1))
    index, weight = gcn_norm(data.edge_index, None, 40, False, True, "source_to_target", x.dtype)
    parts, current = [x], x
    for _ in range(hops):  # one index_add over all edges
        current = torch.zeros_like(current).index_add(0, index[1], current[index[0]] * weight.view(-1, 1))
        parts.append(current)
    whole = torch.cat(parts, dim=1)
    a_hat = torch.zeros(40, 40).index_put((index[1], index[0]), weight, accumulate=True)
    dense = torch.cat([x] + [torch.linalg.matrix_power(a_hat, k) @ x for k in range(1, hops + 1)], dim=1)
    rows = data.train_mask.nonzero().view(-1)
    monkeypatch.setattr(O, "PROPAGATION_CHUNK_BYTES", 3 * 7 * 4)  # three edges a chunk
    assert torch.equal(O.propagated_features(x, data.edge_index, hops), whole)
    assert torch.equal(O.propagated_features(x, data.edge_index, hops, rows=rows), whole[rows])
    assert torch.allclose(whole, dense, atol=1e-5)


def test_class_statistics_in_column_blocks_equal_those_of_all_float64_rows(monkeypatch):
    """Each class's rows turned to float64 a few columns at a time: the bits of one float64 mean and
    unbiased variance over all the class's rows (the former computation)."""
    g = torch.Generator().manual_seed(4)
    features, labels = torch.randn(50, 9, generator=g), torch.randint(0, 4, (50,), generator=g)
    labels[labels == 3] = 2
    labels[0] = 3  # one node: left out (A3)
    monkeypatch.setattr(O, "STATISTICS_BLOCK_BYTES", 8 * 20 * 2)  # two columns a block for 20 rows
    ours = O.class_statistics(features, labels, 4)
    double = features.double()
    for c in range(3):
        assert ours.count[c] == int((labels == c).sum())
        assert torch.equal(ours.mean[c], double[labels == c].mean(0))
        assert torch.equal(ours.var[c], double[labels == c].var(0, unbiased=True))
    assert ours.count[3] == 0 and not ours.mean[3].any() and not ours.var[3].any()


def test_column_blocks_cover_every_column_once_without_a_one_column_block():
    assert O.column_blocks(9, 2) == [(0, 2), (2, 4), (4, 6), (6, 9)]
    assert O.column_blocks(16830, 2796) == [(16830 * i // 7, 16830 * (i + 1) // 7) for i in range(7)]
    assert O.column_blocks(5, 100) == [(0, 5)] and O.column_blocks(1, 0) == [(0, 1)]
    for columns in range(1, 40):
        for width in range(0, 12):
            blocks = O.column_blocks(columns, width)
            assert [b for a, b in blocks][:-1] == [a for a, b in blocks][1:] and blocks[0][0] == 0
            assert blocks[-1][1] == columns and (columns == 1 or min(b - a for a, b in blocks) >= 2)


def test_the_ledger_holds_one_upload_and_one_download_per_client():
    algorithm, result = run()
    frame = result.ledger.to_frame()
    assert len(frame) == 2 * len(algorithm.clients)
    for client in algorithm.clients:
        up = result.ledger.select(sender=client.name)
        down = result.ledger.select(receiver=client.name)
        assert [(m.receiver, m.name, m.dtype, m.round) for m in up] == [("server", "masked_statistics", "int64", 1)]
        assert [(m.sender, m.name, m.round) for m in down] == [("server", "pseudo_graph", 1)]
        assert up[0].shape == (C, 2 * 2 * F_IN + 3)
        assert down[0].shape == (C, F_IN + C + 1)  # X' | A' | Y', one pseudo-node per class
    assert "x" not in result.ledger.names(sender="clients")


def test_pseudo_graph_round_trips_through_its_packing():
    graph = O.PseudoGraph(torch.randn(4, 3), torch.rand(4, 4).triu(1), torch.tensor([0, 1, 2, 2]))
    graph.adj = graph.adj + graph.adj.t()
    back = O.unpack_pseudo_graph(O.pack_pseudo_graph(graph), 3)
    assert torch.equal(back.x, graph.x) and torch.equal(back.adj, graph.adj) and torch.equal(back.y, graph.y)


# --------------------------------------------------------------------------- HRE, Eqs. 1-3 and 17 by hand


def hand_graph() -> tuple[Data, torch.Tensor]:
    """Train: 0, 1 (class 0), 4 (class 1). Node 2 hangs on 0 and 1; node 3 between 0 and 4;
    node 6 hangs on 4 only; node 5 is isolated."""
    edges = torch.tensor([[0, 1], [0, 2], [1, 2], [0, 3], [3, 4], [4, 6]]).t()
    y = torch.tensor([0, 0, 0, 1, 1, 0, 1])
    train = torch.tensor([True, True, False, False, True, False, False])
    return Data(edge_index=to_undirected(edges, num_nodes=7), y=y, num_nodes=7), train


def test_homophily_and_distillation_factors_by_hand():
    data, train = hand_graph()
    h = O.train_node_homophily(data.edge_index, data.y, train)
    # node 0: labelled neighbour 1 (same) -> 1; node 1: labelled neighbour 0 -> 1; node 4: none -> 0
    assert h.tolist() == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    H = O.class_homophily(h, data.y, train, 2)
    assert H.tolist() == [2.0, 0.0]
    w = O.distillation_factors(H)
    assert w.tolist() == pytest.approx([1 / (1 + math.log(3)), 1.0])


def test_hre_selects_the_reliable_nodes_by_hand():
    data, train = hand_graph()
    soft = O.label_propagation(data.y, data.edge_index, train, 2, iterations=2, alpha=0.9)
    assert soft[5].tolist() == [0.5, 0.5]  # isolated: uniform
    assert soft[2, 1] == 0 and soft[2, 0] > 0  # only class-0 mass reaches node 2
    assert soft[3, 0] > 0 and soft[3, 1] > 0  # node 3 is torn between the classes
    w = O.distillation_factors(torch.tensor([2.0, 0.0], dtype=torch.float64)).float()
    degree = torch.bincount(data.edge_index[0], minlength=7)
    mask, label = O.reliable_nodes(soft, w, train, degree, top_k=1, confidence=1.0, min_degree=0)
    assert mask.nonzero().view(-1).tolist() == [2]  # 6 is confident but class 1 is not in top-1 of H
    assert label[2] == 0
    mask, _ = O.reliable_nodes(soft, w, train, degree, top_k=2, confidence=1.0, min_degree=0)
    assert mask.nonzero().view(-1).tolist() == [2, 6]
    mask, _ = O.reliable_nodes(soft, w, train, degree, top_k=2, confidence=1.0, min_degree=2)
    assert mask.nonzero().view(-1).tolist() == [2]  # node 6 has degree 1 (C1)
    mask, _ = O.reliable_nodes(soft, w, train, degree, top_k=2, confidence=0.4, min_degree=0)
    assert mask.nonzero().view(-1).tolist() == [2, 3, 5, 6]  # loose confidence admits the torn and the isolated
    mask, _ = O.reliable_nodes(soft, w, train, degree, top_k=0, confidence=0.0, min_degree=0)
    assert not mask.any()  # top_k = 0: HRE off


def test_label_propagation_matches_the_formula():
    data, train = hand_graph()
    soft = O.label_propagation(data.y, data.edge_index, train, 2, iterations=2, alpha=0.9)
    n = 7
    A = torch.zeros(n, n)
    A[data.edge_index[0], data.edge_index[1]] = 1
    d = A.sum(1)
    dinv = torch.where(d > 0, d.pow(-0.5), torch.zeros_like(d))
    S = dinv.view(-1, 1) * A * dinv.view(1, -1)
    Y0 = torch.zeros(n, 2)
    Y0[train, data.y[train]] = 1
    Y = Y0
    for _ in range(2):
        Y = (0.9 * S @ Y + 0.1 * Y0).clamp(0, 1)
    Y[Y.sum(1) == 0] = 0.5
    assert torch.allclose(soft, Y, atol=1e-6)


def test_node_adaptive_gamma_is_clamped_eq17():
    algorithm, _ = run(beta=0.5, gamma_max=0.3)
    for client in algorithm.clients:
        expected = (0.5 * (client.soft_labels.double() @ client.factors)).clamp(max=0.3).float()
        assert torch.allclose(client.gamma, expected)
        assert float(client.gamma.max()) <= 0.3 + 1e-7


def test_distillation_term_is_the_weighted_mean_kl():
    teacher, student = torch.randn(5, 3), torch.randn(5, 3)
    gamma = torch.tensor([0.0, 0.1, 0.2, 0.3, 0.4])
    p, q = teacher.softmax(1), student.softmax(1)
    kl = (p * (p.log() - q.log())).sum(1)
    assert O.distillation_term(teacher, gamma)(student).item() == pytest.approx(float((gamma * kl).sum() / 5), rel=1e-5)


# --------------------------------------------------------------------------- condensation, stages, determinism


def test_condensation_lowers_its_loss_and_keeps_weights_above_delta():
    algorithm, result = run(condense_iterations=200)
    history = result.extras["condensation_loss"]
    assert len(history) == 201 and history[-1] < history[0]
    adj = result.extras["pseudo_graph"].adj
    assert torch.equal(adj, adj.t()) and torch.all(adj.diagonal() == 0)
    assert torch.all((adj == 0) | (adj >= 0.01))


def test_same_seed_same_numbers_other_seed_other_pseudo_graph():
    _, a = run(seed=1)
    _, b = run(seed=1)
    _, c = run(seed=2)
    assert a.metrics == b.metrics
    assert torch.equal(a.extras["pseudo_graph"].x, b.extras["pseudo_graph"].x)
    assert not torch.equal(a.extras["pseudo_graph"].x, c.extras["pseudo_graph"].x)


def test_early_stopping_follows_the_code_schedule():
    calls, values = [], iter([0.5, 0.6, 0.6, 0.55, 0.7])
    model = torch.nn.Linear(1, 1)
    out = O.train_with_early_stopping(model, calls.append, lambda: next(values), max_epochs=3000, eval_every=100,
                                      patience=2)
    assert calls == [101, 100, 100, 100]  # evaluations after steps j = 100, 200, 300, 400; stop after 2 misses
    assert out == {"epochs": 401.0, "best_val_accuracy": 0.6}
    calls = []
    O.train_with_early_stopping(model, calls.append, lambda: 0.5, max_epochs=250, eval_every=100, patience=5)
    assert calls == [101, 100, 50]  # the remaining steps after the last evaluation


def test_metrics_weight_clients_by_local_nodes_a13():
    """Per-client metrics averaged with weights = local node counts, not the test-set sizes."""
    a = Prediction(torch.tensor([[1.0, 0.0], [1.0, 0.0]]), torch.tensor([0, 0]), weight=10.0)  # acc 1
    b = Prediction(torch.tensor([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.0]]), torch.tensor([1, 1, 1, 1]),
                   weight=30.0)  # acc 0
    assert summarize_predictions([a, b], 2, "client_weighted")["accuracy"] == pytest.approx(0.25)
    a.weight = b.weight = None
    assert summarize_predictions([a, b], 2, "client_weighted")["accuracy"] == pytest.approx(2 / 6)
    # macro-F1 over all classes: class 1 absent from a's labels and predictions scores 0
    assert summarize_predictions([a], 2, "client_weighted")["macro_f1"] == pytest.approx(0.5)


def test_the_run_reports_weighted_metrics_and_phase_times():
    algorithm, result = run()
    rows = result.per_client
    weights = [c.num_samples for c in algorithm.clients]
    expected = sum(r["test_accuracy"] * w for r, w in zip(rows, weights)) / sum(weights)
    assert result.metrics["test_accuracy"] == pytest.approx(expected)
    assert set(result.extras["seconds"]) == {"statistics", "condensation", "stage1", "stage2", "evaluation"}


@pytest.mark.parametrize("changes,match", [
    ({"rounds": 5}, "rounds"),
    ({"model": "mlp"}, "model"),
    ({"algorithm_options": {"hops": 0}}, "hops"),
    ({"algorithm_options": {"stage2": "focal"}}, "stage2"),
    ({"algorithm_options": {"gamma_min": 0.3, "gamma_max": 0.1}}, "gamma_min"),
    ({"algorithm_options": {"hre_confidence": 1.5}}, "hre_confidence"),
    ({"algorithm_options": {"gamma_max": "big"}}, "gamma_max"),
    ({"algorithm_options": {"lp_alhpa": 0.5}}, "lp_alpha"),
])
def test_bad_settings_fail_before_any_work(changes, match):
    base = {"algorithm": "opfgl", "rounds": 1}
    with pytest.raises(ConfigError, match=match):
        ExperimentConfig.from_dict({**base, **changes})


def test_ablation_modes_change_only_stage_two():
    _, none = run(stage2="none")
    algorithm, ft = run(stage2="ft")
    assert all(float(c.gamma.abs().sum()) == 0 for c in algorithm.clients)
    assert all(row["stage2_epochs"] == 0 for row in none.per_client)
    assert all(row["stage2_epochs"] > 0 for row in ft.per_client)
    assert none.metrics != ft.metrics


def test_the_authors_cora_settings_make_a_valid_config():
    cfg = O.cora_louvain_config(2, hre_top_k=2, num_clients=20)
    assert cfg.seed == 2 and cfg.num_clients == 20 and cfg.partition == "louvain_plus" and cfg.rounds == 1
    assert cfg.partition_seed == 42 and cfg.split_seed == 42 and cfg.metric_aggregation == "client_weighted"
    merged = O.Opfgl.check_options(cfg.algorithm_options)
    assert merged["hre_top_k"] == 2 and merged["gamma_max"] == 0.15 and merged["stage2_lr"] == 5e-5
    with pytest.raises(ConfigError, match="unknown config key"):
        O.cora_louvain_config(0, not_a_key=1)


@pytest.mark.parametrize("model", ["sgc", "sage", "gat"])
def test_other_backbones_train_on_the_pseudo_graph(model):
    cfg = dataclasses.replace(config(), model=model)
    O.Opfgl.check_config(cfg)
    algorithm = O.Opfgl(cfg, federation(), "cpu")
    result = algorithm.run()
    assert 0.0 <= result.metrics["test_accuracy"] <= 1.0
    assert len(result.ledger.select(sender="clients")) == 3


def test_sgc_takes_the_pseudo_graphs_edge_weights():
    from torch_geometric.nn import SGConv

    graph = O.PseudoGraph(torch.randn(4, F_IN), torch.tensor([[0, .5, 0, .2], [.5, 0, .9, 0], [0, .9, 0, 0],
                                                              [.2, 0, 0, 0]]), torch.arange(4) % C)
    conv = SGConv(F_IN, C, K=2)
    expected = conv(graph.x, graph.edge_index, graph.edge_weight)
    assert torch.allclose(conv(graph.x, O.pseudo_graph_input(graph, "sgc")), expected, atol=1e-6)
    assert torch.equal(O.pseudo_graph_input(graph, "sage"), graph.edge_index)


# --------------------------------------------------------------------------- ablation variants: ft(focal), Table 23


def test_focal_loss_is_cross_entropy_at_gamma_zero():
    g = torch.Generator().manual_seed(0)
    logits, target = torch.randn(7, 4, generator=g), torch.tensor([0, 1, 2, 3, 0, 1, 2])
    assert O.focal_loss(logits, target, gamma=0.0).item() == pytest.approx(
        torch.nn.functional.cross_entropy(logits, target).item(), rel=1e-6)
    alpha = torch.tensor([0.5, 1.0, 2.0, 4.0])
    weighted = (alpha[target] * torch.nn.functional.cross_entropy(logits, target, reduction="none")).mean()
    assert O.focal_loss(logits, target, gamma=0.0, alpha=alpha).item() == pytest.approx(weighted.item(), rel=1e-6)


def test_focal_loss_down_weights_confident_nodes():
    """Lin et al. Eq. 5: each row's loss is its cross-entropy times (1 - p_t)^gamma."""
    logits = torch.tensor([[4.0, 0.0, 0.0], [0.2, 0.0, 0.0]])  # row 0 confident and right, row 1 unsure
    target = torch.tensor([0, 0])
    ce = torch.nn.functional.cross_entropy(logits, target, reduction="none")
    p_t = torch.softmax(logits, dim=1)[:, 0]
    ratios = [O.focal_loss(logits[i:i + 1], target[i:i + 1], gamma=2.0).item() / ce[i].item() for i in range(2)]
    assert ratios == pytest.approx(((1 - p_t) ** 2).tolist(), rel=1e-5)
    assert ratios[0] < 0.01 < 0.3 < ratios[1]
    assert O.focal_loss(logits, target, gamma=2.0) < O.focal_loss(logits, target, gamma=0.0)


def test_balanced_class_weights_average_one_over_the_labels():
    labels = torch.tensor([0, 0, 0, 1, 2, 2])
    w = O.balanced_class_weights(labels, 4)
    assert w.tolist() == pytest.approx([6 / 9, 2.0, 1.0, 0.0])
    assert w[labels].mean().item() == pytest.approx(1.0)


@pytest.mark.parametrize("alpha", ["none", "balanced"])
def test_ft_focal_fine_tunes_without_distillation(alpha):
    algorithm, result = run(stage2="ft_focal", focal_alpha=alpha)
    _, ft = run(stage2="ft")
    assert all(float(c.gamma.abs().sum()) == 0 for c in algorithm.clients)
    assert all(row["stage2_epochs"] > 0 for row in result.per_client)
    assert result.metrics != ft.metrics  # another loss, other models
    _, again = run(stage2="ft_focal", focal_alpha=alpha)
    assert again.metrics == result.metrics


@pytest.mark.parametrize("kind", O.PGE_MODES)
def test_each_link_predictor_gives_a_symmetric_adjacency_deterministically(kind):
    n, f = 5, 8
    x = torch.randn(n, f, generator=torch.Generator().manual_seed(3))
    torch.manual_seed(0)
    first = O.edge_model(kind, f, n, 16)(x)
    torch.manual_seed(0)
    second = O.edge_model(kind, f, n, 16)(x)
    assert first.shape == (n, n) and torch.equal(first, second)
    assert torch.equal(first, first.t()) and torch.all(first.diagonal() == 0)
    off = first[~torch.eye(n, dtype=torch.bool)]
    if kind == "inner_product":
        unit = torch.nn.functional.normalize(x, dim=1)
        assert torch.allclose(first, (unit @ unit.t()).fill_diagonal_(0), atol=1e-6)
    else:
        assert torch.all((off > 0) & (off < 1))


@pytest.mark.parametrize("kind", O.PGE_MODES)
def test_condensation_with_each_link_predictor_lowers_its_loss(kind):
    algorithm, result = run(pge=kind, condense_iterations=200)
    history = result.extras["condensation_loss"]
    assert len(history) == 201 and history[-1] < 0.5 * history[0]
    adj = result.extras["pseudo_graph"].adj
    assert adj.shape == (C, C) and torch.equal(adj, adj.t()) and torch.all(adj.diagonal() == 0)
    assert torch.all((adj == 0) | (adj >= 0.01))
    _, again = run(pge=kind, condense_iterations=200)
    assert torch.equal(again.extras["pseudo_graph"].adj, adj)
    assert torch.equal(again.extras["pseudo_graph"].x, result.extras["pseudo_graph"].x)
    if kind == "inner_product":  # the shipped graph is the thresholded similarity of the shipped features
        expected = O.threshold_edges(O.edge_model(kind, F_IN, C, 16)(result.extras["pseudo_graph"].x), 0.01)
        assert torch.allclose(adj, expected, atol=1e-6)
    if kind != "mlp":
        _, mlp = run(condense_iterations=200)
        assert not torch.equal(mlp.extras["pseudo_graph"].adj, adj)


def test_the_free_adjacency_moves_under_the_link_predictor_steps():
    torch.manual_seed(0)
    model = O.edge_model("direct", F_IN, 4, 16)
    x = torch.randn(4, F_IN)
    before = model(x).detach().clone()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    for _ in range(5):
        optimizer.zero_grad()
        model(x)[0, 1].backward()  # lower one pair's weight
        optimizer.step()
    after = model(x).detach()
    assert after[0, 1] < before[0, 1] and after[1, 0] == after[0, 1]
    assert after[2, 3] == before[2, 3]


@pytest.mark.parametrize("key, value", [("pge", "free"), ("stage2", "focal"), ("focal_alpha", "inverse"),
                                        ("focal_gamma", -1.0)])
def test_a_bad_variant_value_names_the_option(key, value):
    with pytest.raises(ConfigError, match=f"algorithm_options.{key}"):
        ExperimentConfig.from_dict({"algorithm": "opfgl", "rounds": 1, "algorithm_options": {key: value}})
