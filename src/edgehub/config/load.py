"""Finding, reading and checking hub.toml.

`load_config` is the one entry point: with no path it looks for ``hub.toml`` in the current
directory and its parents, and falls back to the default config (the implicit ``local`` device
only) when there is none. Every problem is a one-line `ConfigError` that starts with
``file:line:`` and names the key; TOML syntax errors also give the column.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
import sys
from pathlib import Path
from typing import Any

from edgehub.config.check import build_config
from edgehub.config.schema import (
    CONFIG_FILENAME,
    DOTTED_KEY_PATTERN,
    HubConfig,
    KeyPath,
    SchemaError,
    location,
    nearest_line,
    parse_key,
)
from edgehub.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10: the same parser, published as tomli
    tomllib = importlib.import_module("tomli")


TOMLDecodeError = tomllib.TOMLDecodeError  # what `parse_toml` raises
_DOTTED = DOTTED_KEY_PATTERN
_HEADER = re.compile(rf"\s*\[\[?\s*(?P<key>{_DOTTED})\s*\]")
_ASSIGN = re.compile(rf"\s*(?P<key>{_DOTTED})\s*=(?P<value>.*)")
_AT = re.compile(r"\s*\(at (?:line (?P<line>\d+), column (?P<column>\d+)|end of document)\)$")


def find_config(start: Path | None = None) -> Path | None:
    """The nearest ``hub.toml`` in ``start`` (default: the cwd) or its parents, else ``None``."""
    here = (start or Path.cwd()).absolute()
    candidates = (directory / CONFIG_FILENAME for directory in (here, *here.parents))
    return next((candidate for candidate in candidates if candidate.is_file()), None)


def default_config(root: Path | None = None) -> HubConfig:
    """The config used when no hub.toml exists: project named after ``root``, store
    ``root/.hub``, and the implicit ``local`` device only."""
    return build_config({}, path=None, root=(root or Path.cwd()).absolute())


def load_config(path: Path | str | None = None) -> HubConfig:
    """Load and check hub.toml.

    ``path`` may name the file or the directory holding it. Without ``path`` the nearest
    hub.toml (see `find_config`) is loaded, or `default_config` is returned when there is none.
    A ``path`` that does not exist is a `ConfigError`.
    """
    if path is None:
        file = find_config()
        if file is None:
            return default_config()
    else:
        file = config_file(path)
        if not file.is_file():
            raise missing_config(file)
    try:
        text = file.read_bytes().decode("utf-8")
    except OSError as error:
        raise ConfigError(f"{file}: cannot read: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"{file}: not UTF-8 text (byte {error.start}); save it as UTF-8"
        ) from None
    return parse_config(text, file)


def config_file(path: Path | str) -> Path:
    """``path`` absolute, ``hub.toml`` in it when it names a directory."""
    file = Path(path).expanduser().absolute()
    return file / CONFIG_FILENAME if file.is_dir() else file


def missing_config(file: Path) -> ConfigError:
    return ConfigError(
        f"{file}: no such file; create one with 'hub init', or copy the example "
        f"{CONFIG_FILENAME} from the edgehub repository"
    )


def parse_config(text: str, path: Path | None = None, *, root: Path | None = None) -> HubConfig:
    """Check hub.toml ``text``; ``path`` names it in errors, ``root`` defaults to its directory.

    Raises `ConfigError` for TOML syntax errors and `SchemaError` (a `ConfigError`) for values
    that break the schema, both prefixed with ``file:line:``.
    """
    base = (root or (path.parent if path is not None else Path.cwd())).absolute()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(_syntax_message(str(error), text, path)) from None
    lines = key_lines(text)
    try:
        config = build_config(data, path=path, root=base)
    except SchemaError as error:
        line = nearest_line(lines, error.key)
        raise SchemaError(
            error.key, f"{location(path, line)}: {error.message}", line=line
        ) from None
    return dataclasses.replace(config, lines=lines)


def parse_toml(text: str) -> dict[str, Any]:
    """Plain TOML parsing (tomllib, or tomli on Python 3.10); raises its `TOMLDecodeError`."""
    data: dict[str, Any] = tomllib.loads(text)
    return data


def _syntax_message(message: str, text: str, path: Path | None) -> str:
    match = _AT.search(message)
    reason = message[: match.start()] if match else message
    source = text.splitlines()
    if match and match.group("line"):
        line, column = int(match.group("line")), int(match.group("column"))
    else:
        line, column = max(len(source), 1), None
    shown = source[line - 1].strip() if 0 < line <= len(source) else ""
    near = f": {shown}" if shown else ""
    return f"{location(path, line, column)}: invalid TOML ({reason}){near}"


def key_lines(text: str) -> dict[KeyPath, int]:
    """Map each table header and key in ``text`` to the (1-based) line that first defines it.

    A plain scan, good enough for error messages: keys inside inline tables map to the line of
    the inline table; lines inside multi-line strings are skipped.
    """
    lines: dict[KeyPath, int] = {}
    implied: dict[KeyPath, int] = {}  # tables a header or dotted key creates on the way
    table: KeyPath = ()
    closing: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if closing is not None:
            if closing in line:
                closing = None
            continue
        header = _HEADER.match(line)
        if header:
            table = parse_key(header.group("key"))
            lines.setdefault(table, number)
            for end in range(1, len(table)):
                implied.setdefault(table[:end], number)
            continue
        assign = _ASSIGN.match(line)
        if not assign:
            continue
        key = table + parse_key(assign.group("key"))
        lines.setdefault(key, number)
        for end in range(len(table) + 1, len(key)):
            implied.setdefault(key[:end], number)
        value = assign.group("value")
        for quote in ('"""', "'''"):
            if value.count(quote) % 2 == 1:
                closing = quote
                break
    return {**implied, **lines}
