"""Checking a loop file: every problem becomes a :class:`Diagnostic` that points at its place.

Two kinds of rule meet here. The shape of a loop (which keys exist, their
types and ranges) comes from the pydantic models in :mod:`odin_magic.loop`;
their errors are translated into diagnostics at the YAML position of the
offending node. The rules that span several fields (seed 000's "Validating a
loop" plus odin-magic's own) are checked here, on the raw data, so that one
pass reports every problem at once.

``validate_text`` serves the notebook's ``%%odin loop`` cell magic: the line
numbers it reports are those of the text it was given.
"""

from __future__ import annotations

import difflib
import json
import types
import typing
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Union

from pydantic import BaseModel, ValidationError

from odin_magic.loop.artifacts import control_character
from odin_magic.core.errors import OdinError, UsageError
from odin_magic.loop.schema import (
    ROLE_DEFAULT_FRESH, ROLES, Budget, Gate, Interview, Loop, Stage, is_plain_name
)
from odin_magic.loop.roles import POLICIES
from odin_magic.loop.yamlsource import MAX_BYTES, YamlDocument, YamlError, decode_text, load_yaml

INTERVIEW_LOG = "interview-log.md"
_AGENT_WORDS = ("inline", "fresh", *ROLES)


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


# ---------------------------------------------------------------------------
# field paths


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


# ---------------------------------------------------------------------------
# walking the pydantic model along an error location


def _strip(tp):
    """Remove Annotated and Optional wrappers."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
            continue
        if origin in (Union, types.UnionType):
            members = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(members) == 1:
                tp = members[0]
                continue
        return tp


def _is_model(tp) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


@dataclass
class _Located:
    path: tuple  # the location in the data, union branch tags removed
    model: type | None  # the model whose field the last step names (for unknown/missing keys)
    unions: list  # [(path at the union, branch is a model)]


def _locate(loc: tuple, root: type[BaseModel] = Loop) -> _Located:
    tp: Any = root
    path: list = []
    model = None
    unions: list = []
    for step in loc:
        tp = _strip(tp)
        origin = typing.get_origin(tp)
        if origin in (Union, types.UnionType):
            members = [_strip(a) for a in typing.get_args(tp) if a is not type(None)]
            chosen = next((m for m in members if _is_model(m) and m.__name__ == step), None)
            if chosen is None:
                chosen = next((m for m in members if not _is_model(m)), members[0])
            unions.append((tuple(path), _is_model(chosen)))
            tp = chosen
            continue  # the branch tag is not part of the data path
        path.append(step)
        if _is_model(tp):
            model = tp
            info = tp.model_fields.get(step) if isinstance(step, str) else None
            tp = info.annotation if info is not None else None
        elif origin in (list, tuple):
            args = typing.get_args(tp)
            tp = args[0] if args else None
        elif origin is dict:
            args = typing.get_args(tp)
            tp = args[1] if len(args) == 2 else None
        else:
            tp = None
    return _Located(tuple(path), model, unions)


def _value_at(data: Any, path: tuple) -> Any:
    """The raw value at ``path``, or None where the path leads nowhere."""
    for step in path:
        if isinstance(data, dict) and step in data:
            data = data[step]
        elif isinstance(data, list) and isinstance(step, int) and 0 <= step < len(data):
            data = data[step]
        else:
            return None
    return data


def _kind(value: Any) -> str:
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
    if len(text) > _SHOWN_CHARS:  # e.g. a whole text file read as one scalar: show its start only
        return f"{text[:_SHOWN_CHARS]!r}… ({len(text)} characters)"
    return f"{value!r}"


_SHOWN_CHARS = 60  # of a value quoted in a message

# pydantic's strict type errors: what the field wants, and an example value
_TYPE_WANTED = {
    "int_type": ("a whole number", "5"),
    "float_type": ("a number", "0.5"),
    "bool_type": ("true or false", "true"),
    "string_type": ("text", '"..."'),
}


def _parses_as(kind: str, text: str) -> bool:
    """Whether quoted ``text`` would be a value of the wanted kind without its quotes."""
    text = text.strip().lower()
    if kind == "bool_type":
        return text in ("true", "false", "yes", "no", "on", "off")
    try:
        (int if kind == "int_type" else float)(text)
    except ValueError:
        return False
    return True


# Where each field of the nested models lives, to redirect a key written one level off.
_FIELD_HOMES = {
    **{k: "the top level" for k in Loop.model_fields},
    **{k: "stages[]" for k in Stage.model_fields},
    **{k: "budget" for k in Budget.model_fields},
    **{k: "stages[].interview" for k in Interview.model_fields},
    **{k: "stages[].gate" for k in Gate.model_fields},  # last: 'mode' most often means the gate's
}

# Fixes for required keys, by key name.
_MISSING_FIX = {
    "name": "add `name: <loop-name>` (the file's stem)",
    "max_iterations": "add `max_iterations: 10` (the global cap on loopbacks)",
    "stages": "add a `stages:` list with at least one stage",
    "id": "add `id: <stage-id>` to the stage",
    "gate": "add a `gate:` with `mode: ai` (or ai+human) and a `check:`",
    "mode": "add `mode: ai` (or `ai+human` to pause for your approval)",
    "check": "add `check: <the testable condition to advance>`",
    "cmd": "add `cmd: <shell command>`",
    "role": "add `role: <explore|planner|executor|critic|reviewer>`",
}


class _Checker:
    def __init__(self, source: str, doc: YamlDocument, root: type[BaseModel] = Loop):
        self.source = source
        self.doc = doc
        self.root = root  # the model the document is checked against
        self.data = doc.data
        self.errors: list[Diagnostic] = []
        self.warnings: list[Diagnostic] = []

    # -- emitting ---------------------------------------------------------------
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

    # -- pydantic errors ----------------------------------------------------------
    def schema_errors(self, exc: ValidationError) -> None:
        seen: dict[tuple, int] = {}
        for err in exc.errors(include_url=False):
            located = _locate(tuple(err["loc"]), self.root)
            if not self._branch_applies(located):
                continue
            path = located.path
            key = (path, err["type"] in ("extra_forbidden", "missing"))
            if key in seen:
                # several branches of one union rejected the same scalar: one diagnostic is enough
                continue
            seen[key] = len(self.errors)
            self._schema_error(err, located)

    def _branch_applies(self, located: _Located) -> bool:
        """Keep a union branch's error only when the data has that branch's shape."""
        for union_path, branch_is_model in located.unions:
            value = _value_at(self.data, union_path)
            if isinstance(value, dict) != branch_is_model:
                return False
        return True

    def _schema_error(self, err: dict, located: _Located) -> None:
        path = located.path
        kind = err["type"]
        value = _value_at(self.data, path)
        last = path[-1] if path else None
        if kind == "extra_forbidden":
            allowed = list(located.model.model_fields) if located.model else []
            guess = did_you_mean(last, allowed)
            message = f"unknown key {last!r}" + (f" (did you mean {guess!r}?)" if guess else "")
            fix = f"rename it to '{guess}'" if guess else f"remove it; the keys allowed here are: {', '.join(allowed)}"
            if not guess:
                elsewhere = did_you_mean(last, _FIELD_HOMES)
                if elsewhere == last:
                    home = _FIELD_HOMES[last]
                    message = f"{last!r} does not belong here: it belongs under `{home}`"
                    fix = f"move it under `{home}` (check its indentation)"
                elif elsewhere:
                    home = _FIELD_HOMES[elsewhere]
                    message += f" (did you mean {elsewhere!r}? it belongs under `{home}`)"
                    fix = f"move it under `{home}` as '{elsewhere}'"
            self.error(path, message, fix, at="key")
            return
        if kind == "missing":
            where = format_path(path[:-1]) or "the loop"
            self.error(
                path,
                f"missing required key {last!r} in {where}",
                _MISSING_FIX.get(last, f"add `{last}:`"),
                at="parent",
            )
            return
        if last == "agent" or (len(path) >= 2 and path[-2] == "agent" and last != "role"):
            self._agent_error(path, value)
            return
        if kind == "literal_error":
            expected = err.get("ctx", {}).get("expected", "")
            choices = [c.strip().strip("'") for c in expected.replace(" or ", ", ").split(",") if c.strip()]
            guess = did_you_mean(value, choices)
            message = f"{_kind(value)} is not allowed here; expected {expected}"
            if guess:
                message += f" (did you mean {guess!r}?)"
            self.error(path, message, f"use '{guess}'" if guess else f"use one of {expected}")
            return
        if kind == "model_type" or kind == "dict_type":
            self.error(path, f"expected a mapping (indented `key: value` lines), got {_kind(value)}",
                       "write it as a mapping")
            return
        if kind == "list_type":
            self.error(path, f"expected a list, got {_kind(value)}", "write it as a list (`- item` lines or `[a, b]`)")
            return
        if kind == "too_short" and last == "stages":
            self.error(path, "a loop needs at least one stage", "add a stage under `stages:`")
            return
        if kind == "string_too_short":
            self.error(path, "must not be empty", "write a value")
            return
        if kind == "string_pattern_mismatch":
            self.error(
                path,
                f"{_kind(value)} is not a valid identifier",
                "use letters, digits, '-', '_' and '.', starting with a letter or digit",
            )
            return
        if kind in _TYPE_WANTED and last != "version":  # version: a string or a number, said below
            self._type_error(path, kind, value)
            return
        if kind == "value_error":
            message = str(err.get("ctx", {}).get("error", err["msg"]))
            blank = message.startswith("must not be empty")
            self.error(path, message, "write what it should say" if blank else "correct the value as described")
            return
        message = "must be a string or a number" if last == "version" else err["msg"]
        message = f"{message[0].lower()}{message[1:]}; got {_kind(value)}"
        self.error(path, message, "correct the value")

    def _type_error(self, path, kind: str, value) -> None:
        """A value of the wrong type: loop types are strict, nothing is coerced (``"5"`` is not 5)."""
        wanted, example = _TYPE_WANTED[kind]
        last = path[-1] if path else None
        key = last if isinstance(last, str) else None
        got = f"the string {_kind(value)}" if isinstance(value, str) else _kind(value)
        message = f"expected {wanted}, got {got}"
        if kind != "string_type" and isinstance(value, str) and _parses_as(kind, value):
            message += " (a quoted value is text, not a number or a boolean)"
        if kind == "bool_type":
            fix = f"write `{key}: true` or `{key}: false` (no quotes)" if key else "write true or false (no quotes)"
        elif kind != "string_type" and isinstance(value, str) and _parses_as(kind, value):
            fix = f"remove the quotes: `{key}: {value.strip()}`" if key else f"remove the quotes: {value.strip()}"
        elif kind == "string_type" and isinstance(value, (list, dict)):
            fix = "write it as one line of text"
        elif kind == "string_type":
            fix = f'quote it: `{key}: "{value}"`' if key else f'quote it: "{value}"'
        else:
            fix = f"write {wanted}, e.g. `{key}: {example}`" if key else f"write {wanted}, e.g. {example}"
        self.error(path, message, fix)

    def _agent_error(self, path, value) -> None:
        agent_path = path if path[-1] == "agent" else path[: path.index("agent") + 1]
        agent = _value_at(self.data, agent_path)
        if isinstance(agent, dict):
            # errors inside {role, fresh} that are not about role/unknown keys (e.g. fresh: "yes")
            self.error(path, f"{_kind(value)} is not valid here; `fresh` must be true or false", "use `fresh: true` or `fresh: false`")
            return
        guess = did_you_mean(agent, _AGENT_WORDS)
        message = f"agent {_kind(agent)} is not inline, fresh, a role ({', '.join(ROLES)}) or a {{role, fresh}} mapping"
        if guess:
            message += f" (did you mean {guess!r}?)"
        self.error(agent_path, message, f"use `agent: {guess}`" if guess else "use e.g. `agent: executor`")

    # -- cross-field rules, on the raw data ---------------------------------------
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
        if schedulable:
            self._risk_rules(stages)

    def _glob_rules(self, path: tuple, globs: Any) -> None:
        """``risk`` and ``scope`` globs are project-relative, like artifact paths."""
        if not isinstance(globs, list):
            return
        for j, glob in enumerate(globs):
            problem = _path_problem(glob) if isinstance(glob, str) else None
            if problem:
                self.error(path + (j,), f"glob {glob!r} {problem.replace('artifact paths', 'globs')}",
                           "use a project-relative glob, e.g. 'migrations/**' or 'pyproject.toml'")

    def _produces_in_scope(self, base: tuple, stage: dict) -> None:
        """``scope`` narrows what a stage may change: its project-tree ``produces`` must lie inside it."""
        from odin_magic.loop.globs import matches, may_overlap

        globs, produces = stage.get("scope"), stage.get("produces")
        if not isinstance(globs, list) or not isinstance(produces, list):
            return
        globs = [g for g in globs if isinstance(g, str)]
        for j, entry in enumerate(produces):
            if not isinstance(entry, str) or _path_problem(entry):
                continue
            parts = entry.strip("/").split("/")
            if len(parts) == 1 and not entry.endswith("/") or parts[0] == "harness":
                continue  # kept in the run dir: not a change to the project
            inside = any(may_overlap(g, entry) for g in globs) if entry.endswith("/") else matches(globs, entry)
            if not inside:
                self.error(base + ("produces", j), f"{entry!r} is outside the stage's scope {globs}",
                           "add a glob for it to `scope:` (e.g. '" + (entry + "**" if entry.endswith("/") else entry) + "')")

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
                       "narrow those stages with `scope:` so they cannot reach the risk globs, or drop --schedulable")

    def _stage_rules(self, i: int, stage: dict, ids: dict[str, int], schedulable: bool) -> None:
        base = ("stages", i)
        sid = stage.get("id") if isinstance(stage.get("id"), str) else f"#{i}"
        gate = stage.get("gate")
        if isinstance(gate, dict):
            target = gate.get("on_fail")
            if isinstance(target, str) and target not in ids:
                guess = did_you_mean(target, ids)
                message = f"{target!r} is not a stage id" + (f" (did you mean {guess!r}?)" if guess else "")
                fix = f"use `on_fail: {guess}`" if guess else f"use one of: {', '.join(ids)}"
                self.error(base + ("gate", "on_fail"), message, fix)
            if gate.get("mutate") is True and not gate.get("run"):
                self.error(base + ("gate", "mutate"), "`mutate: true` proves the gate's `run` commands can fail, "
                           "but this gate has no `run` command", "add the command that tests the code under `run:`, "
                           "or drop `mutate`")
            mode = gate.get("mode")
            if schedulable and mode in ("ai+human", "human"):
                self.error(
                    base + ("gate", "mode"),
                    f"stage {sid!r} has gate mode {mode!r}, which pauses for a human; a schedulable loop never pauses",
                    "use `mode: ai`, or drop --schedulable",
                )
        fresh, how = _resolves_fresh(stage.get("agent"))
        consumes = stage.get("consumes")
        if fresh and not (isinstance(consumes, list) and consumes):
            self.error(
                base + (("consumes",) if "consumes" in stage else ("agent",)),
                f"stage {sid!r} runs in a fresh context ({how}) but declares no `consumes`",
                "list the artifacts it must read under `consumes:` (a fresh agent sees nothing else)",
            )
        role = _role_of(stage.get("agent"))
        produces = stage.get("produces")
        if role is not None and POLICIES[role].writes == "none" and isinstance(produces, list) and produces:
            self._report_rule(base, sid, role, produces)
        interview = stage.get("interview")
        if isinstance(interview, dict):
            if schedulable:
                self.error(
                    base + ("interview",),
                    f"stage {sid!r} is an interview, which waits for a person; a schedulable loop never pauses",
                    "remove the interview stage, or drop --schedulable",
                    at="key",
                )
            if interview.get("mode") == "deep":
                if fresh:
                    self.error(
                        base + ("agent",),
                        f"the deep interview stage {sid!r} resolves to a fresh context ({how}); an interview talks to the user inline",
                        "remove `agent`, or use `agent: inline`",
                    )
                if not (isinstance(produces, list) and INTERVIEW_LOG in produces):
                    self.error(
                        base + (("produces",) if "produces" in stage else ("interview",)),
                        f"the deep interview stage {sid!r} does not produce {INTERVIEW_LOG!r}",
                        f"add '{INTERVIEW_LOG}' to its `produces` (its gate reads the convergence recorded there)",
                        at="value" if "produces" in stage else "key",
                    )
        self._glob_rules(base + ("scope",), stage.get("scope"))
        self._produces_in_scope(base, stage)
        for key in ("consumes", "produces"):
            entries = stage.get(key)
            if not isinstance(entries, list):
                continue
            for j, entry in enumerate(entries):
                if isinstance(entry, str):
                    problem = _path_problem(entry)
                    if problem:
                        self.error(base + (key, j), f"{entry!r} {problem}",
                                   "use a relative path inside the project, e.g. 'spec.md' or 'src/'")

    def _report_rule(self, base: tuple, sid: str, role: str, produces: list) -> None:
        """A role that may write no file (explore) reports: the engine writes its final answer to the
        stage's one document, so it may declare one `produces`, a file."""
        if len(produces) > 1:
            self.error(
                base + ("produces",),
                f"stage {sid!r} runs as {role}, which edits nothing and reports: the engine writes its final "
                f"report to the stage's single document, so it may declare one `produces`, not {len(produces)}",
                "keep one document (e.g. `produces: [survey.md]`), or use a role that writes its own files "
                "(e.g. `agent: reviewer`: writes only its produces)",
            )
        elif isinstance(produces[0], str) and produces[0].strip().endswith("/"):
            self.error(
                base + ("produces", 0),
                f"stage {sid!r} runs as {role}, which edits nothing and reports: its one `produces` is the "
                f"document the engine writes its report to, not a directory ({produces[0]!r})",
                "name a file, e.g. `produces: [survey.md]`",
            )

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


def _role_of(agent: Any) -> str | None:
    """The role a raw ``agent`` value names, if it names a known one."""
    role = agent.get("role") if isinstance(agent, dict) else agent
    return role if isinstance(role, str) and role in ROLES else None


def _resolves_fresh(agent: Any) -> tuple[bool, str]:
    if agent == "fresh":
        return True, "agent: fresh"
    if isinstance(agent, str) and agent in ROLE_DEFAULT_FRESH:
        return ROLE_DEFAULT_FRESH[agent], f"agent: {agent}, fresh by default"
    if isinstance(agent, dict):
        role = agent.get("role")
        fresh = agent.get("fresh")
        if fresh is True:
            return True, "fresh: true"
        if fresh is None and isinstance(role, str) and role in ROLE_DEFAULT_FRESH:
            return ROLE_DEFAULT_FRESH[role], f"role {role}, fresh by default"
    return False, ""


def _path_problem(entry: str) -> str | None:
    bad = control_character(entry)
    if bad:
        return f"contains a control character ({bad}); artifact paths have no NUL, newline, tab or other control characters"
    if not entry.strip():
        return "is an empty path"
    if entry.strip() in (".", "./"):
        return "names the whole project; name a file or a directory inside it"
    if entry.startswith("~"):
        return "starts with '~'; artifact paths are relative to the project"
    if PurePosixPath(entry).is_absolute() or PureWindowsPath(entry).is_absolute() or PureWindowsPath(entry).drive or entry.startswith("\\"):
        return "is an absolute path; artifact paths are relative and stay inside the project"
    parts = entry.replace("\\", "/").split("/")
    if ".." in parts:
        return "contains '..'; artifact paths stay inside the project"
    return None


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
