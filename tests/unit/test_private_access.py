"""No private attribute of another library is used in src/edgehub, but for the exceptions below.

The rule, read from the source with `ast` (the names edgehub defines are its own, whatever they
are called):

- importing a private module or name of another package (``from textual.widgets._footer ...``);
- ``mod._name`` where ``mod`` is a module imported from outside edgehub (``hashlib._Hash``);
- ``obj._name`` or ``super()._name`` where edgehub defines no ``_name`` (as a function, class,
  module or class attribute, or ``self._name`` in the same package); for ``super()`` the
  enclosing class's own definition does not count (it overrides the library's);
- ``getattr(obj, "_name")`` (``hasattr``, ...) where the same file defines no ``_name``.

Each exception is keyed by the file and the name, with why it stays: there is no public way.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "edgehub"

EXCEPTIONS: dict[tuple[str, str], str] = {
    ("agent/entry.py", "_exit"): "os._exit is documented: leave without the interpreter's teardown",
    ("agent/lifeline.py", "_exit"): "os._exit is documented: end at once when the host is gone",
    ("agent/server/job.py", "_exit"): "os._exit is documented: a forked job must not run atexit",
    ("cli/main.py", "_exit"): "os._exit is documented: a short command skips module teardown",
    ("cli/resident.py", "_exit"): "os._exit is documented: a forked child that cannot start ends",
    ("cli/__init__.py", "_exit"): "os._exit is documented: a served command's client ends",
    ("agent/tflite/selective.py", "_experimental_disable_per_channel"): (
        "TFLiteConverter has no public switch for per-tensor int8 weights"
    ),
    ("agent/tflite/interpreter.py", "_get_ops_details"): (
        "LiteRT's Interpreter has no public op list; read only where present, else none"
    ),
    ("runners/docker/sdk.py", "_sock"): (
        "the SDK hands a unix/tcp exec as socket.SocketIO, which cannot half-close or close the "
        "connection; a duplicate descriptor leaves the SDK's socket open until collected"
    ),
    ("tui/app.py", "_handle_exception"): (
        "Textual has no public hook for an uncaught error: log it and stop the runs first"
    ),
    ("tui/screen_stock.py", "_get_screen"): (
        "Textual has no public call to mount a screen unseen (bench_tui (a2): screen switches)"
    ),
    ("tui/screen_stock.py", "_screen_stacks"): (
        "Textual has no public call to set a mode's base screen without resuming it twice"
    ),
    ("tui/screen_stock.py", "_css_update_count"): (
        "Textual has no public call to mark a screen styled (else a full restyle on showing it)"
    ),
    ("tui/widgets/hub_footer.py", "_footer"): (
        "Textual does not export FooterKey, the footer's key widget restyled here"
    ),
}


def _files() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(SRC.rglob("*.py")):
        yield path.relative_to(SRC).as_posix(), ast.parse(path.read_text(), str(path))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _defined(trees: list[tuple[str, ast.Module]]) -> dict[str, set[object]]:
    """Each name edgehub defines as an attribute, with where: the id of the class whose body
    defines it, 0 for a module's top level, or the package for a ``self.x``/``cls.x``
    assignment (an attribute of that package's own objects)."""
    defined: dict[str, set[object]] = {}
    for file, tree in trees:
        for statement in tree.body:
            for name in _bound(statement):
                defined.setdefault(name, set()).add(0)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    for name in _bound(item):
                        defined.setdefault(name, set()).add(id(node))
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id in {"self", "cls"}
            ):
                defined.setdefault(node.attr, set()).add(_package(file))
    return defined


def _bound(node: ast.stmt) -> Iterator[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name
    elif isinstance(node, ast.Assign):
        for target in node.targets:
            yield from (n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        yield node.target.id


def _foreign_modules(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not alias.name.startswith("edgehub"):
                    names.add(alias.asname or alias.name.split(".")[0])
    return names


def _uses(file: str, tree: ast.Module, defined: dict[str, set[object]]) -> Iterator[str]:
    """The private names of other libraries ``tree`` uses, one entry per use."""
    foreign = _foreign_modules(tree)
    classes = {id(item): node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
               for item in ast.walk(node)}  # fmt: skip
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] != "edgehub":
                for part in node.module.split("."):
                    if _private(part):
                        yield part
                yield from (a.name for a in node.names if _private(a.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield from (p for p in alias.name.split(".") if _private(p))
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            base = node.value
            if isinstance(base, ast.Name) and base.id in foreign:
                yield node.attr
            elif isinstance(base, ast.Call) and ast.unparse(base.func) == "super":
                if not _own(node.attr, defined, file) - {id(classes.get(id(node)))}:
                    yield node.attr
            elif not (isinstance(base, ast.Name) and base.id in {"self", "cls"}) and not _own(
                node.attr, defined, file
            ):
                yield node.attr
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"getattr", "hasattr", "setattr", "delattr"}
            and len(node.args) > 1
        ):
            name = node.args[1]
            if (
                isinstance(name, ast.Constant)
                and isinstance(name.value, str)
                and _private(name.value)
                and name.value not in _file_names(tree)
            ):
                yield name.value


def _own(name: str, defined: dict[str, set[object]], file: str) -> set[object]:
    """Where edgehub defines ``name`` as seen from ``file``: a ``self.x`` of another package
    is not edgehub's attribute there."""
    package = _package(file)
    return {w for w in defined.get(name, set()) if not isinstance(w, str) or w == package}


def _file_names(tree: ast.Module) -> set[str]:
    """The attribute names ``tree`` itself assigns or defines: what a ``getattr(x, "_name")``
    probe in it may read without being a look into another library's object."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _package(file: str) -> str:
    return file.rpartition("/")[0]


def _found() -> dict[tuple[str, str], int]:
    trees = list(_files())
    defined = _defined(trees)
    found: dict[tuple[str, str], int] = {}
    for file, tree in trees:
        for name in _uses(file, tree, defined):
            found[(file, name)] = found.get((file, name), 0) + 1
    return found


def test_no_private_attribute_of_another_library() -> None:
    found = _found()
    unlisted = sorted(f"{file}: {name}" for file, name in found if (file, name) not in EXCEPTIONS)
    assert not unlisted, (
        "private names of another library (use its public API, or list the use in "
        "EXCEPTIONS with why):\n  " + "\n  ".join(unlisted)
    )


def test_every_exception_is_still_used() -> None:
    found = _found()
    stale = sorted(f"{file}: {name}" for file, name in EXCEPTIONS if (file, name) not in found)
    assert not stale, "EXCEPTIONS no longer used (remove them):\n  " + "\n  ".join(stale)


def test_the_rule_sees_each_kind_of_use() -> None:
    source = (
        "import hashlib\nfrom textual.widgets._footer import FooterKey\n"
        "class A(Base):\n    def _handle_exception(self, e):\n"
        "        super()._handle_exception(e)\n"
        "def f(h):\n    return hashlib._Hash, h._sock, getattr(h, '_private_thing')\n"
    )
    tree = ast.parse(source)
    defined = _defined([("x.py", tree)])
    assert sorted(_uses("x.py", tree, defined)) == sorted(
        ["_footer", "_handle_exception", "_Hash", "_sock", "_private_thing"]
    )
