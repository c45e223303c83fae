"""Interleaved A/B of two models in one agent process (the runtime's ``<namespace>.ab``) on the
device's agent, inside the comparison's run: per-round block medians, and each model's samples
as ``profile_a.json`` and ``profile_b.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import ProfileError, UsageError
from edgehub.toolchains.agent_call import AgentCall, AgentResult
from edgehub.toolchains.local_session import device_agent

if TYPE_CHECKING:
    from edgehub.core.context import HubContext
    from edgehub.core.runtimes import RuntimeDescriptor


AB_PROVIDERS = ("local", "ssh")  # where one agent process can hold both models


def agent_ab(
    ctx: HubContext,
    runtime: RuntimeDescriptor,
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
    agent: AgentCall | None = None,
) -> AgentResult:
    """The runtime's ``<agent_namespace>.ab`` on ``device``'s agent (``agent`` where the
    runtime brings its own, such as one on this host's GPU); the result's files hold
    ``profile_a.json``/``_b.json``. A descriptor's ``ab`` for a runtime with such a command."""
    provider = ctx.device(device or "local").provider_type
    if provider not in AB_PROVIDERS:
        raise UsageError(
            f"hub exec ab runs on a device with a {' or '.join(AB_PROVIDERS)} provider; "
            f"{device!r} is {provider}: profile each model there and use hub runs compare"
        )
    if agent is None:
        agent = device_agent(ctx, runtime.name, device, runtime.profiler)
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
    command = f"{runtime.agent_namespace}.ab"
    return agent.call(command, request, inputs=inputs, failure=ProfileError)


def check_rounds(result: AgentResult, device: str) -> None:
    """The rounds the verdict is made of: a list of ``{a_ms, b_ms, ratio}``, each a finite positive
    number, or the comparison fails here (a device's NaN or text never reaches the statistics)."""
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
