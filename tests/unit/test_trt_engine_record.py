"""What an engine records of its build, the comparison that refuses it on another TensorRT or GPU
(`engine_file.engine_mismatch`), and the timing caches kept in the store per (TensorRT version,
target). The GPU's compute capability comes from a real GPU elsewhere; here it is passed in."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from edgehub.agent.report import Report
from edgehub.agent.trt.build import finish_timing_cache, start_timing_cache
from edgehub.agent.trt.engine_file import engine_mismatch, engine_record
from edgehub.agent.trt.runtime import TensorRT
from edgehub.toolchains.tensorrt import timing_cache

RTX = engine_record("rtx", "1.7.1.116", ["sm86", "sm89"])


def test_a_matching_runtime_and_gpu_pass() -> None:
    assert engine_mismatch(RTX, "rtx", "1.7.1.116", "sm89") is None
    assert engine_mismatch(RTX, "rtx", "1.7.1.116", None) is None  # no GPU to ask: not checked
    built_here = engine_record("full", "10.4.0", ["current"])
    assert engine_mismatch(built_here, "full", "10.4.0", "sm90") is None


@pytest.mark.parametrize(
    ("flavor", "version", "capability", "words"),
    [
        ("rtx", "1.7.0.9", "sm86", "(version 1.7.1.116 vs 1.7.0.9 here)"),
        ("full", "10.4.0", "sm86", "(flavor TensorRT for RTX vs TensorRT here)"),
        ("rtx", "1.7.1.116", "sm120", "(GPU sm86, sm89 vs sm120 here)"),
        ("rtx", "1.8.0.1", "sm75", "(version 1.7.1.116 vs 1.8.0.1 here; GPU sm86, sm89 vs sm75"),
    ],
)
def test_what_differs_is_said_in_one_line(
    flavor: str, version: str, capability: str, words: str
) -> None:
    problem = engine_mismatch(RTX, flavor, version, capability)
    assert problem is not None and "\n" not in problem
    assert problem.startswith("the engine was built with TensorRT for RTX 1.7.1.116 for sm86, sm89")
    assert words in problem and "compile the ONNX model again" in problem


def test_targets_recorded_as_the_compile_param_text_are_read_too() -> None:
    record = {"tensorrt_flavor": "rtx", "tensorrt_version": "1.7.1.116", "targets": "sm80,sm86"}
    assert engine_mismatch(record, "rtx", "1.7.1.116", "sm86") is None
    assert "GPU sm80, sm86 vs sm89" in str(engine_mismatch(record, "rtx", "1.7.1.116", "sm89"))


def test_the_store_keeps_one_cache_per_version_and_target(tmp_path: Path) -> None:
    built = tmp_path / "returned.cache"
    built.write_bytes(b"cache of 10.4 for current")
    assert timing_cache.stored(tmp_path, "sha256:aa", "current") is None  # version not known yet
    kept = timing_cache.keep(tmp_path, "sha256:aa", "10.4.0", None, built)
    assert kept == tmp_path / "timing_cache" / "10.4.0" / "current.cache"
    assert timing_cache.stored(tmp_path, "sha256:aa", None) == kept
    assert timing_cache.stored(tmp_path, "sha256:aa", "sm86") is None  # another target
    assert timing_cache.stored(tmp_path, "sha256:bb", None) is None  # an image not seen
    hostile = timing_cache.keep(tmp_path, "sha256:bb", "../../x", "../y", built)
    assert hostile.resolve().is_relative_to((tmp_path / "timing_cache").resolve())


class _StandInCache:
    def __init__(self, blob: bytes) -> None:
        self.blob = blob

    def serialize(self) -> bytes:
        return self.blob


class _StandInConfig:
    """Stands in for full TensorRT's builder config, which needs an NVIDIA GPU: a cache starts
    from the bytes given, and a build appends what it timed (``timed``)."""

    def __init__(self, timed: bytes) -> None:
        self.timed = timed
        self.cache = _StandInCache(b"")

    def create_timing_cache(self, blob: bytes) -> _StandInCache:
        return _StandInCache(blob)

    def set_timing_cache(self, cache: _StandInCache, ignore_mismatch: bool) -> bool:
        self.cache = cache
        return True

    def get_timing_cache(self) -> _StandInCache:
        return _StandInCache(self.cache.blob + self.timed)


def _report() -> Any:
    return Report(io.StringIO())


@pytest.mark.parametrize(
    ("stored", "timed", "state"),
    [(None, b"t1", "created"), (b"t1", b"", "hit"), (b"t1", b"t2", "miss")],
)
def test_full_tensorrt_says_created_hit_or_miss(
    tmp_path: Path, stored: bytes | None, timed: bytes, state: str
) -> None:
    full = TensorRT(None, "full", "10.4.0")
    cache_in = tmp_path / "in.cache"
    if stored is not None:
        cache_in.write_bytes(stored)
    config = _StandInConfig(timed)
    given = start_timing_cache(full, config, cache_in)
    out = tmp_path / "out.cache"
    assert finish_timing_cache(full, config, given, str(out), _report()) == state
    assert out.read_bytes() == (stored or b"") + timed


def test_tensorrt_for_rtx_has_no_timing_cache(tmp_path: Path) -> None:
    rtx = TensorRT(None, "rtx", "1.7.1.116")
    assert start_timing_cache(rtx, object(), None) is None
    out = tmp_path / "out.cache"
    assert finish_timing_cache(rtx, object(), None, str(out), _report()) == "unsupported"
    assert not out.exists()


@pytest.mark.parametrize(("printed", "expected"), [("8.6", "sm86"), ("12.0", "sm120"), ("", None)])
def test_the_gpu_s_compute_capability_is_read_from_nvidia_smi(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, printed: str, expected: str | None
) -> None:
    """A stand-in `nvidia-smi` on PATH (no GPU here) prints what a real one prints for
    ``--query-gpu=compute_cap --format=csv,noheader``."""
    from edgehub.agent.trt.gpu import compute_capability

    smi = tmp_path / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\necho '{printed}'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert compute_capability() == expected
