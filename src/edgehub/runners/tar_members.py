"""The rules every tar member read here must pass, held once: `archive.safe_extract` (what a
device sends) and the run-bundle reader (`hub runs import`) both list an archive through
`list_members` and read it through `BoundedReads`.

Refused, before anything is written: absolute names and ``..`` (and, in a bundle, backslashes and
NUL bytes: `MemberRules.strict_names`), devices and FIFOs, member types other than files,
folders and links, links of any kind where `MemberRules.links` is False, a name the caller's
whitelist (`MemberRules.allowed`) rejects, a file name twice where `MemberRules.unique`, and an
archive over its limits (entry count, path depth, one file's size, all files' size). Where links
are allowed, whether each one stays inside the target is the extractor's to check, against the
tree it writes. Each caller words the refusal (`MemberRules.refuse`, `MemberRules.over`).
"""

from __future__ import annotations

import os
import re
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import BinaryIO

from edgehub.limits import FetchLimits, human_size

MAX_HEADER = 1 << 20  # one tar header (a long name, pax records); no single read may be larger


@dataclass(frozen=True)
class MemberRules:
    """How one kind of archive is read: its limits, its stricter rules, and its words.

    ``refuse(why)`` makes the error for a member refused by name or kind, ``over(why)`` the one
    for a broken limit; ``place`` names what ``..`` would leave ("the target", "the bundle")."""

    limits: FetchLimits
    refuse: Callable[[str], Exception]
    over: Callable[[str], Exception]
    place: str = "the target"
    links: bool = True
    strict_names: bool = False
    unique: bool = False
    allowed: Callable[[tarfile.TarInfo], str | None] | None = None


def member_problem(member: tarfile.TarInfo, rules: MemberRules) -> str | None:
    """Why ``member`` is refused by its name or kind, in words after which nothing need follow;
    None when it passes."""
    name = member.name
    if (member.issym() or member.islnk()) and not rules.links:
        return f"{name!r} is a link ({member.linkname!r}); only files may be in it"
    if member.ischr() or member.isblk() or member.isfifo():
        return f"{name!r} is a device or FIFO"
    if not (member.isreg() or member.isdir() or member.issym() or member.islnk()):
        return f"{name!r} is of an unsupported type (not a file, folder or link)"
    parts = [part for part in PurePosixPath(name).parts if part != "."]
    if name.startswith("/") or os.path.isabs(name) or re.match(r"^[A-Za-z]:", name):
        return f"{name!r} is an absolute path"
    if ".." in parts or (rules.strict_names and ("\\" in name or "\0" in name)):
        return f"{name!r} leaves {rules.place} ('..')"
    if not parts and not member.isdir():
        return f"{name!r} names no file"
    return rules.allowed(member) if rules.allowed is not None and parts else None


def list_members(tar: tarfile.TarFile, rules: MemberRules) -> list[tarfile.TarInfo]:
    """The archive's members, each checked as it is read: refused as soon as one breaks a rule."""
    return list(iter_members(tar, rules))


def iter_members(tar: tarfile.TarFile, rules: MemberRules) -> Iterator[tarfile.TarInfo]:
    """`list_members` one at a time: each member is checked before it is yielded, so a caller
    that reads each member's data as it comes never reads past a refused one."""
    limits = rules.limits
    count = 0
    total = 0
    seen: set[str] = set()
    while (member := tar.next()) is not None:
        count += 1
        name = member.name
        if count > limits.max_files:
            raise rules.over(
                f"it holds more than {limits.max_files} entries; raise "
                f"{limits.variable('files')} to accept more"
            )
        depth = len([part for part in PurePosixPath(name).parts if part not in ("/", ".")])
        if depth > limits.max_depth:
            raise rules.over(
                f"it holds a path {depth} levels deep ({name[:80]!r}...), over the limit of "
                f"{limits.max_depth}; raise {limits.variable('depth')} to accept it"
            )
        why = member_problem(member, rules)
        if why is not None:
            raise rules.refuse(why)
        if not member.isreg():
            yield member
            continue
        if rules.unique and name in seen:
            raise rules.refuse(f"{name!r} is in it twice")
        seen.add(name)
        if member.size > limits.max_member_bytes:
            raise rules.over(
                f"{name!r} is {human_size(member.size)}, over the limit of "
                f"{human_size(limits.max_member_bytes)} a file; raise "
                f"{limits.variable('member_bytes')} to accept it"
            )
        total += member.size
        if total > limits.max_bytes:
            raise rules.over(
                f"its files are over {human_size(limits.max_bytes)}; raise "
                f"{limits.variable('bytes')} to accept more"
            )
        yield member


class BoundedReads:
    """A file as `tarfile` reads it: no single read over `MAX_HEADER` bytes (only a header asks
    for more: a pax record or a long name), and while ``listing``, no more than ``header_budget``
    bytes in all (the member list carries no file data). ``over(why)`` makes the error."""

    def __init__(
        self,
        raw: BinaryIO,
        over: Callable[[str], Exception],
        header_budget: int | None = None,
    ) -> None:
        self._raw = raw
        self._over = over
        self._budget = header_budget
        self.listing = True
        self.header_bytes = 0

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0 or size > MAX_HEADER:
            raise self._over(f"one of its headers is over {human_size(MAX_HEADER)}")
        data: bytes = self._raw.read(size)
        if self.listing and self._budget is not None:
            self.header_bytes += len(data)
            if self.header_bytes > self._budget:
                raise self._over(
                    f"its headers (names, pax records) are over {human_size(self._budget)}"
                )
        return data

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return int(self._raw.seek(offset, whence))

    def tell(self) -> int:
        return int(self._raw.tell())
