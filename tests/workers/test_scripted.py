"""The offline scripted model: a YAML script replayed through the real SDK and the real Claude worker."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from odin_magic.workers.config import Settings
from odin_magic.workers.base import CommandEvidence, WorkerError
from odin_magic.workers.claude import ClaudeWorker
from odin_magic.workers.factory import make_worker
from odin_magic.workers.scripted import ScriptedModel, load_script

from support.stage_jobs import Events, judge_job, loop_from, stage_job
from support import REPO

LOOP = """
name: scripted
max_iterations: 3
stages:
  - id: write
    produces: [note.md]
    gate: {mode: ai, check: note.md says hello}
  - id: other
    produces: [other.md]
    gate: {mode: ai, check: other.md exists}
"""


def script_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "script.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def scripted_worker(path: Path, max_retries: int = 2) -> tuple[ClaudeWorker, ScriptedModel]:
    model = ScriptedModel.from_file(path)
    return ClaudeWorker(Settings(max_retries=max_retries), client_factory=model.client_factory(max_retries=max_retries)), model


def test_turns_run_real_tools_with_run_dir_substitution_and_retry(project: Path, tmp_path: Path):
    path = script_file(tmp_path, """
        stages:
          write:
            attempts:
              - turns:
                  - error: {status: 529, message: Overloaded}
                  - text: "writing {stage}"
                    tools:
                      - write: {file_path: "{run_dir}/note.md", content: "hello from {run_id}"}
                      - bash: {command: "cat {run_dir}/note.md"}
                  - text: first attempt done
              - turns:
                  - text: second attempt
                    tools: [{write: {file_path: "{run_dir}/note.md", content: again}}]
    """)
    worker, model = scripted_worker(path)
    loop = loop_from(LOOP)
    job = stage_job(loop, "write", project)
    events = Events()

    result = worker.perform(job, events)

    assert job.produces["note.md"].read_text() == f"hello from {job.run_id}"
    assert result.summary == "first attempt done"
    assert events.of("text")[0] == "writing write"
    assert len(events.of("tool")) == 2
    assert len(model.requests) == 3  # the 529 (retried by the SDK), then two turns
    assert result.usage.output_tokens > 0
    # the stable prefix is written to the simulated cache once, then read
    assert result.usage.cache_creation_input_tokens > 0 and result.usage.cache_read_input_tokens > 0

    # the next execution of the stage takes the next attempt; then the last one repeats
    worker.perform(stage_job(loop, "write", project), Events())
    assert job.produces["note.md"].read_text() == "again"
    job.produces["note.md"].write_text("x")
    worker.perform(stage_job(loop, "write", project), Events())
    assert job.produces["note.md"].read_text() == "again"


def test_verdicts_replay_in_order_with_default_and_malformed_retry(project: Path, tmp_path: Path):
    path = script_file(tmp_path, """
        stages: {}
        judge:
          write:
            - {malformed: "not json at all"}
            - {passed: false, reasons: [too short], blocking: [say more]}
            - {passed: true, reasons: [fine]}
        default_verdict: {passed: true, reasons: [default]}
    """)
    worker, model = scripted_worker(path)
    loop = loop_from(LOOP)
    ok = [CommandEvidence("true", 0, False, 0.0, "", "")]
    first = worker.judge(judge_job(loop, "write", project, ok), Events())
    assert first.verdict.passed is False and first.verdict.blocking == ["say more"]  # after one malformed answer
    second = worker.judge(judge_job(loop, "write", project, ok), Events())
    assert second.verdict.reasons == ["fine"]
    third = worker.judge(judge_job(loop, "write", project, ok), Events())
    assert third.verdict.reasons == ["fine"]  # the last entry repeats
    other = worker.judge(judge_job(loop, "other", project, ok), Events())
    assert other.verdict.reasons == ["default"]


def test_a_stage_the_script_does_not_cover_stops_clearly(project: Path, tmp_path: Path):
    path = script_file(tmp_path, "stages: {write: [{text: hi}]}\n")
    worker, _ = scripted_worker(path)
    with pytest.raises(WorkerError, match=r"no turns for stage 'other'.*stages\.other"):
        worker.perform(stage_job(loop_from(LOOP), "other", project), Events())


def test_odin_script_selects_the_scripted_model_without_an_api_key(project: Path, tmp_path: Path, monkeypatch):
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = script_file(tmp_path, "stages: {write: [{tools: [{write: {file_path: '{run_dir}/note.md', content: hi}}]}]}\n")
    settings = Settings.from_env(env={"ODIN_SCRIPT": str(path)})
    assert settings.script == path
    worker = make_worker(settings, project)
    job = stage_job(loop_from(LOOP), "write", project)
    worker.perform(job, Events())
    assert job.produces["note.md"].read_text() == "hi"


def test_the_replay_position_survives_a_new_process(project: Path, tmp_path: Path, monkeypatch):
    path = script_file(tmp_path, """
        stages:
          write:
            attempts:
              - turns: [{tools: [{write: {file_path: "{run_dir}/note.md", content: first}}]}]
              - turns: [{tools: [{write: {file_path: "{run_dir}/note.md", content: second}}]}]
    """)
    job = stage_job(loop_from(LOOP), "write", project)
    make_worker(Settings(script=path), project).perform(job, Events())
    assert job.produces["note.md"].read_text() == "first"
    # a new worker, as after a kernel restart, continues the same run's script
    make_worker(Settings(script=path), project).perform(job, Events())
    assert job.produces["note.md"].read_text() == "second"
    # a different run starts the script from its beginning
    other = stage_job(loop_from(LOOP), "write", project, run_id="20260101-000001-other")
    make_worker(Settings(script=path), project).perform(other, Events())
    assert other.produces["note.md"].read_text() == "first"


def test_the_quickstart_script_is_valid():
    script = load_script(REPO / "example_notebooks" / "quickstart.script.yaml")
    # the interview stage is a real deep interview, answered from the script's interview: section
    assert {"plan", "harness-design", "harness-verify", "implement", "test", "review"} <= set(script.stages)
    assert script.interview and "rounds" in script.interview
    assert len(script.stages["implement"]) == 2
    assert json.dumps(script.judge["review"][0].json_)
