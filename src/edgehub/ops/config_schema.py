"""`hub config schema`: the JSON Schema of hub.toml as text, on stdout or in a file."""

from __future__ import annotations

import json
from pathlib import Path

from edgehub.errors import UsageError


def config_schema_text() -> str:
    """The JSON Schema (draft 2020-12) of hub.toml, indented JSON ending in a newline."""
    from edgehub.config.json_schema import hub_toml_schema

    return json.dumps(hub_toml_schema(), indent=2) + "\n"


def write_config_schema(path: Path) -> None:
    """Write the schema to ``path`` atomically (an existing file keeps its mode)."""
    from edgehub.fsutil import atomic_write

    if path.is_dir():
        raise UsageError(
            f"{path} is a directory; give a file name such as {path / 'hub.schema.json'}"
        )
    try:
        atomic_write(path, config_schema_text().encode("utf-8"))
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise UsageError(f"cannot write {path}: {reason}; choose a writable file") from None
