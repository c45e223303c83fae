"""``benchmark_params``: TFLite benchmark_model's documented parameters (any other key is a
`UsageError` naming the closest known one), mapped onto the local profiler: those the LiteRT
Python interpreter can honour become profiler options, the rest are recorded as not applicable.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from edgehub.errors import UsageError

# key -> (profiler option, value kind); option None: documented, not applicable locally.
_APPLIED: dict[str, tuple[str, str]] = {
    "num_threads": ("threads", "int"),
    "num_runs": ("runs", "int"),
    "warmup_runs": ("warmup", "int"),
    "use_xnnpack": ("xnnpack", "bool"),
    "enable_op_profiling": ("op_profiling", "bool"),
    "max_secs": ("max_secs", "float"),
    "run_delay": ("run_delay", "float"),
}
_NOT_APPLICABLE = frozenset((
    # the model is the profiler's model argument
    "graph",
    # benchmark tool behaviour
    "min_secs", "warmup_min_secs", "run_frequency", "benchmark_name", "output_prefix",
    "verbose", "dry_run", "max_profiling_buffer_entries",
    "allow_dynamic_profiling_buffer_increase", "profiling_output_csv_file",
    "op_profiling_output_mode", "op_profiling_output_file", "print_preinvoke_state",
    "print_postinvoke_state", "report_peak_memory_footprint",
    "memory_footprint_check_interval_ms", "release_dynamic_tensors",
    "optimize_memory_for_large_tensors", "enable_platform_tracing",
    # model inputs (use input_data / input_shape instead)
    "input_layer", "input_layer_shape", "input_layer_value_range", "input_layer_value_files",
    # delegates
    "max_delegated_partitions", "min_nodes_per_partition", "delegate_serialize_dir",
    "delegate_serialize_token", "require_full_delegation", "allow_fp16", "use_gpu",
    "gpu_precision_loss_allowed", "gpu_experimental_enable_quant",
    "gpu_inference_for_sustained_speed", "gpu_backend", "gpu_wait_type", "use_nnapi",
    "nnapi_execution_preference", "nnapi_execution_priority", "nnapi_accelerator_name",
    "disable_nnapi_cpu", "nnapi_allow_fp16", "nnapi_allow_dynamic_dimensions",
    "nnapi_use_burst_mode", "use_hexagon", "hexagon_profiling", "hexagon_lib_path",
    "xnnpack_force_fp16", "use_coreml", "coreml_version", "external_delegate_path",
    "external_delegate_options", "stable_delegate_loader_settings",
))  # fmt: skip
BENCHMARK_KEYS = frozenset(_APPLIED) | _NOT_APPLICABLE


@dataclass
class BenchmarkSettings:
    """What ``benchmark_params`` asks of the local profiler."""

    options: dict[str, Any] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    params: dict[str, str] = field(default_factory=dict)


def _value(key: str, kind: str, raw: Any) -> Any:
    text = str(raw).strip()
    try:
        if kind == "bool":
            if isinstance(raw, bool):
                return raw
            if text.lower() in ("true", "1"):
                return True
            if text.lower() in ("false", "0"):
                return False
            raise ValueError(text)
        if kind == "int":
            if isinstance(raw, bool):
                raise ValueError(text)
            return int(text)
        return float(text)
    except ValueError:
        expected = {"bool": "true or false", "int": "an integer", "float": "a number"}[kind]
        raise UsageError(f"benchmark_params {key!r} must be {expected}, got {raw!r}") from None


def parse_benchmark_params(raw: Mapping[str, Any] | None) -> BenchmarkSettings:
    """Validate ``raw`` and split it into profiler options and not-applicable keys."""
    settings = BenchmarkSettings()
    if raw is None:
        return settings
    if not isinstance(raw, Mapping):
        raise UsageError(
            f"benchmark_params must be a dict of benchmark_model parameters, got "
            f"{type(raw).__name__}"
        )
    for key, value in raw.items():
        name = str(key).lstrip("-")
        if name not in BENCHMARK_KEYS:
            close = difflib.get_close_matches(name, sorted(BENCHMARK_KEYS), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UsageError(
                f"unknown benchmark_params key {key!r}{hint} (known: TFLite benchmark_model's "
                "documented parameters, e.g. num_threads, num_runs, warmup_runs, use_xnnpack, "
                "enable_op_profiling)"
            )
        settings.params[name] = str(value)
        if name in _APPLIED:
            option, kind = _APPLIED[name]
            settings.options[option] = _value(name, kind, value)
        else:
            settings.ignored.append(name)
    threads = settings.options.get("threads")
    if threads is not None and threads < 1:
        settings.options["threads"] = None  # benchmark_model's -1: the platform default
    for option in ("runs", "warmup"):
        if option in settings.options and settings.options[option] < (1 if option == "runs" else 0):
            raise UsageError(
                f"benchmark_params {option!r} is {settings.options[option]}: must be at least "
                f"{1 if option == 'runs' else 0}"
            )
    return settings
