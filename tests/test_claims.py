"""Claims on runs: one holder at a time across processes, free at once when the holder dies, released on exit."""
from __future__ import annotations

import multiprocessing
import os
import signal

import pytest

from fglcore.claims import RunClaims

fork = multiprocessing.get_context("fork")


def test_a_run_has_one_holder_until_released(tmp_path):
    with RunClaims(tmp_path) as first, RunClaims(tmp_path) as second:
        assert first.acquire("run1") and first.acquire("run1")  # holding it twice is still holding it
        assert not second.acquire("run1") and second.held_by_other("run1") and not first.held_by_other("run1")
        second.release("run1")  # not second's to release: the claim stays
        assert not second.acquire("run1")
        first.release("run1")
        assert second.acquire("run1") and first.held_by_other("run1")


def test_leaving_the_context_releases_every_claim(tmp_path):
    with RunClaims(tmp_path) as claims:
        assert claims.acquire("a") and claims.acquire("b")
    with RunClaims(tmp_path) as other:
        assert other.acquire("a") and other.acquire("b")


def test_a_stored_run_leaves_no_lock_file_and_a_given_up_one_an_unlocked_one(tmp_path):
    with RunClaims(tmp_path) as claims, RunClaims(tmp_path) as other:
        claims.acquire("stored")
        claims.acquire("given-up")
        claims.release("stored", stored=True)
        claims.release("given-up")
        assert sorted(os.listdir(tmp_path)) == ["given-up.lock"]
        assert other.acquire("given-up") and other.acquire("stored")


def _hold_until_killed(folder, run_id, ready):
    claims = RunClaims(folder)
    assert claims.acquire(run_id)
    ready.set()
    signal.pause()  # until killed


def test_a_claim_is_free_at_once_when_its_process_is_killed(tmp_path):
    """kill -9 gives no chance to clean up: the operating system releases the lock, no heartbeat or timeout needed."""
    ready = fork.Event()
    holder = fork.Process(target=_hold_until_killed, args=(tmp_path, "run1", ready))
    holder.start()
    try:
        assert ready.wait(30)
        with RunClaims(tmp_path) as claims:
            assert claims.held_by_other("run1") and not claims.acquire("run1") and claims.live_holders() == 2
            os.kill(holder.pid, signal.SIGKILL)
            holder.join(30)
            assert holder.exitcode == -signal.SIGKILL
            assert not claims.held_by_other("run1") and claims.acquire("run1") and claims.live_holders() == 1
    finally:
        if holder.is_alive():
            holder.kill()


def _race(folder, start, results):
    start.wait()
    claims = RunClaims(folder)
    won = [run_id for run_id in ("a", "b", "c") if claims.acquire(run_id)]
    results.put(won)
    start.wait()  # hold until every process has tried


@pytest.mark.parametrize("processes", [4])
def test_processes_racing_for_runs_get_each_run_once(tmp_path, processes):
    start, results = fork.Barrier(processes), fork.Queue()
    workers = [fork.Process(target=_race, args=(tmp_path, start, results)) for _ in range(processes)]
    for worker in workers:
        worker.start()
    won = [results.get(timeout=30) for _ in workers]
    for worker in workers:
        worker.join(30)
    assert sorted(run_id for runs in won for run_id in runs) == ["a", "b", "c"]


def test_live_holders_counts_the_holders_computing_now(tmp_path):
    with RunClaims(tmp_path) as me, RunClaims(tmp_path) as other, RunClaims(tmp_path) as third:
        assert me.live_holders() == 1
        other.acquire("a")
        third.acquire("b")
        assert me.live_holders() == 3
        me.acquire("c")
        assert me.live_holders() == 3  # itself once
        other.release("a", stored=True)
        third.release("b")  # given up: its unlocked file does not count
        assert me.live_holders() == 1


def test_the_memory_gate_lets_one_heavy_run_compute_at_a_time_and_usual_runs_beside_it(tmp_path):
    first, second = RunClaims(tmp_path), RunClaims(tmp_path)
    with first.memory_gate(heavy=True) as held:
        assert held
        with second.memory_gate(heavy=True, blocking=False) as another:
            assert not another  # a second heavy run waits
        with second.memory_gate(heavy=False, blocking=False) as usual:
            assert usual  # a usual run does not
    with second.memory_gate(heavy=True, blocking=False) as another:
        assert another  # released on leaving
