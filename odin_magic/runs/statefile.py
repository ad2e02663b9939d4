"""state.json read and written with a bounded peak of memory, however long the history.

A run's state.json grows with its history (16 MB at 100,000 entries), and a
driver reads it when it resumes and writes it at every refresh. Done in one
piece, each costs several copies of the document at once:

* ``RunState.model_validate_json`` holds the file's bytes and a parse tree of
  the whole document (pydantic-core parses before it validates), then the
  entries: :func:`read_state` parses into Python objects first
  (``pydantic_core.from_json``, which shares repeated short strings), frees the
  bytes, then validates; the strings of the parsed dicts become the entries'
  own, so only the dicts are transient;
* ``model_dump_json`` grows a buffer of the whole text, copies it into bytes
  and decodes them to a string, which writing encodes again:
  :func:`state_json_pieces` yields the same text a bounded slice of the history
  at a time.

The bytes are those of ``model_dump_json(indent=1, exclude_none=True)``,
seed 000's schema unchanged for readers (``tests/test_history_entries.py``
reads a run written before this module and writes it back byte for byte).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from pydantic import TypeAdapter
from pydantic_core import from_json

from odin_magic.runs.state import HistoryEntry, RunState

#: history entries serialised at a time when state.json is written
ENTRIES_PER_PIECE = 2000

_ENTRIES = TypeAdapter(list[HistoryEntry])
_OPTIONS = {"indent": 1, "exclude_none": True}
#: where the history sits in the text of a state whose history is empty (a raw newline is never in a JSON string)
_EMPTY_HISTORY = '\n "history": []'


def read_state(path: Path) -> RunState:
    """A state.json file as a :class:`RunState`: ``OSError`` when it cannot be read, ``ValueError`` (a
    pydantic ``ValidationError`` included) when it is not JSON or not a valid state."""
    return RunState.model_validate(from_json(path.read_bytes(), cache_strings=True))


def state_json_pieces(state: RunState, per: int = ENTRIES_PER_PIECE) -> Iterator[str]:
    """The text of ``state.model_dump_json(indent=1, exclude_none=True)``, in pieces of at most ``per`` history
    entries (each piece ends between two entries)."""
    history = state.history
    if not history:
        yield state.model_dump_json(**_OPTIONS)
        return
    text = state.model_copy(update={"history": []}).model_dump_json(**_OPTIONS)
    head, found, tail = text.partition(_EMPTY_HISTORY)
    if not found:  # not the layout this expects: the text in one piece rather than a wrong one
        yield state.model_dump_json(**_OPTIONS)
        return
    yield head + '\n "history": ['
    for start in range(0, len(history), per):
        # '[\n {\n  "stage": ...\n }\n]': the entries one level deeper in state.json, so one more space a line
        body = _ENTRIES.dump_json(history[start:start + per], **_OPTIONS).decode()[2:-2]
        yield ("," if start else "") + "\n " + body.replace("\n", "\n ")
    yield "\n ]" + tail
