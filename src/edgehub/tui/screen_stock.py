"""`ScreenStock`: the app's screens, built before they are shown.

Building a screen (compose, style, mount its widgets) costs several times what showing one
already built does (`benchmarks/bench_tui.py` (a2): screen switches, first visit and again).
Once the first screen has been painted, `build_ahead` builds the others in the background, one
at a time with pauses between them, so that key presses are handled in between; a key for a
screen not built yet builds it (`build`) while the current
screen stays in view, then switches. A screen built ahead does nothing slow until it is shown:
its data is read when it resumes, in workers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from textual.app import App
from textual.screen import Screen

from edgehub.tui.screens.base import HubScreen

PAUSE_S = 0.05  # between two screens built ahead: input and paints queued meanwhile go first


class ScreenStock:
    """One screen per mode, from ``factories``; `take` is the mode's factory for
    `App.add_mode`."""

    def __init__(self, app: App[Any], factories: dict[str, Callable[[], Screen[Any]]]) -> None:
        self._app = app
        self._factories = factories
        self._ready: dict[str, Screen[Any]] = {}  # built, not shown yet
        self._screens: dict[str, Screen[Any]] = {}  # built here, shown since or not
        self._built: dict[str, asyncio.Event] = {}  # set once the screen is mounted
        self._taken: set[str] = set()
        self._mounting = 0  # steps under way that mount widgets
        self._held: list[Callable[[], None]] = []  # what waits for them (the app's exit)

    def hold(self, then: Callable[[], None]) -> bool:
        """While widgets are being mounted here, keep ``then`` (the app's exit) until that
        step ends and say True: Textual closing the screens under a widget being mounted
        fails in that widget's mount handler (a `Select` then misses its overlay)."""
        if self._mounting:
            self._held.append(then)
        return bool(self._mounting)

    async def _mounting_step(self, step: Awaitable[None]) -> bool:
        """Run ``step``; False where an exit was held meanwhile (it is let go now)."""
        self._mounting += 1
        try:
            await step
        finally:  # a step that failed or was cancelled lets the exit go too
            self._mounting -= 1
            held: list[Callable[[], None]] = []
            if not self._mounting:
                held, self._held = self._held, []
            for then in held:
                then()
        return not held

    def take(self, mode: str) -> Screen[Any]:
        """``mode``'s screen when Textual first shows a mode that `build` has not put in
        place: the one being built, else a new one (Textual then builds it)."""
        self._taken.add(mode)
        return self._ready.pop(mode, None) or self._factories[mode]()

    def ready(self, mode: str) -> bool:
        """Whether ``mode``'s screen has been built here (shown since or not)."""
        return mode in self._built and self._built[mode].is_set()

    async def build(self, mode: str) -> None:
        """Build ``mode``'s screen without showing it, unless it has been shown; while it is
        being built already, wait for that."""
        if mode in self._taken:
            return
        built = self._built.get(mode)
        if built is None:
            built = self._built[mode] = asyncio.Event()
            screen = self._ready[mode] = self._screens[mode] = self._factories[mode]()
            await self._mounting_step(self._mount_hidden(screen))
            if self._ready.get(mode) is screen and self._app.is_running:  # not shown, not
                self._stack(mode, screen)  # quitting (Textual is then closing the stacks)
            built.set()
        await built.wait()

    async def build_ahead(self, modes: Iterable[str]) -> None:
        """Build the screens of ``modes`` in turn, pausing before each and before the part
        each builds later (`HubScreen.build_later`)."""
        for mode in modes:
            await asyncio.sleep(PAUSE_S)
            if self._app.is_running:
                await self.build(mode)
            screen = self._screens.get(mode)
            if isinstance(screen, HubScreen):
                await asyncio.sleep(PAUSE_S)
                if self._app.is_running and not await self._mounting_step(screen.complete()):
                    return  # the app is ending

    async def _mount_hidden(self, screen: Screen[Any]) -> None:
        """Start ``screen`` (compose and mount its widgets, styled) without showing it.

        Textual has no public call for this: `App._get_screen` is the step `switch_mode`
        takes first for a screen that is not running (and skips for one that is)."""
        _screen, mounted = self._app._get_screen(screen)
        await mounted
        self.styled(screen)

    def _stack(self, mode: str, screen: Screen[Any]) -> None:
        """Make ``screen`` the base of ``mode``'s screen stack, as Textual does at a mode's
        first visit but without telling the screen it is shown: the switch then tells it once
        (a first visit otherwise resumes the screen twice, restyling all of it twice)."""
        del self._ready[mode]
        self._taken.add(mode)
        self._app._screen_stacks[mode] = [screen]

    def styled(self, screen: Screen[Any]) -> None:
        """Mark ``screen``, mounted, as styled by the current stylesheet (its widgets were
        styled as they were mounted). Else Textual re-parses every stylesheet and restyles
        every widget of the app when the screen is next shown (bench_tui.py (a2)): it does so for
        a screen it has not marked, and it marks a screen it builds at a mode switch only
        when it was mounted before the switch, which is never."""
        if screen.is_mounted:
            screen._css_update_count = self._app._css_update_count
