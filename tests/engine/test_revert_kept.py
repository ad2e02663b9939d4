"""``odin revert`` keeps what it says it kept (issue 20, part 5): a path the user changed after the run is left
as the user left it, and so is what cannot be restored without undoing it (a file the stage deleted from a
folder the user has since replaced by a link): real engine, Claude worker and SDK against the scripted model,
real git checkpoints."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from support.scripted_runs import scripted_engine

LOOP = """
name: docs
max_iterations: 3
stages:
  - id: write
    produces: [docs/]
    gate: {mode: ai+human, check: written}
"""

SCRIPT = """
stages:
  write:
    - tools:
        - bash: {command: "rm docs/old.md && echo new > docs/index.md && echo two > app.py"}
    - text: written
default_verdict: {status: DONE, passed: true}
"""


def seed(project: Path) -> None:
    (project / "docs").mkdir()
    (project / "docs" / "index.md").write_text("index\n")
    (project / "docs" / "old.md").write_text("old\n")
    (project / "app.py").write_text("one\n")


def reverted_note(events: list):
    return [e for e in events if e.kind == "reverted"][-1]


def test_a_link_the_user_put_in_place_of_a_folder_is_kept(project, write_loop, tmp_path):
    write_loop(LOOP)
    seed(project)
    engine, _ = scripted_engine(project, SCRIPT)
    engine.start("docs", "t")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "mine.md").write_text("mine\n")
    shutil.rmtree(project / "docs")
    os.symlink(elsewhere, project / "docs")  # by hand, after the stage: docs -> elsewhere
    events: list = []
    engine.listener = events.append
    state = engine.revert("write")
    assert (project / "docs").is_symlink() and os.readlink(project / "docs") == str(elsewhere)
    assert sorted(os.listdir(elsewhere)) == ["mine.md"]  # nothing written through the link
    assert (project / "app.py").read_text() == "one\n"  # the rest reverted
    note = reverted_note(events)
    assert "kept your changes to docs," in note.text and "docs" in note.data["kept"]
    assert note.data["restored"] == ["app.py"] and "docs/old.md" in note.data["kept"]
    assert state.current_stage == "write"
    engine.revert("write", force=True)
    assert not (project / "docs").is_symlink() and (project / "docs" / "old.md").read_text() == "old\n"
    assert (elsewhere / "mine.md").read_text() == "mine\n"


def test_a_file_the_user_put_where_the_stage_removed_a_link_is_kept(project, write_loop):
    write_loop(LOOP)
    (project / "app.py").write_text("one\n")
    (project / "manual").mkdir()
    (project / "manual" / "guide.md").write_text("guide\n")
    os.symlink("manual", project / "docs")
    engine, _ = scripted_engine(project, SCRIPT.replace("rm docs/old.md && echo new > docs/index.md",
                                                        "rm docs && mkdir docs && echo new > docs/index.md"))
    engine.start("docs", "t")
    (project / "docs" / "mine.md").write_text("mine\n")  # by hand, in the folder the stage made
    events: list = []
    engine.listener = events.append
    engine.revert("write")
    assert not (project / "docs").is_symlink() and (project / "docs" / "mine.md").read_text() == "mine\n"
    assert sorted(os.listdir(project / "manual")) == ["guide.md"]
    assert not (project / "docs" / "index.md").exists()  # the stage's file reverted
    assert (project / "app.py").read_text() == "one\n"
    note = reverted_note(events)
    assert note.data["kept"] == ["docs", "docs/mine.md"]
    assert sorted(note.data["restored"]) == ["app.py", "docs/index.md"]
