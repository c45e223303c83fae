"""`ModelPickScreen`: pick a model file in a tree rooted at the project (Enter picks)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DirectoryTree, Label

MODEL_SUFFIXES = (".onnx", ".tflite", ".engine", ".plan", ".trt")


class ModelTree(DirectoryTree):
    """Folders and model files only; hidden folders (.hub, .venv, .git) are left out."""

    def filter_paths(self, paths: Iterable[Path]) -> Iterable[Path]:
        for path in paths:
            if path.name.startswith("."):
                continue
            if path.is_dir() or path.suffix.lower() in MODEL_SUFFIXES:
                yield path


class ModelPickScreen(ModalScreen[Path | None]):
    BINDINGS = [Binding("escape", "dismiss_none", "Cancel")]

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog tall"):
            yield Label(f"Pick a model under {self.root} (Enter picks, Esc cancels)", markup=False)
            yield ModelTree(self.root)

    def on_directory_tree_file_selected(self, event: DirectoryTree.FileSelected) -> None:
        self.dismiss(event.path)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
