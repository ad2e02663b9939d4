"""The gate judge: a separate structured-output call (messages.parse) that never sees the worker's thread."""

from __future__ import annotations

import json
from pathlib import Path

from odin_magic.workers.config import Settings
from odin_magic.workers.base import CommandEvidence
from odin_magic.workers.claude import ClaudeWorker

from support.fake_messages import FakeMessages
from support.stage_jobs import Events, judge_job, loop_from, stage_job

LOOP = """
name: judged
max_iterations: 3
stages:
  - id: build
    goal: implement add
    produces: [src/]
    gate:
      mode: ai
      check: src/calc.py defines add(a, b) returning the sum
      run: [python -m pytest -q]
"""

PASSED = CommandEvidence("python -m pytest -q", 0, False, 0.4, "3 passed in 0.01s", "")


def setup(project: Path) -> tuple:
    loop = loop_from(LOOP)
    job = judge_job(loop, "build", project, commands=[PASSED])
    (project / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    return loop, job


def judge_with(fake: FakeMessages, job, **settings):
    events = Events()
    result = ClaudeWorker(Settings(**settings), client_factory=fake.factory()).judge(job, events)
    return result, events


def test_structured_verdict_from_check_artifacts_and_evidence(project: Path):
    loop, job = setup(project)
    # the run's inline thread exists; the judge must never see it
    fake = FakeMessages().reply("THREAD-ONLY-MARKER: I wrote it myself, trust me")
    ClaudeWorker(Settings(), client_factory=fake.factory()).perform(stage_job(loop, "build", project), Events())
    fake.verdict(passed=True, reasons=["calc.add returns a + b", "pytest: 3 passed"], non_blocking=["no docstring"])

    result, _ = judge_with(fake, job)

    assert result.verdict.passed is True
    assert result.verdict.non_blocking == ["no docstring"]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (7, 3)
    request = fake.requests[-1]
    assert request.headers["x-odin-purpose"] == "judge"
    fmt = request.body["output_config"]["format"]
    assert fmt["type"] == "json_schema" and "passed" in fmt["schema"]["properties"]
    sent = json.dumps(request.body)
    assert "THREAD-ONLY-MARKER" not in sent
    assert len(request.body["messages"]) == 1
    for expected in ("src/calc.py defines add(a, b) returning the sum", "def add(a, b)", "3 passed", "exit 0"):
        assert expected in sent


def test_malformed_verdict_is_asked_again_once(project: Path):
    _, job = setup(project)
    fake = FakeMessages().reply("I think it passes!").verdict(passed=False, reasons=["add is fine"], blocking=["x"])
    result, events = judge_with(fake, job)
    assert result.verdict.passed is False and result.verdict.blocking == ["x"]
    assert len(fake.requests) == 2
    retry = json.dumps(fake.requests[1].body["messages"])
    assert "not a valid verdict" in retry
    assert any("asking again" in t for t in events.of("info"))


def test_two_bad_verdicts_fail_the_gate_with_the_reason(project: Path):
    _, job = setup(project)
    fake = FakeMessages().reply('{"passed": "maybe"}').reply("I cannot judge this.", stop_reason="refusal")
    result, _ = judge_with(fake, job)
    assert result.verdict.passed is False
    reason = result.verdict.reasons[0]
    assert "no valid verdict twice" in reason and "malformed or refused verdict" in reason
    assert "the judge refused to answer" in reason  # a refusal is named as one, whatever its text
    assert result.usage.input_tokens == 20  # both replies counted, neither a valid verdict
    assert len(fake.requests) == 2


def test_refusal_then_valid_verdict(project: Path):
    _, job = setup(project)
    # a reply that stopped with "refusal" is never taken as a verdict, even if its text parses
    fake = FakeMessages().reply('{"passed": true}', stop_reason="refusal").verdict(passed=True, reasons=["ok"])
    result, events = judge_with(fake, job)
    assert result.verdict.passed is True
    assert any("refused" in t for t in events.of("info"))
    assert result.usage.input_tokens == 10 + 7  # both calls counted


def test_a_failed_command_can_never_pass(project: Path):
    loop = loop_from(LOOP)
    failed = CommandEvidence("python -m pytest -q", 1, False, 0.3, "1 failed, 2 passed", "")
    job = judge_job(loop, "build", project, commands=[failed])
    fake = FakeMessages().verdict(passed=True, reasons=["looks great"])
    result, _ = judge_with(fake, job)
    assert result.verdict.passed is False
    assert "python -m pytest -q (exit 1)" in result.verdict.reasons[0]
    assert fake.requests == []  # no model can overrule a failed command


def test_judge_api_failure_is_a_worker_error(project: Path):
    import pytest

    from odin_magic.workers.base import WorkerError

    _, job = setup(project)
    fake = FakeMessages().error(503, "unavailable").error(503, "unavailable").error(503, "unavailable")
    with pytest.raises(WorkerError, match="503"):
        judge_with(fake, job)


def test_an_unknown_judge_model_is_named_in_the_error(project: Path):
    import pytest

    from odin_magic.workers.base import WorkerError

    _, job = setup(project)
    fake = FakeMessages().error(404, "model: claude-nope")
    with pytest.raises(WorkerError, match="is the model name 'claude-nope' right"):
        judge_with(fake, job, judge_model="claude-nope")


def test_a_command_that_could_not_start_is_named_so(project: Path):
    loop = loop_from(LOOP)
    unstartable = CommandEvidence("no-such-tool --check", None, False, 0.0, "", "could not start: not found")
    job = judge_job(loop, "build", project, commands=[unstartable])
    fake = FakeMessages()
    result, _ = judge_with(fake, job)
    assert result.verdict.passed is False
    assert result.verdict.reasons == ["gate command failed: no-such-tool --check (could not start)"]
    assert fake.requests == []
