"""The event log's typed records (odin_magic.runs.records) and the engine's event kinds (odin_magic.runs.events)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from odin_magic.runs.events import EVENT_KINDS, EngineEvent, EventKind
from odin_magic.runs.fold import fold
from odin_magic.runs.log import LOG_NAME, read_log
from odin_magic.runs.records import (
    SETTABLE, UNSET, Gate, NotARecord, Record, RecordType, StatePatch, parse_record
)
from odin_magic.runs.store import RunStore
from odin_magic.runs import store

PACKAGE = Path(__file__).resolve().parents[2] / "odin_magic"
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "roundtrip"


def test_a_log_written_by_the_previous_release_parses_and_writes_back_identically():
    lines = (FIXTURE / LOG_NAME).read_bytes().splitlines()
    records = [parse_record(line) for line in lines]
    assert [r.seq for r in records] == list(range(1, len(lines) + 1))
    assert records[0].type is RecordType.CREATED and records[0].run_id == "20260614-143000-roundtrip"
    gates = [r for r in records if isinstance(r, Gate)]
    assert gates and all(r.type == "gate" for r in gates)
    assert gates[0].entry.reason == "ambiguïté trop élevée — 0.40 > 0.20 ✅"
    assert gates[0].patch.get("total_iterations") == 0 and gates[0].usage.output_tokens == 3
    assert [r.to_json().encode("utf-8") for r in records] == lines  # the same content, the same bytes
    assert fold(records).log_seq == len(lines)
    assert read_log(FIXTURE / LOG_NAME)[0] == records


def test_a_record_of_an_unknown_type_parses_as_a_plain_record():
    record = parse_record({"seq": 3, "at": "x", "type": "from_a_later_version", "set": {"status": "done"}})
    assert type(record) is Record and record.type == "from_a_later_version" and record.patch.status == "done"
    for bad in (b"not json", '{"seq": "1", "type": "gate"}', {"seq": True, "type": "gate"}, [1]):
        with pytest.raises(NotARecord):
            parse_record(bad)


def test_a_state_patch_is_the_set_object_typed():
    assert tuple(f for f in StatePatch.__dataclass_fields__) == SETTABLE
    patch = StatePatch(status="failed", failure_reason=None, current_stage="test")
    assert patch.to_dict() == {"current_stage": "test", "status": "failed", "failure_reason": None}
    assert patch.ended_at is UNSET and patch.get("ended_at", "-") == "-" and list(patch) == [
        "current_stage", "status", "failure_reason"]
    assert StatePatch.from_dict({"status": "done", "not_settable": 1}).to_dict() == {"status": "done"}
    assert store.SETTABLE == SETTABLE  # the store's name of earlier versions


def test_the_store_takes_a_state_patch_or_a_dict_and_writes_the_same_line(tmp_path):
    lines = []
    for n, patch in enumerate(({"status": "abandoned"}, StatePatch(status="abandoned"))):
        rs = RunStore(tmp_path / str(n))
        rs.ensure_layout()
        created = {"run_id": "20260101-120000-x", "loop": "x", "task": "t", "started_at": "2026-01-01T12:00:00",
                   "current_stage": "a", "max_iterations": 3}
        handle = rs.create(created, {"name": "x"}, "2026-01-01T12:00:00", "test")
        try:
            record = handle.record(RecordType.ABANDONED, "2026-01-01T12:00:01", set=patch)
        finally:
            handle.close()
        assert record.type is RecordType.ABANDONED and handle.state.status == "abandoned"
        lines.append((rs.run_dir("20260101-120000-x") / LOG_NAME).read_bytes())
    assert lines[0] == lines[1]
    assert json.loads(lines[0].splitlines()[-1]) == {"seq": 2, "at": "2026-01-01T12:00:01", "type": "abandoned",
                                                    "set": {"status": "abandoned"}}


def _calls(names: set[str], folders: tuple[str, ...]):
    """Every call of a function or method named in ``names`` in the package's ``folders``."""
    for folder in folders:
        for path in (PACKAGE / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call):
                    func = node.func
                    if (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)) in names:
                        yield node


def _literal_calls(names: set[str], folders: tuple[str, ...]) -> set[str]:
    """The string literals passed first (or as ``kind``/``type``) to calls of ``names`` in ``folders``."""
    found = set()
    for node in _calls(names, folders):
        args = list(node.args) + [k.value for k in node.keywords if k.arg in ("kind", "type")]
        found |= {a.value for a in args[:2] + args[len(node.args):]
                  if isinstance(a, ast.Constant) and isinstance(a.value, str)}
    return found


def test_every_emitted_event_kind_is_an_event_kind():
    emitted = _literal_calls({"_emit", "EngineEvent"}, ("engine", "commands", "notebook", "cli", "runs"))
    assert {"reopened", "report", "completion", "notice"} <= emitted  # the scan sees the engine's calls
    assert emitted - set(EVENT_KINDS) == set()
    assert EventKind.NOTICE == "notice" and EngineEvent("notice", "r").kind == EventKind.NOTICE


def _typed_calls(names: set[str], folders: tuple[str, ...]) -> set[str]:
    """The ``RecordType.NAME`` members passed first to calls of ``names`` in ``folders`` (their names)."""
    return {a.attr for node in _calls(names, folders) for a in node.args[:2]
            if isinstance(a, ast.Attribute) and isinstance(a.value, ast.Name) and a.value.id == "RecordType"}


def test_every_recorded_type_is_a_record_type():
    """The engine names each record's type by its RecordType member (the typed API); a string would
    bypass it, and a member that does not exist would fail only when that record is written."""
    assert _literal_calls({"_record"}, ("engine",)) == set()
    typed = _typed_calls({"_record", "record"}, ("engine", "commands", "runs"))
    assert {"GATE", "REOPENED", "FORKED"} <= typed
    assert typed - {t.name for t in RecordType} == set()
    strings = _literal_calls({"_record", "record"}, ("engine", "commands", "runs"))
    assert strings - {t.value for t in RecordType} == set()