"""A component's options, and an option's value read from text by its declared type (`hub
exec --set`, the TUI's Run form)."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from edgehub.core.component.base import Component
from edgehub.core.component.options import parse_option
from edgehub.errors import UsageError

__all__ = ["component_options", "parse_sets", "parse_value"]


def component_options(component: type[Component], *, aliases: bool = True) -> dict[str, Any]:
    """The options a caller may give (every keyword option of ``run`` but the device), each
    with its default; without the other names of options (``warmup`` for ``burn_ins``) when
    ``aliases`` is false, as a form shows them."""
    hidden = {"device", "devices", *(() if aliases else component.option_aliases)}
    return {k: v for k, v in component.keyword_options().items() if k not in hidden}


def parse_value(component: type[Component], option: str, raw: str) -> Any:
    """``raw`` converted by the option's declared type (``runs=abc`` is a `UsageError`);
    options of unknown type take JSON, ``1,3,224,224`` as a tuple of ints, or the string."""
    value = parse_option(component, option, raw)
    if option.endswith(("_data", "_path")) and isinstance(value, str):
        value = Path(value)
    return value


def parse_sets(
    pairs: list[str], components: dict[str, type[Component]]
) -> dict[str, dict[str, Any]]:
    """Split ``KEY=VALUE`` pairs among components (``step.KEY`` targets one step).

    ``components`` maps a step name (compile/profile/invoke) to its component class. A key
    without a step goes to every step that declares it. Unknown keys name the nearest one.
    """
    result: dict[str, dict[str, Any]] = {step: {} for step in components}
    for pair in pairs:
        if "=" not in pair:
            raise UsageError(f"--set needs KEY=VALUE, got {pair!r}")
        key, raw = pair.split("=", 1)
        key = key.strip().replace("-", "_")
        step, _, option = key.rpartition(".")
        steps = [step] if step else list(components)
        if step and step not in components:
            raise UsageError(
                f"--set {key}: unknown step {step!r}; steps here: {', '.join(components)}"
            )
        matched = False
        for name in steps:
            options = component_options(components[name])
            if option in options:
                result[name][option] = parse_value(components[name], option, raw)
                matched = True
        if not matched:
            known = sorted({o for n in steps for o in component_options(components[n])})
            close = difflib.get_close_matches(option, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UsageError(
                f"--set {key}: unknown option {option!r}{hint} (options: {', '.join(known)})"
            )
    return result
