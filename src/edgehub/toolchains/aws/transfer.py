"""Moving bytes to and from Device Farm's pre-signed S3 URLs, bounded: only ``https`` (plain
``http`` to this machine's loopback, for tests), and what comes back read into memory within
`~edgehub.limits.DeviceFarmLimits`: the artifact zip as a whole, then member by member —
nothing is written under a name from it."""

from __future__ import annotations

import contextlib
import io
import ipaddress
import posixpath
import urllib.parse
import urllib.request
import zipfile

from edgehub.errors import DeviceOutputError
from edgehub.limits import DeviceFarmLimits, FetchLimits
from edgehub.toolchains.aws.client import DeviceFarmUnreachable


def _checked(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "https":
        return url
    if parts.scheme == "http":
        with contextlib.suppress(ValueError):
            if ipaddress.ip_address(parts.hostname or "").is_loopback:
                return url
    raise DeviceOutputError(f"AWS Device Farm gave a URL edgehub will not use: {parts.scheme}://…")


def put(url: str, data: bytes, what: str) -> None:
    request = urllib.request.Request(
        _checked(url), data=data, method="PUT", headers={"Content-Type": "application/octet-stream"}
    )
    try:
        with urllib.request.urlopen(request, timeout=300) as answer:
            answer.read(1024)
    except OSError as error:
        raise DeviceFarmUnreachable(
            f"uploading {what} to AWS Device Farm failed: {error}"
        ) from None


def download(url: str, what: str, limits: FetchLimits | None = None) -> bytes:
    """The bytes at ``url``; more than ``limits.max_bytes`` (by default
    `DeviceFarmLimits.from_env`) is a `DeviceOutputError`."""
    limits = limits or DeviceFarmLimits.from_env()
    try:
        with urllib.request.urlopen(_checked(url), timeout=300) as answer:
            data: bytes = answer.read(limits.max_bytes + 1)
    except OSError as error:
        raise DeviceFarmUnreachable(
            f"downloading {what} from AWS Device Farm failed: {error}"
        ) from None
    limits.check_total(len(data), f"{what} from AWS Device Farm")
    return data


def read_members(
    archive: bytes, names: set[str], what: str, limits: FetchLimits | None = None
) -> dict[str, bytes]:
    """The members of zip ``archive`` whose base name is in ``names`` (the first of each),
    each read up to ``limits.max_member_bytes`` (by default `DeviceFarmLimits.from_env`)."""
    limits = limits or DeviceFarmLimits.from_env()
    cap = limits.max_member_bytes
    found: dict[str, bytes] = {}
    try:
        with zipfile.ZipFile(io.BytesIO(archive)) as zipped:
            for info in zipped.infolist():
                base = posixpath.basename(info.filename.replace("\\", "/"))
                if info.is_dir() or base not in names or base in found:
                    continue
                limits.check_member(info.file_size, f"{what}: {base}")
                with zipped.open(info) as member:
                    data = member.read(cap + 1)
                limits.check_member(len(data), f"{what}: {base}")
                found[base] = data
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError) as error:
        raise DeviceOutputError(f"{what} is not a readable zip archive: {error}") from None
    return found
