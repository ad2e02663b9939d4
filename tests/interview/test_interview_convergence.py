"""The interview's computed numbers, against hand-worked examples."""

from __future__ import annotations

import pytest

from odin_magic.interview import convergence as cv
from odin_magic.interview.models import (
    ClarityScores, Component, Criterion, Entity, InterviewState, OpenQuestion, RoundRecord
)

GREEN = cv.GREENFIELD_WEIGHTS
BROWN = cv.BROWNFIELD_WEIGHTS


def state(components: dict[str, dict], weights=GREEN, threshold=0.15, **kw) -> InterviewState:
    st = InterviewState(
        stage="interview", task="t", threshold=threshold, hard_cap=20, challenges=[], auto_assist=True,
        weights=dict(weights), mode="brownfield" if "context" in weights else "greenfield", phase="questioning",
        **kw,
    )
    for i, (name, scores) in enumerate(components.items(), 1):
        st.components.append(Component(id=f"C{i}", name=name))
        st.clarity[name] = ClarityScores(**scores)
    return st


def test_component_ambiguity_greenfield_hand_worked():
    # 1 - (.55*.40 + .40*.30 + .30*.30) = 1 - (.22 + .12 + .09) = .57
    scores = ClarityScores(goal=0.55, constraints=0.40, criteria=0.30)
    assert cv.component_ambiguity(scores, GREEN) == 0.57
    # 1 - (.90*.40 + .85*.30 + .80*.30) = 1 - (.36 + .255 + .24) = .145
    assert cv.component_ambiguity(ClarityScores(goal=0.9, constraints=0.85, criteria=0.8), GREEN) == 0.145


def test_component_ambiguity_brownfield_uses_context():
    # 1 - (.8*.35 + .6*.25 + .4*.25 + .5*.15) = 1 - (.28 + .15 + .10 + .075) = .395
    scores = ClarityScores(goal=0.8, constraints=0.6, criteria=0.4, context=0.5)
    assert cv.component_ambiguity(scores, BROWN) == 0.395
    # the same clarity read greenfield ignores context: 1 - (.32 + .18 + .12) = .38
    assert cv.component_ambiguity(scores, GREEN) == 0.38


def test_run_ambiguity_is_the_maximum_over_active_components():
    st = state({
        "Ingestion": dict(goal=0.9, constraints=0.9, criteria=0.9),  # .10
        "Export": dict(goal=0.5, constraints=0.5, criteria=0.5),  # .50
        "UI": dict(goal=0.7, constraints=0.7, criteria=0.7),  # .30
    })
    assert cv.run_ambiguity(st) == (0.5, "Export")
    st.components[1].status = "deferred"  # deferred components are not scored
    assert cv.run_ambiguity(st) == (0.3, "UI")


def test_weights_default_by_mode_and_override():
    assert cv.weights_for("greenfield") == {"goal": 0.4, "constraints": 0.3, "criteria": 0.3}
    assert cv.weights_for("brownfield") == {"goal": 0.35, "constraints": 0.25, "criteria": 0.25, "context": 0.15}
    override = {"goal": 0.5, "criteria": 0.5}
    assert cv.weights_for("brownfield", override) == override


def test_detect_mode(tmp_path):
    (tmp_path / "README.md").write_text("hi")
    (tmp_path / "notes.ipynb").write_text("{}")
    (tmp_path / ".venv" / "lib").mkdir(parents=True)
    (tmp_path / ".venv" / "lib" / "x.py").write_text("")
    (tmp_path / ".odin-loop" / "runs").mkdir(parents=True)
    (tmp_path / ".odin-loop" / "runs" / "h.py").write_text("")
    assert cv.detect_mode(tmp_path) == "greenfield"
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.ts").write_text("")
    assert cv.detect_mode(tmp_path) == "brownfield"


def test_ontology_stability_hand_worked():
    previous = [
        Entity(name="Row", type="core", fields=["id", "amount", "date"]),
        Entity(name="Account", type="core", fields=["id", "name"]),
        Entity(name="Ledger", type="supporting", fields=["entries", "owner", "currency"]),
        Entity(name="Bank", type="external", fields=["iban"]),
    ]
    current = [
        Entity(name="row", type="core", fields=["id", "amount"]),  # stable (name, case-insensitive)
        Entity(name="Account", type="core", fields=["id"]),  # stable
        Entity(name="Book", type="supporting", fields=["entries", "owner", "balance"]),  # renamed Ledger: 2/3
        Entity(name="Payee", type="core", fields=["iban"]),  # new: Bank is another type
        Entity(name="Rate", type="external", fields=[]),  # new
    ]
    stab = cv.ontology_stability(previous, current)
    assert (stab.total, stab.stable, stab.renamed) == (5, 2, 1)
    assert stab.value == 0.6  # (2 + 1) / 5


def test_renamed_needs_more_than_half_the_fields():
    previous = [Entity(name="Ledger", type="core", fields=["a", "b", "c", "d"])]
    half = [Entity(name="Book", type="core", fields=["a", "b", "x", "y"])]  # 2/4 = 50 %: not renamed
    more = [Entity(name="Book", type="core", fields=["a", "b", "c", "y"])]  # 3/4
    assert cv.ontology_stability(previous, half).value == 0.0
    assert cv.ontology_stability(previous, more).value == 1.0


def test_first_snapshot_has_no_stability():
    assert cv.ontology_stability(None, [Entity(name="Row")]) is None
    assert cv.ontology_stability([], [Entity(name="Row")]) is None


def test_target_is_the_weakest_component_and_dimension():
    st = state({
        "Ingestion": dict(goal=0.6, constraints=0.5, criteria=0.2),  # .38
        "Export": dict(goal=0.3, constraints=0.6, criteria=0.4),  # .54
    })
    assert cv.choose_target(st) == ("Export", "goal")


def test_target_rotates_across_components():
    st = state({
        "Ingestion": dict(goal=0.6, constraints=0.5, criteria=0.2),  # .38
        "Export": dict(goal=0.3, constraints=0.6, criteria=0.4),  # .54, weakest
    })
    st.rounds.append(RoundRecord(number=1, component="Export", dimension="goal", ambiguity_before=1, question="q"))
    assert cv.choose_target(st) == ("Ingestion", "criteria")


def test_clear_component_does_not_stand_in_for_a_vague_one():
    st = state({
        "Review UI": dict(goal=0.95, constraints=0.95, criteria=0.95),  # .05, described in depth
        "Export": dict(goal=0.4, constraints=0.6, criteria=0.5),  # .49
    })
    st.criteria.append(Criterion(component="Review UI", text="c"))
    st.rounds.append(RoundRecord(number=1, component="Export", dimension="goal", ambiguity_before=1, question="q"))
    # Review UI is clear and has a criterion: the rotation does not go back to it
    assert cv.choose_target(st)[0] == "Export"


def test_clear_component_without_a_criterion_is_asked_for_criteria():
    st = state({"Ingestion": dict(goal=0.95, constraints=0.9, criteria=0.9)})  # .065
    assert cv.choose_target(st) == ("Ingestion", "criteria")


def test_ties_go_to_the_heavier_dimension_and_skips_are_avoided():
    st = state({"Ingestion": dict(goal=0.5, constraints=0.5, criteria=0.5)})
    assert cv.choose_target(st) == ("Ingestion", "goal")
    st.skipped.append("Ingestion.goal")
    assert cv.choose_target(st) == ("Ingestion", "constraints")


def test_clarity_cap_holds_the_given_dimensions():
    old = ClarityScores(goal=0.5, constraints=0.9, criteria=0.3)
    new = ClarityScores(goal=0.95, constraints=0.95, criteria=0.6)
    held, dims = cv.hold_at_cap(old, new, ["goal", "constraints", "criteria"])
    assert held.goal == 0.85 and dims == ["goal", "constraints"]
    assert held.constraints == 0.9  # was already above the cap: kept, not lowered, not raised
    assert held.criteria == 0.6  # below the cap: untouched
    held, dims = cv.hold_at_cap(old, new, ["constraints"])
    assert held.goal == 0.95 and dims == ["constraints"]


def test_stop_condition_needs_all_three():
    st = state({"Ingestion": dict(goal=0.9, constraints=0.9, criteria=0.9)})  # .10
    check = cv.stop_check(st)
    assert check.ambiguity_ok and check.missing_criteria == ["Ingestion"] and not check.holds
    st.criteria.append(Criterion(component="Ingestion", text="Given x when y then z"))
    assert cv.stop_check(st).holds
    st.open_questions.append(OpenQuestion(text="Which currency?", blocking=True))
    check = cv.stop_check(st)
    assert check.blocking == ["Which currency?"] and not check.holds
    st.open_questions[0].resolved = True
    assert cv.stop_check(st).holds
    st.open_questions.append(OpenQuestion(text="a risk", blocking=False))
    assert cv.stop_check(st).holds  # non-blocking risks do not block
    st.clarity["Ingestion"] = ClarityScores(goal=0.9, constraints=0.85, criteria=0.79)  # .148
    assert cv.stop_check(st).holds
    st.clarity["Ingestion"] = ClarityScores(goal=0.9, constraints=0.8, criteria=0.8)  # .16
    check = cv.stop_check(st)
    assert not check.holds and not check.ambiguity_ok
    assert "run ambiguity 0.16 > threshold 0.15 (worst: Ingestion)" in check.reasons()


@pytest.mark.parametrize("threshold, clarity, holds", [(0.15, 0.85, True), (0.15, 0.84, False)])
def test_threshold_is_inclusive(threshold, clarity, holds):
    st = state({"A": dict(goal=clarity, constraints=clarity, criteria=clarity)}, threshold=threshold)
    st.criteria.append(Criterion(component="A", text="c"))
    assert cv.stop_check(st).holds is holds
