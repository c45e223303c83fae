"""`ConfigBanner`: hub.toml on disk does not load, or was deleted; the TUI goes on with the last
good one."""

from __future__ import annotations

from textual.widgets import Label

from edgehub.text import visible

LIMIT = 300  # characters of the error shown


def banner_text(error: str, *, gone: bool = False) -> str:
    """The banner's words (``gone``: the file was deleted); control characters quoted from the
    file are shown escaped."""
    shown = visible(error)
    if len(shown) > LIMIT:
        shown = shown[: LIMIT - 1] + "…"
    if gone:
        return (
            f"{shown}: still using the last good version. Restore or recreate the file: it is "
            "loaded as soon as it is back."
        )
    return (
        f"hub.toml on disk is not valid; still using the last good version. {shown}. "
        "Fix and save the file: it is loaded again then."
    )


class ConfigBanner(Label):
    DEFAULT_CSS = """
    ConfigBanner { width: 100%; height: auto; padding: 0 1; background: $error 40%; }
    """
