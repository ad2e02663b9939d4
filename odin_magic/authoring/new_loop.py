"""Authoring a loop by answering seed 000's seven questions (``odin new`` / ``%odin new``).

The answers are data (:class:`Answers`, pydantic): they come from a YAML file
(``odin new NAME --answers FILE``), from terminal prompts, from the notebook
form, or are proposed by a model from a one-line description of the work
(:func:`propose_answers`, one structured ``messages.parse`` call; offline the
scripted model answers it). :func:`build_loop` turns answers into loop YAML;
the loop validator checks it and each of its diagnostics is traced back to the
question that caused it (:func:`question_of`), so a front end re-asks that
question. :func:`write_loop` writes ``.odin-loop/loops/NAME.yaml`` only once
the loop validates, and never over an existing file without ``force``.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from odin_magic.core.errors import OdinError, UsageError
from odin_magic.loop.schema import DEFAULT_CHALLENGES, AgentName, GateMode, StageId, is_plain_name
from odin_magic.core.atomic import write_atomic
from odin_magic.loop.validation import Diagnostic, ValidationReport, validate_text
from odin_magic.loop.yamlsource import YamlDocument, YamlError, load_yaml

INTERVIEW_STAGE = "interview"


@dataclass(frozen=True)
class Question:
    number: int
    key: str  # the answers field that holds its answer
    text: str


#: Seed 000's authoring interview, in its order.
QUESTIONS: tuple[Question, ...] = (
    Question(1, "kind", "What kind of work is this loop for? (general coding, or a specific domain)"),
    Question(2, "stages", "What are the stages, in order? For each: its id and its goal."),
    Question(3, "gates", "For each stage, what is the gate: the testable condition to advance (check), "
             "is it ai (auto) or ai+human (needs your approval), and which commands (tests, lint) decide it?"),
    Question(4, "on_fail", "When a stage fails its gate, where should it loop back to (on_fail)? "
             "(default: retry the stage itself)"),
    Question(5, "max_iterations", "What is the global max_iterations safety cap on loopbacks?"),
    Question(6, "roles", "What role should each stage run as: explore, planner, executor, critic, reviewer, "
             "or inline? (independent review/audit/QA defaults to reviewer, an adversarial harness check to critic)"),
    Question(7, "interview", "Does the loop open with a deep requirements interview? If so: its ambiguity "
             "threshold (default 0.15), challenges (default contrarian@4, simplifier@6, ontologist@8) and "
             "auto_assist (default true)."),
)
QUESTION_BY_KEY = {q.key: q for q in QUESTIONS}
DEFAULT_MAX_ITERATIONS = 5  # what the prompts and the form offer, and what an answers file without it gets


# -- the answers ------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StageAnswer(_Strict):
    id: StageId = Field(description="Stage id: letters, digits, '-', '_', '.'.")
    goal: str = Field(min_length=1, description="What the stage is for, in one line.")
    produces: list[str] | None = Field(default=None, description="Artifacts it writes (default: <id>.md).")
    consumes: list[str] | None = Field(default=None, description="Artifacts it reads (default: the previous stage's).")


class GateAnswer(_Strict):
    stage: str = Field(description="The stage id this gate belongs to.")
    mode: GateMode = Field(default="ai", description="ai (the judge decides) or ai+human (then a person approves).")
    check: str = Field(min_length=1, description="The testable condition the stage must meet to advance.")
    run: list[str] = Field(default_factory=list, description="Shell commands that must exit 0 (tests, lint).")


class LoopbackAnswer(_Strict):
    stage: str = Field(description="The stage whose gate fails.")
    to: str = Field(description="The stage id the run loops back to.")


class RoleAnswer(_Strict):
    stage: str = Field(description="The stage id.")
    role: AgentName = Field(description="inline, fresh, explore, planner, executor, critic or reviewer.")


class InterviewAnswer(_Strict):
    enabled: bool = Field(default=False, description="Open the loop with a deep requirements interview.")
    threshold: float = Field(default=0.15, gt=0, lt=1, description="Ambiguity at or below which it may stop.")
    challenges: list[str] = Field(default_factory=lambda: list(DEFAULT_CHALLENGES),
                                  description="Challenge rounds, each contrarian|simplifier|ontologist@<round>.")
    auto_assist: bool = Field(default=True, description="Offer researched candidate answers.")


def _pairs(value: Any, inner: str) -> Any:
    """``{stage: x}`` (the short form of a per-stage answer) -> ``[{stage, <inner>: x}]``; a mapping value is merged."""
    if not isinstance(value, dict):
        return value
    out = []
    for stage, v in value.items():
        out.append({"stage": stage, **v} if isinstance(v, dict) else {"stage": stage, inner: v})
    return out


class Answers(_Strict):
    """The answers to the seven questions; each field is one question's answer (see :data:`QUESTIONS`)."""

    kind: str = Field(min_length=1, description="Question 1: the kind of work (general coding, or a domain).")
    description: str | None = Field(default=None, description="The loop's description (default: from kind).")
    stages: list[StageAnswer] = Field(min_length=1, description="Question 2: the stages in order, each id and goal.")
    gates: list[GateAnswer] = Field(default_factory=list, description="Question 3: one gate per stage.")
    on_fail: list[LoopbackAnswer] = Field(default_factory=list, description="Question 4: loopbacks on gate failure.")
    max_iterations: int = Field(default=DEFAULT_MAX_ITERATIONS, ge=1,
                                description="Question 5: the global cap on loopbacks in one run (default 5, as the "
                                "prompts offer).")
    roles: list[RoleAnswer] = Field(default_factory=list, description="Question 6: roles (default: inferred).")
    interview: InterviewAnswer = Field(default_factory=InterviewAnswer,
                                       description="Question 7: whether the loop opens with a deep interview.")

    @field_validator("stages", mode="before")
    @classmethod
    def _stage_pairs(cls, value: Any) -> Any:
        if isinstance(value, dict):  # {id: goal}
            return [{"id": k, **v} if isinstance(v, dict) else {"id": k, "goal": v} for k, v in value.items()]
        return value

    @field_validator("gates", mode="before")
    @classmethod
    def _gate_pairs(cls, value: Any) -> Any:
        return _pairs(value, "check")

    @field_validator("on_fail", mode="before")
    @classmethod
    def _loopback_pairs(cls, value: Any) -> Any:
        return _pairs(value, "to")

    @field_validator("roles", mode="before")
    @classmethod
    def _role_pairs(cls, value: Any) -> Any:
        return _pairs(value, "role")

    @field_validator("interview", mode="before")
    @classmethod
    def _interview_flag(cls, value: Any) -> Any:
        if isinstance(value, bool):
            return {"enabled": value}
        if isinstance(value, dict) and "enabled" not in value:
            return {"enabled": True, **value}
        return value

    @model_validator(mode="after")
    def _stages_named(self) -> "Answers":
        ids = [s.id for s in self.stages]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"stage id(s) {dupes} are given twice")
        return self

    def stage_ids(self) -> list[str]:
        return [s.id for s in self.stages]


# -- problems, named by question --------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the answers: which question to re-ask, and why."""

    question: Question
    message: str
    line: int | None = None
    column: int | None = None
    source: str | None = None

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}:{self.column}: " if self.source and self.line else ""
        return f"{where}question {self.question.number} ({self.question.key}): {self.message}"


class AnswersInvalid(OdinError):
    """The answers do not make a valid loop; ``problems`` name the questions to re-ask."""

    def __init__(self, problems: list[Problem], report: ValidationReport | None = None):
        lines = "\n".join(f"  {p}" for p in problems)
        first = problems[0].question
        super().__init__(f"the answers do not make a valid loop ({len(problems)} problem(s)):\n{lines}",
                         hint=f"fix the answer to question {first.number} ({first.key}): {first.text}")
        self.problems = problems
        self.report = report


def _question_for_loc(loc: tuple) -> Question:
    key = str(loc[0]) if loc else "stages"
    if key == "description":
        key = "kind"
    return QUESTION_BY_KEY.get(key, QUESTION_BY_KEY["stages"])


def parse_answers(data: Any, source: str = "answers", doc: YamlDocument | None = None) -> Answers:
    """Validate answers given as data; every problem of the file at once, each naming its question (and file
    position)."""
    if not isinstance(data, dict):
        raise AnswersInvalid([Problem(QUESTIONS[0], "the answers must be a mapping of the seven questions' keys "
                                      f"({', '.join(q.key for q in QUESTIONS)})", 1, 1, source)])
    try:
        answers = Answers.model_validate(data)
    except ValidationError as exc:
        problems = [_problem(err, data, source, doc) for err in exc.errors(include_url=False)]
        partial = _valid_part(data, {str(err["loc"][0]) for err in exc.errors() if err["loc"]})
        problems += _cross_check(partial, source) if partial is not None else []
        raise AnswersInvalid(problems) from None
    problems = _cross_check(answers, source)
    if problems:
        raise AnswersInvalid(problems)
    return answers


def _problem(err: dict, data: dict, source: str, doc: YamlDocument | None) -> Problem:
    """One validation error as a problem, worded as the loop validator words it."""
    loc = tuple(err["loc"])
    line, column = doc.position(_as_written(data, loc)) if doc is not None else (None, None)
    field = ".".join(str(p) for p in loc)
    question = _question_for_loc(loc)
    if err["type"] == "missing" and len(loc) == 1:
        return Problem(question, f"no answer: add `{loc[0]}:` ({question.text})", 1, 1, source)
    if err["type"] == "extra_forbidden" and len(loc) == 1:
        message = f"unknown key {loc[0]!r}: the answers' keys are {', '.join(q.key for q in QUESTIONS)}"
    elif err["type"] == "string_too_short":
        message = f"{field}: must not be empty -- fix: write a value"
    else:
        message = f"{field}: {err['msg']}"
    return Problem(question, message, line, column, source)


def _valid_part(data: dict, bad: set[str]) -> Answers | None:
    """The answers without their invalid questions (a stand-in for a required one), to cross-check the rest;
    None when the stages themselves are not valid (nothing to check against)."""
    if "stages" in bad:
        return None
    rest = {k: v for k, v in data.items() if k not in bad and k in Answers.model_fields}
    rest.setdefault("kind", "general")
    try:
        return Answers.model_validate(rest)
    except ValidationError:
        return None


def _as_written(data: dict, loc: tuple) -> tuple:
    """An error location in the list form, as a path in the file (which may use the ``{stage: ...}`` short form)."""
    if len(loc) >= 2 and isinstance(data.get(loc[0]), dict) and isinstance(loc[1], int):
        keys = list(data[loc[0]])
        if loc[1] < len(keys):
            rest = loc[2:] if isinstance(data[loc[0]][keys[loc[1]]], dict) else ()
            return (loc[0], keys[loc[1]], *rest)
    return loc


def _cross_check(answers: Answers, source: str) -> list[Problem]:
    ids = answers.stage_ids()
    problems = []

    def unknown(q: str, stage: str, what: str) -> None:
        problems.append(Problem(QUESTION_BY_KEY[q], f"{what} names no stage {stage!r}; the stages are "
                                f"{', '.join(ids)}", source=source))

    gated = [g.stage for g in answers.gates]
    for g in answers.gates:
        if g.stage not in ids:
            unknown("gates", g.stage, "a gate")
    for stage in ids:
        if stage not in gated:
            problems.append(Problem(QUESTION_BY_KEY["gates"], f"stage {stage!r} has no gate: give its check "
                                    "(and mode ai or ai+human)", source=source))
    for lb in answers.on_fail:
        if lb.stage not in ids:
            unknown("on_fail", lb.stage, "a loopback")
        if lb.to not in ids:
            unknown("on_fail", lb.to, f"the loopback of {lb.stage!r}")
    for r in answers.roles:
        if r.stage not in ids:
            unknown("roles", r.stage, "a role")
    return problems


def load_answers(path: Path | str) -> Answers:
    """Answers from a YAML file; problems name the file, line and question."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such answers file", hint="give the path of a YAML file with the seven answers "
                         "(see docs/authoring.md)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}", hint="check the path") from None
    try:
        doc = load_yaml(text)
    except YamlError as exc:
        raise UsageError(f"{path}:{exc.line}:{exc.column}: {exc.message}", hint=exc.hint) from None
    return parse_answers(doc.data, str(path), doc)


# -- defaults ------------------------------------------------------------------------------------

_REVIEW_WORDS = re.compile(r"review|audit|\bqa\b|quality|verif|sign.?off|inspect", re.I)
_CRITIC_WORDS = re.compile(r"harness|adversar|attack|critic|red.?team|break", re.I)


def default_role(stage: StageAnswer) -> str:
    """Seed 000: independent review/audit/QA -> reviewer; an adversarial harness check -> critic; else inline."""
    words = f"{stage.id} {stage.goal}"
    if _CRITIC_WORDS.search(words):
        return "critic"
    if _REVIEW_WORDS.search(words):
        return "reviewer"
    return "inline"


# -- answers -> loop ----------------------------------------------------------------------------


def loop_data(name: str, answers: Answers) -> dict[str, Any]:
    """The loop (as plain data) the answers describe."""
    gating = _Gating({g.stage: g for g in answers.gates}, {lb.stage: lb.to for lb in answers.on_fail})
    roles = {r.stage: r.role for r in answers.roles}
    iv = answers.interview
    stages: list[dict[str, Any]] = []
    previous: list[str] = []
    user_stages = list(answers.stages)
    if iv.enabled:
        interview = {"mode": "deep", "threshold": iv.threshold, "challenges": list(iv.challenges),
                     "auto_assist": iv.auto_assist}
        if user_stages[0].id == INTERVIEW_STAGE:  # the user's own first stage is the interview
            first = user_stages.pop(0)
            produces = list(dict.fromkeys([*(first.produces or []), "spec.md", "interview-log.md"]))
            stages.append(_stage(first, produces, [], "inline", gating, interview))
        else:
            stages.append({
                "id": INTERVIEW_STAGE, "goal": "Pin down the requirements by a deep interview.",
                "agent": "inline", "produces": ["spec.md", "interview-log.md"], "interview": interview,
                "gate": {"mode": "ai+human",
                         "check": "interview-log.md shows the ambiguity at or below the threshold, "
                                  "with every component covered"},
            })
        previous = ["spec.md"]
    for s in user_stages:
        produces = list(s.produces) if s.produces is not None else [f"{s.id}.md"]
        consumes = list(s.consumes) if s.consumes is not None else list(previous)
        role = roles.get(s.id) or default_role(s)
        stages.append(_stage(s, produces, consumes, role, gating))
        previous = produces
    description = answers.description or f"A loop for {answers.kind.strip()}, authored with odin new."
    return {"name": name, "version": 1, "description": description, "max_iterations": answers.max_iterations,
            "stages": stages}


@dataclass(frozen=True)
class _Gating:
    """The answered gates and loopbacks, by stage id."""

    gates: dict[str, GateAnswer]
    loopbacks: dict[str, str]

    def gate_for(self, stage_id: str) -> dict[str, Any]:
        """A stage's ``gate:`` (mode ``ai`` and an empty check when none was answered)."""
        gate, on_fail = self.gates.get(stage_id), self.loopbacks.get(stage_id)
        g: dict[str, Any] = {"mode": gate.mode if gate else "ai", "check": gate.check if gate else ""}
        if on_fail and on_fail != stage_id:
            g["on_fail"] = on_fail
        if gate and gate.run:
            g["run"] = list(gate.run)
        return g


def _stage(s: StageAnswer, produces: list[str], consumes: list[str], role: str, gating: _Gating,
           interview: dict | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"id": s.id, "goal": s.goal, "agent": role}
    if consumes:
        out["consumes"] = consumes
    out["produces"] = produces
    if interview is not None:
        out["interview"] = interview
    out["gate"] = gating.gate_for(s.id)
    return out


HEADER = "# Written by `odin new` from the answers to its seven questions; edit freely.\n"


def loop_yaml(name: str, answers: Answers) -> str:
    return HEADER + yaml.safe_dump(loop_data(name, answers), sort_keys=False, allow_unicode=True, width=100)


def question_of(diagnostic: Diagnostic) -> Question:
    """The question whose answer a loop diagnostic goes back to (the validator's message drives the re-ask)."""
    f = diagnostic.field
    if f.startswith("max_iterations"):
        return QUESTION_BY_KEY["max_iterations"]
    if ".interview" in f:
        return QUESTION_BY_KEY["interview"]
    if ".gate.on_fail" in f:
        return QUESTION_BY_KEY["on_fail"]
    if ".gate" in f:
        return QUESTION_BY_KEY["gates"]
    if ".agent" in f or ".consumes" in f:  # a fresh role needs consumes: the role choice caused it
        return QUESTION_BY_KEY["roles"]
    if f.startswith("description"):
        return QUESTION_BY_KEY["kind"]
    return QUESTION_BY_KEY["stages"]


def check_name(name: str) -> str:
    if not is_plain_name(name) or len(name) > 64:  # fullmatch: not even a trailing newline
        raise UsageError(f"{name!r} is not a loop name",
                         hint="a loop name is letters, digits, '-', '_' or '.', e.g. doc-review")
    return name


@dataclass
class Draft:
    """A loop built from answers, validated (not yet written)."""

    name: str
    text: str
    report: ValidationReport

    @property
    def problems(self) -> list[Problem]:
        return [Problem(question_of(d), f"{d.field}: {d.message}" + (f" -- fix: {d.fix}" if d.fix else ""),
                        d.line, d.column, d.file) for d in self.report.errors]


def draft(name: str, answers: Answers) -> Draft:
    check_name(name)
    text = loop_yaml(name, answers)
    return Draft(name, text, validate_text(text, f"{name}.yaml (from the answers)", expected_name=name))


def loop_path(project_dir: Path, name: str) -> Path:
    """``.odin-loop/loops/NAME.yaml`` inside the project; refused if it resolves outside (a symlink)."""
    check_name(name)
    project = Path(project_dir).resolve()
    target = project / ".odin-loop" / "loops" / f"{name}.yaml"
    real = target.resolve()
    if not real.is_relative_to(project):
        raise UsageError(f"{target} resolves to {real}, outside the project", hint="remove the symlink, or pick another name")
    return target


def write_loop(project_dir: Path, name: str, answers: Answers, force: bool = False) -> tuple[Path, str]:
    """Validate the loop the answers make and write it; refuses an invalid loop and an existing file without ``force``."""
    target = loop_path(project_dir, name)
    d = draft(name, answers)
    if not d.report.ok:
        raise AnswersInvalid(d.problems, d.report)
    if target.exists() and not force:
        raise OdinError(f"{target} already exists; odin new never overwrites a loop",
                        hint="pick another name, or pass --force to replace it")
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, d.text)
    return target, d.text


# -- model-proposed answers ----------------------------------------------------------------------

PROPOSE_RULES = """You help author a development-workflow loop for odin-magic. A loop is a sequence of stages; \
each stage has an id, a goal, a gate (a testable check; mode ai, or ai+human when a person should approve; \
shell commands in `run` when tests or lint can decide), an optional on_fail loopback to an earlier stage, and a \
role (explore, planner, executor, critic, reviewer, or inline). Independent review/audit/QA runs as reviewer, an \
adversarial harness check as critic. Propose concrete answers to the seven authoring questions for the work \
described. Keep it small: 2 to 6 stages. Answer only with the requested JSON."""


def propose_answers(description: str, settings, client_factory: Callable[[], Any] | None = None) -> Answers:
    """A model's proposed answers for a one-line ``description`` (structured output); the user accepts or edits each."""
    from odin_magic.workers.client import run_coroutine

    description = (description or "").strip()
    if not description:
        raise UsageError("a proposal needs a one-line description of the work", hint='--describe "..."')
    return run_coroutine(lambda: _apropose(description, settings, client_factory))


async def _apropose(description: str, settings, client_factory) -> Answers:
    from odin_magic.workers.prompts import system_blocks
    from odin_magic.workers.structured import Question, ask_twice

    questions = "\n".join(f"{q.number}. ({q.key}) {q.text}" for q in QUESTIONS)
    return await ask_twice(settings, client_factory, Answers, Question(
        system=system_blocks(PROPOSE_RULES), content=f"The work: {description}\n\nThe questions:\n{questions}",
        headers={"x-odin-stage": "new", "x-odin-purpose": "author", "x-odin-call": uuid.uuid4().hex},
        what="proposing the loop's answers", hint="answer the questions yourself (--answers FILE), or retry"))


def model_configured(settings) -> bool:
    """Whether a model can be asked: a scripted model, or an API credential."""
    if settings.script is not None:
        return True
    from odin_magic.workers.client import require_credentials
    from odin_magic.core.errors import ConfigError

    try:
        require_credentials(settings)
    except ConfigError:
        return False
    return True


def proposal_client_factory(settings, project_dir: Path, keep_position: bool = False):
    """The client factory for proposals: the offline scripted model when ``settings.script`` is set.
    ``keep_position``: its replay position kept under the project (in the dir a request's ``x-odin-run-dir``
    names), so that a proposal made by another process takes the script's next answer."""
    if settings.script is None:
        return None
    from odin_magic.workers.factory import locate_script
    from odin_magic.workers.scripted import ScriptedModel

    model = ScriptedModel.from_file(locate_script(settings.script, project_dir),
                                    project_dir=Path(project_dir) if keep_position else None)
    return model.client_factory(max_retries=settings.max_retries)


def answers_yaml(answers: Answers) -> str:
    """Answers as a YAML answers file (what ``--answers`` reads)."""
    return yaml.safe_dump(answers.model_dump(mode="json", exclude_none=True), sort_keys=False, allow_unicode=True,
                          width=100)


def model_for_refine(project, settings=None):
    """The settings and client factory for model-written refine proposals; no model configured is a ConfigError."""
    from odin_magic.workers.config import Settings
    from odin_magic.core.errors import ConfigError

    settings = settings or Settings.from_env()
    if not model_configured(settings):
        raise ConfigError("--model needs a configured model", hint="set ANTHROPIC_API_KEY, or ODIN_SCRIPT to run offline")
    return settings, proposal_client_factory(settings, project)
