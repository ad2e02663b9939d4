"""The run's state as a pure fold of its event log: :func:`apply` one record, :func:`fold` many.

state.json is a cache of this fold (see :mod:`odin_magic.runs.store`). A record's ``set`` object
(its :class:`~odin_magic.runs.records.StatePatch`) replaces the fields it names, but
``iterations``, ``artifacts`` and ``dry_used``, which are merged key by key; ``usage`` adds to the
run's usage, ``entry`` and ``entries`` append history entries, ``interview`` replaces the interview
summary and ``concerns`` are appended; a ``reverted`` record appends a
:class:`~odin_magic.runs.state.Revert` to ``reverts`` (with its reason, or the one :func:`revert_reason`
gives the records of versions that wrote none); ``frozen`` records, ``unfrozen`` lists and reverts keep
``frozen`` (:func:`freezes`). The fold reads the record's JSON object as written (a
:class:`~odin_magic.runs.records.Record` or a plain dict), whatever its type: a record of a later
version folds as far as this version knows its fields.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from pydantic import ValidationError

from odin_magic.runs.errors import RunCorrupt
from odin_magic.runs.records import SETTABLE
from odin_magic.runs.state import (
    Blocked, Concern, DryOptions, Frozen, HistoryEntry, InterviewSummary, PendingCheckpoint, Revert, RunState, Streak,
    Usage,
)

#: settable fields that hold a model (validated as they are folded in; None clears them)
_MODELLED = {"blocked": Blocked, "repeats": Streak, "checkpoint": PendingCheckpoint}


def apply(state: RunState | None, record: Mapping[str, Any]) -> RunState:
    """Fold one event-log record into ``state`` (mutated and returned).

    A record that cannot be folded (a hand-edited log) is :class:`RunCorrupt`.
    """
    try:
        return _apply(state, record)
    except (KeyError, TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        if isinstance(exc, KeyError):
            detail = f"field {exc} is missing"
        elif isinstance(exc, ValidationError):
            first = exc.errors()[0]
            detail = f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
        else:
            detail = str(exc).splitlines()[0]
        raise RunCorrupt(
            f"event {record.get('seq')} ({record.get('type')}) of the event log cannot be applied: {detail}",
            hint="the log is append-only; restore it from a backup, or move the run's directory away",
        ) from None


def _apply(state: RunState | None, record: Mapping[str, Any]) -> RunState:
    kind = record["type"]
    if kind == "created":
        dry = record.get("dry")
        state = RunState(
            run_id=record["run_id"],
            loop=record["loop"],
            task=record["task"],
            started_at=record["started_at"],
            current_stage=record["current_stage"],
            max_iterations=record["max_iterations"],
            dry=DryOptions.model_validate(dry) if dry is not None else None,
        )
    elif state is None:
        raise RunCorrupt(f"event log starts with {kind!r}, not 'created'")
    for key, value in (record.get("set") or {}).items():
        if key == "iterations":
            state.iterations.update(value)
        elif key == "artifacts":
            state.artifacts.update(value)
        elif key == "dry_gates":  # an earlier version's record: the remaining script
            if state.dry is not None:
                state.dry.gates = list(value)
                state.dry.used = {}
        elif key == "dry_used":  # how many scripted failures of a stage are consumed
            if state.dry is not None:
                state.dry.used.update(value)
        elif key in _MODELLED:
            setattr(state, key, None if value is None else _MODELLED[key].model_validate(value))
        elif key in SETTABLE:
            setattr(state, key, value)
    if "usage" in record:
        state.usage = state.usage.add(record.get("stage") or "-", Usage.model_validate(record["usage"]))
    if "entry" in record:
        state.history.append(HistoryEntry.model_validate(record["entry"]))
    for entry in record.get("entries") or ():  # a fork's inherited history
        state.history.append(HistoryEntry.model_validate(entry))
    if "interview" in record:
        state.interview = InterviewSummary.model_validate(record["interview"])
    for concern in record.get("concerns") or ():  # appended: a gate pass's concerns, carried forward
        state.concerns.append(Concern.model_validate(concern))
    if kind == "reverted":  # the records of earlier versions carry no reason: revert_of gives one
        state.reverts = [*(state.reverts or ()), revert_of(record, len(state.history))]
    if state.frozen is not None or kind == "frozen":
        state.frozen = freezes(state.frozen or {}, kind, record) or None
    state.log_seq = record["seq"]
    return state


def freezes(frozen: dict[str, Frozen], kind: str, record: Mapping[str, Any]) -> dict[str, Frozen]:
    """The frozen artifacts after ``record``: a ``frozen`` record replaces its stage's freezes; a stage a
    record names in ``unfrozen`` (a loopback to it) has none; a ``reverted`` record drops the freezes made
    at or after the execution it goes back to."""
    if kind == "frozen":
        stage, point = record["stage"], record["point"]
        frozen = {p: f for p, f in frozen.items() if f.stage != stage}
        for path, data in (record.get("files") or {}).items():
            frozen[path] = Frozen(stage=stage, point=point, **data)
    for stage in record.get("unfrozen") or ():
        frozen = {p: f for p, f in frozen.items() if f.stage != stage}
    if kind == "reverted" and record.get("execution"):
        frozen = {p: f for p, f in frozen.items() if f.point < record["execution"]}
    return frozen


def revert_reason(stage: str, execution: int | str) -> str:
    """What a revert record says of itself: ``reverted to before fix #3 by the user``."""
    return f"reverted to before {stage} #{execution} by the user"


def revert_of(record: Mapping[str, Any], point: int) -> Revert:
    """A ``reverted`` record as the :class:`Revert` the state keeps, ``point`` history entries in."""
    stage = record.get("stage") or "?"
    execution = record.get("execution") or 0
    reason = record.get("reason") or revert_reason(stage, execution)
    return Revert(at=record.get("at", ""), stage=stage, execution=execution, point=point, reason=reason)


def fold(records: Iterable[Mapping[str, Any]], state: RunState | None = None,
         source: Path | None = None) -> RunState | None:
    """Fold ``records`` into ``state``; ``source`` (the log) is named when one cannot be applied."""
    try:
        for record in records:
            state = apply(state, record)
    except RunCorrupt as exc:
        if source is None:
            raise
        raise RunCorrupt(f"{source}: {exc.message}", hint=exc.hint) from None
    return state
