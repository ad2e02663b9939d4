"""What a scored round changes in an interview's state: the clarity scores (held at the cap where only
an auto-answer lifted them), the ontology and the spec material; and what is still unclear when the
interview stops short of convergence.
"""

from __future__ import annotations

from odin_magic.interview import convergence as cv
from odin_magic.interview.models import (
    ClarityScores, Criterion, InterviewState, OpenQuestion, RoundAssessment, RoundRecord
)


def apply_scores(st: InterviewState, record: RoundRecord, assessment: RoundAssessment, by: str, high: bool) -> None:
    """The round's clarity scores into the state (0..1), an auto-answer's rise held at the cap unless confident."""
    for update in assessment.scores:
        comp = st.component(update.component)
        if comp is None or comp.status != "active":
            record.notes.append(f"scores for unknown or deferred component {update.component!r} ignored")
            continue
        old = st.clarity.get(comp.name, ClarityScores())
        values = old.model_dump()
        for dim in st.weights:
            v = getattr(update, dim)
            if v is not None:
                values[dim] = max(0.0, min(1.0, float(v)))
        new = ClarityScores(**values)
        # The clarity cap: what only an auto-answer lifted stays at or below .85 unless it was
        # confident ("high"). A dimension an auto-answer lifted stays held in later rounds until
        # a user's answer targets that very dimension.
        lifted = st.lifted_by.setdefault(comp.name, {})
        rose = [d for d in st.weights if new.get(d) > old.get(d) + 1e-9]
        if by == "auto":
            hold = [] if high else rose
            for dim in rose:
                lifted[dim] = "high" if high else "auto"
        else:
            direct = by in ("user", "option") and comp.name == record.component
            if direct and lifted.get(record.dimension) == "auto":
                lifted[record.dimension] = "user"
            hold = [d for d in rose if lifted.get(d) == "auto"]
        new, capped = cv.hold_at_cap(old, new, hold)
        record.capped += [f"{comp.name}.{d}" for d in capped]
        st.clarity[comp.name] = new


def take_assessment(st: InterviewState, record: RoundRecord, assessment: RoundAssessment) -> None:
    """The round's ontology and spec material into the state: entities (and their stability), goal, testable
    criteria of active components, edge cases, non-goals, open questions (new and resolved), the challenge's outcome."""
    # ontology
    if assessment.entities:
        stab = cv.ontology_stability(st.entities, assessment.entities)
        st.entities = list(assessment.entities)
        record.entities = len(assessment.entities)
        if stab is not None:
            record.stability, record.stable, record.renamed = stab.value, stab.stable, stab.renamed
    else:
        record.entities = len(st.entities)
    # spec material
    if assessment.goal:
        st.goal = assessment.goal.strip()
    for crit in assessment.criteria:
        comp = st.component(crit.component)
        if comp is None or comp.status != "active" or not crit.testable or not crit.text.strip():
            if comp is None:
                record.notes.append(f"criterion for unknown component {crit.component!r} ignored")
            continue
        if not any(c.text.casefold() == crit.text.strip().casefold() for c in st.criteria):
            st.criteria.append(Criterion(component=comp.name, text=crit.text.strip(), round=record.number))
    for item in assessment.edge_cases:
        if item.strip() and item.strip() not in st.edge_cases:
            st.edge_cases.append(item.strip())
    for item in assessment.out_of_scope:
        if item.strip() and item.strip() not in st.out_of_scope:
            st.out_of_scope.append(item.strip())
    for q in assessment.open_questions:
        if q.text.strip() and not any(o.text.casefold() == q.text.strip().casefold() for o in st.open_questions):
            st.open_questions.append(OpenQuestion(text=q.text.strip(), blocking=q.blocking, round=record.number))
    resolved = {r.strip().casefold() for r in assessment.resolved_questions}
    for q in st.open_questions:
        if q.text.casefold() in resolved:
            q.resolved = True
    if record.challenge is not None and record.challenge.probe:
        record.challenge.outcome = (assessment.challenge_outcome or record.challenge.answer or "").strip() or None


def record_residual(st: InterviewState, accepted: bool) -> None:
    """What is still unclear at a stop short of convergence, as Open Questions. ``accepted`` (``proceed``):
    the user accepts it, so the gate passes on it (``accepted_ambiguity``) and it is not asked about again."""
    per = cv.component_ambiguities(st)
    suffix, source = (" — accepted by the user", "accepted") if accepted else ("", "hard_cap")
    residual = []
    for comp in st.active:
        amb = per[comp.name]
        if cv.within(amb, st.threshold):
            continue
        scores = st.clarity.get(comp.name, ClarityScores())
        weakest = min(st.weights, key=lambda d: scores.get(d))
        residual.append(f"[{comp.name}] residual ambiguity {amb:.2f} above the target {st.threshold:.2f} "
                        f"(weakest: {weakest} {scores.get(weakest):.2f}){suffix}")
    if accepted:
        residual += [f"[{name}] no testable acceptance criterion yet{suffix}"
                     for name in cv.stop_check(st).missing_criteria]
        st.accepted_ambiguity = cv.run_ambiguity(st)[0]
    for text in residual:
        if not any(q.text == text for q in st.open_questions):
            st.open_questions.append(OpenQuestion(text=text, round=st.round, source=source))
