"""`--set KEY=VALUE` options, checked against a component's declared options and converted by
their declared types (`edgehub.core.component.options`)."""

from __future__ import annotations

import difflib
from typing import Any

from edgehub.core.component.base import Component
from edgehub.errors import UsageError
from edgehub.ops.options import component_options, parse_value

__all__ = ["component_options", "parse_sets", "parse_value"]


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
