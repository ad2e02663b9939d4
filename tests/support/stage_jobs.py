"""Building StageJob / JudgeJob values the way the engine does, for worker tests."""

from __future__ import annotations

import textwrap
from pathlib import Path

import yaml

from odin_magic.loop.artifacts import placements
from odin_magic.loop.schema import Loop
from odin_magic.workers.base import CommandEvidence, JudgeJob, StageJob, WorkerEvent


def loop_from(text: str) -> Loop:
    return Loop.model_validate(yaml.safe_load(textwrap.dedent(text)))


def stage_job(loop: Loop, stage_id: str, project: Path, *, run_id: str = "20260101-000000-test",
              task: str = "build a tiny calculator", feedback: str | None = None,
              last_failure: str | None = None) -> StageJob:
    stage = loop.stage(stage_id)
    run_dir = project / ".odin-loop" / "runs" / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    produces = placements(stage.produces, project, run_dir, stage.id)
    consumes = placements(stage.consumes, project, run_dir, stage.id)
    for p in produces.values():  # as the engine does
        (p.path if p.is_dir else p.path.parent).mkdir(parents=True, exist_ok=True)
    return StageJob(
        loop=loop, stage=stage, task=task, run_id=run_id, project_dir=project, run_dir=run_dir,
        agent=stage.resolved_agent, consumes={k: v.path for k, v in consumes.items()},
        produces={k: v.path for k, v in produces.items()}, feedback=feedback, last_failure=last_failure,
    )


def judge_job(loop: Loop, stage_id: str, project: Path, commands: list[CommandEvidence] | None = None,
              run_id: str = "20260101-000000-test") -> JudgeJob:
    job = stage_job(loop, stage_id, project, run_id=run_id)
    return JudgeJob(
        loop=loop, stage=job.stage, task=job.task, run_id=run_id, project_dir=project, run_dir=job.run_dir,
        artifacts=dict(job.produces), commands=list(commands or []),
    )


class Events(list):
    """A sink that keeps every WorkerEvent."""

    def __call__(self, event: WorkerEvent) -> None:
        self.append(event)

    def of(self, kind: str) -> list[str]:
        return [e.text for e in self if e.kind == kind]


def perform_calls(loop: Loop, stage_id: str, project: Path, calls: list[tuple[str, dict]], **settings):
    """Perform ``stage_id`` with the real Claude worker and SDK against a local fake model that makes ``calls``
    (one tool call per turn), then says it has finished; ``(fake, job, events)``."""
    from odin_magic.workers.claude import ClaudeWorker
    from odin_magic.workers.config import Settings
    from support.fake_messages import FakeMessages

    job = stage_job(loop, stage_id, project)
    fake = FakeMessages()
    for name, args in calls:
        fake.tool(name, args)
    fake.reply("finished")
    events = Events()
    ClaudeWorker(Settings(**settings), client_factory=fake.factory()).perform(job, events)
    return fake, job, events


def tool_results(fake) -> list[dict]:
    """The tool-result block each follow-up request carried back, in order."""
    return [request.body["messages"][-1]["content"][0] for request in fake.requests[1:]]
