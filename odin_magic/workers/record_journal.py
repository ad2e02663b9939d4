"""A recording's journal (``ODIN_RECORD``): every exchange appended as one line, the YAML script rendered from it.

A recording is a scripted-model script (docs/scripted-model.md) that grows by one reply per model exchange.
Rewriting it after every exchange would cost more the longer the run; instead each exchange is one JSON line
appended to ``<recording>.journal`` beside it (flushed and fsync'd, so a crash, even SIGKILL, keeps it), and
the YAML is rendered from the journal when it is needed (:func:`settle`): the YAML on disk with the journal's
records folded in, written atomically, then the journal removed.

A record says where its reply goes and at which place::

    {"run": "20261203-...", "section": "stages", "keys": ["build", 0], "index": 3, "entry": {...}}

``section`` ``stages`` (``keys``: stage, attempt: the reply is turn ``index`` of that attempt), ``judge``
(``keys``: stage) or ``answers`` (``keys``: purpose, stage); ``run``: the run the exchange belongs to (another
run than the recording's starts it over, as the recorder does; ``at``, on such a record, is when). Folding is
idempotent: a record whose place is already filled is skipped, so a crash between the YAML's write and the
journal's removal folds nothing twice. A line cut short by a crash is ignored.

No secret is written: every record, and the rendered document, pass :func:`~odin_magic.core.secrets.redact`.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from odin_magic.core.atomic import write_atomic
from odin_magic.core.secrets import redact

SUFFIX = ".journal"


def journal_of(path: Path) -> Path:
    """The journal beside the recording ``path``."""
    path = Path(path)
    return path.with_name(path.name + SUFFIX)


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def fresh(run: str | None, at: str | None = None) -> dict[str, Any]:
    """An empty recording (of ``run``, when known)."""
    return {"version": 1, "description": f"recorded by ODIN_RECORD{f' from run {run}' if run else ''}",
            "recorded": {"run": run, "at": at or now()}, "stages": {}, "judge": {}, "answers": {}}


# -- appending ------------------------------------------------------------------------------------


def append(path: Path, record: dict[str, Any]) -> int:
    """``record`` (redacted) as one line at the end of ``path``'s journal, on disk when this returns; the bytes
    written. The cost is the record's, whatever the journal holds already."""
    line = (json.dumps(redact(record), ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    with open(journal_of(path), "a+b") as f:
        if f.tell() > 0:
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":  # a line a crash cut short: this one starts on a line of its own
                line = b"\n" + line
        f.write(line)
        f.flush()
        os.fsync(f.fileno())
    return len(line)


def records(path: Path) -> list[dict[str, Any]] | None:
    """The records in ``path``'s journal (a line a crash cut short left out), or None when there is none."""
    try:
        data = journal_of(path).read_bytes()
    except FileNotFoundError:
        return None
    out = []
    for line in data.decode("utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("section") in ("stages", "judge", "answers"):
            out.append(record)
    return out


# -- folding --------------------------------------------------------------------------------------


def load(path: Path) -> dict[str, Any]:
    """The recording as its YAML holds it (an empty one when there is none, or it is not a recording)."""
    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        doc = None
    return doc if isinstance(doc, dict) and isinstance(doc.get("recorded"), dict) else fresh(None)


def own(doc: dict[str, Any], run: str | None, at: str | None = None) -> dict[str, Any]:
    """``doc`` as the recording of ``run``: taken by a recording of no run yet, started over for another run."""
    recorded = doc["recorded"]
    if run is None or recorded.get("run") == run:
        return doc
    if recorded.get("run") is None:
        recorded["run"] = run
        doc["description"] = f"recorded by ODIN_RECORD from run {run}"
        return doc
    return fresh(run, at)


def _place(items: list, index: Any, new: Any) -> Any:
    """``items[index]``, ``new`` appended first when ``index`` is past the end (a place not filled yet)."""
    if not isinstance(index, int) or index >= len(items):
        items.append(new)
        return items[-1]
    return items[index]


def fold(doc: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with ``record``'s reply in its place (nothing when the place is filled: folded already)."""
    doc = own(doc, record.get("run"), record.get("at"))
    keys, entry = list(record.get("keys") or []), record.get("entry")
    if record["section"] == "stages":
        stage, attempt = (keys + [None, None])[:2]
        attempts = doc["stages"].setdefault(stage, {"attempts": []})["attempts"]
        items = _place(attempts, attempt, {"turns": []})["turns"]
    elif record["section"] == "judge":
        items = doc["judge"].setdefault(keys[0] if keys else None, [])
    else:
        purpose, stage = (keys + [None, None])[:2]
        items = doc["answers"].setdefault(purpose, {}).setdefault(stage, [])
    _place(items, record.get("index"), entry)
    return doc


# -- rendering ------------------------------------------------------------------------------------


def _literal(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(str, _literal)


def dump(doc: dict[str, Any]) -> str:
    """The recording as YAML (redacted; text of several lines as a literal block)."""
    return yaml.dump(redact(doc), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)


def settle(path: Path) -> dict[str, Any] | None:
    """Render the recording ``path`` from its journal: the YAML with the journal folded in, written atomically,
    then the journal removed; the recording, or None when there was no journal (nothing to do).

    Idempotent: a crash after the write and before the removal leaves a journal whose records are all in
    place already. An :class:`OSError` (the YAML cannot be written) leaves the journal as it was.
    """
    found = records(path)
    if found is None:
        return None
    doc = load(path)
    for record in found:
        doc = fold(doc, record)
    if found:
        write_atomic(Path(path), dump(doc))
    journal_of(path).unlink(missing_ok=True)
    return doc


__all__ = ["SUFFIX", "append", "dump", "fold", "fresh", "journal_of", "load", "own", "records", "settle"]
