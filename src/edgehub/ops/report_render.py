"""`ReportData` drawn as one self-contained HTML file with Bokeh.

Why Bokeh: ``bokeh.embed.file_html`` with ``bokeh.resources.INLINE`` writes its JavaScript and
styles into the page (about 1.5 MB), so the file opens offline in any browser, fetches nothing
and needs no server; the charts stay interactive (zoom, hover). Plotly inlines about 3.5 MB;
hand-drawn SVG would have no hover and no log axes for free. Bokeh is the optional extra
``report`` (``pip install 'edgehub[report]'``), imported here only, when a report is written.

The data kept in the page is bounded whatever the runs hold: a latency ECDF is drawn through
at most `ECDF_POINTS` quantiles, plus every outlier (beyond 3 IQR over the third quartile) up
to `MAX_OUTLIERS` per run; a per-layer chart keeps every layer (a 1,000-layer model costs tens
of kB). Each chart is a Bokeh plot whose ``name`` says what it is (``latency``, ``layers``,
``divergence``, ``fix-pareto``, ``sweep-<metric>``, ``sweep-pareto``) for tests to find.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from edgehub.errors import UsageError
from edgehub.ops.html_report import SWEEP_METRICS, pareto_front

if TYPE_CHECKING:
    from edgehub.ops.html_report import (
        EvalSection,
        FixSection,
        ProfileSection,
        ReportData,
        SweepSection,
    )


ECDF_POINTS = 2000
MAX_OUTLIERS = 500
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
WIDTH = 900


def render_html(data: ReportData) -> str:
    """The report as one HTML document (Bokeh's scripts inlined)."""
    try:
        from bokeh.embed import file_html
        from bokeh.layouts import column
        from bokeh.resources import INLINE
    except ImportError:
        raise UsageError(
            "hub runs report needs the report extra: pip install 'edgehub[report]'"
        ) from None
    parts: list[Any] = [_div(f"<h1>{html.escape(data.title)}</h1>")]
    if data.profiles:
        parts += _profiles(data)
    for section in data.evals:
        parts += _eval(section)
    for fix in data.fixes:
        parts += _fix(fix)
    for sweep in data.sweeps:
        parts += _sweep(sweep)
    return str(file_html(column(*parts), INLINE, data.title))


def _div(text: str) -> Any:
    from bokeh.models.widgets import Div

    return Div(text=text, width=WIDTH)


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows
    )
    style = "border-collapse:collapse;font-family:monospace;font-size:12px"
    return f'<table style="{style}" border="1" cellpadding="3"><tr>{head}</tr>{body}</table>'


def _figure(name: str, title: str, **kwargs: Any) -> Any:
    from bokeh.plotting import figure

    tools = "pan,wheel_zoom,box_zoom,reset,save,hover"
    return figure(name=name, title=title, width=WIDTH, height=360, tools=tools, **kwargs)


def _ecdf(samples: list[float]) -> tuple[list[float], list[float], list[float]]:
    """The ECDF through at most `ECDF_POINTS` quantiles, and the far-out samples (x only)."""
    import numpy as np

    values = np.sort(np.asarray(samples, dtype=np.float64))
    probs = np.linspace(0.0, 1.0, min(len(values), ECDF_POINTS))
    xs = np.quantile(values, probs)
    q1, q3 = np.quantile(values, [0.25, 0.75])
    outliers = values[values > q3 + 3.0 * (q3 - q1)][-MAX_OUTLIERS:]
    return [float(x) for x in xs], [float(p) for p in probs], [float(x) for x in outliers]


def _profiles(data: ReportData) -> list[Any]:
    from bokeh.models import ColumnDataSource

    parts: list[Any] = [_div("<h2>Latency</h2>")]
    plot = _figure("latency", "latency ECDF (log x; x: outliers beyond 3 IQR)", x_axis_type="log")
    plot.xaxis.axis_label, plot.yaxis.axis_label = "latency (ms)", "fraction of runs"
    rows: list[list[str]] = []
    for i, profile in enumerate(p for p in data.profiles if p.samples_ms):
        color = PALETTE[i % len(PALETTE)]
        xs, ps, outliers = _ecdf(profile.samples_ms)
        plot.line(xs, ps, color=color, line_width=2, legend_label=profile.label)
        if outliers:
            source = ColumnDataSource({"x": outliers, "y": [1.0] * len(outliers)})
            plot.scatter("x", "y", source=source, marker="x", size=9, color=color)
        rows += _percentile_rows(profile)
    plot.legend.location = "bottom_right"
    parts.append(plot)
    header = ["run", "percentile", "ms", "95 % CI", "runs", "note"]
    parts.append(_div(_table(header, rows)))
    if data.verdicts:
        verdicts = [
            [v.other, v.baseline, v.verdict, "yes" if v.comparable else "NO", "; ".join(v.notes)]
            for v in data.verdicts
        ]
        header = ["run B", "against A", "verdict", "comparable", "conditions"]
        parts.append(_div("<h3>A/B verdicts</h3>" + _table(header, verdicts)))
    parts += _conditions(data.profiles)
    if any(p.layers for p in data.profiles):
        parts += _layers(data.profiles)
    return parts


def _percentile_rows(profile: ProfileSection) -> list[list[str]]:
    rows = []
    for p in profile.percentiles:
        ci = "-" if p.low is None or p.high is None else f"{p.low:.4g} .. {p.high:.4g}"
        rows.append([profile.label, p.label, f"{p.value:.4g}", ci, str(p.samples), p.note or ""])
    return rows


def _conditions(profiles: list[ProfileSection]) -> list[Any]:
    keys = sorted({k for p in profiles for k in p.conditions})
    if not keys:
        return []
    rows = [[k, *(p.conditions.get(k, "-") for p in profiles)] for k in keys]
    header = ["condition", *(p.label for p in profiles)]
    return [_div("<h3>Recorded conditions</h3>" + _table(header, rows))]


def _layers(profiles: list[ProfileSection]) -> list[Any]:
    from bokeh.models import ColumnDataSource
    from bokeh.transform import dodge

    position: dict[str, int] = {}  # each node group's graph position; unmapped ones last
    for layer in (layer for p in profiles for layer in p.layers):
        position[layer.node] = min(position.get(layer.node, layer.position), layer.position)
    nodes = sorted(position, key=lambda node: (position[node], node))
    traced = [p for p in profiles if p.layers]
    plot = _figure(
        "layers",
        "per-layer time per traced run, on the ONNX nodes each layer came from "
        "(a+b: fused; unmapped: inserted by the runtime)",
        y_range=list(reversed(nodes)),
    )
    plot.hover.tooltips = [("ONNX nodes", "@node"), ("engine layers", "@layers"), ("ms", "@ms")]
    plot.height = max(240, 18 * len(nodes) * max(1, len(traced)) // 2 + 80)
    plot.xaxis.axis_label = "mean time per run (ms)"
    height = 0.8 / len(traced)
    overheads = []
    for i, profile in enumerate(traced):
        times: dict[str, float] = {}
        engine: dict[str, list[str]] = {}
        for layer in profile.layers:  # the layers one node group ran add up
            times[layer.node] = times.get(layer.node, 0.0) + layer.mean_ms
            engine.setdefault(layer.node, []).append(layer.layer)
        source = ColumnDataSource(
            {
                "node": list(times),
                "ms": list(times.values()),
                "layers": [", ".join(engine[node]) for node in times],
            }
        )
        offset = (i - (len(traced) - 1) / 2) * height
        bar = {"height": height, "color": PALETTE[i % len(PALETTE)], "legend_label": profile.label}
        plot.hbar(y=dodge("node", offset, range=plot.y_range), right="ms", source=source, **bar)
        if profile.overhead is not None:
            overheads += [f"{profile.label}: {line}" for line in profile.overhead.lines()]
    plot.legend.location = "bottom_right"
    text = "".join(f"<p>{html.escape(line)}</p>" for line in overheads)
    return [_div("<h2>Per-layer time</h2>"), plot, _div(text)]


def _eval(section: EvalSection) -> list[Any]:
    from bokeh.models import ColumnDataSource
    from bokeh.models.annotations import Span

    nan = float("nan")
    parts: list[Any] = [_div(f"<h2>Eval {html.escape(section.label)}</h2>")]
    figures = sorted({f for values in section.outputs.values() for f in values})
    rows = [[o, *(f"{v.get(f, nan):.5g}" for f in figures)] for o, v in section.outputs.items()]
    parts.append(_div(_table(["output", *figures], rows)))
    worst = [
        [o, str(r.get("sample")), f"{r.get('cosine', nan):.5g}", f"{r.get('max_abs', nan):.5g}"]
        for o, found in section.worst.items()
        for r in found
    ]
    if worst:
        table = _table(["output", "sample", "cosine", "max abs"], worst)
        parts.append(_div("<h3>Worst samples</h3>" + table))
    if not section.measured:
        return parts
    names = [str(row["node"]) for row in section.measured]
    errors = [max(float(row.get("channel_rel_l2") or 0.0), 1e-9) for row in section.measured]
    plot = _figure(
        "divergence",
        "per-layer divergence (worst channel's relative L2, log y)",
        x_range=names,
        y_axis_type="log",
    )
    plot.yaxis.axis_label = "relative L2 error"
    plot.line(names, errors, line_width=2)
    plot.scatter(names, errors, size=8)
    if section.threshold is not None:
        span = Span(location=section.threshold, dimension="width", line_dash="dashed")
        span.line_color = "gray"
        plot.add_layout(span)
    first = section.first
    if first is not None and str(first.get("node")) in names:
        node = str(first["node"])
        source = ColumnDataSource({"x": [node], "y": [errors[names.index(node)]]})
        label = f"first divergent: {node} ({first.get('op', '')})"
        star = {"size": 18, "color": "red", "marker": "star"}
        plot.scatter("x", "y", source=source, legend_label=label, **star)
    parts.append(plot)
    return parts


def _fix(section: FixSection) -> list[Any]:
    from bokeh.models import ColumnDataSource
    from bokeh.models.annotations import LabelSet

    points = [p for p in section.points if p.latency_ms is not None and p.accuracy is not None]
    title = f"<h2>Fix {section.run_id[:8]}</h2><p>{html.escape(section.reason)}</p>"
    plot = _figure("fix-pareto", "accuracy against latency (cosine to float32; median ms)")
    plot.xaxis.axis_label, plot.yaxis.axis_label = "median latency (ms)", "cosine"
    source = ColumnDataSource(
        {
            "x": [p.latency_ms for p in points],
            "y": [p.accuracy for p in points],
            "model": [
                f"{p.model} ({len(p.kept_in_float)} in float)" if p.kept_in_float else p.model
                for p in points
            ],
            "color": ["#2ca02c" if p.passed else "#d62728" for p in points],
        }
    )
    plot.scatter("x", "y", source=source, size=12, color="color")
    plot.add_layout(LabelSet(x="x", y="y", text="model", source=source, x_offset=6, y_offset=4))
    plot.x_range.range_padding, plot.y_range.range_padding = 0.3, 0.15  # room for the labels
    _front(plot, [(float(p.latency_ms or 0), float(p.accuracy or 0)) for p in points])
    return [_div(title), plot]


def _front(plot: Any, points: list[tuple[float, float]]) -> None:
    front = pareto_front(points)
    if front:
        xs, ys = [points[i][0] for i in front], [points[i][1] for i in front]
        dashed = {"mode": "after", "line_dash": "dashed", "color": "black"}
        plot.step(xs, ys, legend_label="Pareto front", **dashed)
        plot.legend.location = "bottom_right"


def _sweep(section: SweepSection) -> list[Any]:
    from bokeh.models import ColumnDataSource, LinearColorMapper
    from bokeh.models.annotations import ColorBar

    parts: list[Any] = [_div(f"<h2>Sweep {section.run_id[:8]}</h2>")]
    rows = sorted({c.row for c in section.cells})
    devices = sorted({c.device for c in section.cells})
    metrics = [m for m in SWEEP_METRICS if any(m in c.metrics for c in section.cells)]
    for metric in metrics:
        cells = [c for c in section.cells if metric in c.metrics]
        values = [c.metrics[metric] for c in cells]
        low, high = min(values), max(values)
        top = high if high > low else low + 1
        mapper = LinearColorMapper(palette="Viridis256", low=low, high=top)
        source = ColumnDataSource(
            {
                "row": [c.row for c in cells],
                "device": [c.device for c in cells],
                "value": values,
                "text": [f"{v:.4g}" for v in values],
            }
        )
        plot = _figure(
            f"sweep-{metric}", f"{metric} (models x devices)", x_range=devices, y_range=rows
        )
        plot.height = max(200, 40 * len(rows) + 100)
        fill = {"field": "value", "transform": mapper}
        plot.rect("device", "row", 1, 1, source=source, fill_color=fill, line_color="white")
        centred = {"text_align": "center", "text_baseline": "middle", "text_color": "white"}
        plot.text("device", "row", text="text", source=source, **centred)
        plot.add_layout(ColorBar(color_mapper=mapper), "right")
        parts.append(plot)
    paired = [
        c for c in section.cells if "median_ms" in c.metrics and "cosine_similarity" in c.metrics
    ]
    if paired:
        plot = _figure("sweep-pareto", "Pareto front: cosine against median latency")
        plot.xaxis.axis_label, plot.yaxis.axis_label = "median latency (ms)", "cosine"
        source = ColumnDataSource(
            {
                "x": [c.metrics["median_ms"] for c in paired],
                "y": [c.metrics["cosine_similarity"] for c in paired],
                "cell": [f"{c.row} @ {c.device}" for c in paired],
            }
        )
        plot.scatter("x", "y", source=source, size=10)
        _front(plot, [(c.metrics["median_ms"], c.metrics["cosine_similarity"]) for c in paired])
        parts.append(plot)
    return parts
