"""`AccuracyView`: an EVAL run's accuracy tab: goals, task metrics, per-output figures, the
worst samples, and the layer table with the first divergent layer highlighted."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Label

from edgehub.toolchains.metrics import OUTPUT_FIGURES
from edgehub.tui.accuracy_data import Accuracy, LayerTable
from edgehub.tui.cells import plain

FIRST_DIVERGENT = "◀ first divergent"
_HIGHLIGHT = "bold white on dark_red"
_LABELS = {"snr_db": "SNR dB", "psnr_db": "PSNR dB"}
_LAYER_FIGURES = ("rel_l2", "channel_rel_l2", "growth", "cosine", "snr_db")


def _number(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, (int, float)):
        return f"{value:.4g}"
    return str(value)


class AccuracyView(VerticalScroll):
    DEFAULT_CSS = """
    AccuracyView { height: 1fr; padding: 0 1; }
    AccuracyView > Label { width: 100%; height: auto; }
    AccuracyView > Label.section { padding: 1 0 0 0; text-style: bold; }
    AccuracyView > DataTable { height: auto; max-height: 24; }
    """

    def __init__(self, accuracy: Accuracy, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.accuracy = accuracy

    def compose(self) -> ComposeResult:
        accuracy = self.accuracy
        yield Label(self._summary(), id="accuracy-summary", markup=False)
        if accuracy.tasks:
            yield Label("task metrics", classes="section")
            yield DataTable(id="accuracy-tasks", cursor_type="row", zebra_stripes=True)
        yield Label("outputs against the reference", classes="section")
        yield DataTable(id="accuracy-figures", cursor_type="row", zebra_stripes=True)
        if accuracy.worst:
            yield Label("worst samples (lowest cosine)", classes="section")
            yield DataTable(id="accuracy-worst", cursor_type="row", zebra_stripes=True)
        if accuracy.layers is not None:
            yield Label(self._layers_title(accuracy.layers), classes="section", markup=False)
            yield DataTable(id="accuracy-layers", cursor_type="row")

    def _summary(self) -> str:
        accuracy = self.accuracy
        verdict = {None: "no goals", True: "goals passed", False: "goals MISSED"}[accuracy.passed]
        lines = [f"{accuracy.samples} samples: {verdict}"]
        for goal, passed, detail in accuracy.goals:
            lines.append(f"  {'passed' if passed else 'MISSED'}  {goal}  ({detail})")
        return "\n".join(lines)

    @staticmethod
    def _layers_title(layers: LayerTable) -> str:
        first = layers.first or "none (no layer above the threshold)"
        return (
            f"layers: first divergent {first}; {len(layers.rows)} of {layers.layers} measured "
            f"on {layers.samples} samples in {layers.runs} extra runs; diverges above "
            f"{layers.threshold:g} (worst channel's relative L2)"
        )

    def on_mount(self) -> None:
        accuracy = self.accuracy
        if accuracy.tasks:
            tasks = self.query_one("#accuracy-tasks", DataTable)
            tasks.add_columns("metric", "model", "reference", "model - reference")
            for name, (model, reference) in sorted(accuracy.tasks.items()):
                delta = None if reference is None else model - reference
                tasks.add_row(*plain(name, _number(model), _number(reference), _number(delta)))
        figures = self.query_one("#accuracy-figures", DataTable)
        shown = [f for f in OUTPUT_FIGURES if any(f in v for v in accuracy.figures.values())]
        others = sorted({f for v in accuracy.figures.values() for f in v} - set(shown))
        names = [_LABELS.get(f, f.replace("_", " ")) for f in [*shown, *others]]
        figures.add_columns("output", *names)
        for output, values in sorted(accuracy.figures.items()):
            figures.add_row(*plain(output, *(_number(values.get(f)) for f in [*shown, *others])))
        if accuracy.worst:
            worst = self.query_one("#accuracy-worst", DataTable)
            worst.add_columns("output", "sample", "cosine", "max abs")
            for output, sample, cosine, max_abs in accuracy.worst:
                worst.add_row(*plain(output, sample, _number(cosine), _number(max_abs)))
        if accuracy.layers is not None:
            self._fill_layers(accuracy.layers)

    def _fill_layers(self, layers: LayerTable) -> None:
        table = self.query_one("#accuracy-layers", DataTable)
        table.add_columns(
            "#", "layer", "op", "rel L2", "worst ch.", "grew by", "cosine", "SNR dB", ""
        )
        first_row = None
        for row in layers.rows:
            first = row.get("node") == layers.first
            cells = [str(row.get(key, "")) for key in ("index", "node", "op")]
            cells += [_number(row.get(key)) for key in _LAYER_FIGURES]
            fused = row.get("fused") or []
            note = FIRST_DIVERGENT if first else ""
            if fused:
                note = f"{note} (with {', '.join(map(str, fused))})".strip()
            cells.append(note)
            shown = plain(*cells)
            if first:
                for cell in shown:
                    cell.stylize(_HIGHLIGHT)
                first_row = table.row_count
            table.add_row(*shown, key=str(row.get("node", table.row_count)))
        for row in layers.fused:
            if not any(str(row.get("node")) in (r.get("fused") or []) for r in layers.rows):
                node, op = row.get("node", ""), row.get("op", "")
                table.add_row(*plain("", node, op, *["-"] * 5, "fused or renamed"))
        if first_row is not None:
            table.move_cursor(row=first_row)
