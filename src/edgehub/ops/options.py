"""A component's options as its class declares them (`Component.declared_options`), and values
given for them: ``KEY=VALUE`` text (`hub exec --set`, the TUI's Run form) or data (a sweep
grid's TOML values), each read by the option's declared type."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from edgehub.errors import UsageError

if TYPE_CHECKING:  # the classes come with the components given; core loads with them
    from edgehub.core.component.base import Component
    from edgehub.core.component.options import OptionSpec


def component_options(component: type[Component], *, aliases: bool = True) -> dict[str, OptionSpec]:
    """The options a caller may give (every keyword option of ``run`` but the device), as
    declared; without the other names of options (``warmup`` for ``burn_ins``) when
    ``aliases`` is false, as a form shows them."""
    options = component.declared_options()
    return {k: v for k, v in options.items() if aliases or v.alias_of is None}


def parse_value(component: type[Component], option: str, raw: str) -> Any:
    """``raw`` read by the option's declared type (``runs=abc`` is a `UsageError`); options of
    unknown type take JSON, ``1,3,224,224`` as a tuple of ints, or the string."""
    from edgehub.core.component.options import read_option

    return read_option(component, option, raw)


def option_values(
    items: Iterable[tuple[str, Any]],
    components: dict[str, type[Component]],
    *,
    given_as: str = "--set",
) -> dict[str, dict[str, Any]]:
    """Split ``(KEY, value)`` items among components (``step.KEY`` targets one step), each
    value read by the declared type of its option (text parsed, data converted).

    ``components`` maps a step name (compile/profile/invoke) to its component class. A key
    without a step goes to every step that declares it. Unknown keys name the nearest one;
    ``given_as`` names where the key was given (``--set``, ``sweep option``) in the errors.
    """
    result: dict[str, dict[str, Any]] = {step: {} for step in components}
    for raw_key, value in items:
        key = raw_key.strip().replace("-", "_")
        step, _, option = key.rpartition(".")
        steps = [step] if step else list(components)
        if step and step not in components:
            raise UsageError(
                f"{given_as} {key}: unknown step {step!r}; steps here: {', '.join(components)}"
            )
        matched = False
        for name in steps:
            if option in component_options(components[name]):
                result[name][option] = parse_value(components[name], option, value)
                matched = True
        if not matched:
            known = sorted({o for n in steps for o in component_options(components[n])})
            import difflib  # only for a word that is not known

            close = difflib.get_close_matches(option, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UsageError(
                f"{given_as} {key}: unknown option {option!r}{hint} (options: {', '.join(known)})"
            )
    return result


def parse_sets(
    pairs: list[str], components: dict[str, type[Component]]
) -> dict[str, dict[str, Any]]:
    """``--set KEY=VALUE`` pairs split among components (see `option_values`)."""
    items = []
    for pair in pairs:
        if "=" not in pair:
            raise UsageError(f"{{field}} needs KEY=VALUE, got {pair!r}", field="settings")
        key, raw = pair.split("=", 1)
        items.append((key, raw))
    return option_values(items, components)
