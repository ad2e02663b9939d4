"""Issue 18 item 5: every ``%odin`` subcommand that returns a display object shows, as text/plain (a terminal
IPython, a text export of the notebook), what ``odin`` prints for the same command on the same project.

IPython's own display formatter gives the text/plain, as it does in a kernel. The CLI runs in-process on the
same project. Two differences are by design and stated here: ``odin simulate`` prints the dry run's events
as they happen before its summary (the notebook shows the summary: the test compares it with the end of
the CLI's output), and a hint names the front end's own commands (``%odin approve`` against ``odin approve``:
the test reads ``%odin`` as ``odin``).
"""

from __future__ import annotations

import contextlib
import io

import pytest

from odin_magic.cli import main
from odin_magic.learning.memory import Entry, Memory
from support.nbtools import write_tiny_loop

BROKEN = "name: broken\nmax_iterations: 2\nstages:\n  - id: only\n    goal: Do it.\n    gate: {mode: ai, chek: x}\n"


@pytest.fixture
def project(ip, tmp_path):
    write_tiny_loop(tmp_path)
    (tmp_path / "notes.txt").write_text("one\n")
    ip.run_line_magic("odin", f"config project={tmp_path}")
    yield tmp_path
    magics = ip.magics_manager.registry["OdinMagics"]
    magics.runner().stop()
    magics.runner().wait(30)
    magics.project = ""


def cli_text(project, line: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        main([*line.split(), "--project", str(project)])
    return out.getvalue().rstrip("\n")


def plain_text(ip, line: str) -> str:
    shown = ip.run_line_magic("odin", line)
    data, _ = ip.display_formatter.format(shown)
    return data["text/plain"].rstrip("\n")


def same_as_the_cli(ip, project, line: str) -> None:
    shown, printed = plain_text(ip, line).replace("%odin ", "odin "), cli_text(project, line)
    if line.startswith("simulate"):
        assert printed.endswith("\n" + shown), f"%odin {line}:\n{shown}\n--- odin {line}:\n{printed}"
    else:
        assert shown == printed, f"%odin {line}:\n{shown}\n--- odin {line}:\n{printed}"


ENDED = ("status", "status --history", "list", "runs", "validate", "show tiny", "simulate tiny", "diff",
         "diff write", "diff write --net", "memory", "doctor", "report", "refine", "refine tiny", "refine list")


@pytest.mark.parametrize("line", ENDED)
def test_a_run_that_ended(ip, project, line):
    assert main(["run", "tiny", "--task", "a task", "--dry", "--approve-all", "--project", str(project)]) == 0
    Memory(project).append([Entry("m-0000aaaa", "decision", "review", "20260101-120000-tiny",
                                  "2026-01-01T12:00:00", "a person asked: keep the notes short")])
    same_as_the_cli(ip, project, line)


PAUSED = ("status", "list", "runs", "validate", "show tiny", "diff")


@pytest.mark.parametrize("line", PAUSED)
def test_a_paused_run_and_an_invalid_loop(ip, project, line):
    assert main(["run", "tiny", "--task", "a task", "--dry", "--project", str(project)]) == 0
    (project / ".odin-loop" / "loops" / "broken.yaml").write_text(BROKEN)
    assert "awaiting_approval" in cli_text(project, "status --json")
    same_as_the_cli(ip, project, line)


ROADMAP = """\
# Ship the config loader
autonomy: hitl

## M1 Parse the file
- [ ] p1.1 Parse the config file
- [ ] p1.2 Report bad keys by line

## M2 Use it
- [ ] p2.1 Load the config at start-up — waiting on: the API schema
"""


@pytest.mark.parametrize("line", ["roadmap", "roadmap show", "roadmap validate", "roadmap validate broken.md"])
def test_a_roadmap_with_a_phase_run(ip, project, line):
    (project / ".odin-loop" / "roadmap.md").write_text(ROADMAP, encoding="utf-8")
    (project / "broken.md").write_text("# T\nautonomy: yolo\n- [ ] p0 early\n", encoding="utf-8")
    task = "roadmap phase p1.1: Parse the config file"
    assert main(["run", "tiny", "--task", task, "--dry", "--approve-all", "--project", str(project)]) == 0
    same_as_the_cli(ip, project, line)
    if line == "roadmap":
        shown = plain_text(ip, line)
        assert "p1.1 Parse the config file" in shown and "report: .odin-loop/runs/" in shown
        assert "waiting on: the API schema" in shown and "[#####-----] 1/2" in shown
