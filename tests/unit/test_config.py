"""hub.toml: loading, error messages, comment-preserving atomic saves, and building devices.

Component classes are resolved through an injected fake ``component_lookup``, so these tests do
not depend on the toolchain modules.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, cast

import pytest

from edgehub.config import (
    ConfigDocument,
    HubConfig,
    ProviderSettings,
    default_component_lookup,
    default_config,
    find_config,
    load_config,
    parse_config,
    to_device,
    to_devices,
)
from edgehub.core.device import (
    DockerConfig,
    EmbedlONNXRuntimeConfig,
    LocalCommandRunner,
    TrtexecConfig,
)
from edgehub.errors import ConfigError, DeviceError

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "hub.toml"
UNCOMMENT = re.compile(r"(?m)^# (?=\[|[A-Za-z_\"][\w.\"-]*\s*=)")


class FakeProfiler:
    """Stands in for ONNXRuntimeProfiler (the component modules may not exist yet)."""


class FakeCompiler:
    """Stands in for ONNXRuntimeCompiler."""


FAKE_COMPONENTS: dict[str, type] = {
    "ONNXRuntimeProfiler": FakeProfiler,
    "ONNXRuntimeCompiler": FakeCompiler,
}


def fake_lookup(name: str) -> type:
    return FAKE_COMPONENTS[name]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "hub.toml"
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def load_error(tmp_path: Path, text: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert "\n" not in message
    return message


# --- the example ----------------------------------------------------------------------------


def test_example_hub_toml_loads() -> None:
    config = load_config(EXAMPLE)
    assert config.path == EXAMPLE
    assert config.root == REPO
    assert config.project.name == "edgehub-example"
    assert config.store_dir == REPO / ".hub"
    assert list(config.devices) == ["local"]
    local = config.devices["local"]
    assert local.provider == "local" and not local.implicit
    assert local.settings == ProviderSettings(DockerConfig)


def test_example_commented_devices_are_valid(tmp_path: Path) -> None:
    """Uncommenting every example block of the repo's hub.toml gives a valid config."""
    text = UNCOMMENT.sub("", EXAMPLE.read_text(encoding="utf-8"))
    config = parse_config(text, tmp_path / "hub.toml")
    assert list(config.devices) == ["local", "rpi", "jetson", "s24", "pixel", "npu-board"]
    assert {device.provider for device in config.devices.values()} == {
        "local",
        "embedl_onnxruntime",
        "trtexec",
        "qai_hub",
        "aws",
        "my_npu_backend",
    }
    assert "ONNXRuntimeProfiler" in config.devices["rpi"].overrides
    devices = to_devices(
        config, component_lookup=fake_lookup, environ={"JETSON_PASSWORD": "from-env"}
    )
    assert [device.name for device in devices] == list(config.devices)


def test_find_config_walks_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, '[project]\nname = "up"\n')
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    assert find_config(nested) == path
    monkeypatch.chdir(nested)
    config = load_config()
    assert config.path == path and config.project.name == "up"


def test_no_file_gives_default_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if find_config(tmp_path) is not None:
        pytest.skip("a hub.toml exists above the temporary directory")
    monkeypatch.chdir(tmp_path)
    config = load_config()
    assert config == default_config(tmp_path)
    assert config.path is None
    assert config.project.name == tmp_path.name
    assert config.store_dir == tmp_path / ".hub"
    assert list(config.devices) == ["local"] and config.devices["local"].implicit


def test_missing_file_names_it_and_suggests_init(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "hub.toml"
    with pytest.raises(ConfigError, match=r"no such file") as info:
        load_config(missing)
    assert str(missing) in str(info.value)
    assert "hub init" in str(info.value) and "example" in str(info.value)


# --- error messages -------------------------------------------------------------------------


def test_syntax_error_has_line_and_column(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    message = load_error(
        tmp_path,
        """
        [project]
        name = "demo"
        port = 22x
        """,
        monkeypatch,
    )
    assert message.startswith("hub.toml:3:10: invalid TOML (")
    assert message.endswith(": port = 22x")


def test_typo_names_line_and_suggests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    message = load_error(
        tmp_path,
        """
        [project]
        name = "demo"

        [devices.rpi]
        provider = "embedl_onnxruntime"
        [devices.rpi.ssh]
        hots = "192.168.1.20"
        user = "pi"
        """,
        monkeypatch,
    )
    assert message == "hub.toml:7: unknown key 'devices.rpi.ssh.hots'; did you mean 'host'?"


def test_error_names_the_file_outside_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    path = write(tmp_path, "[projct]\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == f"{path}:1: unknown key 'projct'; did you mean 'project'?"


def test_wrong_type(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    message = load_error(
        tmp_path,
        """
        [devices.rpi]
        provider = "embedl_onnxruntime"

        [devices.rpi.ssh]
        host = "pi.local"
        user = "pi"
        port = "22x"
        """,
        monkeypatch,
    )
    assert message == 'hub.toml:7: devices.rpi.ssh.port must be an integer, got "22x"'


def test_password_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    message = load_error(
        tmp_path,
        """
        [devices.rpi]
        provider = "embedl_onnxruntime"
        [devices.rpi.ssh]
        host = "pi.local"
        user = "pi"
        password = "hunter2"
        """,
        monkeypatch,
    )
    assert message.startswith("hub.toml:6: devices.rpi.ssh.password: ")
    assert "never stored in hub.toml" in message
    assert "key file" in message and 'password_env = "' in message
    assert "hunter2" not in message


def test_unknown_override_component(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    message = load_error(
        tmp_path,
        """
        [devices.rpi]
        provider = "embedl_onnxruntime"

        [devices.rpi.overrides.ONNXRuntimeProfilr.embedl_onnxruntime]
        cli_args = ["--exec-providers", "CPUExecutionProvider"]
        """,
        monkeypatch,
    )
    assert message == (
        "hub.toml:4: unknown component 'ONNXRuntimeProfilr' in devices.rpi.overrides; "
        "did you mean 'ONNXRuntimeProfiler'?"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            '[devices.rpi]\nprovider = "embedl_onnxruntime"\n[devices.rpi.trtexec]\npath = "x"\n',
            "hub.toml:3: [devices.rpi.trtexec] does not apply to provider 'embedl_onnxruntime'; "
            "its settings go in [devices.rpi.embedl_onnxruntime]",
            id="settings-table-of-another-provider",
        ),
        pytest.param(
            '[devices.s24]\nprovider = "qai_hub"\nspec = "S24"\n[devices.s24.docker]\ncpus = 1\n',
            "hub.toml:4: [devices.s24.docker] does not apply to provider 'qai_hub', which takes "
            "no settings table in hub.toml",
            id="settings-table-for-cloud",
        ),
        pytest.param(
            '[devices.s24]\nprovider = "qai_hub"\n',
            "hub.toml:1: [devices.s24] needs spec = \"<catalog device name>\" for 'qai_hub'",
            id="cloud-needs-spec",
        ),
        pytest.param(
            '[devices.local]\n[devices.local.ssh]\nhost = "h"\nuser = "u"\n',
            "hub.toml:2: [devices.local.ssh] does not apply to provider 'local', which runs on "
            "this host; remove it or change the provider",
            id="ssh-on-local",
        ),
        pytest.param(
            '[devices.rpi]\nprovider = "trtexec"\n[devices.rpi.ssh]\nuser = "pi"\n',
            "hub.toml:3: [devices.rpi.ssh] needs 'host'",
            id="ssh-needs-host",
        ),
        pytest.param(
            '[devices.j]\nprovider = "trtexec"\n[devices.j.trtexec]\ncli_args = "--fp16"\n',
            'hub.toml:4: devices.j.trtexec.cli_args must be an array of strings, got "--fp16" '
            '(write ["--fp16"])',
            id="cli-args-string",
        ),
        pytest.param(
            '[devices.local.docker]\nmemory = "lots"\n',
            'hub.toml:2: devices.local.docker.memory must be a size like "4g" or "512m", '
            'got "lots"',
            id="memory-format",
        ),
        pytest.param(
            "[devices.local.docker]\ncpus = 0\n",
            "hub.toml:2: devices.local.docker.cpus must be greater than 0, got 0",
            id="cpus-positive",
        ),
        pytest.param(
            '[devices."my rpi"]\nprovider = "x"\n',
            "hub.toml:1: device name 'my rpi' is not allowed: use letters, digits, '_' and '-', "
            "starting with a letter or digit",
            id="device-name",
        ),
        pytest.param(
            '[images]\nonnxrutime = "x"\n',
            "hub.toml:2: unknown key 'images.onnxrutime'; did you mean 'onnxruntime'?",
            id="image-runtime-typo",
        ),
        pytest.param(
            '[devices.s24]\nprovider = "qai_hub"\nspec = "S24"\napi_token = "abc"\n',
            "hub.toml:4: devices.s24.api_token: secrets are never stored in hub.toml; set them "
            "in the environment instead",
            id="token-refused",
        ),
        pytest.param(
            '[devices.rpi]\nprovider = "trtexec"\n[devices.rpi.ssh]\nhost = "h"\nuser = "u"\n'
            'password_env = "not a name"\n',
            "hub.toml:6: devices.rpi.ssh.password_env must be the name of an environment "
            'variable, got "not a name"',
            id="password-env-name",
        ),
        pytest.param(
            'devices = "rpi"\n',
            'hub.toml:1: devices must be a table, got "rpi"',
            id="devices-not-table",
        ),
        pytest.param(
            '[devices.rpi]\nprovider = "trtexec"\n[devices.rpi.ssh]\nhost = "h"\nuser = "u"\n'
            "keepalive = nan\n",
            "hub.toml:6: devices.rpi.ssh.keepalive must be a finite number, got nan",
            id="keepalive-nan",
        ),
        pytest.param(
            '[devices.rpi]\nprovider = "trtexec"\n[devices.rpi.ssh]\nhost = "h"\nuser = "u"\n'
            "keepalive_count = 0\n",
            "hub.toml:6: devices.rpi.ssh.keepalive_count must be between 1 and 1000, got 0",
            id="keepalive-count",
        ),
        pytest.param(
            '[devices.rpi]\nprovider = "trtexec"\n[devices.rpi.ssh]\nhost = "h"\nuser = "u"\n'
            "step_timeout = -1\n",
            "hub.toml:6: devices.rpi.ssh.step_timeout must be 0 or more, got -1",
            id="step-timeout-negative",
        ),
    ],
)
def test_schema_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, expected: str
) -> None:
    assert load_error(tmp_path, text, monkeypatch) == expected


# --- saving ---------------------------------------------------------------------------------


def copy_example(tmp_path: Path) -> Path:
    """A copy of the example in a directory of its own (the cwd fixture uses tmp_path/work)."""
    project = tmp_path / "project"
    project.mkdir()
    path = project / "hub.toml"
    path.write_bytes(EXAMPLE.read_bytes())
    return path


def comment_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.lstrip().startswith("#")]


def test_open_and_save_round_trips_bytes(tmp_path: Path) -> None:
    path = copy_example(tmp_path)
    document = ConfigDocument.open(path)
    assert document.text == EXAMPLE.read_text(encoding="utf-8")
    config = document.save()
    assert path.read_bytes() == EXAMPLE.read_bytes()
    assert isinstance(config, HubConfig) and config.project.name == "edgehub-example"


def test_edits_keep_comments_and_order(tmp_path: Path) -> None:
    path = copy_example(tmp_path)
    document = ConfigDocument.open(path)
    document.set("project.name", "renamed")
    document.set("devices.local.docker.cpus", 4)
    document.add_device(
        "rpi",
        "embedl_onnxruntime",
        spec="Raspberry Pi 5",
        ssh={"host": "192.168.1.20", "user": "pi", "key": "~/.ssh/id_ed25519"},
        embedl_onnxruntime={"cli_args": ("--intra-op-threads", "4")},
        overrides={"ONNXRuntimeProfiler": {"embedl_onnxruntime": {"cli_args": ["-x"]}}},
    )
    document.add_device("s24", "qai_hub", spec="Samsung Galaxy S24")
    document.rename_device("local", "host")
    document.remove_device("s24")
    config = document.save()

    text = path.read_text(encoding="utf-8")
    assert comment_lines(text) == comment_lines(EXAMPLE.read_text(encoding="utf-8"))
    assert 'name = "renamed"' in text
    assert 'store = ".hub"                  # the local run store' in text
    assert "[devices.host.docker]          # limits" in text
    # the new key sits in its table, above the comments that trail it
    assert text.index("cpus = 4") < text.index("# cpus = 2")
    # the comment above the renamed device still sits right above it
    assert "pinned toolchain containers.\n[devices.host]\n" in text
    headers = re.findall(r"(?m)^\[([^\]]+)\]", text)
    assert headers == [
        "project",
        "images",
        "devices.host",
        "devices.host.docker",
        "devices.rpi",
        "devices.rpi.ssh",
        "devices.rpi.embedl_onnxruntime",
        "devices.rpi.overrides.ONNXRuntimeProfiler.embedl_onnxruntime",
    ]
    assert list(config.devices) == ["host", "rpi", "local"]
    assert config.devices["host"].settings == ProviderSettings(DockerConfig, {"cpus": 4.0})
    assert config.devices["rpi"].overrides["ONNXRuntimeProfiler"] == ProviderSettings(
        EmbedlONNXRuntimeConfig, {"cli_args": ("-x",)}
    )
    assert load_config(path) == config


def test_set_none_and_unset_remove_keys(tmp_path: Path) -> None:
    document = ConfigDocument.open(copy_example(tmp_path))
    document.set(("devices", "local", "spec"), None)
    assert document.get("devices.local.spec") is None
    assert document.unset("devices.local.spec") is False
    assert document.get("devices.local.provider") == "local"


def test_device_name_checks(tmp_path: Path) -> None:
    document = ConfigDocument.open(copy_example(tmp_path))
    with pytest.raises(ConfigError, match=r"'local' is already in"):
        document.add_device("local", "local")
    with pytest.raises(ConfigError, match=r"'gone' is not in .*declared: local"):
        document.remove_device("gone")
    with pytest.raises(ConfigError, match=r"not allowed"):
        document.rename_device("local", "my host")


def test_invalid_edit_is_refused_and_file_untouched(tmp_path: Path) -> None:
    path = copy_example(tmp_path)
    before = path.read_bytes()
    document = ConfigDocument.open(path)
    document.add_device("rpi", "embedl_onnxruntime", ssh={"host": "h", "user": "pi"})
    document.set("devices.rpi.ssh.port", "22x")
    with pytest.raises(ConfigError, match=r"devices\.rpi\.ssh\.port must be an integer"):
        document.save()
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["hub.toml"]


def test_edit_through_a_value_rolls_back(tmp_path: Path) -> None:
    document = ConfigDocument.open(copy_example(tmp_path))
    before = document.text
    with pytest.raises(ConfigError, match=r"is a value, not a table"):
        document.set("devices.local.provider.name", "x")
    assert document.text == before


@pytest.mark.parametrize("failing", ["os.replace", "os.fsync"])
def test_crash_before_replace_keeps_original(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    path = copy_example(tmp_path)
    before = path.read_bytes()
    document = ConfigDocument.open(path)
    document.set("project.name", "changed")

    def crash(*args: Any, **kwargs: Any) -> None:
        raise OSError("simulated crash")

    monkeypatch.setattr(failing, crash)
    with pytest.raises(OSError, match="simulated crash"):
        document.save()
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["hub.toml"]


def test_save_keeps_file_mode(tmp_path: Path) -> None:
    path = copy_example(tmp_path)
    path.chmod(0o640)
    document = ConfigDocument.open(path)
    document.set("project.name", "mode")
    document.save()
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert load_config(path).project.name == "mode"


def test_save_refuses_a_file_changed_on_disk(tmp_path: Path) -> None:
    path = copy_example(tmp_path)
    document = ConfigDocument.open(path)
    document.set("project.name", "mine")
    path.write_text('[project]\nname = "theirs"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="changed on disk"):
        document.save()
    assert load_config(path).project.name == "theirs"
    document.save(force=True)
    assert load_config(path).project.name == "mine"


def test_new_document_creates_the_file(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    document = ConfigDocument.open(project, missing_ok=True)
    document.set("project.name", "fresh")
    document.add_device("s24", "qai_hub", spec="Samsung Galaxy S24")
    document.save()
    path = project / "hub.toml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert list(load_config(path).devices) == ["s24", "local"]


# --- devices --------------------------------------------------------------------------------


DEVICES = """
[devices.local]
provider = "local"
[devices.local.docker]
cpus = 2
memory = "4g"

[devices.rpi]
provider = "embedl_onnxruntime"
spec = "Raspberry Pi 5"
[devices.rpi.ssh]
host = "192.168.1.20"
user = "pi"
port = 2222
key = "~/.ssh/id_ed25519"
known_hosts = "keys/known_hosts"
connect_timeout = 5
keepalive = 0
keepalive_count = 5
step_timeout = 0
[devices.rpi.embedl_onnxruntime]
path = "/home/pi/venv/bin/embedl-onnxruntime"
cli_args = ["--intra-op-threads", "4"]
[devices.rpi.overrides.ONNXRuntimeProfiler.embedl_onnxruntime]
cli_args = ["--exec-providers", "CPUExecutionProvider"]

[devices.jetson]
provider = "trtexec"
[devices.jetson.ssh]
host = "jetson.local"
user = "nvidia"
password_env = "JETSON_PASSWORD"
[devices.jetson.trtexec]
path = "/usr/src/tensorrt/bin/trtexec"
cli_args = ["--fp16"]

[devices.s24]
provider = "qai_hub"
spec = "Samsung Galaxy S24"

[devices.bench]
provider = "trtexec"
[devices.bench.trtexec]
path = "~/bin/trtexec"
"""


def line_of(text: str, needle: str) -> int:
    """The 1-based line of ``needle`` in ``text`` as `write` saves it."""
    lines = textwrap.dedent(text).lstrip("\n").splitlines()
    return next(number for number, line in enumerate(lines, 1) if needle in line)


@pytest.fixture
def devices_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HubConfig:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return load_config(write(tmp_path, DEVICES))


def test_to_devices_builds_runners_and_configs(devices_config: HubConfig, tmp_path: Path) -> None:
    from edgehub.runners.ssh import SSHCommandRunner

    devices = {
        device.name: device
        for device in to_devices(
            devices_config,
            component_lookup=fake_lookup,
            environ={"JETSON_PASSWORD": "s3cret", "EDGEHUB_PASSWORD_ENVS": "JETSON_PASSWORD"},
        )
    }
    assert list(devices) == ["local", "rpi", "jetson", "s24", "bench"]

    local = devices["local"]
    assert isinstance(local.runner, LocalCommandRunner)
    assert local.provider_type == "local"
    assert local.provider_config == DockerConfig(cpus=2.0, memory="4g")

    rpi = devices["rpi"]
    assert isinstance(rpi.runner, SSHCommandRunner)
    ssh = rpi.runner.config
    assert (ssh.host, ssh.username, ssh.port, ssh.password) == ("192.168.1.20", "pi", 2222, None)
    assert ssh.private_key_path == tmp_path / "home" / ".ssh" / "id_ed25519"
    assert ssh.known_hosts == tmp_path / "keys" / "known_hosts"
    # a known_hosts file inside the project does not vouch on its own: refused on first use
    assert ssh.unusable is not None and "devices.rpi.ssh.known_hosts" in ssh.unusable
    assert (ssh.connect_timeout, ssh.keepalive_s) == (5.0, 0.0)
    assert (ssh.keepalive_count, ssh.step_timeout) == (5, None)  # 0: no step limit
    assert rpi.spec.device_name == "Raspberry Pi 5"
    base = EmbedlONNXRuntimeConfig(
        embedl_onnxruntime_path="/home/pi/venv/bin/embedl-onnxruntime",
        cli_args=("--intra-op-threads", "4"),
    )
    assert rpi.provider_config == base
    # the override keeps the device's path and replaces cli_args, for the profiler only
    assert rpi.provider_config_overrides == {
        FakeProfiler: EmbedlONNXRuntimeConfig(
            embedl_onnxruntime_path="/home/pi/venv/bin/embedl-onnxruntime",
            cli_args=("--exec-providers", "CPUExecutionProvider"),
        )
    }
    assert rpi.get_provider_config(EmbedlONNXRuntimeConfig, cast(Any, FakeCompiler)) == base

    jetson = devices["jetson"]
    assert isinstance(jetson.runner, SSHCommandRunner)
    assert jetson.runner.config.password == "s3cret"
    assert (jetson.runner.config.keepalive_count, jetson.runner.config.step_timeout) == (3, 3600)
    assert jetson.provider_config == TrtexecConfig(
        trtexec_path="/usr/src/tensorrt/bin/trtexec", trtexec_cli_args=("--fp16",)
    )

    s24 = devices["s24"]
    assert s24.runner is None and s24.provider_config is None
    assert (s24.provider_type, s24.spec.device_name) == ("qai_hub", "Samsung Galaxy S24")

    bench = devices["bench"]  # no ssh: the tool runs on this host, '~' expanded
    assert isinstance(bench.runner, LocalCommandRunner)
    assert bench.provider_config == TrtexecConfig(
        trtexec_path=str(tmp_path / "home" / "bin" / "trtexec")
    )


def test_missing_password_env_names_line_and_fails_only_that_device(
    devices_config: HubConfig, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from edgehub.runners.ssh import SSHCommandRunner

    monkeypatch.chdir(tmp_path)
    allowed = {"EDGEHUB_PASSWORD_ENVS": "JETSON_PASSWORD"}  # allowed by the user, but not set
    every = to_devices(devices_config, component_lookup=fake_lookup, environ=allowed)
    devices = {device.name: device for device in every}
    assert isinstance(devices["rpi"].runner, SSHCommandRunner)
    jetson = to_device(devices_config, "jetson", environ=allowed)
    assert jetson.runner is not None
    with pytest.raises(ConfigError) as info:
        jetson.runner.run(["true"])  # refused before any connection is tried
    line = line_of(DEVICES, 'password_env = "JETSON_PASSWORD"')
    assert str(info.value).startswith(
        f"hub.toml:{line}: devices.jetson.ssh.password_env names JETSON_PASSWORD, which is not set"
    )


def test_unknown_component_from_lookup_names_line(
    devices_config: HubConfig, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)

    def lookup(name: str) -> type:
        raise KeyError(f"unknown component {name!r}; did you mean 'X'?")

    with pytest.raises(ConfigError) as info:
        to_device(devices_config, "rpi", component_lookup=lookup)
    line = line_of(DEVICES, "[devices.rpi.overrides.ONNXRuntimeProfiler")
    assert str(info.value) == (
        f"hub.toml:{line}: unknown component 'ONNXRuntimeProfiler'; did you mean 'X'?"
    )


def test_unknown_device_lists_known(devices_config: HubConfig) -> None:
    with pytest.raises(DeviceError, match=r"'nope' is not in .*known: local, rpi, jetson"):
        to_device(devices_config, "nope")


def test_local_device_is_always_there(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, '[devices.s24]\nprovider = "qai_hub"\nspec = "S24"\n'))
    devices = to_devices(config)
    assert [device.name for device in devices] == ["s24", "local"]
    assert isinstance(devices[1].runner, LocalCommandRunner)
    assert devices[1].provider_config == DockerConfig()


def test_qualified_component_names_are_imported() -> None:
    assert (
        default_component_lookup("collections.OrderedDict") is __import__("collections").OrderedDict
    )
    config = parse_config(
        '[devices.rpi]\nprovider = "embedl_onnxruntime"\n'
        '[devices.rpi.overrides."tests_fake.MyCompiler".embedl_onnxruntime]\ncli_args = []\n'
    )
    assert list(config.devices["rpi"].overrides) == ["tests_fake.MyCompiler"]


def test_config_imports_no_heavy_modules() -> None:
    code = (
        "import sys\n"
        "from edgehub.config import load_config, to_devices\n"
        f"to_devices(load_config({str(EXAMPLE)!r}))\n"
        "heavy = [m for m in ('docker', 'paramiko', 'textual', 'qai_hub') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


# --- settings tables derived from the provider config dataclasses ---------------------------


def test_settings_tables_come_from_the_dataclasses() -> None:
    from edgehub.config.settings import provider_tables, settings_table

    tables = provider_tables()
    assert {p: t.table for p, t in tables.items()} == {
        "local": "docker",
        "embedl_onnxruntime": "embedl_onnxruntime",
        "trtexec": "trtexec",
    }
    ort = settings_table(EmbedlONNXRuntimeConfig)
    assert [(k.key, k.field) for k in ort.keys] == [
        ("path", "embedl_onnxruntime_path"),
        ("cli_args", "cli_args"),
    ]
    trt = settings_table(TrtexecConfig)
    assert [(k.key, k.field) for k in trt.keys] == [
        ("path", "trtexec_path"),
        ("cli_args", "trtexec_cli_args"),
    ]
    docker = settings_table(DockerConfig)
    assert docker.help.startswith("Settings of the ``local`` provider")
    assert all(k.help for k in docker.keys)
    # registered runtimes add theirs (tensorrt's trtexec is also built in: no duplicate)
    assert set(provider_tables(registered=True)) >= set(tables)


def test_keep_warm_and_image_keys_typed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    message = load_error(tmp_path, '[devices.local.docker]\nkeep_warm = "long"\n', monkeypatch)
    assert message == (
        'hub.toml:2: devices.local.docker.keep_warm must be a number greater than 0, got "long"'
    )
    config = parse_config("[devices.local.docker]\ncpus = 2\nkeep_warm = 30\n")
    built = to_device(config, "local").provider_config
    assert built == DockerConfig(cpus=2.0, keep_warm=30.0)
    assert isinstance(built, DockerConfig) and isinstance(built.cpus, float)


def test_a_new_key_goes_above_the_comments_that_trail_its_table(tmp_path: Path) -> None:
    path = tmp_path / "hub.toml"
    path.write_text(
        '[project]\nname = "p"\n\n[devices.b]\nprovider = "local"   # inline\n'
        "# about b's docker table\n\n[devices.b.docker]\ncpus = 2\n# trailing\n\n"
        '# the next device\n[devices.c]\nprovider = "local"\n',
        encoding="utf-8",
    )
    document = ConfigDocument.open(path)
    document.set("devices.b.spec", "board")
    document.set("devices.b.docker.memory", "1g")
    document.save()
    text = path.read_text(encoding="utf-8")
    assert text == (
        '[project]\nname = "p"\n\n[devices.b]\nprovider = "local"   # inline\nspec = "board"\n'
        '# about b\'s docker table\n\n[devices.b.docker]\ncpus = 2\nmemory = "1g"\n# trailing\n\n'
        '# the next device\n[devices.c]\nprovider = "local"\n'
    )
