"""What ``component.run(ctx, ...)`` does: resolve options and device, open a run, call the
provider."""

from __future__ import annotations

import os
import typing
import weakref
from collections.abc import Callable
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from edgehub.core.component.options import check_known, check_options
from edgehub.core.component.outputs import parent_run_id
from edgehub.errors import DeviceError, ProviderError, UsageError
from edgehub.paths import is_remote
from edgehub.user_files import regular_file

if TYPE_CHECKING:
    from edgehub.core.component.base import Component
    from edgehub.core.context import HubContext
    from edgehub.core.device.spec import Device

__all__ = ["dispatch", "resolve_device"]


def _describe_devices(ctx: HubContext) -> str:
    listed = [f"{name} ({dev.provider_type})" for name, dev in ctx.devices.items()]
    return ", ".join(listed) or "none"


def resolve_device(component: type[Component], ctx: HubContext, name: Any) -> Device:
    """The named device, else the first supported one in the context, else ``local``."""
    providers = component.providers()
    if name is not None:
        if not isinstance(name, str):
            raise TypeError(f"device must be a device name (str), got {type(name).__name__}")
        return ctx.device(name)
    for dev in ctx.devices.values():  # the implicit `local` device comes last
        if dev.provider_type in providers:
            return dev
    raise DeviceError(
        f"no device in {ctx.device_source} fits {component.__name__}: it supports provider "
        f"types {', '.join(providers) or 'none'}; devices: {_describe_devices(ctx)}"
    )


def _bind_inputs(cls_name: str, positional: list[str], args: tuple[Any, ...]) -> None:
    if len(args) != len(positional):
        raise TypeError(
            f"{cls_name}.run takes {len(positional)} input(s) after ctx "
            f"({', '.join(positional) or 'none'}), got {len(args)}"
        )


def _select_provider(
    component: Component, device: Device
) -> tuple[Callable[..., Any], frozenset[str], bool]:
    cls = type(component)
    if device.provider_type is None:
        raise ProviderError(
            f"device {device.name!r} has no provider type, so {cls.__name__} cannot run on "
            "it; give it one, or wrap your own code with @hub_run"
        )
    entry = cls.provider_for(device.provider_type)
    if entry is None:
        raise ProviderError(
            f"{cls.__name__} has no provider for {device.provider_type!r} (device "
            f"{device.name!r}); available providers: {', '.join(cls.providers()) or 'none'}"
        )
    fn, signature = entry
    return fn, signature.accepts, signature.var_keyword


def dispatch(
    component: Component, ctx: HubContext, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    from edgehub.core.context import HubContext

    cls = type(component)
    if not isinstance(ctx, HubContext) or not ctx.is_active:
        raise RuntimeError(
            f"Cannot call '{cls.__name__}' outside of an active HubContext: use "
            "`with HubContext(...) as ctx:` and pass ctx"
        )
    signature = cls._run_signature
    _bind_inputs(cls.__name__, list(signature.positional), args)
    check_known(f"'{cls.__name__}'", kwargs, signature.options)
    check_options(cls, kwargs)
    _check_path_inputs(cls, args)
    resolved = {
        key: kwargs[key] if key in kwargs else component._defaults.get(key, default)
        for key, default in signature.options.items()
    }
    _apply_aliases(cls, resolved, signature.options)
    if signature.device_param == "device":
        device = resolve_device(cls, ctx, resolved["device"])
        resolved["device"] = device.name
        selected = [device]
    else:
        selected = _resolve_many(cls, ctx, resolved["devices"])
        resolved["devices"] = [dev.name for dev in selected]
    fn, accepts, var_keyword = _select_provider(component, selected[0])
    call_kwargs: dict[str, Any] = {}
    for key, value in resolved.items():
        if var_keyword or key in accepts:
            call_kwargs[key] = value
        elif key in cls.option_aliases:
            continue  # its value went to the option it names
        elif key not in ("device", "devices") and value != signature.options[key]:
            raise ProviderError(
                f"option {key!r}={value!r} is not supported by {cls.__name__}'s "
                f"{selected[0].provider_type!r} provider (device {selected[0].name!r}), which "
                f"serves only its default {signature.options[key]!r}"
            )
    parent = parent_run_id((*args, *kwargs.values()))
    with ctx.open_run(
        cls.run_type,
        component.name,
        component=cls.__name__,
        parent_run_id=parent,
        devices=selected,
    ) as run:
        with ctx.client.batch():  # the run's settings: one transaction
            ctx.client.log_param("device", selected[0].name)
            ctx.client.log_param("device_provider_type", selected[0].provider_type)
            if cls.registered_runtime is not None:  # a provider may name it more closely
                ctx.client.log_environment({"runtime": cls.registered_runtime})
            for key, value in resolved.items():
                if key not in ("device", "devices") and _loggable(value):
                    ctx.client.log_param(f"option.{key}", value)
        result = fn(ctx, *args, **call_kwargs)
        run.output_type = type(result).__name__ if result is not None else None
        return result


def _check_path_inputs(component: type[Component], args: tuple[Any, ...]) -> None:
    """A path input that names a FIFO, a device or a socket is refused before the run opens
    (reading one would hang or never end); what a missing path or a directory means is the
    provider's to say. See `edgehub.user_files`."""
    takes_path = _path_inputs(component)
    for name, value in zip(component._run_signature.positional, args, strict=False):
        if not isinstance(value, (str, os.PathLike)) or is_remote(value):
            continue
        if takes_path[name] and os.path.exists(value):
            regular_file(value, "model", directory_ok=True)


_PATH_INPUTS: weakref.WeakKeyDictionary[type, dict[str, bool]] = weakref.WeakKeyDictionary()


def _path_inputs(component: type[Component]) -> dict[str, bool]:
    """Which of ``component``'s positional inputs take a path (read from its signature once
    per class)."""
    known = _PATH_INPUTS.get(component)
    if known is None:
        import inspect

        parameters = inspect.signature(component._call_interface).parameters
        known = _PATH_INPUTS[component] = {
            name: _names_path(parameters[name].annotation)
            for name in component._run_signature.positional
        }
    return known


def _names_path(annotation: Any) -> bool:
    """Whether a parameter annotated ``annotation`` takes a path (``Path``, ``Path | str``...)."""
    if isinstance(annotation, str):
        return "Path" in annotation
    if isinstance(annotation, type):
        return issubclass(annotation, PurePath)
    return any(_names_path(member) for member in typing.get_args(annotation))


def _loggable(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool, tuple, list))


def _resolve_many(component: type[Component], ctx: HubContext, names: Any) -> list[Device]:
    if names is None:
        first = resolve_device(component, ctx, None)
        return [d for d in ctx.devices.values() if d.provider_type == first.provider_type]
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise TypeError("devices must be a list of device names")
    devices = [resolve_device(component, ctx, n) for n in names]
    kinds = {d.provider_type for d in devices}
    if len(kinds) != 1:
        raise DeviceError(
            f"devices {', '.join(names)} mix provider types {', '.join(map(str, kinds))}; "
            "one run serves one provider type"
        )
    return devices


def _apply_aliases(
    cls: type[Component], resolved: dict[str, Any], defaults: dict[str, Any]
) -> None:
    """A value given under an alias (``warmup`` for ``burn_ins``) becomes the option's."""
    for alias, option in cls.option_aliases.items():
        given = resolved.get(alias)
        if given is None:
            continue
        if resolved[option] != defaults[option] and resolved[option] != given:
            raise UsageError(
                f"{cls.__name__}: {alias}={given!r} and {option}={resolved[option]!r} are one "
                f"option under two names; give one of them"
            )
        resolved[option] = given
