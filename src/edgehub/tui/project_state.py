"""`ProjectState`: the project the TUI shows, and hub.toml as it is being edited.

The Devices screen edits `document` in memory (`dirty` until saved). `read_disk` notices
another program writing hub.toml and loads it, on a worker thread; `take` applies what it read
on the UI thread: the TUI reloads when nothing is unsaved, and otherwise keeps the user's edits
and refuses to save over the newer file (`ConfigDocument.save`). A file that does not load
leaves the last good project in use and its error in `config_error`. hub.toml is watched as a
path: deleted (`config_gone`), the last good project stays in use, `reload` refuses rather than
fall back to the defaults, and the file is loaded again once it is back (recreated, or renamed
over the path as editors save).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from edgehub.fsutil import sha256_file
from edgehub.ops.project import Project, open_project
from edgehub.tui.clock import Clock

if TYPE_CHECKING:
    from edgehub.config.save import ConfigDocument
    from edgehub.ops.cancel import Cancellation


def _digest(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return sha256_file(path)
    except OSError:
        return None


@dataclass(frozen=True)
class DiskRead:
    """hub.toml as another program left it: its digest, and the project and document it loads
    to, or why it does not load (``error``), or that it is gone (``missing``). Unread (all
    None) when there were unsaved edits to keep. ``generation``: the state's when it was read
    (a read that a save or reload overtook is dropped)."""

    generation: int
    digest: str | None
    project: Project | None = None
    document: ConfigDocument | None = None
    error: str | None = None
    missing: bool = False


class ProjectState:
    def __init__(self, config_path: Path | None, clock: Clock | None = None) -> None:
        self.clock = clock or Clock()
        self._requested = config_path
        self.project: Project = self._open(config_path)
        self.document: ConfigDocument | None = None
        self.dirty = False
        self.generation = 0  # bumped on every (re)load, so screens know to refresh
        self._digest: str | None = None
        self.runs: dict[str, Cancellation] = {}  # launched runs still going, by pane id
        self.run_titles: dict[str, str] = {}
        self.config_error: str | None = None  # hub.toml on disk does not load (located)
        self.config_gone = False  # ... because it was deleted
        self.reload()

    @property
    def path(self) -> Path | None:
        """hub.toml, or None when the project runs on defaults (no file found)."""
        return self.project.config.path

    @property
    def shown_path(self) -> str:
        """hub.toml as the TUI shows it: relative to the current directory when below it."""
        from edgehub.config.schema import location

        return location(self.path, None) if self.path else "no hub.toml (defaults)"

    @property
    def root(self) -> Path:
        return self.project.config.root

    def reload(self) -> None:
        """Read hub.toml again, dropping unsaved edits. A file that does not load raises and
        changes nothing but `config_error`."""
        from edgehub.errors import EdgehubError

        try:
            project, document = self._load()
        except EdgehubError as error:
            self.config_error, self.config_gone = str(error), self._gone()
            raise
        self._use(project, document, _digest(project.config.path))

    def _load(self) -> tuple[Project, ConfigDocument | None]:
        """hub.toml read and checked (blocking; any thread)."""
        from edgehub.config.save import ConfigDocument
        from edgehub.errors import ConfigError

        if self._gone():  # never the defaults in its place
            raise ConfigError(self._gone_text())
        try:
            project = self._open(self.path or self._requested)
            path = project.config.path
            return project, ConfigDocument.open(path) if path else None
        except RecursionError:  # the TOML reader's own limit
            raise ConfigError(f"{self.shown_path}: nested too deeply to read") from None

    def _gone(self) -> bool:
        """The hub.toml in use was there, and is no longer a file."""
        return self.path is not None and not self.path.is_file()

    def _gone_text(self) -> str:
        return f"{self.shown_path} deleted"

    def _use(self, project: Project, document: ConfigDocument | None, digest: str | None) -> None:
        self.project, self.document, self.config_error = project, document, None
        self.config_gone = False
        self.dirty = False
        self._digest = digest
        self.generation += 1

    def read_disk(self) -> DiskRead | None:
        """What hub.toml on disk holds, if it changed since it was loaded or saved; None
        otherwise. Blocking (reads and checks the file): call it from a worker, then `take`."""
        from edgehub.errors import EdgehubError

        generation, digest = self.generation, _digest(self.path)
        if digest == self._digest:
            return None
        if self._gone():  # removed, or mid-checkout
            return DiskRead(generation, digest, missing=True)
        if self.dirty:
            return DiskRead(generation, digest)
        try:
            project, document = self._load()
        except EdgehubError as error:
            return DiskRead(generation, digest, error=str(error))
        return DiskRead(generation, digest, project, document)

    def take(self, read: DiskRead) -> str:
        """Apply `read_disk`'s ``read`` (UI thread), once per change; what happened: "same"
        (seen already), "missing", "kept" (unsaved edits stay), "error" (`config_error` says
        why) or "reloaded"."""
        if read.digest == self._digest or read.generation != self.generation:
            return "same"
        self._digest = read.digest
        if read.missing:
            self.config_error, self.config_gone = self._gone_text(), True
            return "missing"
        if self.dirty or (read.project is None and read.error is None):
            return "kept"
        if read.error is not None:
            self.config_error = read.error
            return "error"
        assert read.project is not None
        self._use(read.project, read.document, read.digest)
        return "reloaded"

    @property
    def init_dir(self) -> Path:
        """Where a new hub.toml goes: beside the requested one, else the current directory."""
        if self._requested is not None:
            requested = self._requested.absolute()
            return requested if requested.is_dir() else requested.parent
        return Path.cwd()

    @staticmethod
    def _open(path: Path | None) -> Project:
        """The project of ``path``; the defaults when ``path`` names a file not made yet."""
        if path is not None and not path.exists():
            from edgehub.config.load import default_config

            return Project(default_config(path.absolute().parent))
        return open_project(path)

    def use_file(self, path: Path) -> None:
        """Switch to a newly created hub.toml."""
        self._requested = path
        self.project = open_project(path)
        self.reload()

    def run_started(self, run_id: str, cancel: Cancellation, title: str) -> None:
        self.runs[run_id] = cancel
        self.run_titles[run_id] = title

    def run_ended(self, run_id: str) -> None:
        self.runs.pop(run_id, None)
        self.run_titles.pop(run_id, None)

    def cancel_all(self) -> None:
        """Stop every launched run (quitting): their runs end KILLED, containers go."""
        for cancellation in list(self.runs.values()):
            cancellation.cancel()
