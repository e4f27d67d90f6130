"""Round checkpoints: an interrupted run resumes and ends with an uninterrupted run's numbers."""
from __future__ import annotations

import pytest
import torch

from fglcore import experiment
from fglcore.fl.checkpoint import CHECKPOINT_ENV, RoundCheckpoint, checkpoint_interval

NODE = {"dataset": "Cora", "partition": "louvain", "num_clients": 3, "rounds": 4, "local_epochs": 2,
        "hidden": 16, "device": "cpu", "seed": 3, "selection": "best_val"}
GRAPH = {"dataset": "MUTAG", "partition": "label_skew", "num_clients": 2, "split": "graph_stratified",
         "model": "gin", "num_layers": 2, "hidden": 16, "rounds": 4, "local_epochs": 1, "batch_size": 32,
         "device": "cpu", "seed": 3}
CASES = {
    "fedavg": {**NODE, "algorithm": "fedavg", "model": "sage"},
    "fedspray": {**NODE, "algorithm": "fedspray", "selection_metric": "val_loss"},
    "apfl": {**NODE, "algorithm": "apfl"},
    "gcfl": {**NODE, "algorithm": "gcfl"},
    "fedlit": {**NODE, "algorithm": "fedlit"},
    "fedstar": {**GRAPH, "algorithm": "fedstar"},
    "gcfl_plus graph": {**GRAPH, "algorithm": "gcfl_plus"},
}


class Interrupt(Exception):
    pass


@pytest.mark.parametrize("name", list(CASES))
def test_an_interrupted_run_resumes_to_the_uninterrupted_numbers(name, tmp_path, monkeypatch):
    config = experiment.as_config(CASES[name])
    _, straight = experiment.run_full(config)

    from fglcore.fl import engine

    original = engine.evaluate_clients
    evaluated = []

    def evaluate_then_stop_in_round_3(*args, **kwargs):
        evaluated.append(1)
        if len(evaluated) == 3:
            raise Interrupt  # as a kill during round 3, after round 2 was saved
        return original(*args, **kwargs)

    checkpoint = RoundCheckpoint(tmp_path / "run.pt", every_seconds=0)
    monkeypatch.setattr(engine, "evaluate_clients", evaluate_then_stop_in_round_3)
    with pytest.raises(Interrupt):
        experiment.run_full(config, checkpoint=checkpoint)
    assert checkpoint.path.exists()
    monkeypatch.setattr(engine, "evaluate_clients", original)
    torch.manual_seed(12345)  # the checkpoint's random states must replace whatever the process holds
    _, resumed = experiment.run_full(config, checkpoint=RoundCheckpoint(checkpoint.path, every_seconds=0))
    assert resumed.history == straight.history
    assert resumed.selected_round == straight.selected_round and resumed.metrics == straight.metrics
    assert resumed.ledger.total_bytes() == straight.ledger.total_bytes()


def test_a_sweep_resumes_its_running_configuration_and_removes_the_checkpoint(tmp_path, monkeypatch):
    monkeypatch.setenv(CHECKPOINT_ENV, "0")
    path = tmp_path / "results.csv"
    config = experiment.as_config({**NODE, "algorithm": "fedavg"})
    straight = experiment.sweep([config], tmp_path / "straight.csv", progress=False)

    from fglcore.fl import engine

    original, calls = engine.evaluate_clients, []

    def stop_in_round_2(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(engine, "evaluate_clients", stop_in_round_2)
    with pytest.raises(KeyboardInterrupt):
        experiment.sweep([config], path, progress=False)
    saved = list((tmp_path / experiment.CHECKPOINT_FOLDER).glob("*.pt"))
    assert len(saved) == 1
    monkeypatch.setattr(engine, "evaluate_clients", original)
    resumed = experiment.sweep([config], path, progress=False)
    assert resumed["value"].tolist() == straight["value"].tolist()
    assert not saved[0].exists()


def test_interval_switch_and_unloadable_checkpoints(tmp_path, monkeypatch):
    monkeypatch.setenv(CHECKPOINT_ENV, "30")
    assert checkpoint_interval() == 30.0
    monkeypatch.setenv(CHECKPOINT_ENV, "soon")
    with pytest.raises(ValueError, match=CHECKPOINT_ENV):
        checkpoint_interval()
    broken = tmp_path / "broken.pt"
    broken.write_bytes(b"not a checkpoint")
    with pytest.warns(UserWarning, match="starts over"):
        assert RoundCheckpoint(broken, every_seconds=0).load() is None


def test_a_checkpoint_keeps_registered_features_as_csr_and_restores_them_registered(tmp_path):
    from fglcore.models.sparse_input import constant_features, is_registered

    x = torch.zeros(400, 300)
    x[torch.arange(400), torch.arange(400) % 300] = 1.0  # one nonzero a row: 0.3 % dense
    constant_features(x)
    other = torch.rand(50, 10)  # dense: pickled as it is
    checkpoint = RoundCheckpoint(tmp_path / "run.pt", every_seconds=0)
    checkpoint.save({"trainer": {"x": x, "again": x}, "other": other})
    assert checkpoint.path.stat().st_size < x.numel() * x.element_size() / 10  # not the dense matrix
    state = checkpoint.load()
    assert torch.equal(state["trainer"]["x"], x) and state["trainer"]["x"] is state["trainer"]["again"]
    assert is_registered(state["trainer"]["x"]) and torch.equal(state["other"], other)
