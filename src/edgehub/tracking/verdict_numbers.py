"""The numbers a verdict is made of: latency samples, round ratios, medians.

A comparison, a regression gate or an A/B verdict only means something on finite positive
numbers: a NaN compares false with everything (a gate "passes"), a zero or negative latency is
"faster" than any real one, a string ends in arithmetic errors. `number_problem` says, in a few
words, what keeps a list of values out of a verdict; `checked_numbers` returns them as an array
or raises the caller's error with that problem. Both the places that read device output into
samples (the agent's results, a tool's exports) and the readers of stored runs (`hub runs
compare`, the TUI) ask these, so a bad number is refused where it enters and again where a
verdict would use it.

numpy is imported inside the functions: importing this module costs nothing.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from edgehub.errors import EdgehubError, InvalidMeasurementError

if TYPE_CHECKING:
    from edgehub.tracking.significance import FloatArray


def _shown(value: Any) -> str:
    """A bad value as quoted in a message: NaN and inf by name, text cut short and escaped."""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:g}"
    if isinstance(value, (int, bool)):
        return str(value)
    if isinstance(value, str):
        return repr(value if len(value) <= 20 else value[:17] + "...")
    return f"a {type(value).__name__}"


def _plain(values: Any) -> Any:
    """A numpy array (or scalar) as Python values; anything else as it is."""
    tolist = getattr(values, "tolist", None)
    return tolist() if callable(tolist) else values


def number_problem(
    values: Any, what: str = "latency samples", *, positive: bool = True
) -> str | None:
    """What makes ``values`` unfit for a verdict, e.g. "non-finite latency samples (NaN; 3 of
    100)"; None when they are a non-empty list of finite numbers, above 0 where ``positive``
    (else at least 0)."""
    values = _plain(values)
    if not isinstance(values, (list, tuple)):
        return f"{what} that are not a list ({_shown(values)})"
    if not values:
        return f"no {what}"
    text = [v for v in values if isinstance(v, bool) or not isinstance(v, (int, float))]
    if text:
        return f"non-numeric {what} ({_first(text, values)})"
    infinite = [v for v in values if not math.isfinite(v)]
    if infinite:
        return f"non-finite {what} ({_first(infinite, values)})"
    low = [v for v in values if (v <= 0 if positive else v < 0)]
    if low:
        return f"{'non-positive' if positive else 'negative'} {what} ({_first(low, values)})"
    return None


def _first(bad: list[Any], values: list[Any] | tuple[Any, ...]) -> str:
    """The first bad value, and how many of all were bad where there are several."""
    return _shown(bad[0]) + (f"; {len(bad)} of {len(values)}" if len(values) > 1 else "")


def checked_numbers(
    values: Any,
    what: str = "latency samples",
    *,
    whose: str,
    error: type[EdgehubError] = InvalidMeasurementError,
    positive: bool = True,
) -> FloatArray:
    """``values`` as a float64 array, or ``error`` saying "{whose} has {problem}; it cannot be
    compared" (see `number_problem`)."""
    import numpy as np

    problem = number_problem(values, what, positive=positive)
    if problem is not None:
        raise error(f"{whose} has {problem}; it cannot be compared")
    return np.asarray(_plain(values), dtype=np.float64)
