"""What "done" means: the acceptance manifest's criteria and the regression suite, checked before a run ends.

When the last stage's gate passes, and before the run is marked done (or pauses
for the last approval), :func:`verify_completion` runs

1. every criterion of the run's ``acceptance.yaml`` (:mod:`odin_magic.loop.manifest`):
   a ``verify`` command decides it by its exit code, ``verify: judge`` asks the
   judge (never the worker that did the work); P0 failures block completion,
   P1 failures are reported;
2. the project's whole test suite once (:mod:`odin_magic.engine.regression`).

A failure sends the run back to the last stage that produces code, as a gate
failure of that stage with the failing criteria or tests in its reason. A
command that could not run at all (missing program or module, permission
denied, timeout) is an *environment* problem, not a failed criterion.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from odin_magic.engine.judging import decide
from odin_magic.engine.regression import could_not_run
from odin_magic.interview.ledger import interview_criteria_ids
from odin_magic.loop.schema import GateCommand, Loop, Stage
from odin_magic.loop.manifest import (
    MANIFEST_NAME, Criterion, ManifestInvalid, load_manifest
)
from odin_magic.engine.regression import failing_tests, suite_for
from odin_magic.runs.completion_report import (  # noqa: F401 - handed on: engine.completion's names
    CompletionReport, CriterionResult, CriterionStatus, RegressionResult, from_dict
)
from odin_magic.engine.routing import environment_problem
from odin_magic.workers.base import CommandEvidence, JudgeResult

DEFAULT_VERIFY_TIMEOUT = 600.0
DETAIL_CHARS = 600

#: runs one command: the gate's own runner (process group, timeout, output tails)
CommandRunner = Callable[[GateCommand], CommandEvidence]
#: asks the judge about one criterion
CriterionJudge = Callable[[Criterion], JudgeResult]


def _detail(ev: CommandEvidence) -> str:
    last = (ev.stderr_tail.strip() or ev.stdout_tail.strip()).splitlines()[-3:]
    return f"exit {ev.exit_code}" + (": " + " | ".join(last) if last else "")


def _check_command(crit: Criterion, run: CommandRunner) -> CriterionResult:
    ev = run(GateCommand(cmd=crit.verify, timeout=crit.timeout or DEFAULT_VERIFY_TIMEOUT))
    base = dict(id=crit.id, priority=crit.priority, text=crit.text, verify=crit.verify, component=crit.component,
                duration_s=ev.duration_s)
    if ev.ok:
        return CriterionResult(status="pass", **base)
    problem = environment_problem(ev)
    if problem is not None:
        return CriterionResult(status="could-not-run", detail=problem[0][:DETAIL_CHARS], **base)
    return CriterionResult(status="fail", detail=_detail(ev)[:DETAIL_CHARS], **base)


def _check_by_judge(crit: Criterion, judge: CriterionJudge, report: CompletionReport) -> CriterionResult:
    result = judge(crit)
    report.judge_usage = report.judge_usage + result.usage
    ok, why = decide(result.verdict)  # the findings and the status decide, not the verdict's boolean
    detail = "" if ok else (why or "the judge found it unmet")
    return CriterionResult(id=crit.id, priority=crit.priority, text=crit.text, verify=crit.verify,
                           component=crit.component, status="pass" if ok else "fail", detail=detail[:DETAIL_CHARS])


def check_manifest(loop: Loop, run_dir: Path, run: CommandRunner | None, judge: CriterionJudge,
                   report: CompletionReport, dry: bool = False) -> None:
    mode = loop.acceptance
    if mode == "off":
        report.manifest = "acceptance criteria: off for this loop"
        return
    try:
        manifest = load_manifest(run_dir, interview_criteria_ids(run_dir))
    except ManifestInvalid as exc:
        if dry:  # a dry run's placeholder is no manifest: nothing a person must fix
            report.manifest = f"{MANIFEST_NAME}: a dry run's placeholder, not checked"
            return
        report.manifest = f"{MANIFEST_NAME}: invalid"
        report.problems.append((f"{MANIFEST_NAME} is not a valid manifest: {exc.message}",
                                f"fix {MANIFEST_NAME} in the run dir (`odin validate-manifest` lists every problem), "
                                "then `odin run`"))
        return
    if manifest is None:
        if mode == "required":
            report.manifest = f"no {MANIFEST_NAME}"
            report.problems.append((f"the loop requires acceptance criteria but the run has no {MANIFEST_NAME}",
                                    f"write {MANIFEST_NAME} in the run dir (the deep interview writes it), then `odin run`"))
        else:
            report.manifest = f"no {MANIFEST_NAME}: done is decided by the gates alone"
        return
    report.manifest = f"{MANIFEST_NAME}: {len(manifest.criteria)} criteria " \
                      f"({len(manifest.of_priority('P0'))} P0, {len(manifest.of_priority('P1'))} P1)"
    for crit in manifest.of_priority("P0") + manifest.of_priority("P1"):
        if crit.by_judge:
            report.criteria.append(_check_by_judge(crit, judge, report))
        elif run is None:
            report.criteria.append(CriterionResult(crit.id, crit.priority, crit.text, crit.verify, "skipped",
                                                   "not run (dry run without --run-commands)", crit.component))
        else:
            result = _check_command(crit, run)
            report.criteria.append(result)
            if result.status == "could-not-run":
                report.problems.append((f"acceptance criterion {crit.id}'s verify command could not run: {result.detail}",
                                        f"fix the command of {crit.id} in {MANIFEST_NAME} or install what it needs"))


def check_regression(loop: Loop, project_dir: Path, run: CommandRunner | None, report: CompletionReport) -> None:
    suite = suite_for(loop.regression, project_dir)
    if suite is None:
        why = "turned off by the loop" if loop.regression is False else "no test suite detected in the project"
        report.regression = RegressionResult(command=None, why=why)
        return
    if run is None:
        report.regression = RegressionResult(command=suite.command.cmd, why="not run (dry run without --run-commands)")
        return
    ev = run(suite.command)
    result = RegressionResult(command=suite.command.cmd, why=suite.why, ran=True, passed=ev.ok, exit_code=ev.exit_code,
                              tail=(ev.stdout_tail + ev.stderr_tail)[-2000:])
    if not ev.ok and suite.command.cmd.startswith("python -m pytest") and ev.exit_code == 5:
        result.passed, result.why = True, "pytest collected no test: no suite to run"
    elif not ev.ok:
        problem = environment_problem(ev)
        if problem is not None:
            result.could_not_run = True
            report.problems.append(could_not_run(suite, problem))
        result.failing = failing_tests(ev.stdout_tail + "\n" + ev.stderr_tail)
    report.regression = result


@dataclass(frozen=True)
class CompletionCheck:
    """What the checks before done look at: the run's loop and directory, the project, the code stage."""

    loop: Loop
    run_dir: Path
    project_dir: Path
    code: Stage | None
    dry: bool = False


def verify_completion(check: CompletionCheck, run: CommandRunner | None, judge: CriterionJudge) -> CompletionReport:
    """Check the run's acceptance criteria and the project's suite (see the module docstring);
    ``run`` None (a dry run that runs no command) skips every command and reports it skipped.
    ``code`` is the stage a failure goes back to (:func:`code_stage`); without one (a spec-only loop,
    a run that changed nothing of the project) there is no code to verify."""
    loop, run_dir, project_dir, code, dry = check.loop, check.run_dir, check.project_dir, check.code, check.dry
    report = CompletionReport(code_stage=code.id if code is not None else None)
    if code is None:
        report.manifest = "no stage of this run changed the project: there is no code to verify"
        return report
    check_manifest(loop, run_dir, run, judge, report, dry)
    check_regression(loop, project_dir, run, report)
    return report


def changed_stages(run_dir: Path, history: list, look_back: int = 50) -> list[str]:
    """Stage ids, oldest first, whose recent executions changed files of the project (their evidence's
    ``changes``, from the checkpoints); the run's own notebooks do not count."""
    from odin_magic.runs import evidence

    out = []
    with evidence.EvidenceReader(Path(run_dir)) as reader:
        for entry in history[-look_back:]:
            if not entry.evidence or entry.gate == "approved":
                continue
            try:
                changes = reader.read_entry(entry).get("changes") or []
            except (OSError, ValueError, AttributeError):
                continue
            if any(isinstance(c, dict) and not str(c.get("path", "")).endswith(".ipynb") for c in changes):
                out.append(entry.stage)
    return out


def code_stage(loop: Loop, upto: str | None = None, changed: list[str] | None = None) -> Stage | None:
    """The stage whose work the checks before done judge: the last stage (at or before ``upto``) that
    actually changed the project (``changed``, from the checkpoints), else the last executor stage that
    declares a project-tree artifact, else any stage that does; None when nothing writes the project."""
    from odin_magic.loop.artifacts import in_run_dir

    stages = loop.stages
    if upto is not None:
        stages = stages[: loop.stage_ids().index(upto) + 1]
    ids = {s.id for s in stages}
    for sid in reversed(changed or []):
        if sid in ids:
            return loop.stage(sid)
    writers = [s for s in stages if any(not in_run_dir(p) for p in s.produces)]
    executors = [s for s in writers if s.resolved_agent.role == "executor"]
    return (executors or writers or [None])[-1]


def criterion_judge(judge, make_job, sink) -> CriterionJudge:
    """Ask ``judge`` (the gate's judge: never the worker that did the work) about one criterion, as the
    check of a synthetic stage ``acceptance-<id>`` that sees the code stage's artifacts."""
    from odin_magic.loop.schema import Gate

    def ask(crit: Criterion) -> JudgeResult:
        stage = Stage(id=f"acceptance-{crit.id}", title=f"acceptance criterion {crit.id}",
                      goal=crit.text, gate=Gate(mode="ai", check=f"{crit.id}: {crit.text}"))
        return judge.judge(make_job(stage), sink)

    return ask


def latest(run_dir: Path, history: list, look_back: int = 20) -> CompletionReport | None:
    """The run's last checks before done (from its last gate evidence that has them), for ``status``;
    reads at most ``look_back`` evidence files, newest first."""
    from odin_magic.runs import evidence

    with evidence.EvidenceReader(Path(run_dir)) as reader:
        for entry in reversed(history[-look_back:]):
            if not entry.evidence:
                continue
            try:
                data = reader.read_entry(entry).get("completion")
                if data:
                    return from_dict(data)
            except (OSError, ValueError, AttributeError, TypeError):  # a damaged evidence file: look further back
                continue
    return None
