"""`odin roadmap run`: drive a roadmap phase by phase (seed 002's orchestrator; issue 22 items 3-5).

SELECT the first phase that is not finished (roadmap.md's order), ensure its CONTRACT (a missing one is
proposed by the model: :mod:`.roadmap_contract`; one the model cannot settle asks the deep interview
first: :mod:`.roadmap_interview`), APPLY it to a run of its loop (:mod:`.roadmap_apply`),
whose gates MEASURE and JUDGE, then UNIFY by the run's outcome:

* done → a memory decision, the phase checked ``[x]``, the next phase (a risky phase first waits for a
  person's sign-off; in hitl mode a DONE_WITH_CONCERNS first shows its concern);
* done with concerns → a memory lesson with the concern, checked, the next phase;
* NEEDS_CONTEXT is answered inside the run (the engine's read-only explorer, docs/judge-statuses.md);
* BLOCKED (the judge) → the phase's change reverted, its run abandoned, the phase noted ``blocked: …``, stop;
* the run failed (max_iterations or the budget spent) → the phase noted ``escalated: …``, stop;
* its contract's bytes changed since the run began (sealed in its ``started`` record; an unsandboxed
  worker's bash can write ``.odin-loop/``) → ``blocked``, stop: put the file back and the run resumes, or
  ``odin roadmap run --accept-contract PHASE`` accepts the edit (a person's edit before the run starts,
  e.g. the panel's Edit contract at the pause before a phase, is simply the contract the run is sealed with);
* a later phase's contract changed while another phase's run drove (each drive records every contract's sha256
  as it begins and ends) → that phase ``blocked`` before it starts, the same remedies; an edit between drives
  (at a pause, by hand or in the panel) is a person's.

Autonomy: ``hitl`` pauses before each phase (its contract shown) and at each gate verdict (the run stops
after it); ``autonomous`` runs phases back to back, except that a phase whose impact is not internal pauses
before it starts and a risky phase pauses after its DONE. A pause ends the command; the next
``odin roadmap run`` approves it and goes on. ``unattended`` never waits: the first pause exits 3.

Nothing here is state of its own: where the roadmap stands is derived from the runs and roadmap.jsonl
(:mod:`odin_magic.runs.roadmap_progress`) on every command, so a crash, a restart or another machine
continues where the files say; roadmap.md is repaired to agree with them first, and the repair told.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Literal

from odin_magic.core.atomic import write_atomic
from odin_magic.core.errors import OdinError, UsageError
from odin_magic.engine.roadmap_apply import apply_contract, manifest_text
from odin_magic.engine.roadmap_contract import ask_contract, existing_contract, propose_contract, write_contract
from odin_magic.engine.roadmap_interview import ContractInterview
from odin_magic.engine.roadmap_report import write_report
from odin_magic.interview.awaiting import render_question
from odin_magic.learning import memory
from odin_magic.loop.contract import Contract
from odin_magic.loop.manifest import MANIFEST_NAME
from odin_magic.loop.roadmap import ROADMAP_FILE, Phase, Roadmap, load_roadmap, set_phase
from odin_magic.runs.roadmap_progress import (
    ADDED, PhaseProgress, append_record, changed_fix, changed_reason, contract_change, contract_hashes, contract_sha256,
    driven_reason, new_run_fix, note_phase, phase_task, progress, read_records, repair, stopped_fix, written_notes,
)
from odin_magic.runs.state import DryOptions, RunState

if TYPE_CHECKING:
    from odin_magic.interview.models import PendingQuestion

Ending = Literal["complete", "paused", "escalated", "blocked", "needs_person"]
EXIT_NEEDS_PERSON = 3


@dataclass
class RoadmapOptions:
    unattended: bool = False  # never wait for a person: the first pause exits 3
    dry: DryOptions | None = None  # the runs use the dry worker
    retry: str | None = None  # give this escalated or blocked phase another try
    skip: str | None = None  # mark this phase skipped (a person's decision)
    accept_contract: str | None = None  # this phase's run goes on under its contract as the file is now
    settings: Any = None  # the worker settings a contract proposal uses (default: from the environment)


@dataclass
class RoadmapOutcome:
    ending: Ending
    phase: str | None = None
    reason: str | None = None
    contract: Contract | None = None  # the contract shown at a pause before a phase
    lines: list[str] = field(default_factory=list)  # everything told, in order
    report: Path | None = None
    asks: bool = False  # paused at a question of the phase's contract interview (`odin answer`), not an approval

    @property
    def exit_code(self) -> int:
        if self.ending == "needs_person":
            return EXIT_NEEDS_PERSON
        return 1 if self.ending in ("escalated", "blocked") else 0


class RoadmapDriver:
    """Drives the project's roadmap through ``engine`` (see the module docstring)."""

    def __init__(self, engine, tell: Callable[[str], None] | None = None, options: RoadmapOptions | None = None):
        self.engine = engine
        self.project = Path(engine.project_dir)
        self.path = self.project / ROADMAP_FILE
        self.options = options or RoadmapOptions()
        self._tell = tell
        self.lines: list[str] = []
        self._seals: dict[str, str | None] = {}  # run id → the contract's sha256 as this driver started the run
        #: phase → (the phase whose run drove, its run, the contract's sha256 before): changed in a drive of this driver
        self._driven: dict[str, tuple[str, str, str | None]] = {}

    def tell(self, text: str) -> None:
        self.lines.append(text)
        if self._tell is not None:
            self._tell(text)

    # -- the drive -------------------------------------------------------------------------------

    def run(self) -> RoadmapOutcome:
        """Drive until the roadmap is complete, a phase stops it, or a person is needed."""
        self.engine.unattended = self.options.unattended
        roadmap = load_roadmap(self.path)
        self._person_options(roadmap)
        self._check_contracts(roadmap)
        for line in repair(self.project, roadmap, self.path):
            self.tell(f"repaired {line}")
        while True:
            roadmap = load_roadmap(self.path)
            states = progress(self.project, roadmap)
            phase = next((p for p in roadmap.phases() if not states[p.id].finished or states[p.id].undecided), None)
            if phase is None:
                self.tell(f"roadmap complete: {len(roadmap.phases())} phase(s) finished")
                return self._end(RoadmapOutcome("complete"), roadmap)
            ended = self._phase(roadmap, phase, states[phase.id])
            if ended is not None:
                return self._end(ended, roadmap)

    def _check_contracts(self, roadmap: Roadmap) -> None:
        """Every contract of a phase still to run validates (located, by name), before any run starts."""
        states = progress(self.project, roadmap)
        for phase in roadmap.phases():
            if not states[phase.id].finished:
                existing_contract(self.project, phase)

    def _person_options(self, roadmap: Roadmap) -> None:
        """--retry PHASE and --skip PHASE: a person's decisions, recorded before anything runs."""
        states = progress(self.project, roadmap)
        skip, accept = self.options.skip, self.options.accept_contract
        if skip and accept and roadmap.phase(skip).id == roadmap.phase(accept).id:
            raise UsageError(f"--skip {skip} and --accept-contract {accept}: a phase is skipped or run, not both",
                             hint=f"--skip {skip} skips it; --accept-contract {accept} runs it under its contract")
        if self.options.retry:
            p = states[roadmap.phase(self.options.retry).id]
            if p.status not in ("escalated", "blocked"):
                raise UsageError(f"phase {p.phase_id} is {p.status}, not escalated or blocked",
                                 hint="--retry gives an escalated or blocked phase another try")
            if not p.runs:  # nothing to try again: blocked before it started (its contract changed)
                raise UsageError(f"phase {p.phase_id} has no runs to try again: {p.reason}",
                                 hint=stopped_fix(p))
            if p.last_run is not None and self.engine.status(p.last_run).active:  # a new run could not start
                raise UsageError(f"phase {p.phase_id}'s run {p.last_run} is still under way",
                                 hint=f"`odin abandon` it first, then `odin roadmap run --retry {p.phase_id}`")
            append_record(self.project, "retry", p.phase_id, ignore=p.runs)
            self.tell(f"phase {p.phase_id}: another try (its earlier runs no longer count)")
        if self.options.skip:
            phase = roadmap.phase(self.options.skip)
            if states[phase.id].status == "active":
                raise UsageError(f"phase {phase.id} has a run under way", hint="`odin abandon` it first")
            append_record(self.project, "skipped", phase.id)
            self.tell(f"phase {phase.id}: skipped")
        if self.options.accept_contract:
            self._accept_contract(roadmap.phase(self.options.accept_contract), states)

    def _accept_contract(self, phase: Phase, states: dict[str, PhaseProgress]) -> None:
        """--accept-contract PHASE: a person's edit of the contract while a run drove (the phase's own, under way;
        or, for a phase not started yet, another phase's), sealed as the file is now."""
        p = states[phase.id]
        if not p.contract_changed:
            raise UsageError(f"phase {phase.id}'s contract did not change while a run drove",
                             hint="--accept-contract accepts a contract edited while a phase's run was under way")
        existing_contract(self.project, phase)  # it validates
        append_record(self.project, "sealed", phase.id, run_id=p.last_run,
                      contract_sha256=contract_sha256(self.project, phase.id))
        if p.last_run is None:
            self.tell(f"phase {phase.id}: its edited contract accepted; the phase starts under it")
            return
        if self.engine.status(p.last_run).status == "abandoned":  # given up (`odin abandon`): a new run
            self.tell(f"phase {phase.id}: its edited contract accepted; run {p.last_run} was abandoned, so the "
                      "phase starts a new run under it")
            return
        self.tell(f"phase {phase.id}: its edited contract accepted; run {p.last_run} goes on (with the loop it "
                  "began with), the phase judged under the contract as it is now")

    def _phase(self, roadmap: Roadmap, phase: Phase, p: PhaseProgress) -> RoadmapOutcome | None:
        """One step of one phase; None when it finished (the drive goes on to the next)."""
        if p.contract_changed:
            return self._contract_changed(phase, p.last_run, p.reason)
        driven = self._driven_change(phase) if not p.runs and p.status in ("pending", "paused") else None
        if driven is not None:  # rewritten while another phase's run drove, as this driver saw it
            return self._contract_changed(phase, None, driven)
        if p.status in ("escalated", "blocked"):
            return self._stopped(phase, p)
        contract = self._contract(roadmap, phase, p)
        if isinstance(contract, RoadmapOutcome):
            return contract
        if p.undecided:  # its run ended done (the contract then changed, and was put back; or a stop): decide it
            return self._decide(roadmap, phase, contract, self.engine.status(p.last_run))
        if p.pause == "interview":  # its interview converged and the contract is written: the phase starts afresh
            append_record(self.project, "approved", phase.id, kind="interview")
            p = progress(self.project, roadmap)[phase.id]
        if p.status == "pending":
            if self._must_pause_before(roadmap, contract, phase):
                return self._pause(phase, "start", contract=contract)
            state = self._start(roadmap, phase, contract)
        elif p.status == "paused":
            if self.options.unattended:
                return self._needs_person(phase, p.pause or "run", p.reason, contract)
            append_record(self.project, "approved", phase.id, kind=p.pause, run_id=p.last_run)
            if p.pause == "start":
                state = self._start(roadmap, phase, contract)
            elif p.pause in ("signoff", "concerns"):
                self._finish(phase, self.engine.status(p.last_run), contract)
                return None
            else:
                state = self._continue(roadmap, contract, p)
        else:  # active: a run under way (a crash, a stop): it continues where its log stands
            state = self.engine.status(p.last_run)
            self.tell(f"resuming phase {phase.id}: run {state.run_id} at {state.current_stage}, "
                      f"{state.total_iterations} loopback(s) of {contract.max_iterations}"
                      + (f", ${p.cost_usd:.2f} of ${contract.max_usd:g}" if contract.max_usd else ""))
            state = self._continue(roadmap, contract, p)
        changed = self._changed_since_start(phase, state.run_id)
        if changed is not None:  # rewritten while the run drove
            return self._contract_changed(phase, state.run_id, changed)
        return self._decide(roadmap, phase, contract, state)

    def _contract(self, roadmap: Roadmap, phase: Phase, p: PhaseProgress) -> Contract | RoadmapOutcome:
        """CONTRACT: the phase's file; else the model's proposal, its open questions asked first by the deep
        interview (:mod:`.roadmap_interview`), then proposed again with the interview's answers."""
        contract = existing_contract(self.project, phase)
        if contract is not None:
            return contract
        if p.runs:
            raise OdinError(f"phase {phase.id} has runs but its contract is gone",
                            hint=f"put .odin-loop/contracts/{phase.id}.yaml back")
        interview = ContractInterview(self.project, phase.id, self.options.settings, tell=self.tell)
        if not interview.exists:
            self.tell(f"phase {phase.id} has no contract: asking the model for one")
            proposal = ask_contract(self.project, roadmap, phase, self.options.settings, tell=self.tell)
            if not proposal.questions:
                return write_contract(self.project, phase, proposal)
            self.tell(f"phase {phase.id}: the model could not settle its contract ({'; '.join(proposal.questions)}); "
                      "the deep interview asks you first")
            question = interview.begin(roadmap, phase, proposal.questions)
        else:
            question = interview.question()
        if question is not None:
            return self._asks(phase, p, question)
        self.tell(f"phase {phase.id}: its contract interview is finished; asking the model for the contract again, "
                  "with your answers")
        contract, questions = propose_contract(self.project, roadmap, phase, self.options.settings,
                                               context=interview.context(), tell=self.tell)
        if questions:
            reason = "settle these in the contract first: " + "; ".join(questions)
            return self._pause(phase, "start", contract=contract, reason=reason)
        return contract

    def _must_pause_before(self, roadmap: Roadmap, contract: Contract, phase: Phase) -> bool:
        records = [r for r in read_records(self.project) if r.phase == phase.id]
        if records and records[-1].type == "approved" and records[-1].kind == "start":
            return False  # approved, then a crash before the run began
        return roadmap.autonomy == "hitl" or contract.needs_person

    # -- runs ------------------------------------------------------------------------------------

    def _start(self, roadmap: Roadmap, phase: Phase, contract: Contract) -> RunState:
        loop = self.engine.catalog.load(contract.loop_name)
        applied, notes = apply_contract(loop, contract, autonomous=roadmap.autonomy == "autonomous")
        for note in notes:
            self.tell(f"phase {phase.id}: {note}")
        self.tell(f"phase {phase.id} ({phase.title}): starting a run of {applied.name} "
                  f"(risk {contract.risk}, impact {contract.impact}, max_iterations {contract.max_iterations}"
                  + (f", ${contract.max_usd:g}" if contract.max_usd else "") + ")")
        seal = contract_sha256(self.project, phase.id)  # the bytes just loaded: no run of the phase drives yet
        with self._listening(roadmap, contract, phase.id, None, seal):
            return self.engine.start(applied.name, phase_task(phase), dry=self.options.dry, loop=applied)

    def _continue(self, roadmap: Roadmap, contract: Contract, p: PhaseProgress) -> RunState:
        run_dir = self.engine.run_dir(p.last_run)
        text = manifest_text(contract, p.phase_id)
        if text is not None and not (run_dir / MANIFEST_NAME).exists():  # a crash before it was written
            write_atomic(run_dir / MANIFEST_NAME, text, within=run_dir)
        with self._listening(roadmap, contract, p.phase_id, p.last_run):
            return self.engine.run()

    @contextlib.contextmanager
    def _listening(self, roadmap: Roadmap, contract: Contract, phase_id: str, resumed: str | None,
                   seal: str | None = None) -> Iterator[None]:
        """While a run of the phase drives: as it begins, its acceptance.yaml and `started` record (the contract's
        ``seal``), or the `resumed` record of run ``resumed``; each with every contract's sha256, again in the
        `drove` record as the drive ends. In hitl mode a stop after each gate verdict (the run stays resumable)."""
        before, hashes = self.engine.listener, contract_hashes(self.project, roadmap)
        hitl, run = roadmap.autonomy == "hitl", [resumed]
        if resumed is not None:
            append_record(self.project, "resumed", phase_id, run_id=resumed, contracts=hashes)

        def listen(event) -> None:
            if event.kind == "run_started" and resumed is None:
                run_dir = self.engine.run_dir(event.run_id)
                text = manifest_text(contract, phase_id)
                if text is not None:
                    write_atomic(run_dir / MANIFEST_NAME, text, within=run_dir)
                self._seals[event.run_id], run[0] = seal, event.run_id
                append_record(self.project, "started", phase_id, run_id=event.run_id, contract_sha256=seal,
                              contracts=hashes)
            elif hitl and event.kind in ("gate_passed", "gate_failed"):
                self.engine.request_stop()
            if before is not None:
                before(event)

        self.engine.listener = listen
        try:
            yield
        finally:
            self.engine.listener = before
            if run[0] is not None:
                self._drove(roadmap, phase_id, run[0], hashes)

    def _drove(self, roadmap: Roadmap, phase_id: str, run_id: str, hashes: dict[str, str | None]) -> None:
        """A drive of the run ended: the `drove` record, with the phases of the roadmap as it is now (a phase added
        during the drive is named there first); a contract of another phase that changed during it, or a phase
        added, is kept in mind too (a record the run appended to roadmap.jsonl meanwhile does not hide it)."""
        try:
            roadmap = load_roadmap(self.path)
        except (OdinError, OSError):
            pass  # unreadable now: the phases known (the next step of the drive says why)
        now = contract_hashes(self.project, roadmap)
        append_record(self.project, "drove", phase_id, run_id=run_id, contracts=now)
        for other, sha in now.items():
            if other != phase_id and sha != hashes.get(other, ADDED):
                self._driven.setdefault(other, (phase_id, run_id, hashes.get(other, ADDED)))

    def _driven_change(self, phase: Phase) -> str | None:
        """Why a phase not started yet must not start: its contract changed while a run this driver drove."""
        if phase.id not in self._driven:
            return None
        driving, run_id, before = self._driven[phase.id]
        if contract_sha256(self.project, phase.id) == before:
            return None
        return driven_reason(phase.id, driving, run_id)

    # -- deciding (seed 002's decision flow) ----------------------------------------------------------

    def _decide(self, roadmap: Roadmap, phase: Phase, contract: Contract, state: RunState) -> RoadmapOutcome | None:
        if state.status == "done":
            concern = "; ".join(f"{c.stage}: {c.text}" for c in state.concerns) or None
            if contract.risk == "risky":
                return self._pause(phase, "signoff", run_id=state.run_id, reason=concern,
                                   text=f"phase {phase.id} is DONE (run {state.run_id}); a risky phase needs a "
                                        "person's sign-off before the roadmap goes on")
            if concern and roadmap.autonomy == "hitl":
                return self._pause(phase, "concerns", run_id=state.run_id, reason=concern,
                                   text=f"phase {phase.id} is done with concerns: {concern}")
            self._finish(phase, state, contract)
            return None
        if state.status == "failed":
            return self._escalate(phase, state)
        if state.status == "blocked" and state.blocked is not None and state.blocked.kind == "judge":
            return self._block(phase, state)
        if state.status == "running":  # hitl: stopped after a verdict
            last = state.history[-1] if state.history else None
            verdict = f"{last.stage} {last.result}" + (f": {last.reason}" if last and last.reason else "") if last else ""
            return self._pause(phase, "verdict", run_id=state.run_id, reason=verdict or None,
                               text=f"phase {phase.id}: verdict {verdict}")
        why = state.blocked.reason if state.blocked is not None else state.status.replace("_", " ")
        return self._pause(phase, "run", run_id=state.run_id, reason=why,
                           text=f"phase {phase.id}: run {state.run_id} waits for you ({why})")

    def _finish(self, phase: Phase, state: RunState, contract: Contract) -> None:
        """UNIFY: the memory entry, the outcome record, the checkbox."""
        concern = "; ".join(f"{c.stage}: {c.text}" for c in state.concerns) or None
        status = "done_with_concerns" if concern else "done"
        if concern:
            text = f"roadmap phase {phase.id} ({phase.title}) passed with a concern: {concern}"
        else:
            text = (f"roadmap phase {phase.id} ({phase.title}) done under its contract (risk {contract.risk}, "
                    f"scope {', '.join(contract.scope)})")
        at = datetime.now().isoformat(timespec="seconds")
        memory.Memory(self.project).append([memory._entry("lesson" if concern else "decision", phase.id,
                                                          state.run_id, at, text)])
        append_record(self.project, "outcome", phase.id, run_id=state.run_id, status=status, reason=concern)
        current = load_roadmap(self.path).phase(phase.id)
        ours = written_notes(self.project, phase.id)
        set_phase(self.path, phase.id, done=True, note=None if current.note in ours else current.note)
        self.tell(f"phase {phase.id} {status.replace('_', ' ')} (run {state.run_id}): checked [x]"
                  + (f"; concern: {concern}" if concern else ""))

    def _escalate(self, phase: Phase, state: RunState) -> RoadmapOutcome:
        reason = state.failure_reason or "the run failed"
        append_record(self.project, "outcome", phase.id, run_id=state.run_id, status="escalated", reason=reason)
        note_phase(self.project, self.path, phase.id, done=False, note=_note("escalated", reason))
        self.tell(f"phase {phase.id} ESCALATED (run {state.run_id}): {reason}")
        return RoadmapOutcome("escalated", phase.id, reason)

    def _block(self, phase: Phase, state: RunState) -> RoadmapOutcome:
        """BLOCKED: record it, revert the phase's change, abandon its run, stop."""
        reason = state.blocked.reason if state.blocked is not None else "the judge is blocked"
        append_record(self.project, "outcome", phase.id, run_id=state.run_id, status="blocked", reason=reason)
        self._undo(phase, state)
        note_phase(self.project, self.path, phase.id, done=False, note=_note("blocked", reason))
        self.tell(f"phase {phase.id} BLOCKED (run {state.run_id}): {reason}")
        return RoadmapOutcome("blocked", phase.id, reason)

    def _undo(self, phase: Phase, state: RunState) -> None:
        first = next((n for n, e in enumerate(state.history, start=1) if e.checkpoint), None)
        if first is not None:
            after = self.engine.revert(to=first)
            self.tell(f"phase {phase.id}: its change reverted (the tree as before run {after.run_id} began)")
        else:
            self.tell(f"phase {phase.id}: the judge's BLOCKED already undid the stage's change")
        self.engine.abandon()

    def _changed_since_start(self, phase: Phase, run_id: str) -> str | None:
        """Why the phase stops when its contract changed since its run began: against the seal this driver holds
        for a run it started (a record appended to roadmap.jsonl meanwhile does not count), else the log's."""
        if self._seals.get(run_id) is not None and contract_sha256(self.project, phase.id) != self._seals[run_id]:
            return changed_reason(phase.id)
        return contract_change(self.project, phase.id, run_id)

    def _contract_changed(self, phase: Phase, run_id: str | None, reason: str | None) -> RoadmapOutcome:
        """The contract is not the one the phase's run began under (or, before it starts, the one it had before
        another phase's run drove): stop, a run left as it is."""
        reason = reason or f"contract of phase {phase.id} changed while its phase ran"
        current = load_roadmap(self.path).phase(phase.id)
        note = _note("blocked", reason)
        if current.note != note:
            note_phase(self.project, self.path, phase.id, done=False, note=note)
        self.tell(f"phase {phase.id} BLOCKED ({f'run {run_id}' if run_id else 'not started'}): {reason}; "
                  f"{changed_fix(phase.id, started=run_id is not None)}")
        return RoadmapOutcome("blocked", phase.id, reason)

    def _stopped(self, phase: Phase, p: PhaseProgress) -> RoadmapOutcome:
        if p.status == "blocked" and p.last_run is not None and self.engine.status(p.last_run).active:
            self._undo(phase, self.engine.status(p.last_run))  # a crash between the decision and the revert
        self.tell(f"phase {phase.id} is {p.status} (run {p.last_run}): {p.reason}; fix what it names, then "
                  f"`odin roadmap run --retry {phase.id}` (or `--skip {phase.id}`)")
        return RoadmapOutcome(p.status, phase.id, p.reason)  # type: ignore[arg-type]

    # -- pauses ----------------------------------------------------------------------------------

    def _pause(self, phase: Phase, kind: str, *, contract: Contract | None = None, run_id: str | None = None,
               reason: str | None = None, text: str | None = None) -> RoadmapOutcome:
        append_record(self.project, "paused", phase.id, kind=kind, run_id=run_id, reason=reason)
        if kind == "start":
            self.tell(f"phase {phase.id} ({phase.title}) waits for you before it starts; its contract:")
            self.tell(_contract_text(contract))
            if reason:
                self.tell(reason)
        else:
            self.tell(text or f"phase {phase.id} waits for you ({kind})")
        if self.options.unattended:
            return self._needs_person(phase, kind, reason, contract)
        change = ("edit the contract first to change it" if run_id is None else
                  new_run_fix(phase.id, under_way=self.engine.status(run_id).active))
        self.tell(f"`odin roadmap run` goes on (approves); {change}")
        return RoadmapOutcome("paused", phase.id, reason, contract=contract)

    def _asks(self, phase: Phase, p: PhaseProgress, question: PendingQuestion) -> RoadmapOutcome:
        """The phase's contract interview waits for a person's answer (`odin answer`, `%odin answer`)."""
        reason = "its contract interview waits for your answer: `odin answer TEXT` (`odin question` shows it)"
        if p.pause != "interview":
            append_record(self.project, "paused", phase.id, kind="interview", reason=reason)
        self.tell(f"phase {phase.id} ({phase.title}) needs your answers before its contract is written; "
                  "the deep interview asks:")
        self.tell(render_question(question))
        if self.options.unattended:
            return self._needs_person(phase, "interview", reason, None)
        self.tell('→ odin answer "..." (in a notebook: %odin answer ...); once the interview is finished, '
                  "`odin roadmap run` proposes the contract from your answers")
        return RoadmapOutcome("paused", phase.id, reason, asks=True)

    def _needs_person(self, phase: Phase, kind: str, reason: str | None, contract: Contract | None) -> RoadmapOutcome:
        self.tell(f"unattended: phase {phase.id} needs a person ({kind}); stopping (exit {EXIT_NEEDS_PERSON})")
        return RoadmapOutcome("needs_person", phase.id, reason, contract=contract)

    def _end(self, outcome: RoadmapOutcome, roadmap: Roadmap) -> RoadmapOutcome:
        roadmap = load_roadmap(self.path)
        outcome.report = write_report(self.project, roadmap, progress(self.project, roadmap), outcome.ending,
                                      self.lines)
        outcome.lines = list(self.lines)
        return outcome


def _note(kind: str, reason: str) -> str:
    reason = " ".join(reason.split())
    return f"{kind}: {reason[:117] + '…' if len(reason) > 120 else reason}"


def _contract_text(contract: Contract | None) -> str:
    if contract is None:
        return "  (no contract)"
    lines = [f"  risk {contract.risk}, impact {contract.impact}, loop {contract.loop_name}, "
             f"max_iterations {contract.max_iterations}" + (f", ${contract.max_usd:g}" if contract.max_usd else "")
             + (", mutation sensor on" if contract.sensor_on else ""),
             f"  scope: {', '.join(contract.scope)}",
             f"  gate: {contract.gate.kind}" + "".join(f"; `{c.cmd}`" for c in contract.gate.run)]
    lines += [f"  {c.id} ({c.priority}) {c.text} [verify: {c.verify}]" for c in contract.criteria]
    return "\n".join(lines)
