"""The event log as a file: reading its records (all, one by one, or from its end) and mending a torn tail.

``events.jsonl`` is append-only: one JSON line per record, each parsed by
:func:`odin_magic.runs.records.parse_record`. A torn last line (a crash in the middle of an
append) is left out by every reader and cut off by the next driver (:func:`cut_torn_tail`);
any other line that is not a record is :class:`~odin_magic.runs.errors.RunCorrupt`.
The store appends (:class:`odin_magic.runs.store.RunHandle`), with :func:`sync_append`
making each transition durable.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

from odin_magic.runs.errors import RunCorrupt
from odin_magic.runs.records import NotARecord, Record, parse_record

LOG_NAME = "events.jsonl"


def read_log(path: Path) -> tuple[list[Record], int, bool]:
    """All complete records, the byte length they span, and whether a torn tail follows."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return [], 0, False
    end = data.rfind(b"\n") + 1
    records = [_parse_line(path, lineno, line) for lineno, line in enumerate(data[:end].split(b"\n")[:-1], start=1)]
    return records, end, end != len(data)


def iter_log(path: Path) -> Iterator[Record]:
    """The complete records of a log, in order, each parsed as it is read (a torn last line is left out;
    nothing for a missing log). Folding them as they come costs the memory of one record, not of the log.

    :class:`RunCorrupt` names a line that is not a record."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return
    with f:
        for lineno, line in enumerate(f, start=1):
            if not line.endswith(b"\n"):
                return  # a torn last line (a crash in the middle of an append)
            yield _parse_line(path, lineno, line)


def _parse_line(path: Path, lineno: int | str, line: bytes) -> Record:
    try:
        return parse_record(line)
    except NotARecord as exc:
        raise _not_a_record(path, lineno, str(exc)) from None


def _not_a_record(path: Path, lineno: int | str, why: str) -> RunCorrupt:
    return RunCorrupt(
        f"{path}: {lineno if isinstance(lineno, str) else f'line {lineno}'} is not a valid event record ({why})",
        hint="the log is append-only; restore it from a backup, or move the run's directory away",
    )


def _lines_from_end(path: Path, block: int) -> Iterator[bytes]:
    """The complete lines of a log, last first, read from its end (a torn last line is skipped).

    Nothing for a missing log or one without a complete line."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return
    with f:
        pos = f.seek(0, os.SEEK_END)
        rest = b""  # read but not yielded yet; once ``complete``, it ends where a line ends
        complete = False
        while pos > 0:
            n = min(block, pos)
            pos -= n
            f.seek(pos)
            rest = f.read(n) + rest
            if not complete:
                end = rest.rfind(b"\n")
                if end == -1:
                    continue
                rest, complete = rest[:end], True
            cut = rest.rfind(b"\n")
            while cut != -1:
                yield rest[cut + 1:]
                rest = rest[:cut]
                cut = rest.rfind(b"\n")
        if complete:
            yield rest  # the log's first line


def _parse_from_end(path: Path, line: bytes) -> Record:
    return _parse_line(path, "a line near its end", line)


def last_record(path: Path, block: int = 65536) -> Record | None:
    """The last complete record of a log, reading from its end only.

    None when the log is missing or holds no complete line; :class:`RunCorrupt`
    when its last complete line is not a record.
    """
    for line in _lines_from_end(path, block):
        return _parse_from_end(path, line)
    return None


def records_after(path: Path, seq: int, block: int = 65536) -> list[Record]:
    """The complete records whose ``seq`` is greater than ``seq``, in order, read from the log's end.

    The cost is that of the records returned, not of the log: this is how a
    reader brings a state.json that is behind up to date."""
    out = []
    for line in _lines_from_end(path, block):
        record = _parse_from_end(path, line)
        if record["seq"] <= seq:
            break
        out.append(record)
    out.reverse()
    return out


def cut_torn_tail(path: Path, block: int = 65536) -> bool:
    """Cut off a torn last line (a crash in the middle of an append), reading only the log's end.

    True when something was cut."""
    with open(path, "r+b") as f:
        pos = size = f.seek(0, os.SEEK_END)
        good = 0
        while pos > 0:
            n = min(block, pos)
            pos -= n
            f.seek(pos)
            chunk = f.read(n)
            i = chunk.rfind(b"\n")
            if i != -1:
                good = pos + i + 1
                break
        if good == size:
            return False
        f.truncate(good)
        os.fsync(f.fileno())
        return True


def sync_append(fd: int) -> None:
    """Make an append durable: data and the size needed to read it back (fdatasync where there is one)."""
    (getattr(os, "fdatasync", None) or os.fsync)(fd)
