"""A job's folder that a container wrote in place, on this host, taken in as the tar would be.

A one-shot container may work in a bind mount of a private host folder instead of sending its
results back as a tar (``docker/oneshot.py``). What it left there is as untrusted as an archive
from a device, so `adopt_folder` takes the folder only once the container has stopped and every
entry checks out: regular files and folders only (no links, pipes or sockets), within
`~edgehub.limits.FetchLimits` (total and per-file sizes, entry count, depth). The files are then
given to this process's user, stripped of set-user-id, set-group-id and sticky bits, and the folder
renamed into place: no copy.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from edgehub.errors import DeviceOutputError
from edgehub.limits import FetchLimits
from edgehub.runners.archive import human_size

_SPECIAL = stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX


def adopt_folder(source: Path, local: Path, limits: FetchLimits) -> None:
    """Move folder ``source`` to exactly ``local`` (replacing it) after checking it (see the
    module docstring); nothing happens where ``source`` is not a folder (nothing came back).
    Raises `DeviceOutputError`, naming the limit to raise, and leaves ``local`` alone."""
    try:
        if not stat.S_ISDIR(os.lstat(source).st_mode):
            return
    except FileNotFoundError:
        return
    entries = [source]
    count = total = 0
    for root, dirs, files in os.walk(source):  # links are not followed, but refused below
        depth = len(Path(root).relative_to(source).parts) + 1
        for name in (*dirs, *files):
            path = Path(root, name)
            info = os.lstat(path)
            where = path.relative_to(source.parent).as_posix()
            if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
                raise DeviceOutputError(f"the device returned {where}, which is not a file")
            count += 1
            if count > limits.max_files:
                raise DeviceOutputError(
                    f"the device returned more than {limits.max_files} files; raise "
                    f"{limits.variable('files')} to accept more"
                )
            if depth > limits.max_depth:
                raise DeviceOutputError(
                    f"the device returned {where}, deeper than {limits.max_depth} levels; "
                    f"raise {limits.variable('depth')} to accept it"
                )
            if stat.S_ISREG(info.st_mode):
                total += info.st_size
                if info.st_size > limits.max_member_bytes or total > limits.max_bytes:
                    one = info.st_size > limits.max_member_bytes
                    cap = limits.max_member_bytes if one else limits.max_bytes
                    raise DeviceOutputError(
                        f"the device returned more than {human_size(cap)} "
                        f"{'in ' + where if one else 'in all'}; raise "
                        f"{limits.variable('member_bytes' if one else 'bytes')} to accept more"
                    )
            entries.append(path)
    for path in entries:
        info = os.lstat(path)
        if os.geteuid() == 0 and (info.st_uid, info.st_gid) != (0, os.getegid()):
            os.lchown(path, 0, os.getegid())  # else they are this user's: the container ran as it
        if info.st_mode & _SPECIAL:  # no set-id or sticky bit survives, whoever owns it now
            os.chmod(path, stat.S_IMODE(info.st_mode) & ~_SPECIAL)
    local.parent.mkdir(parents=True, exist_ok=True)
    if local.exists() or local.is_symlink():
        shutil.rmtree(local) if local.is_dir() and not local.is_symlink() else local.unlink()
    os.replace(source, local)
