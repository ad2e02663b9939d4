"""Pydantic's errors about a loop (or a manifest) told as diagnostics at the YAML position of the
offending node: the error's location walked through the models (union branch tags dropped), then a
message and a fix per kind of error (unknown key, missing key, wrong type, literal, agent, ...).
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Any, Union

from pydantic import BaseModel, ValidationError

from odin_magic.loop.diagnostics import LocatedDiagnostics, did_you_mean, format_path, kind_of
from odin_magic.loop.schema import ROLES, Budget, Gate, Interview, Loop, Stage

_AGENT_WORDS = ("inline", "fresh", *ROLES)


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


def _field(model: type[BaseModel], key: str):
    """The field a key of the data names: by its name, or by its alias (a measure's ``json``)."""
    return model.model_fields.get(key) or next((i for i in model.model_fields.values() if i.alias == key), None)


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
            info = _field(tp, step) if isinstance(step, str) else None
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


def value_at(data: Any, path: tuple) -> Any:
    """The raw value at ``path``, or None where the path leads nowhere."""
    for step in path:
        if isinstance(data, dict) and step in data:
            data = data[step]
        elif isinstance(data, list) and isinstance(step, int) and 0 <= step < len(data):
            data = data[step]
        else:
            return None
    return data


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


class SchemaErrors(LocatedDiagnostics):
    """Translates a :class:`ValidationError` against ``root`` into located diagnostics."""

    root: type[BaseModel]  # the model the document is checked against

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
            value = value_at(self.data, union_path)
            if isinstance(value, dict) != branch_is_model:
                return False
        return True

    def _schema_error(self, err: dict, located: _Located) -> None:
        path = located.path
        kind = err["type"]
        value = value_at(self.data, path)
        last = path[-1] if path else None
        if kind == "extra_forbidden":
            self._unknown_key(located)
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
            message = f"{kind_of(value)} is not allowed here; expected {expected}"
            if guess:
                message += f" (did you mean {guess!r}?)"
            self.error(path, message, f"use '{guess}'" if guess else f"use one of {expected}")
            return
        plain = _plain_error(kind, last, value)
        if plain is not None:
            self.error(path, *plain)
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
        message = f"{message[0].lower()}{message[1:]}; got {kind_of(value)}"
        self.error(path, message, "correct the value")

    def _unknown_key(self, located: _Located) -> None:
        """A key the model does not have: a close spelling, or the level where the key belongs."""
        path = located.path
        last = path[-1] if path else None
        allowed = [i.alias or n for n, i in located.model.model_fields.items()] if located.model else []
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

    def _type_error(self, path, kind: str, value) -> None:
        """A value of the wrong type: loop types are strict, nothing is coerced (``"5"`` is not 5)."""
        wanted, example = _TYPE_WANTED[kind]
        last = path[-1] if path else None
        key = last if isinstance(last, str) else None
        got = f"the string {kind_of(value)}" if isinstance(value, str) else kind_of(value)
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
        agent = value_at(self.data, agent_path)
        if isinstance(agent, dict):
            # errors inside {role, fresh} that are not about role/unknown keys (e.g. fresh: "yes")
            self.error(path, f"{kind_of(value)} is not valid here; `fresh` must be true or false", "use `fresh: true` or `fresh: false`")
            return
        guess = did_you_mean(agent, _AGENT_WORDS)
        message = f"agent {kind_of(agent)} is not inline, fresh, a role ({', '.join(ROLES)}) or a {{role, fresh}} mapping"
        if guess:
            message += f" (did you mean {guess!r}?)"
        self.error(agent_path, message, f"use `agent: {guess}`" if guess else "use e.g. `agent: executor`")


def _plain_error(kind: str, last: Any, value: Any) -> tuple[str, str] | None:
    """(message, fix) of the errors said the same way wherever they are, or None."""
    if kind in ("model_type", "dict_type"):
        return f"expected a mapping (indented `key: value` lines), got {kind_of(value)}", "write it as a mapping"
    if kind == "list_type":
        return f"expected a list, got {kind_of(value)}", "write it as a list (`- item` lines or `[a, b]`)"
    if kind == "too_short" and last == "stages":
        return "a loop needs at least one stage", "add a stage under `stages:`"
    if kind == "less_than_equal" and last == "timeout":
        return (f"{kind_of(value)} is more than a day; a timeout is at most 86400 seconds",
                "give the seconds the command may take, up to 86400")
    if kind == "string_too_short":
        return "must not be empty", "write a value"
    if kind == "string_pattern_mismatch":
        return (f"{kind_of(value)} is not a valid identifier",
                "use letters, digits, '-', '_' and '.', starting with a letter or digit")
    return None
