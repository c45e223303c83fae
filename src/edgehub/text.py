"""Text from outside (a device's output, an imported run, a user's file, an error quoting them)
made safe to show on a terminal: the one place control characters are turned into escapes.

A terminal acts on control characters instead of showing them: ESC and the C1 CSI (U+009B)
start sequences that set the window title, clear the screen or write the clipboard (OSC 52);
bidi overrides (U+202E) reorder what is shown. `visible` writes each such character as its
Python escape (``\\x1b``, ``\\x9b``, ``\\u202e``), so the text reads the same and does nothing.
Colour and style sequences (SGR, ``ESC [ 1;31 m``), which toolchains write into their logs
(onnxruntime colours its errors), are dropped instead: they only style, and escaped they bury
the words.
"""

from __future__ import annotations

import re

# Not printable for `str.isprintable` but harmless on a terminal: spaces other than " "
# (no-break space, ...), private-use characters (icon fonts) and the zero-width joiners that
# emoji and some scripts need.
_HARMLESS = frozenset("\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
                      "\u2009\u200a\u202f\u205f\u3000\u200c\u200d")  # fmt: skip
_LINES = str.maketrans("\n\t", "  ")
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def _shown(char: str, keep: str) -> str:
    if char.isprintable() or char in keep or char in _HARMLESS:
        return char
    code = ord(char)
    if 0xE000 <= code <= 0xF8FF or code >= 0xF0000:  # private use (planes 15 and 16 too)
        return char
    return repr(char)[1:-1]  # \x1b, \x9b, \r, \u202e, \udc80 (a byte that was not UTF-8)


def visible(text: str, *, lines: bool = False) -> str:
    """``text`` without colour sequences (SGR) and with every other terminal control character
    written as a visible escape: C0 controls (newline and tab kept when ``lines``, for text
    shown over several lines), ESC, DEL, C1 controls (U+0080-U+009F), format characters such
    as the bidi overrides, line and paragraph separators and lone surrogates. Printable text
    comes back as it is, at once."""
    if text.isprintable() or (lines and text.translate(_LINES).isprintable()):
        return text
    keep = "\n\t" if lines else ""
    return "".join([_shown(char, keep) for char in _SGR.sub("", text)])
