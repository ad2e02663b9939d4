"""Gate evaluation (produces -> commands -> judge) and the artifact placement rule."""

from __future__ import annotations

import hashlib
import json
import os
import select
import sys

import pytest

from odin_magic.runs import evidence as gate_evidence
from odin_magic.engine import gates
from odin_magic.runs.evidence import EvidenceLog
from odin_magic.loop.artifacts import ArtifactPathInvalid, in_run_dir, place, placements, project_relative
from odin_magic.loop.schema import GateCommand, Stage
from odin_magic.workers.base import JudgeJob, JudgeResult, Verdict


class RecordingJudge:
    """Stands in for the model's judge: answers ``passed`` and remembers what it was shown."""

    def __init__(self, passed: bool = True):
        self.passed = passed
        self.jobs: list[JudgeJob] = []

    def perform(self, job, events):  # pragma: no cover - gates never perform
        raise AssertionError("a gate does not perform stages")

    def judge(self, job, events):
        self.jobs.append(job)
        return JudgeResult(Verdict(passed=self.passed, reasons=["looked"], blocking=[] if self.passed else ["bad"]))


def make_stage(run=(), produces=("out.md",)) -> Stage:
    return Stage.model_validate({
        "id": "build", "produces": list(produces),
        "gate": {"mode": "ai", "check": "it works", "run": list(run)},
    })


@pytest.fixture
def dirs(tmp_path):
    project, run_dir = tmp_path / "project", tmp_path / "project" / ".odin-loop" / "runs" / "r1"
    run_dir.mkdir(parents=True)
    return project, run_dir


def evaluate(stage, dirs, judge, write_produces=True):
    project, run_dir = dirs
    produces = placements(stage.produces, project, run_dir, stage.id)
    if write_produces:
        for p in produces.values():
            target = p.path / "f.txt" if p.is_dir else p.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("x")

    def job(commands):
        return JudgeJob(loop=None, stage=stage, task="t", run_id="r1", project_dir=project, run_dir=run_dir,
                        artifacts={k: v.path for k, v in produces.items()}, commands=commands)

    env = gates.command_env(project, run_dir, "r1", stage.id)
    return gates.evaluate(gates.GateContext(stage=stage, produces=produces, judge_job=job, judge=judge,
                                            sink=lambda e: None, env=env, cwd=project))


def test_passing_commands_then_the_judge_decides(dirs):
    judge = RecordingJudge(passed=True)
    outcome = evaluate(make_stage(run=["true", "echo hello"]), dirs, judge)
    assert outcome.passed and outcome.reason is None
    assert [c.exit_code for c in outcome.commands] == [0, 0]
    assert outcome.commands[1].stdout_tail == "hello\n"
    assert judge.jobs[0].commands == outcome.commands  # the judge sees the command evidence


def test_the_judge_can_fail_a_gate(dirs):
    outcome = evaluate(make_stage(run=["true"]), dirs, RecordingJudge(passed=False))
    assert not outcome.passed and outcome.reason == "bad"


def test_a_failing_command_fails_the_gate_and_the_judge_is_not_consulted(dirs):
    judge = RecordingJudge(passed=True)
    outcome = evaluate(make_stage(run=["echo oops >&2; exit 3", "echo never"]), dirs, judge)
    assert not outcome.passed
    assert judge.jobs == [] and outcome.verdict is None  # no judge can overrule a command
    assert len(outcome.commands) == 1 and outcome.commands[0].exit_code == 3
    assert outcome.reason == "gate command `echo oops >&2; exit 3` exited 3: oops"
    assert outcome.commands[0].stderr_tail == "oops\n"


def test_missing_produces_fail_the_gate_naming_them(dirs):
    project, run_dir = dirs
    judge = RecordingJudge()
    stage = make_stage(run=["touch ran"], produces=("spec.md", "src/"))
    (project / "src").mkdir(parents=True)  # an empty directory does not count
    outcome = evaluate(stage, dirs, judge, write_produces=False)
    assert not outcome.passed and outcome.missing == ["spec.md", "src/"]
    assert outcome.reason == "missing produces: spec.md, src/"
    assert judge.jobs == [] and not (project / "ran").exists()  # commands do not run either


def test_a_command_that_times_out_is_killed_with_its_children(dirs, tmp_path):
    project, _ = dirs
    pidfile = tmp_path / "child.pid"
    cmd = GateCommand(cmd=f"sleep 30 & echo $! > {pidfile}; wait", timeout=0.5)
    ev = gates.run_command(cmd, project, dict(os.environ))
    assert ev.timed_out and ev.exit_code is None and not ev.ok
    assert 0.4 < ev.duration_s < 10
    assert "timeout" in ev.stderr_tail
    child = int(pidfile.read_text())
    # the grandchild was killed too: it exits (a pidfd becomes readable) at once, not after its 30 s.
    # Waiting on its pidfd, not reading /proc once: the kill is delivered asynchronously.
    try:
        fd = os.pidfd_open(child)
    except ProcessLookupError:
        return  # already gone and reaped
    try:
        exited, _, _ = select.select([fd], [], [], 5)
    finally:
        os.close(fd)
    assert exited, f"the gate command's child {child} still runs after the timeout"


def test_commands_see_the_run_environment(dirs):
    project, run_dir = dirs
    judge = RecordingJudge()
    outcome = evaluate(make_stage(run=['echo "$ODIN_PROJECT_DIR|$ODIN_RUN_DIR|$ODIN_RUN_ID|$ODIN_STAGE"',
                                       "command -v python"]), dirs, judge)
    assert outcome.commands[0].stdout_tail.strip() == f"{project}|{run_dir}|r1|build"
    assert outcome.commands[1].stdout_tail.strip().startswith(os.path.dirname(sys.executable))


def test_commands_never_see_the_api_key(dirs, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-for-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    project, run_dir = dirs
    outcome = evaluate(make_stage(run=["env"]), dirs, RecordingJudge())
    assert outcome.commands[0].ok
    assert "ANTHROPIC_" not in outcome.commands[0].stdout_tail
    assert "sk-ant-secret-for-test" not in "".join(p.read_text() for p in run_dir.rglob("*") if p.is_file())


def test_commands_do_not_inherit_forced_colour(dirs, monkeypatch):
    for var in ("FORCE_COLOR", "CLICOLOR_FORCE", "CLICOLOR"):  # what ipykernel sets
        monkeypatch.setenv(var, "1")
    outcome = evaluate(make_stage(run=["env"]), dirs, RecordingJudge())
    assert not any(line.split("=")[0] in ("FORCE_COLOR", "CLICOLOR_FORCE", "CLICOLOR")
                   for line in outcome.commands[0].stdout_tail.splitlines())


def test_only_the_tail_of_long_output_is_kept(dirs):
    project, _ = dirs
    ev = gates.run_command(GateCommand(cmd="seq 1 100000"), project, dict(os.environ))
    assert ev.ok and len(ev.stdout_tail) == gates.TAIL_CHARS and ev.stdout_tail.endswith("99999\n100000\n")


def test_a_command_that_cannot_start(dirs, tmp_path):
    ev = gates.run_command(GateCommand(cmd="true"), tmp_path / "no-such-dir", dict(os.environ))
    assert not ev.ok and ev.exit_code is None and "could not start" in ev.stderr_tail


def test_evidence_of_an_evaluation(dirs):
    _, run_dir = dirs
    outcome = evaluate(make_stage(run=["exit 1"]), dirs, RecordingJudge())
    log = EvidenceLog(run_dir)
    saved = log.append(outcome.evidence("build", 7, "2026-06-14T14:35:01"))
    log.close()
    assert saved.path == "gates/evidence.jsonl#0"
    raw = (run_dir / "gates" / "evidence.jsonl").read_bytes()
    assert saved.sha256 == hashlib.sha256(raw).hexdigest()  # the gate's record carries it
    data = gate_evidence.read(run_dir, saved.path)
    assert data == json.loads(raw) and data["passed"] is False and data["judged"] is False and data["evaluation"] == 7
    assert data["commands"][0]["cmd"] == "exit 1" and data["commands"][0]["exit_code"] == 1


# -- the placement rule ----------------------------------------------------------


@pytest.mark.parametrize("entry, run_scoped", [
    ("spec.md", True), ("review.md", True), ("harness/", True), ("harness/test_api.py", True),
    ("src/", False), ("tests/test_bug.py", False), ("docs/", False), ("src/app.py", False),
])
def test_placement_rule(entry, run_scoped, tmp_path):
    project, run_dir = tmp_path / "p", tmp_path / "p" / ".odin-loop" / "runs" / "r"
    p = place(entry, project, run_dir)
    assert in_run_dir(entry) is run_scoped and p.in_run_dir is run_scoped
    assert p.path == (run_dir if run_scoped else project) / entry.rstrip("/")
    assert p.is_dir is entry.endswith("/")
    assert project_relative(p.path, project, p.is_dir) == (
        f".odin-loop/runs/r/{entry}" if run_scoped else entry)


@pytest.mark.parametrize("entry", ["/etc/passwd", "../outside.md", "src/../../x", "", "/"])
def test_entries_outside_the_project_are_refused(entry, tmp_path):
    with pytest.raises(ArtifactPathInvalid, match="relative path inside the project"):
        place(entry, tmp_path, tmp_path / "run", "build")


def test_a_directory_exists_when_it_has_content(tmp_path):
    p = place("src/", tmp_path, tmp_path / "run")
    assert not p.exists()
    p.path.mkdir()
    assert not p.exists()
    (p.path / "a.py").write_text("")
    assert p.exists()
    f = place("spec.md", tmp_path, tmp_path / "run")
    f.path.parent.mkdir()
    assert not f.exists()
    f.path.write_text("")
    assert f.exists()


def test_the_command_environment_is_copied_when_a_command_first_needs_it(dirs, monkeypatch):
    project, run_dir = dirs
    env = gates.CommandEnv(project, run_dir, "r1", "build")
    monkeypatch.setenv("ODIN_TEST_LATE", "set after the stage began")  # copied at first use, not before
    assert dict(env) == gates.command_env(project, run_dir, "r1", "build")
    assert env["ODIN_TEST_LATE"] == "set after the stage began" and env["ODIN_STAGE"] == "build"
    ev = gates.run_command(GateCommand(cmd='test "$ODIN_RUN_ID" = r1'), project, env)
    assert ev.ok
