"""The contract stage (seed 002's CONTRACT): a phase without a contract gets one proposed by the model.

The model answers a structured question (purpose ``contract``, stage = the phase id; the scripted model
answers it from ``answers: {contract: {<phase-id>: [{json: ...}]}}``) from the phase's roadmap entry.
The proposal is validated as any contract file is (the loop exists, the scope covers what the loop
produces) and written to ``.odin-loop/contracts/<phase-id>.yaml``; the driver then shows it before the
phase starts where a person approves it (hitl). A proposal with questions the model could not settle (an
ambiguous scope or acceptance) is not written: the phase asks the deep interview first
(:mod:`.roadmap_interview`), then the contract is proposed again with the interview's spec and answers
(``context``) and written.

What every proposal's replies cost is added to ``.odin-loop/contracts/<phase-id>.usage.json``
(:mod:`odin_magic.runs.contract_usage`; a failed proposal's too), shown with the interview's on the phase's
line of the roadmap's views. With ``ODIN_RECORD`` set the proposal's exchanges are recorded as a run's are
(under ``answers: {contract: {<phase-id>: [...]}}``), so a recorded roadmap session replays them offline.
"""

from __future__ import annotations

import uuid
import warnings
from pathlib import Path
from typing import Callable, Literal

from pydantic import BaseModel, Field

from odin_magic.core.atomic import write_atomic
from odin_magic.core.errors import ConfigError, OdinError
from odin_magic.loop.contract import (
    CONTRACTS_DIR, Contract, contract_path, load_contract, render_contract, validate_contract_text,
)
from odin_magic.loop.roadmap import Phase, Roadmap
from odin_magic.runs.contract_usage import count_usage
from odin_magic.runs.state import Usage

RULES = """You write the contract of one phase of a software roadmap for odin-magic. The contract fixes: the \
risk class (tiny-fix: a small well-understood change; standard: a feature; risky: data, security, migrations, \
public interfaces), the impact (internal, user-facing, business-facing), the scope (globs of the project paths \
the phase may change, e.g. src/config/**), acceptance criteria (id AC1..., priority P0 or P1, Given/When/Then \
text, and a shell `verify` command that decides it, or `judge` when no command can), the gate's commands (shell \
commands whose exit code decides the work, e.g. python -m pytest -q), and max_iterations (1 to 5). List in \
`questions` what you cannot decide from the phase's entry (an ambiguous scope or acceptance); do not guess. \
Answer only with the requested JSON."""


class ProposedCriterion(BaseModel):
    id: str
    priority: Literal["P0", "P1"]
    text: str
    verify: str


class ContractProposal(BaseModel):
    risk: Literal["tiny-fix", "standard", "risky"]
    impact: Literal["internal", "user-facing", "business-facing"]
    scope: list[str] = Field(min_length=1)
    criteria: list[ProposedCriterion] = Field(default_factory=list)
    gate_commands: list[str] = Field(default_factory=list)
    max_iterations: int = Field(default=3, ge=1, le=10)
    questions: list[str] = Field(default_factory=list)


def existing_contract(project_dir: Path, phase: Phase) -> Contract | None:
    """The phase's contract when its file exists (validated against the catalog), else None."""
    path = contract_path(project_dir, phase.id)
    return load_contract(path, project_dir) if path.is_file() else None


def propose_contract(project_dir: Path, roadmap: Roadmap, phase: Phase, settings=None,
                     context: str | None = None, tell: Callable[[str], None] | None = None
                     ) -> tuple[Contract, list[str]]:
    """Ask the model for the phase's contract, validate it, write it; the contract and the open questions."""
    proposal = ask_contract(project_dir, roadmap, phase, settings, context, tell)
    return write_contract(project_dir, phase, proposal), list(proposal.questions)


def say(line: str, tell: Callable[[str], None] | None) -> None:
    """``line`` (a warning) to the front end's ``tell``; without one, as a Python warning."""
    if tell is not None:
        tell(line)
    else:
        warnings.warn(line, RuntimeWarning, stacklevel=3)


def ask_contract(project_dir: Path, roadmap: Roadmap, phase: Phase, settings=None,
                 context: str | None = None, tell: Callable[[str], None] | None = None) -> ContractProposal:
    """The model's proposal for the phase's contract (nothing written); ``context``: what a person settled
    since (the phase's interview), sent with the phase's entry; ``tell``: where a warning goes (a cost that
    cannot be counted never fails the proposal nor hides its own error)."""
    from odin_magic.authoring.new_loop import model_configured
    from odin_magic.workers.client import run_coroutine
    from odin_magic.workers.config import Settings

    settings = settings or Settings.from_env()
    if not model_configured(settings):
        raise ConfigError(f"phase {phase.id} has no contract ({contract_path(project_dir, phase.id)}) and no model "
                          "is configured to propose one",
                          hint="write the contract (docs/roadmap.md, 'Phase contracts'), or set ANTHROPIC_API_KEY "
                               "or ODIN_SCRIPT")
    spent: list[Usage] = []
    try:
        return run_coroutine(lambda: _ask(roadmap, phase, settings, (_client_factory(settings, project_dir), spent),
                                          context))
    finally:  # every reply was paid for, also one that did not fit or a proposal that failed afterwards
        if spent and (said := count_usage(project_dir, phase.id, "proposal", sum(spent, Usage()))) is not None:
            say(said, tell)


def _client_factory(settings, project_dir: Path):
    """The offline scripted model when ``settings.script`` is set, its replay position kept in
    ``.odin-loop/contracts/`` (so the proposal after a phase's interview, in another process, takes the
    script's next answer); else the API's. Its clients record their exchanges when ``ODIN_RECORD`` is set."""
    from odin_magic.authoring.new_loop import proposal_client_factory
    from odin_magic.workers.client import default_client_factory
    from odin_magic.workers.factory import recorded

    if settings.script is not None:
        (Path(project_dir) / CONTRACTS_DIR).mkdir(parents=True, exist_ok=True)
    factory = proposal_client_factory(settings, project_dir, keep_position=True) or default_client_factory(settings)
    return recorded(factory, settings, Path(project_dir))


def write_contract(project_dir: Path, phase: Phase, proposal: ContractProposal) -> Contract:
    """Validate the proposal as a contract file and write it to ``.odin-loop/contracts/<phase-id>.yaml``."""
    path = contract_path(project_dir, phase.id)
    text = render_contract(_contract(proposal, phase), header=f"contract of phase {phase.id} ({phase.title}), "
                           "proposed by the model; edit it before you approve the phase")
    report = validate_contract_text(text, str(path), project_dir)
    if not report.ok:
        raise OdinError(f"the model's contract for phase {phase.id} does not hold: {report.errors[0]}",
                        hint=f"write {path} yourself (docs/roadmap.md, 'Phase contracts')")
    write_atomic(path, text, within=Path(project_dir) / ".odin-loop")
    return report.contract


def _contract(p: ContractProposal, phase: Phase) -> Contract:
    try:
        return Contract.model_validate({
            "risk": p.risk, "impact": p.impact, "scope": p.scope, "max_iterations": p.max_iterations,
            "criteria": [c.model_dump() for c in p.criteria],
            "gate": {"kind": "programmatic", "run": p.gate_commands} if p.gate_commands else {"kind": "judge"}})
    except ValueError as exc:
        raise OdinError(f"the model's contract for phase {phase.id} is not a valid contract: {exc}".splitlines()[0],
                        hint="write the contract yourself (docs/roadmap.md, 'Phase contracts')") from None


def phase_entry(roadmap: Roadmap, phase: Phase) -> str:
    """The phase's roadmap entry as the model reads it: roadmap, milestone, the phase, the other phases."""
    milestone = next((m for m in roadmap.milestones if m.id == phase.milestone), None)
    return (f"Roadmap: {roadmap.title}\nMilestone: {milestone.id + ' ' + milestone.title if milestone else '-'}\n"
            f"Phase {phase.id}: {phase.title}" + (f"\nNote: {phase.note}" if phase.note else "")
            + "\nOther phases: " + "; ".join(f"{p.id} {p.title}" for p in roadmap.phases() if p.id != phase.id))


async def _ask(roadmap: Roadmap, phase: Phase, settings, model: tuple, context: str | None) -> ContractProposal:
    """``model``: the client factory, and the list every reply's priced usage is appended to."""
    from odin_magic.workers.prompts import system_blocks
    from odin_magic.workers.client import usage_of
    from odin_magic.workers.config import usage_with_cost
    from odin_magic.workers.exchange import NO_RUN
    from odin_magic.workers.structured import Question, ask_twice

    factory, spent = model

    content = phase_entry(roadmap, phase)
    if context:
        content += ("\n\nWhat a person settled about this phase in a deep interview (its answers and the spec it "
                    "wrote); follow it:\n" + context)
    return await ask_twice(settings, factory, ContractProposal, Question(
        system=system_blocks(RULES), content=content,
        headers={"x-odin-stage": phase.id, "x-odin-purpose": "contract", "x-odin-call": uuid.uuid4().hex,
                 "x-odin-run-dir": CONTRACTS_DIR, "x-odin-run-id": NO_RUN},
        what=f"proposing the contract of phase {phase.id}",
        hint=f"write .odin-loop/contracts/{phase.id}.yaml yourself (docs/roadmap.md, 'Phase contracts')"),
        count=lambda reply: spent.append(usage_with_cost(settings, settings.model, usage_of(reply))))
