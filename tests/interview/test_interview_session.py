"""The interview's rounds with the scripted model: numbers, ledger, challenges, auto-assist, caps, resume."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from odin_magic.core.errors import UsageError
from odin_magic.interview import InterviewError, InterviewPlace, InterviewSession, ScriptedInterviewModel
from odin_magic.interview.protocol import Reply
from odin_magic.loop.schema import Stage
from odin_magic.loop.manifest import validate_manifest_file

from support.interview_loops import STUCK


def make_stage(**interview) -> Stage:
    return Stage.model_validate({
        "id": "interview", "title": "Deep Interview", "goal": "Agree on a testable spec",
        "prompt": "Probe failure behaviour too.", "interview": {"mode": "deep", **interview},
        "produces": ["spec.md", "interview-log.md"], "gate": {"mode": "ai+human", "check": "converged"},
    })


class Harness:
    """A session over a tmp project, recording its events."""

    def __init__(self, tmp_path: Path, script: str, model=None, **interview):
        self.project = tmp_path / "project"
        self.project.mkdir(exist_ok=True)
        self.run_dir = self.project / ".odin-loop" / "runs" / "r1"
        self.stage = make_stage(**interview)
        self.model = model or ScriptedInterviewModel.from_yaml(script)
        self.events: list[tuple[str, str, dict]] = []
        self.session = self.open()

    def open(self, model=None) -> InterviewSession:
        return InterviewSession.open(
            InterviewPlace(run_dir=self.run_dir, project_dir=self.project, stage=self.stage, task="csv review"),
            model or self.model, emit=lambda k, t, d: self.events.append((k, t, d)),
        )

    def log(self) -> str:
        return (self.run_dir / "interview-log.md").read_text()

    def spec(self) -> str:
        return (self.run_dir / "spec.md").read_text()

    def section(self, name: str) -> str:
        return self.spec().split(f"## {name}\n")[1].split("\n## ")[0]

    def rounds_summaries(self) -> list[dict]:
        return [d["summary"] for k, _, d in self.events if k == "interview_round"]


# -- the computed numbers and the ledger ---------------------------------------------

NUMBERS = """
goal: Review bank CSV imports before they reach the ledger
components: [Ingestion, Export]
rounds:
  1:
    question: Which file formats arrive, and from where?
    assessment:
      scores: {Ingestion: {goal: .55, constraints: .40, criteria: .30}}
      entities:
        - {name: Row, type: core, fields: [id, amount]}
        - {name: Account, type: core, fields: [id, name]}
      criteria: {Ingestion: ["Given a CSV of 3 rows, when imported, then 3 rows are stored"]}
  2:
    question: Who reads the export, and in which format?
    assessment:
      scores: {Export: {goal: .9, constraints: .9, criteria: .8}}
      entities:
        - {name: Row, type: core, fields: [id, amount]}
        - {name: Account, type: core, fields: [id, name]}
        - {name: Report, type: supporting, fields: [rows, format]}
      criteria: {Export: ["Given 2 approved rows, when exported, then the CSV has 2 data lines and a header"]}
      edge_cases: [an empty file]
  3:
    question: What must never be imported twice?
    assessment:
      scores: {Ingestion: {goal: .9, constraints: .9, criteria: .9}}
      entities:
        - {name: Row, type: core, fields: [id, amount]}
        - {name: Customer, type: core, fields: [id, name, email]}
        - {name: Report, type: supporting, fields: [rows, format]}
        - {name: File, type: external, fields: [path]}
"""


def test_rounds_compute_ambiguity_stability_and_write_the_ledger(tmp_path):
    h = Harness(tmp_path, NUMBERS, challenges=[])
    s = h.session
    assert s.start().kind == "topology"
    q = s.answer("confirm")
    assert (q.round, q.component, q.dimension) == (1, "Ingestion", "goal")
    assert q.header() == "Round 1 | Component: Ingestion | Targeting: goal | Ambiguity: 100%"
    q = s.answer("Bank CSV exports, uploaded by hand")
    # Ingestion: 1 - (.55*.4 + .4*.3 + .3*.3) = .57; Export is still 1.00 and drives the run
    assert (q.round, q.component, q.dimension, q.ambiguity) == (2, "Export", "goal", 1.0)
    q = s.answer("The accountant, as CSV")
    # Export: 1 - (.36 + .27 + .24) = .13; the run is now driven by Ingestion's .57
    assert (q.round, q.component, q.ambiguity) == (3, "Ingestion", 0.57)
    assert s.answer("the same bank reference") is None  # round 3: stop condition holds -> early exit
    assert s.done and s.state.stopped_by == "converged"
    assert [(x["rounds"], x["ambiguity"]) for x in h.rounds_summaries()] == [(1, 1.0), (2, 0.57), (3, 0.13)]
    assert s.summary().model_dump(exclude_none=True) == {
        "threshold": 0.15, "rounds": 3, "ambiguity": 0.13, "topology": ["Ingestion", "Export"],
    }
    r1, r2, r3 = s.state.rounds
    assert r1.stability is None and r2.stability == 0.6667 and r3.stability == 0.75  # 2/3, then (2 stable + 1 renamed) / 4
    log = h.log()
    assert log.startswith("# Interview Log — csv review   (deep interview)\n"
                          "ambiguity target: .15   ·   dimensions: goal .40 / constraints .30 / criteria .30"
                          "   ·   mode: greenfield\n")
    assert ("### Round 1 | targeting: goal · Ingestion\nchallenge: —\n"
            "Q: Which file formats arrive, and from where?\nA: Bank CSV exports, uploaded by hand\n"
            "scores (Ingestion): goal .55  constraints .40  criteria .30   → ambiguity .57\n"
            "run ambiguity: 1.00   (worst: Export)\nontology: 2 entities, stability n/a\n") in log
    assert "ontology: 4 entities, stability 3/4 = .75" in log
    assert "ambiguity:  1→1.00  2→.57  3→.13   (target .15, reached @ round 3)" in log
    assert "ontology stability:  n/a  .67  .75" in log
    assert "final per-component: Ingestion .10 · Export .13" in log
    assert "outcome: stop condition met after 3 rounds; stop condition holds" in log
    spec = h.spec()
    for section in ("Goal", "Topology", "Acceptance Criteria", "Assumptions", "Out of Scope", "Edge Cases",
                    "Open Questions", "Convergence"):
        assert f"\n## {section}\n" in spec
    assert h.section("Acceptance Criteria").splitlines()[:2] == [
        "1. [Ingestion] Given a CSV of 3 rows, when imported, then 3 rows are stored",
        "2. [Export] Given 2 approved rows, when exported, then the CSV has 2 data lines and a header",
    ]
    assert h.section("Edge Cases").strip() == "- an empty file"
    assert h.section("Open Questions").strip() == "none"
    assert "| Ingestion | .90 | .90 | .90 | .10 |" in h.section("Convergence")
    state = json.loads((h.run_dir / "interview.json").read_text())
    assert state["phase"] == "done" and len(state["rounds"]) == 3
    assert not [p for p in h.run_dir.iterdir() if p.name.startswith(".")]  # no temp files left behind
    # the acceptance manifest beside spec.md: each numbered criterion, P0, judged until a command is given
    manifest = validate_manifest_file(h.run_dir / "acceptance.yaml", ["AC1", "AC2"])
    assert manifest.ok, manifest.format()
    assert [(c.id, c.component, c.priority, c.verify) for c in manifest.manifest.criteria] == [
        ("AC1", "Ingestion", "P0", "judge"), ("AC2", "Export", "P0", "judge")]
    assert manifest.manifest.criteria[0].text == "Given a CSV of 3 rows, when imported, then 3 rows are stored"


def test_no_early_exit_before_round_three(tmp_path):
    script = """
components: [Ingestion]
rounds:
  default:
    assessment:
      scores: {Ingestion: {goal: 1, constraints: 1, criteria: 1}}
      criteria: {Ingestion: ["Given x, when y, then z"]}
"""
    h = Harness(tmp_path, script, challenges=[])
    h.session.start()
    assert h.session.answer("confirm").round == 1
    assert h.session.answer("a").round == 2  # the stop condition holds, but round 1 is too early
    assert h.session.answer("b").round == 3
    assert h.session.answer("c") is None
    assert h.session.state.round == 3


# -- challenges -----------------------------------------------------------------------

CHALLENGES = """
components: [Ingestion]
rounds:
  4:
    challenge: {probe: "Do we even need PDF export?"}
    assessment:
      scores: {Ingestion: {goal: .5, constraints: .5, criteria: .5}}
      challenge_outcome: user confirmed CSV only
  6:
    challenge: {probe: "Could one importer serve every bank?"}
  8:
    challenge: {probe: "What IS a transaction here?"}
  default:
    assessment:
      scores: {Ingestion: {goal: .5, constraints: .5, criteria: .5}}
"""


def answer_until(h: Harness, round_no: int) -> None:
    s = h.session
    q = s.start()
    if q.kind == "topology":
        q = s.answer("confirm")
    while q.round < round_no:
        q = s.answer("challenge answer" if q.kind == "challenge" else f"answer {q.round}")


def test_challenges_fire_before_their_rounds_question_and_are_recorded(tmp_path):
    h = Harness(tmp_path, CHALLENGES, threshold=0.1)
    answer_until(h, 4)
    q = h.session.pending
    assert (q.kind, q.round, q.challenge) == ("challenge", 4, "contrarian")
    assert q.text == "Do we even need PDF export?"
    assert q.header() == "Round 4 | Component: Ingestion | Challenge: contrarian | Ambiguity: 50%"
    q = h.session.answer("No, CSV only")
    assert (q.kind, q.round) == ("question", 4)
    q = h.session.answer("fine")
    rec = h.session.state.rounds[3]
    assert (rec.challenge.kind, rec.challenge.answer, rec.challenge.outcome) == (
        "contrarian", "No, CSV only", "user confirmed CSV only")
    assert 'challenge: contrarian → "Do we even need PDF export?" → user confirmed CSV only' in h.log()
    # the scorer saw the challenge exchange with the round's answer
    assert ("challenge:contrarian", 4) in h.model.calls
    answer_until(h, 6)
    assert (h.session.pending.kind, h.session.pending.challenge) == ("challenge", "simplifier")
    answer_until(h, 8)
    # run ambiguity .50 > .30: the ontologist fires
    assert (h.session.pending.kind, h.session.pending.challenge) == ("challenge", "ontologist")
    answer_until(h, 9)
    assert 'challenge: simplifier → "Could one importer serve every bank?" → challenge answer' in h.log()
    assert 'challenge: ontologist → "What IS a transaction here?"' in h.log()
    kinds = [m for m, _ in h.model.calls if m.startswith("challenge")]
    assert kinds == ["challenge:contrarian", "challenge:simplifier", "challenge:ontologist"]


def test_two_challenges_scheduled_for_one_round_fire_one_and_record_the_other(tmp_path):
    h = Harness(tmp_path, CHALLENGES, threshold=0.1, challenges=["contrarian@4", "simplifier@4"])
    answer_until(h, 4)
    assert (h.session.pending.kind, h.session.pending.challenge) == ("challenge", "contrarian")
    h.session.answer("No, CSV only")
    h.session.answer("fine")
    assert h.session.state.rounds[3].notes == ["challenge simplifier@4 not fired: contrarian fired this round"]
    assert [m for m, _ in h.model.calls if m.startswith("challenge")] == ["challenge:contrarian"]


def test_ontologist_is_skipped_when_ambiguity_is_low(tmp_path):
    script = """
components: [Ingestion]
rounds:
  default:
    assessment:
      scores: {Ingestion: {goal: .8, constraints: .8, criteria: .8}}
"""
    h = Harness(tmp_path, script, challenges=["ontologist@3"])  # no criterion: the interview goes on
    answer_until(h, 3)
    q = h.session.pending
    assert (q.kind, q.round) == ("question", 3)  # .20 <= .30: no probe before the question
    h.session.answer("x")
    rec = h.session.state.rounds[2]
    assert rec.challenge.kind == "ontologist" and rec.challenge.probe == ""
    assert "ambiguity 0.20 <= 0.30" in rec.challenge.skipped_reason
    assert "challenge: ontologist not fired — ambiguity 0.20 <= 0.30" in h.log()
    assert not any(m.startswith("challenge") for m, _ in h.model.calls)


def brownfield(tmp_path: Path) -> str:
    """Give the project some code (so the interview is brownfield); return a script with one cited finding."""
    (tmp_path / "project" / "app").mkdir(parents=True)
    (tmp_path / "project" / "app" / "io.py").write_text("def parse(): ...\n")
    return """
components: [Ingestion]
findings: [{text: "imports are parsed in app/io.py", citation: "app/io.py:12"}]
"""


class BarrierModel(ScriptedInterviewModel):
    """The scripted model, but its question and challenge calls must overlap in time."""

    def __init__(self, script: str):
        import yaml

        super().__init__(yaml.safe_load(script))
        self.barrier = threading.Barrier(2, timeout=10)

    def ask_question(self, brief, component, dimension):
        if brief.round == 2:
            self.barrier.wait()
        return super().ask_question(brief, component, dimension)

    def challenge(self, brief, kind):
        self.barrier.wait()
        return super().challenge(brief, kind)

    def propose_components(self, brief):
        self.barrier.wait()
        return super().propose_components(brief)

    def explore(self, brief):
        self.barrier.wait()
        return super().explore(brief)


def test_independent_calls_run_concurrently(tmp_path):
    script = brownfield(tmp_path)
    model = BarrierModel(script)
    h = Harness(tmp_path, script, model=model, challenges=["contrarian@2"])
    assert h.session.state.mode == "brownfield"
    h.session.start()  # propose_components and explore meet at the barrier
    h.session.answer("confirm")
    q = h.session.answer("first")  # round 2's question and its challenge meet at the barrier
    assert (q.kind, q.round) == ("challenge", 2)
    assert not model.barrier.broken


# -- auto-assist ----------------------------------------------------------------------

ASSIST = """
components: [Ingestion]
rounds:
  1:
    question: Which parser library?
    offer_candidates: true
    candidates:
      - {answer: the csv module, confidence: high}
      - {answer: pandas, confidence: medium}
      - {answer: polars, confidence: low}
      - {answer: a hand-written parser, confidence: low}
    assessment:
      scores: {Ingestion: {goal: .5, constraints: .6, criteria: .4}}
  2:
    question: What is the largest file?
    auto_answer: {assumption: "Files stay under 10 MB", confidence: medium}
    assessment:
      scores: {Ingestion: {goal: .6, constraints: .95, criteria: .5}}
  3:
    question: Which encodings?
    offer_candidates: true
    candidates: [{answer: UTF-8 only}]
    auto_answer: {assumption: "UTF-8 only", confidence: high}
    assessment:
      scores: {Ingestion: {goal: .95, constraints: .95, criteria: .5}}
  default:
    assessment:
      scores: {Ingestion: {goal: .6}}
"""


def test_research_offers_two_to_three_ranked_candidates(tmp_path):
    h = Harness(tmp_path, ASSIST, challenges=[])
    answer_until(h, 1)
    q = h.session.pending
    assert [o.answer for o in q.options] == ["the csv module", "pandas", "polars"]  # ranked, at most 3
    assert q.allow_auto
    with pytest.raises(InterviewError, match="no option 4"):
        h.session.answer("4")
    h.session.answer("2")
    rec = h.session.state.rounds[0]
    assert (rec.answered_by, rec.answer) == ("option", "pandas")
    assert "auto-assist: auto-research → offered 3 candidates" in h.log()
    assert "A (picked an offered candidate): pandas" in h.log()


def test_fewer_than_two_candidates_are_not_offered(tmp_path):
    h = Harness(tmp_path, ASSIST, challenges=[])
    answer_until(h, 3)
    assert h.session.pending.options == []
    h.session.answer("UTF-8 and Latin-1")
    assert "auto-research → fewer than two defensible candidates" in h.log()


def test_you_decide_carries_an_assumption_and_caps_clarity(tmp_path):
    h = Harness(tmp_path, ASSIST, challenges=[])
    answer_until(h, 2)
    h.session.answer("you decide")
    rec = h.session.state.rounds[1]
    assert rec.answered_by == "auto" and rec.answer == "Files stay under 10 MB"
    # the auto-answer alone may lift constraints to .85, not .95
    assert h.session.state.clarity["Ingestion"].constraints == 0.85
    assert rec.capped == ["Ingestion.constraints"]
    # 1 - (.6*.4 + .85*.3 + .5*.3) = 1 - (.24 + .255 + .15) = .355
    assert rec.ambiguity == 0.355
    assert h.section("Assumptions").strip() == "- Files stay under 10 MB"
    log = h.log()
    assert "A (auto-answer, confidence medium; carried as an assumption): Files stay under 10 MB" in log
    assert "clarity cap .85 (auto-answer only): Ingestion.constraints" in log


def test_high_confidence_auto_answer_is_not_capped(tmp_path):
    h = Harness(tmp_path, ASSIST, challenges=[])
    answer_until(h, 3)
    h.session.answer("I'm not sure")
    assert h.session.state.clarity["Ingestion"].goal == 0.95
    assert h.session.state.rounds[2].capped == []


def test_a_user_answer_is_never_capped(tmp_path):
    h = Harness(tmp_path, ASSIST, challenges=[])
    answer_until(h, 2)
    h.session.answer("under 5 MB, always")
    assert h.session.state.clarity["Ingestion"].constraints == 0.95


HELD = """
components: [Ingestion]
rounds:
  1:
    question: How large can a file be?
    auto_answer: {assumption: "Under 10 MB", confidence: low}
    assessment: {scores: {Ingestion: {constraints: .95}}}
  2:
    assessment:
      scores: {Ingestion: {goal: .9, constraints: .95, criteria: .9}}
      criteria: {Ingestion: ["Given a 12 MB file, when imported, then it is refused"]}
  3:
    assessment: {scores: {Ingestion: {constraints: .95}}}
"""


def test_an_auto_lifted_dimension_stays_held_until_the_user_answers_it(tmp_path):
    h = Harness(tmp_path, HELD, challenges=[])
    answer_until(h, 1)
    assert h.session.pending.dimension == "goal"
    h.session.answer("you decide")
    assert h.session.state.clarity["Ingestion"].constraints == 0.85
    # round 2 targets another dimension: the scorer's .95 for constraints is still held
    q = h.session.answer("to review imports")
    assert h.session.state.clarity["Ingestion"].constraints == 0.85
    assert h.session.state.rounds[1].capped == ["Ingestion.constraints"]
    assert (q.round, q.dimension) == (3, "constraints")
    h.session.answer("never above 5 MB")  # the user answers the dimension itself
    assert h.session.state.clarity["Ingestion"].constraints == 0.95


def test_auto_assist_off(tmp_path):
    h = Harness(tmp_path, ASSIST, challenges=[], auto_assist=False)
    answer_until(h, 1)
    assert h.session.pending.options == [] and not h.session.pending.allow_auto
    assert not any(m == "research_candidates" for m, _ in h.model.calls)
    with pytest.raises(InterviewError, match="auto-assist is off"):
        h.session.answer("you decide")


CROSSING = """
components: [Ingestion]
rounds:
  1:
    assessment:
      scores: {Ingestion: {goal: .9, constraints: .9, criteria: .5}}
      criteria: {Ingestion: ["Given x, when y, then z"]}
  2:
    assessment:
      scores: {Ingestion: {goal: .9, constraints: .9, criteria: .5}}
  3:
    question: How are duplicates detected?
    auto_answer: {assumption: "By bank reference", confidence: medium}
    assessment:
      scores: {Ingestion: {criteria: .95}}
"""


def test_auto_answer_that_would_cross_the_threshold_asks_first(tmp_path):
    h = Harness(tmp_path, CROSSING, challenges=[])
    answer_until(h, 3)
    assert h.session.pending.ambiguity == 0.22  # 1 - (.36 + .27 + .15)
    q = h.session.answer("you decide")
    # capped at .85: 1 - (.36 + .27 + .255) = .115 <= .15, so the user is asked first
    assert q.kind == "confirm_auto" and "By bank reference" in q.text and "target 0.15" in q.text
    assert h.session.state.round == 2  # nothing committed yet
    q = h.session.answer("no")
    assert (q.kind, q.round, q.text) == ("question", 3, "How are duplicates detected?")
    assert h.session.answer("you decide").kind == "confirm_auto"
    assert h.session.answer("yes") is None  # accepted: round 3 converges
    rec = h.session.state.rounds[2]
    assert rec.answered_by == "auto" and rec.ambiguity == 0.115
    assert "auto-answer crossed the threshold; the user accepted it" in rec.notes
    assert h.session.state.assumptions == ["By bank reference"]


def test_confirming_an_auto_answer_with_own_words_answers_the_question(tmp_path):
    h = Harness(tmp_path, CROSSING, challenges=[])
    answer_until(h, 3)
    h.session.answer("you decide")
    assert h.session.answer("by date and amount") is None
    rec = h.session.state.rounds[2]
    assert (rec.answered_by, rec.answer) == ("user", "by date and amount")
    assert h.session.state.clarity["Ingestion"].criteria == 0.95  # the user's answer: no cap
    assert h.session.state.assumptions == []


def test_skip_parks_an_open_question_and_moves_on(tmp_path):
    h = Harness(tmp_path, CROSSING, challenges=[])
    answer_until(h, 1)
    q = h.session.pending
    h.session.answer("skip")
    assert h.session.pending.dimension != q.dimension
    assert h.section("Open Questions").strip() == f"- [non-blocking risk] [Ingestion] {q.text}"


# -- caps -----------------------------------------------------------------------------


def test_hard_cap_stops_and_turns_residual_ambiguity_into_open_questions(tmp_path):
    h = Harness(tmp_path, STUCK, challenges=[], hard_cap=4)
    answer_until(h, 4)
    assert h.session.answer("last") is None
    st = h.session.state
    assert st.stopped_by == "hard_cap" and st.round == 4
    check = h.session.stop_check()
    assert not check.holds and check.missing_criteria == ["Ingestion"]
    assert h.section("Open Questions").strip() == (
        "- [non-blocking risk] [Ingestion] residual ambiguity 0.50 above the target 0.15 (weakest: goal 0.50)"
    )
    assert "outcome: hard cap reached (4 rounds)" in h.log()
    assert [k for k, _, _ in h.events][-1] == "interview_done"
    with pytest.raises(InterviewError, match="finished"):
        h.session.answer("more")


def test_warning_at_round_ten_then_proceed(tmp_path):
    h = Harness(tmp_path, STUCK, challenges=[])
    answer_until(h, 10)
    with pytest.raises(InterviewError, match="offered after round 10"):
        h.session.answer("proceed")
    q = h.session.answer("ten")
    assert q.round == 11
    notices = [t for k, t, _ in h.events if k == "notice" and "10 rounds in" in t]
    assert len(notices) == 1 and "`proceed`" in notices[0]
    assert "note: warning: 10 rounds in" in h.log()
    assert h.session.answer("proceed") is None
    assert h.session.state.stopped_by == "user" and h.session.state.round == 10
    assert "residual ambiguity 0.50" in h.section("Open Questions")


def test_reopen_after_the_end_continues_for_another_block(tmp_path):
    h = Harness(tmp_path, STUCK, challenges=[], hard_cap=3)
    answer_until(h, 3)
    h.session.answer("x")
    assert h.session.done
    q = h.session.reopen("Ingestion must also accept XLSX")
    assert q.round == 4 and h.session.state.round_cap == 6
    assert h.model.briefs[-1].feedback == ("Ingestion must also accept XLSX",)


# -- resume, persistence and model errors ---------------------------------------------------


def test_resume_mid_interview_after_a_restart(tmp_path):
    h = Harness(tmp_path, CHALLENGES, threshold=0.1)
    answer_until(h, 4)
    assert h.session.pending.kind == "challenge"
    h.session.answer("No, CSV only")  # the challenge is answered; round 4's question waits
    waiting = h.session.pending
    # a new kernel: a new model and a new session read the run dir
    fresh = ScriptedInterviewModel.from_yaml(CHALLENGES)
    again = h.open(model=fresh)
    assert again.start() == waiting
    assert fresh.calls == []  # nothing is asked twice
    again.answer("fine")
    rec = again.state.rounds[3]
    assert (rec.number, rec.challenge.answer, rec.challenge.outcome) == (4, "No, CSV only", "user confirmed CSV only")
    assert again.pending.round == 5
    assert [r.number for r in again.state.rounds] == [1, 2, 3, 4]


def test_resume_in_round_zero(tmp_path):
    h = Harness(tmp_path, NUMBERS, challenges=[])
    h.session.start()
    h.session.answer("defer Export")
    again = h.open(model=ScriptedInterviewModel.from_yaml(NUMBERS))
    q = again.start()
    assert q.kind == "topology" and "C2 Export (deferred)" in q.text
    assert again.answer("confirm").component == "Ingestion"


def test_a_bad_model_reply_leaves_the_question_waiting(tmp_path):
    script = """
components: [Ingestion]
rounds:
  1:
    assessment: {scores: {Ingestion: {goal: very}}}
"""
    h = Harness(tmp_path, script, challenges=[])
    answer_until(h, 1)
    with pytest.raises(UsageError, match="rounds.1.assessment"):
        h.session.answer("x")
    assert h.session.pending.round == 1 and h.session.state.round == 0
    assert InterviewSession.open(InterviewPlace(run_dir=h.run_dir, project_dir=h.project, stage=h.stage, task="t"),
                                 h.model).pending.round == 1


def test_empty_answer_and_unreadable_state(tmp_path):
    h = Harness(tmp_path, NUMBERS, challenges=[])
    h.session.start()
    with pytest.raises(InterviewError, match="empty"):
        h.session.answer("   ")
    (h.run_dir / "interview.json").write_text("{not json")
    with pytest.raises(InterviewError, match="interview.json: the interview state cannot be read"):
        h.open()


def test_brownfield_findings_are_recorded_first_and_cited(tmp_path):
    script = brownfield(tmp_path)
    h = Harness(tmp_path, script, challenges=[])
    h.session.start()
    st = h.session.state
    assert st.mode == "brownfield" and "context" in st.weights
    assert "## Context findings\n- imports are parsed in app/io.py (app/io.py:12)" in h.log()
    assert "mode: brownfield" in h.log() and "context .15" in h.log()
    h.session.answer("confirm")
    assert "imports are parsed in app/io.py (app/io.py:12)" in h.model.briefs[-1].findings


def test_every_reply_is_a_usage_counted_reply(tmp_path):
    from odin_magic.runs.state import Usage

    class Costly(ScriptedInterviewModel):
        def propose_components(self, brief):
            return Reply(super().propose_components(brief).value, Usage(input_tokens=10, output_tokens=2))

    import yaml

    model = Costly(yaml.safe_load(NUMBERS))
    h = Harness(tmp_path, NUMBERS, model=model, challenges=[])
    h.session.start()
    assert h.session.take_usage().total_tokens == 12
    assert h.session.take_usage().total_tokens == 0


def test_the_stages_dimensions_override_the_weights(tmp_path):
    script = """
components: [Ingestion]
rounds:
  default:
    assessment:
      scores: {Ingestion: {goal: .8, constraints: .1, criteria: .6}}
"""
    h = Harness(tmp_path, script, challenges=[], dimensions={"goal": 0.5, "criteria": 0.5})
    answer_until(h, 1)
    assert h.session.state.weights == {"goal": 0.5, "criteria": 0.5}
    h.session.answer("x")
    # constraints is not a dimension here: 1 - (.8*.5 + .6*.5) = .30
    assert h.session.state.rounds[0].ambiguity == 0.3
    assert "dimensions: goal .50 / criteria .50   ·   mode: greenfield" in h.log()
    assert "scores (Ingestion): goal .80  criteria .60   → ambiguity .30" in h.log()
