"""History entries: compact in memory, and nothing of them lost between state.json, the log and readers.

``fixtures/runs/roundtrip`` is a run (its event log and its state.json) written
by the code before history entries became slotted dataclasses: every kind of
entry (each gate word, each failure class, fresh agents, checkpoints, evidence
references, non-ASCII reasons, a field from a later version) and the rest of
the state. Reading it and writing it back must give the same bytes.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from odin_magic.runs.state import HistoryEntry, RunState
from odin_magic.runs.statefile import read_state, state_json_pieces
from odin_magic.runs.store import (
    LOG_NAME, STATE_NAME, RunCorrupt, RunStore, apply, iter_log, read_log, write_atomic
)
from support import FIXTURES

FIXTURE = FIXTURES / "runs" / "roundtrip"
RUN_ID = "20260614-143000-roundtrip"
FIELDS = ("stage", "result", "gate", "at", "agent", "reason", "evidence", "failure", "checkpoint", "after")


@pytest.fixture
def run(project):
    """The fixture run copied into a project: (store, run_dir)."""
    store = RunStore(project)
    run_dir = store.run_dir(RUN_ID)
    shutil.copytree(FIXTURE, run_dir)
    return store, run_dir


def _logged_entries() -> list[dict]:
    """The history entries the fixture's log records, fields of a later version left out."""
    records, _, _ = read_log(FIXTURE / LOG_NAME)
    out = []
    for r in records:
        for e in ([r["entry"]] if "entry" in r else []) + list(r.get("entries") or ()):
            out.append({k: v for k, v in e.items() if k in FIELDS})
    return out


def _rewrite(store: RunStore, run_dir: Path) -> bytes:
    handle, _ = store.open(RUN_ID, "test", "2026-06-14T15:00:00")
    try:
        handle.save()
    finally:
        handle.close()
    return (run_dir / STATE_NAME).read_bytes()


def test_state_json_is_read_and_written_back_byte_for_byte(run):
    store, run_dir = run
    assert _rewrite(store, run_dir) == (FIXTURE / STATE_NAME).read_bytes()


def test_a_state_rebuilt_from_the_log_is_written_byte_for_byte(run):
    store, run_dir = run
    (run_dir / STATE_NAME).unlink()
    assert "rebuilt from its event log" in store.load(RUN_ID).notice
    assert _rewrite(store, run_dir) == (FIXTURE / STATE_NAME).read_bytes()


def test_every_history_entry_reaches_the_readers(run):
    store, _ = run
    state = store.load(RUN_ID).state
    saved = json.loads((FIXTURE / STATE_NAME).read_text(encoding="utf-8"))
    assert [e.model_dump(mode="json", exclude_none=True) for e in state.history] == _logged_entries()
    assert state.to_json() == saved  # what `odin status --json` and `odin runs --json` print
    assert state.history[2].agent == "executor (fresh)" and state.history[2].checkpoint.startswith("0123")
    assert [e.failure for e in state.history if e.result == "fail"] == ["recoverable", "environment", "repeated", "blocked"]
    assert state.history[-1].model_dump() == {"stage": "build", "result": "pass", "gate": "ai", "at": "2026-06-14T14:38:00",
                                              "agent": None, "reason": None, "evidence": None, "failure": None,
                                              "checkpoint": None, "after": None, "evidence_sha256": None,
                                              "evidence_bytes": None}


def test_history_entries_keep_their_fields_in_slots(run):
    """What a run's memory grows by: an entry with no per-instance dict nor set of fields (a model's ~1 KB)."""
    store, run_dir = run
    from_json = store.load(RUN_ID).state
    (run_dir / STATE_NAME).unlink()
    from_log = store.load(RUN_ID).state
    for state in (from_json, from_log):
        assert state.history
        for entry in state.history:
            assert not hasattr(entry, "__dict__") and not hasattr(entry, "__pydantic_fields_set__")
    assert from_json.history == from_log.history


def test_a_state_copies_with_its_history(run):
    store, _ = run
    state = store.load(RUN_ID).state
    for twin in (copy.deepcopy(state), state.model_copy(deep=True), RunState.model_validate_json(state.model_dump_json())):
        assert twin == state and twin.history == state.history and twin.history[0] is not state.history[0]


def test_a_history_entry_is_validated_as_before():
    with pytest.raises(ValidationError, match="result"):
        HistoryEntry(stage="build", result="maybe", gate="ai", at="2026-06-14T14:30:00")
    with pytest.raises(ValidationError, match="gate"):
        HistoryEntry.model_validate({"stage": "build", "result": "pass", "gate": "auto", "at": "2026-06-14T14:30:00"})
    records, _, _ = read_log(FIXTURE / LOG_NAME)
    state = apply(None, records[0])
    with pytest.raises(RunCorrupt, match=r"event 2 \(gate\) .*: gate: Input should be 'ai', 'ai-pending' or 'approved'"):
        apply(state, {"seq": 2, "at": "x", "type": "gate", "entry": {"stage": "b", "result": "pass", "gate": "auto", "at": "x"}})


def test_the_log_is_parsed_record_by_record(tmp_path):
    log = tmp_path / LOG_NAME
    log.write_bytes(b'{"seq": 1, "type": "a"}\n{"seq": 2, "type": "b"}\nnot json\n{"seq": 4, "type": "torn"')
    records = iter_log(log)
    assert [next(records)["seq"], next(records)["seq"]] == [1, 2]  # the damage further on is not read yet
    with pytest.raises(RunCorrupt, match=rf"{log}: line 3 is not a valid event record"):
        next(records)
    log.write_bytes(b'{"seq": 1, "type": "a"}\n{"seq": 2, "type": "torn"')
    assert [r["seq"] for r in iter_log(log)] == [1]  # a torn last line is left out
    assert list(iter_log(tmp_path / "none.jsonl")) == []


def test_a_rebuild_folds_each_record_as_it_reads_it(run):
    """The whole log is never held in memory: the fold meets a bad record before the parser reaches the end."""
    store, run_dir = run
    (run_dir / STATE_NAME).unlink()
    lines = (FIXTURE / LOG_NAME).read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b'"gate":"ai-pending"', b'"gate":"auto"')
    lines[5] = b"not json"
    (run_dir / LOG_NAME).write_bytes(b"\n".join(lines))
    with pytest.raises(RunCorrupt, match=r"event 3 \(gate\) .*gate: Input should be"):
        store.load(RUN_ID)


@pytest.mark.parametrize("per", [1, 2, 3, 7, 2000])
def test_state_json_written_in_pieces_is_the_same_text(per):
    """state.json is written a slice of the history at a time, never whole in memory: the same bytes."""
    state = read_state(FIXTURE / STATE_NAME)
    pieces = list(state_json_pieces(state, per=per))
    assert len(pieces) == 2 + -(-len(state.history) // per)  # the head, the slices, the tail
    assert "".join(pieces) == state.model_dump_json(indent=1, exclude_none=True) == (FIXTURE / STATE_NAME).read_text("utf-8")
    empty = state.model_copy(update={"history": []})
    assert "".join(state_json_pieces(empty, per=per)) == empty.model_dump_json(indent=1, exclude_none=True)


def test_a_secret_is_redacted_from_state_json_written_in_pieces(tmp_path, monkeypatch):
    key = "sk-ant-api03-" + "k" * 40
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    state = read_state(FIXTURE / STATE_NAME)
    state.history[3].reason = f"the command printed {key}"
    target = tmp_path / STATE_NAME
    written = write_atomic(target, state_json_pieces(state, per=1))
    text = target.read_text(encoding="utf-8")
    assert key not in text and "the command printed [redacted ANTHROPIC_API_KEY]" in text
    assert written == len(text)


def test_an_unreadable_state_json_is_an_error_of_its_kind(tmp_path):
    """load_run tells a missing state.json (OSError) from a corrupt one (ValueError), and rebuilds either."""
    with pytest.raises(FileNotFoundError):
        read_state(tmp_path / STATE_NAME)
    for text in ("{", "[]", '{"run_id": 3}', "\xff"):
        (tmp_path / STATE_NAME).write_text(text, encoding="latin-1")
        with pytest.raises(ValueError):
            read_state(tmp_path / STATE_NAME)


def test_a_layout_it_does_not_expect_is_written_in_one_piece(monkeypatch):
    from odin_magic.runs import statefile

    monkeypatch.setattr(statefile, "_EMPTY_HISTORY", "\n a layout pydantic never writes")
    state = read_state(FIXTURE / STATE_NAME)
    assert list(state_json_pieces(state, per=1)) == [state.model_dump_json(indent=1, exclude_none=True)]
