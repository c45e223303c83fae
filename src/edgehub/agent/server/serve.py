"""``edgehub-agent serve --socket PATH [--idle S] [--preload NS]``: a warm agent, one fork per job.

The server imports the runtime of its image once (``--preload ort``: the ``PRELOAD`` modules of
the namespace and its command modules), listens on a Unix socket (mode 0600) and, for each
connection, reads one request (:mod:`.wire`) and forks a process that runs the ordinary command
line on it (:mod:`.job`), so a job skips the interpreter's and the libraries' start-up. One event
loop (no threads, so forking is safe) accepts, reads requests, passes signals on, kills a job
whose client went away and reaps finished jobs (the table is :mod:`.jobs`). It exits, removing
the socket, after ``--idle`` seconds without a job, on SIGTERM/SIGINT/SIGHUP (after signalling
its jobs and waiting for them), or within ``SOCKET_CHECK_S`` once its socket is gone (the SSH
connection that started it ended, see ``runners/ssh/janitor.py``).

One server per socket path: it holds ``PATH.lock`` (flock) while it lives. Messages go to stderr
(``PATH.log`` when a client started it).
"""

from __future__ import annotations

import errno
import fcntl
import gc
import importlib
import os
import selectors
import signal
import socket
import stat
import sys
import time
import warnings
from types import FrameType
from typing import Any, Sequence

from ..argv import ArgvProblem, read_options
from ..commands import preload_modules
from ..entry import flush_output
from ..env import collect_env
from ..protocol import EXIT_OK, EXIT_USER, UsageError
from .job import load_libc, run_job
from .jobs import Job, JobTable, signal_group
from .wire import (
    EXIT,
    MAX_REQUEST_BYTES,
    REFUSED,
    CliMain,
    decode_request,
    marker,
    python_identity,
    socket_address,
)

SERVE_USAGE = "usage: edgehub-agent serve --socket PATH [--idle SECONDS] [--preload NAMESPACE]"
DEFAULT_IDLE_S = 600.0
REQUEST_TIMEOUT_S = 10.0  # a connection must send its request within this
SEND_TIMEOUT_S = 2.0
SOCKET_CHECK_S = 1.0  # how often the server checks that its socket is still there
# Environment variables that the interpreter or the preloaded libraries read when they start: a
# client whose values differ would not get what a fresh process gives it, so it is refused.
IMPORT_TIME_ENV = (
    "PYTHON", "LD_", "LANG", "LC_", "OMP_", "KMP_", "GOMP_", "OPENBLAS_", "GOTO", "MKL_", "BLIS_",
    "VECLIB_", "NUMEXPR_", "NPY_", "ORT_", "ONNXRUNTIME")  # fmt: skip


class ServeUsageError(ValueError):
    pass


def parse_serve_args(argv: Sequence[str]) -> tuple[str, float, list[str]]:
    """(socket path, idle seconds, runtime namespaces to preload)."""
    try:
        words, values = read_options(argv, ("--socket", "--idle", "--preload"))
    except ArgvProblem as problem:
        raise ServeUsageError(str(problem)) from None
    if words:
        raise ServeUsageError(f"unexpected argument {words[0]!r}")
    if not values.get("--socket"):
        raise ServeUsageError("--socket PATH is required")
    idle = DEFAULT_IDLE_S
    if "--idle" in values:
        try:
            idle = float(values["--idle"])
        except ValueError:
            idle = -1.0
        if not idle > 0:
            raise ServeUsageError(f"--idle must be a number of seconds > 0, got {values['--idle']}")
    preload = [n for n in values.get("--preload", "").split(",") if n]
    return os.path.abspath(values["--socket"]), idle, preload


def log(message: str) -> None:
    try:
        sys.stderr.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} agent server: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def preload(namespaces: Sequence[str], modules: Sequence[str]) -> None:
    """Import what jobs will need, and fill the caches ``collect_env`` uses; failures are left to
    the jobs, which meet them exactly as a fresh process would. Then freeze what is loaded out of
    the garbage collector's reach, so that a job's ``gc.collect()`` neither walks the libraries'
    objects nor copies their memory pages (copy-on-write) to do so."""
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:
            pass
    try:
        collect_env(namespaces)
    except Exception:
        pass
    gc.collect()
    gc.freeze()


def answers(path: str) -> bool:
    """Whether something accepts connections on the Unix socket ``path``."""
    from .client import connect

    probe = connect(path)
    if probe is not None:
        probe.close()
    return probe is not None


def send_and_close(conn: socket.socket, data: bytes) -> None:
    try:
        conn.settimeout(SEND_TIMEOUT_S)
        conn.sendall(data)
    except OSError:
        pass
    finally:
        conn.close()


class Pending:
    def __init__(self, deadline: float) -> None:
        self.data = bytearray()  # the request line as it comes, then its stage's files
        self.deadline = deadline
        self.request: dict[str, Any] | None = None  # read; its stage still arriving
        self.stage_size = 0


class Server:
    def __init__(self, path: str, idle: float, cli_main: CliMain, lock_fd: int) -> None:
        self.path = path
        self.cli_main = cli_main
        self.lock_fd = lock_fd
        self.selector = selectors.DefaultSelector()
        self.listener: socket.socket | None = None
        self.bound: tuple[int, int] | None = None  # (st_dev, st_ino) of the socket we made
        self.wakeup_r, self.wakeup_w = os.pipe()
        self.jobs = JobTable()
        self.pending: dict[socket.socket, Pending] = {}
        self.idle_s = idle
        self.idle_since = time.monotonic()  # when the last job or connection went
        self.stop_signal: int | None = None
        self.stopping = False
        self.identity = python_identity()
        self.start_env = dict(os.environ)

    # --- set-up and tear-down ---------------------------------------------------------------

    def bind(self) -> None:
        try:
            mode = os.lstat(self.path).st_mode
        except FileNotFoundError:
            pass
        else:
            if not stat.S_ISSOCK(mode):
                raise OSError(f"{self.path} exists and is not a socket; not replacing it")
            os.unlink(self.path)  # stale: its server is gone (we hold the lock)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)  # created 0600: only this user may run jobs
        try:
            with socket_address(self.path) as address:
                listener.bind(address)
        except OSError:
            listener.close()
            raise
        finally:
            os.umask(old_umask)
        os.chmod(self.path, 0o600)
        info = os.stat(self.path)
        self.bound = (info.st_dev, info.st_ino)
        listener.listen(128)
        listener.setblocking(False)
        self.listener = listener
        self.selector.register(listener, selectors.EVENT_READ, self.accept)

    def install_signals(self) -> None:
        for fd in (self.wakeup_r, self.wakeup_w):
            os.set_blocking(fd, False)
        signal.set_wakeup_fd(self.wakeup_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # the wakeup fd ends the select
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, self.on_stop)
        self.selector.register(self.wakeup_r, selectors.EVENT_READ, self.drain_wakeup)

    def on_stop(self, signum: int, frame: FrameType | None) -> None:
        self.stop_signal = signum

    def drain_wakeup(self, fileobj: Any) -> None:
        try:
            while os.read(self.wakeup_r, 512):
                pass
        except (BlockingIOError, InterruptedError):
            pass

    def close_listener(self) -> None:
        if self.listener is None:
            return
        self.selector.unregister(self.listener)
        try:
            info = os.stat(self.path)
            if (info.st_dev, info.st_ino) == self.bound:
                os.unlink(self.path)
        except OSError:
            pass
        self.listener.close()
        self.listener = None

    def stop(self) -> None:
        """Stop accepting; pass SIGTERM to the running jobs (SIGKILL after the grace period)."""
        self.stopping = True
        self.close_listener()
        for conn in list(self.pending):
            self.drop_pending(conn)
        self.jobs.terminate_all()

    # --- the loop -----------------------------------------------------------------------------

    def run(self) -> None:
        while True:
            if self.stop_signal is not None and not self.stopping:
                log(f"signal {self.stop_signal}: stopping")
                self.stop()
            if self.stopping and not self.jobs:
                return
            if not self.stopping and self.socket_gone():
                log(f"{self.path} is gone: stopping")
                self.stop()
                continue
            now = time.monotonic()
            if not self.jobs and not self.pending and now - self.idle_since >= self.idle_s:
                log(f"idle for {self.idle_s:g} s: exiting")
                return
            for key, _ in self.selector.select(self.timeout(now)):
                key.data(key.fileobj)
            self.reap()
            self.enforce_deadlines()

    def timeout(self, now: float) -> float:
        deadlines = [p.deadline for p in self.pending.values()]
        deadlines += self.jobs.deadlines()
        if not self.jobs and not self.pending:
            deadlines.append(self.idle_since + self.idle_s)
        return max(0.0, min(min(deadlines) - now, SOCKET_CHECK_S)) if deadlines else SOCKET_CHECK_S

    def socket_gone(self) -> bool:
        """Whether the socket this server made was removed or replaced."""
        if self.bound is None:
            return False
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return (info.st_dev, info.st_ino) != self.bound

    def enforce_deadlines(self) -> None:
        now = time.monotonic()
        for conn, pending in list(self.pending.items()):
            if now >= pending.deadline:
                self.drop_pending(conn)
        self.jobs.kill_overdue(now)

    def became_idle(self) -> None:
        if not self.jobs and not self.pending:
            self.idle_since = time.monotonic()

    # --- connections and requests ------------------------------------------------------------

    def accept(self, listener: Any) -> None:
        while self.listener is not None:
            try:
                conn, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # e.g. out of file descriptors: try again on the next call
                log(f"accept failed: {exc}")
                time.sleep(0.1)  # the listener stays readable: do not spin
                return
            # Blocking: a job's process shares this file description, and O_NONBLOCK would be
            # shared with it; the server's own reads pass MSG_DONTWAIT instead.
            conn.setblocking(True)
            self.pending[conn] = Pending(time.monotonic() + REQUEST_TIMEOUT_S)
            self.selector.register(conn, selectors.EVENT_READ, self.read_request)

    def drop_pending(self, conn: socket.socket, refusal: str | None = None) -> None:
        """Forget a connection whose job never started (telling it why, with a refusal)."""
        self.pending.pop(conn, None)
        self.selector.unregister(conn)
        if refusal is None:
            conn.close()
        else:
            send_and_close(conn, marker(REFUSED, refusal))
        self.became_idle()

    def read_request(self, conn: Any) -> None:
        pending = self.pending.get(conn)
        if pending is None:  # dropped earlier in the same round of events
            return
        data = receive(conn)
        if data is None:
            return
        if not data:
            self.drop_pending(conn)
            return
        pending.data += data
        if pending.request is None:
            line, newline, rest = pending.data.partition(b"\n")
            if not newline:
                if len(pending.data) > MAX_REQUEST_BYTES:
                    self.drop_pending(conn, "request too large")
                return
            try:
                request = decode_request(bytes(line))
            except ValueError as exc:
                self.drop_pending(conn, f"bad request: {exc}")
                return
            reason = self.mismatch(request)
            if reason:
                self.drop_pending(conn, reason)
                return
            stage = request.get("stage")  # its files follow the line: wait for all of them
            pending.request, pending.data = request, rest
            pending.stage_size = 0 if stage is None else stage["size"]
        pending.deadline = time.monotonic() + REQUEST_TIMEOUT_S  # a stalled upload is dropped
        size = pending.stage_size
        if len(pending.data) >= size:  # all the files have come (control lines may follow)
            self.pending.pop(conn)
            self.selector.unregister(conn)
            self.start(
                conn, pending.request, bytes(pending.data[size:]), bytes(pending.data[:size])
            )

    def mismatch(self, request: dict[str, Any]) -> str | None:
        """Why this server cannot run the request as a fresh process would, if it cannot."""
        theirs = request.get("python")
        if theirs is not None and theirs != self.identity:
            return "the client runs another Python installation"
        env = request.get("env")
        if env is None:
            return None
        keys = {k for k in (*env, *self.start_env) if k.startswith(IMPORT_TIME_ENV)}
        differ = sorted(k for k in keys if env.get(k) != self.start_env.get(k))
        if differ:
            return "environment differs from the server's in " + ", ".join(differ[:8])
        return None

    def start(
        self, conn: socket.socket, request: dict[str, Any], rest: bytes, upload: bytes = b""
    ) -> None:
        inherited = [self.wakeup_r, self.wakeup_w, self.lock_fd]
        inherited += [c.fileno() for c in self.pending]
        inherited += [c.fileno() for c in self.jobs.connections()]
        if self.listener is not None:
            inherited.append(self.listener.fileno())
        selector_fd = getattr(self.selector, "fileno", None)
        if callable(selector_fd):
            inherited.append(selector_fd())
        flush_output()  # or the child would repeat what is buffered
        server_pid = os.getpid()
        try:
            with warnings.catch_warnings():  # 3.12+ frowns on forking with threads (BLAS's)
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
        except OSError as exc:
            send_and_close(conn, marker(REFUSED, f"cannot fork: {exc}"))
            self.became_idle()
            return
        if pid == 0:
            run_job(conn, request, self.cli_main, server_pid, inherited, upload)
        job = self.jobs.add(pid, conn, stopping=self.stopping)
        self.selector.register(conn, selectors.EVENT_READ, lambda c: self.read_control(job))
        if rest:
            self.control(job, rest)

    def read_control(self, job: Job) -> None:
        if job.conn is None:
            return
        data = receive(job.conn)
        if data is None:
            return
        if not data:  # the client closed or died: the job goes with it
            self.client_gone(job)
            return
        self.control(job, data)

    def control(self, job: Job, data: bytes) -> None:
        if not self.jobs.control(job, data):
            self.client_gone(job)

    def client_gone(self, job: Job) -> None:
        signal_group(job.pid, signal.SIGKILL)
        if job.conn is not None:
            self.selector.unregister(job.conn)
            job.conn.close()
            job.conn = None

    # --- finished jobs ------------------------------------------------------------------------

    def reap(self) -> None:
        for job, code in self.jobs.reap():
            if job.conn is not None:
                self.selector.unregister(job.conn)
                send_and_close(job.conn, marker(EXIT, code))
                job.conn = None
            self.became_idle()


def receive(conn: socket.socket) -> bytes | None:
    """Bytes available now; b"" at end of stream or on error; None when nothing is there yet."""
    try:
        return conn.recv(65536, socket.MSG_DONTWAIT)
    except (BlockingIOError, InterruptedError):
        return None
    except OSError:
        return b""


def acquire_lock(path: str) -> int | None:
    """Hold ``PATH.lock`` for the server's life; None when another server holds it."""
    fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return None
        raise
    return fd


def serve_main(argv: list[str], cli_main: CliMain) -> int:
    """Entry point of ``serve``; returns the exit code."""
    try:
        path, idle, namespaces = parse_serve_args(argv)
        modules = preload_modules(namespaces)
    except (ServeUsageError, UsageError) as exc:
        sys.stderr.write(f"error: {exc}\n{SERVE_USAGE}\n")
        return EXIT_USER
    if not hasattr(socket, "AF_UNIX"):
        sys.stderr.write("error: this platform has no Unix sockets\n")
        return EXIT_USER
    try:
        lock = acquire_lock(path)
    except OSError as exc:
        log(f"cannot create the lock file for {path}: {exc}")
        return EXIT_USER
    if lock is None or answers(path):
        log(f"another server already runs on {path}")
        return EXIT_USER
    preload(namespaces, modules)
    load_libc()
    server = Server(path, idle, cli_main, lock)
    try:
        server.bind()
    except OSError as exc:
        log(f"cannot listen on {path}: {exc}")
        return EXIT_USER
    server.install_signals()
    loaded = ", ".join(namespaces) or "no runtime"
    log(f"serving on {path} (pid {os.getpid()}, idle timeout {idle:g} s, preloaded {loaded})")
    try:
        server.run()
    finally:
        server.close_listener()
        os.close(lock)
    return EXIT_OK
