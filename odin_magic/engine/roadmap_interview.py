"""The deep interview a phase's contract asks first (issue 22 item 2; docs/roadmap.md, 'The contract interview').

When the model's proposal for a missing contract comes back with ``questions`` (an ambiguous scope or
acceptance), nothing is written: the phase asks the deep interview (:mod:`odin_magic.interview`) about
itself first. Its seed (the phase's roadmap entry and the model's questions) and its state (the same
resumable session a loop's interview stage keeps: ``interview-<phase>.json``, ``interview-log.md``,
``spec.md``) live in ``.odin-loop/contracts/<phase-id>.interview/``, so a restart, ``odin roadmap run``
again or another process continues it where the files say. A waiting question is answered as any
interview question is: ``odin answer TEXT`` in a terminal, ``%odin answer TEXT`` in a notebook. Once it
converges, the driver asks the model for the contract again with :meth:`ContractInterview.context` (the
answers and the spec) and writes it as before.

The interview's model is the one a loop's interview stage gets (:func:`~odin_magic.interview.claude.
make_interview_model`: Claude, or offline the script's ``interview:`` section); in a roadmap's script,
``interview: {phases: {<phase-id>: {...}}}`` gives each phase its own scripted interview. What its calls cost is
added up in ``usage.json`` beside its state (:mod:`odin_magic.runs.contract_usage`), which the roadmap's views
show on the phase's line and in their totals.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pydantic import BaseModel, ValidationError

from odin_magic.core.atomic import write_atomic
from odin_magic.core.errors import OdinError, RunRefused
from odin_magic.engine.roadmap_contract import phase_entry, say
from odin_magic.interview.models import InterviewState, PendingQuestion
from odin_magic.interview.session import SPEC_FILE, InterviewPlace, InterviewSession, load_state, state_path
from odin_magic.loop.contract import CONTRACTS_DIR
from odin_magic.loop.roadmap import Phase, Roadmap
from odin_magic.loop.schema import Stage
from odin_magic.runs.contract_usage import INTERVIEW_SUFFIX, count_usage, interview_dir, interview_usage
from odin_magic.runs.state import Usage
from odin_magic.workers.base import WorkerError

SEED_FILE = "seed.json"
#: The interview a contract asks: no scheduled challenges, at most 10 rounds (a phase is smaller than a project).
INTERVIEW = {"mode": "deep", "challenges": [], "hard_cap": 10}
GOAL = ("Settle what the phase's contract could not decide: its scope (which project paths it may change) and "
        "its acceptance (observable criteria, and the commands that check them)")


class Seed(BaseModel):
    """What the interview is about: the phase, its roadmap entry and the questions the model left open."""

    phase: str
    title: str
    entry: str
    questions: list[str]


class ContractInterview:
    """One phase's contract interview, kept in ``.odin-loop/contracts/<phase-id>.interview/``."""

    def __init__(self, project_dir: Path, phase_id: str, settings=None, tell: Callable[[str], None] | None = None):
        self.project = Path(project_dir)
        self.phase_id = phase_id
        self.dir = interview_dir(project_dir, phase_id)
        self.settings = settings
        self._tell = tell

    @property
    def exists(self) -> bool:
        return (self.dir / SEED_FILE).is_file()

    @property
    def state_file(self) -> Path:
        return state_path(self.dir, self.phase_id)

    def state(self) -> InterviewState | None:
        return load_state(self.state_file)

    @property
    def done(self) -> bool:
        state = self.state()
        return state is not None and state.phase == "done"

    def seed(self) -> Seed:
        path = self.dir / SEED_FILE
        try:
            return Seed.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValidationError) as exc:
            raise OdinError(f"{path}: the contract interview's seed cannot be read ({exc.__class__.__name__})",
                            hint=f"delete {self.dir} to ask the model for the contract again") from None

    # -- the interview -------------------------------------------------------------------------

    def begin(self, roadmap: Roadmap, phase: Phase, questions: list[str]) -> PendingQuestion | None:
        """Start the interview about ``phase`` (its entry and the model's ``questions`` as its seed)."""
        seed = Seed(phase=phase.id, title=phase.title, entry=phase_entry(roadmap, phase), questions=list(questions))
        self.dir.mkdir(parents=True, exist_ok=True)
        write_atomic(self.dir / SEED_FILE, seed.model_dump_json(indent=2) + "\n", within=self.project / ".odin-loop")
        return self._ask(lambda session: session.start())

    def question(self) -> PendingQuestion | None:
        """The waiting question, read from the file (no model asked); None once the interview converged.
        After a crash between an answer and the next question, the model prepares that question now."""
        state = self.state()
        if state is not None and state.phase == "done":
            return None
        if state is not None and state.pending is not None:
            return state.pending
        return self._ask(lambda session: session.start())

    def answer(self, text: str) -> PendingQuestion | None:
        """A person's reply to the waiting question: the next question, or None when the interview converged."""
        return self._ask(lambda session: session.answer(text))

    def usage(self) -> Usage | None:
        """What the interview's model calls cost so far (``usage.json``); None before its first call."""
        return interview_usage(self.project, self.phase_id)

    def _ask(self, act: Callable[[InterviewSession], PendingQuestion | None]) -> PendingQuestion | None:
        """``act`` on the interview's session; the usage of the model calls it made is added to the interview's,
        also when it fails (a reply that did not fit was paid for: the error carries its usage)."""
        session = self._session()
        failed = None
        try:
            return act(session)
        except WorkerError as exc:  # the model's reply did not do (e.g. twice no usable one): one line, no traceback
            failed = exc.usage
            raise OdinError(f"phase {self.phase_id}'s contract interview: {exc}",
                            hint="`odin question` shows the waiting question; answering it again asks the model "
                                 "again") from None
        except Exception as exc:
            failed = getattr(exc, "usage", None)
            raise
        finally:
            usage = session.take_usage() + (failed if isinstance(failed, Usage) else Usage())
            if usage.total_tokens or usage.cost_usd:
                self._add_usage(usage)

    def _add_usage(self, usage: Usage) -> None:
        """Count ``usage`` in the interview's usage.json; a file that cannot be read or written never fails the
        answer (it is kept) nor hides the call's own error: a one-line warning says which file and what to do."""
        said = count_usage(self.project, self.phase_id, "interview", usage)
        if said is not None:
            say(said, self._tell)

    def context(self) -> str:
        """What the interview settled, for the second proposal: the open questions, every answer, the spec."""
        seed, state = self.seed(), self.state()
        lines = ["Your earlier proposal left these questions open: " + "; ".join(seed.questions), "",
                 "The interview, question by question:"]
        for r in state.rounds if state else []:
            by = {"auto": " (an assumption the person let the model make)", "skipped": " (skipped)"}.get(
                r.answered_by, "")
            lines += [f"- Q: {r.question}", f"  A{by}: {r.answer}"]
        spec = self.dir / SPEC_FILE
        if spec.is_file():
            lines += ["", "The interview's spec (spec.md):", spec.read_text(encoding="utf-8")]
        return "\n".join(lines)

    def converged_line(self) -> str:
        state = self.state()
        rounds = f" after {state.round} round(s)" if state else ""
        return (f"phase {self.phase_id}: its contract interview is finished{rounds}; `odin roadmap run` asks the "
                "model for the contract with your answers")

    def _session(self) -> InterviewSession:
        seed = self.seed()
        stage = Stage.model_validate({
            "id": seed.phase, "title": f"the contract of roadmap phase {seed.phase}", "goal": GOAL,
            "prompt": (f"{seed.entry}\n\nThe model proposing the phase's contract could not decide: "
                       + "; ".join(seed.questions) + "\nAsk the person about these first; the contract is "
                       "proposed again from their answers."),
            "interview": INTERVIEW, "gate": {"mode": "ai", "check": "the stop condition holds"}})
        place = InterviewPlace(run_dir=self.dir, project_dir=self.project, stage=stage,
                               task=f"the contract of roadmap phase {seed.phase}: {seed.title}")
        return InterviewSession.open(place, _model(self.settings, self.project, seed.phase), emit=self._emit)

    def _emit(self, kind: str, text: str, data: dict) -> None:
        if self._tell is not None and kind in ("notice", "interview_round", "interview_done"):
            self._tell(f"phase {self.phase_id} interview: {text}")


def interview_to_answer(project_dir: Path, active, settings=None, tell: Callable[[str], None] | None = None
                        ) -> ContractInterview | None:
    """Where `odin answer` / `%odin answer` goes when it is not to a run: the contract interview that waits
    (:func:`waiting_interview`), unless the ``active`` run (its state, or None) waits for an answer itself."""
    if active is not None and active.status == "awaiting_answer":
        return None
    return waiting_interview(project_dir, settings, tell)


def waiting_interview(project_dir: Path, settings=None, tell: Callable[[str], None] | None = None
                      ) -> ContractInterview | None:
    """The contract interview that waits for a person's answer (the newest, if several), or None."""
    root = Path(project_dir) / CONTRACTS_DIR
    found = []
    for path in sorted(root.glob(f"*{INTERVIEW_SUFFIX}")) if root.is_dir() else []:
        interview = ContractInterview(project_dir, path.name[: -len(INTERVIEW_SUFFIX)], settings, tell)
        if interview.exists and interview.state_file.is_file() and not interview.done:
            found.append((interview.state_file.stat().st_mtime, interview))
    return max(found, key=lambda pair: pair[0])[1] if found else None


@dataclass(frozen=True)
class WaitingQuestion:
    """The question `odin question` and `%odin question` show: the active run's interview's, or else a roadmap
    phase's contract interview's (``interview`` and ``question`` then say which and what)."""

    text: str  # as both front ends show it, without the hint to answer it
    interview: ContractInterview | None = None
    question: PendingQuestion | None = None


def question_waiting(engine, settings=None, tell: Callable[[str], None] | None = None) -> WaitingQuestion:
    """The interview question that waits in ``engine``'s project: the active run's, else a roadmap phase's
    contract interview's (:func:`interview_to_answer`); :class:`RunRefused` when none waits."""
    from odin_magic.interview.awaiting import render_question
    from odin_magic.interview.runner import waiting_question

    state = engine.active()
    text = waiting_question(engine.run_dir(state.run_id), state) if state is not None else None
    if text is not None:
        return WaitingQuestion(text)
    interview = interview_to_answer(engine.project_dir, state, settings, tell)
    question = interview.question() if interview is not None else None
    if question is None:
        raise _none_waits(engine.project_dir, state)
    return WaitingQuestion(f"phase {interview.phase_id}'s contract interview:\n\n{render_question(question)}",
                           interview, question)


def _none_waits(project_dir: Path, active) -> RunRefused:
    """No question waits: when no run is active and the roadmap is paused at a phase whose contract interview is
    finished, `odin roadmap run` goes on (it proposes the contract); else `odin status` shows where the run is."""
    from odin_magic.engine.requirements import INTERVIEW_GOES_ON
    from odin_magic.runs.roadmap_progress import paused_phase

    paused = paused_phase(project_dir) if active is None else None
    if paused is not None and paused.interview_finished:
        return RunRefused(f"no interview question is waiting: phase {paused.phase_id}'s contract interview is "
                          "finished", hint=INTERVIEW_GOES_ON)
    return RunRefused("no interview question is waiting", hint="`odin status` shows where the run is")


def _model(settings, project_dir: Path, phase_id: str):
    """The interview model a loop's interview stage gets; a script's ``interview: {phases: {<phase-id>: ...}}``
    gives this phase its own scripted interview."""
    from odin_magic.interview.claude import make_interview_model
    from odin_magic.interview.scripted import ScriptedInterviewModel
    from odin_magic.workers.config import Settings

    model = make_interview_model(settings or Settings.from_env(), project_dir)
    phases = model.script.get("phases") if isinstance(model, ScriptedInterviewModel) else None
    if isinstance(phases, dict) and isinstance(phases.get(phase_id), dict):
        own = ScriptedInterviewModel(phases[phase_id], source=f"{model.source} phases.{phase_id}")
        own.price = model.price
        return own
    return model
