"""Round 0: topology edits (confirm, merge, split, defer, add, rename) and their errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from odin_magic.interview import InterviewPlace, InterviewSession, ScriptedInterviewModel
from odin_magic.interview.models import Component, InterviewState
from odin_magic.interview.topology import TopologyEditError, apply_topology_edits, parse_topology_answer
from odin_magic.loop.schema import Stage


def proposed(*names: str) -> InterviewState:
    st = InterviewState(stage="interview", task="t", threshold=0.15, hard_cap=20, challenges=[],
                        auto_assist=True, weights={"goal": 0.4, "constraints": 0.3, "criteria": 0.3},
                        mode="greenfield")
    for n in names:
        st.components.append(Component(id=f"C{st.next_component}", name=n))
        st.next_component += 1
    return st


def edit(st: InterviewState, text: str) -> bool:
    return apply_topology_edits(st, parse_topology_answer(text))


def listing(st: InterviewState) -> list[str]:
    return [f"{c.id} {c.name} {c.status}" for c in st.components]


def test_confirm_keeps_the_proposal():
    st = proposed("Ingestion", "Export")
    assert edit(st, "confirm") is True
    assert listing(st) == ["C1 Ingestion active", "C2 Export active"]


def test_merge_with_and_without_a_name():
    st = proposed("Ingestion", "Normalization", "Export")
    assert edit(st, "merge ingestion, C2") is False  # edits alone do not confirm
    assert listing(st) == ["C4 Ingestion + Normalization active", "C3 Export active"]
    st = proposed("Ingestion", "Normalization", "Export")
    edit(st, "merge Ingestion, Normalization as Import")
    assert listing(st) == ["C4 Import active", "C3 Export active"]


def test_split_defer_add_rename_then_confirm_in_one_answer():
    st = proposed("Ingestion", "UI", "Export")
    assert edit(st, "split UI -> Review UI, Admin UI; defer Export; add Audit; rename C1 -> Import; confirm")
    assert listing(st) == [
        "C1 Import active", "C4 Review UI active", "C5 Admin UI active", "C3 Export deferred", "C6 Audit active",
    ]


@pytest.mark.parametrize("answer, message", [
    ("defer Reporting", "no component named 'Reporting'"),
    ("split UI -> Only", "splits into fewer than two"),
    ("merge UI", "merges fewer than two"),
    ("split UI", "needs '->'"),
    ("looks wrong to me", "cannot read `looks wrong to me`"),
    ("add Export", "already exists"),
    ("defer UI; defer Export; confirm", "every component is deferred"),
    ("split UI -> A, B, C, D, E, F", "would have 7 components; at most 6"),
])
def test_bad_edits_are_refused_and_change_nothing(answer, message):
    st = proposed("UI", "Export")
    before = listing(st)
    with pytest.raises(TopologyEditError) as err:
        edit(st, answer)
    assert message in str(err.value)
    assert listing(st) == before


def test_unknown_component_error_lists_the_known_ones():
    st = proposed("UI", "Export")
    with pytest.raises(TopologyEditError) as err:
        edit(st, "defer Reporting")
    assert "C1 UI, C2 Export" in err.value.hint


SCRIPT = """
goal: Review bank CSV imports before they reach the ledger
components: [Ingestion, Normalization, Review UI, Export]
rounds:
  default:
    question: Tell me more.
"""


def open_session(tmp_path: Path, model: ScriptedInterviewModel) -> InterviewSession:
    stage = Stage.model_validate({"id": "interview", "interview": {"mode": "deep"},
                                  "produces": ["spec.md", "interview-log.md"],
                                  "gate": {"mode": "ai+human", "check": "converged"}})
    return InterviewSession.open(InterviewPlace(run_dir=tmp_path / "run", project_dir=tmp_path, stage=stage,
                                 task="csv review"), model)


def test_round0_through_the_session(tmp_path):
    model = ScriptedInterviewModel.from_yaml(SCRIPT)
    s = open_session(tmp_path, model)
    q = s.start()
    assert q.kind == "topology" and "C4 Export" in q.text and "0.15" in q.text
    log = (tmp_path / "run" / "interview-log.md").read_text()
    assert "(status: proposed, awaiting confirmation)" in log
    # a bad edit is an error and leaves the question pending
    with pytest.raises(TopologyEditError):
        s.answer("defer Reporting")
    assert s.pending.kind == "topology"
    # edits without confirm re-ask with the new topology
    q = s.answer("merge Ingestion, Normalization as Import")
    assert q.kind == "topology" and "C5 Import" in q.text
    q = s.answer("defer Export; confirm")
    assert q.kind == "question" and q.round == 1
    assert [c.name for c in s.state.active] == ["Import", "Review UI"]
    assert set(s.state.clarity) == {"Import", "Review UI"}  # active components get clarity slots
    assert s.summary().topology == ["Import", "Review UI"]
    log = (tmp_path / "run" / "interview-log.md").read_text()
    assert "## Topology   (status: confirmed @ " in log
    assert "- C4 Export  — deferred (out of scope this run)" in log
    spec = (tmp_path / "run" / "spec.md").read_text()
    out_of_scope = spec.split("## Out of Scope")[1].split("##")[0]
    assert "- Export (deferred component)" in out_of_scope
