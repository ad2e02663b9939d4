"""The run's persisted inline thread: atomic, trimmed to its budget, robust to damage."""

from __future__ import annotations

import json
from pathlib import Path

from odin_magic.workers.conversation import THREAD_FILE, RunThread


def user(text: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def assistant(text: str) -> dict:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def test_round_trip_and_request_messages(tmp_path: Path):
    thread = RunThread.load(tmp_path)
    thread.add_segment("a", [user("do a"), assistant("did a")], "did a")
    thread.save()
    again = RunThread.load(tmp_path)
    sent = again.request_messages([{"type": "text", "text": "do b"}])
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[-1]["content"][0]["text"] == "do b"
    assert not list(tmp_path.glob(".thread-*"))  # no temp file left behind


def test_fit_drops_oldest_stages_into_a_summary(tmp_path: Path):
    thread = RunThread(path=tmp_path / THREAD_FILE)
    for name in "abc":
        thread.add_segment(name, [user(f"do {name} " + "x" * 7000), assistant(f"did {name}")], f"summary of {name}")
    dropped = thread.fit(budget_tokens=5000, reserve_tokens=1000)
    assert dropped == ["a", "b"]
    assert [s.stage for s in thread.segments] == ["c"]
    sent = thread.request_messages([{"type": "text", "text": "next"}])
    preface = sent[0]["content"][0]["text"]
    assert "summary of a" in preface and "summary of b" in preface and "x" * 100 not in preface
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]


def test_a_damaged_thread_is_set_aside_not_fatal(tmp_path: Path):
    (tmp_path / THREAD_FILE).write_text("{not json")
    thread = RunThread.load(tmp_path)
    assert thread.segments == [] and "set aside" in thread.summary
    assert (tmp_path / f"{THREAD_FILE}.damaged").read_text() == "{not json"
    thread.save()
    assert json.loads((tmp_path / THREAD_FILE).read_text())["segments"] == []


def test_a_thread_with_malformed_messages_is_set_aside_too(tmp_path: Path):
    damaged = '{"segments": [{"stage": "spec", "messages": "not a list"}]}'
    (tmp_path / THREAD_FILE).write_text(damaged)
    thread = RunThread.load(tmp_path)
    assert thread.segments == [] and "set aside" in thread.summary
    assert (tmp_path / f"{THREAD_FILE}.damaged").read_text() == damaged
