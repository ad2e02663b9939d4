"""Gate evidence a worker cannot change unseen: each history entry that names an evidence line carries the
line's SHA-256 and length (``evidence_sha256``, ``evidence_bytes``, written by the engine as it appends the
line), and :class:`EvidenceSeal` checks that every line the history names is still there, byte for byte.

Without a sandbox a worker's ``bash`` can truncate, delete or rewrite ``gates/evidence.jsonl``. The check
is incremental, so that a long run does not read its whole evidence file per transition: after a full
check, the seal remembers the file's identity (device, inode, size, mtime and ctime: no command can set a
ctime back). The engine's own append, made when the file still had that identity, moves it on to the
identity the append left (the file is then the verified lines plus the engine's line). While the file has
that identity a check is one ``lstat``; any other change to the file (a new inode, another size, a touched
ctime) makes the next check read every line the history names again (one mapping of the file). Entries of
runs recorded before (no hash) are not checked.
"""

from __future__ import annotations

import hashlib
import mmap
import os
from pathlib import Path
from typing import BinaryIO, Sequence

from odin_magic.runs.state import HistoryEntry

EVIDENCE_LOG = "gates/evidence.jsonl"
CHANGED = "evidence changed after it was written"
MAPPED = 64  # from this many lines to check on, the file is mapped rather than read line by line


def _identity(info: os.stat_result) -> tuple[int, ...]:
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


def _offset(entry: HistoryEntry) -> int | None:
    """The byte offset of the sealed line ``entry`` names (None: it names none, or carries no hash)."""
    if not entry.evidence or entry.evidence_sha256 is None or entry.evidence_bytes is None:
        return None
    name, _, offset = entry.evidence.partition("#")
    return int(offset) if name == EVIDENCE_LOG and offset.isdigit() else None


def line_problem(f: BinaryIO, entry: HistoryEntry) -> str | None:
    """What is wrong with the line ``entry`` names in the open evidence file ``f`` (None: it is intact)."""
    offset = _offset(entry)
    if offset is None:
        return None
    f.seek(offset)
    return _compare(f.read(entry.evidence_bytes), offset, entry)


def _compare(data: bytes, offset: int, entry: HistoryEntry) -> str | None:
    if len(data) < entry.evidence_bytes:
        return f"the line at byte {offset} ({entry.stage}'s gate) is missing: the file was truncated or replaced"
    if hashlib.sha256(data).hexdigest() != entry.evidence_sha256:
        return f"the line at byte {offset} ({entry.stage}'s gate) was rewritten: {CHANGED}"
    return None


def _first_problem(f: BinaryIO, size: int, todo: list[tuple[int, HistoryEntry]]) -> str | None:
    """The first of ``todo`` (offset, entry) whose line is not as written; many lines are read through one
    mapping of the file."""
    if len(todo) < MAPPED or not size:
        return next((why for why in (line_problem(f, e) for _, e in todo) if why is not None), None)
    with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        for offset, entry in todo:
            why = _compare(mm[offset:offset + entry.evidence_bytes], offset, entry)
            if why is not None:
                return why
    return None


class EvidenceSeal:
    """The incremental check of one run's evidence file (see the module's text)."""

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / EVIDENCE_LOG
        self._identity: tuple[int, ...] | None = None  # the file as last verified (or as the engine left it)

    def problem(self, history: Sequence[HistoryEntry]) -> str | None:
        """Why the evidence the history names is not as written (None: intact), naming the file."""
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            info = None
        except OSError as exc:
            return f"{self.path} cannot be read: {exc.strerror or exc}"
        if info is not None and _identity(info) == self._identity:  # verified, then only the engine's appends
            return None
        todo = [(o, e) for o, e in ((_offset(e), e) for e in history) if o is not None]
        if not todo:
            self._remember(info)
            return None
        if info is None:
            return f"{self.path} was deleted: {CHANGED}"
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError as exc:
            return f"{self.path} cannot be read: {exc.strerror or exc}"
        with os.fdopen(fd, "rb") as f:
            why = _first_problem(f, info.st_size, todo)
        if why is not None:
            self._identity = None
            return f"{self.path}: {why}"
        self._remember(info)
        return None

    def _remember(self, info: os.stat_result | None) -> None:
        self._identity = _identity(info) if info is not None else None

    def appended(self, fd: int, before: os.stat_result | None) -> None:
        """The engine appended a line through ``fd``: when the file was as last verified just before
        (``before``), the identity it has now is the engine's own doing."""
        if before is not None and self._identity is not None and _identity(before) == self._identity:
            self._identity = _identity(os.fstat(fd))
