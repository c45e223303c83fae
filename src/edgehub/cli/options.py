"""`--set KEY=VALUE` options, checked against a component's declared options and converted by
their declared types (`edgehub.core.component.options`); the parsing lives in `ops.options`."""

from __future__ import annotations

from edgehub.ops.options import component_options, parse_sets, parse_value

__all__ = ["component_options", "parse_sets", "parse_value"]
