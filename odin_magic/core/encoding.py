"""Text for streams that cannot carry every character: ASCII stand-ins for the symbols we print.

A terminal or a redirect whose encoding is not UTF-8 (``PYTHONIOENCODING=cp1252 odin status > f``,
a Windows console) cannot encode ✅ or ⏸; rather than a ``UnicodeEncodeError`` traceback, such a
stream writes ``[ok]`` / ``[wait]`` (and ``?`` for any other character it cannot carry).
"""

from __future__ import annotations

import codecs
from typing import Any

#: The symbols odin prints, and what stands in for them where they cannot be encoded.
ASCII_SYMBOLS = {
    "✅": "[ok]", "🔄": "[loop]", "⏸": "[wait]", "⬜": "[ ]", "⛔": "[blocked]", "❌": "[x]",
    "✓": "v", "✗": "x", "✖": "x", "×": "x", "▶": ">", "■": "#", "↻": "(again)", "↺": "(back)",
    "→": "->", "↔": "<->", "—": "-", "─": "-", "·": ".", "…": "...", "\ufe0f": "",
    "⚠": "[!]", "–": "-", "▷": "[ready]", "↶": "(reverted)",
}
ERRORS = "odin-ascii"


def _stand_in(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    text = exc.object[exc.start:exc.end]
    return "".join(ASCII_SYMBOLS.get(ch, "?") for ch in text), exc.end


codecs.register_error(ERRORS, _stand_in)


def fit_streams(*streams: Any) -> None:
    """Let each text stream that would fail on a character it cannot encode write a stand-in instead."""
    for stream in streams:
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors=ERRORS)
            except (ValueError, OSError):  # a closed or detached stream: leave it
                pass


#: Characters a terminal acts on instead of showing: C0 and C1 controls, DEL, and the bidirectional overrides
#: and isolates (which can make a line read differently from what it does).
_UNSAFE = {*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)}


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on shown as an escape (``\\x1b``, ``\\u202e``): for
    lines made of what a model or a file supplied (tool calls, names)."""
    if not any(ord(c) in _UNSAFE for c in text):
        return text
    return "".join((f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}") if ord(c) in _UNSAFE else c
                   for c in text)
