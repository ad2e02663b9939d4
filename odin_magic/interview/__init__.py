"""The deep interview (Huginn): topology, rounds, computed convergence, challenges, ledger.

* :mod:`.models` — structured outputs and the persisted state;
* :mod:`.convergence` — the computed numbers and the stop condition;
* :mod:`.topology` — round 0's edit grammar;
* :mod:`.ledger` — ``interview-log.md`` and ``spec.md``;
* :mod:`.protocol` — what a model must answer (:class:`InterviewModel`);
* :mod:`.session` — the resumable state machine;
* :mod:`.runner` — the engine-facing entry points;
* :mod:`.scripted` — a YAML-replaying model for demos and tests.
"""

from .convergence import (
    BROWNFIELD_WEIGHTS,
    GREENFIELD_WEIGHTS,
    StopCheck,
    component_ambiguity,
    ontology_stability,
    stop_check,
)
from .models import InterviewState, PendingQuestion
from .protocol import Exchange, InterviewBrief, InterviewModel, Reply
from .scripted import ScriptedInterviewModel
from .session import InterviewError, InterviewSession, state_path

__all__ = [
    "BROWNFIELD_WEIGHTS", "GREENFIELD_WEIGHTS", "StopCheck", "component_ambiguity", "ontology_stability",
    "stop_check", "InterviewState", "PendingQuestion", "Exchange", "InterviewBrief", "InterviewModel", "Reply",
    "ScriptedInterviewModel", "InterviewError", "InterviewSession", "state_path",
]
