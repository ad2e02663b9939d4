"""Where a roadmap stands, derived from files alone (issue 22, items 3 and 5).

A phase's runs are the runs whose task starts ``roadmap phase <id>: `` (the driver names them so): their
event logs are the truth about what the phase did. Beside them, ``.odin-loop/roadmap.jsonl`` is a small
append-only record log (one JSON object a line, each appended with one write and an fsync) of what no
run holds: the driver started a run for a phase, paused at a phase boundary for a person, the person
approved, the phase was decided (its outcome), skipped, or given another try.

A ``started`` record seals the phase's contract: the sha256 of the contract file's bytes the run began under.
Until the phase's outcome is recorded, a contract whose bytes differ (an unsandboxed worker's bash may write
``.odin-loop/``: docs/security.md, "Without the sandbox") makes the phase ``blocked``
(:func:`contract_change`); a ``sealed`` record (``odin roadmap run --accept-contract PHASE``) accepts an edit.

A phase not started yet is not sealed, but another phase's run may drive meanwhile: each drive of a run (its
``started`` or ``resumed`` record, then its ``drove`` record when the driver's call returns) carries the sha256 of
every phase's contract then (``contracts``). A contract that changed inside such a window blocks its phase
before it starts (:func:`driven_change`, the file and the driving phase named) until it is put back or accepted
(a ``sealed`` record without a run); so does a phase added to the roadmap inside a drive (named by its ``drove``
record, taken from the roadmap as it is then, not by its start); an edit between drives (at a pause, by hand or in
the panel) is a person's.

:func:`progress` folds both into each phase's :class:`PhaseProgress`; roadmap.md's checkboxes are a view of
it, and :func:`repairs` lists where they disagree (:func:`repair` writes the fixes). The runs win.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from odin_magic.core.atomic import open_append
from odin_magic.core.filehash import file_sha256
from odin_magic.loop.contract import CONTRACTS_DIR, contract_path, load_contract
from odin_magic.core.errors import OdinError
from odin_magic.loop.roadmap import ROADMAP_FILE, Roadmap, Phase, load_roadmap, set_phase
from odin_magic.runs.contract_usage import ContractCost, contract_cost, interview_finished
from odin_magic.runs.state import RunState
from odin_magic.runs.store import RunCorrupt, RunStore

ROADMAP_LOG = ".odin-loop/roadmap.jsonl"
TASK_PREFIX = "roadmap phase "
_TASK = re.compile(r"roadmap phase ([A-Za-z0-9][A-Za-z0-9._-]*): ")
Status = Literal["pending", "active", "paused", "done", "done_with_concerns", "escalated", "blocked", "skipped"]
DONE_STATUSES = ("done", "done_with_concerns", "skipped")
RecordKind = Literal["started", "resumed", "drove", "paused", "approved", "outcome", "skipped", "retry", "noted",
                     "sealed"]


class PhaseProgress(BaseModel):
    phase_id: str
    status: Status
    runs: list[str] = Field(default_factory=list)
    iterations: int = 0
    cost_usd: float = 0.0
    concern: str | None = None
    last_run: str | None = None
    reason: str | None = None  # why a phase is escalated, blocked or paused
    pause: str | None = None  # what a paused phase waits for: start | interview | verdict | concerns | signoff | run
    notes_written: list[str] = Field(default_factory=list)  # the status notes odin wrote on the phase's line
    contract_changed: bool = False  # blocked: the contract's bytes are not those its run began under
    undecided: bool = False  # its sealed run ended done, but the phase's outcome is not recorded yet
    contract_cost: ContractCost | None = None  # what its contract's proposals and interview cost (runs.contract_usage)
    interview_finished: bool = False  # paused at its contract interview, which converged: `roadmap run` goes on

    @property
    def finished(self) -> bool:
        return self.status in DONE_STATUSES


class RoadmapRecord(BaseModel):
    at: str
    type: RecordKind
    phase: str
    run_id: str | None = None
    kind: str | None = None  # paused/approved: start | interview | verdict | concerns | signoff
    status: str | None = None  # outcome: done | done_with_concerns | escalated | blocked
    reason: str | None = None
    ignore: list[str] = Field(default_factory=list)  # retry: the runs that no longer count
    note: str | None = None  # noted: the status note odin wrote on the phase's line (only such a note is taken back)
    contract_sha256: str | None = None  # started/sealed: the contract file's bytes the run goes on under
    #: started/resumed (a drive of the run begins), drove (it ended): each phase's contract sha256 (None: no file)
    contracts: dict[str, str | None] = Field(default_factory=dict)


def phase_task(phase: Phase) -> str:
    """The task of a run the driver starts for ``phase``: how its runs are found again."""
    return f"{TASK_PREFIX}{phase.id}: {phase.title}"


def phase_of_task(task: str) -> str | None:
    m = _TASK.match(task or "")
    return m.group(1) if m else None


def append_record(project_dir: Path, type: RecordKind, phase: str, **fields: Any) -> RoadmapRecord:
    """Append one record to roadmap.jsonl (one write, then an fsync): durable before the driver goes on."""
    record = RoadmapRecord(at=datetime.now().isoformat(timespec="seconds"), type=type, phase=phase, **fields)
    odin = Path(project_dir) / ".odin-loop"
    line = (record.model_dump_json(exclude_none=True, exclude_defaults=True) + "\n").encode("utf-8")
    path = Path(project_dir) / ROADMAP_LOG
    with open_append(path, within=odin, binary=True) as fh:
        if _torn(path):
            line = b"\n" + line  # a crash cut the last append short: that line stays unreadable, this one whole
        fh.write(line)
        os.fsync(fh.fileno())
    return record


def _torn(path: Path) -> bool:
    with open(path, "rb") as fh:
        if fh.seek(0, os.SEEK_END) == 0:
            return False
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) != b"\n"


def read_records(project_dir: Path) -> list[RoadmapRecord]:
    """Every whole record, oldest first; a torn last line (a crash mid-append) is left out."""
    path = Path(project_dir) / ROADMAP_LOG
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    out = []
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            out.append(RoadmapRecord.model_validate(json.loads(line)))
        except ValueError:
            continue
    return out


def phase_runs(project_dir: Path) -> dict[str, list[RunState]]:
    """Each phase's runs (oldest first), found by their task; an unreadable run is left out."""
    store = RunStore(Path(project_dir))
    out: dict[str, list[RunState]] = {}
    for run_id in store.run_ids():
        try:
            state = store.load(run_id).state
        except (RunCorrupt, OSError):
            continue
        phase = phase_of_task(state.task)
        if phase is not None:
            out.setdefault(phase, []).append(state)
    return out


def progress(project_dir: Path, roadmap: Roadmap) -> dict[str, PhaseProgress]:
    """Each phase's progress (in drive order), from its runs and the record log."""
    runs = phase_runs(project_dir)
    records = read_records(project_dir)
    out = {}
    for phase in roadmap.phases():
        mine = [r for r in records if r.phase == phase.id]
        written = [r.note for r in mine if r.type == "noted" and r.note]
        last_retry = max((i for i, r in enumerate(mine) if r.type == "retry"), default=-1)
        ignored = {x for r in mine[: last_retry + 1] for x in r.ignore}
        mine = mine[last_retry + 1:]
        states = [s for s in runs.get(phase.id, []) if s.run_id not in ignored]
        out[phase.id] = _fold(project_dir, phase, states, mine)
        out[phase.id].notes_written = written
        out[phase.id].contract_cost = contract_cost(project_dir, phase.id)
        if out[phase.id].status in ("pending", "paused") and not states:
            _not_started(project_dir, out[phase.id], records)
        _interview_done(project_dir, out[phase.id])
    return out


#: What a phase paused at its contract interview waits for once the interview converged.
INTERVIEW_FINISHED = "its contract interview is finished: `odin roadmap run` proposes the contract from your answers"


def _interview_done(project_dir: Path, p: PhaseProgress) -> None:
    """A phase paused at its contract interview whose last answer is in waits for `odin roadmap run`, not an answer."""
    if p.status == "paused" and p.pause == "interview" and interview_finished(project_dir, p.phase_id):
        p.interview_finished, p.reason = True, INTERVIEW_FINISHED


def _fold(project_dir: Path, phase: Phase, states: list[RunState], recs: list[RoadmapRecord]) -> PhaseProgress:
    p = PhaseProgress(phase_id=phase.id, status="pending", runs=[s.run_id for s in states],
                      iterations=sum(sum(1 for e in s.history if e.gate != "approved") for s in states),
                      cost_usd=round(sum(s.usage.total.cost_usd for s in states), 6),
                      last_run=states[-1].run_id if states else None)
    waiting = _waiting(recs)
    if any(r.type == "skipped" for r in recs):
        p.status = "skipped"
    elif not states:
        p.status = "skipped" if phase.done and not recs else "paused" if waiting else "pending"
        p.pause = waiting.kind if waiting else None
        p.reason = waiting.reason if waiting else None  # e.g. its contract interview waits for an answer
    else:
        _from_run(project_dir, p, states[-1], recs, waiting)
        changed = contract_change(project_dir, phase.id, states[-1].run_id, recs)
        if changed is not None:
            p.status, p.reason, p.pause, p.contract_changed = "blocked", changed, None, True
        elif p.status in ("done", "done_with_concerns"):
            p.undecided = _undecided(recs, states[-1].run_id)
    return p


def _not_started(project_dir: Path, p: PhaseProgress, records: list[RoadmapRecord]) -> None:
    """A phase not started yet whose contract changed while another phase's run drove: blocked."""
    changed = driven_change(records, p.phase_id, contract_sha256(project_dir, p.phase_id))
    if changed is not None:
        p.status, p.reason, p.pause, p.contract_changed = "blocked", changed, None, True


def paused_phase(project_dir: Path) -> PhaseProgress | None:
    """The phase the project's roadmap waits at for a person (``odin roadmap run`` goes on), if any; None
    without a roadmap, or with one that cannot be read (the roadmap's own commands say why)."""
    return waiting_phases(project_dir)[0]


def waiting_phases(project_dir: Path) -> tuple[PhaseProgress | None, PhaseProgress | None]:
    """The roadmap's phase paused for a person (:func:`paused_phase`) and the phase it stops at (escalated, or
    blocked: by its judge, or on its contract) until a person decides (``--retry``, ``--skip``,
    ``--accept-contract``), from one reading of its progress; (None, None) as for :func:`paused_phase`."""
    path = Path(project_dir) / ROADMAP_FILE
    if not path.is_file():
        return None, None
    try:
        roadmap = load_roadmap(path)
    except OdinError:
        return None, None
    states = list(progress(project_dir, roadmap).values())
    return (next((p for p in states if p.status == "paused"), None),
            next((p for p in states if p.status in ("blocked", "escalated")), None))


def stopped_fix(p: PhaseProgress) -> str:
    """What a person does about the phase the roadmap stops at (:func:`waiting_phases`)."""
    if p.contract_changed:
        return changed_fix(p.phase_id, started=bool(p.runs))
    return (f"fix what it names, then `odin roadmap run --retry {p.phase_id}` (another try), "
            f"or `odin roadmap run --skip {p.phase_id}`")


def _undecided(recs: list[RoadmapRecord], run_id: str) -> bool:
    """A run the driver sealed at its start whose phase has no outcome yet (a stop between its end and the decision)."""
    mine = [r for r in recs if r.run_id == run_id]
    return any(r.type == "started" and r.contract_sha256 for r in mine) and not any(r.type == "outcome" for r in mine)


def contract_sha256(project_dir: Path, phase_id: str) -> str | None:
    """The sha256 of the phase's contract file, never read through a link in its place (None when there is
    no file to read: a link put there does not match any seal)."""
    return file_sha256(contract_path(project_dir, phase_id))


def contract_change(project_dir: Path, phase_id: str, run_id: str,
                    recs: list[RoadmapRecord] | None = None) -> str | None:
    """Why the phase must stop when its contract is not the one run ``run_id`` was sealed with (its ``started``
    record, or a later ``sealed`` one) and the phase is not decided yet; None when it is, or was never sealed."""
    mine = [r for r in (read_records(project_dir) if recs is None else recs)
            if r.phase == phase_id and r.run_id == run_id]
    if any(r.type == "outcome" for r in mine):
        return None
    seal = next((r.contract_sha256 for r in reversed(mine) if r.type in ("started", "sealed") and r.contract_sha256),
                None)
    if seal is None or contract_sha256(project_dir, phase_id) == seal:
        return None
    return changed_reason(phase_id)


def changed_reason(phase_id: str) -> str:
    return f"contract {CONTRACTS_DIR}/{phase_id}.yaml changed while its phase ran"


def contract_hashes(project_dir: Path, roadmap: Roadmap) -> dict[str, str | None]:
    """Each phase's contract sha256 now (None: no file): what a drive's records carry."""
    return {phase.id: contract_sha256(project_dir, phase.id) for phase in roadmap.phases()}


_UNKNOWN = "?"  # no drive recorded the contract yet
ADDED = "+"  # the phase came into the roadmap inside a drive: no text of its contract is trusted


def driven_change(records: list[RoadmapRecord], phase_id: str, now: str | None) -> str | None:
    """Why ``phase_id`` (not started yet) must not start: its contract (``now``) is not as it was when a drive of
    another phase's run began, and changed inside that drive (or one that never recorded its end: a crash), or the
    phase itself came into the roadmap inside it (named by a record after the drive's start, not by that start) —
    put back, it starts; a ``sealed`` record without a run accepts it; an edit between drives is a person's."""
    trusted, blame, driving = _UNKNOWN, None, None  # the accepted hash; the drive that changed it; the open drive
    for r in records:
        if r.type == "sealed" and r.phase == phase_id and r.run_id is None:
            trusted, blame = r.contract_sha256, None
        if r.type not in ("started", "resumed", "drove"):
            continue
        if driving is not None and driving.contracts and phase_id not in driving.contracts and phase_id in r.contracts:
            trusted, blame = ADDED, (driving.phase, driving.run_id)  # not in the roadmap as the drive began
        elif phase_id in r.contracts:  # a record from before the phase was in the roadmap (or this check) has none
            value = r.contracts[phase_id]
            if blame is None and value != trusted and trusted != _UNKNOWN and driving is not None:
                blame = (driving.phase, driving.run_id)
            if blame is None or value == trusted:
                trusted, blame = value, None
        driving = r if r.type != "drove" and r.phase != phase_id else None
    if blame is None and now != trusted and trusted != _UNKNOWN and driving is not None:
        blame = (driving.phase, driving.run_id)
    if blame is None or now == trusted:
        return None
    return driven_reason(phase_id, *blame)


def driven_reason(phase_id: str, driving: str, run_id: str | None) -> str:
    return f"contract {CONTRACTS_DIR}/{phase_id}.yaml changed while phase {driving}'s run drove (run {run_id})"


def changed_fix(phase_id: str, started: bool = True) -> str:
    """What a person does about a phase blocked by a changed contract (said by the driver and by `odin status`);
    ``started``: the phase's run began (else another phase's run drove when the contract changed)."""
    back = ("when the run began and `odin roadmap run` resumes it" if started
            else "before that run and `odin roadmap run` starts the phase")
    return f"put back the text it had {back}, or accept the edit: `odin roadmap run --accept-contract {phase_id}`"


def new_run_fix(phase_id: str, under_way: bool = True) -> str:
    """How a person changes the contract of a phase that has a run (its scope, say): the run goes on under the
    contract it was sealed with, so an edit applies to a new run (``under_way``: its run is still active, to be
    given up first). Editing it while the run is kept blocks the phase (docs/roadmap.md)."""
    first = "`odin abandon` (its run), then " if under_way else ""
    return (f"a changed contract applies to a new run: {first}edit {CONTRACTS_DIR}/{phase_id}.yaml, then "
            f"`odin roadmap run --retry {phase_id}`")


def _waiting(recs: list[RoadmapRecord], run_id: str | None = None) -> RoadmapRecord | None:
    """The last pause record not followed by its approval (for ``run_id`` when given)."""
    pending: RoadmapRecord | None = None
    for r in recs:
        if r.type == "paused" and (run_id is None or r.run_id in (None, run_id)):
            pending = r
        elif r.type == "approved" and pending is not None and r.kind == pending.kind:
            pending = None
        elif r.type == "started":
            pending = None
    return pending


def _from_run(project_dir: Path, p: PhaseProgress, last: RunState, recs: list[RoadmapRecord],
              waiting: RoadmapRecord | None) -> None:
    outcome = next((r for r in reversed(recs) if r.type == "outcome" and r.run_id == last.run_id), None)
    p.concern = "; ".join(f"{c.stage}: {c.text}" for c in last.concerns) or None
    if last.status == "done":
        p.status = "done_with_concerns" if last.concerns else "done"
        if waiting is not None and waiting.kind in ("signoff", "concerns"):
            p.status, p.pause = "paused", waiting.kind
        elif waiting is None and _needs_signoff(project_dir, p.phase_id, recs, last.run_id):
            p.status, p.pause = "paused", "signoff"
    elif last.status == "failed":
        p.status, p.reason = "escalated", last.failure_reason
    elif last.status == "blocked" and last.blocked is not None and last.blocked.kind == "judge":
        p.status, p.reason = "blocked", last.blocked.reason
    elif last.status == "abandoned":
        if outcome is not None and outcome.status in ("blocked", "escalated"):
            p.status, p.reason = outcome.status, outcome.reason
    elif last.status == "running" and waiting is None:
        p.status = "active"
    else:  # awaiting approval or an answer, blocked for a person, or stopped at a verdict
        p.status = "paused"
        p.pause = waiting.kind if waiting is not None else "run"
        p.reason = last.blocked.reason if last.blocked is not None else None


def _needs_signoff(project_dir: Path, phase_id: str, recs: list[RoadmapRecord], run_id: str) -> bool:
    """A risky phase's DONE waits for a person's sign-off until it is approved."""
    if any(r.type == "approved" and r.kind == "signoff" and r.run_id == run_id for r in recs):
        return False
    path = contract_path(project_dir, phase_id)
    if not path.is_file():
        return False
    try:
        return load_contract(path).risk == "risky"
    except Exception:  # an invalid contract is reported by the driver, not by a view
        return False


def written_notes(project_dir: Path, phase_id: str) -> list[str]:
    """The status notes odin wrote on ``phase_id``'s line (its ``noted`` records), oldest first."""
    return [r.note for r in read_records(project_dir) if r.phase == phase_id and r.type == "noted" and r.note]


def note_phase(project_dir: Path, path: Path, phase_id: str, *, done: bool, note: str | None) -> None:
    """Set the phase's line with a status note odin writes, recorded first so that only it is ever taken back."""
    if note is not None:
        append_record(project_dir, "noted", phase_id, note=note)
    set_phase(path, phase_id, done=done, note=note)


def expected_mark(p: PhaseProgress, note: str | None) -> tuple[bool, str | None]:
    """The checkbox and note roadmap.md should show for ``p`` (``note``: the line's note now). Only a note odin
    wrote itself (``p.notes_written``) is replaced or removed; a person's note stays, whatever it says."""
    ours = note is not None and note in p.notes_written
    if p.status in ("escalated", "blocked"):
        reason = " ".join((p.reason or "see its run").split())
        reason = reason[:117] + "…" if len(reason) > 120 else reason
        return False, note if ours and note.startswith(p.status) else f"{p.status}: {reason}"
    keep = None if ours else note
    return p.finished, keep


def repairs(project_dir: Path, roadmap: Roadmap) -> list[str]:
    """Where roadmap.md's checkboxes (and status notes) disagree with the runs, one line each."""
    return [text for _, _, _, text in _planned(project_dir, roadmap)]


def repair(project_dir: Path, roadmap: Roadmap, path: Path) -> list[str]:
    """Make roadmap.md at ``path`` agree with the runs; the repairs made, one line each."""
    done = []
    for phase, mark, note, text in _planned(project_dir, roadmap):
        if note is not None and note != phase.note:  # a note the repair writes is odin's own
            note_phase(project_dir, path, phase.id, done=mark, note=note)
        else:
            set_phase(path, phase.id, done=mark, note=note)
        done.append(text)
    return done


def _planned(project_dir: Path, roadmap: Roadmap) -> list[tuple[Phase, bool, str | None, str]]:
    out = []
    states = progress(project_dir, roadmap)
    for phase in roadmap.phases():
        p = states[phase.id]
        mark, note = expected_mark(p, phase.note)
        if (mark, note) == (phase.done, phase.note):
            continue
        run = f"run {p.last_run}" if p.last_run else "no run"
        box = "[x]" if mark else "[ ]"
        why = p.status.replace("_", " ")
        if mark == phase.done:  # only the status note differs: say that, not "was [ ] … now [ ]"
            text = (f"roadmap.md:{phase.line}: {phase.id}'s note was {phase.note or '(none)'}; the runs say {why} "
                    f"({run}): now {note or '(none)'}")
        else:
            text = (f"roadmap.md:{phase.line}: {phase.id} was {'[x]' if phase.done else '[ ]'}"
                    f"{' — ' + phase.note if phase.note else ''}; the runs say {why} ({run}): now {box}"
                    f"{' — ' + note if note else ''}")
        out.append((phase, mark, note, text))
    return out
