"""``trt.build``: build a serialized TensorRT engine from an ONNX model.

Request::

    {"model": PATH, "output": ENGINE PATH, "precision": "fp32" | "fp16" | "int8",
     "target": null | "sm86" | "sm86,sm89" | ["sm86", ...] | "current",
     "shapes": null | {input: {"min": [ints], "opt": [ints], "max": [ints]} | [ints]},
     "input_shape": null | [ints] (the first input) | {input: [ints]},
     "workspace_mb": null | int, "tensorrt_version": null | "1.7",
     "layer_info": null | JSON PATH, "build_log": null | PATH,
     "timing_cache_in": null | PATH, "timing_cache_out": null | PATH}

``target``: the compute capability built for (TensorRT for RTX builds for any without a GPU;
``current``, the default, needs one). ``shapes``: each dynamic input's optimization profile (a
list: min = opt = max); ``input_shape``: static shapes (:mod:`.shapes`). ``tensorrt_version``
must prefix the installed version (``1.7`` matches 1.7.1.116). Precision: :mod:`.prepare`.
``ENGINE.json`` records the flavor, version and targets that built the engine
(`engine_file.engine_record`). Full TensorRT's timing cache starts from ``timing_cache_in`` and
is written to ``timing_cache_out``; param ``timing_cache``: ``created`` (none given), ``hit``
(nothing added), ``miss``, or ``unsupported`` (TensorRT for RTX has none).

Metrics: build_time_s (the builder alone), prepare_time_s, parse_time_s, engine_size_bytes,
num_layers (before fusion), num_engine_layers (where the engine could be opened). Params: the
request plus tensorrt_version, tensorrt_flavor, targets. Data: the network's inputs/outputs,
layer precisions, the artifact paths, ``prepare`` (what :mod:`.prepare` rewrote).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..atomic import atomic_write
from ..entry import keep_until_exit
from ..models import resolve_model_path
from ..protocol import (
    CommandOutput,
    ModelError,
    Params,
    UsageError,
    write_json_atomic,
)
from ..report import Report
from ..scratch import Scratch
from .engine_file import engine_record
from .gpu import compute_capability, gpu_visible
from .layers import engine_layers, network_io, network_layers, precision_counts
from .logger import make_logger
from .prepare import PRECISIONS, prepare_model, rewritten_for_parser
from .runtime import TensorRT, describe_flavor, import_tensorrt, resolve_targets, set_targets
from .shapes import DimNames, Profile, name_unknown_dims, optimization_profile, parse_shapes


def check_version(trt: TensorRT, wanted: str | None) -> None:
    if wanted and not (trt.version == wanted or trt.version.startswith(wanted.rstrip(".") + ".")):
        raise UsageError(
            f"tensorrt_version {wanted} was asked for but this image has "
            f"{describe_flavor(trt)}: leave tensorrt_version unset, or use an image that pins it"
        )


def parser_error(parser: Any, path: Path) -> ModelError:
    """One line: the parser's message and the node it stopped at."""
    parts: list[str] = []
    for index in range(parser.num_errors):
        error = parser.get_error(index)
        operator = error.node_operator() or "?"
        node = error.node_name() or f"#{error.node()}"
        desc = str(error.desc()).strip()
        code = str(getattr(error.code(), "name", error.code())).split(".")[-1]
        where = f"node '{node}' ({operator}, node {error.node()})"
        detail = desc if desc and desc not in ("false", "true") else f"{error.func()} failed"
        if operator != "?" and not parser.supports_operator(operator):
            detail += f"; operator {operator} is not supported by this ONNX parser"
        parts.append(f"{where}: {detail} [{code}]")
    message = "; ".join(parts) or "unknown error"
    return ModelError(f"TensorRT's ONNX parser cannot import '{path.name}': {message}")


_SHAPE_WORDS = ("dimension", "shape", "profile")


def start_timing_cache(trt: TensorRT, config: Any, cache_in: Path | None) -> bytes | None:
    """Give full TensorRT's builder the cache in ``cache_in`` (an empty one where there is no
    file); the bytes it started from (None: none). No-op for TensorRT for RTX."""
    if trt.flavor == "rtx":
        return None
    given = cache_in.read_bytes() if cache_in is not None and cache_in.is_file() else None
    cache = config.create_timing_cache(given or b"")
    config.set_timing_cache(cache, False)
    return given


def finish_timing_cache(
    trt: TensorRT, config: Any, given: bytes | None, cache_out: str | None, report: Report
) -> str:
    """Write the builder's timing cache to ``cache_out``; what became of it (see the module)."""
    if trt.flavor == "rtx":
        report.info(f"timing cache: unsupported by {describe_flavor(trt)} (its calls are no-ops)")
        return "unsupported"
    blob = bytes(memoryview(config.get_timing_cache().serialize()))
    if cache_out is not None:
        atomic_write(Path(cache_out), blob, durable=False)
    state = "created" if given is None else "hit" if blob == given else "miss"
    report.info(f"timing cache: {state} ({len(blob)} bytes)")
    return state


def build_failure(logger: Any, targets: list[str], shapes: Profile | None = None) -> ModelError:
    errors = [line for line in logger.errors if "catchCudaError" not in line] or logger.errors
    detail = " | ".join(errors[-3:]) or "no error message"
    advice = "try another target or precision"
    if any(word in detail.lower() for word in _SHAPE_WORDS):
        given = "; ".join(
            f"{name} " + "/".join("x".join(map(str, entry[k])) for k in ("min", "opt", "max"))
            for name, entry in (shapes or {}).items()
        )
        advice = (
            f"the input shapes do not fit the model (built for {given or 'its own shapes'}, "
            "min/opt/max): inputs sharing a named dimension need the same size, and the "
            "model's reshapes must accept the sizes; check them by running the model at those "
            "shapes on ONNX Runtime (hub exec profile onnxruntime MODEL --set input_shape=...)"
        )
    return ModelError(
        f"TensorRT could not build the engine for {', '.join(targets)}: {detail}; {advice}"
    )


def open_engine(trt: TensorRT, logger: Any, blob: Any, report: Report) -> dict[str, Any] | None:
    """The engine inspector's JSON where a GPU can deserialize the engine."""
    if not gpu_visible():
        return None
    try:
        engine = trt.module.Runtime(logger).deserialize_cuda_engine(blob)
        return engine_layers(trt.module, engine) if engine is not None else None
    except Exception as exc:  # a GPU of another compute capability, a driver problem
        report.warn(f"the engine could not be opened here to inspect it: {exc}")
        return None


def parse_network(trt: TensorRT, builder: Any, logger: Any, source: Path) -> tuple[Any, Any, bool]:
    """A strongly typed network of ``builder`` parsed from the ONNX model ``source``: the
    network, its parser and whether the parse succeeded."""
    flags = 1 << int(trt.module.NetworkDefinitionCreationFlag.STRONGLY_TYPED)
    network = builder.create_network(flags)
    parser = trt.module.OnnxParser(network, logger)
    return network, parser, parser.parse_from_file(str(source))


def all_static(network: Any) -> bool:
    """Whether every input of a parsed network has a fixed shape (no dim to name)."""
    return all(-1 not in tuple(network.get_input(i).shape) for i in range(network.num_inputs))


def run(params: Params, report: Report) -> CommandOutput:
    model_arg = params.path("model")
    output_arg = params.path("output")
    precision = params.choice("precision", PRECISIONS, "fp32")
    raw_target = params.raw_value("target")
    raw_shapes = params.raw_value("shapes")
    raw_static = params.raw_value("input_shape")
    workspace_mb = params.integer("workspace_mb", None, minimum=1)
    wanted_version = params.string("tensorrt_version", None)
    layer_info = params.path("layer_info", required=False)
    build_log = params.path("build_log", required=False)
    cache_in = params.path("timing_cache_in", required=False)
    cache_out = params.path("timing_cache_out", required=False)
    params.finish()

    trt = import_tensorrt()
    check_version(trt, wanted_version)
    targets = resolve_targets(trt, raw_target, gpu_visible())
    path = resolve_model_path(model_arg)
    out = Path(output_arg)
    out.parent.mkdir(parents=True, exist_ok=True)
    logger = make_logger(trt.module, report)
    report.info(
        f"build: {path.name}, {precision}, for {', '.join(targets)} with {describe_flavor(trt)}"
    )

    with Scratch("edgehub-agent-trt-") as scratch:
        started = time.perf_counter()
        source, notes = prepare_model(path, scratch, precision, report, raw_static, raw_shapes)
        prepared = time.perf_counter()
        builder = trt.module.Builder(logger)
        network, parser, parsed_ok = parse_network(trt, builder, logger, source)
        dim_names: DimNames = {}
        renamed: dict[str, Any] = {}
        # Unnamed dynamic dims get names of their own before TensorRT's parse counts, and an
        # fp32 model it refuses gets the parser rewrites: onnx (slow to import) is loaded only
        # when TensorRT finds an input that is not static or cannot parse the model.
        if not parsed_ok or not all_static(network):
            naming = time.perf_counter()
            rewrites: dict[str, Any] = {}
            if not parsed_ok and precision == "fp32":
                source, rewrites = rewritten_for_parser(
                    source, scratch, report, raw_static, raw_shapes
                )
                notes.update(rewrites)
            named = scratch.file(f"n_{path.name}")
            named, dim_names, renamed = name_unknown_dims(source, named, report)
            prepared += time.perf_counter() - naming
            if renamed:
                notes["renamed_unknown_dims"] = renamed
            if renamed or rewrites:
                source = named
                logger.lines.clear()  # the first parse's messages are of another model
                logger.errors.clear()
                network, parser, parsed_ok = parse_network(trt, builder, logger, source)
        if not parsed_ok:
            if build_log:
                logger.write(build_log)
            raise parser_error(parser, path)
        parsed = time.perf_counter()
        io = network_io(network)
        shapes = parse_shapes(raw_shapes, io["inputs"], raw_static, dim_names)
        config = builder.create_builder_config()
        set_targets(trt, config, targets)
        config.profiling_verbosity = trt.module.ProfilingVerbosity.DETAILED
        if workspace_mb is not None:
            config.set_memory_pool_limit(trt.module.MemoryPoolType.WORKSPACE, workspace_mb << 20)
        if shapes:
            config.add_optimization_profile(optimization_profile(builder, shapes))
        given = start_timing_cache(trt, config, Path(cache_in) if cache_in else None)
        layers = network_layers(network)
        quantizing = sum(1 for layer in layers if layer["type"] in ("QUANTIZE", "DEQUANTIZE"))
        if precision == "fp32" and quantizing:
            report.warn(
                f"the model holds {quantizing} Q/DQ layers: TensorRT keeps them, so parts run in "
                "int8; pass precision int8 to say so, or give the float model for pure fp32"
            )
        build_start = time.perf_counter()
        blob = builder.build_serialized_network(network, config)
        build_time = time.perf_counter() - build_start
        timing = finish_timing_cache(trt, config, given, cache_out, report) if blob else None
    if build_log:
        logger.write(build_log)
    if blob is None:
        raise build_failure(logger, targets, shapes)
    atomic_write(out, blob, durable=False)  # a job output, fetched at once: no fsync
    size = out.stat().st_size
    built_for = [compute_capability() or t if t == "current" else t for t in targets]
    record = engine_record(trt.flavor, trt.version, built_for)
    write_json_atomic(str(out) + ".json", record)
    inspected = open_engine(trt, logger, blob, report)

    keep_until_exit(blob, network, parser, builder, config, logger, layers)
    counts = precision_counts(layers)
    if layer_info:
        write_json_atomic(
            layer_info,
            {
                "source": "network (before fusion)" + (" + engine inspector" if inspected else ""),
                "tensorrt": describe_flavor(trt),
                "targets": targets,
                "precision": precision,
                "io": io,
                "layers": layers,
                "output_types": counts,
                "engine": inspected,
            },
        )
    metrics: dict[str, Any] = {
        "build_time_s": round(build_time, 3),
        "prepare_time_s": round(prepared - started, 3),  # with naming dims, where done
        "parse_time_s": round(parsed - prepared, 3),
        "engine_size_bytes": size,
        "num_layers": len(layers),
    }
    if inspected is not None and isinstance(inspected.get("Layers"), list):
        metrics["num_engine_layers"] = len(inspected["Layers"])
    resolved = dict(params.resolved)
    resolved.update(
        {
            "tensorrt_version": trt.version,
            "tensorrt_flavor": trt.flavor,
            "target": ",".join(targets),
            "shapes": shapes or None,
            "renamed_dims": renamed or None,
            "timing_cache": timing,
        }
    )
    report.info(
        f"built {out.name}: {size} bytes, {len(layers)} network layers, {build_time:.2f} s "
        f"(layer outputs: {', '.join(f'{k} {v}' for k, v in sorted(counts.items()))})"
    )
    data: dict[str, Any] = dict(io)
    data.update({"engine_path": str(out), "output_types": counts, "prepare": notes})
    data["engine_record"] = record
    return CommandOutput(params=resolved, metrics=metrics, data=data)
