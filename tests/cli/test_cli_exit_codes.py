"""The built-in loops' exit codes for each way a run can end (issue 21, item 5): done 0, failed 1, blocked 3.

Dry runs of the loops in ``loops/`` with scripted gate outcomes (``--gates``): ``keep-green`` unattended
through the real ``odin`` command (a subprocess, as a scheduler runs it); ``bugfix`` and
``spec-harness-tdd`` wait for a person, so ``--unattended`` refuses them and they are driven attended with
``--approve-all`` through the CLI's own ``main``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from odin_magic.cli import main


def state_of(project: Path) -> dict:
    (run,) = (project / ".odin-loop" / "runs").iterdir()
    return json.loads((run / "state.json").read_text(encoding="utf-8"))


def odin_process(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "odin_magic", *args, "--project", str(project)],
                          capture_output=True, text=True, timeout=300)


# keep-green: max_no_progress 3, max_repeats 3 (the default), max_iterations 8
KEEP_GREEN = [
    # nothing fails: done
    ("", 0, "done", None),
    # verify fails, passes for the first time, then review and verify take turns failing: three loopbacks
    # without a new gate passing, never the same failure twice in a row: the run has failed
    ("verify:fail,verify:concerns,verify:fail,review:fail,review:fail", 1, "failed", "no progress: 3"),
    # the same failure three times: a person must look (it reaches max_no_progress 3 too)
    ("verify:fail,verify:fail,verify:fail", 3, "blocked", "repeated"),
    # the judge says something outside the work stops it
    ("review:blocked", 3, "blocked", "judge"),
]


@pytest.mark.slow
@pytest.mark.parametrize("gates,code,status,why", KEEP_GREEN, ids=["done", "failed", "repeated", "judge-blocked"])
def test_keep_green_unattended_exit_codes(project, gates, code, status, why):
    proc = odin_process(project, "run", "keep-green", "--task", "keep main green", "--unattended", "--dry",
                        *(["--gates", gates] if gates else []))
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    state = state_of(project)
    assert state["status"] == status
    if status == "failed":
        assert why in state["failure_reason"]
    elif status == "blocked":
        assert state["blocked"]["kind"] == why and "⛔" in proc.stdout
    assert (Path(project) / ".odin-loop" / "runs" / state["run_id"] / "report.md").is_file()


def run_attended(capsys, project: Path, loop: str, gates: str) -> tuple[int, str]:
    code = main(["run", loop, "--task", "t", "--dry", "--approve-all", *(["--gates", gates] if gates else []),
                 "--project", str(project)])
    return code, capsys.readouterr().out


# bugfix: max_no_progress 4, max_iterations 10; test and review loop back to fix
# spec-harness-tdd: max_no_progress 6, max_iterations 15; test and review loop back to implement
ATTENDED = [
    ("bugfix", "", 0, "done", None),
    ("bugfix", "test:fail,test:concerns,test:fail,test:concerns,test:fail,review:fail,review:fail",
     1, "failed", "no progress: 4"),
    ("bugfix", "test:fail,test:fail,test:fail", 3, "blocked", "repeated"),
    ("bugfix", "fix:blocked", 3, "blocked", "judge"),
    ("spec-harness-tdd", "", 0, "done", None),
    ("spec-harness-tdd", "test:fail,test:concerns,test:fail,test:concerns,test:fail,test:concerns,test:fail,"
     "review:fail,review:fail,review:fail", 1, "failed", "no progress: 6"),
    ("spec-harness-tdd", "harness-verify:fail,harness-verify:fail,harness-verify:fail", 3, "blocked", "repeated"),
    ("spec-harness-tdd", "plan:blocked", 3, "blocked", "judge"),
]


@pytest.mark.parametrize("loop,gates,code,status,why", ATTENDED,
                         ids=[f"{a[0]}-{a[3]}-{a[4] or 'ok'}" for a in ATTENDED])
def test_attended_builtin_loops_exit_codes(capsys, project, loop, gates, code, status, why):
    got, out = run_attended(capsys, project, loop, gates)
    assert got == code, out
    state = state_of(project)
    assert state["status"] == status
    if status == "failed":
        assert why in state["failure_reason"]
    elif status == "blocked":
        assert state["blocked"]["kind"] == why


@pytest.mark.parametrize("loop", ["bugfix", "spec-harness-tdd"])
def test_loops_that_wait_for_a_person_are_refused_unattended(capsys, project, loop):
    code = main(["run", loop, "--task", "t", "--unattended", "--dry", "--project", str(project)])
    err = capsys.readouterr().err
    assert code == 1 and "cannot run unattended" in err
    assert not (project / ".odin-loop" / "runs").is_dir() or not any((project / ".odin-loop" / "runs").iterdir())
