"""Claims on runs: one holder at a time, stale claims taken over, released on exit."""
from __future__ import annotations

import os
import socket
import time

import pytest

from fglcore import claims as claims_module
from fglcore.claims import RunClaims


def _claim_file(folder, run_id, owner, age=0.0):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / run_id
    path.write_text(owner)
    if age:
        past = time.time() - age
        os.utime(path, (past, past))
    return path


def test_a_run_has_one_holder_until_released(tmp_path):
    with RunClaims(tmp_path) as first, RunClaims(tmp_path) as second:
        assert first.acquire("run1") and first.acquire("run1")  # holding it twice is still holding it
        assert not second.acquire("run1") and second.held_by_other("run1") and not first.held_by_other("run1")
        second.release("run1")  # not second's to release: the claim stays
        assert (tmp_path / "run1").read_text() == f"{socket.gethostname()} {os.getpid()}"
        first.release("run1")
        assert not (tmp_path / "run1").exists() and second.acquire("run1")


def test_leaving_the_context_releases_every_claim(tmp_path):
    with RunClaims(tmp_path) as claims:
        assert claims.acquire("a") and claims.acquire("b")
    assert sorted(os.listdir(tmp_path)) == []


def test_a_claim_of_a_finished_process_is_taken_over(tmp_path):
    pid = os.getpid()
    while True:  # a process id that no process has
        pid += 1
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        except PermissionError:
            continue
    _claim_file(tmp_path, "run1", f"{socket.gethostname()} {pid}")
    with RunClaims(tmp_path) as claims:
        assert not claims.held_by_other("run1") and claims.acquire("run1")
        assert (tmp_path / "run1").read_text().endswith(f" {os.getpid()}")
    assert os.listdir(tmp_path) == []


def test_a_claim_not_refreshed_for_too_long_is_stale(tmp_path):
    _claim_file(tmp_path, "fresh", "another-host 1")
    _claim_file(tmp_path, "old", "another-host 1", age=claims_module.STALE_SECONDS + 60)
    with RunClaims(tmp_path) as claims:
        assert claims.held_by_other("fresh") and not claims.acquire("fresh")
        assert not claims.held_by_other("old") and claims.acquire("old")


def test_the_holder_refreshes_its_claims(tmp_path, monkeypatch):
    monkeypatch.setattr(claims_module, "HEARTBEAT_SECONDS", 0.05)
    with RunClaims(tmp_path) as claims:
        claims.acquire("run1")
        past = time.time() - 1000
        os.utime(tmp_path / "run1", (past, past))
        time.sleep(0.3)
        assert time.time() - (tmp_path / "run1").stat().st_mtime < 10


def test_live_holders_counts_each_process_once(tmp_path):
    _claim_file(tmp_path, "a", "another-host 1")
    _claim_file(tmp_path, "b", "another-host 1")
    _claim_file(tmp_path, "c", "third-host 7")
    _claim_file(tmp_path, "d", "gone-host 9", age=claims_module.STALE_SECONDS + 60)
    with RunClaims(tmp_path) as claims:
        assert claims.live_holders() == 3  # two others and this process
        claims.acquire("e")
        assert claims.live_holders() == 3
