"""What a roadmap phase's contract cost: the tokens and money of the model's calls that made it.

A phase's contract is no run, so no run's usage holds what making it cost. Two kinds of model calls make it,
each kept as a :class:`~odin_magic.runs.state.Usage` (an offline script's calls priced as Claude would charge
them, in ``offline_usd`` as a run's are), added to after every call:

* the proposals (``odin_magic.engine.roadmap_contract``; a second one after the interview, or after a person
  deleted a proposed contract): ``.odin-loop/contracts/<phase-id>.usage.json``;
* the contract interview (``odin_magic.engine.roadmap_interview``), where it keeps its state:
  ``.odin-loop/contracts/<phase-id>.interview/usage.json``.

The roadmap's views (``odin roadmap``, the roadmap report) read both through :func:`contract_cost`: one
figure per phase, named after what it counts (``contract proposal``, ``contract proposal and interview``).
:func:`interview_finished` tells those views (and the refusals that name the roadmap's pause) whether the
interview converged: its answers are in, and ``odin roadmap run`` proposes the contract.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from odin_magic.core.atomic import write_atomic
from odin_magic.core.errors import OdinError
from odin_magic.loop.contract import CONTRACTS_DIR
from odin_magic.runs.state import Usage

INTERVIEW_SUFFIX = ".interview"
USAGE_FILE = "usage.json"
PROPOSAL_USAGE_SUFFIX = ".usage.json"


def interview_dir(project_dir: Path, phase_id: str) -> Path:
    """Where the contract interview of ``phase_id`` keeps its state."""
    return Path(project_dir) / CONTRACTS_DIR / f"{phase_id}{INTERVIEW_SUFFIX}"


def interview_finished(project_dir: Path, phase_id: str) -> bool:
    """Whether the phase's contract interview converged: its state file (``odin_magic.interview.session.
    state_path``, named after the phase: the layer below the interview's reads the one field it needs) says
    ``done``. An unreadable file is not finished (the interview's own commands say why)."""
    name = "interview.json" if phase_id == "interview" else f"interview-{phase_id}.json"
    try:
        state = json.loads((interview_dir(project_dir, phase_id) / name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(state, dict) and state.get("phase") == "done"


def _paths(project_dir: Path, phase_id: str) -> dict[str, Path]:
    return {"proposal": Path(project_dir) / CONTRACTS_DIR / f"{phase_id}{PROPOSAL_USAGE_SUFFIX}",
            "interview": interview_dir(project_dir, phase_id) / USAGE_FILE}


def _read(path: Path, what: str) -> Usage | None:
    if not path.is_file():
        return None
    try:
        return Usage.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError) as exc:
        raise OdinError(f"{path}: the {what}'s usage cannot be read ({exc.__class__.__name__})",
                        hint=f"delete it: the {what}'s cost is then counted again from its next model call") from None


def _add(project_dir: Path, phase_id: str, part: str, usage: Usage) -> Usage:
    path = _paths(project_dir, phase_id)[part]
    total = (_read(path, f"contract {part}") or Usage()) + usage
    write_atomic(path, total.model_dump_json(indent=2) + "\n", within=Path(project_dir) / ".odin-loop")
    return total


def count_usage(project_dir: Path, phase_id: str, part: str, usage: Usage) -> str | None:
    """Add ``usage`` to the ``part`` ("proposal", "interview") of the phase's contract cost, never failing: a
    file that cannot be read or written gives the one-line warning to say instead (None: counted)."""
    try:
        _add(project_dir, phase_id, part, usage)
    except (OdinError, OSError) as exc:
        if isinstance(exc, OdinError):
            said, fix = exc.message, exc.hint
        else:
            said = (f"{_paths(project_dir, phase_id)[part]}: the contract {part}'s usage cannot be written "
                    f"({exc.__class__.__name__})")
            fix = "make the folder writable"
        return f"warning: phase {phase_id}: {usage.total_tokens} tokens not counted: {said}; {fix}"
    return None


def interview_usage(project_dir: Path, phase_id: str) -> Usage | None:
    """What the phase's contract interview cost so far; None when it made no model call (or has none)."""
    return _read(_paths(project_dir, phase_id)["interview"], "contract interview")


def proposal_usage(project_dir: Path, phase_id: str) -> Usage | None:
    """What the model's proposals of the phase's contract cost so far; None before the first."""
    return _read(_paths(project_dir, phase_id)["proposal"], "contract proposal")


class ContractCost(BaseModel):
    """What making a phase's contract cost: its proposals and its interview (either None when it had none, or
    when its usage file cannot be read: then ``unreadable`` names that file, relative to the project)."""

    proposal: Usage | None = None
    interview: Usage | None = None
    unreadable: dict[str, str] = Field(default_factory=dict)  # "proposal"/"interview": its unreadable usage file

    @property
    def counted(self) -> bool:
        """Whether a usage file that could be read counts a model call."""
        return self.proposal is not None or self.interview is not None

    @property
    def usage(self) -> Usage:
        """The two added up."""
        return (self.proposal or Usage()) + (self.interview or Usage())

    @property
    def what(self) -> str:
        """What the figure counts: ``contract proposal``, ``contract interview``, or both."""
        parts = [name for name, u in (("proposal", self.proposal), ("interview", self.interview)) if u is not None]
        return "contract " + " and ".join(parts)


def contract_cost(project_dir: Path, phase_id: str) -> ContractCost | None:
    """What the phase's contract cost (its proposals and its interview); None when no model call made it. A usage
    file that cannot be read is named in ``unreadable`` (its cost unknown), not raised: the views say so."""
    cost = ContractCost()
    for part, path in _paths(project_dir, phase_id).items():
        try:
            usage = _read(path, f"contract {part}")
        except OdinError:
            cost.unreadable[part] = path.relative_to(project_dir).as_posix()
            continue
        if usage is not None and (usage.total_tokens or usage.cost_usd):
            setattr(cost, part, usage)
    return cost if cost.counted or cost.unreadable else None
