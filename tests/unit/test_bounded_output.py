"""What comes back from a device is bounded: archives (spooled to disk, holes kept, capped in
size, entries and depth), output lines and logs (capped per line, head and tail kept), and
result files (size and nesting). Real files and real tar archives; no device needed here (the
SSH device tests are in tests/integration/test_ssh_bounded.py)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import tarfile
import time
import tracemalloc
from pathlib import Path

import pytest

from edgehub.agent.protocol import ResultFileError, load_result
from edgehub.errors import ConfigError, DeviceOutputError, InvokeError, UnsafeArchiveError
from edgehub.limits import FetchLimits, LogLimits, env_size
from edgehub.runners.agent_reply import Reply
from edgehub.runners.archive import SparseWriter, safe_extract
from edgehub.runners.spool import ArchiveSpool
from edgehub.runners.streaming import LineCollector
from edgehub.toolchains.agent_call import AgentResult
from edgehub.tracking.log_file import RunLogFile

MiB = 1 << 20


def _tar_of(files: dict[str, int | bytes], *, dirs: tuple[str, ...] = ()) -> bytes:
    """A tar of files given as content, or as a size (filled with zeros, written in chunks)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in dirs:
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            data = bytes(content) if isinstance(content, int) else content
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _allocated_blocks(path: Path) -> int:
    return path.stat().st_blocks * 512


# -- sparse writing ---------------------------------------------------------------------------


def test_sparse_writer_leaves_holes_for_zeros(tmp_path: Path) -> None:
    target = tmp_path / "f"
    with target.open("wb") as handle:
        writer = SparseWriter(handle)
        writer.write(b"head")
        for _ in range(64):
            writer.write(bytes(MiB))
        writer.write(b"tail")
        writer.write(bytes(3 * MiB))  # a trailing hole: the length still counts
        writer.finish()
    data = target.read_bytes()
    assert len(data) == 4 + 64 * MiB + 4 + 3 * MiB
    assert data[:4] == b"head" and data[4 + 64 * MiB : 8 + 64 * MiB] == b"tail"
    assert data.count(0) == len(data) - 8
    assert _allocated_blocks(target) < 1 * MiB


def test_extracted_zero_file_takes_no_blocks(tmp_path: Path) -> None:
    size = 96 * MiB
    names = safe_extract(_tar_of({"out/zeros.bin": size, "out/x": b"1"}), tmp_path / "t")
    assert names[-1] == "out/x"
    extracted = tmp_path / "t" / "out" / "zeros.bin"
    assert extracted.stat().st_size == size
    assert _allocated_blocks(extracted) < MiB


@pytest.mark.skipif(shutil.which("tar") is None, reason="needs a tar program to make the archive")
def test_gnu_sparse_archive_is_extracted_sparse(tmp_path: Path) -> None:
    """A sparse archive as a device's GNU tar makes it (``--sparse``) of a 1 GiB sparse file."""
    source = tmp_path / "src"
    source.mkdir()
    with (source / "big.bin").open("wb") as handle:
        handle.truncate(1 << 30)
        handle.seek(5 * MiB)
        handle.write(b"data in the middle")
    archive = tmp_path / "a.tar"
    made = subprocess.run(
        ["tar", "--sparse", "-c", "-f", str(archive), "-C", str(source), "."],
        capture_output=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"this tar cannot make sparse archives: {made.stderr.decode()[:100]}")
    assert archive.stat().st_size < 4 * MiB
    with ArchiveSpool(tmp_path) as spool, archive.open("rb") as stream:
        while chunk := stream.read(MiB):
            spool.write(chunk)
        spool.extract(tmp_path / "t")
    extracted = tmp_path / "t" / "big.bin"
    assert extracted.stat().st_size == 1 << 30
    assert _allocated_blocks(extracted) < 2 * MiB
    with extracted.open("rb") as handle:
        handle.seek(5 * MiB)
        assert handle.read(18) == b"data in the middle"


def test_spool_memory_stays_small_and_disk_sparse(tmp_path: Path) -> None:
    """256 MiB of archive pass through the spool in 1 MiB chunks: Python's own allocations
    stay those of a few chunks, and the spooled zeros take no disk."""
    head = _tar_of({"z.bin": 0})[:512]  # a header to rewrite with the real size
    info = tarfile.TarInfo("z.bin")
    info.size = 256 * MiB
    header = info.tobuf(format=tarfile.USTAR_FORMAT)
    assert len(header) == len(head)
    tracemalloc.start()
    try:
        with ArchiveSpool(tmp_path) as spool:
            spool.write(header)
            zeros = bytes(MiB)
            for _ in range(256):
                spool.write(zeros)
            spool.write(bytes(1024))  # the end-of-archive blocks
            _, peak_spooling = tracemalloc.get_traced_memory()
            spool.extract(tmp_path / "t")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak_spooling < 16 * MiB and peak < 32 * MiB, (peak_spooling, peak)
    extracted = tmp_path / "t" / "z.bin"
    assert extracted.stat().st_size == 256 * MiB and _allocated_blocks(extracted) < MiB


# -- limits on archives -----------------------------------------------------------------------

LIMITS = FetchLimits(max_bytes=10 * MiB, max_member_bytes=4 * MiB, max_files=20, max_depth=6)


@pytest.mark.parametrize(
    ("archive", "variable"),
    [
        (_tar_of({f"f{i}": b"x" for i in range(21)}), "EDGEHUB_FETCH_MAX_FILES"),
        (_tar_of({"a/b/c/d/e/f/g": b"x"}), "EDGEHUB_FETCH_MAX_DEPTH"),
        (_tar_of({"big": 5 * MiB}), "EDGEHUB_FETCH_MAX_MEMBER_BYTES"),
        (_tar_of({"a": 4 * MiB, "b": 4 * MiB, "c": 3 * MiB}), "EDGEHUB_FETCH_MAX_BYTES"),
    ],
    ids=["files", "depth", "member", "total"],
)
def test_archive_over_a_limit_is_refused_with_nothing_written(
    tmp_path: Path, archive: bytes, variable: str
) -> None:
    target = tmp_path / "t"
    with pytest.raises(DeviceOutputError) as refused:
        safe_extract(archive, target, LIMITS)
    message = str(refused.value)
    assert variable in message and "\n" not in message
    assert not target.exists() or not any(target.iterdir())


def test_limits_come_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EDGEHUB_FETCH_MAX_FILES", "2")
    with pytest.raises(DeviceOutputError, match="EDGEHUB_FETCH_MAX_FILES"):
        safe_extract(_tar_of({"a": b"1", "b": b"2", "c": b"3"}), tmp_path / "t")
    monkeypatch.setenv("EDGEHUB_FETCH_MAX_FILES", "3")
    assert len(safe_extract(_tar_of({"a": b"1", "b": b"2", "c": b"3"}), tmp_path / "t")) == 3
    assert env_size("X", 1, {"X": "16G"}) == 16 << 30
    assert env_size("X", 1, {"X": "64 KiB"}) == 64 << 10
    for bad in ("lots", "-1", "0", "1.5G"):
        with pytest.raises(ConfigError, match="X="):
            env_size("X", 1, {"X": bad})


def test_a_huge_pax_header_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """A header that asks for 64 MiB of pax records: refused, not read into memory."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("f")
        info.pax_headers = {"comment": "c" * (64 * MiB)}
        tar.addfile(info, io.BytesIO(b""))
    tracemalloc.start()
    try:
        with pytest.raises(DeviceOutputError, match="headers is over"):
            safe_extract(buffer.getbuffer().tobytes(), tmp_path / "t")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 200 * MiB  # the bytes above are ~130 MiB; the refusal reads almost none


def test_spool_refuses_a_stream_past_what_the_limits_allow(tmp_path: Path) -> None:
    limits = FetchLimits(max_bytes=MiB, max_files=1)
    with ArchiveSpool(tmp_path, limits) as spool, pytest.raises(DeviceOutputError) as refused:
        for _ in range(200):
            spool.write(bytes(MiB))
    assert "EDGEHUB_FETCH_MAX_BYTES" in str(refused.value)
    assert spool.received < 100 * MiB


def test_links_and_traversal_are_still_refused(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        link = tarfile.TarInfo("out")
        link.type, link.linkname = tarfile.SYMTYPE, "../.."
        tar.addfile(link)
        evil = tarfile.TarInfo("out/evil")
        evil.size = 1
        tar.addfile(evil, io.BytesIO(b"!"))
    with pytest.raises(UnsafeArchiveError):
        safe_extract(buffer.getvalue(), tmp_path / "t")
    assert not (tmp_path / "evil").exists() and not (tmp_path / "t" / "out").exists()


# -- the agent's answer, streamed -------------------------------------------------------------


def test_reply_passes_the_tar_on_as_it_comes() -> None:
    tar = _tar_of({"out/result.json": b"{}"})
    answer = b"hello\n\0EDGEHUB-FILES %d\n" % len(tar) + tar + b"\0EDGEHUB-EXIT 3\n"
    chunks = [answer[i : i + 700] for i in range(0, len(answer), 700)]
    reply = Reply()
    parts = list(reply.read(chunks))
    assert b"".join(p for kind, p in parts if kind == "stdout") == tar
    assert len([kind for kind, _ in parts if kind == "stdout"]) > 2  # not gathered first
    assert b"".join(p for kind, p in parts if kind == "stderr") == b"hello\n"
    assert reply.code == 3


def test_reply_does_not_gather_a_nul_without_a_newline() -> None:
    chunks = [b"\0"] + [b"x" * 65536] * 64
    parts = list(Reply().read(chunks))
    assert sum(len(p) for _, p in parts) == 1 + 64 * 65536
    assert max(len(p) for _, p in parts) < MiB


# -- output lines and the run log -------------------------------------------------------------


def test_a_line_without_end_is_cut_and_read_in_linear_time() -> None:
    collector = LineCollector("stderr", None)
    started = time.monotonic()
    chunk = b"x" * 65536
    for _ in range(400 * 16):  # 400 MiB, no newline: quadratic joining would take hours
        collector.feed_bytes(chunk)
    collector.close()
    assert time.monotonic() - started < 120
    (line,) = collector.lines
    assert line.startswith("x" * 65536) and len(line) < 65536 + 200
    assert f"{400 * MiB - 65536} more characters" in line and "EDGEHUB_LOG_MAX_LINE" in line


def test_output_keeps_its_head_and_tail() -> None:
    collector = LineCollector("stdout", None, LogLimits(max_line=50, max_total=2000))
    for number in range(10_000):
        collector.feed_text(f"line {number}\n")
    collector.close()
    lines = collector.lines
    assert lines[0] == "line 0" and lines[-1] == "line 9999"
    notes = [line for line in lines if "dropped here" in line]
    assert len(notes) == 1 and "EDGEHUB_LOG_MAX_BYTES" in notes[0]
    assert len(collector.text) < 2000 + 200


def test_run_log_file_keeps_head_and_tail_within_its_cap(tmp_path: Path) -> None:
    path = tmp_path / "run.log"
    log = RunLogFile(path, LogLimits(max_line=1000, max_total=64 * 1024))
    for number in range(100_000):
        log.write_line(f"[stderr] output line {number}")
    log.write("[error] the reason it failed\n")
    log.close()
    text = path.read_text()
    assert len(text) < 64 * 1024 + 300
    assert text.startswith("[stderr] output line 0\n")
    assert text.endswith("[error] the reason it failed\n")
    assert "lines (" in text and "EDGEHUB_LOG_MAX_BYTES" in text


# -- results ----------------------------------------------------------------------------------


def test_deep_result_is_refused_in_one_line(tmp_path: Path) -> None:
    for depth in (65, 100_000):
        path = tmp_path / "result.json"
        path.write_text("[" * depth + "]" * depth)
        with pytest.raises(ResultFileError) as refused:
            load_result(path)
        assert "EDGEHUB_RESULT_MAX_DEPTH" in str(refused.value)
        assert "\n" not in str(refused.value)
    path.write_text(json.dumps({"ok": True, "data": {"a": [[[[1]]]]}}))
    assert load_result(path)["data"] == {"a": [[[[1]]]]}


def test_huge_result_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text(json.dumps({"ok": True, "data": {"x": "y" * (17 * MiB)}}))
    with pytest.raises(ResultFileError, match="EDGEHUB_RESULT_MAX_BYTES"):
        load_result(path)
    assert load_result(path, max_bytes=32 * MiB)["ok"] is True


@pytest.mark.parametrize(
    "document",
    [{"ok": True, "params": 5}, {"ok": True, "warnings": "w"}, {"ok": "yes"}, [1]],
)
def test_malformed_result_is_refused(tmp_path: Path, document: object) -> None:
    path = tmp_path / "result.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ResultFileError):
        load_result(path)


def test_missing_output_is_named(tmp_path: Path) -> None:
    (tmp_path / "result.json").write_text("{}")
    result = AgentResult(files=tmp_path, command="ort.invoke", failure=InvokeError)
    assert result.file("result.json") == tmp_path / "result.json"
    with pytest.raises(InvokeError) as missing:
        result.file("output.npz")
    assert "out/output.npz" in str(missing.value) and "result.json" in str(missing.value)


def test_error_messages_quote_a_short_last_line() -> None:
    from edgehub.runners.outcome import describe_failure
    from edgehub.runners.protocol import CommandResult

    result = CommandResult(("tool",), 1, "", "first\n" + "z" * MiB + "\n")
    message = describe_failure(("tool",), result)
    assert len(message) < 600 and message.endswith("[...]") and "\n" not in message


def test_trtexec_exports_are_read_within_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from edgehub.errors import ProfileError
    from edgehub.toolchains.tensorrt.local import profile_document

    monkeypatch.setenv("EDGEHUB_RESULT_MAX_BYTES", "64K")
    log = "noise\n" * 100_000 + "[I] Latency: min = 1 ms, max = 3 ms, mean = 2 ms, median = 2 ms\n"
    (tmp_path / "trtexec.log").write_text(log)  # read from its end, where the summary is
    (tmp_path / "times.json").write_text("[" + ",".join(['{"latencyMs": 1}'] * 10_000) + "]")
    with pytest.raises(ProfileError, match="EDGEHUB_RESULT_MAX_BYTES"):
        profile_document(tmp_path)
    (tmp_path / "times.json").unlink()
    assert profile_document(tmp_path)["metrics"]["latency_median_ms"] == 2
