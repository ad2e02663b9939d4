"""Checking a loop file: every problem becomes a :class:`Diagnostic` that points at its place.

Two kinds of rule meet here. The shape of a loop (which keys exist, their
types and ranges) comes from the pydantic models in :mod:`odin_magic.loop`;
their errors are translated into diagnostics at the YAML position of the
offending node (:mod:`.schema_errors`). The rules that span several fields
(seed 000's "Validating a loop" plus odin-magic's own; a stage's in
:mod:`.stage_rules`) are checked on the raw data, so that one pass reports
every problem at once. The reports and their diagnostics: :mod:`.diagnostics`.

``validate_text`` serves the notebook's ``%%odin loop`` cell magic: the line
numbers it reports are those of the text it was given.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ValidationError

from odin_magic.core.errors import OdinError, UsageError
from odin_magic.loop.diagnostics import Diagnostic, ValidationReport, did_you_mean, format_path
from odin_magic.loop.diagnostics import kind_of as _kind
from odin_magic.loop.schema import Loop, Stage, is_plain_name
from odin_magic.loop.schema_errors import SchemaErrors
from odin_magic.loop.params import undeclared
from odin_magic.loop.stage_rules import INTERVIEW_LOG, StageRules
from odin_magic.loop.yamlsource import MAX_BYTES, YamlDocument, YamlError, decode_text, load_yaml


class _Checker(StageRules, SchemaErrors):
    """One document's checks: its schema errors located, then the cross-field rules of a loop."""

    def __init__(self, source: str, doc: YamlDocument, root: type[BaseModel] = Loop):
        super().__init__(source, doc)
        self.root = root

    def stages(self) -> list[tuple[int, dict]]:
        stages = self.data.get("stages") if isinstance(self.data, dict) else None
        if not isinstance(stages, list):
            return []
        return [(i, s) for i, s in enumerate(stages) if isinstance(s, dict)]

    def rules(self, *, expected_name: str | None, schedulable: bool) -> None:
        data = self.data
        for key in ("version", "description"):
            if data.get(key) in (None, ""):
                self.warning(
                    (key,),
                    f"no `{key}`",
                    f"add `{key}: ...` so that `odin list` and readers know " + ("which revision this is" if key == "version" else "what the loop is for"),
                    at="parent",
                )
        name = data.get("name")
        if expected_name and is_plain_name(name) and name != expected_name:
            # only plain names are suggested: a hint never proposes a path (a bad `name` has its own error)
            fix = f"rename the file to '{name}.yaml' or " if is_plain_name(expected_name) else ""
            fix += f"set `name: {expected_name}`" if is_plain_name(expected_name) else "give the file a plain loop name"
            self.warning(
                ("name",),
                f"name {name!r} does not match the file name {expected_name!r}",
                f"{fix}: loops are found by file name",
            )
        stages = self.stages()
        first_index: dict[str, int] = {}
        for i, stage in stages:
            sid = stage.get("id")
            if not isinstance(sid, str):
                continue
            if sid in first_index:
                self.error(
                    ("stages", i, "id"),
                    f"stage id {sid!r} is already used by stages[{first_index[sid]}]",
                    "give every stage a unique id",
                )
            else:
                first_index[sid] = i
        for i, stage in stages:
            self._stage_rules(i, stage, first_index, schedulable)
        self._reachability(stages, first_index)
        self._glob_rules(("risk",), data.get("risk"))
        for path, message, fix in undeclared(data):
            self.error(path, message, fix)
        if schedulable:
            self._risk_rules(stages)

    def _risk_rules(self, stages: list[tuple[int, dict]]) -> None:
        """A schedulable loop never pauses: stages that could change a ``risk`` path would pause for sign-off."""
        risk = self.data.get("risk")
        if not isinstance(risk, list) or not risk or not all(isinstance(r, str) for r in risk):
            return
        from odin_magic.loop.globs import could_touch_risk

        loop = Loop.model_construct(risk=risk)
        touching = []
        for _, stage in stages:
            try:
                model = Stage.model_validate(stage)
            except ValidationError:
                continue
            hits = could_touch_risk(model, loop)
            if hits:
                touching.append(f"{model.id} (could change {', '.join(hits)})")
        if touching:
            self.error(("risk",), "stage(s) " + "; ".join(touching) + " would pause for sign-off on a risky change; "
                       "a schedulable loop never pauses",
                       "narrow those stages with `scope:` so they cannot reach the risk globs")

    def _reachability(self, stages: list[tuple[int, dict]], first_index: dict[str, int]) -> None:
        """Follow the run's moves (pass: the next stage; fail: on_fail or a retry) from the first stage."""
        raw = self.data.get("stages")
        if not stages or not isinstance(raw, list) or len(stages) != len(raw):
            return
        ids = [s.get("id") for _, s in stages]
        if not all(isinstance(x, str) for x in ids):
            return
        reached: set[int] = set()
        todo = [0]
        while todo:
            i = todo.pop()
            if i in reached:
                continue
            reached.add(i)
            if i + 1 < len(ids):
                todo.append(first_index[ids[i + 1]])  # the engine looks a stage up by id
            gate = stages[i][1].get("gate")
            target = gate.get("on_fail") if isinstance(gate, dict) else None
            if isinstance(target, str) and target in first_index:
                todo.append(first_index[target])
        for i, sid in enumerate(ids):
            if i not in reached and first_index[sid] == i:  # a repeated id already has its own error
                self.warning(
                    ("stages", i),
                    f"stage {sid!r} can never run: no path through the stage order or an on_fail reaches it",
                    "remove it, or rename the stage whose repeated id hides the way to it",
                    at="value",
                )


# ---------------------------------------------------------------------------
# entry points


def _unloadable(source: str, exc: YamlError) -> ValidationReport:
    """The report of a file that is not loadable YAML text: its one error."""
    report = ValidationReport(path=source)
    report.errors.append(Diagnostic("error", source, exc.line, exc.column, "", exc.message, exc.hint))
    return report


def validate_text(
    text: str,
    source_name: str,
    *,
    expected_name: str | None = None,
    schedulable: bool = False,
) -> ValidationReport:
    """Validate loop YAML given as text; positions are those of ``text``.

    ``expected_name`` (usually the file's stem) turns a different ``name`` into a warning.
    ``schedulable`` adds the rules of a loop that never pauses for a person.
    """
    try:
        doc = load_yaml(text)
    except YamlError as exc:
        return _unloadable(source_name, exc)
    report = ValidationReport(path=source_name)
    checker = _Checker(source_name, doc)
    data = doc.data
    if not isinstance(data, dict):
        what = "empty" if data is None else f"{_kind(data)}, not a mapping"
        report.errors.append(
            Diagnostic(
                "error", source_name, *doc.position(()), "", f"the loop file is {what}",
                "write a mapping with `name`, `max_iterations` and `stages` (see docs/writing-loops.md)",
            )
        )
        return report
    if isinstance(data.get("name"), str):
        report.name = data["name"]
    if isinstance(data.get("description"), str):
        report.description = data["description"].strip()
    if isinstance(data.get("stages"), list):
        report.stage_count = len(data["stages"])
    loop = None
    try:
        loop = Loop.model_validate(data)
    except ValidationError as exc:
        checker.schema_errors(exc)
    checker.rules(expected_name=expected_name, schedulable=schedulable)
    errors = sorted(checker.errors, key=lambda d: (d.line, d.column))
    warnings = sorted(checker.warnings, key=lambda d: (d.line, d.column))
    report.errors, report.warnings = errors, warnings
    report.loop = loop if not errors else None
    return report


def validate_file(path, schedulable: bool = False) -> ValidationReport:
    """Validate the loop file at ``path``; a missing or unreadable file is a :class:`UsageError`."""
    path = Path(path)
    source = str(path)
    try:
        if not path.is_file():
            if path.exists():
                raise UsageError(f"{source} is not a file", hint="give the path of a loop .yaml file")
            raise UsageError(f"{source}: no such file", hint="check the path; `odin list` shows the loops you have")
        with path.open("rb") as fh:
            raw = fh.read(MAX_BYTES + 1)  # one byte more than allowed: enough to refuse a larger file
    except OSError as exc:
        raise UsageError(f"cannot read {source}: {exc.strerror or exc}", hint="check the path and its permissions") from None
    try:
        text = decode_text(raw)
    except YamlError as exc:
        return _unloadable(source, exc)
    return validate_text(text, source, expected_name=path.stem, schedulable=schedulable)


def unreadable_report(source: str, error: OdinError) -> ValidationReport:
    """The report of a loop file that could not be read at all (missing, a directory, no permission)."""
    return ValidationReport(path=source, unreadable=error)


def reports_to_json(reports: list[ValidationReport]) -> str:
    return json.dumps(
        {"all_ok": all(r.ok for r in reports), "results": [r.to_dict() for r in reports]},
        indent=2,
    )


__all__ = [
    "Diagnostic", "INTERVIEW_LOG", "ValidationReport", "did_you_mean", "format_path", "reports_to_json",
    "unreadable_report", "validate_file", "validate_text",
]
