"""Table cells shown as written: a `DataTable` reads a ``str`` cell as Rich markup, so a run
name, a param, a device or a model's layer name such as ``[/x]`` would be restyled or end the
app with a markup error, and one holding an escape would drive the terminal. Every cell built
from recorded or user text goes through `plain`."""

from __future__ import annotations

from rich.text import Text

from edgehub.text import visible


def plain(*values: object) -> list[Text]:
    """``values`` as text cells, without markup, control characters escaped (Text values
    are kept)."""
    return [
        value if isinstance(value, Text) else Text(visible(str(value)), end="") for value in values
    ]
