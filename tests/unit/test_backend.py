"""Backends of seed 002: selection, discovery cache, phase validation. Which backends are
"installed" is controlled by replacing the entry-point scan (`backend._installed`); one test
reads the real entry points of the built-in backends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from edgehub.deploy import backend as backend_module
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
def _reset(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(backend_module, "_installed", list)  # nothing installed by default
    reset_backends()
    yield
    reset_backends()


def _install(monkeypatch: pytest.MonkeyPatch, *backends: Backend) -> None:
    monkeypatch.setattr(backend_module, "_installed", lambda: list(backends))
    reset_backends()


def _builtin(name: str) -> Backend:
    module = pytest.importorskip(
        f"edgehub_backend_{name}", reason=f"pip install -e backends/{name}"
    )
    backend: Backend = module.BACKEND
    return backend


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


def test_builtin_backends_are_found_through_their_entry_points(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    trt, tfl = _builtin("tensorrt"), _builtin("tflite")
    monkeypatch.undo()  # the real entry-point scan
    reset_backends()
    found = {b.name: b for b in discover_backends()}
    assert found["tensorrt"] is trt and found["tflite"] is tfl
    with pytest.raises(RuntimeError, match="several backends installed"):
        get_backend()
    set_backend("tensorrt")
    assert get_backend() is trt


def test_only_one_builtin_installed_is_selected_without_set_backend(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _install(monkeypatch, _builtin("tflite"))
    assert get_backend().name == "tflite"
    with pytest.raises(ValueError, match=r"unknown backend 'tensorrt'; installed: tflite"):
        set_backend("tensorrt")
    _install(monkeypatch, _builtin("tensorrt"))
    backend = get_backend()
    assert backend.name == "tensorrt" and len(backend.fusion_patterns) >= 5
    assert all(p.phase.value == "quantized" for p in backend.quantized_patterns)


def test_discovery_is_cached_until_reset(monkeypatch: pytest.MonkeyPatch) -> None:
    _install(monkeypatch, _builtin("tensorrt"))
    assert [b.name for b in discover_backends()] == ["tensorrt"]
    monkeypatch.setattr(backend_module, "_installed", lambda: [_builtin("tflite")])
    assert [b.name for b in discover_backends()] == ["tensorrt"]  # cached
    reset_backends()
    assert [b.name for b in discover_backends()] == ["tflite"]


def test_builtin_patterns_all_have_a_phase_and_a_one_line_description() -> None:
    for name in ("tensorrt", "tflite"):
        backend = _builtin(name)
        for field in ("conversion", "fusion", "smooth", "quantized"):
            for pattern in getattr(backend, f"{field}_patterns"):
                assert pattern.phase.value == field
                assert pattern.description and "\n" not in pattern.description
