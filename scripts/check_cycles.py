#!/usr/bin/env python3
"""Fail on an import cycle between edgehub's first-level packages (stdlib only).

Reads every module under src/edgehub with `ast`, keeps the imports made when a module loads
(module level, ``try``/``if`` blocks included; imports inside functions, classes' methods and
``if TYPE_CHECKING:`` blocks are deliberate lazy imports and are left out), maps each to the
first-level package it belongs to (``edgehub.core.context`` -> ``core``) and looks for a cycle
in that graph. Prints each cycle with one import that makes each of its edges; exit status 1
on a cycle, 0 otherwise.

Usage: python3 scripts/check_cycles.py [SRC_DIR]   (default: src/edgehub beside this script)
"""

from __future__ import annotations

import ast
import itertools
import sys
from pathlib import Path

ROOT = "edgehub"


def _module_name(path: Path, package_dir: Path) -> str:
    parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _load_time_imports(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """The import statements among ``body`` that run when the module loads."""
    found: list[ast.Import | ast.ImportFrom] = []
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                found += _load_time_imports(node.body)
            found += _load_time_imports(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                found += _load_time_imports(block)
            for handler in node.handlers:
                found += _load_time_imports(handler.body)
        elif isinstance(node, (ast.With, ast.ClassDef)):
            found += _load_time_imports(node.body)
    return found


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The absolute module names ``node`` imports from inside ``module``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level == 0:
        base = node.module or ""
    else:
        package = module.split(".") if is_package else module.split(".")[:-1]
        keep = len(package) - (node.level - 1)
        base = ".".join(package[:keep] + ([node.module] if node.module else []))
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def _package(name: str, known: set[str]) -> str | None:
    """The first-level edgehub package (or top module) of ``known`` that ``name`` is in
    (``from edgehub import __version__`` names no package)."""
    parts = name.split(".")
    if parts[0] != ROOT or len(parts) < 2 or parts[1] not in known:
        return None
    return parts[1]


def package_graph(package_dir: Path) -> dict[str, dict[str, str]]:
    """``{package: {imported package: "module:line imports target"}}`` of load-time imports."""
    graph: dict[str, dict[str, str]] = {}
    known = {p.stem for p in package_dir.iterdir() if p.suffix == ".py" or p.is_dir()}
    for path in sorted(package_dir.rglob("*.py")):
        module = _module_name(path, package_dir)
        source = _package(module, known)
        if source is None:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges = graph.setdefault(source, {})
        for node in _load_time_imports(tree.body):
            for target in _targets(node, module, path.name == "__init__.py"):
                imported = _package(target, known)
                if imported is not None and imported != source and imported not in edges:
                    edges[imported] = f"{module}:{node.lineno} imports {target}"
    return graph


def find_cycles(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """The strongly connected groups of more than one package, each as a closed path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, {})):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(_closed_path(graph, set(group)))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def _closed_path(graph: dict[str, dict[str, str]], group: set[str]) -> list[str]:
    """One cycle through the group's first member (it exists: the group is strongly
    connected), found breadth first."""
    start = min(group)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(graph.get(node, {})):
            if nxt == start:
                return paths[node] + [start]
            if nxt in group and nxt not in paths:
                paths[nxt] = paths[node] + [nxt]
                queue.append(nxt)
    return [start, start]


def main(argv: list[str]) -> int:
    default = Path(__file__).resolve().parent.parent / "src" / ROOT
    package_dir = Path(argv[1]) if len(argv) > 1 else default
    if not package_dir.is_dir():
        print(f"check_cycles: no package folder {package_dir}", file=sys.stderr)
        return 2
    graph = package_graph(package_dir)
    cycles = find_cycles(graph)
    for cycle in cycles:
        print("import cycle between packages: " + " -> ".join(cycle))
        for here, there in itertools.pairwise(cycle):
            print(f"  {here} -> {there}: {graph[here][there]}")
    if not cycles:
        print(f"no import cycle between the {len(graph)} packages of {ROOT}")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
