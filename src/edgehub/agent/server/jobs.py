"""The agent server's job table: the forked jobs by pid, the signals passed on to them, their
kill deadlines, and reaping them with their exit codes. No sockets are read or written here:
:mod:`.serve`'s loop owns the connections."""

from __future__ import annotations

import os
import signal
import socket
import time
from typing import Iterator

from .wire import FORWARDED_SIGNALS, MAX_LINE_BYTES

BUSY_DIR_ENV = "EDGEHUB_AGENT_BUSY_DIR"
CANCEL_GRACE_S = 5.0  # after a forwarded signal, SIGKILL a job still running this much later


class Job:
    """One forked job and its client's connection (None once the client has gone)."""

    def __init__(self, pid: int, conn: socket.socket) -> None:
        self.pid = pid
        self.conn: socket.socket | None = conn
        self.buffer = b""  # control lines read from the client, not yet complete
        self.kill_at: float | None = None

    def send_signal(self, signum: int) -> None:
        """Signal the job's process group, and SIGKILL it after the grace period (counted from
        the first such signal)."""
        signal_group(self.pid, signum)
        if self.kill_at is None:
            self.kill_at = time.monotonic() + CANCEL_GRACE_S


class JobTable:
    """The running jobs, by pid."""

    def __init__(self) -> None:
        self.jobs: dict[int, Job] = {}

    def __bool__(self) -> bool:
        return bool(self.jobs)

    def add(self, pid: int, conn: socket.socket, *, stopping: bool) -> Job:
        """Track a job just forked (a server that is stopping asks it to stop at once)."""
        mark_busy(pid, True)
        try:
            os.setpgid(pid, pid)  # also here, so the group exists before any kill
        except OSError:
            pass
        job = Job(pid, conn)
        self.jobs[pid] = job
        if stopping:
            job.send_signal(signal.SIGTERM)
        return job

    def connections(self) -> list[socket.socket]:
        return [j.conn for j in self.jobs.values() if j.conn is not None]

    def control(self, job: Job, data: bytes) -> bool:
        """Act on the client's control lines (``signal N``: pass it on, SIGKILL after the
        grace period); False when the client sent more than a line may hold."""
        job.buffer += data
        while b"\n" in job.buffer:
            line, _, job.buffer = job.buffer.partition(b"\n")
            word, _, value = line.decode("ascii", "replace").partition(" ")
            if word == "signal" and value.strip().isdigit():
                signum = int(value)
                if signum in FORWARDED_SIGNALS:
                    job.send_signal(signum)
        return len(job.buffer) <= MAX_LINE_BYTES

    def terminate_all(self) -> None:
        """SIGTERM to every job, SIGKILL after the grace period."""
        for job in self.jobs.values():
            job.send_signal(signal.SIGTERM)

    def deadlines(self) -> list[float]:
        return [j.kill_at for j in self.jobs.values() if j.kill_at is not None]

    def kill_overdue(self, now: float) -> None:
        for job in self.jobs.values():
            if job.kill_at is not None and now >= job.kill_at:
                signal_group(job.pid, signal.SIGKILL)
                job.kill_at = None

    def reap(self) -> Iterator[tuple[Job, int]]:
        """The jobs that have ended, each with its exit code, taken out of the table."""
        while self.jobs:
            pid = exited_child()
            if pid is None:
                return
            job = self.jobs.get(pid)
            if job is not None:
                # Before reaping (the pid stays reserved): end anything the job left running,
                # so that nothing writes to the connection after the exit line.
                signal_group(pid, signal.SIGKILL)
            try:
                _, status = os.waitpid(pid, 0)
            except ChildProcessError:
                status = 1 << 8
            if job is None:
                continue
            del self.jobs[pid]
            mark_busy(pid, False)
            yield job, exit_code(status)


def exit_code(status: int) -> int:
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    return 1


def signal_group(pid: int, signum: int) -> None:
    """Signal a job's process group (or the job alone, before it has made its group)."""
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signum)
            return
        except (ProcessLookupError, PermissionError):
            pass


def mark_busy(pid: int, busy: bool) -> None:
    """With ``EDGEHUB_AGENT_BUSY_DIR`` set (a warm container's idle timer reads that folder),
    a running job is a file named by its pid there."""
    folder = os.environ.get(BUSY_DIR_ENV)
    if not folder:
        return
    path = os.path.join(folder, str(pid))
    try:
        if busy:
            os.makedirs(folder, exist_ok=True)
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        else:
            os.unlink(path)
    except OSError:
        pass


def exited_child() -> int | None:
    """The pid of a child that has exited, without reaping it (None when there is none)."""
    waitid = getattr(os, "waitid", None)
    if waitid is None:  # no waitid: reap straight away (a stray grandchild may outlive the job)
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return None
        return pid or None
    try:
        info = waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return None
    return None if info is None else int(info.si_pid)
