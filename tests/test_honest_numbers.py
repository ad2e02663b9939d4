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


# -- item 10: a refused `%odin config` leaves the previous values in force ----------------


@pytest.fixture(scope="module")
def ip():
    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython()
    shell.run_line_magic("load_ext", "odin_magic")
    yield shell


def test_a_refused_config_value_leaves_the_previous_one_in_force(ip, tmp_path, monkeypatch):
    from IPython.core.error import UsageError

    monkeypatch.delenv("ODIN_MAX_TOKENS", raising=False)
    magics = ip.magics_manager.registry["OdinMagics"]
    try:
        ip.run_line_magic("odin", f"config project={tmp_path} max_tokens=1234 model=claude-first")
        with pytest.raises(UsageError, match="max_tokens"):
            ip.run_line_magic("odin", "config max_tokens=-5")
        assert magics.max_tokens == 1234
        # all or nothing: a good assignment beside a refused one is not applied either
        with pytest.raises(UsageError):
            ip.run_line_magic("odin", "config model=claude-second max_tokens=-5")
        assert (magics.model, magics.max_tokens) == ("claude-first", 1234)
        # and every later config still works
        shown = repr(ip.run_line_magic("odin", "config max_tokens=99"))
        assert "99" in shown and "claude-first" in shown
    finally:
        magics.model = magics.max_tokens = None
        magics.project = ""
