"""Honest numbers (issue 9, items 8-10): every call's usage counts, the findings decide a gate,
and a refused setting never stays in force. Through the real SDK against the local fake API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odin_magic.workers.config import Settings
from odin_magic.engine.orchestrator import Engine
from odin_magic.workers.claude import ClaudeWorker
from odin_magic.runs import evidence as gate_evidence

from support.fake_messages import FakeMessages

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
    evidence = gate_evidence.read(project / ".odin-loop" / "runs" / state.run_id, first.evidence)
    assert evidence["passed"] is False and evidence["verdict"]["passed"] is True


# -- item 10: a refused `%odin config` leaves the previous values in force ----------------


@pytest.fixture(scope="module")
def ip():
    from IPython.testing import globalipapp

    shell = globalipapp.start_ipython() or globalipapp.get_ipython()  # None when another module started it first
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


# -- item 8: every API call's usage counts -------------------------------------------------


def test_state_usage_is_the_sum_of_every_reply_served_including_an_invalid_verdict(project: Path, write_loop):
    write_loop(ONE_STAGE)
    fake = FakeMessages()
    fake.tool("write", {"file_path": "docs/answer.md", "content": "42"},
              usage={"input_tokens": 1000, "output_tokens": 100})
    fake.reply("written", usage={"input_tokens": 1200, "output_tokens": 20})
    fake.reply("It passes, I am sure.", usage={"input_tokens": 800, "output_tokens": 30})  # not a verdict
    fake.verdict(passed=True, reasons=["docs/answer.md states 42"])

    state = Engine(project, worker=worker_for(fake)).start("once", "answer")

    assert state.status == "done"
    assert len(fake.served) == len(fake.requests) == 4
    served_in = sum(u.get("input_tokens", 0) for u in fake.served)
    served_out = sum(u.get("output_tokens", 0) for u in fake.served)
    total = state.usage.total
    assert (total.input_tokens, total.output_tokens) == (served_in, served_out) == (3007, 153)
    on_disk = json.loads((project / ".odin-loop" / "runs" / state.run_id / "state.json").read_text())
    assert on_disk["usage"]["total"]["input_tokens"] == served_in
    assert on_disk["usage"]["by_stage"]["only"]["output_tokens"] == served_out


def test_a_judge_that_never_gives_a_valid_verdict_still_counts_both_replies(project: Path, write_loop):
    write_loop(ONE_STAGE.replace("max_iterations: 3", "max_iterations: 1"))
    fake = FakeMessages()
    fake.tool("write", {"file_path": "docs/answer.md", "content": "42"}).reply("written")
    fake.reply("no JSON here").reply('{"passed": "perhaps"}')  # two bad verdicts: the gate fails
    fake.reply("again").reply("no").reply("still no")  # the retry of the stage and its two bad verdicts

    state = Engine(project, worker=worker_for(fake)).start("once", "answer")

    assert state.status == "failed"
    assert len(fake.served) == len(fake.requests) == 7
    assert state.usage.total.input_tokens == sum(u["input_tokens"] for u in fake.served)
    assert state.usage.total.output_tokens == sum(u["output_tokens"] for u in fake.served)


def test_interview_replies_that_do_not_fit_the_schema_are_counted_too(tmp_path):
    from odin_magic.interview import InterviewPlace, InterviewSession
    from odin_magic.interview.claude import ClaudeInterviewModel
    from odin_magic.loop.schema import Stage
    from odin_magic.workers.base import WorkerError
    from odin_magic.workers.scripted import ScriptedModel, load_script

    script = tmp_path / "script.yaml"
    script.write_text("""
answers:
  interview-propose:
    interview: [{goal: g, components: [{name: Ingestion}]}]
  interview-question:
    interview: [{question: "Which formats?"}]
  interview-score:
    interview: [{malformed: "nope"}]
""")
    stage = Stage.model_validate({"id": "interview", "interview": {"mode": "deep", "challenges": []},
                                  "produces": ["spec.md", "interview-log.md"],
                                  "gate": {"mode": "ai+human", "check": "converged"}})
    fake = ScriptedModel(load_script(script))
    model = ClaudeInterviewModel(Settings(model="claude-test"), fake.client_factory(max_retries=0))
    session = InterviewSession.open(InterviewPlace(run_dir=tmp_path / "run", project_dir=tmp_path, stage=stage, task="t"), model)
    session.start()
    session.answer("confirm")
    with pytest.raises(WorkerError, match="no usable reply twice") as info:
        session.answer("CSV")
    # the two score replies that did not fit were paid for: the error carries their usage to the budget
    assert info.value.usage.input_tokens > 0 and info.value.usage.output_tokens > 0
