"""The Claude worker through the real SDK against the local fake Messages API."""

from __future__ import annotations

import asyncio
import json
import os
import select
from pathlib import Path

import pytest

from odin_magic.workers.config import Settings
from odin_magic.engine.orchestrator import Engine, WorkerFailed
from odin_magic.core.errors import ConfigError
from odin_magic.workers.base import WorkerError
from odin_magic.workers.claude import ClaudeWorker
from odin_magic.workers.factory import make_worker

from support.fake_messages import FakeMessages
from support.stage_jobs import Events, loop_from, stage_job
from support import REPO

LOOP = """
name: tiny
max_iterations: 3
stages:
  - id: spec
    goal: write the spec
    prompt: Write spec.md describing add(a, b).
    produces: [spec.md]
    gate: {mode: ai, check: spec.md describes add}
  - id: build
    goal: implement add
    prompt: Implement src/calc.py.
    consumes: [spec.md]
    produces: [src/]
    gate: {mode: ai, check: src/calc.py implements add}
  - id: review
    agent: reviewer
    goal: review the code against the spec
    prompt: Review src/ against spec.md and write review.md.
    consumes: [spec.md, src/]
    produces: [review.md]
    gate: {mode: ai, check: review.md lists findings}
"""


@pytest.fixture
def fake() -> FakeMessages:
    return FakeMessages()


def worker_for(fake: FakeMessages, **settings) -> ClaudeWorker:
    settings.setdefault("max_retries", 2)
    return ClaudeWorker(Settings(**settings), client_factory=fake.factory(max_retries=settings["max_retries"]))


def test_inline_stage_uses_real_tools_streams_and_counts_usage(project: Path, fake: FakeMessages):
    loop = loop_from(LOOP)
    job = stage_job(loop, "spec", project)
    spec_path = os.path.relpath(job.produces["spec.md"], project)
    fake.tool("write", {"file_path": spec_path, "content": "# Spec\nadd(a, b) returns a + b\n"},
              text="I will write the spec.\nFirst the file.",
              usage={"input_tokens": 1000, "output_tokens": 100, "cache_creation_input_tokens": 2000})
    fake.tool("bash", {"command": "cat " + spec_path},
              usage={"input_tokens": 50, "output_tokens": 20, "cache_read_input_tokens": 2000})
    fake.reply("Spec written and checked.", usage={"input_tokens": 60, "output_tokens": 10, "cache_read_input_tokens": 2000})
    events = Events()

    result = worker_for(fake, model="claude-sonnet-5-5").perform(job, events)

    assert job.produces["spec.md"].read_text() == "# Spec\nadd(a, b) returns a + b\n"
    assert result.summary.startswith("Spec written and checked.")
    # streaming: whole text lines, and one line per tool call
    assert events.of("text")[:2] == ["I will write the spec.", "First the file."]
    assert events.of("tool") == [f"write {spec_path} (31 chars)", f"bash: cat {spec_path}"]
    # usage per call summed; cost from the price table (sonnet: 3 / 15 / 3.75 / 0.30 per Mtok)
    u = result.usage
    assert (u.input_tokens, u.output_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens) == (1110, 130, 2000, 4000)
    expected = (1110 * 3 + 130 * 15 + 2000 * 3.75 + 4000 * 0.3) / 1e6
    assert u.cost_usd == pytest.approx(expected, rel=1e-6)
    # what was sent: full history each turn (no server thread), cached stable prefix, all six tools
    first, second, third = (r.body for r in fake.requests)
    assert "thread" not in first and "thread" not in third
    assert first["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert first["cache_control"] == {"type": "ephemeral"}
    assert sorted(t["name"] for t in first["tools"]) == ["bash", "edit", "glob", "grep", "read", "write"]
    assert len(second["messages"]) == 3 and len(third["messages"]) == 5
    tool_result = third["messages"][-1]["content"][0]
    assert tool_result["type"] == "tool_result" and "add(a, b)" in json.dumps(tool_result["content"])
    # the run's thread is persisted in the run dir
    saved = json.loads((job.run_dir / "thread.json").read_text())
    assert [s["stage"] for s in saved["segments"]] == ["spec"]
    assert saved["segments"][0]["messages"][-1]["role"] == "assistant"


def test_inline_thread_continues_across_worker_instances(project: Path, fake: FakeMessages):
    loop = loop_from(LOOP)
    fake.reply("Spec done. The magic word is PELICAN.")
    worker_for(fake).perform(stage_job(loop, "spec", project), Events())
    fake.reply("Build done.")
    # a new worker (as after a kernel restart) continues the persisted thread
    worker_for(fake).perform(stage_job(loop, "build", project), Events())
    build_request = fake.requests[-1].body
    roles = [m["role"] for m in build_request["messages"]]
    assert roles == ["user", "assistant", "user"]
    assert "PELICAN" in json.dumps(build_request["messages"][1])
    assert "# Stage build" in json.dumps(build_request["messages"][2])


def test_fresh_stage_sees_nothing_from_the_thread(project: Path, fake: FakeMessages):
    loop = loop_from(LOOP)
    secret = "SECRET-THREAD-MARKER-7731"
    fake.reply(f"I decided something privately: {secret}")
    worker_for(fake).perform(stage_job(loop, "spec", project), Events())
    spec_job = stage_job(loop, "spec", project)
    spec_job.produces["spec.md"].write_text("SPEC-CONTENT: add(a, b) returns a + b\n")
    (project / "src").mkdir(exist_ok=True)
    (project / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    review_job = stage_job(loop, "review", project)
    fake.tool("write", {"file_path": str(review_job.produces["review.md"]), "content": "No findings."})
    fake.reply("Reviewed.")

    worker_for(fake).perform(review_job, Events())

    review_requests = fake.requests[1:]
    assert len(review_requests) == 2
    for request in review_requests:
        assert secret not in json.dumps(request.body)
        assert "PRIVATE" not in request.text
    first = review_requests[0].body
    assert len(first["messages"]) == 1  # a new conversation: only the stage brief
    sent = json.dumps(first)
    persona = (REPO / "odin_magic" / "loop" / "personas" / "reviewer.md").read_text().strip()
    assert persona.splitlines()[0] in first["system"][-1]["text"]
    for expected in ("review the code against the spec", "Review src/ against spec.md", "build a tiny calculator",
                     "SPEC-CONTENT: add(a, b)", "def add(a, b)", "review.md"):
        assert expected in sent
    # fresh stages do not touch the run's thread
    saved = json.loads((review_job.run_dir / "thread.json").read_text())
    assert [s["stage"] for s in saved["segments"]] == ["spec"]


def test_overload_529_is_retried_then_succeeds(project: Path, fake: FakeMessages):
    loop = loop_from(LOOP)
    fake.error(529, "Overloaded", retry_after_ms=1)
    fake.reply("Done after a retry.")
    result = worker_for(fake, max_retries=2).perform(stage_job(loop, "spec", project), Events())
    assert result.summary == "Done after a retry."
    assert [r.retry_count for r in fake.requests] == [0, 1]


def test_retries_running_out_stop_the_stage_resumably(project: Path, fake: FakeMessages):
    loop = loop_from(LOOP)
    job = stage_job(loop, "spec", project)
    for _ in range(3):
        fake.error(529, "Overloaded", retry_after_ms=1)
    with pytest.raises(WorkerError) as info:
        worker_for(fake, max_retries=2).perform(job, Events())
    message = str(info.value)
    assert "529" in message and "after 2 retries" in message and "resumable" in message
    assert len(fake.requests) == 3
    assert not (job.run_dir / "thread.json").exists()  # nothing half-written: the stage re-runs


def test_bash_shell_does_not_outlive_the_stage(project: Path, fake: FakeMessages):
    loop = loop_from(LOOP).model_copy(update={"sandbox": "off"})  # $$ is a host pid only outside the sandbox
    fake.tool("bash", {"command": "echo $$ > shell.pid"})
    fake.reply("ok")
    worker = worker_for(fake)

    async def stage_then_check() -> bool:
        # still inside the same event loop: nothing but the stage's own cleanup can have ended the shell
        await worker.aperform(stage_job(loop, "build", project), Events())
        pid = int((project / "shell.pid").read_text())
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return Path(f"/proc/{pid}/status").read_text().count("zombie") > 0

    assert asyncio.run(stage_then_check())


def test_a_sandboxed_bash_shell_and_its_jobs_do_not_outlive_the_stage(project: Path, fake: FakeMessages):
    from odin_magic.core.sandbox import probe

    if not probe().works:
        pytest.skip(f"bubblewrap cannot run here: {probe().reason}")
    marker = f"odin-shell-job-{os.getpid()}-{id(fake)}"
    loop = loop_from(LOOP).model_copy(update={"sandbox": "bwrap"})
    fake.tool("bash", {"command": f"(exec -a {marker} sleep 300) & echo started; echo x > .odin-loop/evil; echo $?"})
    fake.reply("ok")

    def running() -> list[int]:
        out = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and (entry / "cmdline").read_bytes().startswith(marker.encode()):
                    out.append(int(entry.name))
            except OSError:
                continue
        return out

    worker_for(fake).perform(stage_job(loop, "build", project), Events())
    assert "Read-only file system" in json.dumps(fake.requests[-1].body)  # the shell cannot write .odin-loop/
    assert not (project / ".odin-loop" / "evil").exists()
    for pid in running():  # the kernel ends the sandbox's PID namespace: wait on each process, not a clock
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        select.select([fd], [], [], 10)
        os.close(fd)
    assert running() == []


def test_bash_does_not_see_the_api_key(project: Path, fake: FakeMessages, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-must-not-leak")
    loop = loop_from(LOOP)
    fake.tool("bash", {"command": "env > env.txt"})
    fake.reply("ok")
    worker_for(fake).perform(stage_job(loop, "build", project), Events())
    env = (project / "env.txt").read_text()
    assert "sk-must-not-leak" not in env and "ODIN_RUN_DIR=" in env
    assert "ODIN_STAGE=build\n" in env and "ODIN_RUN_ID=20260101-000000-test\n" in env  # as for gate commands


def test_thread_is_trimmed_to_its_token_budget(project: Path, fake: FakeMessages):
    loop = loop_from(LOOP)
    big = "word " * 3000  # ~15k chars: more than the whole budget below
    fake.reply(f"OLDEST-STAGE-TEXT {big}")
    worker_for(fake, context_budget=6000, max_tokens=1000).perform(stage_job(loop, "spec", project), Events())
    fake.reply("second stage done")
    events = Events()
    worker_for(fake, context_budget=6000, max_tokens=1000).perform(stage_job(loop, "build", project), events)
    sent = fake.requests[-1].body
    assert "OLDEST-STAGE-TEXT" in json.dumps(sent)  # only in the bounded summary ...
    assert big not in json.dumps(sent)  # ... never the full old turns
    assert "Summary of earlier stages" in json.dumps(sent)
    assert any("thread trimmed" in t for t in events.of("info"))
    saved = json.loads((project / ".odin-loop/runs/20260101-000000-test/thread.json").read_text())
    assert [s["stage"] for s in saved["segments"]] == ["build"] and "stage spec:" in saved["summary"]


def test_missing_api_key_is_a_config_error_before_any_stage(project: Path, monkeypatch, tmp_path: Path):
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE", "ANTHROPIC_IDENTITY_TOKEN",
                "ANTHROPIC_IDENTITY_TOKEN_FILE", "ODIN_SCRIPT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("ANTHROPIC_CONFIG_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no SDK profile on disk either
    with pytest.raises(ConfigError) as info:
        make_worker(Settings.from_env(), project)
    assert "ANTHROPIC_API_KEY" in str(info.value)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    assert isinstance(make_worker(Settings.from_env(), project), ClaudeWorker)


#: two model stages under a 5,000-token budget
BUDGETED_LOOP = """
    name: budgeted
    max_iterations: 3
    budget: {max_tokens: 5000}
    stages:
      - id: first
        produces: [notes/]
        gate: {mode: ai, check: notes exist}
      - id: second
        produces: [more/]
        gate: {mode: ai, check: more exists}
"""


def test_budget_stop_through_the_engine(project: Path, fake: FakeMessages, write_loop):
    write_loop(BUDGETED_LOOP)
    fake.tool("write", {"file_path": "notes/a.md", "content": "n"}, usage={"input_tokens": 3000, "output_tokens": 100})
    fake.reply("done", usage={"input_tokens": 3000, "output_tokens": 100})
    engine = Engine(project, worker=worker_for(fake))
    state = engine.start("budgeted", "write notes")
    assert state.status == "failed"
    assert "over budget" in (state.failure_reason or "")
    assert state.usage.total.input_tokens == 6000
    assert state.usage.by_stage["first"].output_tokens == 200
    assert state.usage.total.cost_usd == pytest.approx((6000 * 3 + 200 * 15) / 1e6)
    assert [r.headers["x-odin-stage"] for r in fake.requests] == ["first", "first"]  # neither judge nor second ran


def test_worker_error_through_the_engine_leaves_the_run_resumable(project: Path, fake: FakeMessages, write_loop):
    write_loop("""
        name: once
        max_iterations: 3
        stages:
          - id: only
            produces: [out.md]
            gate: {mode: ai, check: out.md exists}
    """)
    for _ in range(2):
        fake.error(500, "boom", retry_after_ms=1)
    engine = Engine(project, worker=worker_for(fake, max_retries=1))
    with pytest.raises(WorkerFailed):
        engine.start("once", "anything")
    state = engine.active()
    assert state is not None and state.status == "running" and state.current_stage == "only"


def test_settings_from_the_environment_reach_a_real_http_server(project: Path, fake: FakeMessages, monkeypatch):
    key = "sk-ant-test-never-written-0042"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    monkeypatch.setenv("ODIN_MODEL", "claude-opus-5")
    monkeypatch.setenv("ODIN_MAX_TOKENS", "1234")
    monkeypatch.delenv("ODIN_SCRIPT", raising=False)
    loop = loop_from(LOOP)
    job = stage_job(loop, "spec", project)
    fake.tool("write", {"file_path": os.path.relpath(job.produces["spec.md"], project), "content": "spec"})
    fake.reply("done", usage={"input_tokens": 1_000_000, "output_tokens": 0})
    with fake.serve() as base_url:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", base_url)
        worker = make_worker(Settings.from_env(), project)
        result = worker.perform(job, Events())
    assert job.produces["spec.md"].read_text() == "spec"
    first = fake.requests[0]
    assert first.body["model"] == "claude-opus-5" and first.body["max_tokens"] == 1234
    assert key in first.headers.get("authorization", "") + first.headers.get("x-api-key", "")
    assert "anthropic-version" in first.headers
    assert result.usage.cost_usd == pytest.approx(5.0 + (10 * 5 + 5 * 25) / 1e6)  # opus: $5 in, $25 out per Mtok
    # the key is never written anywhere: not in the run dir, not in the project
    for path in project.rglob("*"):
        if path.is_file():
            assert key not in path.read_text(errors="replace"), path


def test_revision_feedback_and_the_last_gate_failure_reach_the_model(project: Path, fake: FakeMessages):
    loop = loop_from(LOOP)
    job = stage_job(loop, "build", project, feedback="Please name it calculator.py",
                    last_failure="gate command `pytest` exited 1: test_divide failed")
    fake.reply("ok")
    worker_for(fake).perform(job, Events())
    brief = json.dumps(fake.requests[0].body["messages"][-1])
    assert "Please name it calculator.py" in brief and "test_divide failed" in brief
    assert "src/" in brief and "src/calc.py implements add" in brief  # produces and the gate's check


def test_perform_works_inside_a_running_event_loop_as_in_jupyter(project: Path, fake: FakeMessages):
    loop = loop_from(LOOP)
    fake.tool("bash", {"command": "echo from-a-loop"})
    fake.reply("ok")
    worker = worker_for(fake)

    async def cell():  # a notebook cell runs inside the kernel's event loop
        return worker.perform(stage_job(loop, "build", project), Events())

    assert asyncio.run(cell()).summary == "ok"
    assert "from-a-loop" in json.dumps(fake.requests[-1].body["messages"][-1])


def test_the_budget_also_stops_a_stage_while_it_runs(project: Path, fake: FakeMessages, write_loop):
    write_loop("""
        name: long
        max_iterations: 3
        budget: {max_tokens: 5000}
        stages:
          - id: only
            produces: [out/]
            gate: {mode: ai, check: out exists}
    """)
    for i in range(4):
        fake.tool("bash", {"command": f"mkdir -p out && echo {i} > out/{i}.txt"},
                  usage={"input_tokens": 3000, "output_tokens": 10})
    events = []
    engine = Engine(project, worker=worker_for(fake), listener=events.append)
    state = engine.start("long", "spend")
    assert state.status == "failed" and "over budget" in (state.failure_reason or "")
    assert len(fake.requests) == 2 and fake.pending == 2  # stopped mid-stage, no more model calls
    assert state.usage.total.input_tokens == 6000
    assert sorted(p.name for p in (project / "out").iterdir()) == ["0.txt"]  # the over-budget call never ran
    assert any("budget is used up" in e.text for e in events if e.kind == "worker")


def test_the_budget_bounds_a_stage_with_what_the_run_spent_before_it_even_before_state_json_says_so(
        project: Path, fake: FakeMessages, write_loop):
    """What earlier stages spent is in the event log before state.json is refreshed: the stage is told it."""
    write_loop(BUDGETED_LOOP)
    fake.tool("bash", {"command": "mkdir -p notes && echo 1 > notes/1.txt"},
              usage={"input_tokens": 3000, "output_tokens": 0})
    fake.reply("first done")
    fake.verdict(status="DONE", passed=True, reasons=["notes exist"])
    for i in range(4):
        fake.tool("bash", {"command": f"mkdir -p more && echo {i} > more/{i}.txt"},
                  usage={"input_tokens": 1500, "output_tokens": 0})
    state = Engine(project, worker=worker_for(fake)).start("budgeted", "spend")
    assert state.status == "failed" and "over budget" in (state.failure_reason or "")
    assert state.usage.total.input_tokens == 3000 + 10 + 7 + 1500 + 1500  # the second stage's second call ends it
    assert sorted(p.name for p in (project / "more").iterdir()) == ["0.txt"]


def test_a_stage_ends_at_its_turn_limit_with_a_note(project: Path, fake: FakeMessages):
    loop = loop_from(LOOP)
    for i in range(3):
        fake.tool("bash", {"command": f"echo {i}"})
    events = Events()
    job = stage_job(loop, "build", project)
    worker_for(fake, max_turns=2).perform(job, events)
    assert len(fake.requests) == 2 and fake.pending == 1
    assert any("used its 2 model turns" in t for t in events.of("info"))
    saved = json.loads((job.run_dir / "thread.json").read_text())["segments"][0]["messages"]
    assert saved[-1]["role"] == "assistant"  # a thread that can be continued: no dangling tool call


def test_an_unreachable_base_url_is_named_and_the_stage_stays_resumable(project: Path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    loop = loop_from(LOOP)
    job = stage_job(loop, "spec", project)
    worker = ClaudeWorker(Settings(base_url="http://127.0.0.1:9", max_retries=0, timeout=10))  # the real SDK client
    with pytest.raises(WorkerError) as info:
        worker.perform(job, Events())
    message = str(info.value)
    assert "cannot reach http://127.0.0.1:9 (ANTHROPIC_BASE_URL)" in message and "resumable" in message


def test_odin_max_retries_reaches_the_client_the_worker_makes(project: Path, fake: FakeMessages, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("ODIN_MAX_RETRIES", "0")
    monkeypatch.delenv("ODIN_SCRIPT", raising=False)
    loop = loop_from(LOOP)
    fake.error(529, "Overloaded", retry_after_ms=1)
    fake.reply("not reached: no retry allowed")
    with fake.serve() as base_url:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", base_url)
        with pytest.raises(WorkerError, match="after 0 retries"):
            make_worker(Settings.from_env(), project).perform(stage_job(loop, "spec", project), Events())
    assert len(fake.requests) == 1 and fake.pending == 1


def test_a_consume_too_long_for_the_brief_is_cut_with_a_marker_and_said_in_the_live_view(project: Path,
                                                                                         fake: FakeMessages):
    """Issue 25, bad input: a prompt is never cut silently; the live view names what the brief shortened."""
    loop = loop_from(LOOP)
    job = stage_job(loop, "build", project)
    (job.run_dir / "spec.md").write_text("add(a, b) returns a + b.\n" * 4000)  # about 100k characters
    fake.reply("built")
    events = Events()
    worker_for(fake).perform(job, events)
    assert any("shortened in the brief" in t and "spec.md" in t for t in events.of("info"))
    assert "… (truncated;" in json.dumps(fake.requests[0].body, ensure_ascii=False)
