"""`ArchiveSpool`: a tar archive arriving from a device in chunks, kept on disk, then extracted.

The chunks go to an unnamed temporary file (next to where the files will land) through
`~edgehub.runners.archive.SparseWriter`, so blocks of zeros cost no disk, and the stream is
refused as soon as it grows past what `~edgehub.limits.FetchLimits` could accept; memory use
stays that of one chunk whatever the device sends. `extract` then runs `safe_extract`, which
checks every member before writing any.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from edgehub.errors import DeviceOutputError
from edgehub.limits import FetchLimits
from edgehub.runners.archive import SparseWriter, human_size, safe_extract

_OVERHEAD_PER_FILE = 3 * 512  # a header, a pax header and its record, per entry
_OVERHEAD = 48 << 20  # the headers' own cap, the end blocks and the record padding


class ArchiveSpool:
    """Collects an archive's bytes (`write`), then extracts them (`extract`); a context
    manager that deletes the spooled bytes on exit."""

    def __init__(self, directory: Path | None = None, limits: FetchLimits | None = None) -> None:
        self.limits = limits or FetchLimits.from_env()
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
        self._file = tempfile.TemporaryFile(prefix=".edgehub-spool-", dir=directory)  # noqa: SIM115 - closed by close()
        self._writer = SparseWriter(self._file)
        self._budget = self.limits.max_bytes + self.limits.max_files * _OVERHEAD_PER_FILE
        self._budget += _OVERHEAD
        self.received = 0

    def write(self, chunk: bytes) -> None:
        """Append ``chunk``; raises `DeviceOutputError` once the stream is larger than any
        archive within the limits."""
        self.received += len(chunk)
        if self.received > self._budget:
            raise DeviceOutputError(
                f"the device sent more than {human_size(self._budget)} of archive; raise "
                "EDGEHUB_FETCH_MAX_BYTES to accept more"
            )
        self._writer.write(chunk)

    def extract(self, target: Path) -> list[str]:
        """Extract what was received into ``target`` (see `safe_extract`); member names."""
        self._writer.finish()
        self._file.seek(0)
        return safe_extract(self._file, target, self.limits)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> ArchiveSpool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
