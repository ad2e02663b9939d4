"""The loop schema: the single source of truth for what a loop YAML may say.

A loop is data. These pydantic models describe every field a loop file may
carry; cross-field rules (unique ids, on_fail targets, reachability, ...) live
in :mod:`odin_magic.loop.validation`, which turns both kinds of problem into
diagnostics that point at the file, line and field.
"""

from __future__ import annotations

import functools
import re
from typing import Annotated, Any, Literal, Union, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from odin_magic.loop.params import NAME as PARAM_NAME, LoopParam

Role = Literal["explore", "planner", "executor", "critic", "reviewer"]
ROLES: tuple[str, ...] = get_args(Role)

#: Whether a role runs in a fresh context unless the stage says otherwise
#: (seed 000, "Execution roles").
ROLE_DEFAULT_FRESH: dict[str, bool] = {
    "explore": True,
    "planner": False,
    "executor": False,
    "critic": True,
    "reviewer": True,
}

GateMode = Literal["ai", "ai+human", "human"]
AgentName = Literal["inline", "fresh", "explore", "planner", "executor", "critic", "reviewer"]

CHALLENGE_RE = re.compile(r"^(contrarian|simplifier|ontologist)@([1-9][0-9]*)$")
DEFAULT_CHALLENGES = ["contrarian@4", "simplifier@6", "ontologist@8"]
INTERVIEW_DIMENSIONS = ("goal", "constraints", "criteria", "context")

#: The name rule of loops (and of run ids, which are made of them): letters, digits, ``-``, ``_``, ``.``,
#: starting with a letter or digit. A name is never a path: no ``/``, ``\\``, ``..``, nor an absolute path.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def is_plain_name(name: object) -> bool:
    """True for a plain name (see :data:`NAME_RE`), one that can never reach outside its directory."""
    return isinstance(name, str) and bool(NAME_RE.fullmatch(name)) and ".." not in name


class _Strict(BaseModel):
    """Unknown keys are errors: a typo such as ``on_fial`` is never ignored.

    Types are strict: nothing is coerced. ``max_iterations: "5"`` or ``true``, ``fresh: "yes"``,
    ``threshold: "0.2"`` are errors that name the field and the type it wants (a whole number may
    still stand for a float: ``timeout: 5``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty (it is only whitespace)")
    return value


#: Text that says something: not empty, not only whitespace.
NonBlank = Annotated[str, Field(min_length=1), AfterValidator(_not_blank)]


class AgentRef(_Strict):
    """The object form of ``agent``: a role with an explicit context."""

    role: Role = Field(description="The role persona that runs the stage.")
    fresh: bool | None = Field(
        default=None,
        description="Run in a fresh context (true) or inline (false); default: the role's own default.",
    )


AgentSpec = Union[AgentName, AgentRef]


class ResolvedAgent(BaseModel):
    """Who runs a stage, after defaults are applied."""

    model_config = ConfigDict(frozen=True)

    role: Role | None = None
    fresh: bool = False

    @property
    def label(self) -> str:
        """What history records in ``agent``: the role, else ``fresh``/``inline``."""
        if self.role:
            return self.role
        return "fresh" if self.fresh else "inline"


@functools.lru_cache(maxsize=256)
def resolve_agent(spec: AgentSpec | None) -> ResolvedAgent:
    """Who runs a stage whose ``agent`` is ``spec``; kept per spec (both frozen: a stage asks it at every step)."""
    if spec is None or spec == "inline":
        return ResolvedAgent(role=None, fresh=False)
    if spec == "fresh":
        return ResolvedAgent(role=None, fresh=True)
    if isinstance(spec, AgentRef):
        fresh = ROLE_DEFAULT_FRESH[spec.role] if spec.fresh is None else spec.fresh
        return ResolvedAgent(role=spec.role, fresh=fresh)
    return ResolvedAgent(role=spec, fresh=ROLE_DEFAULT_FRESH[spec])


#: The longest timeout a command may have: a day (a bigger number, ``.inf`` or ``1e12`` is a mistake).
MAX_TIMEOUT_S = 86_400.0


class GateCommand(_Strict):
    """A shell command whose exit code decides part of a gate."""

    cmd: NonBlank = Field(description="Shell command, run in the project directory.")
    timeout: float | None = Field(
        default=None, gt=0, le=MAX_TIMEOUT_S,
        description="Seconds before the command is killed and the gate fails (default 600; at most a day).",
    )


#: An amount relative to the baseline (``"2%"``) or in the figure's unit (a number).
AMOUNT_RE = re.compile(r"^[0-9]+(\.[0-9]+)?%$")
#: ``baseline: stage <id>``: the figure at the end of an earlier stage.
BASELINE_STAGE_RE = re.compile(r"^stage\s+([A-Za-z0-9][A-Za-z0-9_.-]*)$")


def _amount(value: float | str | None) -> float | str | None:
    if isinstance(value, str) and not AMOUNT_RE.fullmatch(value.strip()):
        raise ValueError(f"{value!r} is neither a number nor a percentage such as '2%'")
    if isinstance(value, (int, float)) and (value < 0 or value != value or value in (float("inf"), float("-inf"))):
        raise ValueError(f"{value!r} must be a finite number >= 0")
    return value.strip() if isinstance(value, str) else value


Amount = Annotated[Union[float, str, None], AfterValidator(_amount)]


class Measure(_Strict):
    """A metric in a gate: a command's figure compared with the figure before the stage's change."""

    cmd: NonBlank = Field(description="Shell command that prints the figure; run like a gate command (sandboxed, "
                          "with its evidence), in the project and, for the baseline, in a scratch copy of the before-tree.")
    regex: str | None = Field(default=None, description="A regular expression with one group: the figure is the "
                              "group of its last match in stdout (else stderr). One of regex or json.")
    json_path: str | None = Field(default=None, alias="json", description="A dotted path (`a.b.0`) into JSON "
                                  "printed on stdout. One of regex or json.")
    direction: Literal["lower", "higher"] = Field(description="Which way is better.")
    name: str | None = Field(default=None, description="The figure's name in reasons (default: the command).")
    unit: str | None = Field(default=None, description="The figure's unit, for display.")
    repeat: int = Field(default=3, ge=1, le=100, description="Runs per measurement: the median is the figure, "
                        "the spread (largest minus smallest) is recorded.")
    timeout: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT_S,
                                  description="Seconds before one run is killed (default 600).")
    tolerance: Amount = Field(default=None, description="How much worse than the baseline still passes: '2%' "
                              "or a number (default: nothing beyond the measured spread).")
    target: float | None = Field(default=None, description="The figure to reach: the gate fails until it is.")
    min_improvement: Amount = Field(default=None, description="How much better than the baseline a change must "
                                    "be to pass: '5%' or a number (and always beyond the spread).")
    baseline: Union[float, str, None] = Field(default=None, description="The figure before the change: default "
                                              "measured on the stage's before-checkpoint; a number pins it; "
                                              "'stage <id>' takes the figure at the end of an earlier stage.")

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, populate_by_name=True)

    @field_validator("regex")
    @classmethod
    def _one_group(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            groups = re.compile(value).groups
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from None
        if groups != 1:
            raise ValueError(f"the regex must have exactly one group (the figure); it has {groups}")
        return value

    @field_validator("json_path")
    @classmethod
    def _path(cls, value: str | None) -> str | None:
        if value is not None and (not value.strip() or any(not step for step in value.split("."))):
            raise ValueError(f"{value!r} is not a dotted path such as 'latency.p95' or 'results.0.ms'")
        return value

    @field_validator("target")
    @classmethod
    def _finite_target(cls, value: float | None) -> float | None:
        if value is not None and (value != value or value in (float("inf"), float("-inf"))):
            raise ValueError("the target must be a finite number")
        return value

    @field_validator("baseline")
    @classmethod
    def _baseline(cls, value: float | str | None) -> float | str | None:
        if isinstance(value, str) and not BASELINE_STAGE_RE.fullmatch(value.strip()):
            raise ValueError(f"{value!r} is neither a number nor 'stage <id>'")
        if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
            raise ValueError("a pinned baseline must be a finite number")
        return value

    @model_validator(mode="after")
    def _one_reading(self) -> "Measure":
        if (self.regex is None) == (self.json_path is None):
            raise ValueError("say how to read the figure: exactly one of `regex:` (one group) or `json:` (a path)")
        return self

    @property
    def baseline_stage(self) -> str | None:
        """The stage whose end gives the baseline (``baseline: stage <id>``), else None."""
        found = BASELINE_STAGE_RE.fullmatch(self.baseline.strip()) if isinstance(self.baseline, str) else None
        return found.group(1) if found else None

    @property
    def label(self) -> str:
        return self.name or f"`{self.cmd}`"



class JudgeCompare(_Strict):
    """A judge comparison: the judge scores the before and the after of the stage's change (0 to 10, higher is
    better) with the gate's check as the rubric, in one reply; the scores are decided as a metric's figures."""

    against: Literal["baseline"] = Field(default="baseline", description="What the after is compared with: "
                                         "the baseline (the before of the stage's change).")
    tolerance: Amount = Field(default=None, description="How much lower than the before's score still passes: "
                              "'10%' or points (default: none).")
    min_improvement: Amount = Field(default=None, description="How much higher the after must score: '10%' or points.")
    target: float | None = Field(default=None, ge=0, le=10, description="The score to reach (0 to 10).")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return {"against": value} if isinstance(value, str) else value


class Gate(_Strict):
    mode: GateMode = Field(
        description="ai: the judge decides and the run advances; ai+human (alias: human): "
        "the judge decides, then the run pauses for approval."
    )
    check: NonBlank = Field(description="The testable condition the stage must meet to advance.")
    on_fail: str | None = Field(
        default=None, description="Stage id to loop back to when the gate fails (default: retry this stage)."
    )
    run: list[Union[NonBlank, GateCommand]] = Field(
        default_factory=list,
        description="Commands whose exit codes decide the gate before any judge: a non-zero exit fails it. "
        "Each is a string or {cmd, timeout}.",
    )

    mutate: bool = Field(
        default=False,
        description="After the gate passes, prove its `run` commands can fail: mutate the Python code the "
        "stage checks and fail the gate when fewer than the loop's min_kill_ratio of the mutants are caught.",
    )
    measure: Measure | None = Field(
        default=None, description="A metric: a command's figure compared with the baseline (the figure before the "
        "stage's change), after the `run` commands and before the judge (docs/metrics.md).")
    compare: JudgeCompare | None = Field(
        default=None, description="`baseline`: after the judge passes, it scores the before and the after of the "
        "change with the check as the rubric in one reply; the scores decide like a metric's (docs/metrics.md).")

    @field_validator("run", mode="after")
    @classmethod
    def _commands(cls, value: list) -> list[GateCommand]:
        return [GateCommand(cmd=v) if isinstance(v, str) else v for v in value]

    @property
    def commands(self) -> list[GateCommand]:
        return list(self.run)  # normalised to GateCommand by the validator above

    @property
    def pauses(self) -> bool:
        """True when a pass waits for a human (``ai+human`` and its alias ``human``)."""
        return self.mode in ("ai+human", "human")


class Interview(_Strict):
    mode: Literal["deep"] = Field(description="Only 'deep' is defined: the Huginn deep interview.")
    threshold: float = Field(default=0.15, gt=0, lt=1, description="Ambiguity at or below which the interview may stop.")
    challenges: list[str] = Field(
        default_factory=lambda: list(DEFAULT_CHALLENGES),
        description="Scheduled challenge rounds, each 'contrarian|simplifier|ontologist@<round>'.",
    )
    auto_assist: bool = Field(default=True, description="Offer researched candidate answers and 'you decide'.")
    hard_cap: int = Field(default=20, ge=1, description="The interview stops after this many rounds.")
    dimensions: dict[str, float] | None = Field(
        default=None,
        description="Clarity weights by dimension (goal, constraints, criteria, context); they must sum to 1. "
        "Default: greenfield .40/.30/.30, brownfield .35/.25/.25/.15.",
    )

    @field_validator("challenges")
    @classmethod
    def _challenge_format(cls, value: list[str]) -> list[str]:
        for item in value:
            if not CHALLENGE_RE.match(item):
                raise ValueError(
                    f"challenge {item!r} must look like 'contrarian@4', 'simplifier@6' or 'ontologist@8'"
                )
        return value

    @field_validator("dimensions")
    @classmethod
    def _dimension_weights(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        if value is None:
            return value
        unknown = sorted(set(value) - set(INTERVIEW_DIMENSIONS))
        if unknown:
            raise ValueError(f"unknown dimension(s) {unknown}; use {list(INTERVIEW_DIMENSIONS)}")
        if any(w <= 0 or w > 1 for w in value.values()):
            raise ValueError("each dimension weight must be in (0, 1]")
        if abs(sum(value.values()) - 1.0) > 1e-6:
            raise ValueError(f"dimension weights must sum to 1 (they sum to {sum(value.values()):g})")
        return value


StageId = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")]


class Stage(_Strict):
    id: StageId = Field(description="Unique stage id (letters, digits, '-', '_', '.').")
    title: str | None = Field(default=None, description="Human-readable stage name.")
    goal: str | None = Field(default=None, description="What this stage is for, in one line.")
    prompt: str | None = Field(default=None, description="Instructions to the worker.")
    thinking: Union[Annotated[int, Field(ge=1024)], bool, None] = Field(
        default=None, description="Extended thinking in the worker's turns: false turns it off, true turns it on, "
        "a number (>= 1024) is its token budget (default: the settings' budget, on for every role but explore).")
    consumes: list[str] = Field(default_factory=list, description="Artifacts this stage reads (relative paths).")
    produces: list[str] = Field(default_factory=list, description="Artifacts this stage must write (relative paths).")
    agent: AgentSpec = Field(
        default="inline",
        description="inline | fresh | explore | planner | executor | critic | reviewer | {role, fresh}.",
    )
    interview: Interview | None = Field(default=None, description="Run this stage as a deep interview.")
    scope: list[Annotated[str, Field(min_length=1)]] | None = Field(
        default=None,
        description="Globs of project paths this stage may change besides its produces (for a stage that may "
        "write anywhere, this narrows 'anywhere'); other changes are reverted and fail the gate. A file that "
        "configures the test runner (conftest.py, pytest.ini, setup.cfg, ...) is allowed only by naming its path, "
        "never through a glob (docs/scope.md).",
    )
    gate: Gate = Field(description="How the stage's work is judged before the run advances.")
    network: bool | None = Field(
        default=None,
        description="Whether this stage's commands (bash, gate, post_edit) may use the network in the sandbox; "
        "default: the loop's `network`.",
    )

    @property
    def resolved_agent(self) -> ResolvedAgent:
        return resolve_agent(self.agent)

    @property
    def display_title(self) -> str:
        return self.title or self.id


class Budget(_Strict):
    max_tokens: int | None = Field(default=None, ge=1, description="Stop the run past this many tokens (all kinds).")
    max_usd: float | None = Field(default=None, gt=0, description="Stop the run past this estimated cost in USD.")

    def exceeded(self, total_tokens: int, cost_usd: float) -> str | None:
        """Why a run that used this much is past the budget, or None."""
        if self.max_tokens is not None and total_tokens > self.max_tokens:
            return f"{total_tokens} tokens used, budget max_tokens {self.max_tokens}"
        if self.max_usd is not None and cost_usd > self.max_usd:
            return f"${cost_usd:.4f} spent, budget max_usd {self.max_usd:g}"
        return None


class Loop(_Strict):
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", description="Loop name; should match the file's stem.")
    version: str | int | float | None = Field(default=None, description="The loop's own version.")
    description: str | None = Field(default=None, description="What the loop is for, in a sentence.")
    max_iterations: int = Field(ge=1, description="Global cap on loopbacks (gate failures) in one run.")
    timeout_seconds: float | None = Field(default=None, gt=0, description="A run fails once it has taken this long.")
    max_no_progress: int | None = Field(
        default=None, ge=1, description="A run fails after this many consecutive loopbacks with no new gate passing."
    )
    max_repeats: int = Field(
        default=3, ge=1,
        description="Pause the run for the human once one stage fails with the same (normalized) reason "
        "this many times in a row, instead of looping on.",
    )
    budget: Budget | None = Field(default=None, description="Token and/or USD limits for one run.")
    risk: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=list,
        description="Globs of project paths (e.g. 'migrations/**', '.github/**', 'pyproject.toml'): a stage that "
        "changes a matching path pauses for human sign-off, even when its gate is ai.",
    )
    post_edit: list[Union[Annotated[str, Field(min_length=1)], GateCommand]] = Field(
        default_factory=list,
        description="Fast-fail commands run after every file a worker writes or edits, in the project "
        "directory with $ODIN_EDITED_FILE set (30 s timeout unless given); a failure goes back to the "
        "model as the tool's error. Python, JSON, YAML and TOML files are always checked to parse.",
    )
    min_kill_ratio: float = Field(
        default=0.6, ge=0, le=1,
        description="A gate with `mutate: true` fails when its commands catch fewer than this share of the mutants.",
    )
    acceptance: Literal["required", "optional", "off"] = Field(
        default="optional",
        description="The run's acceptance.yaml decides 'done': required (a run without one cannot end done), "
        "optional (used when present) or off.",
    )
    regression: Union[bool, Annotated[str, Field(min_length=1)], GateCommand] = Field(
        default=True,
        description="Before done, run the project's whole test suite once: true runs the test command the project "
        "declares (make test, tox, nox, a pytest configuration, npm test, cargo test, go test; else pytest when "
        "tests/ holds Python files), a command names it, false turns it off.",
    )
    memory: bool = Field(
        default=True,
        description="Project memory: at each run's end, append decisions and lessons to .odin-loop/memory/, "
        "and hand the relevant ones to later runs' workers and judges; false turns both off.",
    )
    sandbox: Literal["auto", "bwrap", "off"] = Field(
        default="auto",
        description="Where a stage's commands (the worker's bash, gate commands, post_edit, regression, mutants) run: "
        "bwrap (bubblewrap: the project writable but .odin-loop/ and .git/, no network, no secrets), off, or auto "
        "(bwrap when it works here, else off with a warning). The ODIN_SANDBOX environment variable, when set, wins.",
    )
    network: bool = Field(
        default=False, description="Whether the stages' sandboxed commands may use the network (a stage may say otherwise)."
    )
    params: dict[Annotated[str, Field(pattern=PARAM_NAME)], LoopParam] = Field(
        default_factory=dict,
        description="Values a run supplies (`odin run LOOP --param NAME=VALUE`), written `{{NAME}}` in the loop's texts "
        "(a gate command, a measure.cmd, a prompt); each with a default, or none: the run must give one.",
    )
    deliver: Literal["off", "branch", "pr"] = Field(
        default="off",
        description="At done, deliver the run automatically: branch (a branch odin/<run-id> of the project's git "
        "repository, one commit per stage execution, and pr.md), pr (that, pushed to origin, then a pull request "
        "with gh, or the commands to open one) or off. A delivery that fails is told and recorded; the run stays done.",
    )
    stages: list[Stage] = Field(min_length=1, description="The stages, in the order they run.")

    @field_validator("sandbox", "deliver", mode="before")
    @classmethod
    def _sandbox_off(cls, value: Any) -> Any:
        return "off" if value is False else value  # YAML 1.1 reads a bare `off` as false

    @field_validator("post_edit", mode="after")
    @classmethod
    def _post_edit_commands(cls, value: list) -> list[GateCommand]:
        return [GateCommand(cmd=v) if isinstance(v, str) else v for v in value]

    def stage(self, stage_id: str) -> Stage:
        for stage in self.stages:
            if stage.id == stage_id:
                return stage
        raise KeyError(stage_id)

    def network_for(self, stage: Stage) -> bool:
        """Whether ``stage``'s sandboxed commands may use the network: the stage's say, else the loop's."""
        return self.network if stage.network is None else stage.network

    def stage_ids(self) -> list[str]:
        return [s.id for s in self.stages]

    def next_stage_id(self, stage_id: str) -> str | None:
        ids = self.stage_ids()
        i = ids.index(stage_id)
        return ids[i + 1] if i + 1 < len(ids) else None


def loop_json_schema() -> dict:
    """The JSON Schema of the loop format, generated from :class:`Loop`."""
    schema = Loop.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "odin-magic loop"
    return schema
