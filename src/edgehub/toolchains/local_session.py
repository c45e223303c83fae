"""What every `local` provider needs: the runtime's pinned container and an agent in it, or
with `device_agent` the agent of an ``ssh`` device for the providers that serve both."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from edgehub.core.device.configs import DockerConfig
from edgehub.limits import env_seconds
from edgehub.runners.outcome import KILLED
from edgehub.runners.protocol import SupportsAgentRelay
from edgehub.toolchains.agent_call import AgentCall, AgentResult
from edgehub.toolchains.outputs import number

if TYPE_CHECKING:
    from edgehub.core.context import HubContext
    from edgehub.runners.docker import DockerCommandRunner


CONTAINER_WORK = PurePosixPath("/work")


def _container(
    ctx: HubContext, runtime: str, device: str | None, component: type[Any]
) -> DockerCommandRunner:
    from edgehub import images

    dev = ctx.device(device or "local")
    config = dev.get_provider_config(DockerConfig, component) or DockerConfig()
    # The runner itself says "not built; run: hub images build RUNTIME" when the tag is absent.
    image = config.image or ctx.image_tags.get(runtime) or images.image_tag(runtime)
    keep_warm = config.keep_warm or env_seconds("EDGEHUB_KEEP_WARM") or None
    return ctx.docker_runner(
        image, cpus=config.cpus, memory=config.memory, keep_warm=keep_warm, host=config.host
    )


def local_agent(
    ctx: HubContext, runtime: str, device: str | None, component: type[Any], scratch: bool = False
) -> AgentCall:
    """An agent in the runtime's container, working in this run's own directory there (its
    image tag and digest recorded in the run's environment), or with ``scratch`` in a new
    temporary directory, for a quick look outside any run (e.g. reading a model's inputs)."""
    runner = _container(ctx, runtime, device, component)
    if scratch:
        local = Path(tempfile.mkdtemp(prefix="edgehub-scratch-"))
    else:
        local = ctx.artifact_dir
        ctx.client.log_environment(
            {"image": runner.image, "image_digest": runner.image_digest, "runtime": runtime}
        )
    return AgentCall(
        runner,
        CONTAINER_WORK / local.name,
        local,
        server=_server_socket(runner),
        explain_exit=_memory_explanation(runner, device or "local"),
        device=device or "local",
    )


def device_agent(
    ctx: HubContext, runtime: str, device: str | None, component: type[Any]
) -> AgentCall:
    """On a device whose runner can keep an agent session (`SupportsAgentRelay`: an ``ssh``
    device), the agent there (the device's Python and runtime); otherwise `local_agent`."""
    if isinstance(ctx.device(device or "local").runner, SupportsAgentRelay):
        from edgehub.toolchains.remote.ssh_agent import ssh_agent

        return ssh_agent(ctx, runtime, device, component)
    return local_agent(ctx, runtime, device, component)


def _memory_explanation(runner: DockerCommandRunner, device: str) -> Callable[[int], str | None]:
    """An agent killed by the container's memory limit: say so, and which setting raises it."""

    def explain(returncode: int) -> str | None:
        if returncode not in KILLED or not runner.out_of_memory():
            return None
        return (
            f"out of memory: the container limit is {runner.memory}; raise "
            f"[devices.{device}.docker] memory in hub.toml"
        )

    return explain


def _server_socket(runner: DockerCommandRunner) -> str | None:
    """A warm container keeps a resident agent (one per agent version) for the next jobs, on a
    socket this process reaches directly where the container offers that channel."""
    if not runner.keep_warm:
        return None
    from edgehub.agent.bundle import agent_hash

    name = f"edgehub-agent-{agent_hash()[:12]}.sock"
    return runner.agent_socket(name) or f"/tmp/{name}"


def inspect_in_image(
    ctx: HubContext,
    runtime: str,
    device: str | None,
    component: type[Any],
    command: str,
    request: dict[str, Any],
    files: dict[str, Path],
) -> dict[str, Any]:
    """Run an agent ``*.inspect`` command in ``runtime``'s image outside any run (its scratch
    directory is removed after); the model's inputs and outputs it reports."""
    from edgehub.errors import InvokeError

    agent = local_agent(ctx, runtime, device, component, scratch=True)
    try:
        result = agent.call(command, request, inputs=files, failure=InvokeError)
    finally:
        shutil.rmtree(agent.local_dir, ignore_errors=True)
    return result.data


def record_agent_result(
    ctx: HubContext, result: AgentResult, *, skip: frozenset[str] = frozenset()
) -> None:
    """Log the agent's params, numeric metrics, warnings and environment on the current run,
    and the ``conditions`` record of a measurement (as ``conditions.*`` environment entries),
    in one transaction."""
    with ctx.client.batch():
        for key, value in result.params.items():
            if key not in skip:
                ctx.client.log_param(key, value)
        metrics = result.metrics.items()
        numeric = {k: n for k, v in metrics if k not in skip and (n := number(v)) is not None}
        if numeric:
            ctx.client.log_metrics(numeric)
        if result.warnings:  # the agent printed them live; keep them with the run
            ctx.client.log_param("warnings", result.warnings)
        env = result.env
        providers = env.get("ort_providers")
        flat = {
            "device_python": env.get("python"),
            "onnxruntime": env.get("onnxruntime"),
            "onnx": env.get("onnx"),
            "numpy": env.get("numpy"),
            "device_platform": env.get("platform"),
            "device_cpu": env.get("cpu_model"),
            "device_cpus": env.get("cpu_affinity_count") or env.get("cpu_count"),
            "agent": env.get("agent_hash"),
            "ort_providers": ",".join(providers) if isinstance(providers, list) else providers,
        }
        ctx.client.log_environment({k: v for k, v in flat.items() if v})
        versions = result.data.get("toolchain") or {}  # the converter's and runtime's (tflite)
        ctx.client.log_environment({k: v for k, v in versions.items() if v})
        conditions = result.data.get("conditions")
        if isinstance(conditions, dict):  # what the timed loop ran under (agent/conditions.py)
            ctx.client.log_environment({f"conditions.{k}": v for k, v in conditions.items()})


def stage_calibration(
    ctx: HubContext, data: Any, files: dict[str, Path], request: dict[str, Any]
) -> Path | None:
    """Stage calibration ``data`` (`~edgehub.toolchains.tensors.calibration_file`) for the
    agent as ``in/calibration[.npz]``, named by ``request["calibration"]`` and kept with the run
    for reruns; None (nothing staged) for none."""
    from edgehub.toolchains.tensors import calibration_file

    calibration = calibration_file(ctx.artifact_dir, data)
    if calibration is not None:
        name = f"calibration{calibration.suffix}"
        files[name] = calibration
        request["calibration"] = f"in/{name}"
        ctx.client.log_artifact(calibration, name="calibration_data")
    return calibration


def log_input(ctx: HubContext, runtime: str, model: Path) -> None:
    """Record the runtime a provider runs and the model file it was given."""
    with ctx.client.batch():
        ctx.client.log_param("$runtime", runtime)
        ctx.client.log_artifact(model, name="input")


def input_dict(input_data: Any) -> dict[str, Any]:
    """``input_data`` as an invoker takes it: input name -> array."""
    from edgehub.errors import InputDataError

    if not isinstance(input_data, dict):
        raise InputDataError(
            f"input_data must be a dict of input name -> array, got {type(input_data).__name__}"
        )
    return input_data


def saved_inputs(ctx: HubContext, input_data: Any) -> Path:
    """An invoker's ``input_data`` saved as the run's ``input.npz``, kept with the run."""
    from edgehub.toolchains.tensors import save_npz

    inputs = save_npz(ctx.artifact_dir / "input.npz", input_dict(input_data))
    ctx.client.log_artifact(inputs, name="input_data")
    return inputs


def stored_outputs(ctx: HubContext, result: AgentResult) -> Any:
    """The agent's ``output.npz`` kept as the run's ``output_file``, read lazily from there."""
    from edgehub.toolchains.npz_arrays import NpzArrays

    stored = ctx.client.log_artifact(result.file("output.npz"), name="output_file")
    return NpzArrays(Path(stored.file_path))
