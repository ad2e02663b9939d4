"""What an action needs before it drives: the status it applies to, its text, its stage, one run at a
time. Shared with the front ends, which check an action before driving it in the background."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from odin_magic.core.errors import NoActiveRun, OdinError, RunRefused, UsageError
from odin_magic.loop.schema import Loop
from odin_magic.render.text import continues as continues_with, status_word
from odin_magic.runs.state import RunState
from odin_magic.runs.store import RunCorrupt

if TYPE_CHECKING:
    from odin_magic.runs.roadmap_progress import PhaseProgress


#: The status each pause-bound action applies to.
_NEEDS_STATUS = {"approve": "awaiting_approval", "revise": "awaiting_approval", "answer": "awaiting_answer"}


def require_status(state: RunState, action: str, driven: bool = False) -> None:
    """Raise :class:`RunRefused` when ``action`` (approve, revise, answer) does not apply to ``state``. ``driven``:
    whether a process drives the run now (``runs.store.being_driven``, what ``status`` shows); a running run
    that nothing drives is ready, and ``odin run`` continues it."""
    if state.status == _NEEDS_STATUS[action]:
        return
    ready = status_word(state, driven) == "ready"
    where = f"run {state.run_id} is " + ("ready (nothing drives it now)" if ready else state.status)
    asking = "the interview waits for an answer: `answer TEXT` (`question` shows it)"
    continues = f"`{continues_with(state)}` continues it; `odin status` shows where it is"
    goes_on = f"`{continues_with(state).removeprefix('odin ')}` continues it; `status` shows where it is"
    if action == "approve":
        raise RunRefused(f"{where}, not waiting for approval",
                         hint=asking if state.status == "awaiting_answer" else
                         continues if ready else goes_on)
    if action == "revise":
        raise RunRefused(f"{where}, not paused for review: revise applies to a stage awaiting approval",
                         hint=asking if state.status == "awaiting_answer" else
                         continues if ready else "`step STAGE` re-runs any stage")
    if ready:
        raise RunRefused(f"no interview question is waiting: {where}, not waiting for an answer", hint=continues)
    raise RunRefused(f"no interview question is waiting ({where})",
                     hint="answers are for a deep-interview stage's questions; `status` shows the run")


def require_text(text: str | None, action: str) -> str:
    """The stripped feedback (``revise``) or answer (``answer``); empty is a :class:`UsageError`."""
    if text and text.strip():
        return text.strip()
    if action == "revise":
        raise UsageError("revise needs feedback: what should change", hint='revise "make the spec cover errors"')
    raise UsageError("the answer is empty", hint='answer "your answer" (or: you decide, skip)')


def require_task(task: str | None) -> str:
    """The stripped task; empty or whitespace only is a :class:`UsageError`."""
    task = (task or "").strip()
    if not task:
        raise UsageError("a run needs a task: one line saying what you are building", hint="--task TEXT")
    return task


def one_run_at_a_time(active: RunState) -> RunRefused:
    """The refusal to start a run while ``active`` is still active."""
    return RunRefused(
        f"run {active.run_id} (loop {active.loop}) is still {active.status}; one run per project at a time",
        hint=("answer its question with `odin answer TEXT`" if active.status == "awaiting_answer"
              else "finish it with `odin run` (or `odin approve` at a pause)") + ", or give it up with `odin abandon`",
    )


#: What a roadmap paused at a phase waits for (``PhaseProgress.pause``), and how a person goes on.
_PAUSES = {"start": "before it starts", "verdict": "after its gate's verdict", "concerns": "its DONE has concerns",
           "signoff": "its DONE waits for your sign-off", "run": "its run waits for you"}


#: What goes on once a roadmap phase's contract interview is finished (its answers are in).
INTERVIEW_GOES_ON = "`odin roadmap run` proposes the contract from your answers (`odin roadmap` shows where it stands)"


def no_active_run(project_dir: Path, latest: RunState | None, paused: PhaseProgress | None = None) -> NoActiveRun:
    """Nothing to act on: said of the roadmap's ``paused`` phase when it waits for a person (``odin roadmap run``
    goes on, docs/roadmap.md); else of the ``latest`` run when there is one (it has ended: it is not changed, a
    fork continues it), else how to start one."""
    if paused is not None:
        if paused.pause == "interview" and paused.interview_finished:
            return NoActiveRun(f"no active run in {project_dir}: the roadmap is paused at phase {paused.phase_id}, "
                               "its contract interview finished", hint=INTERVIEW_GOES_ON)
        if paused.pause == "interview":
            return NoActiveRun(f"no active run in {project_dir}: the roadmap is paused at phase {paused.phase_id}, "
                               "its contract interview waiting for your answer",
                               hint="`odin answer TEXT` answers it (`odin question` shows it), then `odin roadmap run`")
        return NoActiveRun(
            f"no active run in {project_dir}: the roadmap is paused at phase {paused.phase_id} "
            f"({_PAUSES.get(paused.pause or 'run', paused.pause)}), not waiting for an answer or an approval here",
            hint="`odin roadmap run` approves the pause and goes on (`odin roadmap` shows where it stands)")
    if latest is None:
        return NoActiveRun(f"no active run in {project_dir}",
                           hint="start one with `odin run LOOP --task TEXT` (`odin runs` lists past runs)")
    return NoActiveRun(
        f"no active run in {project_dir}: the latest run, {latest.run_id}, has ended ({latest.status})",
        hint=f"`odin fork --from N` starts a new run from its stage execution N (`odin status --history` "
             f"numbers them; it has {len(latest.history)}), `odin run LOOP --task TEXT` a new one")


def nothing_to_act_on(project_dir: Path, latest: RunState | None) -> NoActiveRun:
    """No active run: the refusal says what the project's roadmap waits for when it waits for a person
    (:func:`roadmap_waits`), else of ``latest`` (:func:`no_active_run`)."""
    return roadmap_waits(project_dir) or no_active_run(project_dir, latest)


def roadmap_waits(project_dir: Path) -> NoActiveRun | None:
    """The refusal when no run is active and the project's roadmap waits for a person: a pause
    (:func:`no_active_run`), or a phase it stops at, blocked or escalated (what decides it); else None."""
    from odin_magic.runs.roadmap_progress import stopped_fix, waiting_phases

    paused, stopped = waiting_phases(project_dir)
    if paused is not None:
        return no_active_run(project_dir, None, paused)
    if stopped is not None:
        return NoActiveRun(f"no active run in {project_dir}: the roadmap stops at phase {stopped.phase_id}, "
                           f"{stopped.status}: {stopped.reason}", hint=stopped_fix(stopped))
    return None


def damaged_blocks(run_id: str, damage: RunCorrupt) -> RunRefused:
    """The refusal to start or continue while a damaged run may still be active."""
    return RunRefused(
        f"run {run_id} is damaged and may still be active: {damage.message}",
        hint=f"give it up with `odin abandon` (its files stay), or move .odin-loop/runs/{run_id} away; "
             "then start a new run",
    )


def require_stage(loop: Loop, stage_id: str) -> None:
    """Raise :class:`UsageError` when ``loop`` has no stage ``stage_id``."""
    ids = loop.stage_ids()
    if stage_id not in ids:
        raise UsageError(f"loop {loop.name!r} has no stage {stage_id!r}", hint=f"its stages: {', '.join(ids)}")


def require_not_paused(state: RunState) -> None:
    """Raise :class:`RunRefused` when ``state`` waits for the user: a step must not skip an approval or a question."""
    if state.status == "awaiting_approval":
        raise RunRefused(
            f"run {state.run_id} waits for your approval of stage {state.current_stage}; "
            "a step now would skip that approval",
            hint="approve it (`approve`), send it back with feedback (`revise TEXT`), or give the run up "
                 "(`abandon`) first")
    if state.status == "awaiting_answer":
        raise RunRefused(
            f"run {state.run_id} waits for your answer to stage {state.current_stage}'s question; "
            "a step now would skip it",
            hint="answer it (`answer TEXT`), or give the run up (`abandon`) first")


def never_ran(state: RunState, loop: Loop) -> list[str]:
    """The stages of ``loop`` with no gate evaluation in ``state``'s history (skipped by steps)."""
    seen = {e.stage for e in state.history}
    return [sid for sid in loop.stage_ids() if sid not in seen]


def done_text(state: RunState, loop: Loop) -> str:
    """The done message; it names the stages that never ran (a run that steps skipped ahead)."""
    skipped = never_ran(state, loop)
    return f"run {state.run_id} done" + (f"; never ran: {', '.join(skipped)}" if skipped else "")


def interrupted(engine, resume: str) -> str:
    """What Ctrl-C left (terminal and notebook alike): the ``engine``'s active run is saved where it stopped and
    ``resume`` (e.g. ``odin roadmap run``) resumes it, unless no run had begun (or there is no engine)."""
    try:
        active = engine.active() if engine is not None else None
    except (OdinError, OSError):
        active = None
    if active is None:
        return "interrupted before a run began: nothing to resume"
    return f"interrupted; run {active.run_id} is saved where it stopped: `{resume}` resumes it"
