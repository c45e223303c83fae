"""The one cache folder and the environment's odd values, through the real `hub` entry point.

Every cache lives under `edgehub.paths.cache_dir` (``EDGEHUB_CACHE_DIR``, else
``XDG_CACHE_HOME/edgehub``, else ``~/.cache/edgehub``); a folder on the way that is a link, or
another user's, is refused in one line before anything is written or chmod-ed in it (a
co-tenant's planted ``edgehub/warm`` link is simulated by planting it here: CI runs as root).
``DOCKER_HOST=unix://`` is refused naming the variable. AWS cannot be reached from a test: the
region rule is checked through `hub devices check`, where a refused ARN stops before any call,
and the region a call goes to is read from the request's signature by a stand-in for Device
Farm on 127.0.0.1 (``AWS_ENDPOINT_URL_DEVICE_FARM``), answering every call with an error.
"""

from __future__ import annotations

import http.server
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HUB = str(Path(sys.executable).with_name("hub"))
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn.onnx"
_CACHE_VARIABLES = ("EDGEHUB_CACHE_DIR", "XDG_CACHE_HOME", "DOCKER_HOST", "EDGEHUB_KEEP_WARM")


def hub(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in _CACHE_VARIABLES}
    return subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, timeout=300, env={**base, **env}
    )


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "hub.toml").write_text('[project]\nname = "cache"\nstore = ".hub"\n')
    (root / "tiny_cnn.onnx").write_bytes(EXAMPLE.read_bytes())
    return root


# -- the cache folder ------------------------------------------------------------------------
@pytest.mark.docker
def test_a_planted_warm_link_is_refused_and_its_target_keeps_its_mode(
    ort_image: str, project: Path, tmp_path: Path
) -> None:
    shared = tmp_path / "shared-cache"  # an XDG_CACHE_HOME that a co-tenant may write
    target = tmp_path / "victim"
    (target / "0000aaaa1111bbbb").mkdir(parents=True)  # what a reaper through the link removes
    old = 1_000_000_000
    os.utime(target / "0000aaaa1111bbbb", (old, old))
    target.chmod(0o755)
    (shared / "edgehub").mkdir(parents=True)
    (shared / "edgehub" / "warm").symlink_to(target)
    env = {"HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(shared), "EDGEHUB_KEEP_WARM": "5"}
    done = hub(project, "exec", "compile", "onnxruntime", "tiny_cnn.onnx", **env)
    assert done.returncode == 3, done.stderr
    line = one_line(done)
    assert str(shared / "edgehub" / "warm") in line and "symbolic link" in line
    assert "EDGEHUB_CACHE_DIR" in line  # how to get out of it
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    assert (target / "0000aaaa1111bbbb").is_dir()
    assert (shared / "edgehub" / "warm").is_symlink()


@pytest.mark.docker
def test_a_cache_folder_of_another_user_is_refused(
    ort_image: str, project: Path, tmp_path: Path
) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root (as in CI)")
    shared = tmp_path / "shared-cache"
    (shared / "edgehub" / "warm").mkdir(parents=True)
    for folder in (shared / "edgehub", shared / "edgehub" / "warm"):
        folder.chmod(0o777)
        os.chown(folder, 65534, 65534)
    env = {"HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(shared)}
    done = hub(project, "exec", "compile", "onnxruntime", "tiny_cnn.onnx", **env)
    assert done.returncode == 3, done.stderr
    line = one_line(done)
    assert str(shared / "edgehub") in line and "another user" in line
    assert files_under(shared) == ["edgehub", "edgehub/warm"]  # nothing written in it
    assert stat.S_IMODE((shared / "edgehub" / "warm").stat().st_mode) == 0o777


@pytest.mark.docker
def test_edgehub_cache_dir_holds_every_cache_of_a_compile_and_a_profile(
    ort_image: str, project: Path, tmp_path: Path
) -> None:
    home, xdg, cache = tmp_path / "home", tmp_path / "xdg", tmp_path / "cache"
    home.mkdir()
    xdg.mkdir()
    env = {"HOME": str(home), "XDG_CACHE_HOME": str(xdg), "EDGEHUB_CACHE_DIR": str(cache)}
    for keep_warm in ("0", "5"):  # a container per job, then a warm one with its channel
        for step in ("compile", "profile"):
            done = hub(
                project,
                "exec",
                step,
                "onnxruntime",
                "tiny_cnn.onnx",
                EDGEHUB_KEEP_WARM=keep_warm,
                **env,
            )
            assert done.returncode == 0, done.stderr
    assert files_under(home) == [] and files_under(xdg) == []
    made = {p.name for p in cache.iterdir()}
    assert {"agent", "owners", "warm"} <= made, made
    for folder in [cache, *(p for p in cache.iterdir() if p.is_dir() and not p.is_symlink())]:
        assert stat.S_IMODE(folder.lstat().st_mode) == 0o700, folder


def test_a_relative_cache_variable_is_refused_naming_it(project: Path, tmp_path: Path) -> None:
    for name in ("EDGEHUB_CACHE_DIR", "XDG_CACHE_HOME"):
        done = hub(project, "exec", "compile", "onnxruntime", "tiny_cnn.onnx", **{name: "rel"})
        assert done.returncode == 2, done.stderr
        line = one_line(done)
        assert f"{name}='rel'" in line and "absolute" in line
    assert not (project / "rel").exists()


@pytest.mark.parametrize("value", ["abc", "-5", "inf"])
def test_a_malformed_keep_warm_is_refused_naming_it(project: Path, value: str) -> None:
    done = hub(project, "exec", "compile", "onnxruntime", "tiny_cnn.onnx", EDGEHUB_KEEP_WARM=value)
    assert done.returncode == 2, done.stderr
    assert f"EDGEHUB_KEEP_WARM={value!r}" in one_line(done)


# -- DOCKER_HOST -----------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["unix://", "unix://docker.sock", "tcp://", "bogus://host"])
def test_a_docker_host_that_names_no_daemon_is_refused_naming_it(project: Path, value: str) -> None:
    for args in (("exec", "compile", "onnxruntime", "tiny_cnn.onnx"), ("images", "list")):
        done = hub(project, *args, DOCKER_HOST=value)
        assert done.returncode == 2, done.stderr
        line = one_line(done)
        assert line.startswith(f"hub: error: DOCKER_HOST={value!r}") and "unset it" in line


def test_doctor_reports_a_malformed_docker_host_as_a_failed_check(project: Path) -> None:
    done = hub(project, "doctor", DOCKER_HOST="unix://")
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    (row,) = [line for line in done.stdout.splitlines() if line.startswith("docker daemon")]
    assert "FAIL" in row and "DOCKER_HOST='unix://'" in row


# -- AWS Device Farm regions -----------------------------------------------------------------
PROJECT_EU = "arn:aws:devicefarm:eu-central-1:123456789012:project:5e01a8c7-c861-4c0a-b1d5"
DEVICE_EU = "arn:aws:devicefarm:eu-central-1::device:A0C0F5C1F9D04C5D9F2E4A1EXAMPLE"
PROJECT_US = PROJECT_EU.replace("eu-central-1", "us-west-2")


class FarmStandin:
    """Device Farm's endpoint on 127.0.0.1: remembers each request's signing scope and
    refuses it as the service refuses unknown credentials."""

    def __init__(self) -> None:
        self.scopes: list[str] = []
        standin = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                auth = self.headers.get("Authorization", "")
                standin.scopes.append(auth.split("Credential=", 1)[-1].split(",", 1)[0])
                body = b'{"__type":"UnrecognizedClientException","message":"stand-in"}'
                self.send_response(400)
                self.send_header("Content-Type", "application/x-amz-json-1.1")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def farm() -> Iterator[FarmStandin]:
    pytest.importorskip("botocore", reason="needs botocore (edgehub[aws])")
    standin = FarmStandin()
    yield standin
    standin.server.shutdown()


def aws_project(tmp_path: Path, **settings: str) -> tuple[Path, dict[str, str]]:
    (tmp_path / "bm").write_bytes(b"\x7fELF")
    (tmp_path / "m.tflite").write_bytes(b"TFL3")
    lines = "".join(f'{key} = "{value}"\n' for key, value in settings.items())
    (tmp_path / "hub.toml").write_text(
        '[devices.phone]\nprovider = "aws"\nspec = "Pixel 8"\n\n[devices.phone.aws]\n'
        f'benchmark_binary = "bm"\n{lines}'
    )
    env = {
        "HOME": str(tmp_path),
        "AWS_ACCESS_KEY_ID": "AKIDTEST",
        "AWS_SECRET_ACCESS_KEY": "x",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-aws-credentials"),
    }
    return tmp_path, env


def test_an_arn_of_another_region_than_the_configured_one_is_refused(
    farm: FarmStandin, tmp_path: Path
) -> None:
    root, env = aws_project(tmp_path, project_arn=PROJECT_EU, region="us-west-2")
    env["AWS_ENDPOINT_URL_DEVICE_FARM"] = farm.url
    done = hub(root, "devices", "check", "phone", **env)
    assert done.returncode != 0
    assert "project_arn is in eu-central-1" in done.stdout + done.stderr
    assert 'region = "us-west-2"' in done.stdout + done.stderr
    assert farm.scopes == []  # refused before any call
    done = hub(root, "exec", "profile", "tflite", "m.tflite", "--device", "phone", **env)
    assert done.returncode == 2, done.stderr
    line = one_line(done)
    assert "project_arn is in eu-central-1" in line and 'set region = "eu-central-1"' in line
    assert farm.scopes == []


def test_arns_of_two_regions_are_refused(farm: FarmStandin, tmp_path: Path) -> None:
    root, env = aws_project(tmp_path, project_arn=PROJECT_US, device_arn=DEVICE_EU)
    env["AWS_ENDPOINT_URL_DEVICE_FARM"] = farm.url
    done = hub(root, "exec", "profile", "tflite", "m.tflite", "--device", "phone", **env)
    assert done.returncode == 2, done.stderr
    line = one_line(done)
    assert "project_arn in us-west-2" in line and "device_arn in eu-central-1" in line
    assert farm.scopes == []


def test_without_a_region_the_calls_go_to_the_arns_region(
    farm: FarmStandin, tmp_path: Path
) -> None:
    root, env = aws_project(tmp_path, project_arn=PROJECT_EU, device_arn=DEVICE_EU)
    env["AWS_ENDPOINT_URL_DEVICE_FARM"] = farm.url
    done = hub(root, "devices", "check", "phone", **env)
    assert done.returncode != 0  # the stand-in refuses the credentials
    assert farm.scopes and all("/eu-central-1/devicefarm/" in s for s in farm.scopes), farm.scopes
