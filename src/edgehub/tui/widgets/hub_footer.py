"""`HubFooter`: Textual's footer, its keys styled once each time it is rebuilt.

The footer rebuilds its keys whenever the screen's bindings change (each focus change, each
screen shown). A key is made compact, restyled, then made like its footer, restyled again;
here each key starts like its footer, so it is styled once when mounted (about half of the
footer's cost per screen shown: `benchmarks/bench_tui.py` (a2), screen switches). It looks the same.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey  # no public name: the keys' type


class HubFooter(Footer):
    def compose(self) -> ComposeResult:
        for widget in super().compose():
            if isinstance(widget, FooterKey):
                widget.set_reactive(FooterKey.compact, self.compact)
            yield widget
