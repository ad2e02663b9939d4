"""Done means verified (issue 13 items 2, 3, 5): the acceptance criteria, the project's suite and the
mutation sensor decide, through the real SDK against the local fake Messages API with real commands."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from odin_magic.cli import main
from odin_magic.workers.config import Settings
from odin_magic.engine.orchestrator import Engine, WorkerFailed
from odin_magic.workers.claude import ClaudeWorker

from odin_magic.workers.scripted import message_body, new_id, reply_response
from odin_magic.runs import evidence as gate_evidence

from support.fake_messages import FakeMessages

LOOP = """
name: verified
max_iterations: 4
stages:
  - id: plan
    agent: planner
    produces: [acceptance.yaml]
    gate: {mode: ai, check: acceptance.yaml gives each criterion a verify command}
  - id: build
    agent: executor
    consumes: [acceptance.yaml]
    produces: [src/]
    gate: {mode: ai, check: src/calc.py implements add}
"""

MANIFEST = """\
criteria:
  - id: AC1
    priority: P0
    component: Arithmetic
    text: Given 2 and 3, when add is called, then it returns 5.
    verify: python -c "import sys; sys.path.insert(0, 'src'); import calc; assert calc.add(2, 3) == 5"
  - id: AC2
    priority: P1
    text: add has a docstring.
    verify: python -c "import sys; sys.path.insert(0, 'src'); import calc; assert calc.add.__doc__"
  - id: AC3
    priority: P1
    text: The code is easy to read.
    verify: judge
"""

WRONG = "def add(a, b):\n    return a - b\n"
RIGHT = "def add(a, b):\n    return a + b\n"


@pytest.fixture
def fake() -> FakeMessages:
    return FakeMessages()


def worker_for(fake: FakeMessages) -> ClaudeWorker:
    return ClaudeWorker(Settings(max_retries=0), client_factory=fake.factory(max_retries=0))


def in_run_dir(fake: FakeMessages, name: str, content: str) -> None:
    """The worker writes ``name`` into the run dir (named by the request's x-odin-run-dir header)."""
    def write(body: dict):
        run_rel = fake.requests[-1].headers["x-odin-run-dir"]
        content_blocks = [{"type": "tool_use", "id": new_id("toolu"), "name": "write",
                           "input": {"file_path": f"{run_rel}/{name}", "content": content}}]
        return reply_response(body, message_body(model=body["model"], content=content_blocks, stop_reason="tool_use",
                                                 usage={"input_tokens": 10, "output_tokens": 5}))

    fake.raw(write)


def write_file(fake: FakeMessages, path: str, content: str, verdict: bool = True) -> None:
    """One stage: the worker writes one file (a bare name goes to the run dir) and ends; the judge says pass."""
    if "/" in path:
        fake.tool("write", {"file_path": path, "content": content})
    else:
        in_run_dir(fake, path, content)
    fake.reply("done")
    fake.verdict(passed=verdict)


def plan(fake: FakeMessages, project: Path, manifest: str = MANIFEST) -> None:
    """The planner writes acceptance.yaml, with its verify commands, into the run dir."""
    write_file(fake, "acceptance.yaml", manifest)


def evidence(project: Path, state, n: int = -1) -> dict:
    run_dir = project / ".odin-loop" / "runs" / state.run_id
    return gate_evidence.read(run_dir, state.history[n].evidence)


def test_a_failing_p0_criterion_sends_the_run_back_to_work_then_done(project: Path, fake: FakeMessages, write_loop,
                                                                      capsys):
    write_loop(LOOP)
    plan(fake, project)
    write_file(fake, "src/calc.py", WRONG)  # the judge is fooled; the criterion is not
    fake.verdict(passed=True)  # AC3, judged
    write_file(fake, "src/calc.py", RIGHT)
    fake.verdict(passed=True)  # AC3 again

    state = Engine(project, worker=worker_for(fake)).start("verified", "add two numbers")

    assert state.status == "done", state.failure_reason
    results = [(h.stage, h.result) for h in state.history]
    assert results == [("plan", "pass"), ("build", "pass"), ("build", "fail"), ("build", "pass")]
    failed = state.history[2]
    assert failed.reason.startswith("before done: acceptance criteria failed: AC1")
    assert state.iterations == {"build": 1} and state.total_iterations == 1
    done = evidence(project, state)["completion"]
    assert done["passed"] is True
    assert [(c["id"], c["status"]) for c in done["criteria"]] == [("AC1", "pass"), ("AC2", "fail"), ("AC3", "pass")]
    # the judge of AC3 was asked as its own check, never in the worker's conversation
    judged = fake.bodies(purpose="judge", stage="acceptance-AC3")
    assert len(judged) == 2 and all(len(r.body["messages"]) == 1 for r in judged)
    # ... on its own criterion: without the stage's inputs, diff and tool log, which its stage's judge is shown
    stage_judged = fake.bodies(purpose="judge", stage="build")
    assert stage_judged and all("unified diff of its checkpoints" in str(r.body["messages"]) for r in stage_judged)
    assert not any("unified diff of its checkpoints" in str(r.body["messages"]) for r in judged)
    assert fake.pending == 0
    # odin status shows each criterion with its mark and evidence
    assert main(["status", "--project", str(project)]) == 0
    out = capsys.readouterr().out
    assert "before done (acceptance criteria, regression suite)" in out
    assert "✅ AC1 [P0] Given 2 and 3" in out and "❌ AC2 [P1] add has a docstring. — exit 1" in out
    report = (project / ".odin-loop" / "runs" / state.run_id / "report.md").read_text()
    assert "| ✅ | AC1 | P0 |" in report and "| ❌ | AC2 | P1 |" in report


def test_a_regression_in_an_untouched_test_module_loops_back(project: Path, fake: FakeMessages, write_loop):
    write_loop(LOOP.replace("produces: [acceptance.yaml]", "produces: [plan.md]").replace(
        "consumes: [acceptance.yaml]", "consumes: [plan.md]"))
    (project / "src").mkdir()
    (project / "src" / "util.py").write_text("def double(x):\n    return 2 * x\n")
    (project / "tests").mkdir()
    (project / "tests" / "test_util.py").write_text(textwrap.dedent("""\
        import sys, pathlib
        sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "src"))
        import util

        def test_double():
            assert util.double(2) == 4
    """))
    write_file(fake, "plan.md", "# plan\n")
    write_file(fake, "src/util.py", "def double(x):\n    return x + x + 1\n")  # breaks tests/test_util.py
    write_file(fake, "src/util.py", "def double(x):\n    return x + x\n")

    state = Engine(project, worker=worker_for(fake)).start("verified", "tidy util")

    assert state.status == "done", state.failure_reason
    failed = [h for h in state.history if h.result == "fail"]
    assert len(failed) == 1 and failed[0].stage == "build"
    assert "regression suite" in failed[0].reason and "tests/test_util.py::test_double" in failed[0].reason
    assert evidence(project, state)["completion"]["regression"]["passed"] is True


def test_a_verify_command_that_cannot_run_blocks_without_a_loopback(project: Path, fake: FakeMessages, write_loop):
    write_loop(LOOP)
    plan(fake, project, "criteria:\n  - id: AC1\n    priority: P0\n    text: t\n    verify: no_such_program_odin_x\n")
    write_file(fake, "src/calc.py", RIGHT)

    state = Engine(project, worker=worker_for(fake)).start("verified", "add two numbers")

    assert state.status == "blocked"
    assert state.total_iterations == 0 and state.iterations == {}
    assert state.blocked.kind == "environment" and "AC1" in state.blocked.reason
    assert "no_such_program_odin_x" in state.blocked.reason


def test_acceptance_required_without_a_manifest_blocks(project: Path, fake: FakeMessages, write_loop):
    write_loop(LOOP.replace("max_iterations: 4", "max_iterations: 4\nacceptance: required").replace(
        "produces: [acceptance.yaml]", "produces: [plan.md]").replace("consumes: [acceptance.yaml]", "consumes: [plan.md]"))
    write_file(fake, "plan.md", "# plan\n")
    write_file(fake, "src/calc.py", RIGHT)

    state = Engine(project, worker=worker_for(fake)).start("verified", "add two numbers")

    assert state.status == "blocked" and "no acceptance.yaml" in state.blocked.reason


MUTATE_LOOP = """
name: proven
max_iterations: 2
stages:
  - id: build
    agent: executor
    produces: [src/]
    gate: {mode: ai, check: the code exists}
  - id: test
    agent: executor
    consumes: [src/]
    produces: [report.md]
    gate:
      mode: ai
      check: the tests pass
      mutate: true
      run:
        - python -m pytest -q -p no:cacheprovider tests
"""

CALC = ('def divide(a, b):\n    if b == 0:\n        raise ValueError("zero")\n    return a / b\n\n\n'
        'def percent(part, whole):\n    if whole <= 0:\n        raise ValueError("whole must be positive")\n'
        '    return 100 * part / whole\n')
WEAK_TEST = ("import sys, pathlib\nsys.path.insert(0, str(pathlib.Path(__file__).parent.parent / 'src'))\n"
             "from calc import divide, percent\n\ndef test_divide():\n    assert divide(6, 3) == 2\n")
STRONG_TEST = WEAK_TEST + ("\nimport pytest\n\ndef test_zero():\n    with pytest.raises(ValueError):\n"
                           "        divide(1, 0)\n\ndef test_negative():\n    assert divide(-6, 3) == -2\n"
                           "\ndef test_percent():\n    assert percent(1, 4) == 25\n    assert percent(3, 1) == 300\n"
                           "    with pytest.raises(ValueError):\n        percent(1, 0)\n"
                           "    with pytest.raises(ValueError):\n        percent(1, -2)\n")


@pytest.mark.parametrize("tests, passes", [(WEAK_TEST, False), (STRONG_TEST, True)])
def test_a_weak_harness_fails_its_gate_on_the_kill_ratio(project: Path, fake: FakeMessages, write_loop,
                                                         tests: str, passes: bool):
    write_loop(MUTATE_LOOP.replace("max_iterations: 2", "max_iterations: 2\nregression: false"))
    (project / "tests").mkdir()
    (project / "tests" / "test_calc.py").write_text(tests)
    write_file(fake, "src/calc.py", CALC)
    in_run_dir(fake, "report.md", "all green")
    fake.reply("done")
    fake.verdict(passed=True)
    engine = Engine(project, worker=worker_for(fake))

    if passes:
        state = engine.start("proven", "divide")
    else:  # the gate fails and the run loops back to `test`, for which nothing more is queued
        with pytest.raises(WorkerFailed):
            engine.start("proven", "divide")
        state = engine.status()

    test_gate = evidence(project, state, 1)
    report = test_gate["mutation"]
    assert report["files"] == ["src/calc.py"] and report["tried"] >= 4
    if passes:
        assert state.status == "done" and report["ratio"] >= 0.6
    else:
        assert state.history[1].result == "fail" and report["ratio"] < 0.6
        assert "cannot tell good code from bad" in state.history[1].reason
        survivors = [r for r in report["results"] if not r["killed"]]
        assert survivors and all(r["diff"].startswith("--- a/src/calc.py") for r in survivors)
        assert f"the gate passes with {survivors[0]['description']}" in state.history[1].reason
    assert (project / "src" / "calc.py").read_text() == CALC  # mutants never touched the project


def test_a_loop_that_writes_no_code_has_nothing_to_verify(project: Path, fake: FakeMessages, write_loop):
    write_loop("""
        name: spec-only
        max_iterations: 2
        stages:
          - id: spec
            agent: planner
            produces: [acceptance.yaml]
            gate: {mode: ai, check: the criteria are testable}
    """)
    plan(fake, project, "criteria:\n  - id: AC1\n    priority: P0\n    text: t\n    verify: 'false'\n")

    state = Engine(project, worker=worker_for(fake)).start("spec-only", "specify")

    assert state.status == "done"
    assert evidence(project, state)["completion"]["manifest"].startswith("no stage of this run changed the project")


def test_a_stepped_last_stage_is_checked_before_its_approval_can_end_the_run(project: Path, write_loop):
    from odin_magic.runs.state import DryOptions

    write_loop("""
        name: stepped
        max_iterations: 3
        stages:
          - id: plan
            produces: [plan.md, acceptance.yaml]
            gate:
              mode: ai
              check: planned
              run:
                - |
                  printf 'criteria:\\n  - id: AC1\\n    priority: P0\\n    text: t\\n    verify: "false"\\n' > "$ODIN_RUN_DIR/acceptance.yaml"
          - id: build
            produces: [src/]
            gate: {mode: ai+human, check: built}
    """)
    engine = Engine(project)
    state = engine.start("stepped", "t", dry=DryOptions(run_commands=True, approve_all=False))
    assert state.current_stage == "build"
    engine.request_stop()  # the drive stops before build; step it instead
    state = engine.step("build")
    assert state.status != "awaiting_approval", "the checks before done ran at the step"
    assert state.history[-1].stage == "build" and state.history[-1].result == "fail"
    assert "AC1" in state.history[-1].reason


def test_an_unattended_stage_its_worker_cannot_complete_blocks_with_a_report(project: Path, fake: FakeMessages,
                                                                              write_loop):
    write_loop(LOOP.replace("produces: [acceptance.yaml]", "produces: [plan.md]").replace(
        "consumes: [acceptance.yaml]", "consumes: [plan.md]"))
    fake.error(500, "down")
    engine = Engine(project, worker=worker_for(fake))
    engine.unattended = True
    state = engine.start("verified", "add two numbers")
    assert state.status == "blocked" and state.blocked.kind == "unattended"
    assert "could not be completed" in state.blocked.reason
    assert (project / ".odin-loop" / "runs" / state.run_id / "report.md").is_file()
    write_file(fake, "plan.md", "# plan\n")  # a person's `odin run` retries the stage, then the run goes on
    write_file(fake, "src/calc.py", RIGHT)
    assert Engine(project, worker=worker_for(fake)).run().status == "done"


def test_the_checks_judge_the_stage_that_changed_the_project_not_the_one_that_declared_it(
        project: Path, fake: FakeMessages, write_loop):
    """An executor that edits code while declaring only its notes (bugfix's fix, keep-green's repair):
    the checkpoints say it changed the project, so a failure before done goes back to it."""
    write_loop("""
        name: repair
        max_iterations: 3
        stages:
          - id: repair
            agent: executor
            produces: [repair-notes.md]
            gate: {mode: ai, check: the notes map each change}
          - id: review
            agent: reviewer
            consumes: [repair-notes.md]
            produces: [review.md]
            gate: {mode: ai, check: no blocking finding}
    """)
    (project / "tests").mkdir()
    (project / "tests" / "test_calc.py").write_text(
        "import sys, pathlib\nsys.path.insert(0, str(pathlib.Path(__file__).parent.parent / 'src'))\n"
        "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    fake.tool("write", {"file_path": "src/calc.py", "content": WRONG})
    in_run_dir(fake, "repair-notes.md", "changed add")
    fake.reply("done")
    fake.verdict(passed=True)
    write_file(fake, "review.md", "fine")
    fake.tool("write", {"file_path": "src/calc.py", "content": RIGHT})
    in_run_dir(fake, "repair-notes.md", "fixed add")
    fake.reply("done")
    fake.verdict(passed=True)
    write_file(fake, "review.md", "fine")

    state = Engine(project, worker=worker_for(fake)).start("repair", "repair add")

    assert state.status == "done", state.failure_reason
    failed = [h for h in state.history if h.result == "fail"]
    assert [h.stage for h in failed] == ["repair"] and "tests/test_calc.py::test_add" in failed[0].reason
    assert evidence(project, state)["completion"]["code_stage"] == "repair"
