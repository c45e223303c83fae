"""The runtime registry: one `RuntimeDescriptor` per toolchain, found through entry points.

A runtime (ours or a third party's) is a package exposing a `RuntimeDescriptor` and naming it
in its distribution's entry points::

    [project.entry-points."edgehub.runtimes"]
    echo = "echo_runtime:RUNTIME"

The registry loads every entry point of the group ``edgehub.runtimes`` once, on first use
(never on ``import edgehub``), and keeps the descriptors in registration order: the built-in
runtimes first, then the others by name. An entry point that fails to load, or names something
that is not a descriptor, is skipped with a one-line warning on stderr (and listed by
`runtime_problems`), so a broken plug-in never stops edgehub.

Core imports no toolchain: descriptors are reached by name through `importlib.metadata`, and
`resolve_export` serves the names of ``edgehub.core.compile/profile/invoke/evaluate`` from
them.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.core.entry_points import entry_point_list
from edgehub.errors import UsageError, did_you_mean

if TYPE_CHECKING:
    from edgehub.core.component.base import Component
    from edgehub.core.component.outputs import CompiledModel
    from edgehub.core.context import HubContext
    from edgehub.core.device.spec import ProviderConfig

__all__ = [
    "ENTRY_POINT_GROUP",
    "Inspector",
    "Repair",
    "RuntimeDescriptor",
    "all_runtimes",
    "get_runtime",
    "lazy_exports",
    "reference_runtime",
    "reset_runtimes",
    "resolve_export",
    "runtime_names",
    "runtime_problems",
]

ENTRY_POINT_GROUP = "edgehub.runtimes"

# Where the built-in descriptors live, used when edgehub's own entry points are missing (a
# source tree on PYTHONPATH without installed metadata). Strings, so core imports no toolchain.
_BUILTIN: dict[str, str] = {
    "onnxruntime": "edgehub.toolchains.onnxruntime:RUNTIME",
    "tflite": "edgehub.toolchains.tflite:RUNTIME",
    "tensorrt": "edgehub.toolchains.tensorrt:RUNTIME",
}

Inspector = Callable[["HubContext", Path, "str | None"], dict[str, Any]]
"""``inspect(ctx, model_path, device_name)`` -> ``{"inputs": [...], "outputs": [...]}``, each
entry a dict with ``name``, ``shape`` and ``dtype`` (what `random_inputs` takes)."""


@dataclass(frozen=True)
class Repair:
    """How ``hub exec eval --fix`` recompiles a runtime's int8 model: the option naming its
    precision (``key``), that option's float value, the options only quantization reads
    (dropped for the float model), and ``problem``: why given compile options are no int8
    model it can repair (None: they are one)."""

    key: str
    float_value: str
    quantized_only: tuple[str, ...] = ()
    problem: Callable[[Mapping[str, Any]], str | None] = lambda _options: None


@dataclass(frozen=True)
class RuntimeDescriptor:
    """What edgehub needs to know about one runtime; every operation asks it, none names one.

    ``image`` is the directory under ``images/`` holding its Dockerfile (``None``: no image);
    ``agent_namespace`` prefixes its agent commands (``ort`` -> ``ort.profile``);
    ``provider_configs`` are the `ProviderConfig` dataclasses its providers read, each adding
    a settings table to hub.toml; ``inspect`` reads a model's inputs and outputs (``hub exec``
    uses it to make random inputs); ``evaluator`` scores a compiled model on a dataset (None:
    the runtime has none); ``calibrates`` tells from a compile's options whether that compile
    quantizes with calibration data (an eval then calibrates on its dataset unless
    ``calibration_data`` is given; None: never); ``available`` is false while the runtime is
    being built, and ``issue`` then says what is missing.

    What the operations above compile/profile/invoke ask of it:

    - ``batch_runner``: ``(ctx, device, scratch=None)`` -> a `BatchRunner` running its
      compiled models over a dataset (``hub exec eval``; None: it cannot be evaluated).
    - ``reference``: it runs ONNX models as they are, so it makes an eval's reference outputs,
      reads model signatures, and is the runtime a sweep uses when none is named (the first
      registered such runtime).
    - ``repair``: how ``eval --fix`` keeps layers in float (None: no repair).
    - ``model_file``: ``(path)`` -> why that file is no model it runs as it is (a name it
      does not load, a model to compile first), None when it is one (``hub exec ab``).
    - ``host_gpu``: its A/B and eval run the compiled model on this host's NVIDIA GPU: a local
      device only, refused before anything starts where the host has none.
    - ``deterministic_compile``: compiling the same model twice gives the same bytes (``hub
      runs rerun`` otherwise compares the two compiled models by their outputs).
    - ``ab``: ``(ctx, runtime, model_a, model_b, *, device, rounds, block_ms, warmup, seed,
      input_data, input_shape)`` -> an `AgentResult` of the interleaved rounds (``hub exec
      ab``; see `edgehub.toolchains.ab_agent`; None: no A/B). ``ab_inputs``: an A/B feeds
      its models the ``--input`` arrays (else each model gets random inputs).
    - ``device_packages``: ``(module, distribution)`` of the Python packages that provide it
      on a device (``hub devices check`` lists the ones found).
    - ``image_checks``: ``()`` -> its own ``hub doctor`` lines (objects with ``name``,
      ``state``, ``detail``) for its images, in place of the plain built/missing line.
    """

    name: str
    compiler: type[Component]
    profiler: type[Component]
    invoker: type[Component]
    compiled_model: type[CompiledModel]
    image: str | None = None
    agent_namespace: str | None = None
    provider_configs: tuple[type[ProviderConfig], ...] = ()
    inspect: Inspector | None = None
    evaluator: type[Component] | None = None
    calibrates: Callable[[Mapping[str, Any]], bool] | None = None
    available: bool = True
    issue: str = ""
    batch_runner: Callable[..., Any] | None = None
    reference: bool = False
    repair: Repair | None = None
    model_file: Callable[[Path], str | None] | None = None
    host_gpu: bool = False
    deterministic_compile: bool = True
    ab: Callable[..., Any] | None = None
    ab_inputs: bool = False
    device_packages: tuple[tuple[str, str], ...] = ()
    image_checks: Callable[[], Sequence[Any]] | None = None

    @property
    def components(self) -> tuple[type[Component], ...]:
        return (self.compiler, self.profiler, self.invoker)


_lock = threading.RLock()
_runtimes: dict[str, RuntimeDescriptor] | None = None
_loading: dict[str, RuntimeDescriptor] | None = None
_problems: list[str] = []
# runtimes loaded one by one before the registry (`get_runtime`): a warm context asks for its
# runtime on every call, which must not read the entry points again each time
_singles: dict[str, RuntimeDescriptor] = {}


def all_runtimes() -> dict[str, RuntimeDescriptor]:
    """Every registered runtime by name (loaded once; see the module docstring)."""
    global _runtimes, _loading
    if _runtimes is not None:
        return dict(_runtimes)
    with _lock:
        if _runtimes is not None:
            return dict(_runtimes)
        if _loading is not None:  # a toolchain asked while being loaded: what is known so far
            return dict(_loading)
        _loading = {}
        try:
            _discover(_loading)
            _runtimes = _loading
        finally:
            _loading = None
        return dict(_runtimes)


def runtime_names() -> list[str]:
    """The names of the registered runtimes, available or not."""
    return list(all_runtimes())


def runtime_problems() -> list[str]:
    """One line per entry point that could not be loaded (empty when all loaded)."""
    all_runtimes()
    return list(_problems)


def reset_runtimes() -> None:
    """Forget the loaded descriptors (the next call loads the entry points again)."""
    global _runtimes
    with _lock:
        _runtimes = None
        _problems.clear()
        _singles.clear()


def get_runtime(name: str) -> RuntimeDescriptor:
    """The runtime called ``name``; a clear error for unknown or not-yet-available ones.

    Before the registry is loaded, only the entry point that would win ``name`` is loaded (a
    command about one runtime does not import the others)."""
    runtime = _load_one(name)
    runtimes: dict[str, RuntimeDescriptor] = {}
    if runtime is None:
        runtimes = all_runtimes()
        runtime = runtimes.get(name)
    if runtime is None:
        hint = did_you_mean(name, runtimes, cutoff=0.4)
        raise UsageError(f"unknown runtime {name!r}{hint} (known: {', '.join(runtimes)})")
    if not runtime.available:
        runtimes = runtimes or all_runtimes()
        available = ", ".join(r.name for r in runtimes.values() if r.available)
        raise UsageError(
            f"runtime {name!r} is not available yet ({runtime.issue or 'its toolchain'} is "
            f"still being built); available now: {available or 'none'}"
        )
    return runtime


def reference_runtime() -> RuntimeDescriptor:
    """The first registered runtime that runs ONNX models as they are (``reference``)."""
    found = next((r for r in all_runtimes().values() if r.reference and r.available), None)
    if found is None:
        raise UsageError(
            "no registered runtime runs ONNX models as they are (a reference runtime); "
            "reinstall edgehub"
        )
    return found


def resolve_export(name: str, role: str, public: tuple[str, ...] | list[str]) -> Any:
    """The object ``edgehub.core.<compile|profile|invoke|evaluate>.<name>`` stands for.

    ``role`` is the descriptor field of that module (``compiler``, ``profiler``, ``invoker``,
    ``evaluator``).
    A name resolves to a runtime's component or compiled-model class, or to an attribute of the
    module defining that component: any name in ``public`` (the seeds' names, such as
    ``ProfilingMethod``), or a class that module defines (a plug-in's ``EchoProfilingResult``).
    """
    if name.startswith("_"):
        raise AttributeError(name)
    for runtime in all_runtimes().values():
        component = getattr(runtime, role)
        if component is None:
            continue
        for cls in (component, runtime.compiled_model):
            if cls.__name__ == name:
                return cls
        module = sys.modules.get(component.__module__) or importlib.import_module(
            component.__module__
        )
        found = getattr(module, name, None)
        if found is None:
            continue
        if name in public or (isinstance(found, type) and found.__module__ == module.__name__):
            return found
    raise AttributeError(name)


def lazy_exports(
    module: str, role: str, public: list[str], aliases: dict[str, str] | None = None
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``edgehub.core.<module>``, whose names resolve
    on first use (`resolve_export`); ``aliases`` maps a public name to the one it stands for."""

    def get(name: str) -> Any:
        try:
            return resolve_export((aliases or {}).get(name, name), role, public)
        except AttributeError:
            raise AttributeError(f"module {module!r} has no attribute {name!r}") from None

    def listing() -> list[str]:
        return sorted({*vars(sys.modules[module]), *public})

    return get, listing


def _ordered_points() -> list[tuple[str, str, str]]:
    """``(name, value, distribution)`` of every runtime entry point, in registration order:
    edgehub's own first (the built-in list filling in for missing metadata), then the others
    by name."""
    found = entry_point_list(ENTRY_POINT_GROUP, _warn)
    ours = [f for f in found if f[2] == "edgehub"]
    named = {f[0] for f in ours}
    ours += [(n, v, "edgehub") for n, v in _BUILTIN.items() if n not in named]
    ours.sort(key=lambda f: list(_BUILTIN).index(f[0]) if f[0] in _BUILTIN else len(_BUILTIN))
    others = sorted((f for f in found if f[2] != "edgehub"), key=lambda f: (f[0], f[2]))
    return [*ours, *others]


def _load_one(name: str) -> RuntimeDescriptor | None:
    """The runtime ``name`` from the registry if loaded, else from the one entry point that
    would register it; None when that is not a clean load (the full load then reports it)."""
    with _lock:
        if _runtimes is not None:
            return _runtimes.get(name)
        if _loading is not None:
            return _loading.get(name)
        if name in _singles:
            return _singles[name]
        point = next((p for p in _ordered_points() if p[0] == name), None)
        if point is None:
            return None
        found = _load_point(*point, warn=lambda _line: None)  # the full load says what failed
        if found is not None:
            _singles[name] = found
        return found


def _discover(into: dict[str, RuntimeDescriptor]) -> None:
    for name, value, dist in _ordered_points():
        if name in into:
            where = f"{name} = {value!r} (from {dist})"
            _warn(f"runtime entry point {where} ignored: {name!r} is already registered")
            continue
        descriptor = _load_point(name, value, dist)
        if descriptor is not None:
            into[name] = descriptor


def _load_point(
    name: str, value: str, dist: str, warn: Callable[[str], None] | None = None
) -> RuntimeDescriptor | None:
    """The descriptor entry point ``name = value`` names; None (with a warning) if it does
    not load or is not a proper descriptor."""
    warn = warn or _warn
    where = f"{name} = {value!r} (from {dist})"
    module, _, attribute = value.partition(":")
    try:
        found: Any = importlib.import_module(module.strip())
        for part in attribute.strip().split(".") if attribute.strip() else []:
            found = getattr(found, part)
    except Exception as error:
        warn(f"runtime entry point {where} failed to load: {type(error).__name__}: {error}")
        return None
    if not isinstance(found, RuntimeDescriptor):
        warn(f"runtime entry point {where} is a {type(found).__name__}, not a RuntimeDescriptor")
        return None
    if found.name != name:
        warn(f"runtime entry point {where} describes {found.name!r}; use one name")
        return None
    for component in (*found.components, found.evaluator):
        if component is not None and component.registered_runtime is None:
            component.registered_runtime = found.name
    return found


def _warn(message: str) -> None:
    line = " ".join(message.split())
    _problems.append(line)
    print(f"edgehub: warning: {line}; skipping it", file=sys.stderr)
