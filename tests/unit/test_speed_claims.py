"""The speed machinery stays where a benchmark defends it.

- No comment or docstring in src/edgehub states a measured time (``~60 ms``, ``10-20 ms``,
  ``3 µs``, ``~0.2 s``): such figures go stale; the benchmark that measures it is named instead.
- Each module that exists for speed names, in its docstring, the benchmark in benchmarks/ that
  measures what it keeps; every benchmark a module names exists.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "edgehub"

FIGURE = re.compile(r"\d(?:[\d.,]*)\s?(?:-\s?\d[\d.]*\s?)?(?:ms|µs)\b|~\s?\d[\d.]*\s?s\b")
BENCH = re.compile(r"benchmarks/(\w+\.py)")

# The modules that exist for speed, each with the benchmark its docstring must name.
SPEED_MODULES = {
    "agent/bundle.py": "bench_ort_local.py",
    "agent/server/__init__.py": "bench_ort_local.py",
    "cli/plain_table.py": "bench_ort_local.py",
    "ops/compile_cache.py": "bench_compile_cache.py",
    "runners/docker/lite.py": "bench_docker_remote.py",
    "runners/docker/oneshot.py": "bench_ort_local.py",
    "runners/docker/warm.py": "bench_ort_local.py",
    "runners/ssh/relay.py": "bench_ssh.py",
    "tracking/hash_memo.py": "bench_compile_cache.py",
    "tui/line_buffer.py": "bench_tui.py",
    "tui/screen_stock.py": "bench_tui.py",
    "tui/widgets/hub_footer.py": "bench_tui.py",
}


def _prose(path: Path) -> Iterator[tuple[int, str]]:
    """The comments and docstrings of ``path``, with their first line."""
    source = path.read_text()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc and node.body:
                yield node.body[0].lineno, doc


def test_no_measured_time_in_prose() -> None:
    found = [
        f"{path.relative_to(SRC)}:{line}: {match.group(0)!r}"
        for path in sorted(SRC.rglob("*.py"))
        for line, text in _prose(path)
        for match in FIGURE.finditer(text)
    ]
    assert not found, (
        "a measured time in a comment or docstring goes stale: name the benchmark in "
        "benchmarks/ that measures it instead\n  " + "\n  ".join(found)
    )


def test_speed_modules_name_their_benchmark() -> None:
    missing = []
    for module, bench in SPEED_MODULES.items():
        doc = ast.get_docstring(ast.parse((SRC / module).read_text())) or ""
        if f"benchmarks/{bench}" not in doc:
            missing.append(f"{module}: should name benchmarks/{bench}")
    assert not missing, "\n".join(missing)


def test_named_benchmarks_exist() -> None:
    named = {
        (path.relative_to(SRC).as_posix(), name)
        for path in SRC.rglob("*.py")
        for _, text in _prose(path)
        for name in BENCH.findall(text)
    }
    assert named, "no module names a benchmark"
    gone = sorted(f"{module}: benchmarks/{name}" for module, name in named
                  if not (ROOT / "benchmarks" / name).is_file())  # fmt: skip
    assert not gone, "named benchmarks that do not exist:\n  " + "\n  ".join(gone)


def test_the_figure_rule_sees_figures() -> None:
    for text in ("~60 ms of a run", "10-20 ms of CPU", "3 µs a tensor", "~0.2 s a call"):
        assert FIGURE.search(text), text
    for text in ("up to 3 s to exit", "median ms", "timeout_ms", "2 s when read"):
        assert not FIGURE.search(text), text
