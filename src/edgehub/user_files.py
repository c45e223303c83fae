"""Files a user names (a model, input data): regular files only, and room for their copies.

Whatever is named is looked at with `os.stat`, which opens nothing, before anything reads it: a
FIFO would block its reader forever, ``/dev/zero`` never ends, a socket cannot be read, and a
directory given as a model (``""`` is the current directory) would be copied whole, and the
"regular" files of ``/proc`` and ``/sys`` block (``/proc/kmsg``) or fail. Each is refused with a
one-line error. A copy is made only where the destination's file system has room
for it (`ensure_room`), and a file is opened without blocking and checked again when copied
(`copy_regular`), so one swapped for a FIFO after the check cannot hang the copy.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from edgehub.errors import InputDataError, ModelError, StorageError, UsageError
from edgehub.fsutil import link_tree

_KERNEL_TREES = ("/proc", "/sys")
HEADROOM = 64 << 20
"""Bytes a copy leaves free on its file system (the run store's database and logs need some)."""

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _stat(path: Path, what: str, error: type[UsageError]) -> os.stat_result:
    try:
        return path.stat()
    except FileNotFoundError:
        raise error(f"{what} {path} not found; check the path") from None
    except OSError as why:
        raise error(f"cannot read {what} {path}: {why.strerror or why}; check the path") from None


def regular_file(
    path: str | os.PathLike[str],
    what: str = "model",
    error: type[UsageError] = ModelError,
    *,
    directory_ok: bool = False,
) -> Path:
    """``path`` as a `Path` if it names a regular file (through links), else ``error`` saying
    what it is. ``directory_ok`` also lets a directory through (never a FIFO, device or
    socket)."""
    text = os.fspath(path)
    if not str(text).strip():
        raise error(f"the {what} path is empty; give the path of a {what} file")
    found = Path(text).expanduser()
    mode = _stat(found, what, error).st_mode
    kernel = _kernel_file_system(found)
    if kernel is not None:
        raise error(f"{what} {found} is a file of the kernel's {kernel}, not a {what} file")
    if stat.S_ISREG(mode) or (directory_ok and stat.S_ISDIR(mode)):
        return found
    wanted = "a regular file or a directory" if directory_ok else f"a regular {what} file"
    raise error(f"{what} {found} is {_kind(mode)}, not a regular file; give {wanted}")


def _kernel_file_system(path: Path) -> str | None:
    """``/proc`` or ``/sys`` where ``path`` leads there: their "regular" files may block a
    reader (``/proc/kmsg``), fail every read or never end."""
    parts = Path(os.path.realpath(path)).parts
    top = f"/{parts[1]}" if len(parts) > 1 else ""
    return top if top in _KERNEL_TREES else None


def input_data_path(path: str | os.PathLike[str], flag: str = "--input") -> Path:
    """Input data a user named: an ``.npz``/``.npy`` file, or a directory holding ``.npz``
    samples (one per file; special files among them refused)."""
    found = regular_file(path, "input data", InputDataError, directory_ok=True)
    if found.is_file():
        return found
    samples = sorted(found.glob("*.npz")) or sorted(found.glob("*.npy"))
    if not samples:
        raise InputDataError(
            f"{flag} directory {found} holds no .npz samples; pass an .npz file, or a directory "
            "of them (one sample per file)"
        )
    for sample in samples:
        regular_file(sample, "input sample", InputDataError)
    return found


def tree_size(path: Path) -> int:
    """Bytes of a file, or of the regular files under a directory (links not followed)."""
    if not path.is_dir():
        return path.stat().st_size
    total = 0
    for folder, _, names in os.walk(path):
        for name in names:
            info = os.lstat(os.path.join(folder, name))
            total += info.st_size if stat.S_ISREG(info.st_mode) else 0
    return total


def ensure_room(size: int, destination: Path, what: str) -> None:
    """Refuse (exit 3) a copy of ``size`` bytes that would leave less than `HEADROOM` free on
    the file system of ``destination`` (a directory, made or not yet)."""
    place = next((f for f in (destination, *destination.parents) if f.exists()), destination)
    try:
        info = os.statvfs(place)
    except OSError:
        return  # nothing to measure with; the copy itself reports a full disk
    free = info.f_bavail * info.f_frsize
    if size + HEADROOM > free:
        raise StorageError(
            f"not enough free space in {place} for {what} ({_mb(size)} needed, {_mb(free)} "
            "free); free some space, or point EDGEHUB_STORE at a larger disk"
        )


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def copy_regular(src: str, dst: str) -> str:
    """Copy regular file ``src`` to a new file ``dst``; anything else (a FIFO swapped in
    since it was checked) is refused without blocking. A partial ``dst`` is removed."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(src, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ModelError(f"{src} is {_kind(mode)}, not a regular file; it was not copied")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as source, open(dst, "xb") as target:
            try:
                shutil.copyfileobj(source, target, 1 << 20)
                os.fchmod(target.fileno(), stat.S_IMODE(mode))
            except BaseException:
                target.close()
                os.unlink(dst)
                raise
    finally:
        os.close(fd)
    return dst


def link_or_copy_checked(source: Path, target: Path) -> None:
    """Hard-link ``source`` (a file or a directory's files) to ``target``; where a link is
    impossible (another file system), copy it after `ensure_room` and through `copy_regular`."""
    try:
        link_tree(source, target, _link)
        return
    except OSError:
        shutil.rmtree(target, ignore_errors=True) if target.is_dir() else target.unlink(True)
    ensure_room(tree_size(source), target.parent, f"a copy of {source}")
    try:
        link_tree(source, target, copy_regular)
    except OSError as why:  # the source went away, or cannot be read
        raise ModelError(f"cannot copy {source}: {why.strerror or why}; check the file") from None


def _link(src: str, dst: str) -> str:
    mode = os.stat(src).st_mode
    if not stat.S_ISREG(mode):  # a linked FIFO would hang its reader on the other side
        raise ModelError(f"{src} is {_kind(mode)}, not a regular file; it was not staged")
    os.link(src, dst)
    return dst
