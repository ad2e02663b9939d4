"""Loop parameters: a value a run supplies (``odin run LOOP --param NAME=VALUE``) to a loop's ``{{NAME}}``.

A loop declares what it takes under ``params:`` (each with a ``default`` or none, and a ``description``) and
writes ``{{NAME}}`` in any of its texts: a gate's command, a ``measure.cmd``, a prompt. When a run starts,
:func:`apply_params` puts the given values (else the defaults) in, and the run keeps the loop with the
values in it (its snapshot): a resumed run measures with the same command. ``odin validate`` refuses a
``{{NAME}}`` the loop does not declare.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Iterator

from pydantic import BaseModel, ConfigDict, Field

from odin_magic.core.errors import ConfigError

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


class LoopParam(BaseModel):
    """One parameter a run may set (``--param NAME=VALUE``)."""

    model_config = ConfigDict(extra="forbid")

    default: str | None = Field(default=None, description="The value when the run gives none; none: the run must give one.")
    description: str = Field(default="", description="What the value is, for `--param` and readers.")


def did_you_mean(word: str, choices: list[str]) -> str | None:
    """The closest of ``choices`` (as :func:`odin_magic.loop.diagnostics.did_you_mean`, which needs the schema,
    which needs this module)."""
    matches = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return matches[0] if matches else None


def references(data: Any, path: tuple = ()) -> Iterator[tuple[tuple, str]]:
    """Every ``{{NAME}}`` in ``data`` (a loop's raw mapping) as ``(path, NAME)``, the ``params:`` section left out."""
    if isinstance(data, str):
        for match in PLACEHOLDER.finditer(data):
            yield path, match.group(1)
    elif isinstance(data, dict):
        for key, value in data.items():
            if not (path == () and key == "params"):
                yield from references(value, path + (key,))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from references(value, path + (i,))


def undeclared(data: Any) -> Iterator[tuple[tuple, str, str]]:
    """``(path, message, fix)`` for every ``{{NAME}}`` the loop's ``params:`` does not declare."""
    declared = data.get("params") if isinstance(data, dict) else None
    names = list(declared) if isinstance(declared, dict) else []
    for path, name in references(data):
        if name not in names:
            guess = did_you_mean(name, names)
            yield (path, f"{{{{{name}}}}} names no parameter of this loop" + (f" (did you mean {guess!r}?)" if guess else ""),
                   f"declare it: `params: {{{name}: {{default: ..., description: ...}}}}`")


def parse_assignments(items: list[str] | None) -> dict[str, str]:
    """``["NAME=VALUE", ...]`` (``--param``) as a mapping; a malformed one is a :class:`ConfigError`."""
    out: dict[str, str] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not re.match(NAME, name):
            raise ConfigError(f"--param takes NAME=VALUE, got {item!r}", hint="e.g. --param metric='python bench.py'")
        if not value.strip():
            raise ConfigError(f"--param {name}= needs a value", hint=f"e.g. --param {name}='...'; leave it out for the default")
        out[name] = value.strip()
    return out


def _fill(value: Any, values: dict[str, str]) -> Any:
    if isinstance(value, str):
        return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), value)
    if isinstance(value, list):
        return [_fill(v, values) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, values) for k, v in value.items()}
    return value


def resolve(loop_name: str, params: dict[str, LoopParam], given: dict[str, str]) -> dict[str, str]:
    """Each parameter's value: the given one, else its default; an unknown name or a missing value is refused."""
    for name in given:
        if name not in params:
            guess = did_you_mean(name, list(params))
            known = ", ".join(params) or "none"
            raise ConfigError(f"loop {loop_name!r} has no parameter {name!r}" + (f" (did you mean {guess!r}?)" if guess else ""),
                              hint=f"its parameters: {known}")
    values = {}
    for name, param in params.items():
        value = given.get(name, param.default)
        if value is None:
            raise ConfigError(f"loop {loop_name!r} needs the parameter {name!r} ({param.description or 'no description'})",
                              hint=f"odin run {loop_name} --param {name}=... --task ...")
        values[name] = value
    return values


def apply_params(loop: Any, given: dict[str, str] | None = None) -> Any:
    """``loop`` (a :class:`~odin_magic.loop.schema.Loop`) with its ``{{NAME}}`` filled in from ``given``, else the
    defaults; the loop itself when it has no parameters and none is given."""
    given = given or {}
    if not loop.params and not given:
        return loop
    values = resolve(loop.name, loop.params, given)
    data = loop.model_dump(mode="json", by_alias=True, exclude_unset=True)
    params = data.pop("params", None)
    filled = _fill(data, values)
    if params is not None:
        filled["params"] = params
    return type(loop).model_validate(filled)


__all__ = ["LoopParam", "PLACEHOLDER", "apply_params", "parse_assignments", "references", "resolve", "undeclared"]
