"""A scripted model's YAML file, read and checked before any stage runs (format: docs/scripted-model.md).

The file may use shorthands (a stage as a bare list of turns, one verdict instead of a list, a verdict
written bare instead of under ``json:``). :func:`load_script` rewrites it to the long form the models
below validate and remembers where each long-form path was written, so that every mistake is told

* at the line of the offending key (an unknown or misspelt key) or value (a wrong type),
* by the field path as written in the file (``stages.write[0].tool``, never an implied ``turns``),
* with a fix (a close spelling, the keys allowed there, the type wanted),

as one :class:`~odin_magic.core.errors.ConfigError`, never a traceback. Tool calls are checked against
the input schemas of the SDK's agent tools (the ones :mod:`odin_magic.workers.toolbox` offers a
stage), taken from the SDK's own tool objects: an argument the tool does not take (``old_str`` for
``old_string``), a missing one or one of the wrong type is an error when the script is loaded, not a
refused call at run time.
"""

from __future__ import annotations

import functools
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from odin_magic.core.errors import ConfigError
from odin_magic.loop.diagnostics import LocatedDiagnostics, did_you_mean, kind_of
from odin_magic.loop.yamlsource import YamlError, load_yaml
from odin_magic.workers.base import Verdict
from odin_magic.workers.record_journal import journal_of, settle

FORMAT_HINT = "see docs/scripted-model.md for the script format"
ANSWER_KEYS = ("json", "malformed", "refusal", "error")
MAX_SHOWN = 10  # problems listed in one error

# -- the models ------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ScriptedError(_Strict):
    status: int = Field(ge=400, le=599)
    message: str = "scripted error"
    retry_after_ms: int | None = Field(default=1, ge=0)


def _one_tool(item: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    if len(item) != 1:
        raise ValueError("each tool call is a mapping with one key, the tool name: {write: {file_path: ..., content: ...}}")
    return item


class Sent(_Strict):
    """What the request a recorded reply answered carried (:mod:`odin_magic.workers.exchange`): a replay
    whose request differs has departed from its recording."""

    digest: str
    sent: str = ""


class Turn(_Strict):
    """One model reply to a work request."""

    text: str | None = None
    tools: list[Annotated[dict[str, dict[str, Any]], AfterValidator(_one_tool)]] = Field(default_factory=list)
    stop_reason: str | None = None
    usage: dict[str, int] | None = None
    error: ScriptedError | None = None
    request: Sent | None = None


class Attempt(_Strict):
    turns: list[Turn] = Field(min_length=1)


class Answer(_Strict):
    """One reply to a structured request (a verdict, interview scores, ...)."""

    json_: dict[str, Any] | None = Field(default=None, alias="json")
    malformed: str | None = None
    refusal: str | None = None
    error: ScriptedError | None = None
    usage: dict[str, int] | None = None
    request: Sent | None = None

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _exactly_one(self) -> "Answer":
        given = [k for k in ("json_", "malformed", "refusal", "error") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of json, malformed, refusal, error")
        return self


class Recorded(_Strict):
    """A script written by ``ODIN_RECORD``: replayed strictly (a stage run more often, a turn more, or a
    request that differs from the recording's is a departure, never a repeat of the last reply)."""

    run: str | None = None
    loop: str | None = None
    at: str | None = None


class Script(_Strict):
    version: int = 1
    description: str | None = None
    recorded: Recorded | None = None
    model: str = "scripted"
    stages: dict[str, list[Attempt]] = Field(default_factory=dict)
    judge: dict[str, list[Answer]] = Field(default_factory=dict)
    default_verdict: Answer | None = None
    answers: dict[str, dict[str, list[Answer]]] = Field(default_factory=dict)
    interview: dict[str, Any] | None = Field(
        default=None, description="reserved for the interview module's scripted interview model; ignored here"
    )

    # a script given as a dict in Python may use the file's shorthands too
    @model_validator(mode="before")
    @classmethod
    def _long_form(cls, value: Any) -> Any:
        return normalise(value)[0] if isinstance(value, dict) else value


# -- shorthands ------------------------------------------------------------------------------


class _Moves:
    """Where each long-form path was written: ``(long prefix, written prefix)`` pairs, longest first."""

    def __init__(self) -> None:
        self.pairs: list[tuple[tuple, tuple]] = []

    def add(self, long: tuple, written: tuple) -> None:
        self.pairs.append((long, written))

    def written(self, loc: tuple) -> tuple:
        best = max((p for p in self.pairs if loc[: len(p[0])] == p[0]), key=lambda p: len(p[0]), default=None)
        return loc if best is None else best[1] + loc[len(best[0]):]


def _attempts(stage: str, spec: Any, moves: _Moves) -> Any:
    """A stage's spec as a list of attempts: ``{attempts: [...]}``, one ``{turns: [...]}``, a bare list
    of turns, or a list of attempts."""
    at = ("stages", stage)
    if isinstance(spec, dict) and "attempts" in spec:
        moves.add(at, at + ("attempts",))
        return spec["attempts"]
    if isinstance(spec, dict):  # one attempt
        moves.add(at + (0,), at)
        return [spec]
    if isinstance(spec, list) and not any(isinstance(t, dict) and "turns" in t for t in spec):
        moves.add(at + (0,), at)
        moves.add(at + (0, "turns"), at)
        return [{"turns": spec}] if spec else []
    return spec


def _answers(at: tuple, value: Any, moves: _Moves, *, single: bool = False) -> Any:
    """Answers of one stage (``single``: one answer, as ``default_verdict``), each in its long form."""
    items = [value] if single or not isinstance(value, list) else value
    if not single and not isinstance(value, list):
        moves.add(at + (0,), at)
    out = []
    for i, item in enumerate(items):
        long = at if single else at + (i,)
        written = at if single or not isinstance(value, list) else at + (i,)
        if isinstance(item, dict) and not set(ANSWER_KEYS) & set(item):  # a bare verdict
            moves.add(long + ("json",), written)
            item = {"json": item}
        out.append(item)
    return out[0] if single else out


def normalise(data: dict) -> tuple[dict, _Moves]:
    """The script in its long form, and where each of its paths was written."""
    moves = _Moves()
    data = dict(data)
    if isinstance(data.get("stages"), dict):
        data["stages"] = {s: _attempts(s, spec, moves) for s, spec in data["stages"].items()}
    if isinstance(data.get("judge"), dict):
        data["judge"] = {s: _answers(("judge", s), v, moves) for s, v in data["judge"].items()}
    if isinstance(data.get("default_verdict"), dict):
        data["default_verdict"] = _answers(("default_verdict",), data["default_verdict"], moves, single=True)
    if isinstance(data.get("answers"), dict):
        data["answers"] = {
            p: ({s: _answers(("answers", p, s), v, moves) for s, v in by_stage.items()} if isinstance(by_stage, dict) else by_stage)
            for p, by_stage in data["answers"].items()
        }
    return data, moves


# -- mistakes, located -----------------------------------------------------------------------


def _strip(tp: Any) -> Any:
    """``X | None`` and ``Annotated[X, ...]`` as ``X``."""
    while True:
        args = [a for a in get_args(tp) if a is not type(None)]
        if get_origin(tp) is Annotated or (get_origin(tp) in (Union, UnionType) and len(args) == 1):
            tp = args[0]
            continue
        return tp


def _model_at(loc: tuple, root: type[BaseModel] = Script) -> type[BaseModel] | None:
    """The model of the mapping that ``loc`` (a long-form path) ends in, or None."""
    tp: Any = root
    for step in loc:
        tp = _strip(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            field = next((f for n, f in tp.model_fields.items() if step in (n, f.alias)), None)
            tp = field.annotation if field is not None else None
        elif get_origin(tp) in (list, dict):
            tp = get_args(tp)[-1]
        else:
            return None
    tp = _strip(tp)
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None


def _keys(model: type[BaseModel]) -> list[str]:
    return [f.alias or n for n, f in model.model_fields.items()]


_MISSING_FIX = {
    "turns": "a stage is a list of turns (`- text: ...`), `{turns: [...]}` or `{attempts: [{turns: [...]}, ...]}`",
    "status": "add `status: 529` (an HTTP error status, 400 to 599)",
}
_WANTED = {
    "string_type": "text", "int_type": "a whole number", "int_parsing": "a whole number", "float_type": "a number",
    "float_parsing": "a number", "bool_type": "true or false", "bool_parsing": "true or false",
    "dict_type": "a mapping", "model_type": "a mapping", "list_type": "a list",
}


def _unknown_key(model: type[BaseModel] | None, key: Any) -> tuple[str, str]:
    allowed = _keys(model) if model is not None else []
    guess = did_you_mean(key, allowed)
    if guess:
        return f"unknown key {key!r} (did you mean {guess!r}?)", f"rename it to '{guess}'"
    if model is Turn and key in agent_tool_schemas():
        return (f"unknown key {key!r}: a tool call goes under `tools:`",
                f"write it as `tools: [{{{key}: {{...}}}}]`")
    if model is Attempt and key in Turn.model_fields:
        return (f"unknown key {key!r} in an attempt: an attempt is `{{turns: [...]}}`",
                f"put it in a turn: `- turns: [{{{key}: ...}}]`")
    if model is Turn and key in ("turns", "attempts"):
        return f"unknown key {key!r} in a turn", _MISSING_FIX["turns"]
    return f"unknown key {key!r}", f"remove it; the keys allowed here are: {', '.join(allowed)}"


def _schema_problem(diags: LocatedDiagnostics, err: dict) -> None:
    """One pydantic error at the key or value it is about."""
    loc = where = tuple(err["loc"])
    kind, value = err["type"], err.get("input")
    model = _model_at(loc[:-1]) if loc else None
    if kind == "extra_forbidden":
        message, fix = _unknown_key(model, loc[-1])
        diags.error(where, message, fix, at="key")
    elif kind == "missing":
        key = loc[-1]
        diags.error(where, f"missing required key {key!r}", _MISSING_FIX.get(key, f"add `{key}:`"), at="parent")
    elif kind in _WANTED:
        wanted = _WANTED[kind]
        fix = "a turn is a mapping such as `{text: ...}` or `{tools: [...]}`" if _model_at(loc) is Turn else f"write {wanted}"
        if isinstance(value, str) and kind in ("int_parsing", "float_parsing", "bool_parsing", "int_type", "bool_type"):
            fix = "write it without quotes" if kind.endswith("_type") else fix
        diags.error(where, f"expected {wanted}, got {kind_of(value)}", fix)
    elif kind == "too_short" and loc[-1] == "turns":
        diags.error(where, "an attempt needs at least one turn", "add a turn, e.g. `- text: done`")
    elif kind == "value_error":
        diags.error(where, str(err.get("ctx", {}).get("error", err["msg"])), "correct the value as described")
    else:
        message = err["msg"][0].lower() + err["msg"][1:]
        diags.error(where, f"{message}; got {kind_of(value)}", "correct the value")


def _verdict_problems(diags: LocatedDiagnostics, script: Script) -> None:
    """Scripted verdicts that are not valid Verdicts (``malformed:`` scripts a bad answer on purpose)."""
    entries = [(("judge", stage, i), a) for stage, answers in script.judge.items() for i, a in enumerate(answers)]
    if script.default_verdict is not None:
        entries.append((("default_verdict",), script.default_verdict))
    fix = "a verdict needs passed: true|false (script a bad answer with `malformed:`)"
    for where, answer in entries:
        if answer.json_ is None:
            continue
        for key in answer.json_:
            if key not in Verdict.model_fields:  # the judge would drop it: a typo such as `reson`
                message, key_fix = _unknown_key(Verdict, key)
                diags.error(where + ("json", key), f"not a verdict: {message}", key_fix, at="key")
        try:
            Verdict.model_validate(answer.json_)
        except ValidationError as exc:
            for err in exc.errors(include_url=False):
                loc = where + ("json",) + tuple(err["loc"])
                message = f"not a verdict: {err['msg'][0].lower()}{err['msg'][1:]}"
                if err["type"] != "missing":
                    message += f"; got {kind_of(err.get('input'))}"
                diags.error(loc, message, fix, at="parent" if err["type"] == "missing" else "value")


# -- tool calls against the SDK's tool schemas -------------------------------------------------


@functools.lru_cache(maxsize=1)
def agent_tool_schemas() -> dict[str, dict[str, Any]]:
    """The input schema of every tool a stage is offered, from the SDK's own tool objects (the toolset
    the toolbox builds its tools from), so that a new SDK release cannot drift from the check."""
    from odin_magic.workers.toolbox import AgentToolContext, beta_agent_toolset_20260401

    tools = beta_agent_toolset_20260401(AgentToolContext(workdir=str(Path.cwd())))
    return {tool.name: dict(tool.input_schema) for tool in tools}


_JSON_TYPES: dict[str, tuple[str, Any]] = {
    "string": ("text", lambda v: isinstance(v, str)),
    "integer": ("a whole number", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "number": ("a number", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)),
    "boolean": ("true or false", lambda v: isinstance(v, bool)),
    "null": ("null", lambda v: v is None),
    "object": ("a mapping", lambda v: isinstance(v, dict)),
}


def _branches(schema: dict) -> list[dict]:
    if "anyOf" in schema:
        return [b for s in schema["anyOf"] for b in _branches(s)]
    kinds = schema.get("type")
    if isinstance(kinds, list):
        return [{**schema, "type": k} for k in kinds]
    return [schema]


def _fits(value: Any, schema: dict) -> bool:
    for branch in _branches(schema):
        kind = branch.get("type")
        if kind is None or (kind in _JSON_TYPES and _JSON_TYPES[kind][1](value)):
            return True
        if kind == "array" and isinstance(value, list) and all(_fits(v, branch.get("items", {})) for v in value):
            return True
    return False


def _wanted(schema: dict) -> str:
    names = []
    for branch in _branches(schema):
        kind = branch.get("type")
        if kind == "array":
            names.append(f"a list of {_wanted(branch.get('items', {}))}" if branch.get("items") else "a list")
        elif kind != "null":
            names.append(_JSON_TYPES.get(kind, (str(kind), None))[0])
    return " or ".join(names) or "any value"


def _tool_call_problems(diags: LocatedDiagnostics, where: tuple, name: str, args: dict) -> None:
    """One tool call (``where``: its long-form path) against the input schema of the tool it names."""
    schemas = agent_tool_schemas()
    if name not in schemas:
        guess = did_you_mean(name, schemas)
        message = f"there is no tool named {name!r}" + (f" (did you mean {guess!r}?)" if guess else "")
        diags.error(where + (name,), message, f"use one of the tools: {', '.join(schemas)}", at="key")
        return
    properties = schemas[name].get("properties", {})
    guessed = set()
    for key, value in args.items():
        if key not in properties:
            guess = did_you_mean(key, properties)
            guessed.add(guess)
            message = f"the {name} tool takes no argument {key!r}" + (f" (did you mean {guess!r}?)" if guess else "")
            fix = f"rename it to '{guess}'" if guess else f"the {name} tool's arguments are: {', '.join(properties)}"
            diags.error(where + (name, key), message, fix, at="key")
        elif not _fits(value, properties[key]):
            wanted = _wanted(properties[key])
            quoted = isinstance(value, str) and "text" not in wanted
            diags.error(where + (name, key), f"the {name} tool's {key!r} is {wanted}, not {kind_of(value)}"
                        + (" (a quoted value is text)" if quoted else ""),
                        f"write {wanted}" + (" without quotes" if quoted else ""))
    for key in schemas[name].get("required", []):
        if key not in args and key not in guessed:  # a misspelt key already says so
            diags.error(where + (name,), f"the {name} tool needs the argument {key!r}", f"add `{key}: ...`", at="key")


def _tool_problems(diags: LocatedDiagnostics, script: Script) -> None:
    for stage, attempts in script.stages.items():
        for i, attempt in enumerate(attempts):
            for j, turn in enumerate(attempt.turns):
                for k, item in enumerate(turn.tools):
                    (name, args), = item.items()
                    _tool_call_problems(diags, ("stages", stage, i, "turns", j, "tools", k), name, args or {})


# -- loading -----------------------------------------------------------------------------------


class _WrittenDiagnostics(LocatedDiagnostics):
    """Diagnostics given long-form paths, told at (and by) the paths as written."""

    def __init__(self, source: str, doc, moves: _Moves):
        super().__init__(source, doc)
        self.moves = moves

    def _emit(self, severity, path, message, fix=None, *, at="value"):
        super()._emit(severity, self.moves.written(tuple(path)), message, fix, at=at)


def _fold_journal(path: Path) -> None:
    """A recording's leftover journal (its recorder stopped before rendering it: a crash) folded into the file
    first (:func:`~odin_magic.workers.record_journal.settle`), so that the replay has every recorded reply."""
    try:
        settle(path)
    except OSError as exc:
        raise ConfigError(f"scripted model: cannot fold the recording's journal {journal_of(path)} into {path}: {exc}",
                          hint="make the recording writable, then run again") from None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"scripted model (ODIN_SCRIPT): no file {path}",
                          hint="give the script's absolute path, or one relative to the project") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"scripted model: cannot read {path}: {exc}", hint="check ODIN_SCRIPT") from None


def _as_error(diags: LocatedDiagnostics) -> ConfigError:
    """Every problem found, as one error: the only one with its fix as the hint, else a list."""
    unique = sorted(dict.fromkeys(diags.errors), key=lambda d: (d.line, d.column))
    if len(unique) == 1:
        d = unique[0]
        return ConfigError(f"{d.file}:{d.line}:{d.column}: {d.field}: {d.message}", hint=d.fix)
    shown = [str(d) for d in unique[:MAX_SHOWN]]
    if len(unique) > MAX_SHOWN:
        shown.append(f"(and {len(unique) - MAX_SHOWN} more)")
    return ConfigError(f"{diags.source}: {len(unique)} problems in the script\n" + "\n".join(shown), hint=FORMAT_HINT)


def load_script(path: Path) -> Script:
    """Load and check a script; every mistake is told in one :class:`ConfigError` naming the file, the
    line of the key (or value), the field as written and a fix."""
    path = Path(path)
    _fold_journal(path)
    text = _read(path)
    try:
        doc = load_yaml(text)
    except YamlError as exc:
        raise ConfigError(f"{path}:{exc.line}:{exc.column}: {exc.message}", hint=exc.hint or FORMAT_HINT) from None
    if not isinstance(doc.data, dict):
        raise ConfigError(f"{path}:1:1: a script is a mapping with 'stages' (and usually 'judge')", hint=FORMAT_HINT)
    data, moves = normalise(doc.data)
    diags = _WrittenDiagnostics(str(path), doc, moves)
    try:
        script = Script.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            _schema_problem(diags, err)
        raise _as_error(diags) from None
    _verdict_problems(diags, script)
    _tool_problems(diags, script)
    if diags.errors:
        raise _as_error(diags)
    return script
