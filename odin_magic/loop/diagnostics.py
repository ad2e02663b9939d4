"""What checking a YAML file reports: :class:`Diagnostic` (one problem at its line and column),
:class:`ValidationReport` (a loop file's outcome), and :class:`LocatedDiagnostics`, which collects
diagnostics at the YAML positions of field paths. Also the words they are written with: a field
path (``stages[0].gate``), a value described (:func:`kind_of`), a close spelling (:func:`did_you_mean`).
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from odin_magic.core.errors import OdinError
from odin_magic.loop.schema import Loop
from odin_magic.loop.yamlsource import YamlDocument

SHOWN_CHARS = 60  # of a value quoted in a message


@dataclass(frozen=True)
class Diagnostic:
    """One problem in a loop file; ``line``/``column`` are 1-based."""

    severity: str  # "error" | "warning"
    file: str
    line: int
    column: int
    field: str
    message: str
    fix: str | None = None

    def __str__(self) -> str:
        where = f"{self.field}: " if self.field else ""
        text = f"{self.file}:{self.line}:{self.column}: {self.severity}: {where}{self.message}"
        if self.fix:
            text += f" -- fix: {self.fix}"
        return text

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class DocumentReport:
    """The outcome of checking one document beside the loops (an acceptance manifest, a phase contract)."""

    path: str
    errors: list[Diagnostic] = field(default_factory=list)
    WHAT: ClassVar[str] = "document"  # how format() names it

    @property
    def ok(self) -> bool:
        return not self.errors

    def format(self) -> str:
        lines = [str(d) for d in self.errors]
        lines.append(f"{self.path}: {self.WHAT} {'ok' if self.ok else 'INVALID'} ({len(self.errors)} error(s))")
        return "\n".join(lines)


@dataclass
class ValidationReport:
    """The outcome of validating one loop file; ``loop`` is set only when there is no error."""

    path: str
    loop: Loop | None = None
    errors: list[Diagnostic] = field(default_factory=list)
    warnings: list[Diagnostic] = field(default_factory=list)
    name: str | None = None  # the loop's ``name`` as written, even when the file is invalid
    description: str | None = None
    stage_count: int | None = None
    unreadable: OdinError | None = None  # set when the file is missing or cannot be read: its one error

    @property
    def ok(self) -> bool:
        return not self.errors and self.unreadable is None

    def to_dict(self) -> dict:
        data = {
            "path": self.path,
            "loop": self.name,
            "ok": self.ok,
            "readable": self.unreadable is None,
            "errors": [d.to_dict() for d in self.errors],
            "warnings": [d.to_dict() for d in self.warnings],
        }
        if self.unreadable is not None:
            data["error"] = self.unreadable.message
            data["hint"] = self.unreadable.hint
        return data

    def format(self) -> str:
        """A readable report: every diagnostic, errors first, then a one-line verdict."""
        if self.unreadable is not None:
            told = str(self.unreadable)
            return f"odin: {told}" if self.path in told else f"odin: {self.path}: {told}"
        lines = [str(d) for d in self.errors + self.warnings]
        verdict = "ok" if self.ok else "INVALID"
        who = f"loop '{self.name}'" if self.name else "loop"
        lines.append(
            f"{self.path}: {who} {verdict} ({len(self.errors)} error(s), {len(self.warnings)} warning(s))"
        )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()



def format_path(path: tuple) -> str:
    out = ""
    for step in path:
        if isinstance(step, int):
            out += f"[{step}]"
        else:
            out += ("." if out else "") + str(step)
    return out


def did_you_mean(word: Any, choices) -> str | None:
    if not isinstance(word, str):
        return None
    matches = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return matches[0] if matches else None


def kind_of(value: Any) -> str:
    """A value as a message names it: "a mapping", "the number 5", a quoted (and shortened) text."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "an empty value"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    text = str(value)
    if len(text) > SHOWN_CHARS:  # e.g. a whole text file read as one scalar: show its start only
        return f"{text[:SHOWN_CHARS]!r}… ({len(text)} characters)"
    return f"{value!r}"


class LocatedDiagnostics:
    """Errors and warnings about a YAML document, each at the position of its field path (``at``: the
    value, its key, or its parent mapping)."""

    def __init__(self, source: str, doc: YamlDocument):
        self.source = source
        self.doc = doc
        self.data = doc.data
        self.errors: list[Diagnostic] = []
        self.warnings: list[Diagnostic] = []

    def _emit(self, severity, path, message, fix=None, *, at="value"):
        if at == "key":
            line, column = self.doc.key_position(path)
        elif at == "parent":
            line, column = self.doc.position(path[:-1])
        else:
            line, column = self.doc.position(path)
        diag = Diagnostic(severity, self.source, line, column, format_path(path), message, fix)
        (self.errors if severity == "error" else self.warnings).append(diag)

    def error(self, path, message, fix=None, *, at="value"):
        self._emit("error", path, message, fix, at=at)

    def warning(self, path, message, fix=None, *, at="value"):
        self._emit("warning", path, message, fix, at=at)
