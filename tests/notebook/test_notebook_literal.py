"""In a real kernel: ``%odin`` / ``%%odin`` take their text literally (no ``{expr}`` / ``$var``
expansion), and a ``%%odin loop NAME`` cell writes nothing but ``.odin-loop/loops/NAME.yaml``
(issue 9, items 1 and 13)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.nbtools import INTERVIEW_SETUP, TINY_LOOP, Kernel, text_of, write_interview_project, write_tiny_loop

pytestmark = pytest.mark.slow


@pytest.fixture
def setup(tmp_path, monkeypatch):
    """A project (tiny loop, the interview loop and its script) one level below tmp_path, and a kernel in it."""
    project = tmp_path / "proj"
    project.mkdir()
    write_tiny_loop(project)
    write_interview_project(project, monkeypatch)
    k = Kernel(project)
    k.execute(INTERVIEW_SETUP)
    k.execute("x = 41")
    yield k, project
    k.shutdown()


def runs(project: Path) -> list[Path]:
    return sorted((project / ".odin-loop" / "runs").iterdir())


def one_line_usage_error(outputs: list[dict]) -> str:
    shown = text_of(outputs)
    assert shown.startswith("UsageError: ") and "Traceback" not in shown, shown
    assert len(shown.strip().splitlines()) == 1, shown
    assert not any(m["msg_type"] == "error" for m in outputs), "no traceback: a plain UsageError line"
    return shown


def test_tasks_feedback_and_answers_are_stored_exactly_as_typed(setup):
    k, project = setup
    k.execute('%odin run tiny --task "fix {x+1} and $x" --dry --wait')
    state = json.loads((runs(project)[-1] / "state.json").read_text())
    assert state["task"] == "fix {x+1} and $x" and state["status"] == "awaiting_approval"
    k.execute("%odin revise \"use {x} not $x\" --wait")
    k.execute("%%odin revise --wait\ncell {x} $x\n")
    log = (runs(project)[-1] / "events.jsonl").read_text()
    revised = [json.loads(line) for line in log.splitlines() if '"revised"' in line]
    assert [r["set"]["feedback"] for r in revised] == ["use {x} not $x", "cell {x} $x"]
    k.execute("%odin abandon")

    pwned = [project / name for name in ("pwned-line", "pwned-cell", "pwned-revise")]
    k.execute("%odin run tiny --task \"{__import__('os').system('touch pwned-line')}\" --dry --wait")
    assert json.loads((runs(project)[-1] / "state.json").read_text())["task"] == \
        "{__import__('os').system('touch pwned-line')}"
    k.execute("%odin revise \"{__import__('os').system('touch pwned-revise')}\" --wait")
    k.execute("%odin abandon")
    k.execute("%%odin task tiny --dry --gates \"{__import__('os').system('touch pwned-cell')}\"\nx\n",
              allow_error=True)
    assert not any(p.exists() for p in pwned)

    k.execute('%odin run talk --task "review bank CSV imports" --wait')
    k.execute("%odin answer defer Notifications; confirm --wait")
    k.execute('%odin answer "CSV from {x+1} banks, $x rows" --wait')
    talk = runs(project)[-1]
    stored = "\n".join(p.read_text(errors="replace") for p in talk.rglob("*") if p.is_file())
    assert "CSV from {x+1} banks, $x rows" in stored and "CSV from 42 banks" not in stored


def test_a_loop_cell_writes_only_the_named_loop_file(setup, tmp_path):
    k, project = setup
    precious = tmp_path / "important.yaml"
    precious.write_text("precious\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    loop = TINY_LOOP.replace("name: tiny", "name: mine")
    for name in ("../../../important", str(elsewhere / "x"), "a/b", "'a\\b'", "..", ".hidden", "-rf"):
        shown = one_line_usage_error(k.execute(f"%%odin loop {name}\n{loop}", allow_error=True))
        assert "not a loop name" in shown and ".odin-loop/loops/NAME.yaml" in shown
    assert precious.read_text() == "precious\n"
    assert list(elsewhere.iterdir()) == []
    assert sorted(p.name for p in (project / ".odin-loop" / "loops").iterdir()) == ["talk.yaml", "tiny.yaml"]

    shown = text_of(k.execute(f"%%odin loop mine\n{loop}"))
    assert "saved to .odin-loop/loops/mine.yaml" in shown
    # a mismatching `name` gets a hint with plain names only, never a path
    shown = text_of(k.execute("%%odin loop other\n" + loop.replace("name: mine", "name: ../../etc/evil")))
    assert "nothing saved" in shown and "etc/evil.yaml" not in shown and "rename the file to '../" not in shown
    assert not (project / ".odin-loop" / "loops" / "other.yaml").exists()


def test_a_loop_cell_never_writes_through_a_linked_loops_directory(setup, tmp_path):
    k, project = setup
    outside = tmp_path / "outside-loops"
    outside.mkdir()
    loops = project / ".odin-loop" / "loops"
    for p in loops.iterdir():
        p.unlink()
    loops.rmdir()
    loops.symlink_to(outside, target_is_directory=True)
    shown = one_line_usage_error(
        k.execute("%%odin loop mine\n" + TINY_LOOP.replace("name: tiny", "name: mine"), allow_error=True))
    assert ".odin-loop/loops is a symbolic link to " + str(outside) in shown
    assert list(outside.iterdir()) == []
