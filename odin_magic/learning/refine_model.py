"""Model-written refine proposals: one structured ``messages.parse`` call, in the rule proposals' form.

The model sees the loop's YAML, the aggregates and the rule proposals already
made, and may add up to three proposals. Each edit names a field by a dotted
path with stage ids (``stages.review.gate.check``, ``max_iterations``) and
gives the new value as JSON; only the fields in :data:`EDITABLE` may change.
An edit that does not resolve, or a result that does not validate, is left out
and told as a notice. Offline, the scripted model answers it from
``answers: {refine: {<loop>: [{json: {proposals: [...]}}]}}``.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any, Callable

from pydantic import BaseModel, Field

from odin_magic.loop.schema import Loop
from odin_magic.learning.rules import Evidence, Rule
from odin_magic.learning.runstats import LoopStats

EDITABLE = re.compile(
    r"^(max_iterations|max_no_progress|timeout_seconds|"
    r"stages\.[A-Za-z0-9][A-Za-z0-9_.-]*?\.(goal|prompt|agent|gate\.(check|mode|on_fail|run)))$")

RULES = """You refine development-workflow loops for odin-magic from the evidence of past runs. A loop is YAML: \
stages with a goal, a prompt, an agent (role), and a gate (check; mode ai or ai+human; on_fail loopback; run \
commands). Propose at most three concrete edits that the numbers support and that the rule-based proposals listed \
do not already make. Each edit names one field by a dotted path with stage ids (e.g. stages.review.gate.check, \
max_iterations) and gives its new value as JSON. Answer only with the requested JSON."""


class ModelEdit(BaseModel):
    path: str = Field(description="The field: max_iterations, max_no_progress, timeout_seconds, or "
                                  "stages.<stage id>.goal|prompt|agent|gate.check|gate.mode|gate.on_fail|gate.run")
    value_json: str = Field(description='The new value as JSON, e.g. 5, "ai", ["python -m pytest -q"]')


class ModelProposal(BaseModel):
    title: str = Field(description="One line: what to change.")
    rationale: str = Field(description="Why, citing the numbers and runs.")
    edits: list[ModelEdit] = Field(description="One or more field edits.")


class ModelProposals(BaseModel):
    proposals: list[ModelProposal] = Field(default_factory=list, description="At most three proposals.")


def _path(loop: Loop, dotted: str) -> tuple:
    if not EDITABLE.match(dotted):
        raise ValueError(f"{dotted!r} is not an editable field")
    if not dotted.startswith("stages."):
        return (dotted,)
    rest = dotted[len("stages."):]
    for i, sid in enumerate(loop.stage_ids()):
        if rest.startswith(sid + "."):
            return ("stages", i, *rest[len(sid) + 1:].split("."))
    raise ValueError(f"{dotted!r} names no stage of loop {loop.name!r}")


@dataclass(frozen=True)
class RefineModel:
    """The model refine asks: its settings (a configured model) and, offline or in tests, the client factory."""

    settings: Any
    client_factory: Callable[[], Any] | None = None


def model_rules(loop: Loop, text: str, stats: LoopStats, already: list[str], model: RefineModel,
                notices: list[str]) -> list[Rule]:
    """The model's proposals as rules (marked ``written_by = "model"``)."""
    from odin_magic.workers.claude import run_coroutine

    reply = run_coroutine(lambda: _ask(loop, text, stats, already, model))
    out = []
    for p in reply.proposals[:3]:
        try:
            edits = [(_path(loop, e.path), json.loads(e.value_json)) for e in p.edits]
        except (ValueError, TypeError) as exc:
            notices.append(f"a model proposal was left out ({p.title}): {exc}")
            continue
        if not edits:
            continue
        rule = Rule("model", p.title, edits, Evidence(runs=stats.run_ids, numbers={}, summary=p.rationale))
        rule.written_by = "model"
        out.append(rule)
    return out


async def _ask(loop: Loop, text: str, stats: LoopStats, already: list[str], model: RefineModel) -> ModelProposals:
    from odin_magic.workers.prompts import system_blocks
    from odin_magic.workers.structured import Question, ask_twice

    content = (f"The loop ({loop.name}.yaml):\n{text}\n\nThe aggregates of its runs (JSON):\n"
               f"{stats.model_dump_json()[:20_000]}\n\nRule-based proposals already made:\n"
               + ("\n".join(f"- {t}" for t in already) or "(none)"))
    return await ask_twice(model.settings, model.client_factory, ModelProposals, Question(
        system=system_blocks(RULES), content=content,
        headers={"x-odin-stage": loop.name, "x-odin-purpose": "refine", "x-odin-call": uuid.uuid4().hex},
        what="asking the model for refinements", hint="run refine without --model for the rule-based proposals"))
