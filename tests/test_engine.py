"""The round loop: what crosses the channel, FedAvg, model selection, stopping, secure aggregation."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from fglcore.fl import Channel, Client, SecureAggregator, Server, run_rounds
from fglcore.fl.engine import TrainingDiverged, unreadable
from fglcore.fl.parameters import load_payload, module_payload
from fglcore.metrics import Prediction

NUM_CLASSES = 2
EVAL_SIZE = 10


def scripted_prediction(correct: int) -> Prediction:
    """``correct`` of ``EVAL_SIZE`` samples right (accuracy ``correct / 10``); fewer right means a higher loss."""
    y = torch.zeros(EVAL_SIZE, dtype=torch.long)
    logits = torch.zeros(EVAL_SIZE, NUM_CLASSES)
    logits[:correct, 0] = 1.0
    logits[correct:, 1] = 1.0
    return Prediction(logits, y)


class RegressionClient(Client):
    """Least squares on private data with ``steps`` full-batch gradient steps per round.

    ``val_script[r - 1]`` is the number of correct validation samples it reports
    after round ``r``; the test accuracy after round ``r`` is ``r / 10``, so the
    selected round can be read off the reported test accuracy.
    """

    def __init__(self, cid, x, y, lr=0.25, steps=1, val_script=None, skip_rounds=()):
        super().__init__(cid, num_samples=len(y))
        self.x, self.y = x, y
        self.model = nn.Linear(x.shape[1], 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr)
        self.steps = steps
        self.val_script = val_script
        self.skip_rounds = set(skip_rounds)
        self.round = 0
        self.received_rounds: list[int] = []

    def receive(self, payload, round):
        load_payload(self.model, payload)
        self.received_rounds.append(round)

    def fit(self, round):
        self.round = round
        if round in self.skip_rounds:
            return None
        for _ in range(self.steps):
            self.optimizer.zero_grad()
            loss = ((self.model(self.x).squeeze(-1) - self.y) ** 2).mean()
            loss.backward()
            self.optimizer.step()
        return module_payload(self.model)

    def evaluate(self):
        val_correct = self.val_script[self.round - 1] if self.val_script else EVAL_SIZE
        return {"val": scripted_prediction(val_correct), "test": scripted_prediction(self.round)}


class GlobalModelServer(Server):
    """FedAvg's server: broadcast the global model, replace it by the clients' weighted mean."""

    def __init__(self, model: nn.Module):
        self.model = model
        self.aggregated_rounds: list[int] = []

    def payload_for(self, client, round):
        return module_payload(self.model)

    def apply_mean(self, mean, round):
        load_payload(self.model, mean)
        self.aggregated_rounds.append(round)


def make_federation(num_clients=3, features=3, seed=0, **client_kwargs):
    g = torch.Generator().manual_seed(seed)
    clients = []
    for cid in range(num_clients):
        n = 4 + 3 * cid
        x = torch.randn(n, features, generator=g)
        y = x @ torch.randn(features, generator=g) + cid
        clients.append(RegressionClient(cid, x, y, **client_kwargs))
    torch.manual_seed(seed)
    return GlobalModelServer(nn.Linear(features, 1)), clients


def test_fedavg_converges_geometrically_to_the_global_mean():
    # A bias-only model (zero features): one step with lr = 1/4 halves the distance to each client's mean,
    # so the weighted mean gives b_r = m + (b_0 - m) / 2**r with m the mean over all samples.
    g = torch.Generator().manual_seed(1)
    data = [torch.randn(n, generator=g) + 3.0 * c for c, n in enumerate([5, 9, 2])]
    clients = [RegressionClient(c, torch.zeros(len(y), 1), y) for c, y in enumerate(data)]
    server = GlobalModelServer(nn.Linear(1, 1))
    b0 = server.model.bias.item()
    m = float(torch.cat(data).mean())
    rounds = 4
    run_rounds(server, clients, Channel(), rounds=rounds, num_classes=NUM_CLASSES)
    assert server.model.bias.item() == pytest.approx(m + (b0 - m) / 2**rounds, abs=1e-5)
    assert server.aggregated_rounds == [1, 2, 3, 4]
    assert clients[0].received_rounds == [1, 2, 3, 4, 5]
    for client in clients:
        assert torch.equal(client.model.bias, server.model.bias)


def test_ledger_records_every_download_and_upload():
    server, clients = make_federation(num_clients=3, features=3)
    rounds = 3
    result = run_rounds(server, clients, Channel(), rounds=rounds, num_classes=NUM_CLASSES)
    ledger = result.ledger
    model_bytes = (3 + 1) * 4  # float32 weight [1, 3] and bias [1]
    upload_bytes = model_bytes + 4  # plus the float32 sample count

    first = ledger.messages[: 2 * len(clients)]
    assert all(m.sender == "server" and m.round == 1 for m in first)  # downloads before round 1
    assert [m.receiver for m in first] == ["client0", "client0", "client1", "client1", "client2", "client2"]

    per_round = ledger.per_round().set_index("round")
    assert per_round.index.tolist() == [1, 2, 3, 4]
    assert per_round["upload_bytes"].tolist() == [3 * upload_bytes] * 3 + [0]
    assert per_round["download_bytes"].tolist() == [3 * model_bytes] * 4  # round 4: the payload after round 3
    assert ledger.total_bytes(sender="clients", receiver="server") == rounds * 3 * upload_bytes
    assert ledger.total_bytes(sender="server", receiver="clients") == (rounds + 1) * 3 * model_bytes
    assert ledger.total_bytes(sender="client2", name="num_samples") == rounds * 4
    assert ledger.names(sender="clients") == {"weight", "bias", "num_samples"}
    assert ledger.names(sender="server") == {"weight", "bias"}
    assert len(result.per_client) == 3 and [row["client"] for row in result.per_client] == [0, 1, 2]


def test_no_server_means_no_messages():
    _, clients = make_federation(num_clients=2)
    result = run_rounds(None, clients, Channel(), rounds=2, num_classes=NUM_CLASSES)
    assert len(result.ledger) == 0
    assert [row["round"] for row in result.history] == [1, 2]


VAL_SCRIPT = [3, 7, 5, 7, 2, 9, 9, 9]


@pytest.mark.parametrize(
    "selection, metric, expected_round",
    [("best_val", "val_accuracy", 2), ("best_val", "val_loss", 2), ("last", "val_accuracy", 5)],
)
def test_model_selection_picks_the_right_round(selection, metric, expected_round):
    server, clients = make_federation(val_script=VAL_SCRIPT)
    result = run_rounds(
        server, clients, Channel(), rounds=5, num_classes=NUM_CLASSES, selection=selection, selection_metric=metric
    )
    assert result.selected_round == expected_round
    assert result.metrics["test_accuracy"] == pytest.approx(expected_round / 10)
    assert result.metrics["val_accuracy"] == pytest.approx(VAL_SCRIPT[expected_round - 1] / 10)
    assert [row["round"] for row in result.history] == [1, 2, 3, 4, 5]
    assert not result.stopped_early


def test_evaluate_every_skips_rounds_but_evaluates_the_last():
    server, clients = make_federation(val_script=VAL_SCRIPT)
    result = run_rounds(server, clients, Channel(), rounds=5, num_classes=NUM_CLASSES, evaluate_every=2)
    assert [row["round"] for row in result.history] == [2, 4, 5]
    assert result.selected_round == 2


def test_early_stopping_with_patience():
    server, clients = make_federation(val_script=VAL_SCRIPT)
    # Best at round 2 (0.7); rounds 3 and 4 do not improve (0.5, then a tie at 0.7), so patience 2 stops at 4.
    result = run_rounds(server, clients, Channel(), rounds=8, num_classes=NUM_CLASSES, patience=2)
    assert result.stopped_early
    assert [row["round"] for row in result.history] == [1, 2, 3, 4]
    assert result.selected_round == 2
    assert server.aggregated_rounds == [1, 2, 3, 4]

    server, clients = make_federation(val_script=VAL_SCRIPT)
    result = run_rounds(server, clients, Channel(), rounds=8, num_classes=NUM_CLASSES, patience=4)
    assert not result.stopped_early and result.selected_round == 6


def test_callbacks_stop_the_run():
    seen = []

    def record(r, metrics):
        seen.append((r, metrics["val_accuracy"]))  # returns None: never stops

    def stop_at_three(r, metrics):
        return r == 3

    server, clients = make_federation(val_script=VAL_SCRIPT)
    result = run_rounds(
        server, clients, Channel(), rounds=8, num_classes=NUM_CLASSES, callbacks=[record, stop_at_three]
    )
    assert result.stopped_early
    assert [row["round"] for row in result.history] == [1, 2, 3]
    assert seen == [(1, pytest.approx(0.3)), (2, pytest.approx(0.7)), (3, pytest.approx(0.5))]
    assert result.ledger.per_round()["round"].max() == 4  # round 3's aggregate was still sent

    server, clients = make_federation(val_script=VAL_SCRIPT)
    result = run_rounds(server, clients, Channel(), rounds=3, num_classes=NUM_CLASSES, callbacks=[stop_at_three])
    assert not result.stopped_early  # stopping on the final round is not early


def test_secure_aggregation_matches_plain_and_server_sees_only_masked_int64():
    rounds = 3
    plain_server, plain_clients = make_federation(num_clients=4, features=5, steps=2)
    plain = run_rounds(plain_server, plain_clients, Channel(), rounds=rounds, num_classes=NUM_CLASSES)

    secure_server, secure_clients = make_federation(num_clients=4, features=5, steps=2)
    secure = SecureAggregator([c.cid for c in secure_clients], seed=7)
    result = run_rounds(
        secure_server, secure_clients, Channel(), rounds=rounds, num_classes=NUM_CLASSES, secure=secure
    )

    for name, value in plain_server.model.named_parameters():
        assert torch.allclose(dict(secure_server.model.named_parameters())[name], value, atol=1e-6, rtol=0)
    assert not torch.equal(secure_server.model.weight, torch.zeros_like(secure_server.model.weight))

    uploads = result.ledger.select(receiver="server")
    assert {m.name for m in uploads} == {"masked_update"}
    assert {m.dtype for m in uploads} == {"int64"}
    assert {m.shape for m in uploads} == {(5 + 1 + 1,)}  # weight, bias and the sample count
    assert len(uploads) == rounds * 4
    assert result.ledger.total_bytes(receiver="server") == rounds * 4 * 7 * 8
    assert plain.ledger.total_bytes(sender="server") == result.ledger.total_bytes(sender="server")


def test_secure_aggregation_refuses_a_missing_client():
    server, clients = make_federation(num_clients=3, skip_rounds=())
    clients[1].skip_rounds = {2}
    secure = SecureAggregator([c.cid for c in clients], seed=0)
    with pytest.raises(ValueError, match="2 masked vectors for 3 clients"):
        run_rounds(server, clients, Channel(), rounds=3, num_classes=NUM_CLASSES, secure=secure)


def test_bad_arguments_raise():
    server, clients = make_federation(num_clients=2)
    with pytest.raises(ValueError, match="unknown selection 'best'"):
        run_rounds(server, clients, Channel(), rounds=2, num_classes=NUM_CLASSES, selection="best")
    with pytest.raises(ValueError, match="rounds must be >= 1"):
        run_rounds(server, clients, Channel(), rounds=0, num_classes=NUM_CLASSES)


class DivergingClient(RegressionClient):
    """Its outputs turn NaN from round ``diverge_at`` on (as a model whose weights have blown up)."""

    def __init__(self, *args, diverge_at: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.diverge_at = diverge_at

    def evaluate(self):
        out = super().evaluate()
        if self.round >= self.diverge_at:
            out["val"].logits.fill_(float("nan"))
        return out


def diverging_federation(diverge_at: int):
    server, clients = make_federation(val_script=VAL_SCRIPT)
    clients[1] = DivergingClient(1, clients[1].x, clients[1].y, val_script=VAL_SCRIPT, diverge_at=diverge_at)
    return server, clients


def test_a_diverged_round_is_never_reported_and_stops_the_run():
    # Scripted validation: round 2 is the best before round 4, where client 1's outputs become NaN. argmax of
    # NaN logits would score them as class-0 predictions (all "right" here); the run stops and reports round 2.
    server, clients = diverging_federation(diverge_at=4)
    with pytest.warns(RuntimeWarning, match=r"client\(s\) 1 of 3 outputs NaN or \+inf logits.*round 4 of 8.*round 2"):
        result = run_rounds(server, clients, Channel(), rounds=8, num_classes=NUM_CLASSES, description="FedAvg")
    assert result.selected_round == 2 and result.metrics["test_accuracy"] == pytest.approx(0.2)
    assert result.stopped_early and result.extras["diverged_round"] == 4
    assert [row["round"] for row in result.history] == [1, 2, 3]
    assert server.aggregated_rounds == [1, 2, 3, 4]


@pytest.mark.parametrize("selection, diverge_at", [("last", 4), ("best_val", 1)])
def test_a_run_with_nothing_finite_to_report_raises(selection, diverge_at):
    server, clients = diverging_federation(diverge_at=diverge_at)
    with pytest.raises(TrainingDiverged, match=rf"FedAvg, round {diverge_at} of 8: the model of client\(s\) 1 of 3 "
                                               rf".*no earlier round to report \(selection '{selection}'\)"):
        run_rounds(server, clients, Channel(), rounds=8, num_classes=NUM_CLASSES, selection=selection,
                   description="FedAvg")


def test_minus_infinity_alone_is_a_class_of_probability_zero_not_a_divergence():
    log_probs = torch.tensor([[0.0, float("-inf")], [-1.0, -0.5]])
    assert not unreadable(log_probs)
    assert unreadable(torch.tensor([[0.0, float("nan")]])) and unreadable(torch.tensor([[float("inf"), 0.0]]))
    assert unreadable(torch.tensor([[float("-inf"), float("-inf")]]))  # no class has any probability
    assert not unreadable(torch.zeros(0, 3))
