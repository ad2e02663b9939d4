"""The interview's two documents, rendered from its state.

``interview-log.md`` is the convergence ledger (header, topology, context
findings, one entry per round, convergence trace); ``spec.md`` is the
deliverable with the fixed sections Goal, Topology, Acceptance Criteria,
Assumptions, Out of Scope, Edge Cases, Open Questions and Convergence. Both
are rewritten whole after every transition, so they never drift from
``interview.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

from odin_magic.interview.convergence import component_ambiguities, run_ambiguity, stop_check, within
from odin_magic.interview.models import ClarityScores, InterviewState, RoundRecord


def num(value: float | None) -> str:
    """``0.55`` -> ``.55``; ``1.0`` -> ``1.00``; ``None`` -> ``n/a``."""
    if value is None:
        return "n/a"
    text = f"{value:.2f}"
    return text[1:] if text.startswith("0.") else text


def weights_line(weights: dict[str, float]) -> str:
    return " / ".join(f"{d} {num(w)}" for d, w in weights.items())


def _scores_line(scores: ClarityScores, weights: dict[str, float]) -> str:
    return "  ".join(f"{d} {num(scores.get(d))}" for d in weights)


def _stability(r: RoundRecord) -> str:
    if r.stability is None:
        return "n/a"
    return f"{r.stable + r.renamed}/{r.entities} = {num(r.stability)}"


def _reached(state: InterviewState) -> int | None:
    for r in state.rounds:
        if within(r.ambiguity, state.threshold):
            return r.number
    return None


def ambiguity_trace(state: InterviewState) -> str:
    steps = "  ".join(f"{r.number}→{num(r.ambiguity)}" for r in state.rounds) or "—"
    reached = _reached(state)
    tail = f"reached @ round {reached}" if reached else "not reached"
    return f"{steps}   (target {num(state.threshold)}, {tail})"


def stability_trace(state: InterviewState) -> str:
    return "  ".join(num(r.stability) for r in state.rounds) or "—"


def final_per_component(state: InterviewState) -> str:
    per = component_ambiguities(state)
    return " · ".join(f"{name} {num(a)}" for name, a in per.items()) or "—"


def _round_lines(state: InterviewState, rnd: RoundRecord, previous: dict[str, ClarityScores]) -> list[str]:
    """One round in the log: challenge, question and answer, the scores that changed, the numbers and notes."""
    out = ["", f"### Round {rnd.number} | targeting: {rnd.dimension} · {rnd.component}"]
    ch = rnd.challenge
    if ch is None:
        out.append("challenge: —")
    elif ch.skipped_reason:
        out.append(f"challenge: {ch.kind} not fired — {ch.skipped_reason}")
    else:
        outcome = ch.outcome or ch.answer or "(no outcome)"
        out.append(f'challenge: {ch.kind} → "{ch.probe}" → {outcome}')
    out.append(f"Q: {rnd.question}")
    for i, opt in enumerate(rnd.options, 1):
        out.append(f"   option {i}: {opt.answer} (confidence {opt.confidence})")
    if rnd.answered_by == "auto" and rnd.auto_answer is not None:
        out.append(f"A (auto-answer, confidence {rnd.auto_answer.confidence}; carried as an assumption): {rnd.answer}")
    elif rnd.answered_by == "option":
        out.append(f"A (picked an offered candidate): {rnd.answer}")
    else:
        out.append(f"A: {rnd.answer}")
    shown = [rnd.component] + [
        name for name, s in rnd.scores.items() if name != rnd.component and previous.get(name, ClarityScores()) != s
    ]
    for name in shown:
        if name in rnd.scores:
            out.append(
                f"scores ({name}): {_scores_line(rnd.scores[name], state.weights)}"
                f"   → ambiguity {num(rnd.component_ambiguity.get(name))}"
            )
    out.append(f"run ambiguity: {num(rnd.ambiguity)}   (worst: {rnd.worst})")
    out.append(f"ontology: {rnd.entities} entities, stability {_stability(rnd)}")
    if rnd.capped:
        out.append("clarity cap .85 (auto-answer only): " + ", ".join(rnd.capped))
    for note in rnd.assist:
        out.append(f"auto-assist: {note.text}")
    for note in rnd.notes:
        out.append(f"note: {note}")
    return out


def render_log(state: InterviewState) -> str:
    out = [
        f"# Interview Log — {state.task}   (deep interview)",
        f"ambiguity target: {num(state.threshold)}   ·   dimensions: {weights_line(state.weights)}"
        f"   ·   mode: {state.mode}",
        "",
    ]
    if state.topology_confirmed_at:
        out.append(f"## Topology   (status: confirmed @ {state.topology_confirmed_at})")
    else:
        out.append("## Topology   (status: proposed, awaiting confirmation)")
    for c in state.components:
        status = "active" if c.status == "active" else "deferred (out of scope this run)"
        out.append(f"- {c.id} {c.name}  — {status}")
    if not state.components:
        out.append("- (not proposed yet)")
    if state.findings:
        out += ["", "## Context findings"]
        out += [f"- {f.text}" + (f" ({f.citation})" if f.citation else "") for f in state.findings]
    out += ["", "## Rounds"]
    if not state.rounds:
        out.append("(none yet)")
    previous: dict[str, ClarityScores] = {}
    for r in state.rounds:
        out += _round_lines(state, r, previous)
        previous = dict(r.scores)
    out += [
        "",
        "## Convergence trace",
        f"ambiguity:  {ambiguity_trace(state)}",
        f"ontology stability:  {stability_trace(state)}",
        f"final per-component: {final_per_component(state)}",
    ]
    if state.phase == "done":
        check = stop_check(state)
        reason = {
            "converged": "stop condition met",
            "hard_cap": f"hard cap reached ({state.round_cap} rounds); residual ambiguity recorded as Open Questions",
            "user": (f"accepted by the user at ambiguity {state.accepted_ambiguity or 0:.2f} (`proceed`); "
                     "residual ambiguity recorded as Open Questions"),
        }.get(state.stopped_by or "", "stopped")
        out.append(f"outcome: {reason} after {state.round} rounds; stop condition {'holds' if check.holds else 'does not hold'}")
    return "\n".join(out) + "\n"


def numbered_criteria(state: InterviewState) -> list[tuple[str, str, str]]:
    """The acceptance criteria as spec.md numbers them: ``(AC<n>, component, text)``, active components only."""
    out = []
    for comp in state.active:
        for crit in (c for c in state.criteria if c.component == comp.name):
            out.append((f"AC{len(out) + 1}", comp.name, crit.text))
    return out


def render_spec(state: InterviewState) -> str:
    out = [f"# {state.task}", "", "## Goal", state.goal or "(to be clarified)", "", "## Topology"]
    for c in state.components:
        label = "active" if c.status == "active" else "deferred — out of scope this run"
        out.append(f"- {c.id} {c.name} — {label}" + (f": {c.summary}" if c.summary else ""))
    if not state.components:
        out.append("(not proposed yet)")
    out += ["", "## Acceptance Criteria"]
    numbered = numbered_criteria(state)
    out += [f"{cid[2:]}. [{component}] {text}" for cid, component, text in numbered]
    if not numbered:
        out.append("(none yet)")
    out += ["", "## Assumptions"]
    out += [f"- {a}" for a in state.assumptions] or ["none"]
    out += ["", "## Out of Scope"]
    scope = [f"- {c.name} (deferred component)" for c in state.deferred] + [f"- {s}" for s in state.out_of_scope]
    out += scope or ["none"]
    out += ["", "## Edge Cases"]
    out += [f"- {e}" for e in state.edge_cases] or ["none"]
    out += ["", "## Open Questions"]
    questions = []
    for q in state.open_questions:
        if q.resolved:
            questions.append(f"- (resolved) {q.text}")
        elif q.blocking:
            questions.append(f"- [blocking] {q.text}")
        else:
            questions.append(f"- [non-blocking risk] {q.text}")
    out += questions or ["none"]
    ambiguity, worst = run_ambiguity(state)
    per = component_ambiguities(state)
    out += [
        "",
        "## Convergence",
        f"run ambiguity: {num(ambiguity)} (target {num(state.threshold)}; worst: {worst or '—'}) after {state.round} rounds",
        "",
        "| component | " + " | ".join(state.weights) + " | ambiguity |",
        "|---" * (len(state.weights) + 2) + "|",
    ]
    for comp in state.active:
        s = state.clarity.get(comp.name, ClarityScores())
        out.append(
            f"| {comp.name} | " + " | ".join(num(s.get(d)) for d in state.weights) + f" | {num(per[comp.name])} |"
        )
    out += [
        "",
        f"ambiguity trace: {ambiguity_trace(state)}",
        f"ontology stability trace: {stability_trace(state)}",
    ]
    return "\n".join(out) + "\n"


def interview_criteria_ids(run_dir: Path) -> list[str]:
    """The ids (AC1..ACn) of the criteria the run's deep interview numbered in spec.md, if it had one."""
    path = Path(run_dir) / "interview.json"
    if not path.is_file():
        return []
    try:
        state = InterviewState.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return []
    return [cid for cid, _, _ in numbered_criteria(state)] if state.phase == "done" else []
