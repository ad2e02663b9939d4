"""The commands' arguments, declared once for both front ends (``odin`` and ``%odin``).

:mod:`.spec` says how (an argument as data, flagged when one front end only offers it); :mod:`.runs`,
:mod:`.loops`, :mod:`.authoring`, :mod:`.history`, :mod:`.delivery`, :mod:`.doctor` and :mod:`.roadmap` hold the specs; :data:`SHARED` names every command
both front ends offer and its spec (``tests/project/test_command_specs.py`` checks both parsers against it).

May import: ``core`` and ``loop.defaults`` (nothing heavy: the front ends load this at start-up).
"""

from __future__ import annotations

from odin_magic.commands import authoring, delivery, doctor, history, loops, roadmap, runs

#: Every command both ``odin`` and ``%odin`` offer, and its arguments.
SHARED = {
    "run": runs.RUN, "step": runs.STEP, "approve": runs.APPROVE, "revise": runs.REVISE, "answer": runs.ANSWER,
    "question": runs.QUESTION, "abandon": runs.ABANDON, "status": runs.STATUS, "runs": runs.RUNS, "report": runs.REPORT,
    "list": loops.LIST, "validate": loops.VALIDATE, "show": loops.SHOW, "simulate": loops.SIMULATE,
    "new": authoring.NEW, "refine": authoring.REFINE, "memory": authoring.MEMORY,
    "diff": history.DIFF, "revert": history.REVERT, "fork": history.FORK,
    "doctor": doctor.DOCTOR, "deliver": delivery.DELIVER, "roadmap": roadmap.ROADMAP,
}
