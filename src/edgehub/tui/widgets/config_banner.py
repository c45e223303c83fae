"""`ConfigBanner`: hub.toml on disk does not load; the TUI goes on with the last good one."""

from __future__ import annotations

from textual.widgets import Label

__all__ = ["ConfigBanner", "banner_text"]


def banner_text(error: str) -> str:
    return (
        f"hub.toml on disk is not valid; still using the last good version. {error}. "
        "Fix and save the file: it is loaded again then."
    )


class ConfigBanner(Label):
    DEFAULT_CSS = """
    ConfigBanner { width: 100%; height: auto; padding: 0 1; background: $error 40%; }
    """
