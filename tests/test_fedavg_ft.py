"""fedavg_ft (O-pFGL's one-shot "FedAvg" baseline): fine-tuning, the one-shot ledger, the epochs search,
determinism, options."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from fglcore.algorithms.fedavg_ft import EPOCHS_GRID, FedAvgFT, search_local_epochs
from fglcore.config import ConfigError, ExperimentConfig
from fglcore.fl.channel import Channel
from fglcore.fl.engine import RunResult, TrainingDiverged

from toy_federations import federation as toy_federation

FAST = {"local_epochs_grid": [1, 10], "max_epochs": 200, "eval_every": 20, "patience": 3}


def federation(shifts=(0, 1, 2)) -> SimpleNamespace:
    return toy_federation(shifts)


def config(seed: int = 0, fields: dict | None = None, **options) -> ExperimentConfig:
    return ExperimentConfig.from_dict({
        "algorithm": "fedavg_ft", "rounds": 1, "num_clients": 3, "seed": seed, "hidden": 16, "dropout": 0.0,
        "weight_decay": 0.0, "lr": 0.05, "metric_aggregation": "client_weighted",
        "algorithm_options": {**FAST, **options}, **(fields or {}),
    })


def run(seed: int = 0, channel: Channel | None = None, **options):
    algorithm = FedAvgFT(config(seed, **options), federation(), "cpu")
    return algorithm, algorithm.run(channel)


def test_fine_tuning_wins_back_what_averaging_lost_on_conflicting_clients():
    algorithm, result = run()
    rows = result.per_client
    for row in rows:
        # the selected (fine-tuned) model never does worse on validation than the downloaded global model ...
        assert row["ft_val_accuracy"] >= row["global_val_accuracy"], row
        # ... and what is reported is that fine-tuned model
        assert row["val_accuracy"] == pytest.approx(row["ft_val_accuracy"])
    # the clients' labellings conflict, so the one global model is wrong on some client; fine-tuning fixes it
    assert min(r["global_val_accuracy"] for r in rows) < 0.7
    assert min(r["ft_val_accuracy"] for r in rows) > 0.9
    assert result.metrics["val_accuracy"] > result.extras["global_metrics"]["val_accuracy"] + 0.2


def test_metrics_weight_clients_by_local_nodes():
    _, result = run()
    rows = result.per_client
    total = sum(r["num_samples"] for r in rows)
    sizes = [45, 48, 51]
    weighted = sum(r["test_accuracy"] * n for r, n in zip(rows, sizes)) / sum(sizes)
    assert total == sum(len(c.train_mask.nonzero()) for c in federation().clients)  # FedAvg's n_k: training nodes
    assert result.metrics["test_accuracy"] == pytest.approx(weighted)


def test_ledger_has_one_upload_and_one_download_per_client():
    channel = Channel()
    algorithm, result = run(channel=channel)
    assert result.ledger is channel.ledger
    names = {n for n, _ in algorithm.clients[0].model.named_parameters()}
    for client in algorithm.clients:
        up = channel.ledger.select(sender=client.name)
        down = channel.ledger.select(receiver=client.name)
        assert {m.round for m in up} == {1} and {m.receiver for m in up} == {"server"}
        assert sorted(m.name for m in up) == sorted(names | {"num_samples"})
        assert {m.round for m in down} == {2} and sorted(m.name for m in down) == sorted(names)
    assert len(channel.ledger) == len(algorithm.clients) * (2 * len(names) + 1)


def test_secure_aggregation_keeps_one_masked_upload_per_client():
    algorithm = FedAvgFT(config(fields={"secure_aggregation": True}), federation(), "cpu")
    result = algorithm.run()
    plain = run()[1]
    for client in algorithm.clients:
        assert [m.name for m in result.ledger.select(sender=client.name)] == ["masked_update"]
    assert result.metrics["test_accuracy"] == pytest.approx(plain.metrics["test_accuracy"], abs=1e-6)


def test_local_epochs_are_chosen_on_validation_of_the_fine_tuned_models():
    _, result = run(local_epochs_grid=[10, 1, 3])
    search = result.extras["epochs_search"]
    assert [s["local_epochs"] for s in search] == [1, 3, 10]
    best = max(s["val_accuracy"] for s in search)
    chosen = next(s for s in search if s["val_accuracy"] == best)  # ties: the smallest E
    assert result.extras["local_epochs"] == chosen["local_epochs"]
    assert result.metrics["test_accuracy"] == chosen["test_accuracy"]
    # every candidate is its own run from the same seed: alone, it gives the same numbers
    for s in search:
        _, alone = run(local_epochs_grid=[s["local_epochs"]])
        assert alone.metrics["val_accuracy"] == s["val_accuracy"]
        assert alone.metrics["test_accuracy"] == s["test_accuracy"]


def test_deterministic_for_a_seed():
    a_alg, a = run(seed=3)
    b_alg, b = run(seed=3)
    assert a.metrics == b.metrics and a.extras["epochs_search"] == b.extras["epochs_search"]
    for ca, cb in zip(a_alg.clients, b_alg.clients):
        assert all(torch.equal(p, q) for p, q in zip(ca.model.parameters(), cb.model.parameters()))


def test_defaults_follow_the_paper_range_and_opfgl_early_stopping():
    options = FedAvgFT.check_options({})
    assert options["local_epochs_grid"] == EPOCHS_GRID and min(EPOCHS_GRID) == 1 and max(EPOCHS_GRID) == 100
    assert (options["max_epochs"], options["eval_every"], options["patience"]) == (3000, 100, 5)


@pytest.mark.parametrize("options, key", [
    ({"local_epochs_grid": []}, "local_epochs_grid"),
    ({"local_epochs_grid": [0, 5]}, "local_epochs_grid"),
    ({"local_epochs_grid": [101]}, "local_epochs_grid"),
    ({"local_epochs_grid": [2, 2]}, "local_epochs_grid"),
    ({"local_epochs_grid": [1.5]}, "local_epochs_grid"),
    ({"local_epochs_grid": ["5"]}, "local_epochs_grid"),
    ({"local_epochs_grid": 5}, "local_epochs_grid"),
    ({"ft_lr": -1e-3}, "ft_lr"),
    ({"ft_lr": 0}, "ft_lr"),
    ({"ft_lr": "fast"}, "ft_lr"),
    ({"max_epochs": 0}, "max_epochs"),
    ({"eval_every": 0}, "eval_every"),
    ({"patience": 0}, "patience"),
    ({"share": "none"}, "share"),
    ({"epochs": 5}, "epochs"),])
def test_bad_options_are_refused_before_any_work(options, key):
    with pytest.raises(ConfigError, match=key):
        config(**options)


def test_more_than_one_round_and_graph_tasks_are_refused():
    with pytest.raises(ConfigError, match=r"^rounds: "):
        ExperimentConfig.from_dict({"algorithm": "fedavg_ft", "rounds": 2})
    with pytest.raises(ConfigError, match=r"^algorithm: 'fedavg_ft' supports node"):
        ExperimentConfig.from_dict({"algorithm": "fedavg_ft", "rounds": 1, "dataset": "MUTAG",
                                    "partition": "dataset_chunks", "split": "graph_stratified"})


def test_a_diverged_epochs_candidate_is_listed_and_never_chosen():
    algorithm = FedAvgFT(config(), federation(), "cpu")

    def run_one(epochs):
        if epochs == 10:
            raise TrainingDiverged("the model of client(s) 0 of 3 outputs NaN or +inf logits")
        return RunResult([], 1, {"val_accuracy": 0.5, "test_accuracy": 0.4}, [], Channel().ledger)

    result = search_local_epochs(algorithm, run_one, [1, 10])
    assert result.metrics["val_accuracy"] == 0.5
    assert result.extras["epochs_search"][1] == {"local_epochs": 10, "diverged": "the model of client(s) 0 of 3 "
                                                 "outputs NaN or +inf logits"}
    with pytest.raises(TrainingDiverged, match=r"every local_epochs candidate \[10\] diverged; the first: the model"):
        search_local_epochs(algorithm, run_one, [10])


def test_a_real_diverging_run_raises_instead_of_reporting_argmax_of_nan():
    # SGD at lr 1e30: the first round's weights are not finite, so round 1 has nothing to report
    algorithm = FedAvgFT(config(fields={"optimizer": "sgd", "lr": 1e30}, local_epochs_grid=[5]), federation(), "cpu")
    with pytest.raises(TrainingDiverged, match=r"every local_epochs candidate \[5\] diverged.*NaN or \+inf logits"):
        algorithm.run()
