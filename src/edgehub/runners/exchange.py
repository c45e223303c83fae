"""One exec that uploads a staged directory, runs a command in it, and brings back a folder.

The tar goes in on stdin (read to its exact size, so a warm job's stdin can stay open), the
command's output streams on stderr, and the tar of the folder comes back on stdout: one round
trip instead of put + run + get, which matters for short jobs. The tar coming back is spooled
to disk as it arrives (`~edgehub.runners.spool.ArchiveSpool`: capped, holes kept), and the
output is kept within `~edgehub.limits.LogLimits`. A transport whose own prologue
needs stdin after the tar (the SSH runner's lifeline) takes the script apart with
`split_script`: the unpacking runs first, then the prologue, then the command.
"""

from __future__ import annotations

import shlex
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath

from edgehub.errors import RunnerError
from edgehub.events import current_sink
from edgehub.runners.agent_reply import Refused, staged_request
from edgehub.runners.archive import SPARSE_FLAG, pack
from edgehub.runners.base import Process
from edgehub.runners.in_place import adopt_folder
from edgehub.runners.outcome import raise_for_outcome
from edgehub.runners.protocol import CommandResult, Exchange
from edgehub.runners.spool import ArchiveSpool
from edgehub.runners.streaming import LineCollector, last_line

STAGING_FAILED = 125
# $p parent, $n name of the staged directory, $f folder to send back, $s size of the tar on
# stdin, $S how to ask the device's tar for a sparse archive; the script takes them as $1-$5,
# the rest is the command.
_UNPACK = (
    '{ [ -d "$p" ] || mkdir -p -- "$p"; } && head -c "$s" | tar -x -f - -C "$p" '
    f'&& cd -- "$p/$n" || exit {STAGING_FAILED}; '
)
# GNU tar is asked for a sparse archive (holes not sent); other tars send zeros, which the
# host's spool and extraction turn back into holes. A caller that knows the device's tar says
# so (``sparse``), and the device then runs no probe of its own.
_PROBE = "probe"
_SPARSE = f"case $S in {_PROBE}) {SPARSE_FLAG};; esac; "
_RUN_AND_SEND = '"$@" 1>&2; rc=$?; ' + _SPARSE + 'tar -c $S -f - -- "$f"; exit $rc'
_SCRIPT = "p=$1; n=$2; f=$3; s=$4; S=$5; shift 5; " + _UNPACK + _RUN_AND_SEND
# The directory is a host folder mounted in place: nothing to send back.
_SCRIPT_IN_PLACE = "p=$1; n=$2; f=$3; s=$4; S=$5; shift 5; " + _UNPACK + 'exec "$@" 1>&2'

Execute = Callable[
    [Callable[[], Process], Callable[[bytes], None], Callable[[bytes], None], float | None],
    tuple[int, str | None],
]
Start = Callable[[list[str], bytes], Process]


def exchange(
    execute: Execute,
    start: Start,
    job: Exchange,
    target: PurePosixPath,
    *,
    packed: bytes | None = None,
    folder: Path | None = None,
    sparse: bool | None = None,
) -> CommandResult:
    """Run ``job`` with its ``remote`` resolved as ``target``; the command's exit code is not
    checked. ``start(argv, stdin)`` makes the exec, ``execute`` is the runner base's loop
    (timeout, cancel, streaming). With ``packed`` (the files already on their way, as on the
    agent channel) ``stage`` is not packed again. ``folder``: the host folder that ``target``
    is (a one-shot container's bind mount), from which ``fetch`` is taken in place
    (`adopt_folder`) once the command has ended. ``sparse``: whether the device's tar makes
    sparse archives (None: the device finds out, one more process per call)."""
    fetch, local, timeout = job.fetch, job.local, job.timeout
    words = [str(word) for word in job.argv]
    data = pack(job.stage, arcname=target.name) if packed is None else packed
    text = _SCRIPT if folder is None else _SCRIPT_IN_PLACE
    script = ["sh", "-c", text, "edgehub", str(target.parent), target.name, fetch]
    script.append(str(len(data)))
    script.append(_PROBE if sparse is None else "--sparse" if sparse else "")
    err = LineCollector("stderr", None if job.hide else current_sink())
    started = time.monotonic()
    with ArchiveSpool(local.parent) as spool:
        code, stopped = execute(
            lambda: start([*script, *words], data), spool.write, err.feed_bytes, timeout
        )
        err.close()
        result = CommandResult(tuple(words), code, "", err.text, time.monotonic() - started)
        raise_for_outcome(result, stopped=stopped, timeout=timeout, check=False)
        if code == STAGING_FAILED:
            raise RunnerError(f"cannot stage files in {target}: {last_line(err.text) or 'no tar?'}")
        if folder is None:
            _unpack(spool, fetch, local)
        else:
            adopt_folder(folder / fetch, local, spool.limits)
    return result


def agent_exchange(
    run: Callable[[Start, bytes], CommandResult],
    job: Exchange,
    target: PurePosixPath,
    open_job: Callable[[bytes], Process],
) -> CommandResult | None:
    """``job`` (its ``remote`` resolved as ``target``) handed to a resident agent server:
    ``open_job(request)`` sends the request (`staged_request`) and returns the job, or raises
    `Refused` where no server took it; ``run(start, packed)`` is the transport's `exchange`.
    None where nothing ran (refused, or files too big for the server to hold)."""
    data = pack(job.stage, arcname=target.name)
    try:
        request = staged_request(job.argv, str(target), data, job.fetch, job.links)
        return run(lambda _words, _stdin: open_job(request), data)
    except Refused:
        return None


def split_script(words: Sequence[str]) -> tuple[str, list[str], str]:
    """The words `exchange` hands to ``start``, taken apart for a transport that runs them in
    its own shell line: (a line that unpacks the tar read from stdin, enters the directory and
    sends stdout to stderr; the command's argv; a line that then sends the folder's tar on the
    first stdout)."""
    if len(words) < 9 or list(words[:3]) != ["sh", "-c", _SCRIPT]:
        raise ValueError("not an exchange script")
    parent, name, fetch, size, sparse = words[4:9]
    values = {"p": parent, "n": name, "s": size, "S": sparse}
    unpack = "".join(f"{key}={shlex.quote(value)}; " for key, value in values.items())
    unpack += _UNPACK + "exec 4>&1 1>&2; "
    return unpack, list(words[9:]), _SPARSE + f"tar -c $S -f - -- {shlex.quote(fetch)} 1>&4"


def _unpack(spool: ArchiveSpool, fetch: str, local: Path) -> None:
    if not spool.received:
        return  # nothing came back (e.g. the command made no such folder)
    local.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".edgehub-fetch-", dir=local.parent))
    try:
        spool.extract(scratch)
        fetched = scratch / fetch
        if not fetched.is_dir():
            return  # the archive held no such folder: nothing came back
        if local.exists():
            shutil.rmtree(local)
        fetched.replace(local)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
