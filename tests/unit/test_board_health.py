"""Board health records and labgrid holder records: the quarantine count, and what is read
back from files and place comments that anyone may have written (bounded, strict)."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest

from edgehub.acquire.board_health import HealthBook
from edgehub.acquire.place_holders import holder_of, with_holder, without_holder
from edgehub.errors import DeviceUnhealthyError, EnvironmentProblem
from edgehub.procid import ProcessId, this_process


def _failing() -> None:
    raise EnvironmentProblem("sshd refused the connection")


def test_n_failures_in_a_row_quarantine_and_a_pass_resets(tmp_path: Path) -> None:
    book = HealthBook(tmp_path, after=3, cooldown=600)
    said: list[str] = []
    for count in (1, 2):
        with pytest.raises(EnvironmentProblem, match="sshd refused"):  # the probe's own error
            book.check("ssh:10.0.0.1:22", "rpi", _failing, said.append)
        assert f"({count} in a row)" in said[-1]
    book.check("ssh:10.0.0.1:22", "rpi", lambda: None)  # passes: the count starts again
    assert book.get("ssh:10.0.0.1:22").failures == 0
    for _ in range(3):
        with pytest.raises(EnvironmentProblem):
            book.check("ssh:10.0.0.1:22", "rpi", _failing, said.append)
    assert "(3 in a row, now quarantined" in said[-1]
    record = book.get("ssh:10.0.0.1:22")
    assert record.quarantined() and record.failures == 3
    assert "sshd refused the connection" in record.describe()
    probed: list[int] = []
    with pytest.raises(DeviceUnhealthyError, match="unquarantine rpi"):
        book.check("ssh:10.0.0.1:22", "rpi", lambda: probed.append(1))
    assert not probed, "a quarantined board is refused without a probe"
    assert book.skip_reason("ssh:10.0.0.1:22") and book.skip_reason("ssh:10.0.0.2:22") is None
    assert book.clear("ssh:10.0.0.1:22") is not None
    book.check("ssh:10.0.0.1:22", "rpi", lambda: None)


def test_the_cool_down_ends_the_quarantine(tmp_path: Path) -> None:
    book = HealthBook(tmp_path, after=1, cooldown=0.5)
    failed = time.monotonic()
    with pytest.raises(EnvironmentProblem):
        book.check("b", "rpi", _failing)
    # quarantined now (unless a busy machine took longer than the cool-down to look)
    assert book.get("b").quarantined() or time.monotonic() - failed > 0.5
    time.sleep(0.6)
    book.check("b", "rpi", lambda: None)
    assert book.get("b").failures == 0


def test_a_hostile_health_file_is_read_safely(tmp_path: Path) -> None:
    (tmp_path / "board_health.json").write_text(
        json.dumps(
            {
                "b": {
                    "failures": "lots",
                    "last_error": "x\x1b[31m" * 200,
                    "quarantined_until": 1e400,
                },
                "c": [1, 2],
            }
        )
    )
    record = HealthBook(tmp_path).get("b")
    assert record.failures == 0 and not record.quarantined()
    assert record.last_error is not None and "\x1b" not in record.last_error
    assert len(record.last_error) <= 300
    (tmp_path / "board_health.json").write_text("{not json")
    assert HealthBook(tmp_path).get("b").failures == 0


def test_a_link_planted_as_the_health_file_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("keep")
    (tmp_path / "store").mkdir()
    os.symlink(target, tmp_path / "store" / "board_health.json")
    book = HealthBook(tmp_path / "store")
    assert book.get("b").failures == 0
    with pytest.raises(EnvironmentProblem, match="sshd refused"):
        book.check("b", "rpi", _failing)
    assert book.get("b").failures == 1
    assert target.read_text() == "keep"
    assert not (tmp_path / "store" / "board_health.json").is_symlink()


def test_holder_records_round_trip_and_keep_the_comment() -> None:
    me = this_process()
    comment = with_holder("rack 3, shelf 2", me, 100.0, time.time() + 60)
    holder = holder_of(comment)
    assert holder is not None and holder.process == me and holder.gone() is None
    assert without_holder(comment) == "rack 3, shelf 2"
    assert holder_of(without_holder(comment)) is None


def test_only_provably_gone_holders_are_gone() -> None:
    host = socket.gethostname()
    dead = ProcessId(host, 2**22 + 12345, "1")  # beyond pid_max on most hosts: no such process
    assert holder_of(with_holder("", dead, 1.0, time.time() + 60)).gone() == (  # type: ignore[union-attr]
        "its process is gone"
    )
    reused = ProcessId(host, os.getpid(), "1")  # our pid, another start time: a reused pid
    assert holder_of(with_holder("", reused, 1.0, time.time() + 60)).gone()  # type: ignore[union-attr]
    far = ProcessId("elsewhere", 1, "1")
    assert holder_of(with_holder("", far, 1.0, time.time() + 60)).gone() is None  # type: ignore[union-attr]
    assert "ran out" in (holder_of(with_holder("", far, 1.0, time.time() - 5)).gone() or "")  # type: ignore[union-attr]
    me = this_process()
    expired = with_holder("", me, 1.0, time.time() - 5)
    assert holder_of(expired).gone() is None, "a live holder of this host is never gone"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "comment",
    [
        "[edgehub held by host;rm -rf:1:2 since 1 until 2]",
        "[edgehub held by h:notapid:2 since 1 until 2]",
        "[edgehub held by h:1:2 since 1 until 99999999999999999999]",
        "x" * 5000 + "[edgehub held by h:1:2 since 1 until 2]",
    ],
)
def test_malformed_holder_records_are_not_holders(comment: str) -> None:
    assert holder_of(comment) is None
