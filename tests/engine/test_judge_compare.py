"""Judge comparisons (issue 23, item 4): a gate's `compare: baseline` has the judge score the before and the
after of the stage's change with one rubric in one structured reply, through the real engine, Claude worker and
SDK against the local fake Messages API; the scores are decided and recorded like a metric's."""

from __future__ import annotations

import json

from odin_magic.engine.orchestrator import Engine
from odin_magic.runs import evidence as gate_evidence
from odin_magic.workers.claude import ClaudeWorker
from odin_magic.workers.config import Settings

from support.fake_messages import FakeMessages

LOOP = """
name: docs
max_iterations: 3
memory: false
regression: false
stages:
  - id: write
    produces: [guide.md]
    gate:
      mode: ai
      check: guide.md explains how to install and use the tool, with an example
      compare: {compare}
"""


def engine_with(project, write_loop, fake: FakeMessages, compare: str) -> Engine:
    write_loop(LOOP.replace("{compare}", compare))
    worker = ClaudeWorker(Settings.from_env(env={}, thinking_budget=0), client_factory=fake.factory(max_retries=0))
    return Engine(project, worker=worker)


def write_guide(fake: FakeMessages, text: str) -> None:
    def respond(body):
        import re

        from odin_magic.workers.scripted import message_body, new_id, reply_response

        path = re.search(r"guide\.md -> (\S+/guide\.md)", json.dumps(body["messages"][0])).group(1)
        content = [{"type": "tool_use", "id": new_id("toolu"), "name": "write",
                    "input": {"file_path": path, "content": text}}]
        return reply_response(body, message_body(model=body["model"], content=content, stop_reason="tool_use",
                                                 usage={"input_tokens": 20, "output_tokens": 10}))

    fake.raw(respond)
    fake.reply("Wrote the guide.")


def comparison(fake: FakeMessages, before: float, after: float) -> None:
    fake.reply(json.dumps({"before": {"score": before, "reasons": [f"before: {before}"]},
                           "after": {"score": after, "reasons": [f"after: {after}"]}}),
               usage={"input_tokens": 50, "output_tokens": 20})


def compare_requests(fake: FakeMessages):
    return fake.bodies(purpose="compare", stage="write")


def test_a_better_after_passes_and_the_scores_are_recorded_like_a_metric(project, write_loop):
    fake = FakeMessages()
    write_guide(fake, "# Guide\n\npip install tool\n\nExample: tool run\n")
    fake.verdict(status="DONE", passed=True, reasons=["explains install and use"])
    comparison(fake, 3, 8)
    engine = engine_with(project, write_loop, fake, "{min_improvement: 2}")
    state = engine.start("docs", "write the guide")
    assert fake.pending == 0 and not fake.unexpected
    assert state.status == "done" and [(e.stage, e.result) for e in state.history] == [("write", "pass")]
    record = gate_evidence.read(engine.run_dir(state.run_id), state.history[0].evidence)["comparison"]
    assert record["baseline"] == {"figure": 3, "reasons": ["before: 3"]}
    assert record["after"] == {"figure": 8, "reasons": ["after: 8"]}
    assert record["delta"] == 5 and record["change"] == "improved" and record["passed"] is True
    assert record["summary"] == "judge score (of 10) 3 → 8 (+167%) ✅"
    (request,) = compare_requests(fake)  # one structured reply scores both
    sent = request.text
    assert "guide.md explains how to install and use the tool" in sent  # the rubric: the gate's check
    assert "BEFORE" in sent and "AFTER" in sent and "pip install tool" in sent
    assert request.body["output_config"]["format"]["type"] == "json_schema"
    assert state.usage.total.input_tokens == 20 + 10 + 7 + 50  # work, verdict and the comparison all counted


def test_a_worse_after_fails_its_gate_and_loops_back(project, write_loop):
    fake = FakeMessages()
    write_guide(fake, "# Guide\n\ntool\n")
    fake.verdict(status="DONE", passed=True, reasons=["a guide"])
    comparison(fake, 7, 5)  # worse than before: a must-not-regress comparison fails
    write_guide(fake, "# Guide\n\npip install tool\n\nExample: tool run --all\n")
    fake.verdict(status="DONE", passed=True, reasons=["a guide"])
    comparison(fake, 5, 7)
    engine = engine_with(project, write_loop, fake, "baseline")
    state = engine.start("docs", "write the guide")
    assert fake.pending == 0 and not fake.unexpected
    assert [(e.stage, e.result, e.failure) for e in state.history] == [("write", "fail", "recoverable"),
                                                                      ("write", "pass", None)]
    assert state.history[0].reason.startswith("judge score (of 10) 7 → 5 (−29%) ❌: worse than the baseline by 2")
    assert state.status == "done"
    # guide.md lives in the run dir, which has no checkpoints: its before is kept as each execution starts
    first, second = (r.body["messages"][0]["content"] for r in compare_requests(fake))
    assert "# Artifact guide.md, BEFORE the change\n\n(it did not exist)" in first
    assert "# Artifact guide.md, BEFORE the change\n\n# Guide\n\ntool\n" in second
    assert "# Artifact guide.md, AFTER the change\n\n# Guide\n\npip install tool" in second


def test_a_dry_run_leaves_the_gate_to_the_judge_and_says_so(project, write_loop):
    write_loop(LOOP.replace("{compare}", "baseline"))
    engine = Engine(project)
    state = engine.start("docs", "write the guide", dry=True)
    assert state.status == "done"
    record = gate_evidence.read(engine.run_dir(state.run_id), state.history[0].evidence)["comparison"]
    assert "does not compare" in record["skipped"]
