"""Nothing escapes the project (issue 9, items 1-3): a name is not a path, and a symbolic link
never carries a read or a write outside the project or the run dir.

Model calls go through the real SDK against the local fake Messages API; every recorded
request body is searched for the outside content.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from support.fake_messages import FakeMessages
from support.nbtools import write_tiny_loop
from odin_magic.learning import memory
from odin_magic.authoring.new_loop import loop_path
from odin_magic.core.errors import UsageError
from odin_magic.workers.config import Settings
from odin_magic.core.confine import PathEscapes
from odin_magic.engine.orchestrator import Engine
from odin_magic.interview.claude import project_digest
from odin_magic.learning.memory import Memory
from odin_magic.loop.roles import persona_override_path
from odin_magic.runs.state import DryOptions
from odin_magic.runs.store import RunNotFound, RunStore
from odin_magic.loop.validation import validate_text
from odin_magic.notebook.widgets import artifact_previews
from odin_magic.workers.claude import ClaudeWorker

SECRET = "TOP-SECRET-outside-the-project-7731"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the project, with a secret file in it."""
    d = tmp_path / "outside"
    d.mkdir()
    (d / "secret.txt").write_text(SECRET + "\n")
    return d


def worker_for(fake: FakeMessages) -> ClaudeWorker:
    return ClaudeWorker(Settings(max_retries=0), client_factory=fake.factory(max_retries=0))


def everything_sent(fake: FakeMessages) -> str:
    return "\n".join(json.dumps(r.body, ensure_ascii=False) for r in fake.requests)


def tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


# -- item 2: writes through a symbolic link -------------------------------------------------------


def test_a_dry_run_never_writes_placeholders_or_directories_through_a_link(project, outside, write_loop):
    write_loop("""
        name: links
        max_iterations: 2
        stages:
          - id: build
            produces: [src/, docs/api/index.md]
            gate: {mode: ai, check: built}
    """)
    (outside / "src").mkdir()
    (project / "src").symlink_to(outside / "src", target_is_directory=True)
    (project / "docs").symlink_to(outside, target_is_directory=True)
    before = tree(outside)
    engine = Engine(project)
    with pytest.raises(PathEscapes) as caught:
        engine.start("links", "anything", dry=DryOptions())
    message = caught.value.message
    assert "stage 'build'" in message and "symbolic link" in message
    assert ("src is a symbolic link to " + str(outside / "src")) in message  # the link and its target
    assert tree(outside) == before  # no placeholder, no docs/api directory
    state = engine.active()
    assert state is not None and state.status == "running" and state.current_stage == "build"  # resumable

    (project / "src").unlink()  # the user replaces the link with a real directory ...
    (project / "src").mkdir()
    with pytest.raises(PathEscapes, match=r"docs is a symbolic link to "):  # ... the other link is still refused
        engine.run()
    (project / "docs").unlink()
    assert engine.run().status == "done"  # ... and the run resumes where it stopped
    assert (project / "src" / "PLACEHOLDER.md").is_file() and (project / "docs" / "api" / "index.md").is_file()
    assert tree(outside) == before


def test_a_dangling_link_and_a_link_in_the_run_dir_are_refused_too(project, outside, write_loop):
    write_loop("""
        name: dangling
        max_iterations: 2
        stages:
          - id: build
            produces: [out/report.md]
            gate: {mode: ai, check: written}
    """)
    (project / "out").symlink_to(outside / "not-yet")  # points nowhere yet: mkdir would create it outside
    with pytest.raises(PathEscapes, match="out is a symbolic link to"):
        Engine(project).start("dangling", "anything", dry=DryOptions())
    assert not (outside / "not-yet").exists()


# -- item 2: reads into a prompt ---------------------------------------------------------------------


def test_a_consumes_file_linked_outside_never_reaches_the_api(project, outside, write_loop):
    write_loop("""
        name: reader
        max_iterations: 2
        stages:
          - id: read
            agent: reviewer
            consumes: [input/notes.md]
            produces: [review.md]
            gate: {mode: ai, check: reviewed}
    """)
    (project / "input").mkdir()
    (project / "input" / "notes.md").symlink_to(outside / "secret.txt")
    fake = FakeMessages()
    fake.reply("done")
    fake.verdict(passed=True, reasons=["ok"])
    engine = Engine(project, worker=worker_for(fake))
    with pytest.raises(PathEscapes) as caught:
        engine.start("reader", "review the notes")
    assert f"input/notes.md is a symbolic link to {outside / 'secret.txt'}" in caught.value.message
    assert SECRET not in everything_sent(fake)
    assert fake.pending == 2  # refused before any request


def test_files_linked_outside_inside_a_directory_artifact_are_not_read_into_either_brief(project, outside, write_loop):
    write_loop("""
        name: dirs
        max_iterations: 2
        stages:
          - id: review
            agent: reviewer
            consumes: [src/]
            gate: {mode: ai, check: reviewed}
          - id: polish
            produces: [src/]
            gate: {mode: ai, check: src is tidy}
    """)
    (project / "src").mkdir()
    (project / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (project / "src" / "leak.txt").symlink_to(outside / "secret.txt")
    fake = FakeMessages()
    fake.reply("reviewed")
    fake.verdict(passed=True, reasons=["ok"])
    fake.reply("polished")
    fake.verdict(passed=True, reasons=["ok"])
    state = Engine(project, worker=worker_for(fake)).start("dirs", "add numbers")
    assert state.status == "done", state
    sent = everything_sent(fake)
    assert SECRET not in sent
    assert "return a + b" in sent  # the real file is read
    stage_brief = json.dumps(fake.requests[0].body["messages"])
    judge_brief = json.dumps(fake.requests[-1].body["messages"])
    for brief in (stage_brief, judge_brief):
        assert "not read: src/leak.txt is a symbolic link to " + str(outside / "secret.txt") in brief


def test_a_link_the_stage_itself_puts_where_an_artifact_belongs_is_refused_before_the_judge(project, outside, write_loop):
    write_loop("""
        name: sneaky
        max_iterations: 2
        stages:
          - id: build
            produces: [out/report.md]
            gate: {mode: ai, check: report written}
    """)
    fake = FakeMessages()
    fake.tool("bash", {"command": f"mkdir -p out && ln -s {outside / 'secret.txt'} out/report.md && echo linked"})
    fake.reply("done")
    fake.verdict(passed=True, reasons=["ok"])
    engine = Engine(project, worker=worker_for(fake))
    with pytest.raises(PathEscapes, match="out/report.md is a symbolic link to"):
        engine.start("sneaky", "write the report")
    assert fake.pending == 1  # the judge was never asked
    assert SECRET not in everything_sent(fake)
    assert engine.active().status == "running"


# -- item 3: control characters and run ids -----------------------------------------------------------


@pytest.mark.parametrize("entry, shown", [
    (r"a\0b.md", "U+0000"), (r"a\nb.md", "U+000A"), (r"src\t/", "U+0009"), (r"x\x7f.md", "U+007F"),
    (r"x\u2028y.md", "U+2028"),
])
def test_the_validator_refuses_control_characters_in_artifact_paths_at_their_line(entry, shown):
    text = f'name: ctl\nmax_iterations: 2\nstages:\n  - id: a\n    produces: ["{entry}"]\n    gate: {{mode: ai, check: ok}}\n'
    report = validate_text(text, "ctl.yaml", expected_name="ctl")
    assert [(d.line, d.field) for d in report.errors] == [(5, "stages[0].produces[0]")]
    assert shown in report.errors[0].message and "control character" in report.errors[0].message


def test_a_run_with_a_nul_in_an_artifact_never_starts(project, write_loop):
    write_loop('name: nul\nmax_iterations: 2\nstages:\n  - id: a\n    produces: ["a\\0b.md"]\n'
               '    gate: {mode: ai, check: ok}\n')
    proc = subprocess.run([sys.executable, "-m", "odin_magic", "run", "nul", "--task", "x", "--dry"],
                          cwd=project, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr and "embedded null byte" not in proc.stderr + proc.stdout
    assert "control character (U+0000)" in proc.stderr + proc.stdout


@pytest.mark.parametrize("run_id", ["..", "../..", "../other/.odin-loop/runs/x", "/etc", "a/b", "a\\b", "x\n", ""])
def test_a_run_id_is_a_name_never_a_path(project, run_id):
    with pytest.raises(RunNotFound, match="is not a run id"):
        RunStore(project).run_dir(run_id)


def test_odin_status_run_takes_a_run_id_only(project, tmp_path, write_loop, capsys, monkeypatch):
    """In-process (odin_magic.cli.main, as the `odin` binary calls it): an exception it let through would fail
    the test as a traceback in the process's output would."""
    from odin_magic.cli import main

    write_loop()
    other = tmp_path / "other"  # another project with a run: never reachable by a relative or absolute path
    other.mkdir()
    write_loop(into=other)
    monkeypatch.chdir(other)
    assert main(["run", "demo", "--task", "x", "--dry", "--approve-all"]) == 0
    run_dir = next((other / ".odin-loop" / "runs").iterdir())
    monkeypatch.chdir(project)
    capsys.readouterr()
    for given in (f"../../../other/.odin-loop/runs/{run_dir.name}", str(run_dir), "../../.odin-loop"):
        code = main(["status", "--run", given])
        stdout, stderr = capsys.readouterr()
        out = stdout + stderr
        assert code != 0 and "is not a run id" in out and "Traceback" not in out, out
        assert "done" not in stdout


def test_the_name_mismatch_hint_never_suggests_a_path():
    text = "name: ../../etc/evil\nmax_iterations: 2\nstages:\n  - id: a\n    gate: {mode: ai, check: ok}\n"
    report = validate_text(text, "mine.yaml", expected_name="mine")
    hints = " ".join(d.fix or "" for d in report.errors + report.warnings)
    assert "/" not in hints and "evil.yaml" not in hints
    plain = validate_text(text.replace("../../etc/evil", "other"), "mine.yaml", expected_name="mine")
    assert any("rename the file to 'other.yaml'" in (d.fix or "") for d in plain.warnings)


def test_a_persona_override_linked_outside_is_refused_before_any_request(project, outside, write_loop):
    write_loop("""
        name: persona
        max_iterations: 2
        stages:
          - id: look
            agent: reviewer
            consumes: [notes/]
            gate: {mode: ai, check: looked}
    """)
    (project / "notes").mkdir()
    (project / "notes" / "a.md").write_text("notes")
    override = persona_override_path(project, "reviewer")
    override.parent.mkdir(parents=True)
    override.symlink_to(outside / "secret.txt")
    fake = FakeMessages()
    fake.reply("done")
    fake.verdict(passed=True, reasons=["ok"])
    with pytest.raises(PathEscapes, match=r"reviewer persona override: refused, \.odin-loop/agents/reviewer\.md is a "):
        Engine(project, worker=worker_for(fake)).start("persona", "look")
    assert SECRET not in everything_sent(fake) and fake.pending == 2


def test_the_interviews_project_digest_skips_files_linked_outside(project, outside):
    (project / "app.py").write_text("print('inside')\n")
    (project / "leak.py").symlink_to(outside / "secret.txt")
    digest = project_digest(project)
    assert "print('inside')" in digest and SECRET not in digest and "leak.py" not in digest


def test_project_memory_linked_outside_is_neither_read_into_a_prompt_nor_appended_to(project, outside, tmp_path,
                                                                                    write_loop):
    elsewhere = tmp_path / "elsewhere"
    lesson = memory._entry("lesson", "build", "20260101-000000-x", "2026-01-01T00:00:00", SECRET)
    Memory(elsewhere).append([lesson])
    outside_memory = elsewhere / ".odin-loop" / "memory"
    before = (outside_memory / "lessons.md").read_text()
    assert SECRET in before
    (project / ".odin-loop").mkdir()
    (project / ".odin-loop" / "memory").symlink_to(outside_memory, target_is_directory=True)
    write_loop("""
        name: remembers
        max_iterations: 2
        stages:
          - id: build
            produces: [docs/out.md]
            gate: {mode: ai, check: written}
    """)
    fake = FakeMessages()
    fake.reply("built")
    fake.verdict(passed=True, reasons=["ok"])
    with pytest.raises(PathEscapes, match=r"\.odin-loop/memory is a symbolic link to "):
        Engine(project, worker=worker_for(fake)).start("remembers", "write")
    assert SECRET not in everything_sent(fake) and fake.pending == 2
    with pytest.raises(PathEscapes):
        Memory(project).append([memory._entry("lesson", "build", "r", "2026-01-02T00:00:00", "new")])
    assert (outside_memory / "lessons.md").read_text() == before


def test_the_approval_panels_preview_never_reads_through_a_link_out(project, outside):
    write_tiny_loop(project)
    state = Engine(project).start("tiny", "notes", dry=DryOptions())
    assert state.status == "awaiting_approval"
    review = project / state.artifacts["review.md"]
    review.unlink()
    review.symlink_to(outside / "secret.txt")
    [(name, text)] = artifact_previews(state, project, ["review.md"])
    assert SECRET not in text and "is a symbolic link to " + str(outside / "secret.txt") in text


@pytest.mark.parametrize("name", ["mine\n", "../mine", "/tmp/mine", "a/b", "..", ".x"])
def test_odin_new_takes_a_plain_loop_name_only(project, name):
    with pytest.raises(UsageError, match="is not a loop name"):
        loop_path(project, name)


# -- resolving real paths quickly (issue 14: a transition checks its artifacts twice) ------------------


def test_the_kernels_real_path_is_os_path_realpaths(tmp_path):
    import os

    from odin_magic.core.confine import real_text

    (tmp_path / "d" / "e").mkdir(parents=True)
    (tmp_path / "f.txt").write_text("x")
    (tmp_path / "to-d").symlink_to(tmp_path / "d")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere" / "x.md")
    (tmp_path / "loop-a").symlink_to(tmp_path / "loop-b")
    (tmp_path / "loop-b").symlink_to(tmp_path / "loop-a")
    for name in ["f.txt", "d", "to-d", "to-d/e", "to-d/../f.txt", "to-d/missing.md", "dangling", "loop-a",
                 "missing/deeper.md", "d/./e/"]:
        path = str(tmp_path / name)
        assert real_text(path) == os.path.realpath(path), name


def test_a_root_replaced_by_a_link_after_the_drive_resolved_it_does_not_move_the_boundary(tmp_path, outside):
    from odin_magic.core.confine import Confinement

    project, run_dir = tmp_path / "p", tmp_path / "p" / ".odin-loop" / "runs" / "r"
    run_dir.mkdir(parents=True)
    within = Confinement((project, run_dir))
    assert within.check(run_dir / "spec.md", "artifact 'spec.md'") == run_dir / "spec.md"
    run_dir.rename(tmp_path / "moved")
    run_dir.symlink_to(outside)  # the run dir now leads out: so does every artifact in it
    with pytest.raises(PathEscapes, match=r"\.odin-loop/runs/r is a symbolic link to"):
        within.check(run_dir / "secret.txt", "artifact 'secret.txt'", base=project)
    assert not within.contains(run_dir / "secret.txt")
