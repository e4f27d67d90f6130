"""fedpub (FED-PUB, Baek et al., ICML 2023): the masked model, the random graph, the personalised averaging
weights, what travels through the channel, the evaluation and penalty options, determinism, option checks."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.utils import is_undirected, to_undirected

from fglcore.algorithms.fedpub import EMBEDDING, PROXY_EDGES, PROXY_X, FedPub, mixing_weights, proxy_graph
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.fl.channel import Channel
from fglcore.fl.parameters import weighted_mean
from fglcore.models.masked_gcn import MaskedGCN
from fglcore.models.operators import GCN
from fglcore.algorithms.training import whole_graph_operators

C, F_IN = 3, 8


def toy_client(seed: int, shift: int = 0, n: int = 40) -> Data:
    """Features announce a class ``c``; the client's label is ``(c + shift) % C``; homophilous edges."""
    g = torch.Generator().manual_seed(seed)
    c = torch.arange(n) % C
    x = torch.randn(n, F_IN, generator=g) * 0.3 + F.one_hot(c, F_IN).float()
    y = (c + shift) % C
    src, dst = torch.randint(0, n, (2, 6 * n), generator=g)
    keep = (src != dst) & (c[src] == c[dst])
    edge_index = to_undirected(torch.stack([src[keep], dst[keep]]), num_nodes=n)
    order = torch.randperm(n, generator=g)
    train, val = torch.zeros(n, dtype=torch.bool), torch.zeros(n, dtype=torch.bool)
    train[order[:12]] = True
    val[order[12:24]] = True
    return Data(x=x, y=y, edge_index=edge_index, train_mask=train, val_mask=val, test_mask=~(train | val), num_nodes=n)


def federation(clients=None) -> SimpleNamespace:
    clients = clients if clients is not None else [toy_client(k, shift=k % 2, n=40 + 2 * k) for k in range(3)]
    return SimpleNamespace(task="node", clients=clients, num_features=F_IN, num_classes=C)


def config(seed: int = 0, fields: dict | None = None, **options) -> ExperimentConfig:
    return ExperimentConfig.from_dict({
        "algorithm": "fedpub", "rounds": 2, "local_epochs": 2, "num_clients": 3, "seed": seed, "hidden": 16,
        "dropout": 0.0, "lr": 0.05, "weight_decay": 0.0, "selection": "last",
        "algorithm_options": {"n_proxy": 2, "proxy_nodes": 20, **options}, **(fields or {}),
    })


def run(seed: int = 0, fed=None, channel: Channel | None = None, fields: dict | None = None, **options):
    algorithm = FedPub(config(seed, fields, **options), fed if fed is not None else federation(), "cpu")
    return algorithm, algorithm.run(channel)


def parameters(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


# -- the model ------------------------------------------------------------------------------------------


def test_masked_gcn_multiplies_every_weight_by_its_mask_and_prunes_small_masks_in_eval():
    torch.manual_seed(0)
    data = toy_client(0)
    model = MaskedGCN(F_IN, 5, C, num_layers=2, dropout=0.0, mask_init="glorot", prune_threshold=0.05)
    with torch.no_grad():
        model.convs[0].lin.mask[0, 0] = 0.01  # below the threshold: used in training, pruned in eval
    edges, weight = gcn_norm(data.edge_index, None, data.num_nodes, add_self_loops=True)
    a_hat = torch.sparse_coo_tensor(edges.flip(0), weight, (data.num_nodes,) * 2).to_dense()

    def by_hand(prune: bool) -> torch.Tensor:
        def w(layer):
            mask = layer.mask.detach().clone()
            if prune:
                mask[mask.abs() < 0.05] = 0
            return layer.weight.detach() * mask
        h = a_hat @ data.x @ w(model.convs[0].lin).T + model.convs[0].bias.detach()
        h = a_hat @ h.relu() @ w(model.convs[1].lin).T + model.convs[1].bias.detach()
        return h.relu() @ w(model.classifier).T + model.classifier.bias.detach()

    model.train()
    assert torch.allclose(model(data.x, data.edge_index), by_hand(prune=False), atol=1e-5)
    model.eval()
    assert torch.allclose(model(data.x, data.edge_index), by_hand(prune=True), atol=1e-5)
    assert not torch.allclose(by_hand(prune=True), by_hand(prune=False))
    # the sparse-operator path gives the edge_index path's numbers
    ops = whole_graph_operators(data.edge_index, data.num_nodes, frozenset({GCN}), data.x.dtype)
    assert torch.allclose(model(data.x, ops), model(data.x, data.edge_index), atol=1e-6)
    small = sum(int((m.detach().abs() < 0.05).sum()) for m in model.masks())
    assert small >= 1 and model.sparsity() == pytest.approx(small / sum(m.numel() for m in model.masks()))


def test_masked_gcn_reset_parameters_and_mask_init():
    model = MaskedGCN(F_IN, 4, C, mask_init="ones")
    assert all(torch.equal(m, torch.ones_like(m)) for m in model.masks())
    with torch.no_grad():
        for m in model.masks():
            m.zero_()
    torch.manual_seed(1)
    model.reset_parameters()
    assert all(torch.equal(m, torch.ones_like(m)) for m in model.masks())
    glorot = MaskedGCN(F_IN, 4, C, mask_init="glorot")
    assert all(m.std() > 0 for m in glorot.masks())
    assert [n for n, _ in model.named_parameters()] == [
        "convs.0.bias", "convs.0.lin.weight", "convs.0.lin.mask", "convs.1.bias", "convs.1.lin.weight",
        "convs.1.lin.mask", "classifier.weight", "classifier.mask", "classifier.bias"]


# -- the random graph and the averaging weights -------------------------------------------------------


def test_proxy_graph_is_seeded_blocks_of_normal_features():
    x, edge_index = proxy_graph(3, 30, 0.2, F_IN, seed=7)
    x2, edge_index2 = proxy_graph(3, 30, 0.2, F_IN, seed=7)
    assert torch.equal(x, x2) and torch.equal(edge_index, edge_index2)
    assert x.shape == (90, F_IN)
    assert not torch.equal(proxy_graph(3, 30, 0.2, F_IN, seed=8)[1], edge_index)
    block = edge_index // 30
    assert torch.equal(block[0], block[1])  # no edge between blocks (p_out = 0)
    assert is_undirected(edge_index, num_nodes=90)
    assert 0.1 < edge_index.size(1) / (3 * 30 * 29) < 0.3  # about p of the ordered pairs


def test_mixing_weights_are_a_softmax_of_tau_times_cosine_rows_sum_to_one():
    h = torch.randn(5, 7, generator=torch.Generator().manual_seed(0))
    similarity, alpha = mixing_weights(h, tau=10.0)
    unit = F.normalize(h.double(), dim=1)
    assert torch.allclose(similarity, unit @ unit.T)
    expected = torch.exp(10 * similarity) / torch.exp(10 * similarity).sum(dim=1, keepdim=True)
    assert torch.allclose(alpha, expected)
    assert torch.allclose(alpha.sum(dim=1), torch.ones(5, dtype=torch.float64)) and (alpha > 0).all()
    assert torch.equal(alpha.argmax(dim=1), torch.arange(5))  # a client is most similar to itself
    _, uniform = mixing_weights(h, tau=0.0)
    assert torch.allclose(uniform, torch.full((5, 5), 0.2, dtype=torch.float64))


def test_identical_clients_get_the_plain_average_like_fedavg():
    twin = toy_client(3)
    algorithm, _ = run(fed=federation([twin, twin.clone(), twin.clone()]), fields={"rounds": 1})
    server = algorithm.server
    assert torch.allclose(server.similarity, torch.ones(3, 3, dtype=torch.float64))
    assert torch.allclose(server.alpha, torch.full((3, 3), 1 / 3, dtype=torch.float64))


def test_personalised_models_are_the_alpha_weighted_averages_of_the_uploads():
    algorithm, _ = run()
    server, clients = algorithm.server, algorithm.clients
    uploads = [{n: p.detach() for n, p in c.model.named_parameters() if not n.endswith("mask")} for c in clients]
    assert server.alpha.shape == (3, 3) and not torch.allclose(server.alpha, server.alpha[0].expand(3, 3))
    for i, c in enumerate(server.order):
        expected = weighted_mean(uploads, server.alpha[i].tolist())
        for name, value in expected.items():
            assert torch.allclose(server.personalized[c][name], value, atol=1e-6)
    # tau = 0 is FedAvg's uniform average for every client
    algorithm, _ = run(tau=0.0)
    uploads = [{n: p.detach() for n, p in c.model.named_parameters() if not n.endswith("mask")}
               for c in algorithm.clients]
    plain = weighted_mean(uploads, [1, 1, 1])
    for c in range(3):
        for name, value in plain.items():
            assert torch.allclose(algorithm.server.personalized[c][name], value, atol=1e-6)


# -- what travels -------------------------------------------------------------------------------------


def test_ledger_holds_weights_embeddings_and_the_random_graph_never_masks_or_data():
    channel = Channel()
    algorithm, _ = run(channel=channel)
    ledger = channel.ledger
    weights = {n for n, _ in algorithm.clients[0].model.named_parameters() if not n.endswith("mask")}
    assert ledger.names(sender="clients") == weights | {EMBEDDING, "num_samples"}
    assert ledger.names(sender="server") == weights | {PROXY_X, PROXY_EDGES}
    assert not {"x", "y", "edge_index"} & ledger.names()
    for cid in range(3):
        assert len(ledger.select(sender=f"client{cid}", name=EMBEDDING)) == 2  # one per round
        proxy = ledger.select(receiver=f"client{cid}", name=PROXY_X)
        assert [m.round for m in proxy] == [1] and proxy[0].shape == (40, F_IN)  # sent once, before round 1
        assert ledger.select(sender=f"client{cid}", name=EMBEDDING)[0].shape == (16,)
    # upload_masks sends the masks too (as the code's state_dict); the downloads stay mask-free
    channel = Channel()
    run(channel=channel, upload_masks=True)
    assert {n for n in channel.ledger.names(sender="clients") if n.endswith("mask")}
    assert not {n for n in channel.ledger.names(sender="server") if n.endswith("mask")}


def test_one_shot_without_opening_download_is_one_upload_and_one_download_per_client():
    channel = Channel()
    algorithm, _ = run(channel=channel, fields={"rounds": 1}, initial_download=False)
    for cid in range(3):
        rounds = {(m.sender == "server", m.round) for m in channel.ledger.messages if f"client{cid}" in
                  (m.sender, m.receiver)}
        assert rounds == {(False, 1), (True, 2)}
    # the clients built the server's random graph from the shared seed
    for client in algorithm.clients:
        assert torch.equal(client.proxy[0], algorithm.server.proxy[0])


def test_masks_stay_personal_and_are_not_overwritten_by_the_download():
    algorithm, _ = run(evaluate="personalized")
    clients, server = algorithm.clients, algorithm.server
    masks = [[m.detach() for m in c.model.masks()] for c in clients]
    assert not all(torch.equal(a, b) for a, b in zip(masks[0], masks[1]))
    for c in clients:  # evaluate="personalized": the downloaded weights are loaded, with the client's own masks
        for name, p in c.model.named_parameters():
            if not name.endswith("mask"):
                assert torch.equal(p.detach(), server.personalized[c.cid][name])


def test_evaluate_local_reports_the_locally_trained_model_and_personalized_the_download():
    local, _ = run(evaluate="local")
    pers, _ = run(evaluate="personalized")
    # the same training either way (the download is loaded before the next round's training) ...
    assert torch.allclose(local.server.alpha, pers.server.alpha)
    # ... but "local" keeps the model its last local training left, not the last download
    for c in local.clients:
        differs = [not torch.equal(p.detach(), local.server.personalized[c.cid][n])
                   for n, p in c.model.named_parameters() if not n.endswith("mask")]
        assert any(differs)


# -- the local objective --------------------------------------------------------------------------------


def test_l1_term_shrinks_the_masks_and_detached_penalties_are_plain_cross_entropy():
    def mean_mask(algorithm):
        return torch.cat([m.detach().abs().flatten() for c in algorithm.clients for m in c.model.masks()]).mean()

    strong, _ = run(l1=0.05, loc_l2=0.0)
    none, _ = run(l1=0.0, loc_l2=0.0)
    assert mean_mask(strong) < mean_mask(none) - 0.05
    detached, r_detached = run(l1=0.05, loc_l2=0.5, penalties="detached")
    _, r_none = run(l1=0.0, loc_l2=0.0)
    assert r_detached.metrics == r_none.metrics  # the code's terms never reach a gradient
    for a, b in zip(detached.clients, none.clients):
        assert all(torch.equal(p, q) for p, q in zip(parameters(a.model).values(), parameters(b.model).values()))


def test_proximal_term_pulls_towards_the_personalised_download_from_round_two():
    def distance(algorithm):
        total = 0.0
        for c in algorithm.clients:
            for name, p in c.model.named_parameters():
                if not name.endswith("mask"):
                    total += float((p.detach() - c.anchor[name]).norm())
        return total

    far, _ = run(l1=0.0, loc_l2=0.0, fields={"rounds": 3})
    near, _ = run(l1=0.0, loc_l2=1.0, fields={"rounds": 3})
    assert distance(near) < distance(far)
    # in round 1 there is no anchor: one round with or without the proximal weight trains the same numbers
    a, _ = run(l1=0.0, loc_l2=1.0, fields={"rounds": 1})
    b, _ = run(l1=0.0, loc_l2=0.0, fields={"rounds": 1})
    assert torch.equal(a.server.alpha, b.server.alpha)


# -- runs -----------------------------------------------------------------------------------------------


def test_same_seed_same_numbers_other_seed_other_numbers():
    _, first = run(seed=3)
    _, again = run(seed=3)
    _, other = run(seed=4)
    assert first.metrics == again.metrics and first.per_client == again.per_client
    assert first.metrics != other.metrics


def test_local_epochs_grid_reports_the_best_validation_run():
    algorithm, result = run(fields={"rounds": 1}, local_epochs_grid=[5, 1], initial_download=False)
    search = result.extras["epochs_search"]
    assert [row["local_epochs"] for row in search] == [1, 5]
    best = max(search, key=lambda row: row["val_accuracy"])
    assert result.extras["local_epochs"] == best["local_epochs"]
    assert result.metrics["val_accuracy"] == best["val_accuracy"]
    assert algorithm.clients[0].epochs == best["local_epochs"]


def test_client_weighted_metrics_weight_clients_by_local_nodes():
    _, result = run(fields={"metric_aggregation": "client_weighted"})
    sizes = [40, 42, 44]
    expected = sum(r["test_accuracy"] * n for r, n in zip(result.per_client, sizes)) / sum(sizes)
    assert result.metrics["test_accuracy"] == pytest.approx(expected)


@pytest.mark.parametrize("options,match", [
    ({"tau": -1.0}, r"algorithm_options\.tau"),
    ({"n_proxy": 0}, r"algorithm_options\.n_proxy"),
    ({"proxy_p": 0.0}, r"algorithm_options\.proxy_p"),
    ({"l1": -0.1}, r"algorithm_options\.l1"),
    ({"penalties": "paper"}, r"algorithm_options\.penalties.*objective, detached"),
    ({"evaluate": "global"}, r"algorithm_options\.evaluate.*local, personalized"),
    ({"mask_init": "zeros"}, r"algorithm_options\.mask_init.*ones, glorot"),
    ({"local_epochs_grid": [0, 5]}, r"algorithm_options\.local_epochs_grid"),
    ({"local_epochs_grid": []}, r"algorithm_options\.local_epochs_grid"),
    ({"share": "all"}, r"unknown fedpub option 'share'"),
    ({"tau": "ten"}, r"algorithm_options\.tau"),
])
def test_bad_options_are_refused_naming_the_key(options, match):
    with pytest.raises(ConfigError, match=match):
        config(**options)


def test_settings_fedpub_cannot_honour_are_refused():
    with pytest.raises(ConfigError, match=r"^model: fedpub trains FED-PUB's masked GCN"):
        config(fields={"model": "sage"})
    with pytest.raises(ConfigError, match=r"^secure_aggregation: not supported by fedpub"):
        config(fields={"secure_aggregation": True})
    with pytest.raises(ConfigError, match=r"^algorithm: 'fedpub' supports node"):
        ExperimentConfig.from_dict({"algorithm": "fedpub", "dataset": "MUTAG", "partition": "by_dataset"})
