"""Faults of the API and of the model's tool calls (issue 9, item 6): a dropped connection is retried
like an overloaded answer, then a worker error; a malformed reply is a worker error; a bad tool call is
a tool error for the model, shown and recorded, with no traceback. Real SDK, local fake Messages API."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx2
import pytest

from odin_magic.workers.config import Settings
from odin_magic.engine.orchestrator import Engine, WorkerFailed
from odin_magic.workers.base import WorkerError
from odin_magic.workers.claude import REFUSALS_FILE, ClaudeWorker

from support.fake_messages import FakeMessages
from support.stage_jobs import Events, judge_job, loop_from, stage_job

LOOP = """
name: faults
max_iterations: 3
stages:
  - id: spec
    prompt: Write spec.md.
    produces: [spec.md]
    gate: {mode: ai, check: spec.md exists}
"""

ERROR_EVENT = b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n'


def worker_for(fake: FakeMessages, max_retries: int = 2, **kw) -> ClaudeWorker:
    return ClaudeWorker(Settings(max_retries=max_retries, **kw), client_factory=fake.factory(max_retries=max_retries),
                        retry_delay=lambda retry: 0.0)


def no_noise(capfd) -> None:
    out, err = capfd.readouterr()
    for noise in ("Traceback", "UserWarning", "Error occurred while calling tool", "asynchronous generator"):
        assert noise not in out + err, out + err


def error_event_midway(body: dict) -> httpx2.Response:
    start = {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": body["model"], "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}
    data = f"event: message_start\ndata: {json.dumps(start)}\n\n".encode() + ERROR_EVENT
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=data)


# -- a connection dropped mid-stream -------------------------------------------------------------


def test_a_connection_dropped_mid_stream_over_http_is_asked_again_and_the_stage_completes(project: Path, capfd,
                                                                                           monkeypatch):
    loop = loop_from(LOOP)
    job = stage_job(loop, "spec", project)
    spec = os.path.relpath(job.produces["spec.md"], project)
    fake = FakeMessages()
    fake.tool("write", {"file_path": spec, "content": "# Spec\n"})
    fake.truncated()  # the second reply breaks off: the server hangs up short of its content-length
    fake.reply("Spec written.")
    events = Events()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    with fake.serve() as base_url:
        worker = ClaudeWorker(Settings(base_url=base_url, max_retries=2), retry_delay=lambda retry: 0.0)
        result = worker.perform(job, events)

    assert job.produces["spec.md"].read_text() == "# Spec\n"
    assert result.summary.startswith("Spec written.")
    assert len(fake.requests) == 3
    # the reply that broke off is asked for again with the same history (the tool's result included)
    assert fake.requests[2].body["messages"] == fake.requests[1].body["messages"]
    assert any("dropped in the middle of a reply" in t and "asking again (retry 1 of 2)" in t
               for t in events.of("info"))
    # what the broken reply reported was paid for: it counts
    assert result.usage.input_tokens == sum(u["input_tokens"] for u in fake.served)
    no_noise(capfd)


def test_drops_that_keep_coming_are_a_worker_error_and_the_run_stays_resumable(project: Path, write_loop, capfd):
    write_loop(LOOP)
    fake = FakeMessages()
    for _ in range(3):
        fake.truncated()
    engine = Engine(project, worker=worker_for(fake, max_retries=2))

    with pytest.raises(WorkerFailed) as info:
        engine.start("faults", "write the spec")

    message = str(info.value)
    state = engine.active()
    assert state is not None
    assert "dropped in the middle of a reply" in message and "after 2 retries" in message
    # no HTTP status in the message (the run id, a timestamp, may hold the digits 200: left out)
    assert "odin run" in message and "200" not in message.replace(state.run_id, "")
    assert len(fake.requests) == 3
    assert state is not None and state.status == "running" and state.current_stage == "spec"
    assert state.usage.total.input_tokens == 30  # the three broken replies' reported usage
    no_noise(capfd)


def test_an_error_event_mid_stream_is_retried_and_never_claims_answered_200(project: Path, capfd):
    job = stage_job(loop_from(LOOP), "spec", project)
    fake = FakeMessages()
    for _ in range(2):
        fake.raw(error_event_midway)

    with pytest.raises(WorkerError) as info:
        worker_for(fake, max_retries=1).perform(job, Events())

    message = str(info.value)
    assert "in the middle of its reply (overloaded_error: Overloaded)" in message and "after 1 retry" in message
    assert "answered 200" not in message
    assert len(fake.requests) == 2
    no_noise(capfd)


# -- malformed replies ------------------------------------------------------------------------------


@pytest.mark.parametrize("content, words", [
    (b"event: message_start\ndata: {not json\n\n", "malformed reply"),
    (b"hello world\nthis is not a stream of events\n", "not a Messages event stream"),
])
def test_a_malformed_stream_is_a_worker_error_without_a_retry(project: Path, capfd, content, words):
    job = stage_job(loop_from(LOOP), "spec", project)
    fake = FakeMessages().raw(lambda body: httpx2.Response(200, headers={"content-type": "text/event-stream"},
                                                           content=content))
    with pytest.raises(WorkerError) as info:
        worker_for(fake).perform(job, Events())
    assert words in str(info.value) and "resumable" in str(info.value)
    assert len(fake.requests) == 1
    no_noise(capfd)


@pytest.mark.parametrize("content_type, content", [
    ("application/json", b"{not json"),
    ("application/json", b"{}"),
    ("application/json", b"[]"),
    ("text/html", b"<html>a proxy's error page</html>"),
])
def test_a_judge_reply_that_is_not_a_message_is_a_worker_error(project: Path, capfd, content_type, content):
    job = judge_job(loop_from(LOOP), "spec", project)
    job.artifacts["spec.md"].write_text("# Spec\n")
    fake = FakeMessages().raw(lambda body: httpx2.Response(200, headers={"content-type": content_type},
                                                           content=content))
    with pytest.raises(WorkerError, match="malformed reply"):
        worker_for(fake).judge(job, Events())
    no_noise(capfd)


# -- bad tool calls -------------------------------------------------------------------------------


def test_unknown_tools_bad_arguments_and_path_escapes_are_tool_errors_shown_and_recorded(project: Path, capfd,
                                                                                         recwarn):
    job = stage_job(loop_from(LOOP), "spec", project)
    fake = FakeMessages()
    fake.tool("frobnicate", {"x": 1})
    fake.tool("read", {"nonsense": 3})
    fake.tool("read", {"file_path": "/etc/passwd"})
    fake.tool("write", {"file_path": "../outside.md", "content": "x"})
    fake.tool("glob", {"pattern": "../../*"})
    fake.reply("I will stay inside.")
    events = Events()

    worker_for(fake).perform(job, events)

    results = [r.body["messages"][-1]["content"][0] for r in fake.requests[1:]]
    assert all(r["type"] == "tool_result" and r["is_error"] for r in results)
    assert "frobnicate" in results[0]["content"]
    assert "invalid arguments for the read tool" in results[1]["content"] and "file_path" in results[1]["content"]
    assert "outside" in results[2]["content"] and "outside" in results[3]["content"]
    assert "'..'" in results[4]["content"]
    refused = events.of("tool_refused")
    assert len(refused) == 5
    assert "no tool named 'frobnicate'" in refused[0]
    recorded = [json.loads(line) for line in (job.run_dir / REFUSALS_FILE).read_text().splitlines()]
    assert [r["message"] for r in recorded] == refused
    assert not (project.parent / "outside.md").exists()
    no_noise(capfd)
    assert not [w for w in recwarn if issubclass(w.category, UserWarning)], [str(w.message) for w in recwarn]
