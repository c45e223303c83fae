"""Where lease files live, checked before every use.

By default a directory private to the user: ``$XDG_RUNTIME_DIR/edgehub/leases`` where that
runtime directory is the user's own and not writable by others, else
``<temp dir>/edgehub-leases-<uid>``. It is made 0700 and must be a real directory (not a link)
owned by the user and not writable by group or others.

``$EDGEHUB_LEASE_DIR`` names a directory instead, to share leases with other users of this
host (so that their measurements and yours exclude each other). When missing it is made sticky
and world-writable (1777, as ``/tmp``). It is refused when it, or a directory above it, is
owned by another user than you or root, or is writable by group or others without the sticky
bit (anyone could then swap its lock files), when it is not a directory, and when you cannot
create files in it. Each refusal is one line (`EnvironmentProblem`, exit 3).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from edgehub.errors import EnvironmentProblem

_FIX = "set EDGEHUB_LEASE_DIR to a directory of your own"


def lease_directory() -> Path:
    """The lease directory to use now: ``$EDGEHUB_LEASE_DIR`` (checked), else the private one."""
    shared = os.environ.get("EDGEHUB_LEASE_DIR")
    if shared:
        return shared_directory(Path(shared).expanduser())
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_absolute() and _own_private(Path(runtime)):
        return _private(_private(Path(runtime) / "edgehub") / "leases")
    return _private(Path(tempfile.gettempdir()) / f"edgehub-leases-{os.getuid()}")


def _own_private(path: Path) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


def _private(path: Path) -> Path:
    """``path`` made (0700) if missing; refused unless a real directory of ours, not writable
    by others."""
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
        info = os.lstat(path)
    except OSError as error:
        raise EnvironmentProblem(
            f"cannot make the lease directory {path}: {error.strerror}; {_FIX}"
        ) from error
    if stat.S_ISLNK(info.st_mode):
        problem = "is a symbolic link"
    elif not stat.S_ISDIR(info.st_mode):
        problem = "is not a directory"
    elif info.st_uid != os.getuid():
        problem = f"is owned by {_user(info.st_uid)}, not by you"
    elif info.st_mode & 0o022:
        problem = f"is writable by others (mode {stat.S_IMODE(info.st_mode):o})"
    else:
        return path
    raise EnvironmentProblem(
        f"lease directory {path} {problem}; someone may have made it to interfere with your "
        f"leases: remove it, or {_FIX}"
    )


def shared_directory(path: Path) -> Path:
    """``path`` as a lease directory shared between users (made 1777 if missing), checked."""
    path = Path(os.path.abspath(path))
    try:
        info = os.stat(path)
    except FileNotFoundError:
        _make_shared(path)
        info = os.stat(path)
    except NotADirectoryError:
        raise _refuse(path, "is under a file, not a directory") from None
    except OSError as error:
        raise _refuse(path, f"cannot be read ({error.strerror})") from error
    if not stat.S_ISDIR(info.st_mode):
        raise _refuse(path, "is not a directory")
    real = Path(os.path.realpath(path))
    for folder in (real, *real.parents):
        _check_shared(path, folder, os.stat(folder))
    if not os.access(real, os.W_OK | os.X_OK):
        raise _refuse(path, "is not writable (read-only, or not yours to write)")
    return real


def _make_shared(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (NotADirectoryError, FileExistsError):
        raise _refuse(path, "is under a file, not a directory") from None
    except OSError as error:
        raise _refuse(path, f"cannot be created ({error.strerror})") from error
    try:
        if os.fstat(fd).st_uid == os.getuid():
            os.fchmod(fd, 0o1777)  # the directory we just made: sticky, for every user
    finally:
        os.close(fd)


def _check_shared(path: Path, folder: Path, info: os.stat_result) -> None:
    where = "" if folder == path else f" (at {folder})"
    if info.st_uid not in (0, os.getuid()):
        raise _refuse(
            path,
            f"is owned by {_user(info.st_uid)}, not by you or root{where}: that user could "
            "swap its lock files",
        )
    if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
        raise _refuse(
            path,
            f"is writable by group or others without the sticky bit{where}: anyone could swap "
            f"its lock files (chmod +t {folder})",
        )


def _refuse(path: Path, problem: str) -> EnvironmentProblem:
    return EnvironmentProblem(f"EDGEHUB_LEASE_DIR {path} {problem}; fix it or unset it")


def _user(uid: int) -> str:
    try:
        import pwd

        return f"user {pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"
