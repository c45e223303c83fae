"""The tar member rules held once (`edgehub.runners.tar_members`): a device's archive
(`safe_extract`) and a run bundle apply the same checks of names, kinds and sizes; a bundle adds
its stricter ones (no links at all, whitelisted names, a name once)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from edgehub.errors import DeviceOutputError, UnsafeArchiveError, UsageError
from edgehub.limits import BundleLimits, FetchLimits
from edgehub.runners.archive import safe_extract
from edgehub.runners.tar_members import BoundedReads, MemberRules, list_members, member_problem


def _tar(*members: tuple[str, bytes | str]) -> bytes:
    """Files (bytes) and symlinks (str: the link's text)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, body in members:
            info = tarfile.TarInfo(name)
            if isinstance(body, str):
                info.type, info.linkname = tarfile.SYMTYPE, body
                tar.addfile(info)
            else:
                info.size = len(body)
                tar.addfile(info, io.BytesIO(body))
    return buffer.getvalue()


def _bundle_rules() -> MemberRules:
    return MemberRules(
        BundleLimits(max_files=3), refuse=UsageError, over=UsageError, place="the bundle",
        links=False, strict_names=True, unique=True,
        allowed=lambda m: None if m.name.startswith("runs/") else f"{m.name!r} is not allowed",
    )  # fmt: skip


def _list(data: bytes, rules: MemberRules) -> list[str]:
    reads = BoundedReads(io.BytesIO(data), rules.over)  # type: ignore[arg-type]
    with tarfile.open(fileobj=reads, mode="r:") as tar:  # type: ignore[call-overload]
        return [m.name for m in list_members(tar, rules)]


def test_a_link_inside_the_target_is_extracted_but_refused_in_a_bundle(tmp_path: Path) -> None:
    data = _tar(("runs/a.json", b"{}"), ("runs/l.json", "a.json"))
    assert safe_extract(data, tmp_path / "x") == ["runs/a.json", "runs/l.json"]
    assert (tmp_path / "x" / "runs" / "l.json").is_symlink()
    with pytest.raises(UsageError, match="is a link"):
        _list(data, _bundle_rules())


@pytest.mark.parametrize("name", ["runs/../../evil", "/tmp/evil"])
def test_traversal_is_refused_by_both_in_the_same_words(tmp_path: Path, name: str) -> None:
    data = _tar((name, b"x"))
    with pytest.raises(UnsafeArchiveError) as device:
        safe_extract(data, tmp_path / "x")
    with pytest.raises(UsageError) as bundle:
        _list(data, _bundle_rules())
    said = str(device.value).split(f"{name!r}")[1], str(bundle.value).split(f"{name!r}")[1]
    assert said[0].replace("the target", "the bundle") == said[1]
    assert not (tmp_path / "x").exists() or not any((tmp_path / "x").iterdir())


def test_the_bundle_whitelist_and_uniqueness_apply_only_to_bundles(tmp_path: Path) -> None:
    twice = _tar(("runs/a.json", b"1"), ("runs/a.json", b"2"))
    with pytest.raises(UsageError, match="in it twice"):
        _list(twice, _bundle_rules())
    with pytest.raises(UsageError, match="'other' is not allowed"):
        _list(_tar(("other", b"x")), _bundle_rules())
    assert safe_extract(_tar(("other", b"x")), tmp_path) == ["other"]


def test_limits_name_each_kind_of_archive_s_own_variable(tmp_path: Path) -> None:
    many = _tar(*[(f"runs/{i}.json", b"x") for i in range(4)])
    with pytest.raises(UsageError, match="EDGEHUB_BUNDLE_MAX_MEMBERS"):
        _list(many, _bundle_rules())
    with pytest.raises(DeviceOutputError, match="EDGEHUB_FETCH_MAX_FILES"):
        safe_extract(many, tmp_path, FetchLimits(max_files=3))


def test_backslashes_leave_a_bundle_only() -> None:
    info = tarfile.TarInfo("runs\\..\\x")
    assert member_problem(info, _bundle_rules()) == "'runs\\\\..\\\\x' leaves the bundle ('..')"
    device = MemberRules(FetchLimits(), refuse=UnsafeArchiveError, over=DeviceOutputError)
    assert member_problem(info, device) is None
