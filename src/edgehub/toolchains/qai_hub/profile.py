"""The ``qai_hub`` providers of `ONNXRuntimeProfiler` and `TFLiteProfiler`: an inference job
with ``profile=True`` on random inputs, summarized like the local profilers (statistics from
``all_inference_times``, load times, memory ranges, per-layer rows, compute units)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.core.component.provider_type import ProviderType
from edgehub.errors import ModelError, ProfileError
from edgehub.toolchains.onnxruntime.components import (
    ONNXRuntimeProfiler,
    ONNXRuntimeProfilingResult,
)
from edgehub.toolchains.options import provides, read_options
from edgehub.toolchains.outputs import ProfilingResult, log_figures
from edgehub.toolchains.qai_hub.ab import fetched_profile
from edgehub.toolchains.qai_hub.assets import uploaded_model
from edgehub.toolchains.qai_hub.devices import start_on_device
from edgehub.toolchains.qai_hub.jobs import record_qairt, run_job
from edgehub.toolchains.tflite.components import TFLiteProfiler, TFLiteProfilingResult

if TYPE_CHECKING:
    from edgehub.core.context import HubContext


def local_model(ctx: HubContext, model: Any) -> Path:
    """The compiled model's file (or folder) on this machine."""
    path = Path(model.path.to_local(ctx).local())
    if not path.exists():
        raise ModelError(f"model {path} not found; check the path")
    return path


def _report(ctx: HubContext, metrics: dict[str, float], layers: list[dict[str, Any]]) -> None:
    if "latency_median_ms" in metrics:
        ctx.events.info(
            f"latency: median {metrics['latency_median_ms']:.3f} ms, mean "
            f"{metrics['latency_mean_ms']:.3f} ms, p99 {metrics['latency_p99_ms']:.3f} ms over "
            f"{int(metrics['runs'])} runs"
        )
    timed = sorted((r for r in layers if "time_us" in r), key=lambda r: -r["time_us"])
    for row in timed[:5]:
        ctx.events.info(
            f"  {row['name']} ({row['type']}, {row['compute_unit']}): {row['time_us']:.1f} us"
        )


def _register(
    component: type[Any], output_type: type[ProfilingResult], runtime: str, *serves: str
) -> None:
    """``component``'s provider: a profile on AI Hub (``runs``, where served, sets
    ``--max_profiler_iterations``; else the service's own count)."""

    @provides(component, ProviderType.QAI_HUB, *serves)
    def profile_on_qai_hub(ctx: HubContext, model: Any, **options: Any) -> Any:
        o = read_options(component, options)
        path = local_model(ctx, model)
        hub, config = start_on_device(ctx, o.device, component, ProfileError)
        ctx.client.log_param("$runtime", runtime)
        ctx.client.log_artifact(path, name="input")
        runs = o.runs if "runs" in serves else None
        job_options = config.job_options("profile", profiler_iterations=runs)
        ctx.client.log_param("qai_hub_profile_options", job_options)
        job = run_job(
            ctx,
            "profile",
            f"{path}|{job_options}",
            o.device,
            config,
            ProfileError,
            hub.submit_inference_job,
            lambda: {"model": uploaded_model(ctx, path, ProfileError)},
            component,
            inputs=None,
            name=f"{path.stem} profile",
            options=job_options,
            profile=True,
        )
        found = fetched_profile(hub, job)
        record_qairt(ctx, getattr(job, "model", None), config)
        summary = found.summary
        if "latency" not in summary.metrics:
            raise ProfileError(
                f"qai_hub profile job {job.job_id} reported no inference time ({job.url})"
            )
        log_figures(ctx, summary.metrics)
        ctx.client.log_params(summary.params)
        _report(ctx, summary.metrics, summary.layers)
        profile_json = ctx.artifact_dir / "profile.json"
        profile_json.write_text(json.dumps(found.document(), indent=1), encoding="utf-8")
        ctx.client.log_artifact(profile_json, name="output_file")
        return output_type.from_current_run(ctx)


_register(ONNXRuntimeProfiler, ONNXRuntimeProfilingResult, "onnx", "runs")
_register(TFLiteProfiler, TFLiteProfilingResult, "tflite")
