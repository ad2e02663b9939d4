"""Gate evidence: what each gate evaluation saw, kept in one append-only file per run.

Every evaluation (what was missing, each command's exit code and output tails,
the verdict, the files the stage changed...) is one JSON line appended to
``gates/evidence.jsonl`` in the run dir. Its history entry names it by
reference, ``gates/evidence.jsonl#<byte offset>``, and the gate's event-log
record carries the line's SHA-256: the log's fsync'd append is the
transition's one fsync, and the evidence needs none of its own. A crash
between the two leaves a line no record names (or a torn one): the next driver
cuts it off before its first append (``cut_unnamed``), so the re-run
evaluation's line takes the same place as in a run that never crashed.

One file, appended to, rather than a file per evaluation: creating a file next
to an fsync'd append costs ext4 a journal commit of its own, about half a
millisecond, more than the rest of a transition (``benchmarks/bench_engine.py``).

Runs recorded before this layout name a file per evaluation
(``gates/<n>-<stage>.json``); :func:`read` reads both.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from odin_magic.core.atomic import open_append
from odin_magic.core.secrets import redact_text
from odin_magic.runs.evidence_seal import CHANGED, EVIDENCE_LOG, EvidenceSeal, line_problem
from odin_magic.runs.state import HistoryEntry


@dataclass(frozen=True)
class EvidenceRef:
    path: str  # the history entry's reference: gates/evidence.jsonl#<offset>
    sha256: str  # of the line's bytes, for the gate's event-log record and its history entry
    size: int = 0  # the line's length in bytes (its history entry's ``evidence_bytes``)


class EvidenceLog:
    """The run's evidence file, opened on the first append and held until :meth:`close`.

    ``cut_unnamed``: the driver's handle, which knows the last reference its log holds (``last_named``,
    None when there is none): what follows that line is cut off before the first append."""

    def __init__(self, run_dir: Path, last_named: str | None = None, *, cut_unnamed: bool = False):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / EVIDENCE_LOG
        self._last_named = last_named
        self._cut = cut_unnamed
        self._file = None
        self._end = 0
        self.seal = EvidenceSeal(self.run_dir)  # the check that the lines the history names are as written

    def append(self, evidence: dict) -> EvidenceRef:
        """Append one evaluation's evidence (no fsync: the gate record that names it carries its hash).
        No configured secret's value is written (:mod:`odin_magic.core.secrets`)."""
        text = redact_text(json.dumps(evidence, ensure_ascii=False, separators=(",", ":")))
        line = (text + "\n").encode("utf-8")
        f = self._file if self._file is not None and self._same_file() else self._open()
        before = os.fstat(f.fileno())
        offset = before.st_size  # the file's real end (O_APPEND writes there), whatever a command did to it
        f.write(line)
        self._end = offset + len(line)
        self.seal.appended(f.fileno(), before)
        return EvidenceRef(f"{EVIDENCE_LOG}#{offset}", hashlib.sha256(line).hexdigest(), len(line))

    def _same_file(self) -> bool:
        """The held file is still the one at the path (a command may have replaced it)."""
        try:
            held, now = os.fstat(self._file.fileno()), os.lstat(self.path)
        except OSError:
            now = None
        if now is not None and (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino):
            return True
        self.close()
        return False

    def _open(self):
        f = open_append(self.path, self.run_dir, binary=True)  # gates/ made when missing; never through a link
        end = f.seek(0, os.SEEK_END)
        named = self._named_end(end) if self._cut else end
        if named < end:  # lines no gate record names: a crash came between an evaluation and its record
            f.truncate(named)
            end = named
        self._cut = False  # once: a file opened again (a command replaced it) holds this driver's own lines
        if end:  # a line torn by a crash mid-append (or lost by a power cut): the next starts a line of its own
            with open(self.path, "rb") as r:
                r.seek(end - 1)
                if r.read(1) != b"\n":
                    end += f.write(b"\n")
        self._file, self._end = f, end
        return f

    def _named_end(self, size: int) -> int:
        """Where the last line a gate record names ends (0: none is named; ``size``: it cannot be told)."""
        if not self._last_named or "#" not in self._last_named:
            return 0  # no reference, or only older runs' files of their own
        name, _, offset = self._last_named.partition("#")
        if name != EVIDENCE_LOG or not offset.isdigit():
            return size
        with open(self.path, "rb") as r:
            r.seek(int(offset))
            line = r.readline()
        return int(offset) + len(line) if line.endswith(b"\n") else size

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def read(run_dir: Path, ref: str) -> dict:
    """The evidence a history entry names: a line of ``gates/evidence.jsonl`` (``...#<offset>``) or, in runs
    recorded before, a file of its own. OSError when it cannot be read, ValueError when it is not evidence
    (a torn or foreign line, a reference that leaves ``gates/``)."""
    with EvidenceReader(run_dir) as reader:
        return reader.read(ref)


class EvidenceChanged(ValueError):
    """The line a history entry names is not the line the engine wrote (:data:`CHANGED`)."""


def read_entry(run_dir: Path, entry: HistoryEntry) -> dict:
    """:meth:`EvidenceReader.read_entry` of one entry."""
    with EvidenceReader(run_dir) as reader:
        return reader.read_entry(entry)


class EvidenceReader:
    """Reads the evidence of many history entries with each file opened once (a report over a whole run).

    ``lines_read``: how many evidence lines (or files of older runs) this reader parsed; ``total_read``, the
    class's: how many every reader of the process parsed (what a view's redraw costs: tests, benchmarks)."""

    total_read = 0

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self._open: dict[str, BinaryIO] = {}
        self.lines_read = 0

    def __enter__(self) -> "EvidenceReader":
        return self

    def __exit__(self, *exc: object) -> None:
        for f in self._open.values():
            f.close()
        self._open.clear()

    def read_entry(self, entry: HistoryEntry) -> dict:
        """The evidence ``entry`` names, or :class:`EvidenceChanged` when its line is not the line the engine
        wrote (its hash, recorded in the entry, differs: never forged content shown as real)."""
        if entry.evidence is None:
            return {}
        if entry.evidence_sha256 is not None and "#" in entry.evidence:
            name = entry.evidence.partition("#")[0]
            if name == EVIDENCE_LOG:
                f = self._file(name)
                why = line_problem(f, entry)
                if why is not None:
                    raise EvidenceChanged(f"{entry.evidence}: {CHANGED} ({why})")
        return self.read(entry.evidence)

    def _file(self, name: str) -> BinaryIO:
        f = self._open.get(name)
        if f is None:
            f = self._open[name] = open(self.run_dir / name, "rb")
        return f

    def read(self, ref: str) -> dict:
        """:func:`read`."""
        name, _, offset = ref.partition("#")
        if not name.startswith("gates/") or ".." in Path(name).parts:
            raise ValueError(f"{ref!r} is not a gate evidence reference")
        self.lines_read += 1
        EvidenceReader.total_read += 1  # a statistic: a lost increment between threads is harmless
        if not offset:
            data = json.loads((self.run_dir / name).read_text(encoding="utf-8"))
        else:
            if not offset.isdigit():
                raise ValueError(f"{ref!r}: the offset is not a number")
            f = self._file(name)
            f.seek(int(offset))
            line = f.readline()
            if not line.endswith(b"\n"):
                raise ValueError(f"{ref!r}: no complete line at that offset")
            data = json.loads(line)
        if not isinstance(data, dict):
            raise ValueError(f"{ref!r} is not a gate's evidence")
        return data
