"""Outputs filled from the run log, from_path, and artifacts moved through device runners."""

from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest

from edgehub.core import HubContext, hub_run
from edgehub.core.component import (
    CompiledModel,
    ComponentOutput,
    LoggedArtifact,
    LoggedMetric,
    LoggedParam,
    MissingOutputError,
)
from edgehub.core.device import Device, DeviceSpec, LocalCommandRunner
from edgehub.errors import UnsafeArchiveError
from edgehub.runners.archive import pack, safe_extract


@dataclass(frozen=True)
class Report(ComponentOutput):
    latency: LoggedMetric
    runtime: LoggedParam
    table: LoggedArtifact | None = None
    note: str = ""


@hub_run("PROFILE")
def produce(ctx: HubContext, *, with_table: bool, both: bool = False) -> Report:
    ctx.client.log_metric("$latency", 1.5)
    ctx.client.log_param("runtime", "onnx")
    if both:
        ctx.client.log_param("$runtime", "dup")
    if with_table:
        (ctx.artifact_dir / "t.csv").write_text("a,b")
        ctx.client.log_artifact(ctx.artifact_dir / "t.csv", name="table")
    return Report.from_current_run(ctx, note="hi")


def test_fields_fill_by_name_and_dollar_name() -> None:
    with HubContext(project_name="p") as ctx:
        report = produce(ctx, with_table=True)
        without = produce(ctx, with_table=False)
    assert report.latency.value == 1.5 and report.runtime.value == "onnx"
    assert report.table is not None and report.table.local().read_text() == "a,b"
    assert report.note == "hi" and without.table is None


def test_both_name_and_dollar_name_is_ambiguous() -> None:
    with (
        HubContext(project_name="p") as ctx,
        pytest.raises(ValueError, match=r"ambiguous output field 'runtime'"),
    ):
        produce(ctx, with_table=False, both=True)


def test_missing_required_field_names_it() -> None:
    @hub_run("PROFILE")
    def nothing(ctx: HubContext) -> Report:
        return Report.from_current_run(ctx)

    with (
        HubContext(project_name="p") as ctx,
        pytest.raises(MissingOutputError, match=r"'latency' \(LoggedMetric\)"),
    ):
        nothing(ctx)


def test_from_current_run_needs_a_run() -> None:
    with HubContext(project_name="p") as ctx, pytest.raises(RuntimeError, match="No active run"):
        Report.from_current_run(ctx)


def test_from_path_wraps_local_and_remote_models(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(b"123")
    local = CompiledModel.from_path(model)
    remote = CompiledModel.from_path(PurePosixPath("/data/m.onnx"))
    assert local.path.is_local and local.path.file_size == 3 and local.run_log is None
    assert remote.path.is_remote and remote.path.remote() == PurePosixPath("/data/m.onnx")


def _device(name: str = "board") -> Device:
    return Device(name, LocalCommandRunner(), DeviceSpec("board"), "board")


def test_to_remote_and_to_local_move_files_and_directories(tmp_path: Path) -> None:
    folder = tmp_path / "model_dir"
    folder.mkdir()
    (folder / "model.onnx").write_bytes(b"graph")
    (folder / "model.data").write_bytes(b"weights")
    single = tmp_path / "single.bin"
    single.write_bytes(b"abc")
    with HubContext(project_name="p", devices=[_device()]) as ctx:

        @hub_run("CUSTOM")
        def roundtrip(ctx: HubContext) -> tuple[LoggedArtifact, LoggedArtifact]:
            results = []
            for source in (folder, single):
                artifact = ctx.client.log_artifact(source, name=source.name)
                remote = artifact.to_remote(ctx, device_name="board")
                assert remote.is_remote and remote.device == "board"
                assert remote.to_remote(ctx) is remote
                results.append(remote.to_local(ctx))
            return results[0], results[1]

        back_dir, back_file = roundtrip(ctx)
        assert (back_dir.local() / "model.data").read_bytes() == b"weights"
        assert back_file.local().read_bytes() == b"abc"
        with pytest.raises(RuntimeError, match="already local"):
            back_file.to_local(ctx, target_dir=tmp_path)


def _evil_tar(name: str, *, link: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo(name)
        if link is not None:
            info.type = tarfile.SYMTYPE
            info.linkname = link
            tar.addfile(info)
        else:
            info.size = 4
            tar.addfile(info, io.BytesIO(b"evil"))
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("name", "link"),
    [
        ("../escape.txt", None),
        ("/abs.txt", None),
        ("a/../../up.txt", None),
        ("lnk", "/etc"),
        ("lnk", "../../outside"),
    ],
)
def test_safe_extract_refuses_paths_leaving_the_target(
    tmp_path: Path, name: str, link: str | None
) -> None:
    target = tmp_path / "target"
    with pytest.raises(UnsafeArchiveError, match="refusing"):
        safe_extract(_evil_tar(name, link=link), target)
    assert not (tmp_path / "escape.txt").exists() and not list(target.iterdir())


def test_pack_and_safe_extract_round_trip(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "f.txt").write_text("x")
    names = safe_extract(pack(src), tmp_path / "out")
    assert "src/sub/f.txt" in names
    assert (tmp_path / "out" / "src" / "sub" / "f.txt").read_text() == "x"
