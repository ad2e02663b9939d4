"""The acceptance manifest (seed 001's loop manifest): the criteria that decide "done".

A run may carry ``acceptance.yaml`` in its run dir::

    criteria:
      - id: AC1
        priority: P0            # P0 must pass before the run is done; P1 is reported
        component: Arithmetic
        text: Given 2 and 3, when add is called, then it returns 5.
        verify: python -m pytest -q -p no:cacheprovider "$ODIN_RUN_DIR/harness" -k add
      - id: AC2
        priority: P1
        text: The module has a docstring.
        verify: judge           # no command can check it: the judge decides from the evidence

The deep interview writes it beside ``spec.md`` (one criterion per numbered
acceptance criterion there, ``verify: judge`` until a planner stage gives a
command); a loop's ``acceptance:`` field says whether it is ``required``,
``optional`` (used when present, the default) or ``off``.

:func:`validate_manifest_text` reports every problem with its line, column and
field, as the loop validator does.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from odin_magic.core.errors import OdinError
from odin_magic.loop.diagnostics import Diagnostic, DocumentReport
from odin_magic.loop.validation import _Checker, _kind
from odin_magic.loop.yamlsource import MAX_BYTES, YamlError, decode_text, load_yaml

MANIFEST_NAME = "acceptance.yaml"
JUDGE = "judge"
Priority = Literal["P0", "P1"]
AcceptanceMode = Literal["required", "optional", "off"]
_ID = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"


class ManifestInvalid(OdinError):
    """acceptance.yaml exists but is not a valid manifest."""


class Criterion(BaseModel):
    """One acceptance criterion and how it is verified."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    id: Annotated[str, Field(min_length=1, max_length=64, pattern=_ID)] = Field(
        description="Unique id, e.g. AC1 (letters, digits, '-', '_', '.').")
    priority: Priority = Field(description="P0: must pass before the run is done; P1: should pass (reported).")
    text: Annotated[str, Field(min_length=1)] = Field(description="The criterion, Given/When/Then where it fits.")
    component: str | None = Field(default=None, description="The component it belongs to.")
    verify: Annotated[str, Field(min_length=1)] = Field(
        description="A shell command whose exit code decides it (run in the project dir, like a gate command), "
        "or 'judge' for a criterion no command can check.")
    timeout: float | None = Field(default=None, gt=0, le=86_400.0,
                                  description="Seconds before the verify command is killed (at most a day).")

    @property
    def by_judge(self) -> bool:
        return self.verify.strip() == JUDGE


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    criteria: list[Criterion] = Field(min_length=1, description="The acceptance criteria.")

    def of_priority(self, priority: str) -> list[Criterion]:
        return [c for c in self.criteria if c.priority == priority]


@dataclass
class ManifestReport(DocumentReport):
    manifest: Manifest | None = None
    WHAT: ClassVar[str] = "acceptance manifest"

    def to_dict(self) -> dict:
        return {"path": self.path, "ok": self.ok, "errors": [d.to_dict() for d in self.errors]}


def validate_manifest_text(text: str, source: str, interview_ids: list[str] | None = None) -> ManifestReport:
    """Check a manifest's text; ``interview_ids`` are the criteria the interview numbered (each must appear)."""
    report = ManifestReport(source)
    try:
        doc = load_yaml(text)
    except YamlError as exc:
        report.errors.append(Diagnostic("error", source, exc.line, exc.column, "", exc.message, exc.hint))
        return report
    checker = _Checker(source, doc, root=Manifest)
    data = doc.data
    if not isinstance(data, dict):
        what = "empty" if data is None else f"{_kind(data)}, not a mapping"
        checker.error((), f"the manifest is {what}", "write a mapping with a `criteria:` list (see docs/verification.md)")
        report.errors = checker.errors
        return report
    manifest = None
    try:
        manifest = Manifest.model_validate(data)
    except ValidationError as exc:
        checker.schema_errors(exc)
    _rules(checker, data, interview_ids)
    report.errors = sorted(checker.errors, key=lambda d: (d.line, d.column))
    report.manifest = manifest if not report.errors else None
    return report


def _rules(checker: _Checker, data: dict, interview_ids: list[str] | None) -> None:
    """What the schema cannot say: unique ids, no blank verify, every interview criterion present."""
    criteria = data.get("criteria")
    if not isinstance(criteria, list):
        return
    seen: dict[str, int] = {}
    for i, crit in enumerate(criteria):
        if not isinstance(crit, dict):
            continue
        cid = crit.get("id")
        if isinstance(cid, str):
            if cid in seen:
                checker.error(("criteria", i, "id"), f"criterion id {cid!r} is already used by criteria[{seen[cid]}]",
                              "give every criterion a unique id")
            else:
                seen[cid] = i
        for key in ("verify", "text"):
            value = crit.get(key)
            if isinstance(value, str) and value and not value.strip():
                what = "an empty verify command" if key == "verify" else "an empty text"
                fix = "write the command that decides it, or `verify: judge`" if key == "verify" else "write the criterion"
                checker.error(("criteria", i, key), f"{what} (only whitespace)", fix)
    for cid in interview_ids or []:
        if cid not in seen:
            checker.error(("criteria",), f"criterion {cid} of the interview (spec.md) is missing",
                          f"add `- id: {cid}` with its priority, text and verify (a command, or `judge`)", at="key")


def validate_manifest_file(path: Path, interview_ids: list[str] | None = None) -> ManifestReport:
    """Validate the manifest at ``path``; unreadable is a one-error report, never a traceback."""
    source = str(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        report = ManifestReport(source)
        report.errors.append(Diagnostic("error", source, 1, 1, "", f"cannot read it: {exc.strerror or exc}",
                                        "check the path and its permissions"))
        return report
    try:
        text = decode_text(raw)
    except YamlError as exc:
        report = ManifestReport(source)
        report.errors.append(Diagnostic("error", source, exc.line, exc.column, "", exc.message, exc.hint))
        return report
    return validate_manifest_text(text, source, interview_ids)


def load_manifest(run_dir: Path, interview_ids: list[str] | None = None) -> Manifest | None:
    """The run's manifest, None when it has none; :class:`ManifestInvalid` (located) when it is invalid."""
    path = Path(run_dir) / MANIFEST_NAME
    if not path.exists():
        return None
    report = validate_manifest_file(path, interview_ids)
    if not report.ok:
        first = report.errors[0]
        more = f" (and {len(report.errors) - 1} more)" if len(report.errors) > 1 else ""
        raise ManifestInvalid(f"{first}{more}", hint=f"fix {MANIFEST_NAME}; `odin validate-manifest` lists every problem")
    return report.manifest


# -- written by the deep interview ------------------------------------------------

def _quoted(text: str) -> str:
    """A YAML scalar for ``text`` (JSON strings are valid YAML)."""
    return json.dumps(text, ensure_ascii=False)


#: the ids the deep interview numbers its criteria with (spec.md's AC1, AC2, ...)
INTERVIEW_ID = re.compile(r"AC\d+")


def render_manifest(numbered: list[tuple[str, str, str]], existing: Manifest | None = None) -> str:
    """acceptance.yaml for the interview's ``(id, component, text)`` criteria.

    A criterion already in ``existing`` keeps its priority, verify command and timeout
    (a planner may have given it a command); new ones are P0, ``verify: judge``. A criterion the
    interview did not write (an id not of its ``AC<n>`` form: a roadmap phase contract's) is kept as it is.
    """
    kept = {c.id: c for c in existing.criteria} if existing is not None else {}
    out = ["# Acceptance criteria of this run (written by the deep interview; see docs/verification.md).",
           "# Give each criterion a `verify` command where a command can decide it.", "criteria:"]
    for cid, component, text in numbered:
        old = kept.get(cid)
        out += _criterion_lines(cid, old.priority if old else "P0", component, text, old.verify if old else JUDGE,
                                old.timeout if old else None)
    for c in kept.values():
        if not INTERVIEW_ID.fullmatch(c.id):
            out += _criterion_lines(c.id, c.priority, c.component, c.text, c.verify, c.timeout)
    return "\n".join(out) + "\n"


def _criterion_lines(cid: str, priority: str, component: str | None, text: str, verify: str,
                     timeout: float | None) -> list[str]:
    lines = [f"  - id: {cid}", f"    priority: {priority}"]
    if component is not None:
        lines.append(f"    component: {_quoted(component)}")
    lines += [f"    text: {_quoted(text)}", f"    verify: {_quoted(verify)}"]
    if timeout is not None:
        lines.append(f"    timeout: {timeout:g}")
    return lines


def existing_manifest(run_dir: Path) -> Manifest | None:
    """The manifest in ``run_dir`` when it is valid (else None: the interview writes a fresh one)."""
    try:
        return load_manifest(run_dir)
    except ManifestInvalid:
        return None
