"""FedTAD, DENSE and Co-Boost under a per-client model list (O-pFGL's Tables 3/11): one student per client
architecture, sent only to the clients of that architecture (the reading in
:mod:`fglcore.algorithms.ensemble_distillation` and :mod:`fglcore.algorithms.fedtad`)."""
from __future__ import annotations

import pytest
import torch

from fglcore.algorithms import ALGORITHMS
from fglcore.algorithms.ensemble_distillation import DistillClient
from fglcore.algorithms.fedtad import FedTADClient
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.fl.channel import Channel
from fglcore.models import APPNPMLP, MODELS, ModelSpec
from fglcore.models.gcn import GCN
from fglcore.models.model_lists import ClientModel
from toy_federations import federation

TOY = "toy_hetero"
ENTRIES = (ClientModel("gcn", 8, 2), ClientModel("appnp_mlp", 8, 2, {"K": 2, "alpha": 0.1}), ClientModel("gcn", 8, 2))
"""Clients 0 and 2 share an architecture (a 2x8 GCN); client 1 is APPNP + MLP, with BatchNorm buffers."""
CLASSES = [GCN, APPNPMLP, GCN]

ENSEMBLE = {"local_epochs_grid": [5], "max_epochs": 40, "eval_every": 20, "patience": 1, "epochs": 3,
            "generator_steps": 3, "synthesis_size": 12}
FEDTAD = {"num_gen": 12, "glb_epochs": 2, "it_d": 2, "max_epochs": 40, "eval_every": 20, "patience": 1}
ONE_SHOT = {
    "dense": ENSEMBLE, "coboost": ENSEMBLE,
    "fedtad": {**FEDTAD, "local_epochs_grid": [5], "fine_tune": True},
}


@pytest.fixture(autouse=True)
def toy_list(monkeypatch):
    """A three-entry model list registered for the test only."""
    monkeypatch.setitem(MODELS._items, TOY, ModelSpec(TOY, "test list", clients=ENTRIES))


def config(algorithm: str, seed: int = 0, rounds: int = 1, **options) -> ExperimentConfig:
    return ExperimentConfig.from_dict({
        "algorithm": algorithm, "model": TOY, "rounds": rounds, "num_clients": 3, "seed": seed, "dropout": 0.0,
        "weight_decay": 0.0, "lr": 0.05, "local_epochs": 2, "metric_aggregation": "client_weighted",
        "algorithm_options": {**ONE_SHOT.get(algorithm, {}), **options}})


def shapes(state) -> dict:
    return {k: tuple(v.shape) for k, v in state.items()}


def record_downloads(monkeypatch, client_class) -> dict[int, dict]:
    """Every payload a client receives, by client id (the last one kept)."""
    received: dict[int, dict] = {}
    original = client_class.receive

    def receive(self, payload, round):
        received[self.cid] = {k: v.clone() for k, v in payload.items()}
        return original(self, payload, round)

    monkeypatch.setattr(client_class, "receive", receive)
    return received


@pytest.mark.parametrize("name", ["dense", "coboost", "fedtad"])
def test_each_client_downloads_its_architectures_student_and_ends_with_its_own_model(name, monkeypatch):
    client_class = FedTADClient if name == "fedtad" else DistillClient
    received = record_downloads(monkeypatch, client_class)
    algorithm = ALGORITHMS.get(name)(config(name), federation(), "cpu")
    assert algorithm.architecture_groups() == [("gcn 2x8", [0, 2]), ("appnp_mlp 2x8 (K=2, alpha=0.1)", [1])]
    result = algorithm.run()
    assert [type(c.model) for c in algorithm.clients] == CLASSES
    for client in algorithm.clients:  # the download fits the client's own model, buffers included
        assert shapes(received[client.cid]) == shapes(client.model.state_dict()), client.cid
    # clients 0 and 2 (the same architecture) got the same student
    assert all(torch.equal(v, received[2][k]) for k, v in received[0].items())
    assert "mlp.norms.0.module.running_mean" in received[1]
    # one upload (round 1) and one download (round 2) per client, the download being that client's student
    ledger = result.ledger
    assert {(m.direction, m.round) for m in ledger.messages} == {("upload", 1), ("download", 2)}
    for client in algorithm.clients:
        down = ledger.select(sender="server", receiver=client.name)
        assert {m.name: m.shape for m in down} == shapes(client.model.state_dict())
    assert 0.0 <= result.metrics["test_accuracy"] <= 1.0


@pytest.mark.parametrize("name", ["dense", "coboost"])
def test_one_distillation_per_architecture_from_its_first_clients_initialisation(name):
    algorithm = ALGORITHMS.get(name)(config(name), federation(), "cpu")
    algorithm._epochs = 5
    server, clients = algorithm.build(Channel())
    initial = [{k: v.clone() for k, v in c.model.state_dict().items()} for c in clients]
    assert not all(torch.equal(v, initial[2][k]) for k, v in initial[0].items())  # two draws of the same GCN
    uploads = {c.cid: c.fit(1) for c in clients}
    weights = {c.cid: float(c.num_samples) for c in clients}
    for members, first in (([0, 2], 0), ([1], 1)):
        student = server.initial_student(uploads, weights, members)
        assert all(torch.equal(v, initial[first][k]) for k, v in student.state_dict().items())
    teachers = server.teachers_from(uploads)
    assert [type(t) for t in teachers] == CLASSES
    server.aggregate(uploads, weights, 1)
    report = server.report["students"]
    assert [(r["architecture"], r["clients"]) for r in report] == [(label, m) for label, m in server.groups]
    assert all(r["pool_graphs"] == ENSEMBLE["epochs"] for r in report)
    assert [shapes(s) for s in server.students] == [shapes(initial[0]), shapes(initial[1])]
    assert all(torch.equal(server.payload_for(clients[0], 2)[k], v) for k, v in server.students[0].items())
    assert all(torch.equal(server.payload_for(clients[2], 2)[k], v) for k, v in server.students[0].items())


def test_fedtad_starts_each_student_from_its_architectures_mean_and_loads_teacher_buffers():
    algorithm = ALGORITHMS.get("fedtad")(config("fedtad", local_epochs_grid=None, fine_tune=False), federation(),
                                         "cpu")
    server, clients = algorithm.build(Channel())
    uploads = {c.cid: c.fit(1) for c in clients}
    weights = {c.cid: float(c.num_samples) for c in clients}
    assert set(uploads[1]) >= {"mlp.norms.0.module.running_mean", "fedtad.ckr"}
    server.aggregate(uploads, weights, 1)
    norm = server.teachers[1].mlp.norms[0].module
    assert torch.equal(norm.running_mean, uploads[1]["mlp.norms.0.module.running_mean"])
    assert not torch.equal(norm.running_mean, torch.zeros_like(norm.running_mean))
    assert [s.clients for s in server.slots] == [[0, 2], [1]]
    assert [len(s.history) for s in server.slots] == [FEDTAD["glb_epochs"]] * 2
    # distilled away from the architecture's FedAvg mean (client 1: from its own upload)
    assert any(not torch.allclose(server.slots[1].parameters[k], uploads[1][k]) for k in server.slots[1].parameters
               if k.endswith("weight"))
    assert shapes(server.payload_for(clients[1], 2)) == shapes(clients[1].model.state_dict())


def test_fedtad_multi_round_sends_each_architecture_its_own_model_every_round():
    algorithm = ALGORITHMS.get("fedtad")(config("fedtad", rounds=2, local_epochs_grid=None, fine_tune=False), federation(), "cpu")
    result = algorithm.run()
    downloads = [m for m in result.ledger.messages if m.direction == "download"]
    assert {m.round for m in downloads} == {1, 2, 3}  # the opening broadcast, then after each round
    for client in algorithm.clients:
        for r in (1, 2, 3):
            got = {m.name: m.shape for m in downloads if m.receiver == client.name and m.round == r}
            assert got == shapes(client.model.state_dict()), (client.cid, r)
    assert [type(c.model) for c in algorithm.clients] == CLASSES


@pytest.mark.parametrize("name", ["dense", "coboost"])
def test_fedavg_student_init_is_refused_under_a_model_list(name):
    with pytest.raises(ConfigError, match=r"algorithm_options.student_init: 'fedavg' is not accepted with the "
                                          r"model list 'toy_hetero'.*accepted: 'initial'"):
        config(name, student_init="fedavg")
    config(name, student_init="initial")  # accepted


def test_same_seed_same_numbers_and_another_seed_other_numbers():
    def once(seed):
        algorithm = ALGORITHMS.get("dense")(config("dense", seed), federation(), "cpu")
        result = algorithm.run()
        return result.metrics, [c.model.state_dict() for c in algorithm.clients]

    (a, models_a), (b, models_b), (c, _) = once(1), once(1), once(2)
    assert a == b
    assert all(torch.equal(v, mb[k]) for ma, mb in zip(models_a, models_b) for k, v in ma.items())
    assert a != c


@pytest.mark.parametrize("name", ["dense", "coboost"])
def test_synthetic_graph_operators_give_the_edge_index_numbers_bit_for_bit(name, monkeypatch):
    """The servers hand the synthetic graphs' sparse operators to the models that take them (the GCNs and APPNP):
    every student, fine-tuned model and metric equals the edge_index path's."""
    from fglcore.algorithms import ensemble_distillation
    from fglcore.models.operators import GraphOperators

    built = []
    original = ensemble_distillation.synthetic_graph

    def spy(*args, **kwargs):
        built.append(original(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(ensemble_distillation, "synthetic_graph", spy)
    if name == "coboost":
        from fglcore.algorithms import coboost
        monkeypatch.setattr(coboost, "synthetic_graph", spy)

    def once(fast: bool):
        monkeypatch.setenv("FGL_GRAPH_FAST", "1" if fast else "0")
        built.clear()
        algorithm = ALGORITHMS.get(name)(config(name), federation(), "cpu")
        result = algorithm.run()
        kinds = {type(g) for g in built}
        return result, algorithm, kinds

    plain, plain_algorithm, plain_kinds = once(False)
    fast, fast_algorithm, fast_kinds = once(True)
    assert plain_kinds == {torch.Tensor} and fast_kinds == {GraphOperators}
    assert plain.metrics == fast.metrics and plain.per_client == fast.per_client
    assert repr(plain.extras) == repr(fast.extras)
    for a, b in zip(plain_algorithm.server.students, fast_algorithm.server.students):
        assert a.keys() == b.keys() and all(torch.equal(v, b[k]) for k, v in a.items())
    for a, b in zip(plain_algorithm.clients, fast_algorithm.clients):
        sa, sb = a.model.state_dict(), b.model.state_dict()
        assert all(torch.equal(v, sb[k]) for k, v in sa.items())


class Interrupt(Exception):
    pass


def states_equal(a, b) -> bool:
    return a.keys() == b.keys() and all(torch.equal(v, b[k]) for k, v in a.items())


@pytest.mark.parametrize("name", ["dense", "coboost"])
def test_a_run_interrupted_between_two_architectures_resumes_to_the_uninterrupted_numbers(name, tmp_path,
                                                                                           monkeypatch):
    """With a checkpoint, each architecture's student is saved before the next is distilled; an interrupted run
    resumes after the last saved one (which it does not distil again) and ends with the straight run's numbers,
    whatever random state the process holds."""
    from fglcore.fl.checkpoint import RoundCheckpoint

    options = {"local_epochs_grid": [2, 5], "epochs_selection": "teachers"}
    straight_algorithm = ALGORITHMS.get(name)(config(name, **options), federation(), "cpu")
    straight = straight_algorithm.run()
    server_class = type(straight_algorithm.server)
    original, distilled = server_class.distill, []

    def distill_then_stop_at_the_second_architecture(self, *args, **kwargs):
        distilled.append(1)
        if len(distilled) == 2:
            raise Interrupt  # as a kill while the second student is distilled
        return original(self, *args, **kwargs)

    checkpoint = RoundCheckpoint(tmp_path / "run.pt")
    monkeypatch.setattr(server_class, "distill", distill_then_stop_at_the_second_architecture)
    with pytest.raises(Interrupt):
        ALGORITHMS.get(name)(config(name, **options), federation(), "cpu").run(checkpoint=checkpoint)
    assert checkpoint.path.exists()

    def counted_distill(self, *args, **kwargs):
        distilled.append(1)
        return original(self, *args, **kwargs)

    distilled.clear()
    monkeypatch.setattr(server_class, "distill", counted_distill)
    torch.manual_seed(12345)  # the saved random states must replace whatever the process holds
    algorithm = ALGORITHMS.get(name)(config(name, **options), federation(), "cpu")
    resumed = algorithm.run(checkpoint=RoundCheckpoint(checkpoint.path))
    assert len(distilled) == 1  # only the second architecture is distilled again
    assert resumed.metrics == straight.metrics and resumed.per_client == straight.per_client
    assert repr(resumed.extras) == repr(straight.extras)
    assert all(states_equal(a, b) for a, b in zip(algorithm.server.students, straight_algorithm.server.students))
    assert resumed.ledger.total_bytes() == straight.ledger.total_bytes()

    # a saved distillation of other uploads (here another seed's teachers) is not resumed
    distilled.clear()
    other = ALGORITHMS.get(name)(config(name, seed=1, **options), federation(), "cpu").run(
        checkpoint=RoundCheckpoint(checkpoint.path))
    assert len(distilled) == 2
    assert other.metrics == ALGORITHMS.get(name)(config(name, seed=1, **options), federation(), "cpu").run().metrics
