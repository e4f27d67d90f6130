"""fglcore on Flower: records, the checks of what Flower can carry, and a real SuperLink with two SuperNodes.

The deployment tests start Flower's own processes on 127.0.0.1 (``fglcore.fl.flower.deploy``), each
SuperNode with one long-lived ClientApp process (``fglcore.fl.flower.worker``; Flower's default would start a
``flwr-clientapp`` process, importing torch and fglcore, for every message). An idle SuperNode still polls its
SuperLink every 3 s, so each message costs seconds and the runs are as short as the checks allow (2 clients,
2 rounds, one evaluation).
"""
from __future__ import annotations

import threading
import time

import numpy as np
import pandas as pd
import pytest
import torch

pytest.importorskip("flwr")

from fglcore.experiment import run_full  # noqa: E402
from fglcore.fl.checkpoint import rng_state  # noqa: E402
from fglcore.fl.flower.apps import (ClientLost, decode_rng, encode_rng, record_tensors,  # noqa: E402
                                    tensor_record)
from fglcore.fl.flower.deploy import DeploymentError, LocalDeployment  # noqa: E402
from fglcore.fl.flower.job import FlowerUnsupported, prepare_job  # noqa: E402

BASE = {"dataset": "Cora", "num_clients": 2, "rounds": 2, "local_epochs": 1, "hidden": 16, "device": "cpu",
        "evaluate_every": 2, "seed": 3}


def test_tensor_record_round_trip_keeps_names_dtypes_shapes_and_values():
    payload = {"convs.0.weight": torch.randn(3, 4), "count": torch.tensor(7.0), "mask": torch.tensor([True, False]),
               "ids": torch.arange(5)}
    back = record_tensors(tensor_record(payload))
    assert list(back) == list(payload)
    for name, value in payload.items():
        assert back[name].dtype == value.dtype and back[name].shape == value.shape
        assert torch.equal(back[name], value)


def test_random_state_record_restores_every_generator():
    torch.manual_seed(5)
    np.random.seed(5)
    import random
    random.seed(5)
    random.gauss(0, 1)  # a cached Gaussian in Python's state
    record = encode_rng(rng_state())
    expected = (torch.rand(3), np.random.rand(3), random.random(), random.gauss(0, 1))
    from fglcore.fl.checkpoint import set_rng_state
    set_rng_state(decode_rng(record))
    again = (torch.rand(3), np.random.rand(3), random.random(), random.gauss(0, 1))
    assert torch.equal(expected[0], again[0]) and np.array_equal(expected[1], again[1])
    assert expected[2:] == again[2:]


def test_algorithm_with_its_own_loop_is_refused_naming_it(tmp_path):
    with pytest.raises(FlowerUnsupported, match="'fedpub'.*run"):
        prepare_job({**BASE, "algorithm": "fedpub"}, tmp_path)
    assert not list(tmp_path.iterdir())


def test_partition_files_hold_one_client_each(tmp_path):
    job = prepare_job(BASE, tmp_path)
    assert sorted(job.partition_files) == [0, 1]
    for cid, path in job.partition_files.items():
        client = torch.load(path, weights_only=False)["client"]
        assert client.cid == cid
        # its own subgraph only: the trainer's nodes are this client's
        assert client.trainer.y.numel() < 2708


@pytest.mark.parametrize("script, message", [
    ("exit 1", "superlink exited with status 1 while starting"),        # a process that dies at once
    ("exec sleep 60", r"superlink did not listen on 127.0.0.1:9 within 2 s"),  # one that never listens
])
def test_a_failed_start_is_a_clear_error_within_the_timeout_and_leaves_no_process(tmp_path, monkeypatch, script,
                                                                                   message):
    from fglcore.fl.flower import deploy
    program = tmp_path / "fake-flower"
    program.write_text(f"#!/bin/sh\n{script}\n")
    program.chmod(0o755)
    monkeypatch.setattr(deploy.LocalDeployment, "_executable", lambda self, name: str(program))
    monkeypatch.setattr(deploy, "free_port", lambda: 9)  # nothing listens on the discard port here
    dep = LocalDeployment(tmp_path / "deployment", {0: tmp_path / "client0.pt"}, start_timeout=2, grace=2)
    started = time.monotonic()
    with pytest.raises(deploy.DeploymentError, match=message):
        dep.start()
    assert time.monotonic() - started < 10
    assert dep.processes == []


def _assert_same_run(result, expected):
    assert result.selected_round == expected.selected_round
    for key, value in expected.metrics.items():
        assert result.metrics[key] == pytest.approx(value, abs=1e-6, nan_ok=True)
    assert result.history == expected.history  # bit for bit: the random state travels with the messages
    pd.testing.assert_frame_equal(result.ledger.to_frame(), expected.ledger.to_frame())
    wire = pd.DataFrame(result.extras["flower_wire"])
    # every payload and update tensor the ledger counts crossed Flower, byte for byte, plus .npy headers
    ledger = expected.ledger.to_frame()
    assert wire.download_tensor_bytes.sum() == ledger[ledger.sender == "server"].nbytes.sum()
    assert wire.upload_tensor_bytes.sum() == ledger[ledger.receiver == "server"].nbytes.sum()
    assert (wire.download_array_bytes >= wire.download_tensor_bytes).all()
    assert (wire.upload_wire_bytes > wire.upload_tensor_bytes).all()


def test_ci_check_superlink_and_two_supernodes_run_two_rounds_of_fedavg_and_stop(tmp_path):
    """The issue's CI check: start a SuperLink and two SuperNodes (each with its long-lived ClientApp process)
    on 127.0.0.1, run two rounds of FedAvg, compare with the in-process engine, stop every process."""
    started = time.perf_counter()
    config = {**BASE, "algorithm": "fedavg", "local_epochs": 2}  # dropout 0.5: the random state must travel
    _, expected = run_full(config)
    job = prepare_job(config, tmp_path / "job")
    with LocalDeployment(tmp_path / "deployment", job.partition_files, start_timeout=60, early_run=True) as dep:
        assert sorted(dep.workers) == [0, 1]
        result = dep.run(job, result_file=tmp_path / "result.pt", run_timeout=300, message_timeout=120)
    _assert_same_run(result, expected)
    assert dep.processes == [] and all(p.popen.poll() is not None for p in [dep.superlink, *dep.supernodes.values(),
                                                                          *dep.workers.values()])
    print(f"CI check: {time.perf_counter() - started:.1f} s in all, {result.extras['flower_seconds']:.1f} s of rounds")


def test_on_flowers_simulation_engine_the_numbers_are_the_in_process_ones(tmp_path):
    """Flower's simulation engine (Ray actors as virtual SuperNodes): the same apps, the same numbers. Needs
    ``flwr[simulation]`` (Ray), which the ``flower`` extra does not install."""
    pytest.importorskip("ray")
    from fglcore.fl.flower.simulation import run_in_simulation

    config = {**BASE, "algorithm": "fedavg", "local_epochs": 2}
    _, expected = run_full(config)
    result, job, seconds = run_in_simulation(config, tmp_path, num_cpus=2, message_timeout=120)
    _assert_same_run(result, expected)
    print(f"simulation engine: {seconds:.1f} s, {result.extras['flower_seconds']:.1f} s of rounds")


@pytest.mark.parametrize("early_run", [False, True])
def test_a_clientapp_worker_that_fails_to_start_is_a_clear_error_and_leaves_no_process(tmp_path, monkeypatch,
                                                                                       early_run):
    import sys

    job = prepare_job(BASE, tmp_path / "job")
    monkeypatch.setattr(LocalDeployment, "worker_command", [sys.executable, "-c", "import sys; sys.exit(3)"])
    dep = LocalDeployment(tmp_path / "deployment", job.partition_files, start_timeout=60, grace=2,
                          early_run=early_run)
    with pytest.raises(DeploymentError, match=r"worker-client0 exited with status 3 while starting"):
        dep.start()
        dep.run(job, run_timeout=60)  # early_run: start returned with the SuperLink up; run reports the worker
    assert dep.processes == [] and dep.superlink.popen.poll() is not None
    assert all(p.popen.poll() is not None for p in [*dep.supernodes.values(), *dep.workers.values()])


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    folder = tmp_path_factory.mktemp("flower")
    # each test writes its job's files here (prepare_job) before it runs; a SuperNode opens its file per message
    partitions = {cid: folder / "job" / f"client{cid}.pt" for cid in range(BASE["num_clients"])}
    with LocalDeployment(folder / "deployment", partitions, start_timeout=60) as dep:
        yield dep, folder
    for process in dep.processes:
        assert process.popen.poll() is not None


def test_fedspray_on_superlink_and_two_supernodes_gives_the_in_process_numbers(deployment):
    dep, folder = deployment
    config = {**BASE, "algorithm": "fedspray", "local_epochs": 2}
    _, expected = run_full(config)
    job = prepare_job(config, folder / "job")  # the SuperNodes' partition files, rewritten
    result = dep.run(job, result_file=folder / "result.pt", run_timeout=300, message_timeout=120)
    _assert_same_run(result, expected)


def test_fglcore_masking_on_the_supernodes_gives_the_in_process_numbers(deployment):
    dep, folder = deployment
    config = {**BASE, "secure_aggregation": True}
    _, expected = run_full(config)
    job = prepare_job(config, folder / "job")
    result = dep.run(job, result_file=folder / "secure.pt", run_timeout=300, message_timeout=120,
                     secure_aggregation="fglcore")
    assert result.history == expected.history
    pd.testing.assert_frame_equal(result.ledger.to_frame(), expected.ledger.to_frame())
    assert result.ledger.names(sender="clients") == {"masked_update"}
    wire = pd.DataFrame(result.extras["flower_wire"])
    trains = wire[wire.kind == "train"]
    # only the masked int64 vectors crossed Flower from the clients: as many bytes as the ledger's uploads
    assert trains.upload_tensor_bytes.sum() == expected.ledger.total_bytes(receiver="server")


def test_flowers_secaggplus_gives_our_weighted_mean_to_its_quantisation_bound(deployment, monkeypatch):
    from fglcore.fl.engine import Client
    from fglcore.fl.flower.secaggplus import DEFAULTS, error_bound
    from fglcore.fl.secure import SecureAggregator

    dep, folder = deployment
    config = {**BASE, "secure_aggregation": True}
    updates, sums = {}, {}  # in-process: each client's update and the unmasked sum, by round
    masked_update, unmask_sum = Client.masked_update, SecureAggregator.unmask_sum

    def record_update(self, update, secure, round):
        updates.setdefault(round, []).append(
            (self.num_samples, torch.cat([v.detach().double().flatten() for v in update.values()])))
        return masked_update(self, update, secure, round)

    def record_sum(self, masked, round, client_ids=None):
        sums[round] = unmask_sum(self, masked, round, client_ids)
        return sums[round]

    monkeypatch.setattr(Client, "masked_update", record_update)
    monkeypatch.setattr(SecureAggregator, "unmask_sum", record_sum)
    _, expected = run_full(config)
    job = prepare_job(config, folder / "job")
    result = dep.run(job, result_file=folder / "secaggplus.pt", run_timeout=300, message_timeout=120)
    flower = {entry["round"]: entry["mean"] for entry in result.extras["flower_secaggplus"]}
    assert sorted(flower) == [1, 2] and [e["clients"] for e in result.extras["flower_secaggplus"]] == [[0, 1]] * 2
    # Round 1 starts from the same model and random state: the clients' updates are the in-process ones, so
    # SecAgg+'s mean differs from ours by its quantisation bound at most (plus fglcore's fixed point, 2**-25
    # per client on n_k * x_k).
    ours = sums[1][:-1] / sums[1][-1]
    counts = [n for n, _ in updates[1]]
    exact = sum(n * x for n, x in updates[1]) / sum(counts)
    spread = max(float((x - exact).abs().max()) for _, x in updates[1])
    bound = error_bound(counts, spread, clipping_range=DEFAULTS["clipping_range"],
                        quantization_range=DEFAULTS["quantization_range"]) + len(counts) * 2**-25 / sum(counts)
    gap = float((flower[1] - ours).abs().max())
    assert 0 < gap <= bound  # quantised (not fglcore's masking), and within the bound
    assert bound < 1e-5
    # what crossed Flower: four SecAgg+ messages per client and round; each masked vector is one int64 per
    # parameter plus the weight, as many bytes as fglcore's masked upload, so the ledgers agree
    wire = pd.DataFrame(result.extras["flower_wire"])
    stages = wire[wire.kind.str.startswith("secaggplus.")]
    assert stages.groupby(["round", "client"]).size().eq(4).all() and len(stages) == 16
    pd.testing.assert_frame_equal(result.ledger.to_frame(), expected.ledger.to_frame())
    assert stages.upload_tensor_bytes.sum() == expected.ledger.total_bytes(receiver="server")
    assert result.history[-1]["round"] == expected.history[-1]["round"]
    for key, value in expected.history[-1].items():  # round 2 starts from a model 1e-6 away: close, not equal
        assert result.history[-1][key] == pytest.approx(value, abs=1e-2, nan_ok=True)


def test_parallel_schedule_sends_a_round_to_every_client_at_once(deployment):
    dep, folder = deployment
    config = {**BASE, "dropout": 0.0}  # no client draws random numbers: the numbers cannot depend on the schedule
    _, expected = run_full(config)
    job = prepare_job(config, folder / "job")
    result = dep.run(job, result_file=folder / "parallel.pt", run_timeout=300, message_timeout=120, parallel=True)
    assert result.history == expected.history
    pd.testing.assert_frame_equal(result.ledger.to_frame(), expected.ledger.to_frame())
    wire = pd.DataFrame(result.extras["flower_wire"])
    # one exchange per kind and round: both clients' messages were pushed together and took the same time
    assert (wire.groupby(["kind", "round"])["seconds"].nunique() == 1).all()
    assert (wire.groupby(["kind", "round"])["client"].nunique() == 2).all()


def test_a_killed_supernode_is_reported_by_name_and_no_result_is_written(deployment):
    dep, folder = deployment
    config = {**BASE, "rounds": 3, "evaluate_every": 3}
    job = prepare_job(config, folder / "job")
    result_file = folder / "lost.pt"
    events = result_file.with_name(result_file.name + ".events")

    def kill_after_first_round() -> None:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            if events.exists() and '"client": "client1", "kind": "train", "round": 1' in events.read_text():
                dep.kill_supernode(1)
                return
            time.sleep(0.2)

    killer = threading.Thread(target=kill_after_first_round, daemon=True)
    killer.start()
    with pytest.raises(ClientLost, match=r"client1 \(SuperNode \d+\).*round 2.*lost"):
        dep.run(job, result_file=result_file, run_timeout=300, message_timeout=20)
    killer.join(timeout=5)
    assert not result_file.exists()


class _Talker:
    """An algorithm stand-in for check_participants: a plain round loop, no secure aggregation."""
    name = "talker"
    config = type("Config", (), {"secure_aggregation": False})()
    federation = None

    @staticmethod
    def round_loop_only() -> bool:
        return True


def test_a_client_holding_the_channel_or_another_client_is_refused():
    from fglcore.fl.channel import Channel
    from fglcore.fl.engine import Client, Server
    from fglcore.fl.flower.job import check_participants

    channel = Channel()
    plain, talker = Client(0, 5), Client(1, 5)
    talker.link = channel  # would send messages outside the round loop
    with pytest.raises(FlowerUnsupported, match=r"client1 holds the channel \(it would send messages outside the round loop\)"):
        check_participants(_Talker(), Server(), [plain, talker], channel)
    nosy = Client(1, 5)
    nosy.peer = plain  # would ship client0's data to client1's machine
    with pytest.raises(FlowerUnsupported, match=r"client1 holds another client \(client0\)"):
        check_participants(_Talker(), Server(), [plain, nosy], channel)
    check_participants(_Talker(), Server(), [plain, Client(1, 5)], channel)  # two plain clients pass


def test_fgl_flower_prepare_writes_the_files_and_refuses_what_flower_cannot_carry(tmp_path, capsys):
    from fglcore.cli import main

    args = ["flower", "prepare", "-p", "num_clients", "2", "-p", "rounds", "2", "-p", "hidden", "16"]
    assert main(args + ["--out", str(tmp_path / "job")]) == 0
    assert sorted(p.name for p in (tmp_path / "job").iterdir()) == ["client0.pt", "client1.pt", "server.pt"]
    assert "partition-file" in capsys.readouterr().out
    assert main(args + ["-p", "algorithm", "gcfl", "--out", str(tmp_path / "refused")]) == 2
    assert "fgl: error: flower: algorithm 'gcfl': its run() adds steps" in capsys.readouterr().err
    assert not (tmp_path / "refused").exists()


@pytest.mark.parametrize("flags, warm, secure", [([], True, "secaggplus"),
                                                 (["--cold", "--secure-aggregation", "fglcore"], False, "fglcore")])
def test_fgl_flower_run_passes_the_worker_and_secure_aggregation_choices(monkeypatch, capsys, flags, warm, secure):
    from fglcore import cli
    from fglcore.fl.flower import deploy

    seen = {}

    def run_on_flower(config, folder, **kwargs):
        seen.update(kwargs)
        raise deploy.DeploymentError("stopped by the test")

    monkeypatch.setattr(deploy, "run_on_flower", run_on_flower)
    assert cli.main(["flower", "run", "-p", "algorithm", "fedavg", *flags]) == 1
    assert "stopped by the test" in capsys.readouterr().err
    assert (seen["warm"], seen["secure_aggregation"]) == (warm, secure)
    with pytest.raises(SystemExit):  # argparse names the accepted choices
        cli.main(["flower", "run", "--secure-aggregation", "plain"])
    assert "choose from 'secaggplus', 'fglcore'" in capsys.readouterr().err
