"""One deep interview as a resumable state machine.

The session waits for one answer at a time (``pending``). ``start()`` prepares
whatever comes next — the round-0 topology question, a round's challenge or
question — and ``answer(text)`` consumes the user's reply, scores the round,
and either prepares the next question or finishes. Every transition is
written to the run dir atomically (``interview.json``), together with the
ledger (``interview-log.md``) and the spec draft (``spec.md``), so a kernel
restart resumes at the same pending question without asking the model again.

What a user may answer while a round's question is pending:

* free text — their answer; a digit ``1``..``3`` picks an offered candidate;
* ``you decide`` (also ``not sure``, ``I don't know``) — auto-answer, when auto-assist is on;
* ``skip`` — the question is parked under Open Questions;
* ``proceed`` — from round 10 on: stop, accepting the residual ambiguity (the gate passes on it).
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from odin_magic.core.errors import OdinError
from odin_magic.loop.schema import Stage
from odin_magic.runs.state import InterviewSummary, Usage
from odin_magic.core.atomic import write_atomic
from odin_magic.interview import convergence as cv
from odin_magic.loop.manifest import MANIFEST_NAME, existing_manifest, render_manifest
from odin_magic.interview.assessment import apply_scores, record_residual, take_assessment
from odin_magic.interview.ledger import numbered_criteria, render_log, render_spec
from odin_magic.interview.models import (
    AutoAssistNote, ChallengeRecord, ClarityScores, Component, Draft, InterviewState,
    OpenQuestion, PendingQuestion, RoundAssessment, RoundRecord
)
from odin_magic.interview.protocol import Exchange, InterviewBrief, InterviewModel, Reply
from odin_magic.interview.topology import MAX_COMPONENTS, apply_topology_edits, parse_topology_answer

Emit = Callable[[str, str, dict], None]
Clock = Callable[[], Any]

STATE_FILE = "interview.json"
LOG_FILE = "interview-log.md"
SPEC_FILE = "spec.md"

YOU_DECIDE = {"you decide", "you choose", "decide", "/decide", "not sure", "i'm not sure", "im not sure",
              "i don't know", "i dont know", "dont know", "don't know", "no idea", "dunno"}
SKIP = {"skip", "/skip", "pass"}
PROCEED = {"proceed", "/proceed", "stop"}
YES = {"yes", "y", "accept", "ok", "okay", "confirm", "sure"}
NO = {"no", "n", "reject", "decline"}


class InterviewError(OdinError):
    """An answer the interview cannot take in its current state."""


class InterviewModelError(OdinError):
    """The model's reply cannot be used (e.g. no components proposed)."""


def state_path(run_dir: Path, stage_id: str) -> Path:
    """Where a stage's interview state lives: ``interview.json`` for a stage named ``interview``."""
    return Path(run_dir) / (STATE_FILE if stage_id == "interview" else f"interview-{stage_id}.json")


def load_state(path: Path) -> InterviewState | None:
    if not path.is_file():
        return None
    try:
        return InterviewState.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InterviewError(
            f"{path}: the interview state cannot be read ({exc.__class__.__name__})",
            hint="restore the file, or delete it to restart the interview from round 0",
        ) from None


def _default_clock() -> datetime:
    return datetime.now(timezone.utc)


def _norm(text: str) -> str:
    return " ".join(text.strip().casefold().rstrip(".!").split())


@dataclass(frozen=True)
class InterviewPlace:
    """Where an interview happens: its run and project, its stage and the run's task, and the files the
    stage declares (``produces``: where ``interview-log.md`` and ``spec.md`` go, default the run dir)."""

    run_dir: Path
    project_dir: Path
    stage: Stage
    task: str
    produces: dict[str, Path] = field(default_factory=dict)


@dataclass(frozen=True)
class SessionFiles:
    """The files a session writes at every transition: its state, the ledger and the spec draft."""

    state: Path
    log: Path
    spec: Path


class InterviewSession:
    def __init__(self, state: InterviewState, model: InterviewModel, files: SessionFiles, stage: Stage | None = None,
                 clock: Clock | None = None, emit: Emit | None = None):
        self.state = state
        self.model = model
        self.path = Path(files.state)
        self.log_path = Path(files.log)
        self.spec_path = Path(files.spec)
        self._title = stage.display_title if stage else state.stage
        self._goal = (stage.goal or "") if stage else ""
        self._prompt = (stage.prompt or "") if stage else ""
        self._clock = clock or _default_clock
        self._emit = emit or (lambda kind, text, data: None)
        self._usage = Usage()
        self._lock = threading.Lock()

    # -- construction -------------------------------------------------------------
    @classmethod
    def open(cls, place: InterviewPlace, model: InterviewModel, *, clock: Clock | None = None,
             emit: Emit | None = None) -> "InterviewSession":
        """Load the stage's interview from the run dir, or begin a new one."""
        stage, run_dir = place.stage, Path(place.run_dir)
        if stage.interview is None:
            raise InterviewError(f"stage {stage.id!r} has no `interview:` block", hint="add `interview: {mode: deep}`")
        produces = place.produces or {}
        path = state_path(run_dir, stage.id)
        state = load_state(path)
        if state is None:
            cfg = stage.interview
            mode = cv.detect_mode(place.project_dir)
            state = InterviewState(
                stage=stage.id,
                task=place.task,
                threshold=cfg.threshold,
                hard_cap=cfg.hard_cap,
                challenges=list(cfg.challenges),
                auto_assist=cfg.auto_assist,
                weights=cv.weights_for(mode, cfg.dimensions),
                mode=mode,
                round_cap=cfg.hard_cap,
            )
        files = SessionFiles(path, produces.get(LOG_FILE, run_dir / LOG_FILE), produces.get(SPEC_FILE, run_dir / SPEC_FILE))
        session = cls(state, model, files, stage=stage, clock=clock, emit=emit)
        if not state.started_at:
            state.started_at = session._now()
        return session

    # -- public API ----------------------------------------------------------------
    @property
    def pending(self) -> PendingQuestion | None:
        return self.state.pending

    @property
    def done(self) -> bool:
        return self.state.phase == "done"

    def summary(self) -> InterviewSummary:
        ambiguity, _ = cv.run_ambiguity(self.state)
        return InterviewSummary(
            threshold=self.state.threshold,
            rounds=self.state.round,
            ambiguity=round(ambiguity, 4),
            topology=[c.name for c in self.state.active],
            accepted=True if self.state.accepted_ambiguity is not None and self.state.phase == "done" else None,
        )

    def stop_check(self) -> cv.StopCheck:
        return cv.stop_check(self.state)

    def take_usage(self) -> Usage:
        """The model usage since the last call (for the run's accounting)."""
        with self._lock:
            usage, self._usage = self._usage, Usage()
        return usage

    def start(self) -> PendingQuestion | None:
        """Prepare what comes next; on resume, the pending question is returned as it was."""
        st = self.state
        if st.phase == "done":
            return None
        if st.pending is not None:
            return st.pending
        if st.phase == "topology":
            self._propose_topology()
        else:
            self._begin_round()
        return st.pending

    def answer(self, text: str) -> PendingQuestion | None:
        """Take the user's reply to the pending question; returns the next one, or None when done."""
        st = self.state
        if st.phase == "done":
            raise InterviewError("the interview is finished; there is no question to answer")
        if st.pending is None:
            self.start()
            if st.pending is None:
                raise InterviewError("the interview is not waiting for an answer")
        text = (text or "").strip()
        if not text:
            raise InterviewError("the answer is empty", hint="type an answer, `skip`, or `you decide`")
        kind = st.pending.kind
        if kind == "topology":
            self._answer_topology(text)
        elif kind == "challenge":
            self._answer_challenge(text)
        elif kind == "question":
            self._answer_question(text)
        else:
            self._answer_confirm(text)
        return st.pending

    def reopen(self, feedback: str | None = None) -> PendingQuestion | None:
        """Continue a finished interview (a revision request or a failed gate): up to ``hard_cap`` more rounds."""
        st = self.state
        if feedback:
            st.feedback.append(feedback)
        if st.phase != "done":
            self._save()
            return self.start()
        st.phase = "questioning" if st.topology_confirmed_at else "topology"
        st.stopped_by = None
        st.accepted_ambiguity = None
        st.ended_at = None
        st.round_cap = st.round + st.hard_cap
        st.warned = False
        self._save()
        return self.start()

    # -- round 0 -----------------------------------------------------------------
    def _brief(self, round_no: int) -> InterviewBrief:
        return InterviewBrief.of(self.state, title=self._title, goal=self._goal, prompt=self._prompt, round=round_no,
                                 run_dir=str(self.path.parent))

    def _call(self, fn: Callable[..., Reply], *args):
        return self._call_reply(fn, *args).value

    def _call_reply(self, fn: Callable[..., Reply], *args) -> Reply:
        """A model call: its usage counted, its notes told."""
        reply = fn(*args)
        with self._lock:
            self._usage = self._usage + reply.usage
        for note in reply.notes:
            self._emit("notice", note, {})
        return reply

    def _parallel(self, *calls: tuple) -> list:
        """Run independent model calls concurrently; results in call order."""
        calls = [c for c in calls if c is not None]
        if len(calls) == 1:
            return [self._call(*calls[0])]
        with ThreadPoolExecutor(max_workers=len(calls), thread_name_prefix="odin-interview") as pool:
            futures = [pool.submit(self._call, *c) for c in calls]
            return [f.result() for f in futures]

    def _propose_topology(self) -> None:
        st = self.state
        brief = self._brief(0)
        explore = (self.model.explore, brief) if st.mode == "brownfield" and not st.findings else None
        results = self._parallel((self.model.propose_components, brief), explore)
        proposal = results[0]
        if explore is not None:
            st.findings = list(results[1].findings)
        seen: set[str] = set()
        names = []
        for comp in proposal.components:
            name = comp.name.strip()
            if name and name.casefold() not in seen:
                seen.add(name.casefold())
                names.append((name, comp.summary.strip()))
        if not names:
            raise InterviewModelError(
                "the model proposed no components for the topology", hint="run the stage again (`odin step`)"
            )
        if len(names) > MAX_COMPONENTS:
            self._emit("notice", f"the model proposed {len(names)} components; keeping the first {MAX_COMPONENTS}", {})
            names = names[:MAX_COMPONENTS]
        st.goal = proposal.goal.strip() or st.goal
        st.components = []
        st.next_component = 1
        for name, summary in names:
            st.components.append(Component(id=f"C{st.next_component}", name=name, summary=summary))
            st.next_component += 1
        self._ask_topology()

    def _ask_topology(self) -> None:
        st = self.state
        listing = ", ".join(f"{c.id} {c.name}" + (" (deferred)" if c.status == "deferred" else "") for c in st.components)
        text = (
            f"I split the work into: {listing}. Is that right? Merge, split, defer (out of scope this run) "
            f"or add components, or confirm. This interview ends when ambiguity is at or below {st.threshold:.2f}."
        )
        self._wait_for(PendingQuestion(kind="topology", round=0, text=text, ambiguity=1.0))

    def _answer_topology(self, text: str) -> None:
        st = self.state
        edits = parse_topology_answer(text)
        confirmed = apply_topology_edits(st, edits)
        if not confirmed:
            self._ask_topology()
            return
        st.topology_confirmed_at = self._now()
        st.phase = "questioning"
        st.pending = None
        st.clarity = {c.name: st.clarity.get(c.name, ClarityScores()) for c in st.active}
        self._save()
        self._emit("notice", "topology confirmed: " + ", ".join(c.name for c in st.active), {})
        self._begin_round()

    # -- rounds ------------------------------------------------------------------
    def _scheduled_challenge(self, round_no: int) -> list[str]:
        kinds = []
        for item in self.state.challenges:
            kind, _, at = item.partition("@")
            if int(at) == round_no:
                kinds.append(kind)
        return kinds

    def _begin_round(self) -> None:
        st = self.state
        n = st.round + 1
        component, dimension = cv.choose_target(st)
        before, _ = cv.run_ambiguity(st)
        record = RoundRecord(
            number=n, component=component, dimension=dimension, ambiguity_before=before, question=""
        )
        challenge: ChallengeRecord | None = None
        kinds = self._scheduled_challenge(n)
        for extra in kinds[1:]:
            record.notes.append(f"challenge {extra}@{n} not fired: {kinds[0]} fired this round")
        if kinds:
            kind = kinds[0]
            challenge = ChallengeRecord(kind=kind, round=n)
            if kind == "ontologist" and before <= cv.ONTOLOGIST_MIN_AMBIGUITY + 1e-9:
                challenge.skipped_reason = (
                    f"ambiguity {before:.2f} <= {cv.ONTOLOGIST_MIN_AMBIGUITY:.2f}; the ontologist fires only above it"
                )
        brief = self._brief(n)
        fire = challenge is not None and challenge.skipped_reason is None
        results = self._parallel(
            (self.model.ask_question, brief, component, dimension),
            (self.model.challenge, brief, challenge.kind) if fire else None,
        )
        draft_q = results[0]
        if fire:
            challenge.probe = results[1].probe.strip()
        record.question = draft_q.question.strip()
        if st.auto_assist and draft_q.offer_candidates:
            found = self._call(self.model.research_candidates, brief, record.question)
            options = list(found.candidates)[:3]
            if len(options) >= 2:
                record.options = options
                record.assist.append(AutoAssistNote(kind="research", text=f"auto-research → offered {len(options)} candidates"))
            else:
                record.assist.append(
                    AutoAssistNote(kind="research", text="auto-research → fewer than two defensible candidates; asked without options")
                )
        record.challenge = challenge
        st.draft = Draft(record=record, question=draft_q)
        if fire:
            self._wait_for(PendingQuestion(
                kind="challenge", round=n, text=challenge.probe, component=component,
                dimension=dimension, ambiguity=before, challenge=challenge.kind,
            ))
        else:
            self._wait_for(self._question_pending(record))

    def _question_pending(self, record: RoundRecord) -> PendingQuestion:
        return PendingQuestion(
            kind="question", round=record.number, text=record.question, component=record.component,
            dimension=record.dimension, ambiguity=record.ambiguity_before, options=list(record.options),
            allow_auto=self.state.auto_assist,
        )

    def _wait_for(self, question: PendingQuestion) -> None:
        """Make ``question`` the pending one: saved first, then announced."""
        self.state.pending = question
        self._save()
        self._emit("question", question.text, {"pending": question.model_dump(mode="json")})

    def _answer_challenge(self, text: str) -> None:
        st = self.state
        st.draft.record.challenge.answer = "(skipped)" if _norm(text) in SKIP else text
        self._wait_for(self._question_pending(st.draft.record))

    def _answer_question(self, text: str) -> None:
        st = self.state
        record = st.draft.record
        key = _norm(text)
        if key in PROCEED:
            if not st.warned:
                raise InterviewError(
                    f"`proceed` is offered after round {cv.WARNING_ROUND} (this is round {record.number})",
                    hint="answer the question, `skip` it, or say `you decide`",
                )
            st.draft = None
            self._finish("user")
            return
        if key in SKIP:
            self._commit(record, RoundAssessment(), answered_by="skipped", answer="(skipped)")
            return
        if key in YOU_DECIDE:
            if not st.auto_assist:
                raise InterviewError("auto-assist is off for this interview", hint="answer the question or `skip` it")
            self._auto_answer(record)
            return
        answered_by = "user"
        if record.options and key.isdigit():
            k = int(key)
            if not 1 <= k <= len(record.options):
                raise InterviewError(f"there is no option {k}", hint=f"pick 1 to {len(record.options)}, or type an answer")
            text, answered_by = record.options[k - 1].answer, "option"
        assessment = self._score(record, text, answered_by)
        self._commit(record, assessment, answered_by=answered_by, answer=text)

    def _score(self, record: RoundRecord, answer: str, answered_by: str) -> RoundAssessment:
        ch = record.challenge
        exchange = Exchange(
            round=record.number, component=record.component, dimension=record.dimension,
            question=record.question, answer=answer, answered_by=answered_by,
            challenge_kind=ch.kind if ch and ch.probe else None,
            challenge_probe=ch.probe if ch and ch.probe else None,
            challenge_answer=ch.answer if ch and ch.probe else None,
        )
        reply = self._call_reply(self.model.score_round, self._brief(record.number), exchange)
        record.notes.extend(reply.notes)
        return reply.value

    def _auto_answer(self, record: RoundRecord) -> None:
        st = self.state
        auto = self._call(self.model.auto_answer, self._brief(record.number), record.question)
        assessment = self._score(record, auto.assumption, "auto")
        record.auto_answer = auto
        before, _ = cv.run_ambiguity(st)
        trial = st.model_copy(deep=True)
        apply_scores(trial, record.model_copy(deep=True), assessment, "auto", auto.confidence == "high")
        after, _ = cv.run_ambiguity(trial)
        if not cv.within(before, st.threshold) and cv.within(after, st.threshold):
            st.draft.proposed = assessment
            st.draft.record = record
            self._wait_for(PendingQuestion(
                kind="confirm_auto", round=record.number, component=record.component, dimension=record.dimension,
                ambiguity=before,
                text=(
                    f"Auto-answer: \"{auto.assumption}\" (confidence {auto.confidence}). Accepting it would bring "
                    f"ambiguity to {after:.2f}, at or below the target {st.threshold:.2f}. Accept it? "
                    "(yes / no, or type your own answer)"
                ),
            ))
            return
        self._commit(record, assessment, answered_by="auto", answer=auto.assumption)

    def _answer_confirm(self, text: str) -> None:
        st = self.state
        record = st.draft.record
        key = _norm(text)
        if key in YES:
            assessment = st.draft.proposed
            record.notes.append("auto-answer crossed the threshold; the user accepted it")
            self._commit(record, assessment, answered_by="auto", answer=record.auto_answer.assumption)
        elif key in NO:
            record.notes.append("auto-answer rejected by the user")
            record.auto_answer = None
            st.draft.proposed = None
            self._wait_for(self._question_pending(record))
        else:
            record.auto_answer = None
            st.draft.proposed = None
            self._answer_question(text)

    # -- scoring and bookkeeping ---------------------------------------------------
    def _commit(self, record: RoundRecord, assessment: RoundAssessment, *, answered_by: str, answer: str) -> None:
        st = self.state
        auto = record.auto_answer if answered_by == "auto" else None
        record.answer = answer
        record.answered_by = answered_by
        apply_scores(st, record, assessment, answered_by, bool(auto and auto.confidence == "high"))
        if answered_by == "auto" and auto is not None:
            st.assumptions.append(auto.assumption)
            record.assist.append(
                AutoAssistNote(kind="auto_answer", text=f"auto-answer → assumption carried (confidence {auto.confidence})")
            )
        if answered_by == "skipped":
            st.skipped.append(f"{record.component}.{record.dimension}")
            st.open_questions.append(
                OpenQuestion(text=f"[{record.component}] {record.question}", round=record.number, source="skip")
            )
        take_assessment(st, record, assessment)
        # numbers
        record.scores = {c.name: st.clarity.get(c.name, ClarityScores()) for c in st.active}
        record.component_ambiguity = cv.component_ambiguities(st)
        record.ambiguity, record.worst = cv.run_ambiguity(st)
        record.at = self._now()
        if record.number == cv.WARNING_ROUND and not st.warned:
            st.warned = True
            note = (
                f"warning: {record.number} rounds in (ambiguity {record.ambiguity:.2f}, target {st.threshold:.2f}); "
                "answer `proceed` to stop with the current clarity"
            )
            record.notes.append(note)
            self._emit("notice", note, {})
        st.rounds.append(record)
        st.draft = None
        st.pending = None
        self._save()
        self._emit(
            "interview_round",
            f"round {record.number}: ambiguity {record.ambiguity:.2f} (worst: {record.worst})",
            {"summary": self.summary().model_dump(mode="json"), "round": record.model_dump(mode="json")},
        )
        check = cv.stop_check(st)
        if record.number >= cv.EARLY_EXIT_FROM_ROUND and check.holds:
            self._finish("converged")
        elif record.number >= st.round_cap:
            self._finish("hard_cap")
        else:
            self._begin_round()

    def _finish(self, by: str) -> None:
        st = self.state
        st.phase = "done"
        st.stopped_by = by
        st.pending = None
        st.draft = None
        st.ended_at = self._now()
        if by != "converged":
            record_residual(st, accepted=by == "user")
        self._save()
        check = cv.stop_check(st)
        self._emit(
            "interview_done",
            f"interview finished ({by}) after {st.round} rounds: ambiguity {check.ambiguity:.2f}",
            {"summary": self.summary().model_dump(mode="json"), "stopped_by": by, "stop_condition": check.holds},
        )

    # -- persistence ---------------------------------------------------------------
    def _now(self) -> str:
        value = self._clock()
        if isinstance(value, datetime):
            return value.replace(microsecond=0).isoformat()
        return str(value)

    def _save(self) -> None:
        for path in (self.path, self.log_path, self.spec_path):
            path.parent.mkdir(parents=True, exist_ok=True)
        state = json.dumps(self.state.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
        write_atomic(self.path, state, within=self.path.parent)  # in the run dir: never through a link
        write_atomic(self.log_path, render_log(self.state))
        write_atomic(self.spec_path, render_spec(self.state))
        self._write_manifest()

    def _write_manifest(self) -> None:
        """Once the interview is done: acceptance.yaml in the run dir, one entry per numbered criterion
        (verify commands a planner gave earlier are kept)."""
        numbered = numbered_criteria(self.state)
        if self.state.phase != "done" or not numbered:
            return
        run_dir = self.path.parent
        write_atomic(run_dir / MANIFEST_NAME, render_manifest(numbered, existing_manifest(run_dir)), within=run_dir)
