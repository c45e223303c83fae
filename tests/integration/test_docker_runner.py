"""`DockerCommandRunner` against a real daemon and a small image made from the local base.

Skipped only when the daemon is unreachable or the base image (``EDGEHUB_BASE_IMAGE``, default
``edgehub-base:bookworm``, made by scripts/make-base-image.sh) is missing; the reason says which.
"""

from __future__ import annotations

import hashlib
import io
import os
import socket
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edgehub.errors import (
    CommandCancelled,
    CommandError,
    CommandTimeout,
    DeviceOutputError,
    DockerUnavailableError,
    ImageNotBuiltError,
    RunnerError,
    UnsafeArchiveError,
)
from edgehub.events import EventSink, LogEvent, use_sink
from edgehub.runners.docker import MANAGED, DockerCommandRunner, reap_orphans
from edgehub.runners.docker.lite import LiteClient
from edgehub.runners.protocol import CommandRunner, Exchange

pytestmark = pytest.mark.docker

RUNNER_DOCKERFILE = """\
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
RUN useradd --uid 1000 --user-group --create-home --shell /bin/bash edgehub \\
    && mkdir -p /work && chown edgehub:edgehub /work
WORKDIR /work
USER edgehub
"""

LIST_PROCESSES = ["sh", "-c", "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done"]


@pytest.fixture(scope="session")
def client() -> Iterator[Any]:
    from edgehub.runners.docker.sdk import docker_client

    try:
        found = docker_client()
    except DockerUnavailableError:
        pytest.skip("needs a running Docker daemon")
    yield found
    found.close()


@pytest.fixture(scope="session")
def runner_image(client: Any) -> str:
    """A tiny image (non-root user ``edgehub``, ``/work``) built FROM the local base once."""
    import docker.errors

    base = os.environ.get("EDGEHUB_BASE_IMAGE", "edgehub-base:bookworm")
    try:
        base_id = client.api.inspect_image(base)["Id"]
    except docker.errors.ImageNotFound:
        pytest.skip(f"needs the base image {base}; make it with scripts/make-base-image.sh")
    digest = hashlib.sha256((RUNNER_DOCKERFILE + base_id).encode()).hexdigest()[:12]
    tag = f"edgehub-test-runner:{digest}"
    try:
        client.api.inspect_image(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    with tempfile.TemporaryDirectory() as context:
        Path(context, "Dockerfile").write_text(RUNNER_DOCKERFILE)
        errors = [
            chunk["error"]
            for chunk in client.api.build(
                path=context, tag=tag, buildargs={"BASE_IMAGE": base}, decode=True, rm=True
            )
            if "error" in chunk
        ]
    assert not errors, errors
    return tag


@pytest.fixture(scope="module")
def runner(runner_image: str) -> Iterator[DockerCommandRunner]:
    with DockerCommandRunner(runner_image) as opened:
        yield opened


def _job(stage: Path, remote: str, argv: list[str], local: Path, **options: Any) -> Exchange:
    """An exchange of ``stage`` that brings its folder ``out`` back to ``local``."""
    return Exchange(stage, remote, argv, fetch="out", local=local, **options)


def _container_exists(client: Any, container_id: str) -> bool:
    import docker.errors

    try:
        client.api.inspect_container(container_id)
    except docker.errors.NotFound:
        return False
    return True


def _processes(runner: DockerCommandRunner) -> list[str]:
    return runner.run(LIST_PROCESSES, hide=True).stdout.splitlines()


# -- commands ----------------------------------------------------------------------------------


def test_satisfies_the_runner_protocol(runner: DockerCommandRunner) -> None:
    assert isinstance(runner, CommandRunner)
    assert runner.container_id
    assert runner.image_id and runner.image_id.startswith("sha256:")
    assert runner.image_digest and runner.image_digest.startswith("sha256:")


def test_lines_stream_to_the_sink_while_the_command_runs(runner: DockerCommandRunner) -> None:
    events: list[tuple[float, LogEvent]] = []
    sink = EventSink()
    sink.subscribe(lambda event: events.append((time.monotonic(), event)))
    script = "echo one; echo two >&2; sleep 0.5; printf 'thr\\303\\251e\\nno newline'"
    with use_sink(sink):
        result = runner.run(["sh", "-c", script])
    ended = time.monotonic()
    lines = [(event.kind, event.message) for _, event in events]
    assert ("stdout", "one") in lines and ("stderr", "two") in lines
    assert [m for k, m in lines if k == "stdout"] == ["one", "thrée", "no newline"]
    first = next(at for at, event in events if event.message == "one")
    assert ended - first > 0.3, "the first line arrived only when the command ended"
    assert result.stdout == "one\nthrée\nno newline\n"
    assert result.stderr == "two\n"


def test_hide_keeps_lines_off_the_sink(runner: DockerCommandRunner) -> None:
    events: list[LogEvent] = []
    sink = EventSink()
    sink.subscribe(events.append)
    with use_sink(sink):
        result = runner.run(["echo", "secret"], hide=True)
    assert result.stdout == "secret\n"
    assert events == []


def test_exit_codes_and_command_error(runner: DockerCommandRunner) -> None:
    result = runner.run(["sh", "-c", "echo out; echo last words >&2; exit 3"], check=False)
    assert (result.returncode, result.ok) == (3, False)
    with pytest.raises(CommandError) as raised:
        runner.run(["sh", "-c", "echo first >&2; echo last words >&2; exit 5"])
    assert raised.value.returncode == 5
    assert "exited with code 5" in str(raised.value)
    assert "last words" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_missing_command_and_cwd_are_runner_errors(runner: DockerCommandRunner) -> None:
    with pytest.raises(RunnerError, match="not found"):
        runner.run(["no-such-tool", "--version"])
    with pytest.raises(RunnerError, match="does not exist"):
        runner.run(["true"], cwd="/no/such/dir")


def test_env_and_cwd(runner: DockerCommandRunner) -> None:
    runner.run(["mkdir", "-p", "sub/dir"])
    result = runner.run(
        ["sh", "-c", 'echo "$GREETING|$EMPTY|$HOME"; pwd'],
        cwd="sub/dir",
        env={"GREETING": "hello world", "EMPTY": ""},
    )
    assert result.stdout.splitlines() == ["hello world||/home/edgehub", "/work/sub/dir"]
    assert runner.run(["pwd"], cwd="/tmp").stdout == "/tmp\n"
    assert runner.run(["pwd"]).stdout == "/work\n"


def test_argv_words_are_not_interpreted_by_a_shell(runner: DockerCommandRunner) -> None:
    words = ["a b", "$(id)", "*", "'q'", "two\nlines", ""]
    result = runner.run(["printf", "[%s]\\n", *words])
    assert result.stdout == "".join(f"[{word}]\n" for word in words)


def test_runs_as_non_root_without_network(runner: DockerCommandRunner) -> None:
    assert runner.run(["id", "-u"]).stdout.strip() == "1000"
    assert runner.run(["ls", "/sys/class/net"]).stdout.split() == ["lo"]


def test_timeout_stops_the_process(runner: DockerCommandRunner) -> None:
    started = time.monotonic()
    with pytest.raises(CommandTimeout, match="longer than 1"):
        runner.run(["sh", "-c", "sleep 30 & sleep 31; echo never"], timeout=1)
    assert time.monotonic() - started < 20  # far below the 30 s it would take unstopped
    left = _processes(runner)
    assert not any("sleep 3" in line for line in left), left


def test_cancel_from_another_thread_stops_the_process(runner: DockerCommandRunner) -> None:
    timer = threading.Timer(0.5, runner.cancel)
    started = time.monotonic()
    timer.start()
    with pytest.raises(CommandCancelled):
        runner.run(["sleep", "30"])
    assert time.monotonic() - started < 20  # far below the 30 s it would take uncancelled
    assert not any(line.startswith("sleep 30") for line in _processes(runner))
    assert runner.run(["echo", "still usable"]).stdout == "still usable\n"


def test_a_quiet_command_outlives_the_client_read_timeout(runner_image: str) -> None:
    with DockerCommandRunner(runner_image) as short:
        client = short.client
        assert isinstance(client, LiteClient)
        client.timeout = 1  # the stream must not depend on the client's socket timeout
        assert short.run(["sh", "-c", "sleep 2; echo done"]).stdout == "done\n"


# -- files -------------------------------------------------------------------------------------


def test_put_and_get_a_file(runner: DockerCommandRunner, tmp_path: Path) -> None:
    source = tmp_path / "model.bin"
    source.write_bytes(os.urandom(100_000))
    runner.put(source, "deep/er/model-in.bin")
    assert runner.run(["stat", "-c", "%s %u", "/work/deep/er/model-in.bin"]).stdout == (
        "100000 1000\n"
    )
    runner.run(["sh", "-c", "echo more >> deep/er/model-in.bin"])
    back = tmp_path / "out" / "fetched.bin"
    runner.get("/work/deep/er/model-in.bin", back)
    assert back.read_bytes() == source.read_bytes() + b"more\n"
    assert sorted(p.name for p in back.parent.iterdir()) == ["fetched.bin"]


def test_put_and_get_a_directory(runner: DockerCommandRunner, tmp_path: Path) -> None:
    tree = tmp_path / "inputs"
    (tree / "nested" / "deeper").mkdir(parents=True)
    (tree / "a.txt").write_text("alpha")
    (tree / "nested" / "b.npz").write_bytes(bytes(range(256)))
    script = tree / "nested" / "deeper" / "run.sh"
    script.write_text("#!/bin/sh\necho ran\n")
    script.chmod(0o755)
    runner.put(tree, "/work/in/data")
    assert runner.run(["/work/in/data/nested/deeper/run.sh"]).stdout == "ran\n"
    runner.run(["touch", "/work/in/data/made-inside"])
    back = tmp_path / "returned"
    runner.get("in/data", back)
    files = sorted(str(p.relative_to(back)) for p in back.rglob("*") if p.is_file())
    assert files == ["a.txt", "made-inside", "nested/b.npz", "nested/deeper/run.sh"]
    assert (back / "nested" / "b.npz").read_bytes() == bytes(range(256))
    assert os.access(back / "nested" / "deeper" / "run.sh", os.X_OK)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".edgehub-get-")]


def test_get_of_a_missing_path_is_a_runner_error(
    runner: DockerCommandRunner, tmp_path: Path
) -> None:
    with pytest.raises(RunnerError, match="no such file"):
        runner.get("/work/not-there", tmp_path / "x")
    with pytest.raises(RunnerError, match="no such file"):
        runner.put(tmp_path / "not-here", "/work/x")


@pytest.mark.parametrize(
    "setup",
    [
        "ln -s /etc evil",
        "mkdir -p evil && ln -s /etc/passwd evil/passwd",
        "mkdir -p evil/a && ln -s ../../../../../../etc evil/a/up",
    ],
)
def test_get_refuses_archives_that_escape(
    runner: DockerCommandRunner, tmp_path: Path, setup: str
) -> None:
    runner.run(["sh", "-c", f"rm -rf /tmp/trap && mkdir /tmp/trap && cd /tmp/trap && {setup}"])
    target = tmp_path / "fetched"
    with pytest.raises(UnsafeArchiveError):
        runner.get("/tmp/trap/evil", target)
    assert not target.exists() and not target.is_symlink()


def test_safe_extract_refuses_dot_dot_entries(tmp_path: Path) -> None:
    from edgehub.runners.archive import safe_extract

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("evil/../../escaped")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(UnsafeArchiveError):
        safe_extract(buffer.getvalue(), tmp_path / "t")
    assert not (tmp_path / "escaped").exists()


# -- lifecycle ---------------------------------------------------------------------------------


def test_nothing_touches_docker_before_enter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    runner = DockerCommandRunner("whatever:latest")
    assert runner.container_id is None
    with pytest.raises(DockerUnavailableError, match=r"nonexistent/docker\.sock"), runner:
        pass


def test_missing_image_is_image_not_built(client: Any) -> None:
    with pytest.raises(ImageNotBuiltError, match="hub images build onnxruntime"):
        DockerCommandRunner("edgehub-onnxruntime:000000000000").__enter__()
    with pytest.raises(ImageNotBuiltError, match="not present"):
        DockerCommandRunner("edgehub-no-such-image:1").__enter__()


def test_limits_and_labels_reach_the_container(client: Any, runner_image: str) -> None:
    with DockerCommandRunner(
        runner_image, cpus=0.5, memory="256m", labels={"org.example.job": "42"}
    ) as limited:
        assert limited.container_id is not None
        attrs = client.api.inspect_container(limited.container_id)
    host = attrs["HostConfig"]
    assert host["NanoCpus"] == 500_000_000
    assert host["Memory"] == 256 * 1024 * 1024
    assert host["NetworkMode"] == "none"
    assert host["Init"] is True
    labels = attrs["Config"]["Labels"]
    assert labels[MANAGED] == "1"
    assert labels["org.edgehub.owner-pid"] == str(os.getpid())
    assert labels["org.edgehub.owner-host"] == socket.gethostname()
    assert labels["org.example.job"] == "42"


def test_a_container_that_cannot_start_leaves_nothing_behind(
    client: Any, runner_image: str
) -> None:
    before = {c["Id"] for c in client.api.containers(all=True, filters={"label": f"{MANAGED}=1"})}
    with pytest.raises(RunnerError, match="nosuchuser"):
        DockerCommandRunner(runner_image, user="nosuchuser").__enter__()
    with pytest.raises(RunnerError, match="memory"):
        DockerCommandRunner(runner_image, memory="1k").__enter__()
    after = {c["Id"] for c in client.api.containers(all=True, filters={"label": f"{MANAGED}=1"})}
    assert after <= before


def test_network_can_be_enabled(client: Any, runner_image: str) -> None:
    with DockerCommandRunner(runner_image, network=True) as networked:
        assert networked.container_id is not None
        mode = client.api.inspect_container(networked.container_id)["HostConfig"]["NetworkMode"]
    assert mode != "none"


def test_lazy_start_and_close(client: Any, runner_image: str) -> None:
    lazy = DockerCommandRunner(runner_image)
    assert lazy.container_id is None
    assert lazy.run(["echo", "hi"]).stdout == "hi\n"
    container_id = lazy.container_id
    assert container_id and _container_exists(client, container_id)
    lazy.close()
    lazy.close()
    assert lazy.container_id is None
    assert not _container_exists(client, container_id)


def test_container_is_removed_after_the_block(client: Any, runner_image: str) -> None:
    with DockerCommandRunner(runner_image) as scoped:
        container_id = scoped.container_id
        assert container_id and _container_exists(client, container_id)
    assert not _container_exists(client, container_id)


@pytest.mark.parametrize("error", [ValueError("boom"), KeyboardInterrupt()])
def test_container_is_removed_after_an_exception(
    client: Any, runner_image: str, error: BaseException
) -> None:
    seen: list[str] = []
    with pytest.raises(type(error)), DockerCommandRunner(runner_image) as failing:
        seen.append(str(failing.container_id))
        raise error
    assert seen and not _container_exists(client, seen[0])


def _child(code: str) -> str:
    """Run Python code in a fresh interpreter; returns the container id it prints."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


def test_atexit_removes_containers_left_open(client: Any, runner_image: str) -> None:
    container_id = _child(
        f"""
        from edgehub.runners.docker import DockerCommandRunner
        runner = DockerCommandRunner({runner_image!r}).__enter__()
        print(runner.container_id)
        """
    )
    assert not _container_exists(client, container_id)


def test_reap_orphans_removes_containers_of_dead_owners(client: Any, runner_image: str) -> None:
    container_id = _child(
        f"""
        import os, sys
        from edgehub.runners.docker import DockerCommandRunner
        runner = DockerCommandRunner({runner_image!r}).__enter__()
        print(runner.container_id)
        sys.stdout.flush()
        os._exit(0)  # no atexit: the container is orphaned
        """
    )
    assert _container_exists(client, container_id)
    with DockerCommandRunner(runner_image) as alive:
        assert alive.container_id is not None
        assert not _container_exists(client, container_id)  # reaped on __enter__
        assert alive.container_id not in reap_orphans()  # a live owner's container stays
        assert _container_exists(client, alive.container_id)


def test_exchange_uploads_runs_and_fetches_in_one_exec(
    runner: DockerCommandRunner, tmp_path: Path
) -> None:
    stage = tmp_path / "stage"
    (stage / "in").mkdir(parents=True)
    (stage / "in" / "data.txt").write_text("hello")
    sink, seen = EventSink(), []
    sink.subscribe(seen.append)
    with use_sink(sink):
        result = runner.exchange(
            _job(
                stage,
                "/work/exchange-job",
                ["sh", "-c", "mkdir out && tr a-z A-Z < in/data.txt > out/up.txt; echo done"],
                tmp_path / "back",
            )
        )
    assert result.returncode == 0
    assert (tmp_path / "back" / "up.txt").read_text() == "HELLO"
    assert "done" in [e.message for e in seen]  # the command's output streamed live


def test_an_exchange_whose_command_makes_no_fetch_folder_brings_nothing_back(
    runner: DockerCommandRunner, tmp_path: Path
) -> None:
    stage = tmp_path / "stage"
    stage.mkdir()
    result = runner.exchange(_job(stage, "/work/no-out-job", ["true"], tmp_path / "back"))
    assert result.returncode == 0
    assert not (tmp_path / "back").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".edgehub-fetch-")]


def test_exchange_timeout_stops_the_command(runner: DockerCommandRunner, tmp_path: Path) -> None:
    stage = tmp_path / "stage"
    stage.mkdir()
    start = time.monotonic()
    with pytest.raises(CommandTimeout):
        runner.exchange(_job(stage, "/work/slow-job", ["sleep", "30"], tmp_path / "b", timeout=0.5))
    assert time.monotonic() - start < 20  # far below the 30 s it would take unstopped
    assert not [p for p in _processes(runner) if "sleep 30" in p]


def test_warm_container_is_adopted_by_the_next_runner_and_expires_when_idle(
    runner_image: str, client: Any, tmp_path: Path
) -> None:
    first = DockerCommandRunner(runner_image, keep_warm=3)
    with first:
        first.run(["sh", "-c", "echo warm > /tmp/marker"])
        container_id = first.container_id
    assert container_id is not None and _container_exists(client, container_id)
    second = DockerCommandRunner(runner_image, keep_warm=3)
    with second:  # adopted without the docker SDK (the lite client), same container
        assert second.container_id == container_id
        assert isinstance(second.client, LiteClient)
        assert second.run(["cat", "/tmp/marker"]).stdout == "warm\n"
        stage = tmp_path / "stage"
        stage.mkdir()
        (stage / "x.txt").write_text("x")
        result = second.exchange(
            _job(
                stage,
                "/work/warm-job",
                ["sh", "-c", "mkdir out && cp x.txt out/"],
                tmp_path / "back",
            )
        )
        assert result.returncode == 0 and (tmp_path / "back" / "x.txt").read_text() == "x"
    deadline = time.monotonic() + 30
    while _container_exists(client, container_id) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _container_exists(client, container_id), "an idle warm container removes itself"


# -- cold jobs as containers of their own (docker/oneshot.py) -----------------------------------


def _owned(client: Any, pid: int | None = None) -> set[str]:
    """Containers (running or not) labeled as owned by ``pid`` (default: this process)."""
    label = f"org.edgehub.owner-pid={pid or os.getpid()}"
    return {c["Id"] for c in client.api.containers(all=True, filters={"label": label})}


def _gone(client: Any, before: set[str]) -> bool:
    """Whether every container made since ``before`` has been removed (they go in the
    background: polled with a generous deadline)."""
    deadline = time.monotonic() + 30
    while _owned(client) - before and time.monotonic() < deadline:
        time.sleep(0.2)
    return not _owned(client) - before


@pytest.mark.parametrize("kind", ["lite", "sdk"])
def test_a_prepared_cold_runner_runs_each_exchange_as_a_container_of_its_own(
    client: Any, runner_image: str, tmp_path: Path, kind: str
) -> None:
    from edgehub.runners.docker.sdk import SDKClient

    sdk = SDKClient() if kind == "sdk" else None
    stage = tmp_path / "stage"
    (stage / "in").mkdir(parents=True)
    (stage / "in" / "data.txt").write_text("hello")
    script = "tr a-z A-Z < in/data.txt > out/up.txt; echo started; sleep 3; echo done >&2; exit 3"
    before = _owned(client)
    seen: dict[str, Any] = {}

    def inspect_the_job() -> None:  # while it runs: what is it made of?
        deadline = time.monotonic() + 60
        while not (_owned(client) - before) and time.monotonic() < deadline:
            time.sleep(0.05)
        for job in _owned(client) - before:
            seen["attrs"] = client.api.inspect_container(job)

    sink, events = EventSink(), []
    sink.subscribe(lambda event: events.append((time.monotonic(), event.message)))
    runner = DockerCommandRunner(runner_image, memory="256m", client=sdk).prepare()
    try:
        assert runner.container_id is None and runner.image_digest  # nothing started yet
        watcher = threading.Thread(target=inspect_the_job)
        watcher.start()
        with use_sink(sink):
            result = runner.exchange(
                _job(
                    stage,
                    "/work/run-1/job",
                    ["sh", "-c", "mkdir out && " + script],
                    tmp_path / "back",
                )
            )
        returned = time.monotonic()
        watcher.join()
        assert runner.container_id is None  # still no long-lived container
        again = runner.exchange(
            _job(
                stage,
                "/work/run-1/job2",
                ["sh", "-c", "mkdir out; ls /work/run-1"],
                tmp_path / "back2",
            )
        )
    finally:
        runner.close()
        if sdk is not None:
            sdk.close()
    assert result.returncode == 3 and "done" in result.stderr
    assert (tmp_path / "back" / "up.txt").read_text() == "HELLO"
    started = next(t for t, message in events if message == "started")
    assert returned - started > 0.5  # streamed live, not at the end (3 s before it)
    assert again.stderr.split() == ["job2"]  # each job in a fresh container
    attrs = seen["attrs"]
    assert attrs["Config"]["Cmd"][:2] == ["sh", "-c"] and not attrs["ExecIDs"]  # no exec
    host = attrs["HostConfig"]
    assert host["NetworkMode"] == "none" and host["CapDrop"] == ["ALL"] and host["Init"]
    assert host["ReadonlyRootfs"] and host["SecurityOpt"] == ["no-new-privileges"]
    assert host["Memory"] == 256 << 20 and host["PidsLimit"] == 1024
    assert host["LogConfig"]["Type"] == "none"  # the files on stdout are not logged too
    assert attrs["Config"]["Labels"][MANAGED] == "1"
    assert _gone(client, before)


def _in_place_runner(runner_image: str) -> DockerCommandRunner:
    if os.geteuid() not in (0, 1000):
        pytest.skip("a job folder is mounted only for root or the container's user (uid 1000)")
    return DockerCommandRunner(runner_image, user="1000").prepare()


def test_a_cold_job_works_in_a_private_host_folder_taken_in_place(
    client: Any, runner_image: str, tmp_path: Path
) -> None:
    stage = tmp_path / "stage"
    (stage / "in").mkdir(parents=True)
    (stage / "in" / "data.txt").write_text("hello")
    local = tmp_path / "run" / "back"
    seen: dict[str, Any] = {}
    before = _owned(client)

    def look() -> None:  # while the job runs: its mounts, and the host folder's privacy
        deadline = time.monotonic() + 60
        while not (_owned(client) - before) and time.monotonic() < deadline:
            time.sleep(0.05)
        for job in _owned(client) - before:
            seen["mounts"] = client.api.inspect_container(job)["Mounts"]
        binds = [m for m in seen.get("mounts", []) if m["Type"] == "bind"]
        seen["modes"] = [(Path(m["Source"]).parent.stat().st_mode & 0o777) for m in binds]

    script = "mkdir out && tr a-z A-Z < in/data.txt > out/up.txt && mkdir out/d && sleep 1"
    runner = _in_place_runner(runner_image)
    try:
        watcher = threading.Thread(target=look)
        watcher.start()
        result = runner.exchange(_job(stage, "/work/run-1/job", ["sh", "-c", script], local))
        watcher.join()
        assert result.returncode == 0, result.stderr
        assert (local / "up.txt").read_text() == "HELLO" and (local / "d").is_dir()
        assert {p.stat().st_uid for p in [local, *local.rglob("*")]} == {os.geteuid()}
        binds = [m for m in seen["mounts"] if m["Type"] == "bind"]
        assert [(m["Destination"], m["RW"]) for m in binds] == [("/work/run-1/job", True)]
        assert Path(binds[0]["Source"]).parent.parent == local.parent  # beside the results
        assert seen["modes"] == [0o700]  # nobody else on this host reaches into it
        assert sorted(p.name for p in local.parent.iterdir()) == ["back"]  # folder removed
        # What the container leaves there is checked as an archive would be: no links out.
        hostile = "mkdir out && ln -s /etc/hostname out/leak"
        with pytest.raises(DeviceOutputError, match="out/leak, which is not a file"):
            runner.exchange(_job(stage, "/work/run-1/job2", ["sh", "-c", hostile], local))
        assert (local / "up.txt").read_text() == "HELLO"  # the results before are kept
        assert sorted(p.name for p in local.parent.iterdir()) == ["back"]
    finally:
        runner.close()
    assert _gone(client, before)


def test_a_daemon_that_cannot_use_the_job_folder_gets_the_files_as_tars(
    runner_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stands in for a daemon whose user ids are mapped elsewhere (rootless, userns-remap): the
    folder is not given to the container's user, so the container cannot write in it."""
    if os.geteuid() != 0:
        pytest.skip("needs root to leave the job folder to a user the container is not")
    monkeypatch.setattr(os, "chown", lambda *args, **kwargs: None)
    stage = tmp_path / "stage"
    stage.mkdir()
    runner = _in_place_runner(runner_image)
    try:
        for n in (1, 2):
            local = tmp_path / f"back{n}"
            result = runner.exchange(
                _job(stage, f"/work/j{n}", ["sh", "-c", "mkdir out && echo hi > out/f"], local)
            )
            assert result.returncode == 0 and (local / "f").read_text() == "hi\n"
            assert not list(tmp_path.glob(".edgehub-job-*"))
        assert runner._oneshots.in_place is False  # tried once, then tars only
    finally:
        runner.close()


@pytest.mark.parametrize("stop", ["timeout", "cancel"])
def test_a_stopped_cold_job_leaves_no_container(
    client: Any, runner_image: str, tmp_path: Path, stop: str
) -> None:
    stage = tmp_path / "stage"
    stage.mkdir()
    before = _owned(client)
    runner = DockerCommandRunner(runner_image).prepare()
    started = time.monotonic()
    try:
        if stop == "cancel":
            threading.Timer(1.0, runner.cancel).start()
        with pytest.raises(CommandTimeout if stop == "timeout" else CommandCancelled):
            runner.exchange(
                _job(
                    stage,
                    "/work/slow",
                    ["sh", "-c", "echo go; sleep 60"],
                    tmp_path / "b",
                    timeout=1.0 if stop == "timeout" else None,
                )
            )
        assert time.monotonic() - started < 30
    finally:
        runner.close()
    assert not _owned(client) - before  # close waits for the removals


def test_a_cold_job_killed_by_the_memory_limit_is_told_apart(
    runner_image: str, tmp_path: Path
) -> None:
    stage = tmp_path / "stage"
    (stage / "out").mkdir(parents=True)
    runner = DockerCommandRunner(runner_image, memory="64m").prepare()
    try:
        hog = "head -c 1000m /dev/zero | tail > /dev/null"  # tail keeps the line in memory
        result = runner.exchange(_job(stage, "/work/hog", ["sh", "-c", hog], tmp_path / "b"))
        assert result.returncode == 137
        assert runner.out_of_memory() and not runner.out_of_memory()  # told once
    finally:
        runner.close()


def test_a_cold_job_that_cannot_start_leaves_nothing_behind(
    client: Any, runner_image: str, tmp_path: Path
) -> None:
    stage = tmp_path / "stage"
    stage.mkdir()
    before = _owned(client)
    runner = DockerCommandRunner(runner_image, user="nosuchuser").prepare()
    try:
        with pytest.raises(RunnerError, match="nosuchuser"):
            runner.exchange(_job(stage, "/work/j", ["true"], tmp_path / "b"))
        assert not _owned(client) - before
    finally:
        runner.close()


def test_the_cold_job_of_a_killed_owner_is_reaped(client: Any, runner_image: str) -> None:
    code = f"""
        import sys, tempfile
        from pathlib import Path
        from edgehub.events import EventSink, use_sink
        from edgehub.runners.docker import DockerCommandRunner
        from edgehub.runners.protocol import Exchange
        stage = Path(tempfile.mkdtemp())
        sink = EventSink()
        sink.subscribe(lambda event: print(event.message, flush=True))
        runner = DockerCommandRunner({runner_image!r}).prepare()
        with use_sink(sink):
            argv = ["sh", "-c", "echo working; sleep 120"]
            runner.exchange(Exchange(stage, "/work/j", argv, fetch="out", local=stage / "back"))
        """
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "working\n"
        jobs = _owned(client, child.pid)
        assert len(jobs) == 1
    finally:
        child.kill()  # no clean-up of its own
        child.wait(30)
    assert all(_exists_running(client, job) for job in jobs)  # the job outlives its owner...
    assert set(reap_orphans()) >= jobs  # ...until the next command's reaper
    assert not _owned(client, child.pid)


# -- the two clients -------------------------------------------------------------------------

NO_TAR_DOCKERFILE = """\
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
RUN useradd --uid 1000 --user-group --create-home --shell /bin/bash edgehub \\
    && mkdir -p /work && chown edgehub:edgehub /work \\
    && rm -f /usr/bin/tar /bin/tar && ! command -v tar
WORKDIR /work
USER edgehub
"""


def _build(client: Any, dockerfile: str, name: str) -> str:
    """An image FROM the local base, tagged by the hash of its Dockerfile (built once)."""
    import docker.errors

    base = os.environ.get("EDGEHUB_BASE_IMAGE", "edgehub-base:bookworm")
    try:
        base_id = client.api.inspect_image(base)["Id"]
    except docker.errors.ImageNotFound:
        pytest.skip(f"needs the base image {base}; make it with scripts/make-base-image.sh")
    tag = f"{name}:{hashlib.sha256((dockerfile + base_id).encode()).hexdigest()[:12]}"
    try:
        client.api.inspect_image(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    with tempfile.TemporaryDirectory() as context:
        Path(context, "Dockerfile").write_text(dockerfile)
        chunks = client.api.build(
            path=context, tag=tag, buildargs={"BASE_IMAGE": base}, decode=True, rm=True
        )
        errors = [chunk["error"] for chunk in chunks if "error" in chunk]
    assert not errors, errors
    return tag


@pytest.fixture(scope="session")
def no_tar_image(client: Any) -> str:
    return _build(client, NO_TAR_DOCKERFILE, "edgehub-test-notar")


def test_both_clients_satisfy_the_protocol(client: Any) -> None:
    from edgehub.runners.docker.lite import local_socket
    from edgehub.runners.docker.sdk import SDKClient

    path = local_socket()
    assert path is not None
    lite, sdk = LiteClient(path), SDKClient()
    for implementation in (lite, sdk):
        assert implementation.ping()
        assert implementation.inspect_image("edgehub-base:bookworm")["Id"].startswith("sha256:")
    sdk.close()


def test_a_warm_container_of_an_image_without_tar_works_through_the_light_client(
    client: Any, no_tar_image: str, tmp_path: Path
) -> None:
    source = tmp_path / "tree"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "data.bin").write_bytes(os.urandom(5000))
    with DockerCommandRunner(no_tar_image, keep_warm=60) as warm:
        assert isinstance(warm.client, LiteClient)
        assert warm.run(["sh", "-c", "command -v tar || echo none"], check=False).stdout == (
            "none\n"
        )
        warm.put(source, "/work/in")  # the archive API: no tar in the image
        assert warm.run(["stat", "-c", "%s %u", "/work/in/sub/data.bin"]).stdout == "5000 1000\n"
        warm.run(["sh", "-c", "cp /work/in/sub/data.bin /work/in/copy.bin"])
        warm.get("/work/in", tmp_path / "back")
        assert (tmp_path / "back" / "copy.bin").read_bytes() == (
            source / "sub" / "data.bin"
        ).read_bytes()
        container_id = warm.container_id
    assert container_id is not None
    client.api.remove_container(container_id, force=True, v=True)


def test_the_sdk_client_runs_moves_files_and_exchanges(runner_image: str, tmp_path: Path) -> None:
    from edgehub.runners.docker.sdk import SDKClient

    sdk = SDKClient()
    try:
        with DockerCommandRunner(runner_image, client=sdk) as through_sdk:
            assert through_sdk.run(["echo", "via sdk"]).stdout == "via sdk\n"
            (tmp_path / "f.txt").write_text("x")
            through_sdk.put(tmp_path / "f.txt", "f.txt")
            through_sdk.get("f.txt", tmp_path / "g.txt")
            assert (tmp_path / "g.txt").read_text() == "x"
            stage = tmp_path / "stage"
            stage.mkdir()
            result = through_sdk.exchange(
                _job(stage, "job", ["sh", "-c", "mkdir out && echo hi > out/o"], tmp_path / "o")
            )
            assert result.ok and (tmp_path / "o" / "o").read_text() == "hi\n"
            with pytest.raises(CommandTimeout):
                through_sdk.run(["sleep", "30"], timeout=0.5)
    finally:
        sdk.close()


# -- hardening ---------------------------------------------------------------------------------


def test_containers_are_hardened_by_default(client: Any, runner_image: str) -> None:
    from edgehub.runners.docker import DEFAULT_MEMORY, DEFAULT_PIDS

    with DockerCommandRunner(runner_image) as hardened:
        assert hardened.container_id is not None
        attrs = client.api.inspect_container(hardened.container_id)
        assert hardened.run(["sh", "-c", "touch /etc/x"], check=False).returncode != 0
        assert hardened.run(["sh", "-c", "touch /work/x /tmp/x"]).ok  # scratch is writable
        caps = hardened.run(["sh", "-c", "grep -E '^Cap(Eff|Bnd)' /proc/self/status"]).stdout
        no_new = hardened.run(["sh", "-c", "grep NoNewPrivs /proc/self/status"]).stdout
    host = attrs["HostConfig"]
    assert host["CapDrop"] == ["ALL"]
    assert host["SecurityOpt"] == ["no-new-privileges"]
    assert host["ReadonlyRootfs"] is True
    assert host["PidsLimit"] == DEFAULT_PIDS == 1024
    assert DEFAULT_MEMORY == "4g" and host["Memory"] == 4 * 1024**3
    assert "/tmp" in host["Tmpfs"]
    assert [m["Destination"] for m in attrs["Mounts"]] == ["/work"]
    assert caps.split() == ["CapEff:", "0000000000000000", "CapBnd:", "0000000000000000"]
    assert no_new.split() == ["NoNewPrivs:", "1"]


def test_the_onnxruntime_image_has_no_setuid_files(client: Any) -> None:
    from edgehub import images

    tag = images.image_tag("onnxruntime")
    if images.image_status("onnxruntime").built is False:
        pytest.skip(f"needs the ONNX Runtime image {tag}; run: hub images build onnxruntime")
    with DockerCommandRunner(tag) as ort:
        found = ort.run(
            ["sh", "-c", "find / -xdev \\( -perm -4000 -o -perm -2000 \\) -type f 2>/dev/null"],
            check=False,
        ).stdout
    assert found == ""


# -- warm jobs, orphans, cancel_all -------------------------------------------------------------


def _exists_running(client: Any, container_id: str) -> bool:
    import docker.errors

    try:
        return bool(client.api.inspect_container(container_id)["State"]["Running"])
    except docker.errors.NotFound:
        return False


def test_a_warm_job_longer_than_keep_warm_finishes(client: Any, runner_image: str) -> None:
    with DockerCommandRunner(runner_image, keep_warm=2, labels={"t": "long-job"}) as warm:
        assert warm.run(["sh", "-c", "sleep 5; echo finished"]).stdout == "finished\n"
        ended = time.monotonic()
        container_id = warm.container_id
    assert container_id is not None
    # still up after the job (unless a busy machine took more than its keep_warm to look)
    assert _exists_running(client, container_id) or time.monotonic() - ended > 2
    deadline = time.monotonic() + 30
    while _exists_running(client, container_id) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _exists_running(client, container_id), "idle afterwards, it expires"


def test_a_killed_owner_gives_its_warm_job_end_of_file(client: Any, runner_image: str) -> None:
    """The job's stdin stays open while its owner lives; a SIGKILLed owner closes it."""
    labels = {"t": "stdin-eof"}
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys
            from edgehub.runners.docker import DockerCommandRunner
            runner = DockerCommandRunner({runner_image!r}, keep_warm=60, labels={labels!r})
            runner.__enter__()
            print(runner.container_id, flush=True)
            runner.run(["sh", "-c", "echo $EDGEHUB_AGENT_WATCH_STDIN > /tmp/watch; "
                                    "cat > /dev/null; echo eof > /tmp/eof-seen"])
        """)],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert child.stdout is not None
    container_id = child.stdout.readline().strip()
    try:
        with DockerCommandRunner(runner_image, keep_warm=60, labels=labels) as peer:
            assert peer.container_id == container_id
            deadline = time.monotonic() + 60
            while not peer.run(["test", "-e", "/tmp/watch"], check=False).ok:
                assert time.monotonic() < deadline
                time.sleep(0.1)
            assert not peer.run(["test", "-e", "/tmp/eof-seen"], check=False).ok
            child.kill()
            child.wait()
            deadline = time.monotonic() + 60
            while not peer.run(["test", "-e", "/tmp/eof-seen"], check=False).ok:
                assert time.monotonic() < deadline, "the job never read end of file"
                time.sleep(0.1)
            assert peer.run(["cat", "/tmp/watch"]).stdout == "1\n"
    finally:
        child.kill()
        client.api.remove_container(container_id, force=True, v=True)


def test_reap_stops_jobs_and_removes_containers_of_dead_owners(
    client: Any, runner_image: str
) -> None:
    from edgehub.runners.docker import reap

    labels = {"t": "reap"}
    code = f"""
        import os, sys, threading
        from edgehub.runners.docker import DockerCommandRunner
        warm = DockerCommandRunner({runner_image!r}, keep_warm=60, labels={labels!r})
        cold = DockerCommandRunner({runner_image!r}).__enter__()
        warm.__enter__()
        job = threading.Thread(target=warm.run, args=(["sh", "-c", "trap '' HUP; exec sleep 300"],))
        job.start()
        print(warm.container_id, cold.container_id, flush=True)
        job.join()
    """
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    warm_id, cold_id = child.stdout.readline().split()
    try:
        with DockerCommandRunner(runner_image, keep_warm=60, labels=labels) as peer:
            deadline = time.monotonic() + 60
            while not any("sleep 300" in line for line in _processes(peer)):
                assert time.monotonic() < deadline
                time.sleep(0.1)
            assert not reap()  # the owner lives: nothing to do
            child.send_signal(9)
            child.wait()
            started = time.monotonic()
            report = reap()
            took = time.monotonic() - started
            assert cold_id in report.containers_removed
            assert report.dead_owners == {child.pid}
            assert not _container_exists(client, cold_id)
            # sleep does not read stdin: the reaper, not end of file, stopped it
            assert not any("sleep 300" in line for line in _processes(peer))
            assert report.jobs_stopped >= 1
            assert took < 9  # quick: it does not wait for the jobs it stops (sleep 300)
            assert not reap()
    finally:
        child.kill()
        client.api.remove_container(warm_id, force=True, v=True)


def test_reap_is_quick_and_quiet_without_a_daemon(monkeypatch: pytest.MonkeyPatch) -> None:
    from edgehub.runners.docker import reap

    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    started = time.monotonic()
    assert not reap()
    assert time.monotonic() - started < 4  # no connection tried (its timeout is 5 s)
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")  # a remote daemon: not reaped
    assert not reap()


def test_cancel_all_stops_commands_and_removes_containers(client: Any, runner_image: str) -> None:
    from edgehub.runners.base import cancel_all

    runner = DockerCommandRunner(runner_image).__enter__()
    container_id = runner.container_id
    assert container_id is not None
    errors: list[BaseException] = []

    def job() -> None:
        try:
            runner.run(["sleep", "30"])
        except BaseException as error:
            errors.append(error)

    thread = threading.Thread(target=job)
    thread.start()
    deadline = time.monotonic() + 60  # the command is running in the container before the cancel
    while time.monotonic() < deadline and not any(
        "sleep 30" in " ".join(row)
        for row in client.containers.get(container_id).top()["Processes"]
    ):
        time.sleep(0.1)
    started = time.monotonic()
    cancel_all()
    thread.join(60)
    assert [type(error) for error in errors] == [CommandCancelled]
    assert not _container_exists(client, container_id)
    assert time.monotonic() - started < 20  # far below the job's 30 s


# -- the direct channel to a warm container's resident agent -------------------------------------

MODEL = Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn.onnx"
SOCKET_NAME = "edgehub-agent-test-channel.sock"


def _agent_call(runner: DockerCommandRunner, local: Path) -> Any:
    from pathlib import PurePosixPath

    from edgehub.toolchains.agent_call import AgentCall

    server = runner.agent_socket(SOCKET_NAME)
    assert server is not None, "a warm container on the local daemon offers the channel"
    return AgentCall(runner, PurePosixPath("/work") / local.name, local, server=server)


def _server_ready(runner: DockerCommandRunner) -> Path:
    """The host side of the resident agent's socket, once the server listens on it."""
    channel = runner._container.channel
    assert channel is not None
    host_socket = channel / SOCKET_NAME
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(host_socket))
            return host_socket
        except OSError:
            time.sleep(0.1)
        finally:
            probe.close()
    raise AssertionError(f"no agent server answered on {host_socket}")


def _server_children(client: Any, container_id: str) -> list[str]:
    """The jobs the resident agent server of ``container_id`` runs (its forked children)."""
    top = client.api.top(container_id, ps_args="-o pid,ppid,args")
    rows = [(str(p[0]), str(p[1]), str(p[2])) for p in top["Processes"]]
    servers = {pid for pid, _, args in rows if " serve --socket " in args}
    return [args for pid, ppid, args in rows if ppid in servers]


@pytest.fixture
def channel_runner(ort_image: str, client: Any) -> Iterator[DockerCommandRunner]:
    warm = DockerCommandRunner(ort_image, keep_warm=60, labels={"t": "channel"})
    warm.__enter__()
    try:
        yield warm
    finally:
        container_id, channel = warm.container_id, warm._container.channel
        warm.close()
        if container_id:
            client.api.remove_container(container_id, force=True, v=True)
        if channel is not None:
            import shutil

            shutil.rmtree(channel, ignore_errors=True)


def test_warm_jobs_reach_the_resident_agent_without_an_exec(
    channel_runner: DockerCommandRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from edgehub.errors import ToolchainError

    agent = _agent_call(channel_runner, tmp_path)
    first = agent.call("env", {}, failure=ToolchainError)  # through docker exec; starts a server
    assert first.env.get("python")
    _server_ready(channel_runner)
    channel = channel_runner._container.channel
    assert channel is not None
    assert (channel.parent.stat().st_mode & 0o777) == 0o700, "only this user reaches the socket"

    def no_exec(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the job went through docker exec")

    monkeypatch.setattr(channel_runner, "exchange", no_exec)
    monkeypatch.setattr(channel_runner, "_exec", no_exec)
    result = agent.call(
        "ort.invoke",
        {"model": "in/model.onnx", "output": "out/output.npz"},
        inputs={"model.onnx": MODEL},
        failure=ToolchainError,
    )
    assert (result.files / "output.npz").stat().st_size > 0, "the output file came back"
    assert (result.files / "result.json").exists()
    assert result.env.get("onnxruntime")
    monkeypatch.undo()
    left = channel_runner.run(["ls", "-A", str(agent.workdir)], hide=True).stdout.split()
    assert "2-ort_invoke" not in left, "a served job's folder goes once its files came back"


def test_a_refused_or_missing_server_falls_back_to_exec(
    channel_runner: DockerCommandRunner, tmp_path: Path
) -> None:
    from edgehub.runners.docker.channel import open_agent_job

    channel = channel_runner._container.channel
    assert channel is not None
    assert open_agent_job(channel / "nobody.sock", ["env"], "/work/x", b"", "out") is None
    assert (
        channel_runner.agent_exchange(
            _job(tmp_path, "/work/x", ["env"], tmp_path / "out"), "/run/edgehub/nobody.sock"
        )
        is None
    )


def test_a_channel_job_dies_with_its_sigkilled_owner(
    channel_runner: DockerCommandRunner, client: Any, tmp_path: Path
) -> None:
    from edgehub.errors import ToolchainError

    _agent_call(channel_runner, tmp_path / "a").call("env", {}, failure=ToolchainError)
    _server_ready(channel_runner)
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            from pathlib import Path, PurePosixPath
            from edgehub.errors import ToolchainError
            from edgehub.runners.docker import DockerCommandRunner
            from edgehub.toolchains.agent_call import AgentCall
            runner = DockerCommandRunner({channel_runner.image!r}, keep_warm=60,
                                         labels={{"t": "channel"}})
            runner.__enter__()
            local = Path({str(tmp_path / "b")!r})
            agent = AgentCall(runner, PurePosixPath("/work/b"), local,
                              server=runner.agent_socket({SOCKET_NAME!r}))
            agent.call("ort.profile", {{"model": "in/m.onnx", "runs": 10000000}},
                       inputs={{"m.onnx": Path({str(MODEL)!r})}}, failure=ToolchainError)
        """)],
        stderr=subprocess.PIPE,
    )  # fmt: skip
    container_id = channel_runner.container_id
    assert container_id is not None
    try:
        deadline = time.monotonic() + 60
        while not _server_children(client, container_id):
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            assert time.monotonic() < deadline, "the job never started on the server"
            time.sleep(0.2)
        time.sleep(0.5)
        assert _server_children(client, container_id), "the job runs while its owner lives"
        child.kill()
        child.wait()
        deadline = time.monotonic() + 30
        while _server_children(client, container_id):
            assert time.monotonic() < deadline, "the job outlived its SIGKILLed owner"
            time.sleep(0.1)
    finally:
        child.kill()


def test_the_channel_keeps_the_warm_container_hardened(
    channel_runner: DockerCommandRunner, client: Any
) -> None:
    from edgehub.runners.docker.channel import CHANNEL_MOUNT

    assert channel_runner.container_id is not None
    attrs = client.api.inspect_container(channel_runner.container_id)
    host = attrs["HostConfig"]
    assert host["CapDrop"] == ["ALL"]
    assert host["SecurityOpt"] == ["no-new-privileges"]
    assert host["ReadonlyRootfs"] is True
    assert host["NetworkMode"] == "none"
    mounts = {m["Destination"]: m for m in attrs["Mounts"]}
    assert sorted(mounts) == sorted(["/work", CHANNEL_MOUNT])
    assert mounts[CHANNEL_MOUNT]["Type"] == "bind"
    assert mounts[CHANNEL_MOUNT]["Source"] == str(channel_runner._container.channel)
    caps = channel_runner.run(["sh", "-c", "grep -E '^CapEff' /proc/self/status"]).stdout
    assert caps.split() == ["CapEff:", "0000000000000000"]
    assert not channel_runner.run(["sh", "-c", "touch /etc/x"], check=False).ok


def test_reap_removes_the_channel_folders_of_expired_warm_containers(
    channel_runner: DockerCommandRunner,
) -> None:
    import shutil

    from edgehub.runners.docker import reap
    from edgehub.runners.docker.channel import channels_base
    from edgehub.runners.docker.reaper import CHANNEL_GRACE_S

    live = channel_runner._container.channel
    assert live is not None and live.parent == channels_base()
    expired = channels_base() / "0000aaaa1111bbbb"
    starting = channels_base() / "2222cccc3333dddd"
    for folder in (expired, starting):
        folder.mkdir(exist_ok=True)
        (folder / "agent.log").write_text("left behind\n")
    old = time.time() - 2 * CHANNEL_GRACE_S
    for folder in (expired, live):
        os.utime(folder, (old, old))
    try:
        reap()
        assert not expired.exists()
        assert live.is_dir()  # its container runs
        assert starting.is_dir()  # too fresh to judge: a container may be starting
    finally:
        shutil.rmtree(expired, ignore_errors=True)
        shutil.rmtree(starting, ignore_errors=True)
