"""Component options checked against their declared types and bounds, on every path: the
constructor, ``run`` kwargs, ``hub exec --set`` (through the real ``hub`` entry point), and the
typed-value rules underneath (`edgehub.core.values`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import pytest

from edgehub.core import HubContext
from edgehub.core.component import Component, NoProviderError, ProviderType, RunType
from edgehub.core.profile import ONNXRuntimeProfiler, ProfilingMethod
from edgehub.core.values import Range, ValueProblem, check, from_data, parse
from edgehub.errors import UsageError
from edgehub.tracking import RunStore

if TYPE_CHECKING:
    import numpy as np  # unresolvable where the options are read: must not matter

HUB = str(Path(sys.executable).with_name("hub"))
Runs = Annotated[int, Range(1, 1_000_000)]


# --- the typed-value rules ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tp", "value"),
    [
        ("5", Runs, 5),
        ("1e3", Runs, 1000),
        ("2.5", float, 2.5),
        ("TRUE", bool, True),
        ("1,3,224,224", tuple[int, ...] | None, (1, 3, 224, 224)),
        ('{"x": [1, 3]}', dict[str, tuple[int, ...]] | None, {"x": (1, 3)}),
        ("none", tuple[int, ...] | None, None),
        ("Layerwise", ProfilingMethod, ProfilingMethod.LAYERWISE),
        ("dynamic", Literal["static", "dynamic"], "dynamic"),
        ("data.npz", Path | None, Path("data.npz")),
        ("7", int | str, 7),
        ("seven", int | str, "seven"),
    ],
)
def test_parse_by_annotation(text: str, tp: Any, value: Any) -> None:
    assert parse(text, tp) == value


@pytest.mark.parametrize(
    ("text", "tp", "expected"),
    [
        ("abc", Runs, "an integer between 1 and 1000000"),
        ("1.5", Runs, "an integer between 1 and 1000000"),
        ("true", Runs, "an integer between 1 and 1000000"),
        ("1e30", Runs, "between 1 and 1000000"),
        ("0", Runs, "between 1 and 1000000"),
        ("nan", float, "a number"),
        ("maybe", bool, "true or false"),
        ("1,x", tuple[int, ...], "an array of integers"),
        ("other", Literal["a", "b"], "one of 'a', 'b'"),
    ],
)
def test_parse_refuses(text: str, tp: Any, expected: str) -> None:
    with pytest.raises(ValueProblem) as info:
        parse(text, tp)
    assert info.value.expected == expected


def test_check_and_from_data() -> None:
    check((1, 2), tuple[int, ...])
    check([1, 2], tuple[int, ...])
    check("x.npz", Path)
    check(ProfilingMethod.PYTHON, ProfilingMethod)
    check("python", ProfilingMethod)
    for bad, tp in [(True, int), (1.0, int), ("1", int), (None, int), ((1, "a"), tuple[int, ...])]:
        with pytest.raises(ValueProblem):
            check(bad, tp)
    assert from_data(["a", "b"], tuple[str, ...]) == ("a", "b")
    assert from_data(2, float | None) == 2.0 and isinstance(from_data(2, float | None), float)
    assert from_data("p", str | Path) == "p"  # a string that fits stays a string


# --- the component machinery ----------------------------------------------------------------


def test_constructor_checks_types_and_bounds() -> None:
    with pytest.raises(UsageError) as info:
        ONNXRuntimeProfiler(runs="abc")  # type: ignore[arg-type]
    assert str(info.value) == (
        "ONNXRuntimeProfiler: option 'runs' must be an integer between 1 and 1000000, got 'abc'"
    )
    with pytest.raises(UsageError, match=r"'cold_starts' must be between 1 and 1000, got 0"):
        ONNXRuntimeProfiler(cold_starts=0)
    with pytest.raises(UsageError, match=r"'profiling_method' must be one of 'python'"):
        ONNXRuntimeProfiler(profiling_method="fast")  # type: ignore[arg-type]
    assert ONNXRuntimeProfiler(runs=1_000_000, profiling_method="model")._defaults["runs"] == (
        1_000_000
    )


class Counter(Component):
    """A seed-style component: no bounds declared beyond the defaults of `Component`."""

    run_type = RunType.PROFILE

    def __init__(
        self, *, name: str | None = None, device: str | None = None, count: int = 5, runs: int = 2
    ) -> None:
        super().__init__(name=name, device=device, count=count, runs=runs)

    def run(
        self,
        ctx: HubContext,
        model: Path,
        *,
        device: str | None = None,
        count: int = 5,
        runs: int = 2,
    ) -> None:
        raise NoProviderError


@Counter.provider(ProviderType.LOCAL)
def _count(ctx: HubContext, model: Path, *, device: str | None = None, **options: Any) -> None:
    return None


class BoundedCounter(Counter):
    option_bounds = {"count": Range(0, 10)}


def test_custom_components_keep_working_and_may_declare_bounds() -> None:
    assert Counter(count=10**12)._defaults["count"] == 10**12  # no bound on its own option
    with pytest.raises(UsageError, match=r"Counter: option 'runs' must be between 1"):
        Counter(runs=0)  # the shared bound of `runs`
    with pytest.raises(UsageError, match=r"BoundedCounter: option 'count' must be between 0 and"):
        BoundedCounter(count=11)
    with pytest.raises(TypeError, match=r"option_bounds names 'cuont'"):

        class Typo(Component):
            run_type = RunType.PROFILE
            option_bounds = {"cuont": Range(0, 1)}

            def __init__(self, *, name: str | None = None, device: str | None = None,
                         count: int = 5, runs: int = 2) -> None:  # fmt: skip
                super().__init__(name=name, device=device, count=count, runs=runs)

            def run(
                self, ctx: HubContext, model: Path, *, device: str | None = None, count: int = 5,
                runs: int = 2,
            ) -> None:  # fmt: skip
                raise NoProviderError


def test_run_kwargs_are_checked_before_a_run_opens(tmp_path: Path) -> None:
    model = tmp_path / "m.bin"
    model.write_bytes(b"x")
    with HubContext(project_name="options", artifact_base_dir=tmp_path / ".hub") as ctx:
        with pytest.raises(UsageError, match=r"option 'runs' must be an integer .*got 1.5"):
            Counter().run(ctx, model, runs=1.5)
        Counter().run(ctx, model, runs=3)
    assert [r.status for r in RunStore(tmp_path / ".hub").list_runs(limit=None)] == ["FINISHED"]


# --- the declaration every front end reads --------------------------------------------------


class Declared(Component):
    """Postponed annotations, a name imported only for type checking, a path, choices."""

    run_type = RunType.PROFILE
    option_aliases = {"warm": "burn_ins"}

    def __init__(self, *, name: str | None = None, device: str | None = None,
                 burn_ins: int = 1, warm: int | None = None, level: Literal["a", "b"] = "a",
                 weights: Path | dict[str, np.ndarray] | None = None,
                 some_data: str | None = None) -> None:  # fmt: skip
        super().__init__(name=name, device=device, burn_ins=burn_ins, warm=warm, level=level,
                         weights=weights, some_data=some_data)  # fmt: skip

    def run(
        self, ctx: HubContext, model: Path, input_data: dict[str, np.ndarray] | None, *,
        device: str | None = None, burn_ins: int = 1, warm: int | None = None,
        level: Literal["a", "b"] = "a", weights: Path | dict[str, np.ndarray] | None = None,
        some_data: str | None = None,
    ) -> None:  # fmt: skip
        raise NoProviderError


def test_options_are_declared_once_and_read_from_the_declaration() -> None:
    from edgehub.ops.inputs import makes_own_inputs
    from edgehub.ops.options import component_options, parse_value
    from edgehub.tui.config_fields import option_fields

    specs = Declared.declared_options()
    assert list(specs) == ["burn_ins", "warm", "level", "weights", "some_data"]
    assert specs["burn_ins"].bounds == Range(0, 100_000) and specs["burn_ins"].kind == "int"
    assert specs["warm"].alias_of == "burn_ins"
    assert specs["level"].choices == ("a", "b") and specs["level"].kind == "choice"
    assert specs["weights"].path and specs["weights"].kind == "path"
    assert not specs["some_data"].path  # a name ending in _data is no path unless declared one
    assert parse_value(Declared, "some_data", "x.npz") == "x.npz"
    assert parse_value(Declared, "weights", "w.npz") == Path("w.npz")
    assert "warm" not in component_options(Declared, aliases=False)
    kinds = {f.key: f.kind for f in option_fields(component_options(Declared, aliases=False))}
    assert kinds == {"burn_ins": "int", "level": "choice", "weights": "text", "some_data": "text"}
    assert makes_own_inputs(Declared)  # `... | None` read from the declaration, not its text


# --- `hub exec --set` through the real entry point ------------------------------------------


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("runs=abc", "'runs' must be an integer between 1 and 1000000, got 'abc'"),
        ("runs=1.5", "'runs' must be an integer between 1 and 1000000, got '1.5'"),
        ("runs=true", "'runs' must be an integer between 1 and 1000000, got 'true'"),
        ("runs=1e30", "'runs' must be between 1 and 1000000, got '1e30'"),
        ("runs=500000000", "'runs' must be between 1 and 1000000, got '500000000'"),
        ("burn_ins=-1", "'burn_ins' must be between 0 and 100000, got '-1'"),
    ],
)
def test_set_is_checked_before_any_run(tmp_path: Path, setting: str, message: str) -> None:
    (tmp_path / "hub.toml").write_text('[project]\nname = "opts"\n')
    (tmp_path / "m.onnx").write_bytes(b"x")
    result = subprocess.run(
        [HUB, "exec", "profile", "onnxruntime", "m.onnx", "--set", setting],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [f"hub: error: ONNXRuntimeProfiler: option {message}"]
    assert not (tmp_path / ".hub").exists() or RunStore(tmp_path / ".hub").list_runs() == []
