"""``edgehub-agent --server PATH COMMAND ...``: run a command on a warm agent server.

When a server answers on PATH the command runs there (:mod:`.wire`): its progress comes back on
stderr as it is written, its result goes to the same ``--result`` file (without one, to a
temporary file printed on stdout) and this process exits with the job's code. SIGINT/SIGTERM
are passed on to the job; a second signal, or this process dying, closes the connection and the
server kills the job. When no server takes the job it runs here, and then a server is started
in the background (:mod:`.spawn`) preloading this command's runtime. Nothing here imports numpy
or onnxruntime: the point is to start fast.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from types import FrameType

from .. import lifeline
from ..argv import take_option
from ..exit_codes import EXIT_CANCELLED, EXIT_UNEXPECTED
from .wire import EXIT, REFUSED, START, CliMain, encode_request, socket_address, write_all

CONNECT_TIMEOUT_S = 2.0
START_TIMEOUT_S = 10.0  # a server that does not start the job by then is passed over


class Abandoned(Exception):
    """A second signal: stop waiting for the job (the server then kills it)."""


def client_main(argv: list[str]) -> int:
    """``edgehub-agent --server PATH ...``; returns the exit code."""
    server, rest = take_option(argv, "--server")
    if server is None or rest[:1] == ["serve"]:
        return run_here(rest)
    return run_with_server(server, rest, run_here)


def run_here(argv: list[str]) -> int:
    from ..cli import main

    return main(argv)


def run_with_server(path: str, argv: list[str], run_local: CliMain) -> int:
    """Run ``argv`` on the server at ``path``, or here (then start a server for next time,
    preloading the runtime of this command's namespace)."""
    code, start_one = call_server(path, argv)
    if code is not None:
        return code
    lifeline.attach(None)
    code = run_local(argv)
    if start_one and code != EXIT_CANCELLED:
        from ..cli import parse_args
        from ..commands import namespace_of
        from .spawn import start_server

        try:
            command = parse_args(argv)[0]
        except Exception:  # the local run has reported what is wrong with argv
            command = None
        start_server(path, namespace_of(command))
    return code


def call_server(path: str, argv: list[str]) -> tuple[int | None, bool]:
    """(exit code, or None when no server ran the job; whether to start a server)."""
    conn = connect(path)
    if conn is None:
        return None, True
    lifeline.attach(conn)
    capture: str | None = None
    if not any(a == "--result" or a.startswith("--result=") for a in argv):
        import tempfile

        fd, capture = tempfile.mkstemp(prefix="edgehub-agent-", suffix=".result.json")
        os.close(fd)
        argv = [*argv, "--result", capture]
    try:
        code, start_one = exchange(conn, path, argv)
        if capture is not None and code is not None:
            print_file(capture)
        return code, start_one
    finally:
        conn.close()
        if capture is not None:
            try:
                os.unlink(capture)
            except OSError:
                pass


def connect(path: str) -> socket.socket | None:
    if not hasattr(socket, "AF_UNIX"):
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(CONNECT_TIMEOUT_S)
    try:
        with socket_address(path) as address:
            conn.connect(address)
    except OSError:
        conn.close()
        return None
    return conn


def exchange(conn: socket.socket, path: str, argv: list[str]) -> tuple[int | None, bool]:
    try:
        conn.sendall(encode_request(argv))
        first, rest = read_line(conn, START_TIMEOUT_S)
    except OSError:  # refused, reset, timed out, or a server going away: nothing ran
        return None, True
    if first.startswith(REFUSED):
        reason = first[len(REFUSED) :].decode("utf-8", "replace").strip()
        write_stderr(
            f"note: the agent server on {path} refused the job ({reason}); running it here\n"
        )
        return None, False
    if not first.startswith(START):
        return None, True
    conn.settimeout(None)
    return relay(conn, rest, path), False


def read_line(conn: socket.socket, timeout: float) -> tuple[bytes, bytes]:
    """The first line (b"" if the server closed first) and whatever came after it."""
    conn.settimeout(timeout)
    data = b""
    while b"\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return b"", b""
        data += chunk
    line, _, rest = data.partition(b"\n")
    return line + b"\n", rest


class Output:
    """Copies the job's output to stderr, holding back what may be the final exit line."""

    def __init__(self) -> None:
        self.tail = b""

    def feed(self, data: bytes) -> None:
        self.tail += data
        cut = self.safe_end()
        if cut:
            write_stderr_bytes(self.tail[:cut])
            self.tail = self.tail[cut:]

    def safe_end(self) -> int:
        start = 0
        while True:
            nul = self.tail.find(b"\0", start)
            if nul < 0:
                return len(self.tail)
            if may_be_exit_line(self.tail[nul:]):
                return nul
            start = nul + 1

    def finish(self) -> int | None:
        """The exit code from the exit line at the very end; None when there is none."""
        code = self.tail[len(EXIT) : -1]
        if self.tail.startswith(EXIT) and self.tail.endswith(b"\n") and is_integer(code):
            return int(code)
        write_stderr_bytes(self.tail)
        return None


def may_be_exit_line(data: bytes) -> bool:
    if len(data) <= len(EXIT):
        return EXIT.startswith(data)
    if not data.startswith(EXIT):
        return False
    rest = data[len(EXIT) :]
    if rest.endswith(b"\n"):
        rest = rest[:-1]
    return rest in (b"", b"-") or is_integer(rest)


def is_integer(data: bytes) -> bool:
    """Whether ``data`` is an optional minus sign and ASCII digits (no re: it is slow to import)."""
    digits = data[1:] if data.startswith(b"-") else data
    return bool(digits) and digits.isdigit()


def relay(conn: socket.socket, first: bytes, path: str) -> int:
    """Stream the job's output until the server closes; returns the job's exit code."""
    signalled: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if signalled:
            raise Abandoned
        signalled.append(signum)
        try:
            conn.sendall(b"signal %d\n" % signum)
        except OSError as exc:
            raise Abandoned from exc

    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[signum] = signal.signal(signum, on_signal)
        except (ValueError, OSError):  # not the main thread
            pass
    output = Output()
    try:
        output.feed(first)
        while True:
            try:
                data = conn.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            output.feed(data)
        code = output.finish()
    except Abandoned:
        return EXIT_CANCELLED
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if code is None and lifeline.lost():
        return EXIT_CANCELLED  # our caller went away and we ended the job
    if code is None:
        write_stderr(f"error: the agent server on {path} ended the job without an exit status\n")
        return EXIT_CANCELLED if signalled else EXIT_UNEXPECTED
    return code


def write_stderr(text: str) -> None:
    write_stderr_bytes(text.encode("utf-8", "replace"))


def write_stderr_bytes(data: bytes) -> None:
    try:
        write_all(2, data)
    except OSError:  # stderr closed: progress is best effort
        pass


def print_file(path: str) -> None:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    except (OSError, ValueError, AttributeError):
        pass
