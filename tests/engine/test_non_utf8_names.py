"""File names that are not UTF-8 (issue 20, part 5): a worker's bash can create ``b"src/caf\\xe9.py"``. The
judge request, the evidence, the event log and ``odin revert`` name such a file as valid text (each byte that
is not UTF-8 as ``\\xNN``), while the files themselves are restored or removed under their real bytes."""

from __future__ import annotations

import json
import os
from pathlib import Path

from odin_magic.runs.checkpoints import Checkpoints

from support.scripted_runs import calls, scripted_engine

ADDED = b"src/caf\xe9.py"  # made by the worker's bash
EDITED = b"src/d\xe9j\xe0.txt"  # there before the run, rewritten by the worker's bash

LOOP = """
name: names
max_iterations: 3
stages:
  - id: build
    produces: [src/]
    gate: {mode: ai+human, check: built}
"""

# the bash command, once YAML and bash have read it: python -c "open(b'src/caf\xe9.py','wb')..."
SCRIPT = r"""
stages:
  build:
    - tools:
        - bash: {command: "python -c \"open(b'src/caf\\\\xe9.py','wb').write(b'x'); open(b'src/d\\\\xe9j\\\\xe0.txt','wb').write(b'new')\""}
        - write: {file_path: src/app.py, content: "print('new')\n"}
        - glob: {pattern: "src/*.py"}
    - text: built
default_verdict: {status: DONE, passed: true}
"""


def write_bytes(project: Path, name: bytes, data: bytes) -> None:
    fd = os.open(os.path.join(os.fsencode(project), name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def read_bytes(project: Path, name: bytes) -> bytes | None:
    try:
        with open(os.path.join(os.fsencode(project), name), "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def texts(value) -> list[str]:
    """Every string of a request body."""
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [t for item in items for t in texts(item)]


def seed(project: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("print('old')\n")
    write_bytes(project, EDITED, b"old")


def test_a_run_whose_worker_made_a_latin1_name_is_judged_reverted_and_recorded(project, write_loop):
    write_loop(LOOP)
    seed(project)
    engine, model = scripted_engine(project, SCRIPT)
    state = engine.start("names", "t")
    assert read_bytes(project, ADDED) == b"x" and read_bytes(project, EDITED) == b"new"
    assert (state.status, state.current_stage) == ("awaiting_approval", "build"), state.failure_reason
    assert calls(model, "judge") == 1  # one valid request, answered: the verdict passed the gate
    body = [b for b in model.requests if "output_config" in b][0]
    json.dumps(body, ensure_ascii=False).encode("utf-8")  # valid text, every character of it
    judge = "\n".join(texts(body))
    assert "--- caf\\xe9.py ---" in judge  # the produced folder's listing
    assert "diff --git a/src/caf\\xe9.py b/src/caf\\xe9.py" in judge  # the execution's diff
    assert "diff --git a/src/d\\xe9j\\xe0.txt" in judge
    assert "/src/caf\\xe9.py\n" in judge[judge.index("$ glob src/*.py   [ok]"):]  # the worker's tool log

    diff = engine.diff()
    assert {f.change.path: f.change.kind for f in diff.files} == {
        "src/app.py": "modified", "src/caf\\xe9.py": "added", "src/d\\xe9j\\xe0.txt": "modified"}
    assert "+x" in diff.text() and "-old" in diff.text()

    state = engine.revert("build")
    assert read_bytes(project, ADDED) is None  # removed under its real name
    assert read_bytes(project, EDITED) == b"old"  # restored under its real name
    assert (project / "src" / "app.py").read_text() == "print('old')\n"
    assert sorted(os.listdir(os.fsencode(project / "src"))) == [b"app.py", b"d\xe9j\xe0.txt"]
    assert (state.status, state.current_stage) == ("running", "build")
    assert [(r.stage, r.execution) for r in state.reverts] == [("build", 1)]
    run_dir = engine.run_dir(state.run_id)
    log = [json.loads(x) for x in (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    reverted = [r for r in log if r["type"] == "reverted"]
    assert len(reverted) == 1 and sorted(reverted[0]["restored"]) == [
        "src/app.py", "src/caf\\xe9.py", "src/d\\xe9j\\xe0.txt"]
    again = type(engine)(project).status(state.run_id)  # read back from state.json
    assert [(r.stage, r.execution) for r in again.reverts] == [("build", 1)] and again.tree == state.tree


def test_a_hand_made_change_to_a_latin1_name_is_kept_under_its_name(project, write_loop):
    write_loop(LOOP)
    seed(project)
    engine, _ = scripted_engine(project, SCRIPT)
    engine.start("names", "t")
    write_bytes(project, EDITED, b"mine")  # by hand, after the stage
    events = []
    engine.listener = events.append
    engine.revert("build")
    assert read_bytes(project, EDITED) == b"mine" and read_bytes(project, ADDED) is None
    note = [e for e in events if e.kind == "reverted"][-1]
    assert note.data["kept"] == ["src/d\\xe9j\\xe0.txt"] and "kept your changes to src/d\\xe9j\\xe0.txt" in note.text
    engine.revert("build", force=True)
    assert read_bytes(project, EDITED) == b"old"


def test_the_store_takes_names_as_changes_give_them(project):
    """``restore``, ``diff`` and ``changed_lines`` take a path as ``changes`` names it, and act on the real bytes."""
    store = Checkpoints(project)
    write_bytes(project, b"lat\xe9n.py", b"a = 1\n")
    before = store.snapshot()
    write_bytes(project, b"lat\xe9n.py", b"a = 2\n")
    (project / "other.py").write_text("b = 1\n")
    after = store.snapshot()
    assert [c.path for c in store.changes(before, after)] == ["lat\\xe9n.py", "other.py"]
    assert store.changed_lines(before, after, ["lat\\xe9n.py"]) == {"lat\\xe9n.py": [(1, 1)]}
    part = store.diff(before, after, ["lat\\xe9n.py"])
    assert "-a = 1" in part and "other.py" not in part
    store.restore(before, paths=["lat\\xe9n.py"])
    assert read_bytes(project, b"lat\xe9n.py") == b"a = 1\n" and (project / "other.py").exists()


SCOPED = """
name: scoped
max_iterations: 3
stages:
  - id: build
    agent: executor
    produces: [src/]
    scope: ["src/**"]
    gate: {mode: ai, check: built}
"""

OUT_OF_SCOPE = r"""
stages:
  build:
    attempts:
      - turns:
          - tools:
              - bash: {command: "python -c \"open(b'caf\\\\xe9.py','wb').write(b'x'); open(b'src/d\\\\xe9j\\\\xe0.txt','wb').write(b'new')\""}
          - text: built
      - turns:
          - tools: [{write: {file_path: src/app.py, content: "print('new')\n"}}]
          - text: built
default_verdict: {status: DONE, passed: true}
"""


def test_an_out_of_scope_latin1_name_is_reverted_by_the_gate_and_named_as_text(project, write_loop):
    write_loop(SCOPED)
    seed(project)
    engine, _ = scripted_engine(project, OUT_OF_SCOPE)
    state = engine.start("scoped", "t")
    first = state.history[0]
    assert first.result == "fail" and "caf\\xe9.py (added) outside its scope" in first.reason
    assert read_bytes(project, b"caf\xe9.py") is None  # removed under its real name
    assert read_bytes(project, EDITED) == b"new"  # in scope: kept
    assert state.status == "done"
