"""`ops.reports.read_json` reads stored JSON documents (a run's, or a bundle's that came from
elsewhere) without trusting them: a FIFO is not waited on, an oversized file is refused before
any of it is read."""

from __future__ import annotations

import os
from pathlib import Path

from edgehub.ops.reports import MAX_JSON_BYTES, read_json


def test_a_stored_document_is_read(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text('{"top1": 0.75}')
    assert read_json(path) == {"top1": 0.75}


def test_a_fifo_is_not_waited_on(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    os.mkfifo(path)
    assert read_json(path) is None  # no writer: a blocking open would never return


def test_an_oversized_file_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    with path.open("wb") as handle:  # sparse: no disk used, no bytes to read
        handle.truncate(MAX_JSON_BYTES + 1)
    assert read_json(path) is None


def test_broken_or_missing_json_is_none(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text("{not json")
    assert read_json(path) is None
    assert read_json(tmp_path / "missing.json") is None
    assert read_json(tmp_path) is None  # a directory
