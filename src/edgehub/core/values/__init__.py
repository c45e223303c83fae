"""Values checked against type annotations: component options and provider settings.

`check` tests a Python value against an annotation (``int``, ``float``, ``bool``, ``str``,
``Path``, ``Literal``, an `Enum`, ``None``, unions, ``tuple``/``list``/``dict`` of those);
`parse` turns command-line text into such a value; `from_data` takes a value read from TOML or
JSON (arrays become tuples, strings become paths or enum members). Bounds and formats ride on
``typing.Annotated``: ``Annotated[int, Range(1, 1_000_000)]``, ``Annotated[str, Matches(...)]``;
a `TextForm` gives a type its own command-line spelling (input shapes: :mod:`.shapes`).
Each raises `ValueProblem` whose ``expected`` completes "must be ...". Annotations this module
does not understand (``np.ndarray``, a protocol, an unresolved name) accept any value.
"""

from edgehub.core.values.check import check
from edgehub.core.values.parse import from_data, guess, parse
from edgehub.core.values.types import (
    Matches,
    Range,
    TextForm,
    ValueProblem,
    describe,
    resolve,
    split_annotated,
    union_members,
    without_none,
)

__all__ = [
    "Matches",
    "Range",
    "TextForm",
    "ValueProblem",
    "check",
    "describe",
    "from_data",
    "guess",
    "parse",
    "resolve",
    "split_annotated",
    "union_members",
    "without_none",
]
