"""A roadmap phase's contract: ``.odin-loop/contracts/<phase-id>.yaml`` (seed 002, issue 22).

The contract fixes what one phase of a roadmap may do and what "done" means for it::

    risk: standard                 # tiny-fix | standard | risky
    impact: internal               # internal | user-facing | business-facing
    scope: ["src/config/**", "tests/test_config.py"]
    criteria:                      # the acceptance manifest's form (docs/verification.md)
      - id: AC1
        priority: P0
        text: Given a config file with a port, when it is parsed, then the port is an int.
        verify: python -m pytest -q tests/test_config.py
    gate:
      kind: programmatic           # programmatic (commands, optional measure) | judge
      run: [python -m pytest -q]
    max_iterations: 3
    max_usd: 2.0                   # optional
    loop: tiny-fix                 # default: tiny-fix for a tiny fix, spec-harness-tdd otherwise
    sensor: off                    # the mutation sensor; forced on for risky

:func:`validate_contract_text` reports every problem with its line, column and field, as the loop
validator does; with a project it also refuses a loop that does not exist and a scope that leaves out
a project path some stage of the loop ``produces`` (both by name).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from odin_magic.core.errors import OdinError
from odin_magic.loop.artifacts import in_run_dir
from odin_magic.loop.diagnostics import Diagnostic, DocumentReport
from odin_magic.loop.globs import configures_runner, matches, named
from odin_magic.loop.manifest import Criterion
from odin_magic.loop.schema import GateCommand, Loop, Measure, NonBlank, is_plain_name
from odin_magic.loop.validation import _Checker, _kind
from odin_magic.loop.yamlsource import MAX_BYTES, YamlError, decode_text, load_yaml

CONTRACTS_DIR = ".odin-loop/contracts"
Risk = Literal["tiny-fix", "standard", "risky"]
Impact = Literal["internal", "user-facing", "business-facing"]
#: The loop that runs a phase when its contract names none, by risk class.
DEFAULT_LOOPS: dict[str, str] = {"tiny-fix": "tiny-fix", "standard": "spec-harness-tdd", "risky": "spec-harness-tdd"}
DEFAULT_MAX_ITERATIONS = 3


class ContractInvalid(OdinError):
    """A contract file that does not validate (the message names file, line and field)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class ContractGate(_Strict):
    """How a phase's work is measured: commands (and a metric), or the judge alone."""

    kind: Literal["programmatic", "judge"] = Field(description="programmatic: commands decide (then the judge); "
                                                   "judge: the judge decides from the criteria.")
    run: list[Union[NonBlank, GateCommand]] = Field(default_factory=list, description="Commands whose exit codes "
                                                    "decide the gate (programmatic); a string or {cmd, timeout}.")
    measure: Measure | None = Field(default=None, description="A metric compared with the baseline "
                                    "(the metric gate's schema, docs/metrics.md).")
    check: NonBlank | None = Field(default=None, description="What the judge checks (default: the criteria).")

    @field_validator("run", mode="after")
    @classmethod
    def _commands(cls, value: list) -> list[GateCommand]:
        return [GateCommand(cmd=v) if isinstance(v, str) else v for v in value]

    @model_validator(mode="after")
    def _programmatic_has_commands(self) -> "ContractGate":
        if self.kind == "programmatic" and not self.run and self.measure is None:
            raise ValueError("a programmatic gate needs `run:` commands or a `measure:`")
        return self


class Contract(_Strict):
    """One phase's contract (see the module docstring)."""

    risk: Risk = Field(description="tiny-fix | standard | risky: which steps are mandatory.")
    impact: Impact = Field(default="internal", description="internal | user-facing | business-facing: a phase that "
                           "is not internal always pauses for a person.")
    scope: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1, description="Globs of the project "
                                                             "paths the phase may change.")
    criteria: list[Criterion] = Field(default_factory=list, description="Acceptance criteria (the manifest's form).")
    gate: ContractGate = Field(default_factory=lambda: ContractGate(kind="judge"), description="The gate.")
    max_iterations: int = Field(default=DEFAULT_MAX_ITERATIONS, ge=1, le=100, description="Attempts before the "
                                "phase is escalated.")
    max_usd: float | None = Field(default=None, gt=0, description="The phase's budget in USD (estimated).")
    loop: Annotated[str, Field(min_length=1, max_length=64)] | None = Field(default=None, description="The loop "
                                                                            "that runs the phase.")
    sensor: Literal["on", "off"] = Field(default="off", description="The mutation sensor (forced on for risky).")

    @field_validator("sensor", mode="before")
    @classmethod
    def _yaml_bool(cls, value: Any) -> Any:
        return {True: "on", False: "off"}.get(value, value) if isinstance(value, bool) else value

    @field_validator("loop")
    @classmethod
    def _plain(cls, value: str | None) -> str | None:
        if value is not None and not is_plain_name(value):
            raise ValueError(f"{value!r} is not a loop name (a file stem such as 'tiny-fix')")
        return value

    @property
    def loop_name(self) -> str:
        return self.loop or DEFAULT_LOOPS[self.risk]

    @property
    def sensor_on(self) -> bool:
        return self.risk == "risky" or self.sensor == "on"

    @property
    def needs_person(self) -> bool:
        """Whether even an autonomous roadmap pauses for a person at this phase."""
        return self.impact != "internal"


@dataclass
class ContractReport(DocumentReport):
    contract: Contract | None = None
    WHAT: ClassVar[str] = "contract"


def contract_path(project_dir: Path, phase_id: str) -> Path:
    return Path(project_dir) / CONTRACTS_DIR / f"{phase_id}.yaml"


def validate_contract_text(text: str, source: str, project_dir: Path | None = None) -> ContractReport:
    """Check a contract's text; with ``project_dir`` also its loop and scope against the loop catalog."""
    report = ContractReport(source)
    try:
        doc = load_yaml(text)
    except YamlError as exc:
        report.errors.append(Diagnostic("error", source, exc.line, exc.column, "", exc.message, exc.hint))
        return report
    checker = _Checker(source, doc, root=Contract)
    if not isinstance(doc.data, dict):
        what = "empty" if doc.data is None else f"{_kind(doc.data)}, not a mapping"
        checker.error((), f"the contract is {what}", "write a mapping with risk, scope, criteria and gate "
                      "(see docs/roadmap.md, 'Phase contracts')")
        report.errors = checker.errors
        return report
    contract = None
    try:
        contract = Contract.model_validate(doc.data)
    except ValidationError as exc:
        checker.schema_errors(exc)
    _unique_ids(checker, doc.data)
    if contract is not None and project_dir is not None:
        _against_catalog(checker, contract, Path(project_dir), doc.data)
    report.errors = sorted(checker.errors, key=lambda d: (d.line, d.column))
    report.contract = contract if not report.errors else None
    return report


def _unique_ids(checker: _Checker, data: dict) -> None:
    criteria = data.get("criteria")
    seen: dict[str, int] = {}
    for i, crit in enumerate(criteria if isinstance(criteria, list) else []):
        cid = crit.get("id") if isinstance(crit, dict) else None
        if isinstance(cid, str) and cid in seen:
            checker.error(("criteria", i, "id"), f"criterion id {cid!r} is already used by criteria[{seen[cid]}]",
                          "give every criterion a unique id")
        elif isinstance(cid, str):
            seen[cid] = i


def _against_catalog(checker: _Checker, contract: Contract, project_dir: Path, data: dict) -> None:
    """The loop must exist and load; no stage of it may produce a project path outside the scope."""
    from odin_magic.loop.catalog import LoopCatalog

    where = ("loop",) if "loop" in data else ("risk",)
    try:
        loop = LoopCatalog(project_dir).load(contract.loop_name)
    except OdinError as exc:
        checker.error(where, f"loop {contract.loop_name!r} cannot run this phase: {exc.message}",
                      exc.hint or "name a loop `odin list` shows")
        return
    for stage_id, entry in scope_conflicts(contract, loop):
        runner = configures_runner(entry.rstrip("/"))
        checker.error(("scope",), f"the scope contradicts stage {stage_id!r} of loop {loop.name!r}: it produces "
                      f"{entry!r}, " + ("which configures the test runner: a scope allows it only by naming it"
                                        if runner else "which no scope glob covers"),
                      (f"add {entry!r} to `scope:`" if runner else f"add a glob covering {entry!r} to `scope:`")
                      + ", or pick another `loop:`")


def scope_conflicts(contract: Contract, loop: Loop) -> list[tuple[str, str]]:
    """(stage id, produces entry) for each project-tree artifact of ``loop`` outside the contract's scope (a file
    that configures the test runner is in it only when the scope names it: :func:`configures_runner`)."""
    out = []
    named_paths = {named(g) for g in contract.scope}
    for stage in loop.stages:
        for entry in stage.produces:
            if in_run_dir(entry):
                continue
            probe = entry.rstrip("/") + "/__any__" if entry.rstrip().endswith("/") else entry
            if not matches(contract.scope, probe) and not matches(contract.scope, entry.rstrip("/")):
                out.append((stage.id, entry))
            elif configures_runner(entry.rstrip("/")) and entry.strip() not in named_paths:
                out.append((stage.id, entry))
    return out


def validate_contract_file(path: Path, project_dir: Path | None = None) -> ContractReport:
    """Validate the contract at ``path``; unreadable is a one-error report, never a traceback."""
    source = str(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
        text = decode_text(raw)
    except OSError as exc:
        report = ContractReport(source)
        report.errors.append(Diagnostic("error", source, 1, 1, "", f"cannot read it: {exc.strerror or exc}",
                                        "check the path and its permissions"))
        return report
    except YamlError as exc:
        report = ContractReport(source)
        report.errors.append(Diagnostic("error", source, exc.line, exc.column, "", exc.message, exc.hint))
        return report
    return validate_contract_text(text, source, project_dir)


def load_contract(path: Path, project_dir: Path | None = None) -> Contract:
    """The valid contract at ``path``; :class:`ContractInvalid` naming file, line and field otherwise."""
    report = validate_contract_file(Path(path), project_dir)
    if not report.ok or report.contract is None:
        first = report.errors[0]
        more = f" (and {len(report.errors) - 1} more)" if len(report.errors) > 1 else ""
        raise ContractInvalid(f"{first}{more}", hint=f"fix {Path(path).name}; the roadmap runs no phase until it validates")
    return report.contract


def render_contract(contract: Contract, header: str | None = None) -> str:
    """The contract as YAML (what the contract stage writes); it validates back to ``contract``."""
    import yaml

    data = contract.model_dump(mode="json", exclude_none=True, by_alias=True)
    gate = data.get("gate", {})
    gate["run"] = [c["cmd"] if c.get("timeout") is None else c for c in gate.get("run", [])]
    if not gate["run"]:
        gate.pop("run")
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    return (f"# {header}\n" if header else "") + text
