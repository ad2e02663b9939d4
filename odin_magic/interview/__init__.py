"""The deep interview (Huginn): topology, rounds, computed convergence, challenges, ledger.

* :mod:`.models` — structured outputs and the persisted state;
* :mod:`.convergence` — the computed numbers and the stop condition;
* :mod:`.topology` — round 0's edit grammar;
* :mod:`.ledger` — ``interview-log.md`` and ``spec.md``;
* :mod:`.assessment` — what a scored round changes in the state;
* :mod:`.protocol` — what a model must answer (:class:`InterviewModel`);
* :mod:`.session` — the resumable state machine;
* :mod:`.runner` — the engine-facing entry points;
* :mod:`.scripted` — a YAML-replaying model for demos and tests.

May import: ``core``, ``loop``, ``runs``, ``workers``.
"""

import importlib

#: Each public name and the module that defines it; imported on first use
#: (PEP 562), so that importing one sub-module, e.g. :mod:`.awaiting` or
#: :mod:`.limits` from the engine, does not load the whole interview.
_WHERE = {
    "BROWNFIELD_WEIGHTS": "convergence", "GREENFIELD_WEIGHTS": "convergence", "StopCheck": "convergence",
    "component_ambiguity": "convergence", "ontology_stability": "convergence", "stop_check": "convergence",
    "InterviewState": "models", "PendingQuestion": "models",
    "Exchange": "protocol", "InterviewBrief": "protocol", "InterviewModel": "protocol", "Reply": "protocol",
    "ScriptedInterviewModel": "scripted",
    "InterviewError": "session", "InterviewPlace": "session", "InterviewSession": "session", "state_path": "session",
}


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "BROWNFIELD_WEIGHTS", "GREENFIELD_WEIGHTS", "StopCheck", "component_ambiguity", "ontology_stability",
    "stop_check", "InterviewState", "PendingQuestion", "Exchange", "InterviewBrief", "InterviewModel", "Reply",
    "ScriptedInterviewModel", "InterviewError", "InterviewPlace", "InterviewSession", "state_path",
]
