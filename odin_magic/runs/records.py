"""The event log's records, typed, and the one parser of a log line.

Every line of a run's ``events.jsonl`` is one JSON object ``{"seq", "at", "type", ...}``
(see ``docs/engine.md``, "The event log"). :func:`parse_record` turns a line (bytes or str)
or an already decoded object into a :class:`Record`: the subclass of its ``type``
(:class:`Gate`, :class:`Created`, ...), or a plain :class:`Record` for a type this
version does not know (a later version's record still parses and folds). The store's
readers, the fold, Muninn's refine and the project memory all read records through it.

A record is the decoded JSON object itself, a ``dict`` subclass (so ``record["seq"]``,
``record.get("set")``, ``record == {...}`` and ``json.dumps(record)`` work as they did on the
plain dicts of earlier versions), with typed properties (``record.seq``, ``record.type``,
``record.patch``, ``gate.entry`` ...). Nothing is re-encoded: the object written is the object
read back, so the on-disk JSON of a record is identical for the same content, and old run
directories read as before. Not pydantic models: the store appends one record per transition
(benchmarked: one fsync each) and folds every record of a log on a rebuild, and a ``dict``
subclass costs one shallow copy per record; the fields are validated where they are folded
(``HistoryEntry``, ``Usage``, ...) or read (the typed properties).

**The transition patch.** A record's ``set`` object holds the state fields it changes;
:class:`StatePatch` is its typed form, one field per key of :data:`SETTABLE`, a field
left :data:`UNSET` not being part of the patch (``None`` is a value: it clears).
:meth:`odin_magic.runs.store.RunHandle.record` takes either form::

    handle.record(RecordType.FAILED, at, stage=s,
                  set=StatePatch(status="failed", failure_reason=why))                     # the engine's form
    handle.record("failed", at, stage=s, set={"status": "failed", "failure_reason": why})  # also taken

A ``StatePatch`` is written with its keys in :data:`SETTABLE` order; a dict as given.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import Enum
from typing import Any, Iterator

from odin_magic.runs.state import HistoryEntry, InterviewSummary, Usage


class RecordType(str, Enum):
    """Every type of record the engine writes to a run's event log (a ``str``: ``kind == "gate"`` holds)."""

    CREATED = "created"  # the run exists
    GATE = "gate"  # one gate evaluation, complete (history entry, counters, next stage, status)
    APPROVED = "approved"  # the human approved the paused stage
    REVISED = "revised"  # revision requested at a pause
    STEP = "step"  # `step STAGE` started
    USAGE = "usage"  # tokens/cost reported by the worker
    FAILED = "failed"  # timeout / no progress / budget
    ABANDONED = "abandoned"  # the user gave the run up
    REOPENED = "reopened"  # `step STAGE` on a failed run reopened it
    INTERVIEW = "interview"  # a deep interview's convergence
    AWAITING_ANSWER = "awaiting_answer"  # the interview asked a question; the run pauses
    NOTICE = "notice"  # something the user was told (e.g. a rebuild)
    CHECKPOINT = "checkpoint"  # a stage execution begins: the tree's checkpoint before it
    BLOCKED = "blocked"  # a failure no loopback can fix
    UNBLOCKED = "unblocked"  # `run` continues a blocked run
    REVERTED = "reverted"  # the tree went back to a checkpoint
    FORKED = "forked"  # the first records of a fork: the inherited history
    FORK_UNDONE = "fork_undone"  # a failed fork gave its source run back its fields
    FROZEN = "frozen"  # a passing gate froze its stage's produces (written just before that gate record)

    def __str__(self) -> str:
        return self.value


#: state fields a record may set through its ``set`` object (``iterations``, ``artifacts`` and
#: ``dry_used`` are merged key by key; ``dry_gates``, written by earlier versions, replaces the dry
#: script with what remained of it). The fields of :class:`StatePatch`, in this order.
SETTABLE = (
    "current_stage", "status", "total_iterations", "no_progress", "failure_reason",
    "ended_at", "feedback", "iterations", "artifacts", "dry_gates", "dry_used", "blocked", "repeats", "checkpoint",
    "tree", "forked_from", "forked_to",
)


class _Unset:
    """The value of a :class:`StatePatch` field that is not part of the patch."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()


@dataclass(frozen=True, slots=True)
class StatePatch:
    """The typed form of a record's ``set`` object: the state fields a transition changes.

    Models (``blocked``, ``repeats``, ``checkpoint``) may be given as models or as their JSON
    objects; :meth:`to_dict` gives what the log holds."""

    current_stage: Any = UNSET
    status: Any = UNSET
    total_iterations: Any = UNSET
    no_progress: Any = UNSET
    failure_reason: Any = UNSET
    ended_at: Any = UNSET
    feedback: Any = UNSET
    iterations: Any = UNSET
    artifacts: Any = UNSET
    dry_gates: Any = UNSET
    dry_used: Any = UNSET
    blocked: Any = UNSET
    repeats: Any = UNSET
    checkpoint: Any = UNSET
    tree: Any = UNSET
    forked_from: Any = UNSET
    forked_to: Any = UNSET

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> StatePatch:
        """A ``set`` object as a patch; keys that are not :data:`SETTABLE` are left out (the fold ignores them)."""
        return cls(**{k: v for k, v in (data or {}).items() if k in SETTABLE})

    def to_dict(self) -> dict[str, Any]:
        """The ``set`` object written to the log: the given fields, in :data:`SETTABLE` order, models as JSON."""
        out = {}
        for name in SETTABLE:
            value = getattr(self, name)
            if value is not UNSET:
                out[name] = value.model_dump(mode="json", exclude_none=True) if hasattr(value, "model_dump") else value
        return out

    def get(self, name: str, default: Any = None) -> Any:
        """The field ``name`` when it is part of the patch, else ``default``."""
        value = getattr(self, name, UNSET)
        return default if value is UNSET else value

    def __iter__(self) -> Iterator[str]:
        """The names of the fields that are part of the patch."""
        return (f.name for f in fields(self) if getattr(self, f.name) is not UNSET)


def patch_dict(patch: StatePatch | Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A ``set`` argument (a :class:`StatePatch` or today's dict) as the object the log holds."""
    if isinstance(patch, StatePatch):
        return patch.to_dict()
    return patch if patch is None or isinstance(patch, dict) else dict(patch)


# -- the records -------------------------------------------------------------


def is_record(value: Any) -> bool:
    """An event record's shape: a JSON object with an integer ``seq`` and a string ``type``."""
    return (isinstance(value, Mapping) and isinstance(value.get("seq"), int)
            and not isinstance(value.get("seq"), bool) and isinstance(value.get("type"), str))


class Record(dict):
    """One record of the event log: its JSON object as decoded (a ``dict``: ``record["seq"]``,
    ``json.dumps(record)`` work as they did on the plain dicts of earlier versions), with typed
    properties. Read it, never change it: it is what the log holds.

    The plain class is a record of a type this version does not know; each known type has its
    subclass (see :data:`RECORD_CLASSES`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict.__repr__(self)})"

    def to_json(self) -> str:
        """The record's line, without its newline (as :meth:`RunHandle.record` writes it)."""
        return json.dumps(self, ensure_ascii=False, separators=(",", ":"))

    # -- what every record has --
    @property
    def seq(self) -> int:
        return self["seq"]

    @property
    def at(self) -> str:
        return self.get("at", "")

    @property
    def type(self) -> RecordType | str:
        """The record's type: a :class:`RecordType`, or the string of a type this version does not know."""
        kind = self["type"]
        return _TYPES.get(kind, kind)

    @property
    def stage(self) -> str | None:
        return self.get("stage")

    @property
    def patch(self) -> StatePatch:
        """The state fields the record sets (an empty patch when it sets none)."""
        return StatePatch.from_dict(self.get("set"))

    @property
    def usage(self) -> Usage | None:
        """Tokens and cost the record reports (``usage`` records; earlier versions put them on gates too)."""
        usage = self.get("usage")
        return None if usage is None else Usage.model_validate(usage)

    @property
    def entry(self) -> HistoryEntry | None:
        """The history entry the record appends (``gate`` and ``approved`` records)."""
        entry = self.get("entry")
        return None if entry is None else HistoryEntry.model_validate(entry)


class Created(Record):
    """The run exists: its first record, carrying what :class:`~odin_magic.runs.state.RunState` starts from."""

    __slots__ = ()

    @property
    def run_id(self) -> str:
        return self["run_id"]

    @property
    def loop(self) -> str:
        return self["loop"]

    @property
    def task(self) -> str:
        return self["task"]

    @property
    def loop_sha256(self) -> str | None:
        """The sha256 of the run's ``loop.json`` as it was written (None in runs of earlier versions)."""
        return self.get("loop_sha256")


class Gate(Record):
    """One gate evaluation, complete: its history entry, counters, next stage and status in one record."""

    __slots__ = ()

    @property
    def evidence_sha256(self) -> str | None:
        """The evidence line's sha256: in the entry (earlier versions put it beside the entry)."""
        return (self.get("entry") or {}).get("evidence_sha256") or self.get("evidence_sha256")


class Approved(Record):
    __slots__ = ()


class Revised(Record):
    """A revision requested at a pause: ``patch.feedback`` is what the human asked."""

    __slots__ = ()

    @property
    def feedback(self) -> str | None:
        return self.patch.get("feedback")


class Step(Record):
    __slots__ = ()


class UsageRecord(Record):
    __slots__ = ()


class Failed(Record):
    """The run failed (timeout, no progress, budget): ``patch.failure_reason`` says why."""

    __slots__ = ()


class Abandoned(Record):
    __slots__ = ()


class Reopened(Record):
    __slots__ = ()

    @property
    def was(self) -> str | None:
        """The failure reason the run had."""
        return self.get("was")


class InterviewRecord(Record):
    __slots__ = ()

    @property
    def interview(self) -> InterviewSummary | None:
        summary = self.get("interview")
        return None if summary is None else InterviewSummary.model_validate(summary)


class AwaitingAnswer(InterviewRecord):
    __slots__ = ()


class Notice(Record):
    __slots__ = ()

    @property
    def text(self) -> str:
        return self.get("text", "")


class CheckpointRecord(Record):
    __slots__ = ()


class BlockedRecord(Record):
    __slots__ = ()


class Unblocked(Record):
    __slots__ = ()


class Reverted(Record):
    """The tree went back to the checkpoint before stage execution ``execution`` (of ``stage``); ``reason``
    says so in words (records of earlier versions have none: :func:`odin_magic.runs.fold.revert_of`)."""

    __slots__ = ()

    @property
    def execution(self) -> int | None:
        return self.get("execution")

    @property
    def reason(self) -> str | None:
        return self.get("reason")


class Forked(Record):
    """A fork's first transition: the history it inherits (``entries``) and where it came from."""

    __slots__ = ()

    @property
    def entries(self) -> list[HistoryEntry]:
        return [HistoryEntry.model_validate(e) for e in self.get("entries") or ()]


class ForkUndone(Record):
    __slots__ = ()


class FrozenRecord(Record):
    """A passing gate froze its stage's produces: ``files`` maps each artifact path to ``{"sha256", "mode"}``
    (a folder or glob under which no file may appear: ``{}``); the stage's earlier freezes are replaced.
    A gate record whose loopback goes to a stage holding freezes names it in ``unfrozen``; a ``reverted``
    record unfreezes what was frozen at or after the execution it goes back to (:mod:`odin_magic.runs.fold`)."""

    __slots__ = ()

    @property
    def point(self) -> int:
        return self["point"]

    @property
    def files(self) -> dict[str, dict[str, str]]:
        return self.get("files") or {}


#: the class of each known record type
RECORD_CLASSES: dict[RecordType, type[Record]] = {
    RecordType.CREATED: Created, RecordType.GATE: Gate, RecordType.APPROVED: Approved,
    RecordType.REVISED: Revised, RecordType.STEP: Step, RecordType.USAGE: UsageRecord,
    RecordType.FAILED: Failed, RecordType.ABANDONED: Abandoned, RecordType.REOPENED: Reopened,
    RecordType.INTERVIEW: InterviewRecord, RecordType.AWAITING_ANSWER: AwaitingAnswer, RecordType.NOTICE: Notice,
    RecordType.CHECKPOINT: CheckpointRecord, RecordType.BLOCKED: BlockedRecord, RecordType.UNBLOCKED: Unblocked,
    RecordType.REVERTED: Reverted, RecordType.FORKED: Forked, RecordType.FORK_UNDONE: ForkUndone,
    RecordType.FROZEN: FrozenRecord,
}
_TYPES: dict[str, RecordType] = {t.value: t for t in RecordType}
_CLASSES: dict[str, type[Record]] = {t.value: cls for t, cls in RECORD_CLASSES.items()}


class NotARecord(ValueError):
    """A line or object that is not an event record (not JSON, or not ``{"seq": int, "type": str, ...}``)."""


def parse_record(line_or_dict: bytes | str | Mapping[str, Any]) -> Record:
    """The one parser of the event log: a line (with or without its newline) or a decoded object
    as its typed :class:`Record`. :class:`NotARecord` (a ``ValueError``) says why it is none."""
    if isinstance(line_or_dict, Record):
        return line_or_dict
    if isinstance(line_or_dict, (bytes, str)):
        try:
            data = json.loads(line_or_dict)
        except ValueError as exc:
            raise NotARecord(str(exc)) from None
    else:
        data = line_or_dict
    if not is_record(data):
        raise NotARecord('not an object with an integer "seq" and a string "type"')
    return _CLASSES.get(data["type"], Record)(data)


def as_record(data: dict[str, Any]) -> Record:
    """A record just written (known to be one: no checks) as its typed view."""
    return _CLASSES.get(data["type"], Record)(data)
