"""`hub` stopped by SIGTERM exits 143 with one line, even where a library on the way (Ray's
waits) turned the `Stopped` raised by the signal into a plain interrupt or a cancellation."""

from __future__ import annotations

import argparse
import os
import signal
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from edgehub.cli import main as cli_main
from edgehub.cli import signals
from edgehub.errors import OperationCancelled


@pytest.fixture(autouse=True)
def _own_handlers(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    monkeypatch.setattr(signals, "_received", [])
    monkeypatch.setattr(cli_main, "_reap_in_background", lambda: None)
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


def _run(monkeypatch: pytest.MonkeyPatch, handler: Callable[[Any], int]) -> int:
    parser = argparse.ArgumentParser(prog="hub")
    parser.set_defaults(handler=handler, command="exec", debug=False)
    monkeypatch.setattr(cli_main, "build_parser", lambda words=None: parser)
    return cli_main.main([])


def _sigterm_then(surfaced_as: BaseException) -> Callable[[Any], int]:
    def handler(args: Any) -> int:
        try:
            os.kill(os.getpid(), signal.SIGTERM)  # the real handler raises Stopped here
        except signals.Stopped:
            raise surfaced_as from None
        raise AssertionError("SIGTERM raised nothing")

    return handler


@pytest.mark.parametrize(
    "surfaced_as",
    [KeyboardInterrupt(), OperationCancelled("cancelled")],
    ids=["interrupt", "cancel"],
)
def test_sigterm_exits_143_however_it_surfaced(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], surfaced_as: BaseException
) -> None:
    assert _run(monkeypatch, _sigterm_then(surfaced_as)) == 128 + signal.SIGTERM
    assert capsys.readouterr().err.strip() == "hub: error: stopped by SIGTERM"


def test_ctrl_c_still_exits_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def handler(args: Any) -> int:
        raise KeyboardInterrupt

    assert _run(monkeypatch, handler) == 130
    assert capsys.readouterr().err.strip() == "hub: error: interrupted"
