"""FedSpray (Fu et al., KDD 2024) and its APFL baseline (Deng et al., 2020) on Cora and by hand."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from fglcore.algorithms import ALGORITHMS
from fglcore.algorithms.apfl import make_adaptive
from fglcore.algorithms.fedspray import (
    CLASS_RATIOS,
    PROXIES,
    FedSprayServer,
    align_proxies,
    class_mean_proxies,
    class_ratios,
    distillation_loss,
    encoder_objective,
    gnn_distillation_term,
    initial_global_proxies,
)
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.data.federation import build_federation
from fglcore.fl.channel import Channel
from fglcore.metrics import minority_mask
from fglcore.models.parameter_mixture import ParameterMixture

CPU = torch.device("cpu")
NODE = dict(dataset="Cora", partition="louvain", num_clients=3, hidden=16, rounds=3, local_epochs=2)
ENCODER_NAMES = {f"{part}.{kind}" for part in ("embedding", "classifier", "projector") for kind in ("weight", "bias")}


def node_config(**changes) -> ExperimentConfig:
    return ExperimentConfig.from_dict({**NODE, **changes})


@pytest.fixture(scope="module")
def cora3():
    return build_federation(node_config())


@pytest.fixture(scope="module")
def default_run(cora3):
    """FedSpray with the paper's defaults, 3 rounds: (algorithm, result)."""
    return fedspray(cora3)


def run(config: ExperimentConfig, federation):
    algorithm = ALGORITHMS.get(config.algorithm)(config, federation, CPU)
    return algorithm, algorithm.run()


def fedspray(cora3, rounds: int = NODE["rounds"], **options):
    return run(node_config(algorithm="fedspray", rounds=rounds, algorithm_options=options), cora3)


def test_registry_entries():
    spray, apfl = ALGORITHMS.get("fedspray"), ALGORITHMS.get("apfl")
    assert spray.tasks == ("node",) and "KDD 2024" in spray.citation
    assert set(apfl.tasks) == {"node", "graph"} and "Adaptive Personalized" in apfl.citation


# -- FedSpray: losses and proxies by hand ------------------------------------------------------------


def test_distillation_loss_is_the_mean_kl_from_teacher_to_student():
    torch.manual_seed(0)
    student, teacher = torch.randn(5, 4), torch.randn(5, 4)
    p, log_p, log_s = F.softmax(teacher, 1), F.log_softmax(teacher, 1), F.log_softmax(student, 1)
    by_hand = (p * (log_p - log_s)).sum(1).mean()  # Eq. 6: mean_i KL(p_i || y_hat_i)
    assert torch.allclose(distillation_loss(student, teacher), by_hand, atol=1e-6)
    assert float(distillation_loss(teacher, teacher)) == pytest.approx(0.0, abs=1e-6)


def test_lambda1_zero_removes_the_gnn_distillation_term():
    torch.manual_seed(0)
    output, soft_targets = torch.randn(6, 3, requires_grad=True), torch.randn(6, 3)
    assert gnn_distillation_term(soft_targets, 0.0) is None  # Eq. 7 reduces to the trainer's CE (Eq. 5)
    term = gnn_distillation_term(soft_targets, 2.0)
    assert torch.allclose(term(output), 2.0 * distillation_loss(output, soft_targets))
    nodes = torch.tensor([0, 4])
    subset = gnn_distillation_term(soft_targets, 1.5, nodes)
    assert torch.allclose(subset(output), 1.5 * distillation_loss(output[nodes], soft_targets[nodes]))
    term(output).backward()
    assert output.grad is not None and float(output.grad.abs().sum()) > 0


def test_encoder_objective_is_eq11():
    torch.manual_seed(1)
    soft, projected, gnn = torch.randn(4, 3), torch.randn(4, 3), torch.randn(4, 3)
    labels = torch.tensor([0, 2, 1, 2])
    expected = F.cross_entropy(projected, labels) + 0.5 * distillation_loss(soft, gnn)
    assert torch.allclose(encoder_objective(soft, projected, labels, gnn, 0.5), expected)


def test_class_ratios_and_class_mean_proxies():
    labels = torch.tensor([0, 0, 2, 0])
    assert torch.allclose(class_ratios(labels, 3), torch.tensor([0.75, 0.0, 0.25]))
    proxies = torch.tensor([[1.0, 0.0], [3.0, 2.0], [5.0, 5.0], [2.0, 4.0]])
    assert torch.allclose(class_mean_proxies(proxies, labels, 3), torch.tensor([[2.0, 2.0], [0.0, 0.0], [5.0, 5.0]]))
    assert torch.allclose(initial_global_proxies(3, 2, 0.01), torch.tensor([[0.0, 0.0], [0.01, 0.01], [0.02, 0.02]]))


def test_server_aligns_proxies_by_within_client_class_ratios_eq15():
    # two clients, three classes, d_s = 2; nobody has class 2, so it keeps its previous proxy
    ratios = [torch.tensor([0.75, 0.25, 0.0]), torch.tensor([0.2, 0.8, 0.0])]
    proxies = [torch.tensor([[1.0, 2.0], [3.0, 4.0], [0.0, 0.0]]), torch.tensor([[5.0, 6.0], [7.0, 8.0], [0.0, 0.0]])]
    previous = torch.tensor([[0.0, 0.0], [0.0, 0.0], [9.0, 9.0]])
    by_hand = torch.tensor(
        [
            [(0.75 * 1 + 0.2 * 5) / 0.95, (0.75 * 2 + 0.2 * 6) / 0.95],
            [(0.25 * 3 + 0.8 * 7) / 1.05, (0.25 * 4 + 0.8 * 8) / 1.05],
            [9.0, 9.0],
        ]
    )
    assert torch.allclose(align_proxies(proxies, ratios, previous), by_hand)

    encoders = [{"w": torch.tensor([1.0, 1.0])}, {"w": torch.tensor([4.0, 7.0])}]
    server = FedSprayServer({"w": torch.zeros(2)}, previous)
    updates = {
        cid: {**encoders[cid], PROXIES: proxies[cid], CLASS_RATIOS: ratios[cid]} for cid in range(2)
    }
    server.aggregate(updates, {0: 100.0, 1: 300.0}, round=1)  # weights: training nodes
    assert torch.allclose(server.proxies, by_hand)
    assert torch.allclose(server.parameters["w"], torch.tensor([3.25, 5.5]))  # Eq. 14, FedAvg weights
    sample_weighted = (100 * proxies[0] + 300 * proxies[1]) / 400
    assert not torch.allclose(server.proxies[:2], sample_weighted[:2])
    # later rounds carry no ratios: the server keeps the first ones
    later = {cid: {**encoders[cid], PROXIES: proxies[cid]} for cid in range(2)}
    server.aggregate(later, {0: 100.0, 1: 300.0}, round=2)
    assert torch.allclose(server.proxies, by_hand)


# -- FedSpray: runs on Cora -----------------------------------------------------------------------------


def test_fedspray_ledger_holds_encoder_weights_and_class_proxies_only(cora3, default_run):
    algorithm, result = default_run
    ledger = result.ledger
    allowed = ENCODER_NAMES | {PROXIES, CLASS_RATIOS, "num_samples"}
    assert ledger.names(sender="clients") <= allowed
    assert {PROXIES, CLASS_RATIOS} <= ledger.names(sender="clients")
    assert ledger.names(sender="server") == ENCODER_NAMES | {PROXIES}
    gnn_names = {name for name, _ in algorithm.clients[0].model.named_parameters()}
    assert not gnn_names & ledger.names()
    assert [m.round for m in ledger.select(name=CLASS_RATIOS)] == [1] * len(cora3.clients)
    for cid, data in enumerate(cora3.clients):
        private_rows = {data.num_nodes, int(data.train_mask.sum())}  # node features/embeddings, per-node proxies
        for m in ledger.select(sender=f"client{cid}") + ledger.select(receiver=f"client{cid}"):
            assert not m.shape or m.shape[0] not in private_rows, m
        proxy_upload = ledger.select(sender=f"client{cid}", name=PROXIES)[0]
        assert proxy_upload.shape == (cora3.num_classes, 64)


def test_fedspray_is_deterministic(cora3, default_run):
    _, first = default_run
    _, again = fedspray(cora3)
    assert first.history == again.history and first.metrics == again.metrics
    _, other = run(node_config(algorithm="fedspray", seed=1), cora3)
    assert other.history != first.history


def test_fedspray_with_lambda1_zero_trains_the_gnns_as_local(cora3, default_run):
    _, spray = fedspray(cora3, lambda1=0.0)
    _, local = run(node_config(algorithm="local"), cora3)
    assert spray.history == local.history
    _, default = default_run
    assert default.history != local.history


def test_zero_proxies_ablation_changes_results_and_sends_no_proxies(cora3, default_run):
    _, default = default_run
    _, ablation = fedspray(cora3, zero_proxies=True)
    assert ablation.history != default.history
    assert ablation.ledger.names() == ENCODER_NAMES | {"num_samples"}


@pytest.mark.parametrize("labeled_proxies", ["global", "persistent"])
def test_zero_global_proxies_trains_labeled_proxies_and_asks_for_targets_without_them(cora3, labeled_proxies):
    """The other reading of Table 3: only the class-wise S is zero; labeled nodes' proxies are still trained."""
    algorithm, result = fedspray(cora3, zero_global_proxies=True, labeled_proxies=labeled_proxies)
    _, all_zero = fedspray(cora3, zero_proxies=True, labeled_proxies=labeled_proxies)
    assert result.history != all_zero.history
    assert result.ledger.names() == ENCODER_NAMES | {"num_samples"}  # nothing of S is sent
    assert algorithm.server.proxies is None
    client = algorithm.clients[0]
    assert client.labeled_proxies.requires_grad and client.labeled_proxies.abs().sum() > 0  # trained
    q = torch.full((int(cora3.clients[0].num_nodes), algorithm.num_classes), 1.0 / algorithm.num_classes)
    proxies = client.node_proxies(q)
    unlabeled = torch.ones(proxies.size(0), dtype=torch.bool)
    unlabeled[client.trainer.train_idx] = False
    assert proxies[unlabeled].abs().sum() == 0 and torch.equal(proxies[~unlabeled], client.labeled_proxies.detach()
                                                                [torch.argsort(client.trainer.train_idx)])
    if labeled_proxies == "global":
        client.restart_labeled_proxies()
        assert client.labeled_proxies.abs().sum() == 0  # s_{y_i} of S = 0


def test_zero_global_proxies_is_a_late_option_so_stored_runs_keep_their_ids():
    from fglcore.results import run_id

    plain = node_config(algorithm="fedspray")
    explicit = node_config(algorithm="fedspray", algorithm_options={"zero_global_proxies": False})
    assert run_id(plain) == run_id(explicit)
    assert run_id(node_config(algorithm="fedspray", algorithm_options={"zero_global_proxies": True})) != run_id(plain)


def test_a_client_checkpointed_before_zero_global_proxies_existed_still_shares_its_proxies(default_run):
    import pickle

    client = default_run[0].clients[0]
    state = dict(client.__dict__)
    state["options"] = {k: v for k, v in client.options.items() if k != "zero_global_proxies"}  # as pickled before
    restored = object.__new__(type(client))
    restored.__setstate__(pickle.loads(pickle.dumps(state)))
    assert restored.shares_proxies and PROXIES in restored.upload()


def test_clients_deploy_their_personalized_gnn(cora3, default_run):
    algorithm, _ = default_run
    first, second = algorithm.clients[0], algorithm.clients[1]
    assert not torch.equal(first.model.convs[0].lin.weight, second.model.convs[0].lin.weight)
    for client, data in zip(algorithm.clients, cora3.clients):
        test = client.evaluate()["test"]
        client.model.eval()
        with torch.no_grad():
            logits = client.model(data.x, data.edge_index)
        # the trainer multiplies the sparse features sparsely, which rounds differently from this dense pass
        torch.testing.assert_close(test.logits, logits[data.test_mask], rtol=1e-4, atol=1e-5)
        assert torch.equal(test.minority, minority_mask(data.y, data.y[data.train_mask])[data.test_mask])
        # the clients hold the last broadcast: the server's encoder and proxies
        assert torch.equal(client.global_proxies, algorithm.server.proxies)
        assert torch.equal(client.encoder.embedding.weight, algorithm.server.parameters["embedding.weight"])


def test_labeled_proxies_restart_from_their_class_proxy(cora3, default_run):
    algorithm, _ = default_run
    client = algorithm.clients[0]
    client.restart_labeled_proxies()
    assert torch.equal(client.labeled_proxies.detach(), algorithm.server.proxies[client.trainer.y_train])
    persistent, _ = fedspray(cora3, rounds=1, labeled_proxies="persistent")
    kept = persistent.clients[0].labeled_proxies.detach()
    assert not torch.equal(kept, persistent.server.proxies[client.trainer.y_train])
    assert not torch.allclose(kept, torch.full_like(kept, 0.1))  # trained from the code's 0.1


@pytest.mark.parametrize(
    "options",
    [
        {"labeled_proxies": "persistent"},
        {"kd_nodes": "confident", "confidence_threshold": 0.2},
        {"projector_from": "classifier"},
        {"gnn_init": "official"},
        {"encoder_init": "official"},
        {"proxy_dim": 16, "proxy_lr": 0.05},
    ],
)
def test_official_code_variants_are_wired(cora3, default_run, options):
    _, default = default_run
    _, variant = fedspray(cora3, **options)
    assert variant.history != default.history
    assert all(0 <= row["test_accuracy"] <= 1 for row in variant.history)


def test_official_gnn_init_is_uniform_on_zero_one(cora3):
    algorithm = ALGORITHMS.get("fedspray")(
        node_config(algorithm="fedspray", algorithm_options={"gnn_init": "official"}), cora3, CPU
    )
    _, clients = algorithm.build(Channel())
    values = torch.cat([p.detach().flatten() for p in clients[0].model.parameters()])
    assert float(values.min()) >= 0 and float(values.max()) < 1 and float(values.std()) > 0.2


@pytest.mark.parametrize("model", ["sgc", "sage"])
def test_fedspray_runs_on_the_papers_other_backbones(cora3, model):
    _, result = run(node_config(algorithm="fedspray", model=model, rounds=2), cora3)
    assert 0 < result.metrics["test_accuracy"] <= 1 and not math.isnan(result.metrics["test_minority_accuracy"])


def test_secure_aggregation_is_refused_for_fedspray(cora3):
    with pytest.raises(ConfigError, match="secure_aggregation.*Eq. 15"):
        ALGORITHMS.get("fedspray")(node_config(algorithm="fedspray", secure_aggregation=True), cora3, CPU)


@pytest.mark.parametrize(
    "options, match",
    [
        ({"lambda1": -1.0}, "lambda1: must be >= 0"),
        ({"lambda_1": 5.0}, "did you mean 'lambda1'"),
        ({"kd_nodes": "reliable"}, "accepted: all, confident"),
        ({"labeled_proxies": "local"}, "accepted: global, persistent"),
        ({"confidence_threshold": 1.5}, "confidence_threshold"),
        ({"proxy_dim": 0}, "proxy_dim"),
        ({"zero_proxies": "yes"}, "zero_proxies"),
        ({"zero_proxies": True, "zero_global_proxies": True}, "zero_global_proxies: zero_proxies already sets"),
    ],
)
def test_bad_fedspray_options_are_refused(options, match):
    with pytest.raises(ConfigError, match=match):
        node_config(algorithm="fedspray", algorithm_options=options)


# -- APFL -------------------------------------------------------------------------------------------------


def test_alpha_gradient_is_eq10_and_its_step_is_projected():
    torch.manual_seed(0)
    local, global_model = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    alpha = torch.tensor(0.3, requires_grad=True)
    mixture = ParameterMixture(local, global_model, alpha)
    x, y = torch.randn(5, 3), torch.tensor([0, 1, 1, 0, 1])
    F.cross_entropy(mixture(x), y).backward()
    # grad f at v_bar, from a model holding v_bar as its own parameters
    probe = torch.nn.Linear(3, 2)
    with torch.no_grad():
        for name, value in mixture.mixed_parameters().items():
            dict(probe.named_parameters())[name].copy_(value)
    F.cross_entropy(probe(x), y).backward()
    globals_ = dict(global_model.named_parameters())
    grads = dict(probe.named_parameters())
    eq10 = sum(((v - globals_[n]) * grads[n].grad).sum() for n, v in local.named_parameters())
    assert torch.allclose(alpha.grad, eq10.detach(), atol=1e-6)
    for name, v in local.named_parameters():  # grad_v f(v_bar) = alpha * grad f(v_bar); w gets nothing
        assert torch.allclose(v.grad, 0.3 * grads[name].grad, atol=1e-6)
        assert globals_[name].grad is None

    adaptive = torch.tensor(0.9)
    make_adaptive(adaptive, lr=1e3)
    F.cross_entropy(ParameterMixture(local, global_model, adaptive)(x), y).backward()
    assert float(adaptive.detach()) in (0.0, 1.0) and adaptive.grad is None


def test_apfl_sends_only_the_global_model_and_keeps_alpha_in_unit_interval(cora3):
    algorithm, result = run(node_config(algorithm="apfl"), cora3)
    names = {name for name, _ in algorithm.clients[0].model.named_parameters()}
    assert result.ledger.names(sender="server") == names
    assert result.ledger.names(sender="clients") == names | {"num_samples"}
    alphas = [client.alpha for client in algorithm.clients]
    assert all(0.0 <= a <= 1.0 for a in alphas) and any(a != 0.5 for a in alphas)
    client = algorithm.clients[0]
    assert not torch.equal(client.mixture.local.convs[0].lin.weight, client.model.convs[0].lin.weight)


def test_apfl_with_fixed_alpha_zero_is_fedavg_and_one_is_local(cora3):
    deterministic = dict(dropout=0.0)
    fixed = lambda a: {"alpha": a, "adaptive_alpha": False}  # noqa: E731
    _, fedavg = run(node_config(algorithm="fedavg", **deterministic), cora3)
    _, apfl0 = run(node_config(algorithm="apfl", algorithm_options=fixed(0.0), **deterministic), cora3)
    assert apfl0.history == fedavg.history
    _, local = run(node_config(algorithm="local", **deterministic), cora3)
    _, apfl1 = run(node_config(algorithm="apfl", algorithm_options=fixed(1.0), **deterministic), cora3)
    assert apfl1.history == local.history


def test_apfl_runs_on_a_graph_federation():
    config = ExperimentConfig.from_dict(
        dict(dataset="MUTAG", partition="label_skew", num_clients=2, split="graph_stratified", model="gin",
             num_layers=2, hidden=16, rounds=2, local_epochs=1, batch_size=32, algorithm="apfl")
    )
    algorithm, result = run(config, build_federation(config))
    assert 0 < result.metrics["test_accuracy"] <= 1
    assert all(0.0 <= client.alpha <= 1.0 for client in algorithm.clients)


@pytest.mark.parametrize(
    "options, match",
    [({"alpha": 1.5}, "alpha: must be in"), ({"alpha_lr": -0.1}, "alpha_lr"), ({"alpha_lr": "fast"}, "alpha_lr")],
)
def test_bad_apfl_options_are_refused(options, match):
    with pytest.raises(ConfigError, match=match):
        node_config(algorithm="apfl", algorithm_options=options)
