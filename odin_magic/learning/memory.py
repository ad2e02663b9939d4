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

Each entry is a markdown section, sealed by odin (:mod:`odin_magic.learning.memory_seal`)::

    ### m-1a2b3c4d · lesson · stage test · run 20260101-120000-bugfix · 2026-01-01T12:05:00 · sig 0f1e…
    test failed 2 time(s) (gate command `pytest` exited 1: ...); it passed after looping back to implement.

An entry without a valid seal (a worker's forged "a person asked: …", an edited one) is never handed to
a run: :meth:`Memory.notices` says how many each file holds ("memory: 1 entry in decisions.md was not
written by odin; ignored"), and the next write leaves them out. Without the key, every sealed entry is
left out the same way (one notice with the count); memory with no seal at all (an earlier version's) is
sealed as found, once, and told. A file past :data:`MEMORY_FILE_CHARS` characters has its oldest entries
folded into one summary entry (its header: ``· folded N since RUN``).

What the seal does not stop: a worker's bash **without the sandbox** runs as the user who runs odin; it
can read ``.odin-loop/memory.key`` and seal an entry of its own, or remove the key and every seal so that
its entries pass for an earlier version's (sealed as found; the notice is then all that tells). The seal
catches a line appended or edited by hand, not that. **With the sandbox** ``.odin-loop/`` is read-only
to every command of a stage: no memory file and no key can be written, so no entry can be planted. The
sandbox does not hide the key (it can be read, and copied into the project tree for a later unsandboxed
command to use).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable

from odin_magic.core.confine import check_confined
from odin_magic.core.errors import UsageError
from odin_magic.core.secrets import redact_text
from odin_magic.core.atomic import write_atomic
from odin_magic.learning.memory_seal import KEY_NAME, SIG_CHARS, Seal
from odin_magic.runs.log import LOG_NAME, read_log
from odin_magic.runs.records import Record, RecordType, parse_record

MEMORY_CHARS = 3_000  # what one stage is handed, at most
MEMORY_FILE_CHARS = 200_000  # of one memory file: past it, the oldest entries are folded into a summary entry
ENTRY_CHARS = 600  # of one entry's text
INTERVIEW_ANSWERS = 6  # interview answers kept as decisions, per run
FILES = {"decision": "decisions.md", "lesson": "lessons.md"}
TITLES = {"decision": "# Decisions\n\nWhat people decided in earlier runs (written by odin at each run's end).\n",
          "lesson": "# Lessons\n\nWhat failed and what fixed it in earlier runs (written by odin at each run's end).\n"}
_HEAD = re.compile(r"^### (m-[0-9a-f]{8}) · (decision|lesson) · stage (\S+) · run (\S+) · (\S*?)"
                   r"(?: · folded (\d+) since (\S+))?(?: · sig ([0-9a-f]{%d}))?\s*$" % SIG_CHARS)
FOLDED_RUN = "folded"  # the run of a summary entry: older entries folded into one


@dataclass(frozen=True)
class Entry:
    id: str
    kind: str  # decision | lesson
    stage: str
    run_id: str
    at: str
    text: str
    sig: str = ""  # odin's seal (memory_seal): an entry without a valid one was not written by odin
    folded: int = 0  # of a summary entry (run FOLDED_RUN): how many entries it stands for
    since: str = ""  # of a summary entry: the first run among them

    def render(self) -> str:
        folded = f" · folded {self.folded} since {self.since or '-'}" if self.folded else ""
        sig = f" · sig {self.sig}" if self.sig else ""
        return (f"### {self.id} · {self.kind} · stage {self.stage} · run {self.run_id} · {self.at}{folded}{sig}\n"
                f"{self.text.strip()}\n")

    def content(self) -> str:
        """What the seal covers: every field but the seal itself."""
        fields = (self.id, self.kind, self.stage, self.run_id, self.at, self.text.strip())
        return "|".join(fields + ((str(self.folded), self.since) if self.folded else ()))

    def brief(self) -> str:
        return f"- ({self.kind}, stage {self.stage}, run {self.run_id}) {' '.join(self.text.split())}"


def _entry(kind: str, stage: str, run_id: str, at: str, text: str) -> Entry:
    text = redact_text(" ".join(text.split()))  # what the log holds is redacted already: a second guard
    if len(text) > ENTRY_CHARS:
        text = text[: ENTRY_CHARS - 1] + "…"
    digest = hashlib.sha256(f"{kind}|{stage}|{run_id}|{text}".encode()).hexdigest()[:8]
    return Entry(f"m-{digest}", kind, stage, run_id, at, text)


class Memory:
    """The project's memory files; ``cap``: the characters a file may hold before its oldest entries are folded."""

    def __init__(self, project_dir: Path | str, cap: int = MEMORY_FILE_CHARS):
        self.project_dir = Path(project_dir)
        self.odin_dir = self.project_dir / ".odin-loop"
        self.dir = self.odin_dir / "memory"
        self.seal = Seal(self.odin_dir)
        self.cap = cap
        self.ignored: dict[str, int] = {}  # file name -> entries the last read found without odin's seal
        self.unverifiable = 0  # sealed entries the last read had no key to check
        self.upgraded = 0  # entries of an earlier version the last read sealed as they were
        self.dropped: set[str] = set()  # the kinds whose file held entries the last read left out

    def path(self, kind: str) -> Path:
        """The memory file of ``kind``; :class:`~odin_magic.core.confine.PathEscapes` when it (or its directory)
        is a symbolic link that leads outside the project: memory is never read or written there."""
        path = self.dir / FILES[kind]
        check_confined(path, [self.project_dir], f"the project memory {FILES[kind]}", base=self.project_dir)
        return path

    def entries(self, kind: str | None = None) -> list[Entry]:
        """Every entry odin wrote, oldest first (decisions, then lessons, when ``kind`` is None); the others are
        left out and counted (:meth:`notices`): in :attr:`ignored` those without a valid seal, in
        :attr:`unverifiable` the sealed ones when there is no key to check them with."""
        return [e for es in self._checked([kind] if kind else list(FILES)).values() for e in es]

    def _checked(self, kinds: list[str]) -> dict[str, list[Entry]]:
        """The entries odin wrote in the files of ``kinds``; what was left out is counted (see :meth:`entries`)."""
        self.ignored, self.unverifiable, self.upgraded, self.dropped = {}, 0, 0, set()
        if not os.path.lexists(self.dir):
            return {k: [] for k in kinds}  # no memory yet (nothing there, not even a link: each stage asks)
        found = self._seal_earlier_versions({k: self._read(k) for k in FILES})
        keyless = self.seal.key() is None
        out = {}
        for k in kinds:
            out[k] = [e for e in found[k] if self.seal.valid(e.content(), e.sig)]
            unchecked = sum(1 for e in found[k] if e.sig) if keyless else 0
            forged = len(found[k]) - len(out[k]) - unchecked
            if forged:
                self.ignored[FILES[k]] = forged
            if forged or unchecked:
                self.dropped.add(k)
            self.unverifiable += unchecked
        return out

    def notices(self) -> list[str]:
        """What the last read left out, or sealed anew: one line per memory file holding entries odin did not
        write, one for the sealed entries no key can check, one for memory sealed as it was."""
        lines = [f"memory: {n} {_entries(n)} in {name} {'was' if n == 1 else 'were'} not written by odin; ignored"
                 for name, n in self.ignored.items()]
        if self.unverifiable:
            lines.append(f"memory: {self.unverifiable} sealed {_entries(self.unverifiable)} cannot be checked "
                         f"({KEY_NAME} is missing or unreadable); ignored")
        if self.upgraded:
            lines.append(f"memory: {self.upgraded} {_entries(self.upgraded)} without a seal (written before odin sealed "
                         "memory) sealed as found; `odin memory` lists every entry: remove any you did not write")
        return lines

    def _read(self, kind: str) -> list[Entry]:
        try:
            return _parse(self.path(kind).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []

    def _seal_earlier_versions(self, found: dict[str, list[Entry]]) -> dict[str, list[Entry]]:
        """``found`` (every file's entries), sealed as they are when an earlier version wrote them: there is no
        (readable) key and no entry in any file carries a seal. Once one does, nothing is sealed anew: an entry
        without a valid seal is dropped, and without the key every sealed one is (never signed again)."""
        entries = [e for es in found.values() for e in es]
        if not entries or any(e.sig for e in entries) or self.seal.key() is not None:
            return found
        try:
            self.seal.make()
        except OSError:  # no key can be written there: nothing is trusted
            return found
        found = {k: [self._sealed(e) for e in es] for k, es in found.items()}
        for kind, sealed in found.items():
            if sealed:
                self._rewrite(kind, sealed)
        self.upgraded = len(entries)
        return found

    def _sealed(self, entry: Entry) -> Entry:
        return replace(entry, sig=self.seal.sign(entry.content()))

    def append(self, entries: Iterable[Entry]) -> int:
        """Add ``entries`` (an entry already there is not written twice), sealed; how many were new. The file is
        rewritten (entries without odin's seal left out), its oldest entries folded past :attr:`cap`."""
        entries = list(entries)
        existing = self._checked(list(FILES))  # one read of every file: each one's count is kept
        known = {e.id for es in existing.values() for e in es}
        entries = [e for e in entries if e.id not in known]
        added = 0
        for kind in FILES if entries else ():  # a file that held entries left out is rewritten without them
            new = [self._sealed(e) for e in entries if e.kind == kind]
            if not new and kind not in self.dropped:
                continue
            self._rewrite(kind, self._fold(kind, existing[kind] + new))
            added += len(new)
        return added

    def _fold(self, kind: str, entries: list[Entry]) -> list[Entry]:
        """``entries``, the oldest folded into one summary entry when the file would hold more than :attr:`cap`."""
        sizes = [len(e.render()) + 1 for e in entries]
        size = len(TITLES[kind]) + sum(sizes)
        if size <= self.cap:
            return entries
        summary_room = 400  # a summary entry's header and text
        cut = 0
        while len(entries) - cut > 1 and size + summary_room > self.cap:
            size -= sizes[cut]
            cut += 1
        folded, entries = entries[:cut], entries[cut:]
        n = sum((e.folded or 1) if e.run_id == FOLDED_RUN else 1 for e in folded)
        runs = [r for r in (e.since if e.run_id == FOLDED_RUN else e.run_id for e in folded) if r]
        span = f" (runs {runs[0]} … {runs[-1]})" if runs else ""
        text = (f"{n} older entries were folded away{span} to keep {FILES[kind]} under {self.cap} characters; "
                "`odin memory` lists the rest")
        summary = replace(_entry(kind, "-", FOLDED_RUN, folded[-1].at, text), folded=n, since=runs[0] if runs else "")
        return [self._sealed(summary), *entries]

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
        text = TITLES[kind] + "".join("\n" + e.render() for e in entries)
        write_atomic(self.path(kind), text, within=self.odin_dir)  # memory/ made when missing; never through a link


def _entries(n: int) -> str:
    return "entry" if n == 1 else "entries"


def _parse(text: str) -> list[Entry]:
    out: list[Entry] = []
    head = None
    body: list[str] = []

    def close() -> None:
        if head is not None:
            entry_id, kind, stage, run_id, at, folded, since, sig = head.groups()
            out.append(Entry(entry_id, kind, stage, run_id, at, "\n".join(body).strip(), sig or "",
                             int(folded or 0), "" if since in (None, "-") else since))

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


def relevant(project_dir: Path, stage, loop, limit: int = MEMORY_CHARS,
             tell: Callable[[str], None] | None = None) -> str | None:
    """The entries for ``stage``: those naming it or its files first, then the most recent; bounded by ``limit``.
    Entries odin did not write are never among them: ``tell`` is given a line per file that holds some."""
    if not getattr(loop, "memory", True):
        return None
    mem = Memory(project_dir)
    entries = mem.entries()
    for line in mem.notices() if tell is not None else ():
        tell(line)
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
