"""Mutation's scratch copies of the project never outlive their run (issue 20, part 5): a driver killed while
mutants run leaves them in the temporary directory; the next driver of the run removes them when it opens it.

Real mutants, real gate commands in a real subprocess killed with SIGKILL, the real engine opening the run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from odin_magic.core import scratch
from odin_magic.engine.gates import command_env, run_command
from odin_magic.engine.mutation import run_mutants
from odin_magic.loop.schema import GateCommand

from support.scripted_runs import Events, scripted_engine

PAUSED = """
name: paused
max_iterations: 2
sandbox: off
stages:
  - id: build
    agent: executor
    produces: [src/]
    gate: {mode: human, check: it is built}
"""

SCRIPT = """
stages:
  build:
    attempts:
      - turns:
          - tools: [{write: {file_path: src/calc.py, content: "def add(a, b):\\n    return a + b\\n"}}]
          - text: built
default_verdict: {status: DONE, passed: true}
"""

# the "driver": runs mutants of src/calc.py with a gate command that says it started, then waits
DRIVER = """
import sys
from pathlib import Path
from odin_magic.engine.gates import command_env, run_command
from odin_magic.engine.mutation import run_mutants
from odin_magic.loop.schema import GateCommand
project, run_dir, fifo = map(Path, sys.argv[1:])
env = command_env(project, run_dir, run_dir.name, "build")
run_mutants(project, ["src/calc.py"], [GateCommand(cmd=f"echo started > '{fifo}'; sleep 600", timeout=900)],
            env, run_command)
"""


def ours(run_dir: Path) -> list[Path]:
    """The scratch folders the run's records name."""
    folder = run_dir / scratch.RECORDS_DIR
    return [Path(json.loads(r.read_text())["path"]) for r in folder.glob("*.json")] if folder.is_dir() else []


def test_mutants_record_their_scratch_copies_while_they_run_and_remove_them_after(project, tmp_path):
    (project / "src").mkdir()
    (project / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    seen = tmp_path / "seen.txt"
    env = command_env(project, run_dir, "run", "build")
    gate = GateCommand(cmd=f'cat "$ODIN_RUN_DIR"/{scratch.RECORDS_DIR}/*.json >> "{seen}"; exit 1')
    run_mutants(project, ["src/calc.py"], [gate], env, run_command)
    recorded = {json.loads(line)["path"] for line in seen.read_text().replace("}{", "}\n{").splitlines()}
    assert len(recorded) == 1, recorded  # the copies were recorded while the gate ran on them
    root = Path(recorded.pop())
    assert root.parent == Path(tempfile.gettempdir()).resolve() and root.name.startswith("odin-mutants-")
    assert not root.exists() and ours(run_dir) == []  # removed, record and all


def test_the_copies_of_a_killed_driver_are_removed_when_the_run_is_next_opened(project, write_loop, tmp_path):
    write_loop(PAUSED)
    events = Events()
    engine, _ = scripted_engine(project, SCRIPT, events)
    state = engine.start("paused", "t")
    assert state.status == "awaiting_approval"
    run_dir = engine.run_dir(state.run_id)
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, str(project), str(run_dir), str(fifo)],
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        with open(fifo) as f:  # blocks until the gate command runs in a scratch copy
            assert f.read().strip() == "started"
        left = ours(run_dir)
        assert len(left) == 1 and left[0].is_dir() and (left[0] / "w0" / "src" / "calc.py").is_file()
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    assert left[0].is_dir()  # nothing of the dead driver removed it
    unrelated = Path(tempfile.mkdtemp(prefix="odin-mutants-"))  # another driver's copies: not named by a record
    try:
        state = engine.approve()
        assert state.status == "done"
        assert not left[0].exists() and ours(run_dir) == []
        assert unrelated.is_dir()
        assert any("removed the mutants scratch folder" in (e.text or "") for e in events), [e.text for e in events]
    finally:
        unrelated.rmdir()


def test_a_record_that_names_anything_but_a_scratch_folder_removes_nothing(tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / scratch.RECORDS_DIR).mkdir(parents=True)
    precious = tmp_path / "odin-precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("keep")
    link = Path(tempfile.mkdtemp(prefix="odin-link-"))
    link.rmdir()
    link.symlink_to(precious)
    try:
        for target in (precious, link, Path(tempfile.gettempdir())):
            name = target.name
            (run_dir / scratch.RECORDS_DIR / f"{name}.json").write_text(json.dumps({"path": str(target)}))
        (run_dir / scratch.RECORDS_DIR / "junk.json").write_text("{not json")
        assert scratch.remove_leftovers(run_dir) == []
        assert (precious / "keep.txt").read_text() == "keep" and link.is_symlink()
        assert list((run_dir / scratch.RECORDS_DIR).iterdir()) == []
    finally:
        link.unlink()
