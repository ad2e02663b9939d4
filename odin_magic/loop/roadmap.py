"""A roadmap as data: ``.odin-loop/roadmap.md``, a Markdown file of milestones and phases (issue 22).

The file stays readable and editable by hand::

    # Ship the config loader
    autonomy: hitl

    ## M1 Parse
    - [x] p1.1 Parse the config file
    - [ ] p1.2 Report bad keys by line — blocked: needs the schema

A title (``# ...``), an optional ``autonomy: hitl | autonomous`` line (default hitl), milestones
(``## <id> <title>``) and phases as top-level checkbox lines ``- [ ] <id> <title>`` (``[x]``: done), with an
optional one-line note after `` — ``. Ids are plain names (``[A-Za-z0-9][A-Za-z0-9._-]*``), unique across
the file. Every other line (prose, deeper headings, indented lists, fenced code) is allowed and kept.

:func:`parse_roadmap` gives the roadmap and located :class:`~odin_magic.loop.diagnostics.Diagnostic` s;
:func:`load_roadmap` raises one line naming file, line and field; :func:`set_phase` edits one phase's line
(checkbox and note), every other byte kept, written atomically.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from odin_magic.core.atomic import read_nofollow, write_atomic
from odin_magic.core.errors import OdinError
from odin_magic.loop.diagnostics import Diagnostic, did_you_mean
from odin_magic.loop.yamlsource import MAX_BYTES, YamlError, decode_text

ROADMAP_FILE = ".odin-loop/roadmap.md"
AUTONOMY_MODES = ("hitl", "autonomous")
NOTE_SEPARATOR = " — "
PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")

_TITLE = re.compile(r"#[ \t]+(?P<rest>.*)\Z|#\Z")
_MILESTONE = re.compile(r"##[ \t]+(?P<rest>.*)\Z|##\Z")
_AUTONOMY = re.compile(r"autonomy[ \t]*:[ \t]*(?P<mode>.*?)[ \t]*\Z", re.IGNORECASE)
_CHECKBOX = re.compile(r"(?P<lead>[-*][ \t]+)\[(?P<mark>[^\]]?)\](?P<rest>.*)\Z")
_FENCE = re.compile(r"[ ]{0,3}(```|~~~)")
FORMAT_HINT = "see docs/roadmap.md for the roadmap's format"


class Phase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    title: str
    done: bool
    note: str | None = None
    milestone: str
    line: int


class Milestone(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    title: str
    line: int
    phases: list[Phase]


class Roadmap(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str
    autonomy: Literal["hitl", "autonomous"] = "hitl"
    milestones: list[Milestone]
    path: Path | None = None

    def phases(self) -> list[Phase]:
        """Every phase in drive order: top to bottom within each milestone, milestone by milestone."""
        return [p for m in self.milestones for p in m.phases]

    def phase(self, phase_id: str) -> Phase:
        for p in self.phases():
            if p.id == phase_id:
                return p
        known = [p.id for p in self.phases()]
        close = did_you_mean(phase_id, known)
        hint = f"did you mean '{close}'?" if close else f"its phases are: {', '.join(known) or '(none)'}"
        where = str(self.path) if self.path else "the roadmap"
        raise OdinError(f"{where} has no phase '{phase_id}'", hint=hint)


class _Parser:
    """One pass over the lines; collects the roadmap's parts and the diagnostics."""

    def __init__(self, source: str):
        self.source = source
        self.diags: list[Diagnostic] = []
        self.title: str | None = None
        self.title_line = 0
        self.autonomy = "hitl"
        self.autonomy_line = 0
        self.milestones: list[Milestone] = []
        self.ids: dict[str, tuple[str, int]] = {}  # id -> (what, line)

    def error(self, line: int, column: int, field: str, message: str, fix: str | None = None) -> None:
        self.diags.append(Diagnostic("error", self.source, line, column, field, message, fix))

    def warning(self, line: int, column: int, field: str, message: str, fix: str | None = None) -> None:
        self.diags.append(Diagnostic("warning", self.source, line, column, field, message, fix))

    def feed(self, n: int, line: str) -> None:
        if m := _MILESTONE.match(line):
            self.milestone(n, (m.group("rest") or "").strip())
        elif m := _TITLE.match(line):
            self.title_at(n, (m.group("rest") or "").strip())
        elif m := _AUTONOMY.match(line):
            self.autonomy_at(n, m.group("mode"), m.start("mode") + 1)
        elif m := _CHECKBOX.match(line):
            self.phase(n, m)

    def title_at(self, n: int, text: str) -> None:
        if self.title is not None:
            self.error(n, 1, "title", f"a second title (the first is on line {self.title_line})",
                       "keep one '# Title' line; use '###' for a heading inside a milestone")
        elif not text:
            self.error(n, 1, "title", "the title is empty", "write the roadmap's name after '# '")
            self.title, self.title_line = "", n
        else:
            self.title, self.title_line = text, n

    def autonomy_at(self, n: int, mode: str, column: int) -> None:
        if self.autonomy_line:
            self.error(n, 1, "autonomy", f"autonomy is already set on line {self.autonomy_line}",
                       "keep one 'autonomy:' line")
            return
        self.autonomy_line = n
        if mode not in AUTONOMY_MODES:
            close = did_you_mean(mode.lower(), AUTONOMY_MODES)
            told = f"did you mean '{close}'? " if close else ""
            self.error(n, column, "autonomy", f"unknown autonomy mode {mode!r}",
                       f"{told}write 'autonomy: hitl' or 'autonomy: autonomous'")
            return
        self.autonomy = mode

    def claim(self, ident: str, what: str, n: int, column: int) -> bool:
        """Check ``ident`` is a plain name used once; False (reported) when not."""
        if not PLAIN_NAME.match(ident):
            self.error(n, column, f"{what} id", f"{ident!r} is not a plain name",
                       "an id is letters, digits, '.', '_' or '-', starting with a letter or digit (e.g. p1.2)")
            return False
        if ident in self.ids:
            other, line = self.ids[ident]
            self.error(n, column, f"{what} id", f"id '{ident}' is already used by the {other} on line {line}",
                       "give every milestone and phase its own id")
            return False
        self.ids[ident] = (what, n)
        return True

    def milestone(self, n: int, rest: str) -> None:
        if not rest:
            self.error(n, 1, "milestone", "a milestone heading without an id",
                       "write '## M1 Title': an id, then the milestone's title")
            return
        ident, _, title = rest.partition(" ")
        if self.claim(ident, "milestone", n, 4):
            self.milestones.append(Milestone(id=ident, title=title.strip() or ident, line=n, phases=[]))

    def phase(self, n: int, m: re.Match) -> None:
        mark, rest = m.group("mark"), m.group("rest")
        column = m.start("rest") + 2
        if mark not in (" ", "x", "X"):
            self.error(n, m.start("mark") + 1, "phase", f"unknown checkbox mark [{mark}]",
                       "write '- [ ]' for a pending phase or '- [x]' for a done one")
            return
        body, _, note = rest.partition(NOTE_SEPARATOR)
        ident, _, title = body.strip().partition(" ")
        if not ident:
            self.error(n, column, "phase", "a phase without an id", "write '- [ ] p1.1 Title'")
            return
        if not self.milestones:
            self.error(n, 1, f"phase {ident}", "a phase before any milestone",
                       "put a milestone heading ('## M1 Title') above it")
            return
        if not self.claim(ident, "phase", n, column):
            return
        milestone = self.milestones[-1]
        milestone.phases.append(Phase(id=ident, title=title.strip() or ident, done=mark != " ",
                                      note=note.strip() or None, milestone=milestone.id, line=n))

    def finish(self, last_line: int) -> Roadmap | None:
        if self.title is None:
            self.error(1, 1, "title", "the roadmap has no title", "start the file with a line '# Title'")
        phases = sum(len(m.phases) for m in self.milestones)
        if phases == 0 and not any(d.severity == "error" and d.field.startswith(("phase", "milestone"))
                                   for d in self.diags):
            self.error(last_line, 1, "milestones", "the roadmap has no phase",
                       "add a milestone ('## M1 Title') and its phases ('- [ ] p1.1 Title')")
        for m in self.milestones:
            if not m.phases:
                self.warning(m.line, 1, f"milestone {m.id}", "a milestone without phases")
        if any(d.severity == "error" for d in self.diags):
            return None
        return Roadmap(title=self.title or "", autonomy=self.autonomy, milestones=self.milestones)


def parse_roadmap(text: str, source: str) -> tuple[Roadmap | None, list[Diagnostic]]:
    """The roadmap in ``text`` (None when it has an error) and every diagnostic, located by line."""
    parser = _Parser(source)
    lines = text.removeprefix("\ufeff").split("\n")  # a UTF-8 byte-order mark is no part of the title
    fenced = False
    for n, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r")
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            parser.feed(n, line.rstrip())
    last = len(lines) - 1 if len(lines) > 1 and lines[-1] == "" else len(lines)
    roadmap = parser.finish(max(last, 1))
    return roadmap, sorted(parser.diags, key=lambda d: (d.line, d.column))


class RoadmapUnreadable(OdinError):
    """The roadmap file cannot be read as text: ``what`` says why, at ``line``."""

    def __init__(self, path: Path, what: str, hint: str, line: int | None = None):
        super().__init__(f"{path}:{line}: {what}" if line else f"{path}: {what}", hint=hint)
        self.what, self.line = what, line or 1


def read_roadmap_bytes(path: Path) -> bytes:
    """The roadmap file's bytes; :class:`RoadmapUnreadable` (one line) when it is missing, a link or no file."""
    try:
        return read_nofollow(path, MAX_BYTES + 1)
    except FileNotFoundError:
        raise RoadmapUnreadable(path, "no roadmap here", "write one with `odin roadmap new --from spec.md`, "
                                "or by hand (docs/roadmap.md)") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and os.path.islink(path):
            raise _link_refused(path) from None
        raise RoadmapUnreadable(path, f"cannot read it: {exc.strerror or exc}",
                                "check the path and its permissions") from None


def _link_refused(path: Path) -> RoadmapUnreadable:
    """A roadmap.md that is a symbolic link is refused in one line, as every file odin owns is (never followed)."""
    try:
        to = f" (to {os.readlink(path)})"
    except OSError:
        to = ""
    return RoadmapUnreadable(path, f"is a link{to}: refused, odin never reads a roadmap through a link",
                             f"put the roadmap file itself at {path}")


def read_roadmap_text(path: Path, raw: bytes | None = None) -> str:
    """The roadmap file's text (of ``raw`` when given); :class:`RoadmapUnreadable` (one line) when it is missing,
    a link, binary or too big."""
    raw = read_roadmap_bytes(path) if raw is None else raw
    try:
        return decode_text(raw)
    except YamlError as exc:
        raise RoadmapUnreadable(path, exc.message.replace("a loop file", "a roadmap"),
                                "a roadmap is UTF-8 Markdown text", exc.line) from None


def first_error(diags: list[Diagnostic]) -> OdinError | None:
    """The one-line error for the first error among ``diags`` (how many more, when there are more)."""
    errors = [d for d in diags if d.severity == "error"]
    if not errors:
        return None
    d = errors[0]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    hint = d.fix or FORMAT_HINT
    if len(errors) > 1:
        hint += "; `odin roadmap validate` lists every problem"
    return OdinError(f"{d.file}:{d.line}: {d.field}: {d.message}{more}", hint=hint)


def load_roadmap(path: Path, raw: bytes | None = None) -> Roadmap:
    """The roadmap at ``path`` (its bytes ``raw`` when read already); :class:`OdinError`
    ``FILE:LINE: field: message`` (+ hint) when it is invalid."""
    path = Path(path)
    roadmap, diags = parse_roadmap(read_roadmap_text(path, raw), str(path))
    error = first_error(diags)
    if error is not None or roadmap is None:
        raise error or OdinError(f"{path}: not a roadmap", hint=FORMAT_HINT)
    return roadmap.model_copy(update={"path": path})


def check_roadmap_file(path: Path, source: str | None = None) -> tuple[Roadmap | None, list[Diagnostic]]:
    """``odin roadmap validate``: the roadmap at ``path`` and every diagnostic (named ``source``, default the
    path); a file that cannot be read is one error at its line (never a traceback)."""
    path = Path(path)
    source = source or str(path)
    try:
        text = read_roadmap_text(path)
    except RoadmapUnreadable as exc:
        return None, [Diagnostic("error", source, exc.line, 1, "", exc.what, exc.hint)]
    roadmap, diags = parse_roadmap(text, source)
    return (roadmap.model_copy(update={"path": path}) if roadmap else None), diags


def phase_line(line: str, *, done: bool, note: str | None) -> str:
    """A phase's line (without its line end) with its checkbox and note set; everything else kept."""
    m = _CHECKBOX.match(line)
    if m is None:
        raise ValueError(f"not a phase line: {line!r}")
    body = m.group("rest").partition(NOTE_SEPARATOR)[0].rstrip()
    text = f"{line[:m.start('lead')]}{m.group('lead')}[{'x' if done else ' '}]{body}"
    return text + (f"{NOTE_SEPARATOR}{note}" if note else "")


def set_phase(path: Path, phase_id: str, *, done: bool, note: str | None) -> None:
    """Check (or uncheck) phase ``phase_id`` in the roadmap at ``path`` and set (or clear, with None) its note.

    Only that one line changes; every other byte stays as it was (line ends, a BOM, prose). Written
    atomically, never through a link planted in ``.odin-loop/``.
    """
    path = Path(path)
    if note is not None:
        note = note.strip()
        if "\n" in note or "\r" in note:
            raise OdinError(f"a phase note is one line, not {note!r}", hint="shorten the note to one line")
    raw = read_roadmap_bytes(path)
    phase = load_roadmap(path, raw).phase(phase_id)  # the lines of the bytes edited: one read
    lines = raw.split(b"\n")
    old = lines[phase.line - 1]
    ending = b"\r" if old.endswith(b"\r") else b""
    text = old[: len(old) - len(ending)].decode("utf-8")
    new = phase_line(text, done=done, note=note or None)  # never line 1: a milestone heading is above it
    lines[phase.line - 1] = new.encode("utf-8") + ending
    within = path.parent.parent if path.parent.name == ".odin-loop" else path.parent
    write_atomic(path, b"\n".join(lines), within=within)
