"""A phase contract applied to the loop that runs the phase (issue 22, item 3; seed 002's APPLY).

* the contract's ``scope`` becomes every stage's ``scope`` (a stage may change its produces and
  those paths, nothing else: see docs/scope.md);
* its ``criteria`` become the run's ``acceptance.yaml`` (:func:`manifest_text`, written into the run dir
  when the run starts), checked before the run may end done (docs/verification.md);
* its gate is added to the gate of the stage whose work is checked before done (the last stage that
  writes the project, else the last stage): the ``run`` commands and ``measure`` there (seed 002's
  MEASURE), its ``check`` beside the stage's own (the judge: JUDGE);
* ``max_iterations`` and ``max_usd`` cap the run (its loopbacks and its budget);
* the sensor (``sensor: on``, forced for risky) is the mutation check on that gate's commands;
* an autonomous roadmap's phases run without the loop's approval pauses (every gate ``ai``).
"""

from __future__ import annotations

from typing import Any

import yaml

from odin_magic.engine.completion import code_stage
from odin_magic.loop.contract import Contract
from odin_magic.loop.manifest import INTERVIEW_ID
from odin_magic.loop.schema import Loop


def apply_contract(loop: Loop, contract: Contract, *, autonomous: bool) -> tuple[Loop, list[str]]:
    """``loop`` with ``contract`` applied, and what the user should know about it (one line each)."""
    data: dict[str, Any] = loop.model_dump(mode="json", by_alias=True, exclude_none=True)
    notes: list[str] = []
    data["max_iterations"] = contract.max_iterations
    if contract.max_usd is not None:
        data["budget"] = {**data.get("budget", {}), "max_usd": contract.max_usd}
    target = (code_stage(loop) or loop.stages[-1]).id
    for stage in data["stages"]:
        stage["scope"] = list(contract.scope)
        if autonomous and stage["gate"]["mode"] != "ai":
            stage["gate"]["mode"] = "ai"
        if stage["id"] == target:
            _gate(stage["gate"], contract, notes, target)
    return Loop.model_validate(data), notes


def _gate(gate: dict, contract: Contract, notes: list[str], stage_id: str) -> None:
    extra = [c.model_dump(exclude_none=True) for c in contract.gate.run]
    gate["run"] = list(gate.get("run", [])) + extra
    if contract.gate.measure is not None:
        if gate.get("measure"):
            notes.append(f"stage {stage_id} measures a figure of its own: the contract's `measure:` is not applied")
        else:
            gate["measure"] = contract.gate.measure.model_dump(mode="json", by_alias=True, exclude_none=True)
    if contract.gate.check:
        gate["check"] = f"{gate['check']} The phase contract also asks: {contract.gate.check}"
    if contract.sensor_on:
        if gate["run"]:
            gate["mutate"] = True
        else:
            notes.append(f"sensor: stage {stage_id}'s gate has no commands whose power mutants could test; "
                         "give the contract's gate `run:` commands")


def manifest_text(contract: Contract, phase_id: str) -> str | None:
    """The run's acceptance.yaml for the contract's criteria (None when it has none). An id of the deep
    interview's own form (``AC1``) becomes ``<phase>.AC1``, so that an interview in the run keeps the
    contract's criteria beside its own (:func:`odin_magic.loop.manifest.render_manifest`)."""
    if not contract.criteria:
        return None
    criteria = [c.model_dump(exclude_none=True) for c in contract.criteria]
    for c in criteria:
        if INTERVIEW_ID.fullmatch(c["id"]):
            c["id"] = f"{phase_id}.{c['id']}"
    return ("# The phase contract's acceptance criteria (written by `odin roadmap run`; see docs/roadmap.md).\n"
            + yaml.safe_dump({"criteria": criteria}, sort_keys=False, allow_unicode=True, width=100))
