"""Every class-creation and provider-registration check names its cause."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from edgehub.core import HubContext
from edgehub.core.component import Component, NoProviderError, RunType


def _make(run_type: Any = RunType.COMPILE, init: Any = None, run: Any = None) -> type:
    namespace: dict[str, Any] = {}
    if run_type is not ...:
        namespace["run_type"] = run_type

    def default_init(self, *, name=None, device=None, level=1):  # type: ignore[no-untyped-def]
        super(cls, self).__init__(name=name, device=device, level=level)

    def default_run(self, ctx: HubContext, model: Path, *, device=None, level=1):  # type: ignore[no-untyped-def]
        raise NoProviderError

    namespace["__init__"] = init or default_init
    namespace["run"] = run or default_run
    cls = type("Widget", (Component,), namespace)
    return cls


def test_a_valid_component_is_accepted() -> None:
    cls = _make()
    assert cls.positional_names() == ["model"]  # type: ignore[attr-defined]
    assert cls.keyword_options() == {"device": None, "level": 1}  # type: ignore[attr-defined]
    assert cls.providers() == []  # type: ignore[attr-defined]


def test_run_type_is_required() -> None:
    with pytest.raises(TypeError, match=r"Widget must set run_type"):
        _make(run_type=...)


def test_run_type_must_be_a_run_type_or_string() -> None:
    with pytest.raises(TypeError, match=r"Widget.run_type must be a RunType member or a string"):
        _make(run_type=42)
    assert _make(run_type="calibrate").run_type == "calibrate"  # type: ignore[attr-defined]


def test_run_needs_a_hubcontext_parameter() -> None:
    def run(self, ctx: int, model, *, device=None, level=1):  # type: ignore[no-untyped-def]
        raise NoProviderError

    with pytest.raises(
        TypeError, match=r"Widget.run: its second parameter 'ctx' must be annotated HubContext"
    ):
        _make(run=run)

    def bare(self):  # type: ignore[no-untyped-def]
        raise NoProviderError

    with pytest.raises(TypeError, match=r"Widget.run must take \(self, ctx: HubContext"):
        _make(run=bare)


def test_run_needs_exactly_one_device_parameter() -> None:
    def neither(self, ctx: HubContext, model, *, level=1):  # type: ignore[no-untyped-def]
        raise NoProviderError

    def both(self, ctx: HubContext, model, *, device=None, devices=None, level=1):  # type: ignore[no-untyped-def]
        raise NoProviderError

    with pytest.raises(TypeError, match=r"Widget.run is missing the keyword-only device"):
        _make(run=neither)
    with pytest.raises(TypeError, match=r"Widget.run declares both"):
        _make(run=both)


def test_run_must_not_take_varargs() -> None:
    def star(self, ctx: HubContext, *models, device=None, level=1):  # type: ignore[no-untyped-def]
        raise NoProviderError

    with pytest.raises(TypeError, match=r"Widget.run must not take \*models"):
        _make(run=star)


def test_init_must_be_defined() -> None:
    def run(self, ctx: HubContext, model, *, device=None):  # type: ignore[no-untyped-def]
        raise NoProviderError

    with pytest.raises(TypeError, match=r"Widget must define __init__"):
        type("Widget", (Component,), {"run_type": RunType.COMPILE, "run": run})


def test_init_keywords_must_match_run_and_name_them() -> None:
    def missing(self, *, name=None, device=None):  # type: ignore[no-untyped-def]
        pass

    def extra(self, *, name=None, device=None, level=1, speed=2):  # type: ignore[no-untyped-def]
        pass

    def no_name(self, *, device=None, level=1):  # type: ignore[no-untyped-def]
        pass

    with pytest.raises(TypeError, match=r"Widget.__init__.*missing: level; extra: -"):
        _make(init=missing)
    with pytest.raises(TypeError, match=r"Widget.__init__.*missing: -; extra: speed"):
        _make(init=extra)
    with pytest.raises(TypeError, match=r"Widget.__init__.*missing: name"):
        _make(init=no_name)


def test_provider_positional_inputs_must_match_by_name_and_order() -> None:
    cls = _make()
    with pytest.raises(
        TypeError, match=r"positional inputs \['model'\] in that order, got \['path'\]"
    ):
        cls.provider("x")(lambda ctx, path, *, device=None, level=1: None)  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match=r"must not take \*args"):
        cls.provider("x")(lambda ctx, *models, device=None: None)  # type: ignore[attr-defined]


def test_provider_options_must_be_declared_by_run() -> None:
    cls = _make()
    with pytest.raises(TypeError, match=r"does not declare: speed"):
        cls.provider("x")(lambda ctx, model, *, device=None, speed=2: None)  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match=r"must not take 'name'"):
        cls.provider("x")(lambda ctx, model, *, device=None, name=None: None)  # type: ignore[attr-defined]


def test_provider_may_leave_out_options_or_take_kwargs() -> None:
    cls = _make()
    cls.provider("partial")(lambda ctx, model, *, device=None: None)  # type: ignore[attr-defined]
    cls.provider("kw")(lambda ctx, model, **kwargs: None)  # type: ignore[attr-defined]
    assert cls.providers() == ["partial", "kw"]  # type: ignore[attr-defined]


def test_duplicate_provider_type_is_refused() -> None:
    cls = _make()
    cls.provider("local")(lambda ctx, model, **kw: None)  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=r"Duplicate provider type 'local' for Widget"):
        cls.provider("local")(lambda ctx, model, **kw: None)  # type: ignore[attr-defined]


def test_constructor_rejects_unknown_options() -> None:
    cls = _make()
    with pytest.raises(TypeError, match=r"Widget\(\) got unexpected keyword arguments: speed"):
        Component.__init__(cls.__new__(cls), speed=1)
