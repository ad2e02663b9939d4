"""Project memory (seed 002): decisions and lessons that later runs read.

At the end of a run (done, failed or abandoned; dry runs excepted: their
outcomes are scripted) :func:`record_run` appends entries, each citing its run
and stage, to

* ``.odin-loop/memory/decisions.md``: what people decided at human gates (an
  approval after their ``revise`` feedback), and the interview answers that
  fixed a design choice;
* ``.odin-loop/memory/lessons.md``: what failed and what fixed it (a stage's gate
  failures followed by its pass), and why a run failed.

:func:`relevant` picks what a later stage's worker and judge are handed: the
entries that mention the stage or a file it consumes or produces first, then
the most recent, at most :data:`MEMORY_CHARS` characters in all. A loop turns
all of this off with ``memory: false``. ``odin memory`` shows, removes or
clears entries (:class:`Memory`).

Each entry is a markdown section::

    ### m-1a2b3c4d · lesson · stage test · run 20260101-120000-bugfix · 2026-01-01T12:05:00
    test failed 2 time(s) (gate command `pytest` exited 1: ...); it passed after looping back to implement.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from odin_magic.core.confine import check_confined
from odin_magic.core.errors import UsageError
from odin_magic.core.secrets import redact_text
from odin_magic.core.atomic import write_atomic
from odin_magic.runs.log import LOG_NAME, read_log
from odin_magic.runs.records import Record, RecordType, parse_record

MEMORY_CHARS = 3_000  # what one stage is handed, at most
ENTRY_CHARS = 600  # of one entry's text
INTERVIEW_ANSWERS = 6  # interview answers kept as decisions, per run
FILES = {"decision": "decisions.md", "lesson": "lessons.md"}
TITLES = {"decision": "# Decisions\n\nWhat people decided in earlier runs (written by odin at each run's end).\n",
          "lesson": "# Lessons\n\nWhat failed and what fixed it in earlier runs (written by odin at each run's end).\n"}
_HEAD = re.compile(r"^### (m-[0-9a-f]{8}) · (decision|lesson) · stage (\S+) · run (\S+) · (\S+)\s*$")


@dataclass(frozen=True)
class Entry:
    id: str
    kind: str  # decision | lesson
    stage: str
    run_id: str
    at: str
    text: str

    def render(self) -> str:
        return f"### {self.id} · {self.kind} · stage {self.stage} · run {self.run_id} · {self.at}\n{self.text.strip()}\n"

    def brief(self) -> str:
        return f"- ({self.kind}, stage {self.stage}, run {self.run_id}) {' '.join(self.text.split())}"


def _entry(kind: str, stage: str, run_id: str, at: str, text: str) -> Entry:
    text = redact_text(" ".join(text.split()))  # what the log holds is redacted already: a second guard
    if len(text) > ENTRY_CHARS:
        text = text[: ENTRY_CHARS - 1] + "…"
    digest = hashlib.sha256(f"{kind}|{stage}|{run_id}|{text}".encode()).hexdigest()[:8]
    return Entry(f"m-{digest}", kind, stage, run_id, at, text)


class Memory:
    """The project's memory files."""

    def __init__(self, project_dir: Path | str):
        self.project_dir = Path(project_dir)
        self.dir = self.project_dir / ".odin-loop" / "memory"

    def path(self, kind: str) -> Path:
        """The memory file of ``kind``; :class:`~odin_magic.core.confine.PathEscapes` when it (or its directory)
        is a symbolic link that leads outside the project: memory is never read or written there."""
        path = self.dir / FILES[kind]
        check_confined(path, [self.project_dir], f"the project memory {FILES[kind]}", base=self.project_dir)
        return path

    def entries(self, kind: str | None = None) -> list[Entry]:
        """Every entry, oldest first (decisions, then lessons, when ``kind`` is None)."""
        out: list[Entry] = []
        if not os.path.lexists(self.dir):
            return out  # no memory yet (nothing there, not even a link: each stage asks)
        for k in ([kind] if kind else list(FILES)):
            try:
                text = self.path(k).read_text(encoding="utf-8")
            except FileNotFoundError:
                continue
            out += _parse(text)
        return out

    def append(self, entries: Iterable[Entry]) -> int:
        """Append ``entries`` (an entry already there is not written twice); how many were new."""
        entries = list(entries)
        known = {e.id for e in self.entries()}
        added = 0
        for kind in FILES:
            new = [e for e in entries if e.kind == kind and e.id not in known]
            if not new:
                continue
            self.dir.mkdir(parents=True, exist_ok=True)
            path = self.path(kind)
            with open(path, "a", encoding="utf-8") as f:  # appended, never rewritten, as a run ends
                if f.tell() == 0:
                    f.write(TITLES[kind])
                for e in new:
                    f.write("\n" + e.render())
            added += len(new)
        return added

    def remove(self, entry_id: str) -> Entry:
        for kind in FILES:
            entries = self.entries(kind)
            hit = next((e for e in entries if e.id == entry_id), None)
            if hit is not None:
                self._rewrite(kind, [e for e in entries if e.id != entry_id])
                return hit
        raise UsageError(f"no memory entry {entry_id!r}", hint="`odin memory` lists the entries with their ids")

    def clear(self, kind: str | None = None) -> int:
        n = 0
        for k in ([kind] if kind else list(FILES)):
            n += len(self.entries(k))
            self.path(k).unlink(missing_ok=True)
        return n

    def _rewrite(self, kind: str, entries: list[Entry]) -> None:
        write_atomic(self.path(kind), TITLES[kind] + "".join("\n" + e.render() for e in entries))


def _parse(text: str) -> list[Entry]:
    out: list[Entry] = []
    head = None
    body: list[str] = []

    def close() -> None:
        if head is not None:
            out.append(Entry(*head.groups(), text="\n".join(body).strip()))

    for line in text.splitlines():
        match = _HEAD.match(line)
        if match:
            close()
            head, body = match, []
        elif head is not None:
            body.append(line)
    close()
    return out


# -- what a run teaches ---------------------------------------------------------------------------


def lessons_and_decisions(records: Iterable[Record | dict[str, Any]], loop, run_dir: Path | None = None) -> list[Entry]:
    """The entries one run's event log yields (its records, typed or as decoded dicts)."""
    records = [parse_record(r) for r in records]
    run_id = records[0].get("run_id", "?") if records else "?"
    out = _gate_lessons(records, run_id)
    for rec in records:  # a cap reached inside a gate record
        why = rec.patch.get("failure_reason")
        if rec.type == RecordType.GATE and why:
            out.append(_entry("lesson", rec.stage or "-", run_id, rec.at, f"The run failed: {why}"))
    if run_dir is not None:
        out += _interview_decisions(run_dir, run_id, loop)
    return out


def _gate_lessons(records: list[Record], run_id: str) -> list[Entry]:
    """Lessons from failures a stage got past, decisions from revisions approved, and why the run failed."""
    out: list[Entry] = []
    failures: dict[str, list[str]] = {}
    between: dict[str, list[str]] = {}
    feedback: dict[str, list[str]] = {}
    for rec in records:
        kind, stage, at = rec.type, rec.stage, rec.at
        if kind == RecordType.GATE and stage:
            entry = rec.entry
            for other in between:
                if other != stage and failures.get(other):
                    between[other].append(stage)
            if entry is not None and entry.result == "fail":
                failures.setdefault(stage, []).append(entry.reason or "no reason given")
                between.setdefault(stage, [])
            elif failures.get(stage):
                reasons = list(dict.fromkeys(failures.pop(stage)))
                redone = list(dict.fromkeys(between.pop(stage, [])))
                fix = f"it passed after looping back through {', '.join(redone)}" if redone else "it passed on a retry"
                out.append(_entry("lesson", stage, run_id, at,
                                  f"{stage} failed its gate ({'; '.join(reasons[:3])}); {fix}."))
        elif kind == RecordType.REVISED and stage:
            text = rec.patch.get("feedback")
            if text:
                feedback.setdefault(stage, []).append(text)
        elif kind == RecordType.APPROVED and stage and feedback.get(stage):
            asked = feedback.pop(stage)
            out.append(_entry("decision", stage, run_id, at,
                              f"At the {stage} review a person asked: " + " / ".join(f'"{t}"' for t in asked)
                              + f"; they approved {stage} after that revision."))
        elif kind == RecordType.FAILED:
            why = rec.patch.get("failure_reason")
            if why:
                out.append(_entry("lesson", stage or "-", run_id, at, f"The run failed: {why}"))
    return out


def _interview_decisions(run_dir: Path, run_id: str, loop) -> list[Entry]:
    out = []
    for stage in getattr(loop, "stages", []):
        if stage.interview is None:
            continue
        try:
            from odin_magic.interview.session import state_path
            from odin_magic.interview.models import InterviewState

            state = InterviewState.model_validate_json(state_path(run_dir, stage.id).read_text(encoding="utf-8"))
        except Exception:  # no interview state (e.g. it never ran): nothing to remember
            continue
        answered = [r for r in state.rounds if r.answer and r.answered_by != "skipped"]
        for r in answered[:INTERVIEW_ANSWERS]:
            by = " (an assumption the model chose)" if r.answered_by == "auto" else ""
            out.append(_entry("decision", stage.id, run_id, "", f"Interview: {r.question} -> {r.answer}{by}"))
    return out


def record_run(project_dir: Path, run_dir: Path, loop) -> int:
    """Append what the ended run at ``run_dir`` teaches; how many entries were new. Off for ``memory: false``."""
    if not getattr(loop, "memory", True):
        return 0
    records, _, _ = read_log(Path(run_dir) / LOG_NAME)
    return Memory(project_dir).append(lessons_and_decisions(records, loop, Path(run_dir)))


# -- what a stage is handed ---------------------------------------------------------------------


def relevant(project_dir: Path, stage, loop, limit: int = MEMORY_CHARS) -> str | None:
    """The entries for ``stage``: those naming it or its files first, then the most recent; bounded by ``limit``."""
    if not getattr(loop, "memory", True):
        return None
    entries = Memory(project_dir).entries()
    if not entries:
        return None
    words = {stage.id, *(p.rstrip("/") for p in (*stage.consumes, *stage.produces))}

    def mentions(e: Entry) -> bool:
        return e.stage == stage.id or any(w and w in e.text for w in words)

    newest_first = sorted(entries, key=lambda e: e.at, reverse=True)
    ordered = [e for e in newest_first if mentions(e)] + [e for e in newest_first if not mentions(e)]
    lines, used = [], 0
    for e in ordered:
        line = e.brief()
        if used + len(line) + 1 > limit:
            continue
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines) or None
