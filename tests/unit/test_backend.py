"""Backends of seed 002: selection, discovery cache, phase validation."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from edgehub.deploy.backend import (
    Backend,
    discover_backends,
    get_backend,
    register_backend,
    reset_backends,
    set_backend,
)


class FuseConvBn:
    phase = "fusion"


class ToNhwc:
    phase = "conversion"


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    reset_backends()
    yield
    reset_backends()


def test_single_backend_is_auto_selected() -> None:
    register_backend(
        Backend("tensorrt", conversion_patterns=[ToNhwc], fusion_patterns=[FuseConvBn])
    )
    assert get_backend().name == "tensorrt"


def test_several_backends_need_set_backend() -> None:
    register_backend(Backend("tensorrt"))
    register_backend(Backend("tflite"))
    with pytest.raises(RuntimeError, match=r"several backends installed \(tensorrt, tflite\)"):
        get_backend()
    set_backend("tflite")
    assert get_backend().name == "tflite"
    with pytest.raises(ValueError, match=r"unknown backend 'nope'; installed: tensorrt, tflite"):
        set_backend("nope")


def test_no_backend_is_an_error_and_reset_clears() -> None:
    with pytest.raises(RuntimeError, match="no backend installed"):
        get_backend()
    register_backend(Backend("x"))
    assert [b.name for b in discover_backends()] == ["x"]
    reset_backends()
    assert discover_backends() == []


def test_pattern_phase_must_match_its_field() -> None:
    with pytest.raises(
        ValueError, match=r"FuseConvBn has phase 'fusion' but is listed in conversion_patterns"
    ):
        Backend("bad", conversion_patterns=[FuseConvBn])
