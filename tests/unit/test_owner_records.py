"""Owner records: the reaper at the start of every command asks the daemon only when a
process that labelled containers or jobs as its own has died since the last clean-up."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from edgehub.ops import cleanup
from edgehub.runners.docker import owner
from edgehub.runners.docker.reaper import ReapReport


@pytest.fixture
def records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("EDGEHUB_CACHE_DIR", raising=False)  # which would win over XDG
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(owner, "_recorded", set())
    return tmp_path / "edgehub" / "owners"


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_records_say_which_owners_died(records: Path) -> None:
    assert owner.dead_owner_records() is None  # no folder: cannot tell
    owner.forget_owner_records([])
    assert owner.dead_owner_records() == []
    marker = owner.owner_marker()  # labelling a job records this (living) process
    assert (records / marker.partition("=")[2]).is_file()
    assert owner.dead_owner_records() == []
    dead = records / f"{socket.gethostname()}:{_dead_pid()}:1"
    dead.touch()
    (records / f"another-host:{_dead_pid()}:1").touch()  # not ours to judge
    (records / "not-a-marker").touch()
    assert owner.dead_owner_records() == [dead]
    owner.forget_owner_records([dead])
    assert not dead.exists() and owner.dead_owner_records() == []


def test_the_background_reaper_asks_the_daemon_only_after_a_death(
    records: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[int] = []

    def reap(client: object = None) -> ReapReport:
        asked.append(1)
        return ReapReport()

    monkeypatch.setattr("edgehub.runners.docker.reap", reap)
    cleanup.reap_leftovers(when_recorded=True)  # no records yet: ask, then they can tell
    assert asked == [1] and records.is_dir()
    cleanup.reap_leftovers(when_recorded=True)
    assert asked == [1]
    dead = records / f"{socket.gethostname()}:{_dead_pid()}:1"
    dead.touch()
    cleanup.reap_leftovers(when_recorded=True)
    assert asked == [1, 1] and not dead.exists()
    monkeypatch.setattr(
        "edgehub.runners.docker.reap", lambda client=None: ReapReport(complete=False)
    )
    dead.touch()
    cleanup.reap_leftovers(when_recorded=True)  # the daemon did not answer: kept for next time
    assert dead.exists()
