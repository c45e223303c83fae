"""The agent server's side of one job, in the process forked for it.

The process announces itself, takes its own process group (the server kills it with all it
started), drops what it inherited, points stdin at /dev/null and stdout/stderr at the
connection, takes the client's cwd, umask and environment, and runs ``cli.main`` on the
client's arguments: the same result file and exit code as a normal run.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import traceback
from typing import Any, Iterable

from ..entry import flush_output
from .stage import StageError, remove_job_folder, send_back, unpack
from .wire import START, CliMain, marker

PR_SET_PDEATHSIG = 1
_libc: Any = None


def load_libc() -> None:
    """Load libc once in the server (ctypes is slow to import), for ``die_with_parent``."""
    global _libc
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        _libc = ctypes.CDLL(None, use_errno=True)
    except (ImportError, OSError):
        _libc = None


def die_with_parent(parent: int) -> None:
    """Ask Linux to SIGKILL this process when the server dies (best effort)."""
    prctl = getattr(_libc, "prctl", None)
    if prctl is None:
        return
    try:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except Exception:
        return
    if os.getppid() != parent:  # the server died before the request took effect
        os._exit(137)


def reset_signals() -> None:
    """Give the job the signal dispositions of a freshly started Python."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def redirect_output(conn: socket.socket) -> None:
    """stdin from /dev/null, stdout and stderr (file descriptors 0-2) to the connection."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(conn.fileno(), 1)
    os.dup2(conn.fileno(), 2)
    conn.close()  # fds 1 and 2 keep the connection open


def adopt_client(request: dict[str, Any]) -> None:
    os.chdir(request["cwd"])
    if request.get("umask") is not None:
        os.umask(int(request["umask"]) & 0o777)
    env = request.get("env")
    if env is not None:
        os.environ.clear()
        os.environ.update(env)


def run_job(
    conn: socket.socket,
    request: dict[str, Any],
    cli_main: CliMain,
    server_pid: int,
    inherited: Iterable[int],
    upload: bytes = b"",
) -> None:
    """Run one job in the forked process (first unpacking the files sent with it, at the end
    sending back the folder asked for, see :mod:`.stage`); never returns (ends with
    ``os._exit``)."""
    code = 1
    try:
        os.setpgid(0, 0)
        reset_signals()
        die_with_parent(server_pid)
        for fd in inherited:
            try:
                os.close(fd)
            except OSError:
                pass
        conn.sendall(marker(START, os.getpid()))
        redirect_output(conn)
        stage = request.get("stage")
        try:
            if stage is not None:
                unpack(upload, os.path.dirname(request["cwd"]), stage.get("links"))
            adopt_client(request)
        except (OSError, StageError) as exc:
            sys.stderr.write(f"error: the agent server cannot take the client's setup: {exc}\n")
        else:
            argv = list(request["argv"])
            sys.argv = [sys.argv[0], *argv]
            try:
                code = cli_main(argv)
            finally:
                if stage is not None:
                    flush_output()
                    send_back(stage, request["cwd"])
                    remove_job_folder(request["cwd"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        try:
            traceback.print_exc()
        except BaseException:
            pass
        code = 1
    finally:
        flush_output()
        os._exit(code & 0xFF)
