"""Interleaved A/B of two models in one agent process (``ort.ab``, ``tflite.ab``, ``trt.ab``),
on the device's agent: the runtime's warm container on this host, or the resident agent of an
``ssh`` device; TensorRT engines in the full tensorrt image on this host's GPU.

Called inside the comparison's run: the models and inputs are staged from its directory, and
the agent's result (per-round block medians, each model's samples as ``profile_a.json`` and
``profile_b.json``) comes back into it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import ProfileError, UsageError
from edgehub.toolchains.agent_call import AgentResult
from edgehub.toolchains.remote.select import device_agent

if TYPE_CHECKING:
    from edgehub.core.context import HubContext

__all__ = ["AB_COMMANDS", "AB_PROVIDERS", "run_ab_agent"]

AB_PROVIDERS = ("local", "ssh")  # where one agent process can hold both models
AB_COMMANDS = {"onnxruntime": "ort.ab", "tflite": "tflite.ab", "tensorrt": "trt.ab"}


def run_ab_agent(
    ctx: HubContext,
    runtime: str,
    profiler: type[Any],
    model_a: Path,
    model_b: Path,
    *,
    device: str | None,
    rounds: int,
    block_ms: int,
    warmup: int,
    seed: int,
    input_data: Path | None = None,
    input_shape: Any = None,
) -> AgentResult:
    """Run ``runtime``'s A/B command on ``device`` (where ``profiler`` runs); the result's
    files hold ``profile_a.json``/``_b.json``."""
    provider = ctx.device(device or "local").provider_type
    if provider not in AB_PROVIDERS:
        raise UsageError(
            f"hub exec ab runs on a device with a {' or '.join(AB_PROVIDERS)} provider; "
            f"{device!r} is {provider}: profile each model there and use hub runs compare"
        )
    if runtime == "tensorrt":
        if provider != "local":
            raise UsageError(
                f"hub exec ab tensorrt runs on this host's GPU (a local device); {device!r} is "
                f"{provider}: profile each engine there and use hub runs compare"
            )
        from edgehub.toolchains.tensorrt.local import gpu_agent

        agent = gpu_agent(ctx, device)
    else:
        agent = device_agent(ctx, runtime, device, profiler)
    # their own names (the agent's messages name them), B's prefixed where A has its name
    name_a = model_a.name
    name_b = model_b.name if model_b.name != name_a else f"B-{model_b.name}"
    inputs = {name_a: model_a, name_b: model_b}
    request: dict[str, Any] = {
        "model_a": f"in/{name_a}",
        "model_b": f"in/{name_b}",
        "rounds": rounds,
        "block_ms": block_ms,
        "warmup": warmup,
        "seed": seed,
        "input_shape": input_shape,
        "profile_json_a": "out/profile_a.json",
        "profile_json_b": "out/profile_b.json",
    }
    if input_data is not None:
        inputs[f"input_data{input_data.suffix}"] = input_data
        request["input_data"] = f"in/input_data{input_data.suffix}"
    result = agent.call(AB_COMMANDS[runtime], request, inputs=inputs, failure=ProfileError)
    _check_rounds(result, device or "local")
    return result


def _check_rounds(result: AgentResult, device: str) -> None:
    """The rounds the verdict is made of: a list of ``{a_ms, b_ms, ratio}``, each a finite
    positive number, or the comparison fails here (a device's NaN or text never reaches the
    statistics)."""
    from edgehub.tracking.verdict_numbers import number_problem

    rounds = result.data.get("rounds")
    if not isinstance(rounds, list) or not all(isinstance(r, dict) for r in rounds):
        raise ProfileError(
            f"{result.command} on device {device!r} returned no list of rounds; "
            "the comparison is invalid"
        )
    for key in ("ratio", "a_ms", "b_ms"):
        problem = number_problem([r.get(key) for r in rounds], f"round values {key!r}")
        if problem is not None:
            raise ProfileError(
                f"{result.command} on device {device!r} returned {problem}; the comparison is "
                "invalid, so its run is recorded FAILED"
            )
