"""What a roadmap phase's contract interview cost: the tokens and money of its model's calls.

The interview a phase's contract asks first (``odin_magic.engine.roadmap_interview``) is no run, so no run's
usage holds its cost. It is kept where the interview keeps its state, in
``.odin-loop/contracts/<phase-id>.interview/usage.json`` (a :class:`~odin_magic.runs.state.Usage`: an offline
script's calls priced as Claude would charge them, in ``offline_usd`` as a run's are), added to after every
question the model prepares, and read by the roadmap's views (``odin roadmap``, the roadmap report).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from odin_magic.core.atomic import write_atomic
from odin_magic.core.errors import OdinError
from odin_magic.loop.contract import CONTRACTS_DIR
from odin_magic.runs.state import Usage

INTERVIEW_SUFFIX = ".interview"
USAGE_FILE = "usage.json"


def interview_dir(project_dir: Path, phase_id: str) -> Path:
    """Where the contract interview of ``phase_id`` keeps its state."""
    return Path(project_dir) / CONTRACTS_DIR / f"{phase_id}{INTERVIEW_SUFFIX}"


def interview_usage(project_dir: Path, phase_id: str) -> Usage | None:
    """What the phase's contract interview cost so far; None when it made no model call (or has none)."""
    path = interview_dir(project_dir, phase_id) / USAGE_FILE
    if not path.is_file():
        return None
    try:
        return Usage.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError) as exc:
        raise OdinError(f"{path}: the contract interview's usage cannot be read ({exc.__class__.__name__})",
                        hint="delete it: the interview's cost is then counted again from its next model call") from None


def add_interview_usage(project_dir: Path, phase_id: str, usage: Usage) -> Usage:
    """Add ``usage`` (a question's, an answer's) to the phase's contract interview's cost; the new total."""
    total = (interview_usage(project_dir, phase_id) or Usage()) + usage
    write_atomic(interview_dir(project_dir, phase_id) / USAGE_FILE, total.model_dump_json(indent=2) + "\n",
                 within=Path(project_dir) / ".odin-loop")
    return total
