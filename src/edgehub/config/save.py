"""Editing hub.toml without losing its comments, order or formatting.

`ConfigDocument` wraps a tomlkit document. Each edit is checked against what the edit should do
to the plain data (so a tomlkit quirk can never silently change other keys), and `save`
validates the whole file with the loader before it writes it atomically
(`edgehub.fsutil.atomic_write`: a temporary file in the same directory, fsync, `os.replace`,
the file's mode kept). An invalid edit raises `ConfigError` and leaves the file as it was.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import os
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any, Literal, overload

import tomlkit
from tomlkit.container import Container
from tomlkit.exceptions import ParseError
from tomlkit.items import AoT, Table, Whitespace
from tomlkit.toml_document import TOMLDocument

from edgehub.config.check import check_device_name
from edgehub.config.load import config_file, missing_config, parse_config, parse_toml
from edgehub.config.schema import (
    HubConfig,
    KeyPath,
    format_key,
    location,
    parse_key,
)
from edgehub.errors import ConfigError
from edgehub.fsutil import atomic_write

__all__ = ["ConfigDocument", "atomic_write"]

Key = str | Sequence[str]


class ConfigDocument:
    """An editable hub.toml. Edits change the document in memory; `save` writes it."""

    def __init__(self, path: Path, text: str = "", *, disk_digest: str | None = None) -> None:
        self.path = path
        try:
            self._doc: TOMLDocument = tomlkit.parse(text)
        except ParseError as error:
            where = location(path, error.line, error.col)
            raise ConfigError(f"{where}: invalid TOML ({_reason(error)})") from None
        self._disk_digest = disk_digest

    @classmethod
    def open(cls, path: Path | str, *, missing_ok: bool = False) -> ConfigDocument:
        """Read hub.toml at ``path`` (a file or its directory). With ``missing_ok`` a missing
        file gives an empty document that `save` creates."""
        file = config_file(path)
        try:
            data = file.read_bytes()
        except FileNotFoundError:
            if missing_ok:
                return cls(file)
            raise missing_config(file) from None
        except OSError as error:
            raise ConfigError(f"{file}: cannot read: {error.strerror or error}") from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ConfigError(f"{file}: not UTF-8 text; save it as UTF-8") from None
        return cls(file, text, disk_digest=_digest(data))

    # --- reading --------------------------------------------------------------------------

    @property
    def text(self) -> str:
        """The document as it would be saved."""
        return tomlkit.dumps(self._doc)

    def get(self, key: Key, default: Any = None) -> Any:
        """The plain value at ``key`` (``"devices.rpi.ssh.host"`` or a tuple of parts)."""
        node: Any = self._doc
        for part in _parts(key):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node.unwrap() if hasattr(node, "unwrap") else node

    def device_names(self) -> list[str]:
        """The devices declared in the document, in order (without the implicit ``local``)."""
        devices = self._doc.get("devices")
        return list(devices) if isinstance(devices, Mapping) else []

    def validate(self) -> HubConfig:
        """Check the document with the loader; raises `ConfigError` naming line and key."""
        return parse_config(self.text, self.path)

    # --- editing --------------------------------------------------------------------------

    def set(self, key: Key, value: Any) -> None:
        """Set ``key`` to ``value``, creating tables on the way; ``None`` removes the key.

        A mapping becomes a ``[table]``. Comments on the line of a replaced value are kept.
        """
        parts = _parts(key)
        if value is None:
            self.unset(parts)
            return
        plain = _plain(value)

        def apply(data: dict[str, Any]) -> None:
            _plain_parent(data, parts, create=True)[parts[-1]] = copy.deepcopy(plain)

        with self._edit(apply):
            parent = self._container(parts[:-1], create=True)
            if isinstance(plain, dict):
                parent[parts[-1]] = _table(plain, parts)
            elif len(parts) >= 2 and isinstance(parent, Table):
                grandparent = self._container(parts[:-2], create=False)
                _set_value(parent, parts[-1], plain, grandparent, parts[-2])
            else:
                parent[parts[-1]] = plain

    def unset(self, key: Key) -> bool:
        """Remove ``key``; returns whether it was there."""
        parts = _parts(key)
        parent = self._container(parts[:-1], create=False)
        if parent is None or parts[-1] not in parent:
            return False

        def apply(data: dict[str, Any]) -> None:
            del _plain_parent(data, parts, create=False)[parts[-1]]

        with self._edit(apply):
            del parent[parts[-1]]
        return True

    def add_device(
        self, name: str, provider: str | None = None, *, spec: str | None = None, **tables: Any
    ) -> None:
        """Append ``[devices.<name>]`` with ``provider``, ``spec`` and the given tables, e.g.
        ``add_device("rpi", "embedl_onnxruntime", ssh={"host": ..., "user": "pi"})``."""
        self._new_device_name(name)
        given = (("provider", provider), ("spec", spec))
        values: dict[str, Any] = {key: value for key, value in given if value is not None}
        values.update({table: _plain(content) for table, content in tables.items()})
        self.set(("devices", name), values)

    def remove_device(self, name: str) -> None:
        """Delete ``[devices.<name>]`` and all its sub-tables."""
        self._known_device(name)
        self.unset(("devices", name))

    def rename_device(self, old: str, new: str) -> None:
        """Rename a device in place (its position and the comments around it stay)."""
        self._known_device(old)
        if old == new:
            return
        self._new_device_name(new)

        def apply(data: dict[str, Any]) -> None:
            data["devices"] = {(new if k == old else k): v for k, v in data["devices"].items()}

        with self._edit(apply):
            devices = self._container(("devices",), create=False)
            assert devices is not None
            names = list(devices)
            moved = [(key, devices[key]) for key in names[names.index(old) :]]
            indents = [_indent(item) for _, item in moved]
            for key, _ in moved:
                del devices[key]
            for (key, item), indent in zip(moved, indents, strict=True):
                devices[new if key == old else key] = item
                if indent is not None:  # re-adding a table would add a blank line before it
                    item.trivia.indent = indent

    # --- saving ---------------------------------------------------------------------------

    def save(self, *, force: bool = False) -> HubConfig:
        """Validate, then write atomically. Returns the loaded config of the saved text.

        Refuses (`ConfigError`) an invalid document, and a file changed on disk since it was
        opened unless ``force``; in both cases the file is left untouched.
        """
        text = self.text
        config = parse_config(text, self.path)
        if not force:
            self._check_disk()
        data = text.encode("utf-8")
        atomic_write(self.path, data)
        self._disk_digest = _digest(data)
        return config

    # --- internals ------------------------------------------------------------------------

    @property
    def _name(self) -> str:
        return location(self.path, None)

    def _known_device(self, name: str) -> None:
        names = self.device_names()
        if name not in names:
            known = ", ".join(names) or "none"
            raise ConfigError(f"device {name!r} is not in {self._name}; declared: {known}")

    def _new_device_name(self, name: str) -> None:
        if name in self.device_names():
            raise ConfigError(f"device {name!r} is already in {self._name}; pick another name")
        check_device_name(name)

    def _check_disk(self) -> None:
        try:
            current: str | None = _digest(self.path.read_bytes())
        except FileNotFoundError:
            current = None
        except OSError as error:
            raise ConfigError(f"{self._name}: cannot read: {error.strerror or error}") from None
        if current != self._disk_digest:
            raise ConfigError(
                f"{self._name} changed on disk since it was opened; open it again and redo the "
                "change (or save with force=True to overwrite)"
            )

    @overload
    def _container(self, parts: KeyPath, *, create: Literal[True]) -> MutableMapping[str, Any]: ...

    @overload
    def _container(self, parts: KeyPath, *, create: bool) -> MutableMapping[str, Any] | None: ...

    def _container(self, parts: KeyPath, *, create: bool) -> MutableMapping[str, Any] | None:
        node: MutableMapping[str, Any] = self._doc
        for depth, part in enumerate(parts, start=1):
            child = node.get(part)
            if child is None:
                if not create:
                    return None
                child = tomlkit.table(is_super_table=_is_super(parts[:depth]))
                node[part] = child
            if not isinstance(child, MutableMapping):
                raise ConfigError(
                    f"{self._name}: {format_key(parts[:depth])} is a value, not a table"
                )
            node = child
        return node

    @contextlib.contextmanager
    def _edit(self, apply: Callable[[dict[str, Any]], None]) -> Iterator[None]:
        """Run one edit; check that the result parses to ``apply(old data)``, else roll back."""
        before = self.text
        expected = parse_toml(before)
        apply(expected)
        try:
            yield
            if parse_toml(self.text) != expected:
                raise ConfigError(
                    f"{self._name}: this edit cannot be made without changing other settings "
                    "(unusual table layout); make it by hand"
                )
        except BaseException:
            self._doc = tomlkit.parse(before)
            raise


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _reason(error: ParseError) -> str:
    message = str(error)
    return message.split(" at line ")[0] if " at line " in message else message


def _parts(key: Key) -> KeyPath:
    parts = parse_key(key) if isinstance(key, str) else tuple(key)
    if not parts or not all(isinstance(part, str) and part for part in parts):
        raise ValueError(f"not a key: {key!r}")
    return parts


def _indent(item: object) -> str | None:
    return item.trivia.indent if isinstance(item, Table) else None


def _set_value(
    table: Table, key: str, value: Any, holder: MutableMapping[str, Any] | None, name: str
) -> None:
    """Set a plain value in ``table`` (``holder[name]``); a new key goes right after the table's
    last key, so it lands above the comments and blank lines that trail the table (tomlkit's
    ``add`` would put it after them)."""
    body = table.value.body
    if key in table or holder is None:
        table[key] = value
        return
    last = -1
    for index, (item_key, item) in enumerate(body):
        if isinstance(item, (Table, AoT)):
            break
        if item_key is not None:
            last = index
    if last + 1 >= len(body) or isinstance(body[last + 1][1], (Table, AoT)):
        table[key] = value
        return
    # tomlkit has no public insert at a position: the table is rebuilt in order with the new key
    # after its last one (first when it has none), through public calls only, and put back
    rebuilt = Container()
    if last < 0:
        rebuilt.add(key, value)
    for index, (item_key, item) in enumerate(body):
        if item_key is None:
            rebuilt.add(item)
        else:
            rebuilt.add(item_key, item)
        if index == last:
            rebuilt.add(key, value)
    if not isinstance(body[-1][1], Whitespace):
        # tomlkit gives a replaced table that does not end in whitespace a blank line of its own;
        # an empty whitespace item keeps the file as it was
        rebuilt.add(tomlkit.ws(""))
    holder[name] = Table(
        rebuilt, table.trivia, table.is_aot_element(), is_super_table=table.is_super_table()
    )


def _is_super(parts: KeyPath) -> bool:
    """Tables that only hold tables get no header of their own: ``[devices]``,
    ``[devices.x.overrides]`` and ``[devices.x.overrides.<Component>]``."""
    return parts == ("devices",) or (len(parts) in (3, 4) and parts[2] == "overrides")


def _table(values: Mapping[str, Any], parts: KeyPath) -> Table:
    table = tomlkit.table(is_super_table=_is_super(parts))
    for key, value in values.items():
        if isinstance(value, Mapping):
            table[key] = _table(value, (*parts, key))
        else:
            table[key] = value
    return table


def _plain(value: Any) -> Any:
    """``value`` as plain TOML-able data: mappings to dicts, tuples to lists, paths to text."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


def _plain_parent(data: dict[str, Any], parts: KeyPath, *, create: bool) -> dict[str, Any]:
    node = data
    for part in parts[:-1]:
        if part not in node and create:
            node[part] = {}
        child = node[part]
        if not isinstance(child, dict):
            raise ConfigError(f"{format_key(parts)}: {part!r} is a value, not a table")
        node = child
    return node
