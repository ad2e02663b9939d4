"""One drive of one run (:class:`Session`), and the small values every part of the engine shares: time
stamps, a history entry's common fields, a reader's snapshot of a run's state, the worker's failure."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable

from odin_magic.core.confine import Confinement
from odin_magic.core.errors import OdinError
from odin_magic.loop.artifacts import Placement
from odin_magic.loop.schema import Loop, Stage
from odin_magic.runs.state import RunState
from odin_magic.runs.store import RunHandle
from odin_magic.workers.base import StageJob, StageResult, Worker, WorkerEvent

Clock = Callable[[], datetime]

#: An interview runner performs a stage that declares ``interview``; it gets the
#: engine's session (to record the interview summary) and returns a StageResult.
InterviewRunner = Callable[["Session", StageJob, Callable[[WorkerEvent], None]], StageResult]


class WorkerFailed(OdinError):
    """A stage could not be completed by its worker; the run stays resumable."""


def local_naive(dt: datetime) -> datetime:
    return dt.astimezone().replace(tzinfo=None) if dt.tzinfo else dt


def stamp(dt: datetime) -> str:
    return local_naive(dt).strftime("%Y-%m-%dT%H:%M:%S")


def history_entry(stage: Stage, result: str, gate: str, at: str) -> dict[str, Any]:
    """A history entry's common fields; ``agent`` only for a stage that ran in a fresh context."""
    entry: dict[str, Any] = {"stage": stage.id, "result": result, "gate": gate, "at": at}
    if stage.resolved_agent.fresh:
        entry["agent"] = stage.resolved_agent.label
    return entry


def copy_state(state: RunState) -> RunState:
    """A snapshot for readers, cheap even with a long history.

    The fold (:func:`odin_magic.runs.store.apply`) only appends history entries and
    replaces or updates containers, so the snapshot gets its own containers and
    shares the (never modified) history entries: treat them as read-only.
    """
    return state.model_copy(update={
        "history": list(state.history),
        "iterations": dict(state.iterations),
        "artifacts": dict(state.artifacts),
        "dry": state.dry.model_copy(update={"used": dict(state.dry.used)}) if state.dry is not None else None,
    })


@dataclass
class Session:
    """One drive of one run: the locked run, its loop, the worker, what has passed."""

    handle: RunHandle
    loop: Loop
    worker: Worker | None  # None when the action performs no stage (abandon)
    passed: set[str] = field(default_factory=set)
    answer: str | None = None  # the user's reply to a waiting interview question (read by the runner)
    confinement: Confinement | None = None  # the project and the run dir, resolved as the drive first needs them
    places: dict[str, tuple[dict[str, Placement], dict[str, Placement]]] = field(default_factory=dict)  # by stage

    @property
    def state(self) -> RunState:
        return self.handle.state
