"""The Devices screen: hub.toml's devices; add, edit, duplicate, remove, check, save.

Edits change the in-memory `ConfigDocument` (the title says "modified") until ``w`` writes
hub.toml: atomically, keeping comments and order, and never over a file that changed on disk
since it was loaded (``r`` reloads it, dropping the edits).
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Label

from edgehub.errors import EdgehubError
from edgehub.ops.config_edit import duplicate_device, write_device
from edgehub.ops.trust import host_key_of, trust_host_key
from edgehub.tui.cells import plain
from edgehub.tui.screens.base import HubScreen, move_to_row, row_key
from edgehub.tui.screens.confirm import ConfirmScreen
from edgehub.tui.screens.device_edit import DeviceEditScreen, Edit

COLUMNS = ("device", "provider", "spec", "reached through", "check")


class DevicesScreen(HubScreen):
    BINDINGS = [  # the footer shows what fits, in this order (? lists them all)
        Binding("a", "add", "Add"),
        Binding("e,enter", "edit", "Edit"),
        Binding("x,delete", "remove", "Remove"),
        Binding("w", "save", "Save"),
        Binding("r", "reload", "Reload"),
        Binding("c", "check", "Check"),
        Binding("t", "trust", "Trust key"),
        Binding("d", "duplicate", "Duplicate"),
    ]
    NAV = "devices"

    def body(self) -> ComposeResult:
        yield Label("", id="devices-title", classes="screen-title", markup=False)
        yield DataTable(cursor_type="row", zebra_stripes=True, id="devices")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(*COLUMNS)
        self._checks: dict[str, str] = {}
        self.refresh_table()

    def config_reloaded(self) -> None:
        self._checks = {}
        self.refresh_table()

    # -- the table -------------------------------------------------------------------------

    def refresh_table(self, select: str | None = None) -> None:
        from edgehub.ops.devices import list_devices
        from edgehub.ops.project import Project

        project = self.state.project
        document = self.state.document
        if document is not None and self.state.dirty:
            project = Project(document.validate())
        table = self.query_one(DataTable)
        current = select or row_key(table)
        table.clear()
        for row in list_devices(project):
            table.add_row(
                *plain(
                    row.name,
                    row.provider or "-",
                    row.spec or "-",
                    row.ssh or "this host",
                    self._checks.get(row.name, ""),
                ),
                key=row.name,
            )
        move_to_row(table, current)
        where = self.state.shown_path
        mark = "  [modified: w saves]" if self.state.dirty else ""
        self.query_one("#devices-title", Label).update(f"Devices of {where}{mark}")

    def _selected(self) -> str | None:
        return row_key(self.query_one(DataTable))

    def _document(self) -> Any:
        if self.state.document is None:
            self.notify(
                "no hub.toml yet: restart hub-tui here to create one",
                severity="warning",
                markup=False,
            )
        return self.state.document

    # -- editing ---------------------------------------------------------------------------

    def action_add(self) -> None:
        document = self._document()
        if document is not None:
            self.app.push_screen(
                DeviceEditScreen(document, None, {"provider": "embedl_onnxruntime"}),
                lambda edit: self._apply(edit, None),
            )

    def action_edit(self) -> None:
        document, name = self._document(), self._selected()
        if document is None or name is None:
            return
        if name not in document.device_names():
            self.notify(f"{name!r} is implicit (not in hub.toml); add it to edit it", markup=False)
            return
        values = document.get(("devices", name)) or {}
        self.app.push_screen(
            DeviceEditScreen(document, name, dict(values)), lambda edit: self._apply(edit, name)
        )

    def _apply(self, edit: Edit | None, previous: str | None) -> None:
        if edit is None or self.state.document is None:
            return
        name, values = edit
        try:
            write_device(self.state.document, name, values, previous=previous)
        except EdgehubError as error:
            self.notify(str(error), severity="error", markup=False)
            return
        self._changed(name)

    def _changed(self, select: str | None = None) -> None:
        self.state.dirty = True
        self.refresh_table(select)

    def action_duplicate(self) -> None:
        document, name = self._document(), self._selected()
        if document is None or name is None or name not in document.device_names():
            return
        try:
            copy = duplicate_device(document, name)
        except EdgehubError as error:
            self.notify(str(error), severity="error", markup=False)
            return
        self._changed(copy)

    def action_remove(self) -> None:
        document, name = self._document(), self._selected()
        if document is None or name is None or name not in document.device_names():
            return

        def answer(yes: bool | None) -> None:
            if yes:
                document.remove_device(name)
                self._changed()

        self.app.push_screen(ConfirmScreen(f"Remove device {name!r}?", yes="Remove"), answer)

    def action_save(self) -> None:
        document = self._document()
        if document is None or not self.state.dirty:
            return
        try:
            document.save()
        except EdgehubError as error:
            text = str(error)
            if "changed on disk" in text:  # the core's message speaks to API callers
                text = (
                    f"{self.state.shown_path} changed on disk since it was loaded; not saved. "
                    "Press r to load the new file (your edits are dropped), or copy them "
                    "into it by hand"
                )
            self.notify(text, severity="error", timeout=10, markup=False)
            return
        self.state.reload()  # what is now on disk
        self._seen_generation = self.state.generation
        self.refresh_table()
        self.notify(f"saved {document.path}", markup=False)

    def action_reload(self) -> None:
        try:
            self.state.reload()
        except EdgehubError as error:
            self.show_config_error()  # the banner says it too, and stays until the file loads
            self.notify(str(error), severity="error", markup=False)
            return
        self.config_reloaded()
        self._seen_generation = self.state.generation

    # -- checking --------------------------------------------------------------------------

    def action_check(self) -> None:
        name = self._selected()
        if name is None:
            return
        self._checks[name] = "checking…"
        self.refresh_table()
        self.in_thread(f"check {name}", lambda: _check_device(self.state, name))

    # -- trusting an SSH host key ------------------------------------------------------------

    def action_trust(self) -> None:
        name = self._selected()
        if name is not None:
            self.in_thread(f"trust {name}", lambda: host_key_of(self.state.project, name))

    def _ask_trust(self, name: str, offer: Any) -> None:
        if offer.state == "trusted":
            self.notify(f"{name}: host key {offer.fingerprint} is already trusted", markup=False)
            return
        if offer.state != "unknown":
            self.notify(
                f"{name}: the host key CHANGED ({offer.fingerprint}); refusing it: this may be "
                f"an attack. If the device was reinstalled, remove its old line from "
                f"{offer.known_hosts} first",
                severity="error",
                timeout=15,
                markup=False,
            )
            return

        def answer(yes: bool | None) -> None:
            if yes:
                self.in_thread(f"trusted {name}", lambda: trust_host_key(offer))

        question = (
            f"Trust {name}'s host key?\n{offer.host} {offer.key_type}\n{offer.fingerprint}\n"
            f"(compare it with the device's own: ssh-keygen -lf /etc/ssh/ssh_host_*.pub)"
        )
        self.app.push_screen(ConfirmScreen(question, yes="Trust"), answer)

    def worker_done(self, name: str, result: Any) -> None:
        if name.startswith("trust ") and result is not None:
            self._ask_trust(name[6:], result)
            return
        if name.startswith("trusted ") and result is not None:
            self.notify(f"{name[8:]}: host key written to {result}", markup=False)
            return
        if name.startswith("check ") and result is not None:
            device, state, detail = result
            self._checks[device] = f"{state}: {detail}"
            self.refresh_table()
            if state != "ok":  # the column cuts it: the whole text once
                self.notify(f"{device}: {state}: {detail}", severity="warning", markup=False)

    def worker_failed(self, name: str, error: BaseException | None) -> None:
        if name.startswith(("trust ", "trusted ")):
            self.notify(str(error), severity="error", timeout=10, markup=False)
            return
        if name.startswith("check "):
            self._checks[name[6:]] = f"FAIL: {error}"
            self.refresh_table()
            self.notify(f"{name[6:]}: FAIL: {error}", severity="error", markup=False)


def _check_device(state: Any, name: str) -> tuple[str, str, str]:
    from edgehub.ops.device_check import check_device

    check = check_device(state.project, name)
    return name, check.state, check.detail
