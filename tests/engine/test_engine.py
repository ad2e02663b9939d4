"""The hybrid drive, branch by branch, with the dry worker (and tiny stand-in model workers)."""

from __future__ import annotations

import json
import sys
import threading

import pytest

from support.loops import LINEAR
from odin_magic.engine.orchestrator import Engine, WorkerFailed, simulate
from odin_magic.core.errors import ConfigError, NoActiveRun, RunLocked, RunRefused, UsageError
from odin_magic.runs.state import DryOptions, Usage
from odin_magic.workers.base import JudgeResult, StageResult, Verdict, WorkerError
from odin_magic.runs import evidence as evidence_store
from support.clocks import StepClock


def hist(state):
    """History without timestamps and evidence paths: what a run did."""
    return [(e.stage, e.result, e.gate, e.agent) for e in state.history]


class Events(list):
    def __call__(self, event):
        self.append(event)

    def kinds(self):
        return [e.kind for e in self]


def dry(gates="", approve_all=False, delay=0.0):
    return DryOptions(gates=[g for g in gates.split(",") if g], approve_all=approve_all, stage_delay=delay)


# -- pass / fail / cap ---------------------------------------------------------


def test_all_ai_gates_pass_and_the_run_is_done(project, write_loop):
    write_loop(LINEAR)
    state = Engine(project).start("linear", "build", dry=dry())
    assert state.status == "done"
    assert hist(state) == [("a", "pass", "ai", None), ("b", "pass", "ai", None), ("c", "pass", "ai", None)]
    assert state.iterations == {} and state.total_iterations == 0  # the happy path is not counted
    assert state.ended_at is not None and state.current_stage == "c"
    run_dir = project / ".odin-loop" / "runs" / state.run_id
    on_disk = json.loads((run_dir / "state.json").read_text())
    assert on_disk == state.to_json()
    assert list(on_disk)[:12] == ["run_id", "loop", "task", "started_at", "status", "current_stage", "iterations",
                                  "total_iterations", "max_iterations", "artifacts", "history", "usage"]
    assert state.run_id.endswith("-linear") and len(state.run_id) == len("20260614-143501-linear")


def test_fail_without_on_fail_retries_the_same_stage(project, write_loop):
    write_loop(LINEAR)
    state = Engine(project).start("linear", "build", dry=dry("b:fail"))
    assert state.status == "done"
    assert [h[:3] for h in hist(state)] == [
        ("a", "pass", "ai"), ("b", "fail", "ai"), ("b", "pass", "ai"), ("c", "pass", "ai")]
    assert state.iterations == {"b": 1} and state.total_iterations == 1
    fail = state.history[1]
    assert fail.reason == "dry run: scripted failure (b:fail)"
    assert state.dry.remaining == [] and state.dry.gates == ["b:fail"]


def test_fail_with_on_fail_loops_back(project, write_loop):
    write_loop()
    events = Events()
    state = Engine(project, listener=events).start("demo", "build", dry=dry("test:fail,test:fail", approve_all=True))
    assert state.status == "done"
    assert [h[:3] for h in hist(state)] == [
        ("spec", "pass", "ai-pending"), ("spec", "pass", "approved"),
        ("implement", "pass", "ai"), ("test", "fail", "ai"),
        ("implement", "pass", "ai"), ("test", "fail", "ai"),
        ("implement", "pass", "ai"), ("test", "pass", "ai")]
    assert state.iterations == {"test": 2} and state.total_iterations == 2
    failed = [e for e in events if e.kind == "gate_failed"]
    assert [e.data["next_stage"] for e in failed] == ["implement", "implement"]


def test_exceeding_max_iterations_fails_the_run_naming_the_blocker(project, write_loop):
    write_loop(LINEAR.replace("max_iterations: 3", "max_iterations: 3\nmax_repeats: 5"))
    state = Engine(project).start("linear", "build", dry=dry("b:fail,b:fail,b:fail,b:fail"))
    assert state.status == "failed"
    assert state.total_iterations == 4 and state.iterations == {"b": 4}
    assert [h[:2] for h in hist(state)] == [("a", "pass")] + [("b", "fail")] * 4
    assert "exceeded max_iterations 3" in state.failure_reason and "stage b" in state.failure_reason
    with pytest.raises(NoActiveRun):
        Engine(project).run()


# -- pauses ----------------------------------------------------------------------


def test_pause_then_approve_advances(project, write_loop):
    write_loop()
    engine = Engine(project)
    state = engine.start("demo", "build", dry=dry())
    assert state.status == "awaiting_approval" and state.current_stage == "spec"
    assert hist(state) == [("spec", "pass", "ai-pending", None)]
    state = engine.approve()
    assert state.status == "done"
    assert hist(state)[:3] == [("spec", "pass", "ai-pending", None), ("spec", "pass", "approved", None),
                               ("implement", "pass", "ai", None)]
    with pytest.raises(NoActiveRun):
        engine.approve()


def test_run_at_a_pause_is_approval(project, write_loop):
    write_loop()
    engine = Engine(project)
    engine.start("demo", "build", dry=dry())
    state = engine.run()
    assert [h[2] for h in hist(state)][:2] == ["ai-pending", "approved"]
    assert state.status == "done"


def test_approve_is_refused_when_not_paused(project, write_loop):
    write_loop()
    engine = Engine(project)
    stopper = Events()
    engine.listener = lambda e: (stopper(e), e.kind == "gate_passed" and engine.request_stop())
    engine.start("demo", "build", dry=dry(approve_all=True))
    assert engine.status().status == "running"
    with pytest.raises(RunRefused, match="not waiting for approval"):
        engine.approve()
    with pytest.raises(RunRefused, match="not paused"):
        engine.revise("more")


def test_last_stage_human_gate_pauses_then_approval_finishes(project, write_loop):
    write_loop("""
    name: review
    max_iterations: 2
    stages:
      - id: write
        produces: [notes.md]
        gate: {mode: ai, check: notes exist}
      - id: review
        agent: reviewer
        consumes: [notes.md]
        produces: [review.md]
        gate: {mode: human, check: a human agrees}
    """)
    engine = Engine(project)
    state = engine.start("review", "t", dry=dry())
    assert state.status == "awaiting_approval" and state.current_stage == "review"
    state = engine.approve()
    assert state.status == "done"
    assert hist(state) == [("write", "pass", "ai", None), ("review", "pass", "ai-pending", "reviewer"),
                           ("review", "pass", "approved", "reviewer")]


def test_revise_reruns_the_paused_stage_with_feedback(project, write_loop):
    write_loop()
    events = Events()
    engine = Engine(project, listener=events)
    engine.start("demo", "build", dry=dry())
    state = engine.revise("cover the error cases")
    assert state.status == "awaiting_approval" and state.current_stage == "spec"
    assert hist(state) == [("spec", "pass", "ai-pending", None)] * 2
    assert state.feedback is None  # consumed by the gate that followed
    started = [e for e in events if e.kind == "stage_started"]
    assert started[-1].data["feedback"] == "cover the error cases"
    worker_lines = [e.text for e in events if e.kind == "worker"]
    assert "feedback: cover the error cases" in worker_lines[-1]
    with pytest.raises(UsageError):
        engine.revise("   ")


def test_a_human_stage_that_fails_records_the_pending_mode(project, write_loop):
    write_loop()
    engine = Engine(project)
    state = engine.start("demo", "build", dry=dry("spec:fail"))  # fails, is retried, passes, pauses
    assert state.status == "awaiting_approval"
    state = engine.revise("again")
    assert [h[:3] for h in hist(state)] == [("spec", "fail", "ai-pending"), ("spec", "pass", "ai-pending"),
                                            ("spec", "pass", "ai-pending")]
    assert state.iterations == {"spec": 1}
    assert all(e.gate != "approved" for e in state.history if e.result == "fail")


# -- step / abandon / one active run ---------------------------------------------


def test_step_runs_one_stage_without_advancing(project, write_loop):
    write_loop(LINEAR)
    engine = Engine(project)
    engine.listener = lambda e: e.kind == "gate_passed" and engine.request_stop()
    engine.start("linear", "build", dry=dry())  # stops after a passes; current_stage b
    state = engine.step("c")
    assert state.current_stage == "c" and state.status == "running"
    assert [h[0] for h in hist(state)] == ["a", "c"]
    with pytest.raises(UsageError, match="no stage 'zz'"):
        engine.step("zz")


def test_step_on_a_human_stage_pauses_and_a_failing_step_is_counted(project, write_loop):
    write_loop()
    events = Events()
    engine = Engine(project, listener=events)
    engine.start("demo", "build", dry=dry("test:fail"))
    engine.listener = lambda e: (events(e), e.kind == "gate_passed" and e.stage == "implement"
                                 and engine.request_stop())
    engine.approve()  # stopped before test: the run is running, not paused (a step at a pause is refused)
    engine.listener = events
    state = engine.step("test")
    assert hist(state)[-1] == ("test", "fail", "ai", "critic")
    assert state.iterations == {"test": 1} and state.current_stage == "test"  # a step stays on its stage
    assert state.status == "running"
    del events[:]
    state = engine.step("spec")
    assert state.status == "awaiting_approval" and hist(state)[-1][:3] == ("spec", "pass", "ai-pending")
    assert events.kinds()[-1] == "paused" and "odin approve" in events[-1].text


def test_one_active_run_per_project(project, write_loop):
    write_loop()
    engine = Engine(project)
    first = engine.start("demo", "build", dry=dry())
    with pytest.raises(RunRefused) as refused:
        engine.start("demo", "another", dry=dry())
    assert first.run_id in str(refused.value) and "odin abandon" in str(refused.value)
    state = engine.abandon()
    assert state.status == "abandoned" and state.ended_at
    second = engine.start("demo", "another", dry=dry())
    assert second.run_id != first.run_id and second.status == "awaiting_approval"
    assert [s.run_id for s in engine.runs()] == [second.run_id, first.run_id]
    assert engine.active().run_id == second.run_id
    assert engine.status(first.run_id).status == "abandoned"


def test_nothing_to_continue(project, write_loop):
    engine = Engine(project)
    with pytest.raises(NoActiveRun):
        engine.run()
    with pytest.raises(NoActiveRun):
        engine.status()
    with pytest.raises(NoActiveRun):
        engine.abandon()


# -- resume, stop, locks -----------------------------------------------------------


def test_stop_then_resume_in_a_new_engine_gives_the_same_history(project, tmp_path, write_loop):
    write_loop()
    opts = dict(gates="test:fail,implement:fail,test:fail", approve_all=True)
    reference = Engine(project).start("demo", "build", dry=dry(**opts))
    assert reference.status == "done"

    other = tmp_path / "other"
    other.mkdir()
    write_loop(into=other)
    stops = 0
    while True:
        engine = Engine(other)
        engine.listener = lambda e: e.kind in ("gate_passed", "gate_failed") and engine.request_stop()
        state = engine.start("demo", "build", dry=dry(**opts)) if stops == 0 else engine.run()
        stops += 1
        if not state.active:
            break
        assert state.status == "running"  # a stop leaves the run resumable
    assert stops > 5
    assert hist(state) == hist(reference)
    assert state.iterations == reference.iterations and state.total_iterations == reference.total_iterations
    assert [e.evidence for e in state.history] == [e.evidence for e in reference.history]


def test_stop_is_immediate_during_a_stage_delay(project, write_loop):
    write_loop(LINEAR)
    started = threading.Event()
    engine = Engine(project, listener=lambda e: e.kind == "stage_started" and started.set())
    result = {}
    t = threading.Thread(target=lambda: result.update(state=engine.start("linear", "t", dry=dry(delay=60))))
    t.start()
    assert started.wait(10)
    assert engine.driving
    live = engine.status()  # a concurrent reader
    assert live.status == "running" and live.current_stage == "a"
    engine.request_stop()
    t.join(10)
    assert not t.is_alive()
    state = result["state"]
    assert state.status == "running" and len(state.history) == 1  # the current step finished, then stopped
    assert not engine.driving
    # the remembered delay is still there; a plain run continues the same way
    assert Engine(project).status().dry.stage_delay == 60


def test_two_drivers_on_one_run_one_is_refused(project, write_loop):
    write_loop(LINEAR)
    started = threading.Event()
    first = Engine(project, listener=lambda e: e.kind == "stage_started" and started.set(), command="odin run first")
    t = threading.Thread(target=lambda: first.start("linear", "t", dry=dry(delay=60)))
    t.start()
    try:
        assert started.wait(10)
        second = Engine(project)
        with pytest.raises(RunLocked) as refused:
            second.run()
        message = str(refused.value)
        assert "pid" in message and "odin run first" in message
        with pytest.raises(RunLocked):  # the same engine cannot drive twice either
            first.run()
        with pytest.raises(RunLocked):
            second.abandon()
    finally:
        first.request_stop()
        t.join(10)
    assert Engine(project).abandon().status == "abandoned"  # the lock is free again


def test_a_failing_worker_leaves_the_run_resumable(project, write_loop):
    write_loop(LINEAR)

    class Flaky:
        """Stands in for a model that gives up once on stage b."""

        def __init__(self):
            self.failed = False

        def perform(self, job, events):
            if job.stage.id == "b" and not self.failed:
                self.failed = True
                raise WorkerError("rate limited, retries ran out")
            for path in job.produces.values():
                path.write_text("x")
            return StageResult()

        def judge(self, job, events):
            return JudgeResult(Verdict(passed=True))

    worker = Flaky()
    engine = Engine(project, worker=worker)
    with pytest.raises(WorkerFailed, match="rate limited"):
        engine.start("linear", "t")
    state = engine.status()
    assert state.status == "running" and state.current_stage == "b" and [h[0] for h in hist(state)] == ["a"]
    assert engine.run().status == "done"


class SpentThenFailed:
    """Stands in for a model whose call on stage b (or its judge) spends tokens, then gives up."""

    def __init__(self, where: str, tokens: int):
        self.where, self.tokens = where, tokens

    def _fail(self):
        exc = WorkerError("the API went away")
        exc.usage = Usage(input_tokens=self.tokens, cost_usd=0.5)  # as the Claude worker attaches it
        raise exc

    def perform(self, job, events):
        if job.stage.id == "b" and self.where == "perform":
            self._fail()
        for path in job.produces.values():
            path.write_text("x")
        return StageResult()

    def judge(self, job, events):
        if job.stage.id == "b" and self.where == "judge":
            self._fail()
        return JudgeResult(Verdict(passed=True))


@pytest.mark.parametrize("where", ["perform", "judge"])
def test_what_a_failed_stage_spent_is_counted(project, write_loop, where):
    write_loop(LINEAR + "budget: {max_tokens: 1000}\n")
    engine = Engine(project, worker=SpentThenFailed(where, 400))
    with pytest.raises(WorkerFailed, match="the API went away"):
        engine.start("linear", "t")
    events = Events()
    state = Engine(project, listener=events).status()  # as saved: state.json is up to date with the log
    assert "notice" not in events.kinds()
    assert state.status == "running" and state.usage.by_stage["b"].input_tokens == 400
    assert state.usage.total.cost_usd == 0.5
    with pytest.raises(WorkerFailed):  # 800 tokens: still within the budget
        engine.run()
    state = engine.run()  # 1200: the failed attempts alone put the run over budget
    assert state.status == "failed" and "1200 tokens used" in state.failure_reason
    assert [h[0] for h in hist(state)] == ["a"]


def test_a_retried_stage_is_told_why_its_gate_failed(project, write_loop):
    write_loop(LINEAR)

    class Recording:
        """Stands in for a model: records each job; b's first judgment fails."""

        def __init__(self):
            self.jobs, self.judged = [], 0

        def perform(self, job, events):
            self.jobs.append(job)
            for path in job.produces.values():
                path.write_text("x")
            return StageResult()

        def judge(self, job, events):
            if job.stage.id == "b":
                self.judged += 1
                if self.judged == 1:
                    return JudgeResult(Verdict(passed=False, reasons=["no tests"], blocking=["b has no tests"]))
            return JudgeResult(Verdict(passed=True))

    worker = Recording()
    assert Engine(project, worker=worker).start("linear", "t").status == "done"
    assert [(j.stage.id, j.attempt) for j in worker.jobs] == [("a", 0), ("b", 0), ("b", 1), ("c", 0)]
    assert [j.last_failure for j in worker.jobs if j.attempt == 0] == [None, None, None]
    retry = worker.jobs[2].last_failure  # names the stage whose gate failed, the judge's finding verbatim
    assert retry.startswith("The gate of stage b failed: b has no tests") and "\n- b has no tests" in retry


def test_a_model_worker_that_cannot_be_built_is_a_config_error_and_no_run(project, write_loop, monkeypatch):
    write_loop(LINEAR)
    monkeypatch.setenv("ODIN_SCRIPT", str(project / "missing.yaml"))  # a real run, offline, misconfigured
    with pytest.raises(ConfigError, match="missing.yaml"):
        Engine(project).start("linear", "t")
    assert not (project / ".odin-loop" / "runs").exists() or not list((project / ".odin-loop" / "runs").iterdir())


# -- termination --------------------------------------------------------------------


def test_timeout_fails_the_run(project, write_loop):
    write_loop(LINEAR.replace("max_iterations: 3", "max_iterations: 3\ntimeout_seconds: 30"))
    state = Engine(project, clock=StepClock(10)).start("linear", "t", dry=dry())
    assert state.status == "failed" and state.failure_reason.startswith("timed out")
    assert 0 < len(state.history) < 3


def test_no_progress_fails_the_run(project, write_loop):
    write_loop(DEMO_NO_PROGRESS)
    state = Engine(project).start("np", "t", dry=dry("test:fail,test:fail,test:fail"))
    assert state.status == "failed"
    assert "no progress: 2 consecutive loopbacks" in state.failure_reason
    assert state.total_iterations == 2 and state.no_progress == 2


def test_a_new_gate_passing_resets_no_progress(project, write_loop):
    write_loop(DEMO_NO_PROGRESS)
    state = Engine(project).start("np", "t", dry=dry("implement:fail,test:fail"))
    # implement fails (1), implement passes for the first time (reset), test fails (1), test passes
    assert state.status == "done" and state.total_iterations == 2 and state.no_progress == 0


DEMO_NO_PROGRESS = """
name: np
max_iterations: 10
max_no_progress: 2
stages:
  - id: implement
    produces: [src/]
    gate: {mode: ai, check: code}
  - id: test
    produces: [harness/]
    gate: {mode: ai, check: tests pass, on_fail: implement}
"""


class MeteredWorker:
    """Stands in for a model that reports token usage and cost."""

    def __init__(self, tokens: int, usd: float):
        self.tokens, self.usd = tokens, usd

    def perform(self, job, events):
        for path in job.produces.values():
            path.write_text("work")
        return StageResult(usage=Usage(input_tokens=self.tokens, cost_usd=self.usd))

    def judge(self, job, events):
        return JudgeResult(Verdict(passed=True), usage=Usage(output_tokens=10))


def test_token_budget_fails_the_run(project, write_loop):
    write_loop(LINEAR + "budget: {max_tokens: 1000}\n")
    state = Engine(project, worker=MeteredWorker(600, 0.0)).start("linear", "t")
    assert state.status == "failed" and "1210 tokens used" in state.failure_reason
    assert [h[0] for h in hist(state)] == ["a"]  # b's work put it over budget before its gate
    assert state.usage.total.total_tokens == 1210
    assert state.usage.by_stage["a"].output_tokens == 10


def test_usd_budget_fails_the_run(project, write_loop):
    write_loop(LINEAR + "budget: {max_usd: 0.25}\n")
    state = Engine(project, worker=MeteredWorker(1, 0.1)).start("linear", "t")
    assert state.status == "failed" and "$0.3000 spent" in state.failure_reason


def test_usage_within_budget_is_recorded_and_survives_a_reload(project, write_loop):
    write_loop(LINEAR + "budget: {max_tokens: 100000, max_usd: 5}\n")
    state = Engine(project, worker=MeteredWorker(100, 0.01)).start("linear", "t")
    assert state.status == "done" and state.usage.total.total_tokens == 330
    reloaded = Engine(project).status(state.run_id)
    assert reloaded.usage == state.usage


# -- artifacts, evidence, gate commands in a run ------------------------------------


def test_artifacts_follow_the_placement_rule(project, write_loop):
    write_loop()
    state = Engine(project).start("demo", "t", dry=dry(approve_all=True))
    rd = f".odin-loop/runs/{state.run_id}"
    assert state.artifacts == {"spec.md": f"{rd}/spec.md", "src/": "src/", "harness/": f"{rd}/harness/"}
    assert (project / "src").is_dir() and any((project / "src").iterdir())
    assert (project / rd / "spec.md").is_file()
    assert (project / ".odin-loop" / ".gitignore").read_text().splitlines()[1] == "*"


def gate_evidence(project, state, entry):
    """The evidence a history entry points to, read."""
    return evidence_store.read(project / ".odin-loop" / "runs" / state.run_id, entry.evidence)


def write_command_loop(write_loop, command):
    """Loop ``cmd``: one stage whose ai gate runs ``command`` before its judge."""
    write_loop(f"""
    name: cmd
    max_iterations: 1
    stages:
      - id: build
        produces: [out.md]
        gate: {{mode: ai, check: it builds, run: ["{command}"]}}
    """)


def test_gate_evidence_is_saved_and_referenced(project, write_loop):
    write_loop()
    state = Engine(project).start("demo", "t", dry=dry("test:fail", approve_all=True))
    for entry in state.history:
        if entry.gate == "approved":
            assert entry.evidence is None
            continue
        evidence = gate_evidence(project, state, entry)
        assert evidence["stage"] == entry.stage and evidence["passed"] == (entry.result == "pass")
    fail = next(e for e in state.history if e.result == "fail")
    assert gate_evidence(project, state, fail)["verdict"]["blocking"]


def test_a_failing_gate_command_fails_the_gate_whatever_the_judge_says(project, write_loop):
    write_command_loop(write_loop, "test -f ok.flag")
    state = Engine(project).start("cmd", "t", dry=DryOptions(run_commands=True))
    assert state.status == "failed"
    assert [h[:2] for h in hist(state)] == [("build", "fail"), ("build", "fail")]
    assert "gate command `test -f ok.flag` exited 1" in state.history[0].reason
    evidence = gate_evidence(project, state, state.history[0])
    assert evidence["judged"] is False and evidence["commands"][0]["exit_code"] == 1


def test_dry_runs_skip_gate_commands_unless_asked(project, write_loop):
    write_command_loop(write_loop, "exit 3")
    state = Engine(project).start("cmd", "t", dry=dry())
    assert state.status == "done"
    evidence = gate_evidence(project, state, state.history[0])
    assert evidence["commands_skipped"] is True and evidence["commands"] == []


def test_dry_gate_script_must_name_stages(project, write_loop):
    write_loop(LINEAR)
    with pytest.raises(UsageError, match="names no stage"):
        Engine(project).start("linear", "t", dry=dry("zz:fail"))
    with pytest.raises(UsageError):
        Engine(project).start("linear", "  ", dry=dry())


def test_the_run_keeps_its_own_copy_of_the_loop(project, write_loop):
    write_loop()
    engine = Engine(project)
    engine.start("demo", "t", dry=dry())
    (project / ".odin-loop" / "loops" / "demo.yaml").write_text("name: demo\nbroken: [")
    assert engine.run().status == "done"


def test_simulate_reports_the_path(project, write_loop):
    write_loop()
    result = simulate(project, "demo", "test:fail")
    assert result["path"] == ["spec", "implement", "test", "implement", "test"]
    assert result["status"] == "done" and result["iterations"] == {"test": 1} and result["total_iterations"] == 1
    assert [h["gate"] for h in result["history"]][:2] == ["ai-pending", "approved"]
    assert not (project / ".odin-loop" / "runs").exists()  # a throwaway directory was used


def test_a_status_snapshot_does_not_change_as_the_run_goes_on(project, write_loop):
    write_loop()
    engine = Engine(project)
    paused = engine.start("demo", "t", dry=dry("test:fail"))
    before = paused.to_json()
    engine.approve()
    assert paused.to_json() == before
    assert engine.status().to_json() != before


# -- the interview seam ----------------------------------------------------------------


def test_interview_stages_go_to_the_interview_runner(project, write_loop):
    """A plugged-in runner performs deep-interview stages and judges their gate; other stages use the worker."""
    from odin_magic.interview.runner import AwaitingAnswer
    from odin_magic.runs.state import InterviewSummary

    write_loop("""
    name: talk
    max_iterations: 3
    stages:
      - id: interview
        interview: {mode: deep}
        produces: [spec.md, interview-log.md]
        gate: {mode: ai, check: the stop condition holds}
      - id: build
        produces: [b.md]
        gate: {mode: ai, check: built}
    """)
    summary = InterviewSummary(threshold=0.15, rounds=1, ambiguity=0.4, topology=["A"])

    class Runner:
        """Stands in for the deep interview: asks once, then finishes."""

        def __init__(self):
            self.answers = []

        def __call__(self, session, job, sink):
            if session.answer is None:
                raise AwaitingAnswer(_question(), Usage(input_tokens=5), summary)
            self.answers.append(session.answer)
            for path in job.produces.values():
                path.write_text("done")
            return StageResult(usage=Usage(input_tokens=7))

        def judge(self, job, events):
            return JudgeResult(Verdict(passed=True, reasons=["computed stop condition"]))

    class Worker(MeteredWorker):
        def judge(self, job, events):
            assert job.stage.id != "interview", "the runner judges interview stages"
            return super().judge(job, events)

    events = Events()
    runner = Runner()
    engine = Engine(project, worker=Worker(1, 0.0), listener=events, interview_runner=runner)
    state = engine.start("talk", "t")
    assert state.status == "awaiting_answer" and state.current_stage == "interview"
    assert state.interview == summary and state.history == []
    assert events.kinds()[-2:] == ["question", "awaiting_answer"]
    with pytest.raises(RunRefused):
        engine.approve()
    state = engine.run()  # asks again, approves nothing
    assert state.status == "awaiting_answer" and events.kinds().count("question") == 2
    state = engine.answer("CSV files")
    assert runner.answers == ["CSV files"] and state.status == "done"
    assert [h[0] for h in hist(state)] == ["interview", "build"]
    assert state.usage.by_stage["interview"].input_tokens == 5 + 5 + 7
    with pytest.raises(NoActiveRun):
        engine.answer("more")


def _question():
    from odin_magic.interview.models import PendingQuestion

    fields = PendingQuestion.model_fields
    data = {"round": 1, "kind": "question", "text": "Which formats arrive?"}
    return PendingQuestion.model_validate({k: v for k, v in data.items() if k in fields})


def test_abandon_needs_no_model_worker(project, write_loop, monkeypatch):
    write_loop(LINEAR)

    engine = Engine(project, worker=MeteredWorker(1, 0.0))
    engine.listener = lambda e: e.kind == "gate_passed" and engine.request_stop()
    engine.start("linear", "t")
    monkeypatch.setenv("ODIN_SCRIPT", str(project / "missing.yaml"))  # no model worker can be built
    with pytest.raises(ConfigError):
        Engine(project).run()
    assert Engine(project).abandon().status == "abandoned"


def test_a_driver_in_another_process_is_named_in_the_refusal(project, write_loop):
    import subprocess

    write_loop(LINEAR)
    proc = subprocess.Popen(
        [sys.executable, "-m", "odin_magic", "run", "linear", "--task", "t", "--dry", "--stage-delay", "60",
         "--project", str(project)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        for line in proc.stdout:  # wait until it drives its first stage
            if line.startswith("▶ a"):
                break
        with pytest.raises(RunLocked) as refused:
            Engine(project).run()
        assert f"pid {proc.pid}" in str(refused.value) and "(`odin run linear --task t --dry" in str(refused.value)
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    state = Engine(project).abandon()  # the lock died with its holder
    assert state.status == "abandoned" and state.history == []


def test_front_ends_check_with_the_engines_own_rules(project, write_loop):
    """require_* are what the engine's actions check (the notebook runner checks with them before driving)."""
    from odin_magic.engine.orchestrator import require_stage, require_status, require_text

    write_loop()
    engine = Engine(project)
    paused = engine.start("demo", "build", dry=dry())
    require_status(paused, "approve")
    require_status(paused, "revise")
    with pytest.raises(RunRefused, match="no interview question is waiting"):
        require_status(paused, "answer")
    with pytest.raises(RunRefused, match="no interview question is waiting") as engine_says:
        engine.answer("yes")
    assert str(engine_says.value) == str(pytest.raises(RunRefused, require_status, paused, "answer").value)
    assert require_text("  more tests ", "revise") == "more tests"
    with pytest.raises(UsageError, match="revise needs feedback"):
        require_text(" ", "revise")
    with pytest.raises(UsageError, match="has no stage 'zz'(.|\n)*its stages: spec, implement, test"):
        require_stage(engine.loop_for(paused.run_id), "zz")
