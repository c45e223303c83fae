"""`names_from`: a package's public names served from its modules on first use (PEP 562), so
that importing one module of a package loads none of its siblings."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def names_from(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: a name in ``homes`` (name -> its module: one
    under ``package`` such as ``"build"``, or a full name such as ``"edgehub.runners.ssh"``) is
    imported from its module when first asked for, and kept."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = home if "." in home else f"{package}.{home}"
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
