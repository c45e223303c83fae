"""`hub runs report` through the real entry point, opened in Debian's Chromium (Playwright)
with the network cut: a profile pair, an eval with --layers, a fix run and a sweep, made by the
real `hub exec` commands in the ORT image. Each report must fetch nothing but its own file, log
no console error, and hold the expected Bokeh plots with the expected marks; a screenshot of
each lands in the test's tmp output (its path is printed)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.browser]

pytest.importorskip("bokeh", reason="needs the report extra (pip install -e '.[report]')")
pytest.importorskip("onnx", reason="the onnx package builds the eval's model")
from test_eval_cli import _outlier_project  # noqa: E402  (this folder is on sys.path)

HUB = str(Path(sys.executable).with_name("hub"))
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn.onnx"
# what a page's plots must hold: plot name -> glyph renderers (at least, by glyph type)
PLOTS_OF = """() => [...Bokeh.documents[0].all_models]
  .filter(m => m.renderers !== undefined && m.name)
  .map(p => ({name: p.name, glyphs: p.renderers.filter(r => r.glyph)
    .map(r => [r.glyph.type, r.data_source.get_length()])}))"""
TEXT_OF = """() => [...Bokeh.documents[0].all_models].filter(m => m.type === "Div")
  .map(m => m.text).join("\\n")"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's headless Chromium (never a build Playwright downloads)."""
    if not Path(CHROMIUM).is_file():
        pytest.skip("needs Chromium (Debian: apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs the browser extra")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--headless=new", "--disable-gpu"],
            chromium_sandbox=False,
        )  # fmt: skip
        try:
            yield chromium
        finally:
            chromium.close()


def hub(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([HUB, *args], cwd=cwd, capture_output=True, text=True,
                            env=dict(os.environ), timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, ort_image: str) -> tuple[Path, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("report")
    (folder / "hub.toml").write_text('[project]\nname = "report-tests"\n')
    (folder / "tiny_cnn.onnx").write_bytes(EXAMPLE.read_bytes())
    _outlier_project(folder)  # the eval tests' model whose int8 build diverges
    ids: dict[str, Any] = {"profiles": []}
    for runs_ in ("100", "200"):
        out = hub("exec", "profile", "onnxruntime", "tiny_cnn.onnx", "--set", f"runs={runs_}",
                  "--json", cwd=folder)  # fmt: skip
        ids["profiles"].append(json.loads(out.stdout)["run_id"])
    quantized = [
        "--dataset",
        "ods",
        "--set",
        "quantization=static",
        "--set",
        "calibration_data=ods",
    ]
    out = hub("exec", "eval", "onnxruntime", "outlier.onnx", *quantized, "--layers", "--json",
              cwd=folder)  # fmt: skip
    ids["eval"] = json.loads(out.stdout)["run_id"]
    out = hub("exec", "eval", "onnxruntime", "outlier.onnx", *quantized, "--goal",
              "cosine>=0.99", "--fix", "--json", cwd=folder)  # fmt: skip
    ids["fix"] = json.loads(out.stdout)["fix"]["run_id"]
    out = hub("exec", "sweep", "--models", "tiny_cnn.onnx,outlier.onnx", "--devices", "local",
              "--vary", "quantization=none,dynamic", "--json", cwd=folder)  # fmt: skip
    ids["sweep"] = json.loads(out.stdout)["run_id"]
    return folder, ids


def _open(browser: Any, report: Path, shot: Path) -> tuple[list[dict[str, Any]], str]:
    """The page's plots and its text, after checking it fetched nothing and logged no
    error."""
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    requests: list[str] = []
    errors: list[str] = []

    def route(handle: Any) -> None:
        requests.append(handle.request.url)
        if handle.request.url.startswith("file:"):
            handle.continue_()
        else:
            handle.abort()

    page.route("**/*", route)

    def console(message: Any) -> None:
        if message.type == "error":
            errors.append(message.text)

    page.on("console", console)
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(report.as_uri())
        page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0", timeout=30_000)
        page.wait_for_function("() => document.querySelector('.bk-Column') !== null"
                               " || Bokeh.index !== undefined", timeout=30_000)  # fmt: skip
        page.wait_for_timeout(500)  # let the canvases paint for the screenshot
        plots: list[dict[str, Any]] = page.evaluate(PLOTS_OF)
        text: str = page.evaluate(TEXT_OF)
        page.screenshot(path=str(shot), full_page=True)
    finally:
        page.close()
    assert requests == [report.as_uri()], requests  # nothing but the file itself
    assert errors == []
    print(f"screenshot: {shot}")
    return plots, text


def _glyphs(plots: list[dict[str, Any]], name: str) -> list[tuple[str, int]]:
    found = [p for p in plots if p["name"] == name]
    assert len(found) == 1, (name, [p["name"] for p in plots])
    return [(kind, count) for kind, count in found[0]["glyphs"]]


def _report(folder: Path, name: str, *args: str) -> Path:
    out = hub("runs", "report", *args, "-o", f"{name}.html", cwd=folder)
    path = folder / f"{name}.html"
    assert str(path) in out.stdout and path.stat().st_size < 5_000_000
    return path


def test_a_profile_pair(runs: tuple[Path, dict[str, Any]], browser: Any) -> None:
    folder, ids = runs
    _report(folder, "profiles", *ids["profiles"])
    plots, text = _open(browser, folder / "profiles.html", folder / "profiles.png")
    assert "p99 needs &gt;= 368 runs for a 95 % CI; got 200" in text  # too few, said
    assert "p90 from 100 runs: fewer than the 64" not in text and "profiler overhead" in text
    assert "A/B verdicts" in text and "(median)" in text  # the comparison's verdict line
    lines = [c for kind, c in _glyphs(plots, "latency") if kind == "Line"]
    assert lines == [100, 200]  # one ECDF per run, every sample (under the 2,000-point cap)
    bars = [c for kind, c in _glyphs(plots, "layers") if kind == "HBar"]
    assert len(bars) == 2 and bars[0] == bars[1] > 3  # both runs' layers on one axis


def test_an_eval_with_layers(runs: tuple[Path, dict[str, Any]], browser: Any) -> None:
    folder, ids = runs
    _report(folder, "eval", "--eval", ids["eval"])
    plots, _ = _open(browser, folder / "eval.html", folder / "eval.png")
    glyphs = _glyphs(plots, "divergence")
    assert ("Scatter", 1) in glyphs  # the first divergent layer marked
    assert glyphs[0][0] == "Line" and glyphs[0][1] >= 1


def test_a_fix_run(runs: tuple[Path, dict[str, Any]], browser: Any) -> None:
    folder, ids = runs
    _report(folder, "fix", "--fix", ids["fix"])
    plots, _ = _open(browser, folder / "fix.html", folder / "fix.png")
    glyphs = _glyphs(plots, "fix-pareto")
    assert glyphs[0] == ("Scatter", 3)  # float32, int8, repaired
    assert glyphs[1][0] == "Step" and 1 <= glyphs[1][1] <= 3


def test_a_sweep(runs: tuple[Path, dict[str, Any]], browser: Any) -> None:
    folder, ids = runs
    _report(folder, "sweep", "--sweep", ids["sweep"])
    plots, _ = _open(browser, folder / "sweep.html", folder / "sweep.png")
    for metric in ("median_ms", "p99_ms", "cosine_similarity"):
        assert ("Rect", 4) in _glyphs(plots, f"sweep-{metric}")  # 2 models x 2 settings x 1 device
    assert _glyphs(plots, "sweep-pareto")[0] == ("Scatter", 4)


def test_wrong_run_types_are_refused_in_one_line(runs: tuple[Path, dict[str, Any]]) -> None:
    folder, ids = runs
    result = subprocess.run([HUB, "runs", "report", "--eval", ids["profiles"][0], "-o", "x.html"],
                            cwd=folder, capture_output=True, text=True)  # fmt: skip
    assert result.returncode == 2 and "is a PROFILE run; --eval takes EVAL runs" in result.stderr
    assert "Traceback" not in result.stderr and not (folder / "x.html").exists()
