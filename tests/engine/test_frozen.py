"""Frozen artifacts (issue 20, part 2): what a passed gate froze, a later stage cannot change.

The REAL engine, Claude worker (its agent toolset, bash included) and SDK against the offline scripted
Messages API; real files in a temporary project.
"""

from __future__ import annotations

import json
import os
import textwrap

import pytest

from odin_magic.runs import evidence as gate_evidence

from support.scripted_runs import scripted_engine

TEST_X = "def test_x():\n    assert 1 + 1 == 2\n"


def loop(harness_produces: str, implement_produces: str = "[src/]", implement_gate: str = "",
         consumes: str | None = None, sandbox: str = "off") -> str:
    """``sandbox: off`` by default: the frozen check is what these tests prove (where bwrap works, the sandbox
    would refuse a run-dir write before it; see the last test)."""
    return f"""
    name: frozen
    max_iterations: 6
    max_repeats: 6
    sandbox: {sandbox}
    stages:
      - id: harness
        agent: executor
        produces: {harness_produces}
        gate: {{mode: ai, check: the harness exists}}
      - id: implement
        agent: executor
        consumes: {harness_produces if consumes is None else consumes}
        produces: {implement_produces}
        gate: {{mode: ai, check: the code exists{implement_gate}}}
    """


def script(harness_path: str, implement_first: str, harness_attempts: int = 1, verdicts: str = "") -> str:
    """The harness stage writes the test; implement's first attempt runs ``implement_first`` in bash, its
    second writes only its code."""
    harness = "".join(f"""
      - turns:
          - tools: [{{write: {{file_path: "{harness_path}", content: {json.dumps(TEST_X.replace("2", str(n + 2)))}}}}}]
          - text: harness v{n + 1}
""" for n in range(harness_attempts))
    return textwrap.dedent(f"""\
stages:
  harness:
    attempts:{harness}
  implement:
    attempts:
      - turns:
          - tools:
              - write: {{file_path: src/app.py, content: "def f():\\n    return 1\\n"}}
              - bash: {{command: {json.dumps(implement_first)}}}
          - text: implemented
      - turns:
          - tools: [{{write: {{file_path: src/app.py, content: "def f():\\n    return 2\\n"}}}}]
          - text: implemented again
""") + verdicts + "default_verdict: {status: DONE, passed: true}\n"


def first_harness(n: int = 0) -> bytes:
    return TEST_X.replace("2", str(n + 2)).encode()


def records(engine, state) -> list[dict]:
    log = engine.run_dir(state.run_id) / "events.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.mark.parametrize("entry, path, edit", [
    ("harness/test_x.py", "{run_dir}/harness/test_x.py", 'echo "def test_y(): pass" >> "$ODIN_RUN_DIR/harness/test_x.py"'),
    ("tests/test_x.py", "tests/test_x.py", 'echo "def test_y(): pass" >> tests/test_x.py'),
])
def test_a_later_stage_that_edits_a_frozen_artifact_fails_and_the_file_is_restored(project, write_loop, entry, path,
                                                                                    edit):
    write_loop(loop(f"[{entry}]"))
    engine, _ = scripted_engine(project, script(path, edit))
    state = engine.start("frozen", "t")
    run_dir = engine.run_dir(state.run_id)
    target = (run_dir if entry.startswith("harness") else project) / entry
    assert target.read_bytes() == first_harness()  # restored byte for byte
    results = [(e.stage, e.result) for e in state.history]
    assert results == [("harness", "pass"), ("implement", "fail"), ("implement", "pass")]
    failed = state.history[1]
    assert failed.reason == f"implement changed {entry}, frozen since harness: restored"
    assert failed.failure == "recoverable"
    ev = gate_evidence.read(run_dir, failed.evidence)
    assert ev["reverted"] == [entry] and ev["judged"] is False
    # the freeze is a record of the event log (hash and point), folded into the state
    frozen = [r for r in records(engine, state) if r["type"] == "frozen"]
    assert [(r["stage"], r["point"], list(r["files"])) for r in frozen] == [("harness", 1, [entry]), ("implement", 3, ["src/", "src/app.py"])]
    assert state.frozen[entry].stage == "harness" and state.status == "done"


def test_the_restore_never_writes_through_a_link_the_worker_planted(project, write_loop, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    write_loop(loop("[harness/]", consumes="[]"))  # a consumed folder behind a link stops the run: not this case
    engine, _ = scripted_engine(project, script(  # the same bytes, but behind a link to a folder outside
        "{run_dir}/harness/test_x.py",
        f'cd "$ODIN_RUN_DIR" && cp harness/test_x.py {outside}/ && mv harness harness.old && ln -s {outside} harness'))
    state = engine.start("frozen", "t")
    run_dir = engine.run_dir(state.run_id)
    assert sorted(p.name for p in outside.iterdir()) == ["test_x.py"]  # nothing written through the link
    assert not (run_dir / "harness").is_symlink() and (run_dir / "harness" / "test_x.py").read_bytes() == first_harness()
    assert state.history[1].result == "fail"
    assert "implement changed harness/test_x.py, frozen since harness: restored" == state.history[1].reason

    (outside / "test_x.py").unlink()
    engine, _ = scripted_engine(project, script(
        "{run_dir}/harness/test_x.py", f'ln -sf {outside / "test_x.py"} "$ODIN_RUN_DIR/harness/test_x.py"'))
    state = engine.start("frozen", "t2")
    run_dir = engine.run_dir(state.run_id)
    assert not (outside / "test_x.py").exists()  # a dangling link: not followed either
    restored = run_dir / "harness" / "test_x.py"
    assert not restored.is_symlink() and restored.read_bytes() == first_harness()


def test_a_stage_that_produces_the_artifact_itself_may_change_it(project, write_loop):
    write_loop(loop("[harness/]", implement_produces="[src/, harness/]"))
    engine, _ = scripted_engine(project, script(
        "{run_dir}/harness/test_x.py", 'echo "def test_y(): pass" >> "$ODIN_RUN_DIR/harness/test_x.py"'))
    state = engine.start("frozen", "t")
    assert [(e.stage, e.result) for e in state.history] == [("harness", "pass"), ("implement", "pass")]
    changed = engine.run_dir(state.run_id) / "harness" / "test_x.py"
    assert changed.read_bytes() == first_harness() + b"def test_y(): pass\n"
    assert state.frozen["harness/test_x.py"].stage == "implement"  # its pass froze it anew


def test_after_a_loopback_to_the_producing_stage_it_changes_the_artifact_again(project, write_loop):
    write_loop(loop("[harness/test_x.py]", implement_gate=", on_fail: harness"))
    verdicts = ("judge:\n  implement:\n    - {status: DONE, passed: false, reasons: [the harness is wrong], blocking: [fix it]}\n"
                "    - {status: DONE, passed: true}\n")
    engine, _ = scripted_engine(project, script("{run_dir}/harness/test_x.py", "true", harness_attempts=2,
                                                verdicts=verdicts))
    state = engine.start("frozen", "t")
    assert [(e.stage, e.result) for e in state.history] == [
        ("harness", "pass"), ("implement", "fail"), ("harness", "pass"), ("implement", "pass")]
    assert (engine.run_dir(state.run_id) / "harness" / "test_x.py").read_bytes() == first_harness(1)  # v2 kept
    loopback = next(r for r in records(engine, state) if r["type"] == "gate" and r["entry"]["result"] == "fail")
    assert loopback["unfrozen"] == ["harness"]
    assert state.frozen["harness/test_x.py"].point == 3


def test_deleted_and_added_files_under_a_frozen_folder_are_put_back(project, write_loop):
    write_loop(loop("[harness/]"))
    engine, _ = scripted_engine(project, script(
        "{run_dir}/harness/test_x.py",
        'rm "$ODIN_RUN_DIR/harness/test_x.py" && echo "import pytest" > "$ODIN_RUN_DIR/harness/conftest.py"'))
    state = engine.start("frozen", "t")
    harness = engine.run_dir(state.run_id) / "harness"
    assert (harness / "test_x.py").read_bytes() == first_harness()
    assert not (harness / "conftest.py").exists()
    assert state.history[1].reason == (
        "implement changed harness/conftest.py (added), harness/test_x.py (deleted), frozen since harness: restored")
    assert state.status == "done"


def test_a_revert_to_before_the_producing_stage_unfreezes_its_artifacts(project, write_loop):
    write_loop(loop("[harness/]").replace("check: the code exists", "check: the code exists, mode: ai+human")
               .replace("gate: {mode: ai, check: the code exists, mode: ai+human}",
                        "gate: {mode: ai+human, check: the code exists}"))
    engine, _ = scripted_engine(project, script("{run_dir}/harness/test_x.py", "true"))
    state = engine.start("frozen", "t")
    assert state.status == "awaiting_approval" and state.frozen["harness/test_x.py"].stage == "harness"
    state = engine.revert("harness")
    assert state.frozen is None and state.current_stage == "harness"


def test_a_frozen_file_that_holds_a_secret_is_frozen_by_its_hash_and_no_copy_is_written(tmp_path, monkeypatch):
    """odin never writes a configured secret: the frozen store keeps no copy of such a file (a change to it
    still fails the gate; it cannot be put back)."""
    from odin_magic.runs.freezes import BlobStore, read_now

    secret = "odin-frozen-test-secret-0123456789"
    monkeypatch.setenv("ODIN_SECRET_VARS", "FROZEN_TEST_SECRET")
    monkeypatch.setenv("FROZEN_TEST_SECRET", secret)
    plain, holding = tmp_path / "plain.md", tmp_path / "holding.md"
    plain.write_text("notes\n")
    holding.write_text(f"token={secret}\n")
    store = BlobStore(tmp_path / "run")
    (tmp_path / "run").mkdir()
    for path in (plain, holding):
        store.keep(read_now(path))
    kept = [p.read_bytes() for p in (tmp_path / "run" / ".frozen").iterdir()]
    assert kept == [b"notes\n"]


def test_a_kept_blob_is_not_written_again_and_none_is_written_through_a_link(tmp_path):
    from odin_magic.core.confine import LinkInPath
    from odin_magic.runs.freezes import BLOB_DIR, BlobStore, read_now

    (tmp_path / "run").mkdir()
    (tmp_path / "a.md").write_text("notes\n")
    now = read_now(tmp_path / "a.md")
    store = BlobStore(tmp_path / "run")
    store.keep(now)
    kept = store.dir / now.sha256
    inode = kept.stat().st_ino
    store.keep(now)  # the next freeze of the same content: nothing read or written
    assert kept.stat().st_ino == inode and store.get(now.sha256) == b"notes\n"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.rename(store.dir, tmp_path / "old")
    (tmp_path / "run" / BLOB_DIR).symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(LinkInPath):
        store.keep(now)
    assert list(elsewhere.iterdir()) == [] and store.get(now.sha256) is None


def test_with_the_sandbox_a_later_stage_cannot_even_write_the_run_dir_harness(project, write_loop):
    """Where bwrap works, the run-dir harness another stage produced is read-only to implement's bash: the edit
    fails in the shell, and the file is byte for byte the one the harness stage wrote."""
    from odin_magic.core.sandbox import probe

    if not probe().works:
        pytest.skip(f"bubblewrap cannot run here: {probe().reason}")
    edit = 'echo "def test_y(): pass" >> "$ODIN_RUN_DIR/harness/test_x.py"'
    write_loop(loop("[harness/test_x.py]", sandbox="bwrap"))
    engine, _ = scripted_engine(project, script("{run_dir}/harness/test_x.py", edit))
    state = engine.start("frozen", "t")
    assert (engine.run_dir(state.run_id) / "harness" / "test_x.py").read_bytes() == first_harness()
    assert [(e.stage, e.result) for e in state.history][:2] == [("harness", "pass"), ("implement", "pass")]


def test_a_frozen_file_out_of_the_stages_scope_is_restored_once_and_listed_once(project, write_loop):
    write_loop(loop("[tests/test_x.py]").replace("        produces: [src/]\n", "        produces: [src/]\n        scope: [src/]\n"))
    engine, _ = scripted_engine(project, script("tests/test_x.py", 'echo "def test_y(): pass" >> tests/test_x.py'))
    state = engine.start("frozen", "t")
    run_dir = engine.run_dir(state.run_id)
    assert (project / "tests" / "test_x.py").read_bytes() == first_harness()
    failed = state.history[1]
    assert failed.result == "fail" and failed.reason.startswith("implement changed tests/test_x.py, frozen since harness")
    assert gate_evidence.read(run_dir, failed.evidence)["reverted"] == ["tests/test_x.py"]


NAME = "$(printf '\\351')"  # in bash: the byte 0xE9, not UTF-8 alone


def test_a_frozen_file_whose_name_is_not_utf8_is_frozen_and_put_back(project, write_loop):
    """A name that is not UTF-8 (made by the worker's bash) is frozen like any other: changed, it is restored
    under its real bytes; added beside it, it is removed; the reason names both with ``\\xNN``."""
    write_loop(loop("[harness/]"))
    harness_bash = f'printf one > "$ODIN_RUN_DIR/harness/caf{NAME}.py"'
    implement_bash = (f'printf two > "$ODIN_RUN_DIR/harness/caf{NAME}.py"; '
                      f'printf x > "$ODIN_RUN_DIR/harness/n{NAME}{NAME}.py"')
    text = script("{run_dir}/harness/test_x.py", implement_bash).replace(
        "          - text: harness v1", "          - tools: [{bash: {command: " + json.dumps(harness_bash)
        + "}}]\n          - text: harness v1", 1)
    engine, _ = scripted_engine(project, text)
    state = engine.start("frozen", "t")
    harness = os.fsencode(engine.run_dir(state.run_id) / "harness")
    assert open(harness + b"/caf\xe9.py", "rb").read() == b"one"
    assert not os.path.exists(harness + b"/n\xe9\xe9.py")
    reason = state.history[1].reason
    assert "harness/caf\\xe9.py" in reason and "harness/n\\xe9\\xe9.py (added)" in reason, reason
    assert reason.endswith("frozen since harness: restored"), reason
    assert state.status == "done"
    frozen = [r for r in records(engine, state) if r.get("type") == "frozen"]
    assert any("harness/caf\x00e9.py" in r["files"] for r in frozen)


CHEAT = "import pytest\n\n@pytest.hookimpl(tryfirst=True)\ndef pytest_runtest_call(item):\n    item.runtest = lambda: None\n"


@pytest.mark.parametrize("where", ["tests/conftest.py", "conftest.py", "pytest.ini", "pytest.toml", "tox.ini",
                                   "tests/setup.cfg", "tests/sitecustomize.py", "tests/Conftest.py"])  # any case: a case-insensitive
                                   # file system (macOS) gives pytest tests/Conftest.py as tests/conftest.py
def test_a_later_stage_may_not_add_the_runners_configuration_of_frozen_tests(project, write_loop, where):
    """A conftest.py beside (or above) frozen tests, or a pytest configuration file there or at the root, would
    judge the stage in their place: reverted, and the gate fails, as a change outside the stage's scope."""
    write_loop(loop("[tests/test_x.py]"))
    content = CHEAT if where.lower().endswith("conftest.py") else "[pytest]\naddopts = -p no:python\n"
    engine, _ = scripted_engine(project, script("tests/test_x.py", f"printf %b {json.dumps(content)} > {where}"))
    state = engine.start("frozen", "t")
    assert not (project / where).exists()  # reverted
    assert [(e.stage, e.result) for e in state.history] == [("harness", "pass"), ("implement", "fail"),
                                                           ("implement", "pass")]
    reason = state.history[1].reason
    assert reason.startswith(f"executor changed {where} (added) that it may not change") and "frozen tests" in reason
    assert state.status == "done"


def test_the_stage_that_produces_the_tests_may_write_their_conftest(project, write_loop):
    write_loop(loop("[tests/]", implement_produces="[src/, tests/]"))
    engine, _ = scripted_engine(project, script("tests/test_x.py", f"printf %b {json.dumps(CHEAT)} > tests/conftest.py"))
    state = engine.start("frozen", "t")
    assert (project / "tests" / "conftest.py").read_text() == CHEAT
    assert [(e.stage, e.result) for e in state.history] == [("harness", "pass"), ("implement", "pass")]


PYPROJECT = '[project]\nname = "app"\nversion = "0.1"\n'


@pytest.mark.parametrize("edit, guarded", [
    ('[project]\nname = "app"\nversion = "0.2"\n', False),
    (PYPROJECT + '[tool.pytest.ini_options]\naddopts = "-p no:python"\n', True),
], ids=["metadata", "pytest-table"])
def test_a_later_stage_may_change_pyproject_but_not_its_pytest_tables(project, write_loop, edit, guarded):
    (project / "pyproject.toml").write_text(PYPROJECT)
    write_loop(loop("[tests/test_x.py]"))
    engine, _ = scripted_engine(project, script("tests/test_x.py", f"printf %b {json.dumps(edit)} > pyproject.toml"))
    state = engine.start("frozen", "t")
    assert (project / "pyproject.toml").read_text() == (PYPROJECT if guarded else edit)
    assert ("frozen tests" in (state.history[1].reason or "")) is guarded
    assert state.status == "done"
