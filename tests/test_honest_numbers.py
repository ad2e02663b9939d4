"""Honest numbers (issue 9, items 8-10): every call's usage counts, the findings decide a gate,
and a refused setting never stays in force. Through the real SDK against the local fake API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odin_magic.config import Settings
from odin_magic.engine import Engine
from odin_magic.workers.claude import ClaudeWorker

from fake_messages import FakeMessages

ONE_STAGE = """
name: once
max_iterations: 3
stages:
  - id: only
    produces: [docs/answer.md]
    gate: {mode: ai, check: docs/answer.md states the answer}
"""


def worker_for(fake: FakeMessages) -> ClaudeWorker:
    return ClaudeWorker(Settings(max_retries=1), client_factory=fake.factory(max_retries=1))


def test_a_verdict_that_passes_with_a_blocking_finding_fails_the_gate(project: Path, write_loop):
    write_loop(ONE_STAGE)
    fake = FakeMessages()
    fake.tool("write", {"file_path": "docs/answer.md", "content": "42"}).reply("written")
    fake.verdict(passed=True, reasons=["out.md exists"], blocking=["the answer is not justified"])
    fake.reply("I justified it.")  # the retry of the stage
    fake.verdict(passed=True, reasons=["out.md states and justifies 42"])

    state = Engine(project, worker=worker_for(fake)).start("once", "answer")

    assert state.status == "done"
    first, second = state.history
    assert first.result == "fail"
    assert "blocking" in (first.reason or "") and "the answer is not justified" in (first.reason or "")
    assert second.result == "pass"
    evidence = json.loads((project / ".odin-loop" / "runs" / state.run_id / first.evidence).read_text())
    assert evidence["passed"] is False and evidence["verdict"]["passed"] is True
