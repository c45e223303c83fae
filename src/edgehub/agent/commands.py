"""Finding the code behind a command name. Standard library only; nothing heavy is imported.

Command ``NS.VERB`` is the module ``<agent package>.NS.VERB``, whose ``run(params, report)``
returns a :class:`~.protocol.CommandOutput`. A runtime namespace is a subpackage (found in the
zipapp or beside this file) whose ``__init__`` declares ``COMMANDS`` (its verbs) and
``PRELOAD`` (what a resident server of its image imports up front), and may define
``runtime_env()`` (its part of a result's ``env``): adding a runtime edits nothing here.
"""

from __future__ import annotations

import importlib
import re
import sys
from types import ModuleType
from typing import Callable, Sequence

from .protocol import CommandOutput, Params, UsageError
from .report import Report

Handler = Callable[[Params, Report], CommandOutput]

BUILTIN_COMMANDS = ("env",)
_WORD = re.compile(r"[a-z][a-z0-9_]*\Z")
_ROOT = __name__.rsplit(".", 1)[0]


def runtime_package(namespace: str) -> ModuleType | None:
    """The subpackage of ``namespace`` when it is a runtime's (declares COMMANDS), else None."""
    if not _WORD.match(namespace):
        return None
    try:
        module = importlib.import_module(f"{_ROOT}.{namespace}")
    except ImportError:
        return None
    if not hasattr(module, "__path__") or not isinstance(getattr(module, "COMMANDS", None), tuple):
        return None
    return module


def namespaces() -> list[str]:
    """The runtime namespaces present, sorted."""
    import pkgutil  # only for listing them: not on a command's way

    found = pkgutil.iter_modules(getattr(sys.modules[_ROOT], "__path__", []))
    return sorted(i.name for i in found if i.ispkg and runtime_package(i.name) is not None)


def command_names() -> list[str]:
    """Every command: the built-in ones, then ``NS.VERB`` for each runtime namespace."""
    names = list(BUILTIN_COMMANDS)
    for namespace in namespaces():
        package = runtime_package(namespace)
        names += [f"{namespace}.{verb}" for verb in getattr(package, "COMMANDS", ())]
    return names


def load_handler(command: str | None) -> Handler:
    """The ``run`` function serving ``command``; a UsageError naming the known ones otherwise."""
    if command is None:
        raise UsageError(f"no command given; commands: {', '.join(command_names())}")
    namespace, dot, verb = command.partition(".")
    package = runtime_package(namespace) if dot else None
    if package is None or verb not in getattr(package, "COMMANDS", ()):
        raise UsageError(f"unknown command '{command}'; known: {', '.join(command_names())}")
    module = importlib.import_module(f"{package.__name__}.{verb}")
    handler: Handler = module.run
    return handler


def preload_modules(names: Sequence[str]) -> list[str]:
    """What a server preloading the runtime namespaces ``names`` imports: each one's PRELOAD,
    then its command modules. A UsageError for a name that is no runtime namespace."""
    modules: list[str] = []
    for namespace in names:
        package = runtime_package(namespace)
        if package is None:
            raise UsageError(
                f"unknown runtime namespace '{namespace}'; known: {', '.join(namespaces())}"
            )
        modules += [str(m) for m in getattr(package, "PRELOAD", ())]
        modules += [f"{package.__name__}.{verb}" for verb in getattr(package, "COMMANDS", ())]
    return modules


def namespace_of(command: str | None) -> str | None:
    """The runtime namespace of ``command`` (``ort`` for ``ort.profile``), if it has one."""
    if not command or "." not in command:
        return None
    return command.partition(".")[0]
