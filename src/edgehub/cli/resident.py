"""The resident host process: `hub exec` served by a process that has edgehub loaded.

A warm `hub exec` spends most of its host CPU importing edgehub (`benchmarks/bench_ort_local.py`
(e) measures both ways). With ``EDGEHUB_RESIDENT=on``, `hub exec ...` hands its
command line, working folder, environment and its stdin, stdout and stderr (the descriptors
themselves, over a Unix socket) to a resident process of the same edgehub, Python and
environment, which forks a child that runs the command exactly as `hub` would and reports its
exit code. The first call starts the resident process in the background and runs itself; the
resident process ends after ``EDGEHUB_KEEP_WARM`` seconds (600 by default) without a command.

The client forwards SIGINT, SIGTERM and SIGHUP to the child, so Ctrl-C and signals stop the
run as they stop `hub` (recorded KILLED, containers removed); a client that dies (SIGKILL)
closes the socket, and the child then stops as on SIGTERM. The socket lives in the private
cache folder ``resident/``, named by a digest of edgehub's sources (a changed tree gets a new
process), the interpreter and the environment variables that steer edgehub; a connection from
another user is refused. Linux only (descriptor passing and peer credentials); elsewhere, and
for every other command, `hub` runs as usual.

The client imports only the standard library: it is what the shell starts.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import signal
import socket
import stat
import struct
import sys
import time
import zlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


ENV = "EDGEHUB_RESIDENT"
_ON = ("1", "on", "true", "yes")
_OFF = ("", "0", "off", "false", "no")
_STEERING = ("EDGEHUB_", "DOCKER_", "XDG_", "PYTHON", "VIRTUAL_ENV", "HOME", "PATH", "TMPDIR")
_SOCKET_MAX = 100  # bytes: a Unix socket path is limited to 107 on Linux
_REQUEST_MAX = 4 << 20
_START_WAIT = 30.0  # seconds a started process has to answer before another is started


def through_resident(argv: list[str]) -> int | None:
    """Run ``argv`` in the resident process and return its exit code; None where `hub` should
    run it itself (not `hub exec`, resident off, no process yet: one is started)."""
    setting = os.environ.get(ENV, "").strip().lower()
    if setting in _OFF or not _is_exec(argv):
        return None
    if setting not in _ON:
        print(f"hub: error: {ENV}={setting!r} is not on or off; set {ENV}=on", file=sys.stderr)
        return 2
    if sys.platform != "linux" or not hasattr(socket, "send_fds"):
        return None
    path = _socket_path()
    if path is None:
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        conn.close()
        _start_server(path)
        return None
    with conn:
        try:
            request = marshal.dumps(
                {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "umask": _umask()}
            )
            socket.send_fds(conn, [struct.pack("!I", len(request)) + request], [0, 1, 2])
        except (OSError, ValueError):
            return None  # no working folder, a closed stdin...: hub runs it and says so
        return _run_remotely(conn)


def _is_exec(argv: list[str]) -> bool:
    """Whether the command ``argv`` names is `hub exec` (global options may come first)."""
    words = iter(argv)
    for word in words:
        if word == "--config":
            next(words, None)
        elif not word.startswith("-"):
            return word == "exec"
    return False


def _sources_signature() -> str:
    """The newest modification time and the count of edgehub's source files."""
    root = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    newest, count = 0, 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                newest = max(newest, os.stat(os.path.join(folder, name)).st_mtime_ns)
                count += 1
    return f"{root}:{newest}:{count}"


def _key() -> str:
    """Names the resident process of these sources, this Python and this environment."""
    steering = sorted((k, v) for k, v in os.environ.items() if k.startswith(_STEERING))
    python = (sys.prefix, os.path.realpath(sys.executable))  # python and python3 alike
    text = repr((python, _sources_signature(), steering, os.getuid())).encode()
    return f"{zlib.crc32(text):08x}{zlib.adler32(text):08x}{len(text) & 0xFFFF:04x}"


def _cache_root() -> str | None:
    """`edgehub.paths.cache_dir` in `os.path` words (the client stays lean); None for a
    setting that `hub` refuses (it then says why)."""
    for name, below in (("EDGEHUB_CACHE_DIR", ""), ("XDG_CACHE_HOME", "edgehub")):
        value = os.environ.get(name)
        if value:
            root = os.path.expanduser(value)
            return os.path.join(root, below) if os.path.isabs(root) else None
    return os.path.join(os.path.expanduser("~"), ".cache", "edgehub")


def _socket_path() -> str | None:
    """The socket of this environment's resident process, in the cache folder's private
    ``resident/`` (a folder there that is a link, another user's or open to others: None);
    the resident process makes the folder, checked as every cache folder is."""
    root = _cache_root()
    if root is None:
        return None
    folder = os.path.join(root, "resident")
    try:
        found = os.lstat(folder)
    except FileNotFoundError:
        found = None
    except OSError:
        return None
    if found is not None and (
        not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid() or found.st_mode & 0o077
    ):
        return None
    path = os.path.join(folder, f"{_key()}.sock")
    return path if len(os.fsencode(path)) <= _SOCKET_MAX else None


def _start_server(path: str) -> None:
    """Start the resident process for ``path`` in the background (its own session, its
    output in ``server.log`` beside the socket), unless one is starting already."""
    import subprocess

    marker = path.removesuffix(".sock") + ".starting"
    with contextlib.suppress(OSError):
        if time.time() - os.stat(marker).st_mtime < _START_WAIT:
            return  # another call is starting it
    try:
        with open(marker, "w"):
            pass
    except FileNotFoundError:
        pass  # no folder yet: the resident process makes it
    except OSError:
        return
    subprocess.Popen(
        [sys.executable, "-m", "edgehub.cli.resident", path],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def _run_remotely(conn: socket.socket) -> int:
    """The exit code of the command the resident process runs for ``conn``'s request; the
    signals this process gets meanwhile are passed on to the child that runs it."""
    stream = conn.makefile("rb")
    first = stream.readline().split()
    if len(first) != 2 or first[0] != b"pid":
        print("hub: error: the resident process did not answer; unset " + ENV, file=sys.stderr)
        return 3
    child = int(first[1])

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            os.kill(child, signum)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGWINCH):
        signal.signal(signum, forward)
    last = stream.readline().split()
    if len(last) == 2 and last[0] == b"exit":
        return int(last[1])
    print("hub: error: the resident process's command ended without an exit code", file=sys.stderr)
    return 1


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# -- the resident process ---------------------------------------------------------------------

_PRELOAD = (  # what a warm `hub exec` imports (`bench_ort_local.py` (e) shows the cost)
    "edgehub.cli.main",
    "edgehub.cli.commands",
    "edgehub.cli.exec_cmd",
    "edgehub.cli.signals",
    "edgehub.config.check",
    "edgehub.config.devices",
    "edgehub.config.load",
    "edgehub.config.user_trust",
    "edgehub.acquire.hold",
    "edgehub.agent.bundle",
    "edgehub.core.component.dispatch",
    "edgehub.images.catalog",
    "edgehub.ops.cleanup",
    "edgehub.ops.execute",
    "edgehub.ops.inputs",
    "edgehub.ops.options",
    "edgehub.toolchains.local_session",
    "edgehub.tracking.store",
    "edgehub.tracking.verdict_numbers",
    "edgehub.runners.docker.lite",
    "edgehub.runners.docker.runner",
    "numpy",
    "string",
    "tomllib",
)
_VERBS = ("invoke", "profile", "compile")  # whose parsers are built once ahead


def serve(path: Path) -> socket.socket | None:
    """Serve `hub exec` commands on ``path`` until idle for ``EDGEHUB_KEEP_WARM`` seconds
    (None); in each forked child, the client's connection (the caller runs `_child`)."""
    import gc
    import importlib

    from edgehub.limits import env_seconds
    from edgehub.paths import cache_subdir

    if cache_subdir("resident") != path.parent:  # made and checked as every cache folder
        return None
    log = os.open(path.parent / "server.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    for name in _PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError as error:
            print(f"resident: cannot preload {name}: {error}", file=sys.stderr)
    from edgehub.cli.main import build_parser
    from edgehub.core.runtimes import all_runtimes

    all_runtimes()
    for verb in _VERBS:  # imports the verbs' modules, and warms argparse's own caches
        build_parser(["exec", verb])
    idle = env_seconds("EDGEHUB_KEEP_WARM") or 600.0
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    staged = path.with_suffix(f".{os.getpid()}")
    listener.bind(str(staged))
    os.chmod(staged, 0o600)
    bound = os.stat(staged)
    listener.listen(16)
    path.with_suffix(".pid").write_text(f"{os.getpid()}\n")
    os.replace(staged, path)  # atomically: a client never meets a half-made socket
    path.with_suffix(".starting").unlink(missing_ok=True)
    gc.freeze()  # what is loaded now is shared with every child, never scanned again
    listener.settimeout(1.0)  # reap finished children each second (their CPU counts as ours)
    deadline = time.monotonic() + idle
    while True:
        _reap()
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            if time.monotonic() < deadline:
                continue
            _withdraw(path, bound, listener)
            return None
        deadline = time.monotonic() + idle
        conn.settimeout(None)
        if _peer_uid(conn) != os.getuid():
            conn.close()
            continue
        if os.fork() == 0:
            listener.close()
            return conn
        conn.close()


def _reap() -> None:
    """Wait for every child that has ended (so the kernel adds its CPU time to ours)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def _withdraw(path: Path, bound: os.stat_result, listener: socket.socket) -> None:
    """Remove ``path`` where it is still this process's socket (``bound``), and close it."""
    with contextlib.suppress(OSError):
        now = os.stat(path)
        if (now.st_ino, now.st_dev) == (bound.st_ino, bound.st_dev):
            path.unlink()
            path.with_suffix(".pid").unlink(missing_ok=True)
    listener.close()


def _peer_uid(conn: socket.socket) -> int:
    credentials = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", credentials)[1])


def _child(conn: socket.socket) -> None:
    """Run one command in this forked child and tell the client its exit code."""
    import atexit
    import io
    import threading

    code = [1]
    try:
        head, fds, _flags, _addr = socket.recv_fds(conn, 4, 3)
        size = struct.unpack("!I", head)[0]
        body = b""
        while len(body) < size and size <= _REQUEST_MAX:
            part = conn.recv(size - len(body))
            if not part:
                break
            body += part
        request = marshal.loads(body)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        os.umask(int(request["umask"]))
    except (OSError, ValueError, KeyError, TypeError, EOFError, struct.error):
        os._exit(1)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
    sys.stdout = io.TextIOWrapper(
        io.FileIO(1, "w", closefd=False), line_buffering=os.isatty(1), write_through=False
    )
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), line_buffering=True, errors="backslashreplace"
    )
    sys.argv = ["hub", *request["argv"]]
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()  # a fork shares its parent's generator state
    done = threading.Event()

    def report() -> None:  # registered first of this command's handlers: runs after them
        done.set()
        with contextlib.suppress(OSError):
            conn.sendall(f"exit {code[0]}\n".encode())

    def watch() -> None:  # the client gone (killed) before the end: stop as on SIGTERM
        with contextlib.suppress(OSError):
            while conn.recv(1):
                pass
        if not done.is_set():
            os.kill(os.getpid(), signal.SIGTERM)

    atexit.register(report)
    conn.sendall(f"pid {os.getpid()}\n".encode())
    threading.Thread(target=watch, name="resident-client", daemon=True).start()
    import gc

    from edgehub.cli.main import GC_THRESHOLDS, exit_now, main

    gc.set_threshold(*GC_THRESHOLDS)
    try:
        code[0] = main(request["argv"])
    except SystemExit as stop:
        code[0] = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    exit_now(code[0])


if __name__ == "__main__":
    from pathlib import Path

    accepted = serve(Path(sys.argv[1]))
    if accepted is not None:
        _child(accepted)
