"""The seed 001 and 003 examples against the SSH test device, written as the seeds write them:
``SSHCommandRunner(SSHConfig(host=..., username=...))`` with the user's own ~/.ssh (key,
known_hosts, and a config entry for the port), a custom provider registered on an existing
component (001), per-component config overrides (001), and the ``embedl_onnxruntime`` invoker
(003)."""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from edgehub.core import HubContext
from edgehub.core.compile import ONNXRuntimeCompiledModel, ONNXRuntimeCompiler
from edgehub.core.device import Device, DeviceSpec, ProviderConfig, SSHCommandRunner, SSHConfig
from edgehub.core.device.configs import EmbedlONNXRuntimeConfig
from edgehub.core.invoke import ONNXRuntimeInvoker

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ssh_device.device import SSHDevice

pytestmark = pytest.mark.ssh
MODEL = Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn.onnx"


@dataclass(frozen=True)
class MyBackendConfig(ProviderConfig):
    backend_path: str = "/usr/local/bin/my-backend"
    cli_args: tuple[str, ...] = field(default_factory=tuple)


@ONNXRuntimeCompiler.provider("seed001_ssh_backend")
def _compile_on_my_backend(ctx, onnx_path, *, device=None):  # type: ignore[no-untyped-def]
    dev = ctx.devices[device or "main"]
    cfg = dev.get_provider_config(MyBackendConfig, ONNXRuntimeCompiler)
    backend_path = cfg.backend_path if cfg else "/usr/local/bin/my-backend"
    remote_path = "/tmp/" + onnx_path.name
    dev.runner.put(onnx_path, remote_path)
    output_remote = "/tmp/compiled_" + onnx_path.name
    dev.runner.run([backend_path, remote_path, output_remote, *(cfg.cli_args if cfg else ())])
    local_output = ctx.artifact_dir / ("compiled_" + onnx_path.name)
    dev.runner.get(output_remote, local_output)
    ctx.client.log_artifact(onnx_path, name="input")
    ctx.client.log_artifact(local_output, name="path")
    return ONNXRuntimeCompiledModel.from_current_run(ctx)


@pytest.fixture
def users_ssh(device: SSHDevice, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A home whose ~/.ssh holds the key, known_hosts and a config entry giving the port."""
    ssh = tmp_path / "home" / ".ssh"
    ssh.mkdir(parents=True)
    shutil.copy(device.private_key, ssh / "id_ed25519")
    (ssh / "id_ed25519").chmod(0o600)
    shutil.copy(device.known_hosts, ssh / "known_hosts")
    (ssh / "config").write_text(f"Host {device.host}\n  Port {device.port}\n")
    monkeypatch.setenv("HOME", str(ssh.parent))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)


def test_seed_001_custom_provider_with_overrides(
    device: SSHDevice, users_ssh: None, tmp_path: Path
) -> None:
    runner = SSHCommandRunner(SSHConfig(host=device.host, username=device.username))
    overrides = {ONNXRuntimeCompiler: MyBackendConfig(backend_path="cp")}
    board = Device(
        name="main",
        runner=runner,
        spec=DeviceSpec(device_name="My Device"),
        provider_type="seed001_ssh_backend",
        provider_config=MyBackendConfig(backend_path="/no/such/compile-tool"),
        provider_config_overrides=overrides,
    )
    with HubContext(artifact_base_dir=tmp_path / "store", devices=[board]) as ctx:
        compiled = ONNXRuntimeCompiler().run(ctx, MODEL)
        assert compiled.path.to_local(ctx).local().read_bytes() == MODEL.read_bytes()


def test_seed_003_embedl_onnxruntime_invoker(
    device: SSHDevice, users_ssh: None, tmp_path: Path
) -> None:
    import onnxruntime as ort

    board = Device(
        name="main",
        runner=SSHCommandRunner(SSHConfig(host=device.host, username=device.username)),
        provider_type="embedl_onnxruntime",
        provider_config=EmbedlONNXRuntimeConfig(
            embedl_onnxruntime_path="embedl-onnxruntime",
            cli_args=("--exec-providers", "CPUExecutionProvider"),
        ),
    )
    image = np.random.default_rng(5).standard_normal((1, 3, 32, 32)).astype(np.float32)
    with HubContext(artifact_base_dir=tmp_path / "store", devices=[board]) as ctx:
        result = ONNXRuntimeInvoker().run(
            ctx, ONNXRuntimeCompiledModel.from_path(MODEL), {"image": image}
        )
        assert result.output_file.local().is_file()
    session = ort.InferenceSession(str(MODEL), providers=["CPUExecutionProvider"])
    expected = session.run(None, {"image": image})[0]
    np.testing.assert_allclose(result.output["probabilities"], expected, rtol=1e-5, atol=1e-6)
