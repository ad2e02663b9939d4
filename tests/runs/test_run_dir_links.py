"""Engine writes into the run dir never follow a link a worker planted there (issue 20, part 4).

Real files and links in a real run dir of a finished dry run; what lies outside is checked byte for byte.
"""

from __future__ import annotations

import os

import pytest

from odin_magic.core.atomic import open_append, write_atomic
from odin_magic.core.confine import LinkInPath
from odin_magic.engine.orchestrator import Engine
from odin_magic.render.run_report import write_report
from odin_magic.runs.evidence import EvidenceLog
from odin_magic.runs.state import DryOptions
from odin_magic.runs.store import DRIVER_NAME, LOG_NAME, STATE_NAME, RunLock, RunStore


@pytest.fixture
def run(project, write_loop, tmp_path):
    """A finished dry run: (engine, run dir, state), and an ``elsewhere`` folder outside the project."""
    write_loop()
    engine = Engine(project, reports=False)
    state = engine.start("demo", "t", dry=DryOptions(approve_all=True))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    return engine, engine.run_dir(state.run_id), state, elsewhere


def everything(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_a_report_folder_linked_elsewhere_gets_no_chart(run):
    engine, rd, state, elsewhere = run
    os.symlink(elsewhere, rd / "report")
    with pytest.raises(LinkInPath, match=r"report is a symbolic link to .*elsewhere.*refused"):
        write_report(state, engine.loop_for(state.run_id), rd)
    assert everything(elsewhere) == []


def test_a_gates_folder_linked_elsewhere_gets_no_evidence(run):
    _, rd, _, elsewhere = run
    (rd / "gates" / "evidence.jsonl").rename(rd / "kept.jsonl")
    (rd / "gates").rmdir()
    os.symlink(elsewhere, rd / "gates")
    log = EvidenceLog(rd)
    with pytest.raises(LinkInPath, match="gates is a symbolic link"):
        log.append({"stage": "x"})
    assert everything(elsewhere) == []


@pytest.mark.parametrize("name", ["tool-refusals.jsonl", LOG_NAME])
def test_a_log_linked_elsewhere_is_never_appended_to(run, name):
    _, rd, _, elsewhere = run
    (elsewhere / "log").write_text("theirs\n")
    target = rd / name
    target.unlink(missing_ok=True)
    os.symlink(elsewhere / "log", target)
    with pytest.raises(LinkInPath, match=f"{name} is a symbolic link"):
        open_append(target, rd)
    assert (elsewhere / "log").read_text() == "theirs\n"


def test_a_hard_link_in_place_of_a_log_is_refused(run):
    _, rd, _, elsewhere = run
    (elsewhere / "log").write_text("theirs\n")
    os.link(elsewhere / "log", rd / "tool-refusals.jsonl")
    with pytest.raises(LinkInPath, match="not a plain file of its own"):
        open_append(rd / "tool-refusals.jsonl", rd)
    assert (elsewhere / "log").read_text() == "theirs\n"


def test_the_driver_refuses_an_event_log_linked_elsewhere(run):
    engine, rd, state, elsewhere = run
    (rd / LOG_NAME).rename(elsewhere / LOG_NAME)
    os.symlink(elsewhere / LOG_NAME, rd / LOG_NAME)
    before = (elsewhere / LOG_NAME).read_bytes()
    with pytest.raises(LinkInPath):
        RunStore(engine.project_dir).open(state.run_id, "odin run", "now")
    assert (elsewhere / LOG_NAME).read_bytes() == before
    assert not (rd / DRIVER_NAME).exists()  # the lock was released


def test_the_run_lock_refuses_a_linked_lock_file(tmp_path):
    rd, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    rd.mkdir()
    elsewhere.mkdir()
    os.symlink(elsewhere / "lock", rd / "driver.lock")
    with pytest.raises(LinkInPath, match="driver.lock is a symbolic link"):
        RunLock(rd, "r1").acquire("odin run", "now")
    assert everything(elsewhere) == []


def test_asking_whether_a_run_is_driven_never_opens_a_linked_lock_file(tmp_path):
    """`odin status` asks: a lock file linked elsewhere is no driver's, and the file it leads to is untouched."""
    from odin_magic.runs.store import being_driven

    rd, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    rd.mkdir()
    elsewhere.mkdir()
    (elsewhere / "precious").write_text("keep me\n")
    os.symlink(elsewhere / "precious", rd / "driver.lock")
    assert being_driven(rd) is False
    (rd / "driver.lock").unlink()
    os.symlink(elsewhere / "dangling", rd / "driver.lock")
    assert being_driven(rd) is False
    assert everything(elsewhere) == ["precious"] and (elsewhere / "precious").read_text() == "keep me\n"


def test_write_atomic_within_makes_folders_and_refuses_a_link_on_the_way(tmp_path):
    rd, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    (rd / "a").mkdir(parents=True)
    elsewhere.mkdir()
    write_atomic(rd / "a" / "b" / STATE_NAME, "{}", within=rd)
    assert (rd / "a" / "b" / STATE_NAME).read_text() == "{}"
    os.symlink(elsewhere, rd / "a" / "c")
    with pytest.raises(LinkInPath, match=r"a/c is a symbolic link"):
        write_atomic(rd / "a" / "c" / "d" / "x.png", b"\x89PNG", within=rd)
    assert everything(elsewhere) == []
    with pytest.raises(ValueError):
        write_atomic(elsewhere / "x", "no", within=rd)
