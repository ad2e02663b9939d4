"""Gate evidence a worker cannot change unseen: each history entry that names an evidence line carries the
line's SHA-256 and length (``evidence_sha256``, ``evidence_bytes``, written by the engine as it appends the
line), and :class:`EvidenceSeal` checks that every line the history names is still there, byte for byte.

Without a sandbox a worker's ``bash`` can truncate, delete or rewrite ``gates/evidence.jsonl``. The check
is incremental, so that a long run does not read its whole evidence file per transition: after a full
check, the seal remembers the file's identity (device, inode, size, mtime and ctime: no command can set a
ctime back) and how many history entries it has verified. While the identity is the one the seal last saw
(or the one the engine's own append left), only the entries added since are read (one line each); any
other change to the file (a new inode, another size, a touched ctime) makes the next check read every line
the history names again. Entries of runs recorded before (no hash) are not checked.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import BinaryIO, Sequence

from odin_magic.runs.state import HistoryEntry

EVIDENCE_LOG = "gates/evidence.jsonl"
CHANGED = "evidence changed after it was written"


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
    data = f.read(entry.evidence_bytes)
    if len(data) < entry.evidence_bytes:
        return f"the line at byte {offset} ({entry.stage}'s gate) is missing: the file was truncated or replaced"
    if hashlib.sha256(data).hexdigest() != entry.evidence_sha256:
        return f"the line at byte {offset} ({entry.stage}'s gate) was rewritten: {CHANGED}"
    return None


class EvidenceSeal:
    """The incremental check of one run's evidence file (see the module's text)."""

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / EVIDENCE_LOG
        self._identity: tuple[int, ...] | None = None  # the file as last verified (or as the engine left it)
        self._checked = 0  # history entries verified under that identity

    def problem(self, history: Sequence[HistoryEntry]) -> str | None:
        """Why the evidence the history names is not as written (None: intact), naming the file."""
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            info = None
        except OSError as exc:
            return f"{self.path} cannot be read: {exc.strerror or exc}"
        start = self._checked if info is not None and _identity(info) == self._identity else 0
        todo = [e for e in history[start:] if _offset(e) is not None]
        if not todo:
            self._remember(info, len(history))
            return None
        if info is None:
            return f"{self.path} was deleted: {CHANGED}"
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError as exc:
            return f"{self.path} cannot be read: {exc.strerror or exc}"
        with os.fdopen(fd, "rb") as f:
            for entry in todo:
                why = line_problem(f, entry)
                if why is not None:
                    self._identity, self._checked = None, 0
                    return f"{self.path}: {why}"
        self._remember(info, len(history))
        return None

    def _remember(self, info: os.stat_result | None, checked: int) -> None:
        self._identity = _identity(info) if info is not None else None
        self._checked = checked if info is not None else 0

    def appended(self, fd: int, before: os.stat_result | None) -> None:
        """The engine appended a line through ``fd``: when the file was as last verified just before
        (``before``), the identity it has now is the engine's own doing."""
        if before is not None and self._identity is not None and _identity(before) == self._identity:
            self._identity = _identity(os.fstat(fd))
