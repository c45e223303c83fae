"""`check_device` / `inspect_device`: can edgehub use a device of hub.toml right now, and for
what?

Local devices need the Docker daemon; ``qai_hub`` devices need an accepted client and a token
(checked offline); devices with an ``ssh`` table are connected to (host key checked against
known_hosts) and probed in ONE remote command: OS, architecture, the Pythons found (``python3``
and the one beside ``embedl-onnxruntime``) with the runtimes each can import, and the
``embedl-onnxruntime`` and ``trtexec`` commands the device's settings name.
"""

from __future__ import annotations

import platform
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from edgehub.errors import EdgehubError
from edgehub.ops.doctor import Check

if TYPE_CHECKING:
    from edgehub.core.device.spec import Device
    from edgehub.ops.project import Project


# $1 embedl-onnxruntime, $2 trtexec, $3 python, $4 the Python probe; one line per finding.
_PROBE_SH = r"""
echo "os $(uname -s) $(uname -r)"
echo "arch $(uname -m)"
e=$(command -v "$1" 2>/dev/null) && echo "tool embedl_onnxruntime $e"
t=$(command -v "$2" 2>/dev/null) && echo "tool trtexec $t"
beside=""
[ -n "$e" ] && beside="$(dirname "$(readlink -f "$e")")/python3"
for py in "$3" "$beside"; do
  [ -n "$py" ] && command -v "$py" >/dev/null 2>&1 && "$py" -c "$4" 2>/dev/null
done
exit 0
"""
# Python >= 3.8 only reads metadata: no runtime is imported (fast, no side effects);
# `_probe_py` puts PACKAGES, the (module, distribution) pairs to look for, in front.
_PROBE_PY = """
import sys
try:
    from importlib import metadata, util
except ImportError:
    sys.exit(0)
print("python", sys.executable, "%d.%d.%d" % sys.version_info[:3])
for module, dist in PACKAGES:
    if util.find_spec(module) is not None:
        try:
            version = metadata.version(dist)
        except Exception:
            version = "?"
        print("runtime", sys.executable, module, version)
"""


@dataclass
class DeviceReport:
    """What `inspect_device` found; ``error`` is set when the device could not be probed."""

    name: str
    provider: str
    reachable: bool = False
    error: str | None = None
    os: str | None = None
    arch: str | None = None
    pythons: list[dict[str, str]] = field(default_factory=list)
    runtimes: list[dict[str, str]] = field(default_factory=list)
    tools: dict[str, str] = field(default_factory=dict)
    providers: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        if self.error:
            return self.error
        parts = [f"{self.os or '?'} {self.arch or '?'}"]
        parts += [f"python {p['version']} ({p['path']})" for p in self.pythons]
        parts += [f"{r['runtime']} {r['version']}" for r in self.runtimes]
        parts.append(f"serves: {', '.join(self.providers) or 'nothing edgehub knows'}")
        return "; ".join(parts)


def inspect_device(project: Project, name: str, *, timeout: float = 20.0) -> DeviceReport:
    """Probe device ``name`` (see the module docstring); never raises for an unreachable one."""
    from edgehub.config.devices import to_device

    config = project.config
    device = to_device(config, name)
    section = config.devices[name]
    report = DeviceReport(name, section.provider or "local")
    if section.provider == "qai_hub":
        from edgehub.toolchains.qai_hub import check_qai_hub

        return _service(report, check_qai_hub())
    if section.provider == "aws":
        from edgehub.toolchains.aws.check import check_device_farm
        from edgehub.toolchains.aws.config import DeviceFarmConfig

        farm_config = device.get_provider_config(DeviceFarmConfig) or DeviceFarmConfig()
        farm = check_device_farm(farm_config, section.spec, name)
        report.os = farm.message if farm.ok else ""
        return _service(report, farm)
    if device.runner is None or section.provider == "local":
        return _local(report)
    argv = ["sh", "-c", _PROBE_SH, "edgehub-check", *_tool_paths(device), _probe_py()]
    try:
        with device.runner as runner:
            result = runner.run(argv, hide=True, timeout=timeout, check=False)
    except EdgehubError as error:
        report.error = str(error)
        return report
    if not result.ok:
        report.error = (result.stderr or result.stdout).strip()[:200] or "probe failed"
        return report
    report.reachable = True
    _read_probe(report, result.stdout)
    return report


def _service(report: DeviceReport, check: Any) -> DeviceReport:
    """``report`` of a cloud service's device, from the offline ``check`` of its client."""
    report.reachable = check.ok
    report.error = None if check.ok else check.message
    report.providers = [report.provider] if check.ok else []
    return report


def _probe_py() -> str:
    """`_PROBE_PY` looking for the packages every registered runtime declares it comes in
    (``device_packages``)."""
    from edgehub.core.runtimes import all_runtimes

    packages = [list(p) for r in all_runtimes().values() for p in r.device_packages]
    return f"PACKAGES = {packages!r}\n{_PROBE_PY}"


def _tool_paths(device: Device) -> tuple[str, str, str]:
    from edgehub.core.device.configs import EmbedlONNXRuntimeConfig, TrtexecConfig

    def config_of(kind: type[Any]) -> Any:
        try:
            return device.get_provider_config(kind) or kind()
        except TypeError:  # the device's config is for another provider
            return kind()

    embedl = config_of(EmbedlONNXRuntimeConfig).embedl_onnxruntime_path
    trtexec = config_of(TrtexecConfig).trtexec_path
    return str(embedl), str(trtexec), "python3"


def _read_probe(report: DeviceReport, text: str) -> None:
    seen: set[str] = set()
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        words = rest.split()
        if kind == "os":
            report.os = rest.strip()
        elif kind == "arch":
            report.arch = rest.strip()
        elif kind == "tool" and len(words) >= 2:
            report.tools[words[0]] = " ".join(words[1:])
        elif kind == "python" and len(words) >= 2 and words[0] not in seen:
            seen.add(words[0])
            report.pythons.append({"path": words[0], "version": words[1]})
        elif kind == "runtime" and len(words) >= 3:
            entry = {"python": words[0], "runtime": words[1], "version": words[2]}
            if entry not in report.runtimes:
                report.runtimes.append(entry)
    report.providers = [name for name in ("embedl_onnxruntime", "trtexec") if name in report.tools]


def _local(report: DeviceReport) -> DeviceReport:
    from edgehub import images

    try:
        images.docker_client().close()
    except EdgehubError as error:
        report.error = str(error)
        return report
    uname = platform.uname()
    report.os, report.arch = f"{uname.system} {uname.release}", uname.machine
    report.reachable = True
    report.providers = ["local"]
    return report


def check_device(project: Project, name: str, *, timeout: float = 20.0) -> Check:
    """One `Check` for device ``name``: ``ok``, ``FAIL`` or ``warn`` (it serves none of the
    providers edgehub knows)."""
    section = project.config.devices.get(name)
    if section is not None and section.labgrid is not None:
        from edgehub.ops.devices import pool_places

        places = pool_places(project, name)
        state = "FAIL" if places.startswith(("pool unreachable", "no matching")) else "ok"
        return Check(name, state, f"labgrid pool: {places}")
    report = inspect_device(project, name, timeout=timeout)
    if report.provider == "aws":
        return Check(name, "ok" if report.reachable else "FAIL", report.os or report.error or "")
    if not report.reachable:
        return Check(name, "FAIL", report.error or "unreachable")
    if report.provider == "local":
        return Check(name, "ok", "Docker daemon reachable")
    if report.provider == "qai_hub":
        return Check(name, "ok", "Qualcomm AI Hub client and token ready")
    state = "ok" if report.provider in report.providers else "warn"
    return Check(name, state, report.summary())
