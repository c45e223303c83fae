"""`RunType`: the category of a tracked run."""

from __future__ import annotations

from enum import Enum


class RunType(str, Enum):
    """What a run did. Values are the upper-case names."""

    COMPILE = "COMPILE"
    CUSTOM = "CUSTOM"
    EVAL = "EVAL"
    GRAPH = "GRAPH"
    INFERENCE = "INFERENCE"
    PROFILE = "PROFILE"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def coerce(cls, value: RunType | str) -> RunType | str:
        """A member for a known name (any case), else the stripped string itself."""
        if isinstance(value, RunType):
            return value
        text = str(value).strip()
        try:
            return cls(text.upper())
        except ValueError:
            return text
