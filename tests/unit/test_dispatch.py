"""Dispatch: context, options, device resolution and provider selection, each error named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from edgehub.core import HubContext
from edgehub.core.component import Component, ComponentOutput, NoProviderError, RunType
from edgehub.core.device import Device, DeviceSpec, LocalCommandRunner
from edgehub.errors import DeviceError, ProviderError

CALLS: list[dict[str, Any]] = []


class Shrinker(Component):
    run_type = RunType.COMPILE

    def __init__(self, *, name=None, device=None, level=1, fast=False):  # type: ignore[no-untyped-def]
        super().__init__(name=name, device=device, level=level, fast=fast)

    def run(self, ctx: HubContext, model: Path, *, device=None, level=1, fast=False):  # type: ignore[no-untyped-def]
        raise NoProviderError


@Shrinker.provider("local")
def _local(ctx, model, *, device=None, level=1, fast=False):  # type: ignore[no-untyped-def]
    CALLS.append({"provider": "local", "device": device, "level": level, "fast": fast})
    return ComponentOutput.from_current_run(ctx)


@Shrinker.provider("board")
def _board(ctx, model, *, device=None, level=1):  # type: ignore[no-untyped-def]
    CALLS.append({"provider": "board", "device": device, "level": level})
    return ComponentOutput.from_current_run(ctx)


class RemoteOnly(Component):
    run_type = "PROFILE"

    def __init__(self, *, name=None, device=None):  # type: ignore[no-untyped-def]
        super().__init__(name=name, device=device)

    def run(self, ctx: HubContext, model: Path, *, device=None):  # type: ignore[no-untyped-def]
        raise NoProviderError


@RemoteOnly.provider("board")
def _remote_board(ctx, model, *, device=None):  # type: ignore[no-untyped-def]
    return ComponentOutput.from_current_run(ctx)


def board(name: str = "rpi", provider: str | None = "board") -> Device:
    return Device(name, LocalCommandRunner(), DeviceSpec("Pi"), provider)


@pytest.fixture(autouse=True)
def _clear() -> None:
    CALLS.clear()


def test_run_outside_an_active_context_is_refused() -> None:
    ctx = HubContext(project_name="p")
    with pytest.raises(
        RuntimeError, match=r"Cannot call 'Shrinker' outside of an active HubContext"
    ):
        Shrinker().run(ctx, Path("m"))


def test_call_options_win_over_constructor_options() -> None:
    with HubContext(project_name="p") as ctx:
        Shrinker(level=3).run(ctx, Path("m"))
        Shrinker(level=3).run(ctx, Path("m"), level=5)
    assert [c["level"] for c in CALLS] == [3, 5]


def test_unknown_options_and_wrong_input_count_are_type_errors() -> None:
    with HubContext(project_name="p") as ctx:
        with pytest.raises(TypeError, match=r"'Shrinker' got unexpected keyword arguments: speed"):
            Shrinker().run(ctx, Path("m"), speed=2)
        with pytest.raises(
            TypeError, match=r"Shrinker.run takes 1 input\(s\) after ctx \(model\), got 2"
        ):
            Shrinker().run(ctx, Path("m"), Path("n"))


def test_named_device_is_used_and_its_name_reaches_the_provider() -> None:
    with HubContext(project_name="p", devices=[board()]) as ctx:
        Shrinker(device="rpi").run(ctx, Path("m"))
        Shrinker().run(ctx, Path("m"), device="local")
    assert CALLS[0] == {"provider": "board", "device": "rpi", "level": 1}
    assert CALLS[1]["provider"] == "local" and CALLS[1]["device"] == "local"


def test_first_compatible_device_wins_over_local() -> None:
    with HubContext(project_name="p", devices=[board("other", "qai_hub"), board()]) as ctx:
        Shrinker().run(ctx, Path("m"))
    assert CALLS == [{"provider": "board", "device": "rpi", "level": 1}]


def test_local_is_the_fallback_when_no_device_fits() -> None:
    with HubContext(project_name="p", devices=[board("other", "qai_hub")]) as ctx:
        Shrinker().run(ctx, Path("m"))
    assert CALLS[0]["provider"] == "local"


def test_unknown_device_lists_the_known_ones() -> None:
    with (
        HubContext(project_name="p", devices=[board()]) as ctx,
        pytest.raises(
            DeviceError, match=r"device 'jetson' not in the HubContext; known: rpi, local"
        ),
    ):
        Shrinker(device="jetson").run(ctx, Path("m"))


def test_no_compatible_device_lists_supported_types_and_devices() -> None:
    with (
        HubContext(project_name="p", devices=[board("s24", "qai_hub")]) as ctx,
        pytest.raises(
            DeviceError,
            match=r"no device in the HubContext fits RemoteOnly: it supports provider types "
            r"board; devices: s24 \(qai_hub\), local \(local\)",
        ),
    ):
        RemoteOnly().run(ctx, Path("m"))


def test_device_without_a_provider_says_which_providers_exist() -> None:
    with HubContext(project_name="p", devices=[board("s24", "qai_hub")]) as ctx:
        with pytest.raises(
            ProviderError,
            match=r"Shrinker has no provider for 'qai_hub' \(device 's24'\); "
            r"available providers: local, board",
        ):
            Shrinker(device="s24").run(ctx, Path("m"))
        with pytest.raises(ProviderError, match=r"RemoteOnly has no provider for 'local'"):
            RemoteOnly(device="local").run(ctx, Path("m"))


def test_device_with_no_provider_type_suggests_hub_run() -> None:
    with (
        HubContext(project_name="p", devices=[board("raw", None)]) as ctx,
        pytest.raises(ProviderError, match=r"device 'raw' has no provider type.*@hub_run"),
    ):
        Shrinker(device="raw").run(ctx, Path("m"))


def test_option_a_provider_left_out_is_served_only_at_its_default() -> None:
    with HubContext(project_name="p", devices=[board()]) as ctx:
        Shrinker(device="rpi", fast=False).run(ctx, Path("m"))
        with pytest.raises(
            ProviderError,
            match=r"option 'fast'=True is not supported by Shrinker's 'board' provider "
            r"\(device 'rpi'\)",
        ):
            Shrinker(device="rpi").run(ctx, Path("m"), fast=True)
    assert len(CALLS) == 1


def test_device_must_be_a_name() -> None:
    with (
        HubContext(project_name="p") as ctx,
        pytest.raises(TypeError, match=r"device must be a device name \(str\), got int"),
    ):
        Shrinker(device=3).run(ctx, Path("m"))


def test_duplicate_device_names_are_refused() -> None:
    with pytest.raises(ValueError, match=r"duplicate device name 'rpi'"):
        HubContext(project_name="p", devices=[board(), board()])


def test_failed_provider_marks_the_run_failed_and_keeps_its_log() -> None:
    class Breaker(Component):
        run_type = RunType.COMPILE

        def __init__(self, *, name=None, device=None):  # type: ignore[no-untyped-def]
            super().__init__(name=name, device=device)

        def run(self, ctx: HubContext, model: Path, *, device=None):  # type: ignore[no-untyped-def]
            raise NoProviderError

    @Breaker.provider("local")
    def _break(ctx, model, *, device=None):  # type: ignore[no-untyped-def]
        ctx.devices[device].runner.run(["sh", "-c", "echo about to fail; echo oops >&2"])
        raise RuntimeError("tool crashed")

    with HubContext(project_name="p") as ctx:
        with pytest.raises(RuntimeError, match="tool crashed"):
            Breaker().run(ctx, Path("m"))
        record = ctx.store.list_runs()[0]
    assert record.status == "FAILED"
    assert record.error is not None and "tool crashed" in record.error
    text = record.artifacts["log"].local().read_text()
    assert "[stdout] about to fail" in text and "[stderr] oops" in text
