"""Path aliases of the public API, and where edgehub keeps its caches and the user's config."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path, PurePosixPath

LocalPath = Path
RemotePath = PurePosixPath


def is_remote(path: object) -> bool:
    """A path is remote when it is a `PurePosixPath` but not a concrete local `Path`."""
    return isinstance(path, PurePosixPath) and not isinstance(path, Path)


def cache_dir() -> Path:
    """edgehub's one cache folder, the only place any cache of edgehub lives:
    ``$EDGEHUB_CACHE_DIR``, else ``$XDG_CACHE_HOME/edgehub``, else ``~/.cache/edgehub``.

    A variable that is set but not an absolute path (after ``~``) is refused, naming it: it is
    never replaced by the default. Only the location: `cache_subdir` makes and checks folders."""
    for name, suffix, example in (
        ("EDGEHUB_CACHE_DIR", (), "~/.cache/edgehub"),
        ("XDG_CACHE_HOME", ("edgehub",), "~/.cache"),
    ):
        value = os.environ.get(name)
        if value:
            root = Path(value).expanduser()
            if not root.is_absolute():
                from edgehub.errors import UsageError

                raise UsageError(
                    f"{name}={value!r} is not an absolute path; set it to an absolute folder "
                    f"(e.g. {example}) or unset it"
                )
            return root.joinpath(*suffix)
    return Path.home() / ".cache" / "edgehub"


def cache_subdir(*parts: str) -> Path:
    """The folder ``cache_dir()/parts…``, made where missing (mode 0700), with every folder from
    the cache folder down checked before anything is written in it (`_private_folder`)."""
    root = cache_dir()
    root.parent.mkdir(parents=True, exist_ok=True)  # the user's own (~/.cache): may be a link
    return _walk(root, parts, create=True)


def existing_cache_subdir(*parts: str) -> Path | None:
    """`cache_subdir` without making anything: None where a folder on the way is missing."""
    root = cache_dir()
    try:
        return _walk(root, parts, create=False)
    except FileNotFoundError:
        return None


def _walk(root: Path, parts: tuple[str, ...], *, create: bool) -> Path:
    """``root/parts…``, each folder checked (`_private_folder`) through its parent's descriptor."""
    fd = _private_folder(None, str(root), root, top=True, create=create)
    path = root
    try:
        for part in parts:
            path = path / part
            inner = _private_folder(fd, part, path, top=False, create=create)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)
    return path


_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _private_folder(parent: int | None, name: str, path: Path, *, top: bool, create: bool) -> int:
    """An open descriptor of folder ``name`` (in the folder ``parent`` is open on; ``path``
    for messages), made 0700 when ``create`` and missing. It must be a real folder (never
    followed through a link) of this user; a folder of ours inside the cache that others may
    read or write is made 0700 through its descriptor, and the cache folder itself (``top``,
    which may be the user's own choice) must not be writable by others. Anything else is
    refused: `~edgehub.errors.EnvironmentProblem` naming the path."""
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o700, dir_fd=parent)
    found = os.stat(name, dir_fd=parent, follow_symlinks=False)
    flags = _DIRECTORY
    if top and stat.S_ISLNK(found.st_mode) and found.st_uid == os.geteuid():
        # the user's own link for the whole cache (to another disk): its target is checked
        flags &= ~os.O_NOFOLLOW
        found = os.stat(name, dir_fd=parent)
    problem = _problem(found, top)
    if problem is None:
        try:
            fd = os.open(name, flags, dir_fd=parent)
        except OSError as error:
            if error.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            problem = "is a symbolic link or not a folder"
        else:
            now = os.fstat(fd)
            same = (now.st_dev, now.st_ino) == (found.st_dev, found.st_ino)
            problem = _problem(now, top) if same else "changed while it was checked"
            if problem is None:
                if not top and stat.S_IMODE(now.st_mode) & 0o077:
                    os.fchmod(fd, 0o700)  # ours: through the descriptor, never a link
                return fd
            os.close(fd)
    from edgehub.errors import EnvironmentProblem

    raise EnvironmentProblem(
        f"cache folder {path} {problem}; edgehub will not use it: remove it, or set "
        "EDGEHUB_CACHE_DIR to a folder of your own"
    )


def _problem(found: os.stat_result, top: bool) -> str | None:
    if stat.S_ISLNK(found.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(found.st_mode):
        return "is not a folder"
    if found.st_uid != os.geteuid():
        return f"belongs to another user (uid {found.st_uid})"
    if top and stat.S_IMODE(found.st_mode) & 0o022:
        return "may be written by other users"
    return None


def user_config_dir() -> Path:
    """The user's own edgehub settings, never a project's: ``$XDG_CONFIG_HOME/edgehub``, by
    default ``~/.config/edgehub``."""
    base = Path(os.environ.get("XDG_CONFIG_HOME") or "").expanduser()
    return (base if base.is_absolute() else Path.home() / ".config") / "edgehub"
