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
    "⚠": "[!]", "–": "-",
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
