"""The README's two commands: scripts/quickstart.sh (re-runnable) and scripts/test.sh (what it changes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from support import REPO
from support.nbtools import outputs_text
from support.plain_install import plain_install_venv
from support.quickstart import the_notebook_is_light_and_says_each_thing_once as is_light
from support.quickstart import the_quickstart_ran_spec_harness_tdd_to_done_offline as ran_to_done

ROOT = REPO
SCRIPTS = ROOT / "scripts"


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ODIN_SCRIPT", "ODIN_MODEL", "ODIN_VENV",
                        "ODIN_PY", "VIRTUAL_ENV", "JPY_SESSION_NAME", "ODIN_TEST_WORKERS")}
    env.update(extra)
    return env


def _quickstart(env: dict, attempt: int) -> tuple[subprocess.CompletedProcess, dict]:
    """scripts/quickstart.sh run with ``env``, and its run's state.json: its history is checked first, so a gate
    that fails (a runtime dependency missing from the plain install) says why."""
    proc = subprocess.run(["bash", str(SCRIPTS / "quickstart.sh")], env=env, capture_output=True, text=True,
                          timeout=900)
    [run_dir] = (Path(env["ODIN_QUICKSTART_DIR"]) / ".odin-loop" / "runs").iterdir()  # a fresh copy: only this run's
    state = json.loads((run_dir / "state.json").read_text())
    reasons = [e.get("reason") or "" for e in state["history"]]
    # pytest is a runtime dependency: the built-in loops' gates run `python -m pytest` in the kernel's env
    assert not any("No module named pytest" in r for r in reasons), (attempt, reasons)
    assert state["status"] == "done", (attempt, state.get("failure") or reasons)
    assert proc.returncode == 0, f"run {attempt}:\n{proc.stdout}\n{proc.stderr}"
    return proc, state | {"id": run_dir.name}


@pytest.mark.slow
def test_quickstart_sh_runs_again_and_again_in_a_fresh_copy(tmp_path):
    """Twice in a row: each run recreates the folder, runs the notebook to done, and says where the results are;
    the notebook it saves shows the interview, the verified run and its report, and is light (support.quickstart:
    the quickstart's only offline executions, so they are checked here).
    Run 1: ODIN_PY=this interpreter (the dev venv, this tree's code): setup.sh uses it as it is, so no pip.
    Run 2: ODIN_PY=a plain install (support.plain_install: the wheel, no extras, only the declared dependencies,
    no PYTHONPATH, not on PATH): the driver imports nbclient from it and the kernel runs its interpreter (the
    native `python3` kernel spec is sys.executable), so a runtime dependency missing from pyproject fails here."""
    out = tmp_path / "quickstart-run"
    plain = plain_install_venv(tmp_path / "plain")
    envs = [_env(ODIN_PY=sys.executable, ODIN_QUICKSTART_DIR=str(out)),
            {k: v for k, v in _env(ODIN_PY=str(plain / "bin" / "python"), ODIN_QUICKSTART_DIR=str(out)).items()
             if k not in ("PYTHONPATH", "PYTHONHOME")}]
    run_ids = []
    for attempt, env in enumerate(envs, start=1):
        proc, state = _quickstart(env, attempt)
        assert "Traceback" not in proc.stderr and "without encryption" not in proc.stderr
        assert (out / "kernel.log").is_file() and "kernel.log" in proc.stdout  # the kernel's messages: kept there
        assert state["interview"]["rounds"] == 3  # greenfield, as recorded
        assert state["total_iterations"] == 1  # only the loopback the script plans
        assert f"Results, in {out}/" in proc.stdout
        assert f".odin-loop/runs/{state['id']}/" in proc.stdout and "src/calc.py" in proc.stdout
        # the driver was ODIN_PY: it names its own odin
        odin = Path(env["ODIN_PY"]).with_name("odin")
        assert f"The run's checklist: {odin} status --project {out}" in proc.stdout
        executed = json.loads((out / "quickstart.ipynb").read_text())
        assert all(c.get("outputs") is not None for c in executed["cells"] if c["cell_type"] == "code")
        assert any(o for c in executed["cells"] if c["cell_type"] == "code" for o in c["outputs"])
        # what the notebook shows, as saved: checked here rather than by executing the quickstart once more
        nb = nbformat.read(out / "quickstart.ipynb", as_version=4)
        assert nb.metadata["kernelspec"]["name"] == "python3"
        ran_to_done(nb, out)
        is_light(nb, out / "quickstart.ipynb")
        # the kernel's odin_magic: the built-in loop it ran is shown with its path, in the plain venv's
        # site-packages on run 2 (where no source tree is), never there on run 1
        sources = {Path(line.split("source:", 1)[1].strip()) for t in outputs_text(nb) for line in t.splitlines()
                   if line.strip().startswith("source:") and line.strip().endswith("spec-harness-tdd.yaml")}
        assert sources, "the notebook shows no built-in loop's source"
        assert {p.is_relative_to(plain) and "site-packages" in p.parts for p in sources} == {attempt == 2}, sources
        run_ids.append(state["id"])
    assert run_ids[0] != run_ids[1]


def test_quickstart_sh_never_removes_a_folder_it_did_not_make(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    proc = subprocess.run(["bash", str(SCRIPTS / "quickstart.sh")], capture_output=True, text=True, timeout=60,
                          env=_env(ODIN_PY=sys.executable, ODIN_QUICKSTART_DIR=str(out)))
    assert proc.returncode == 2 and "was not made by this script" in proc.stderr
    assert (out / "notes.txt").read_text() == "keep me"


def _fake_system(tmp_path: Path, uid: int) -> tuple[dict, Path]:
    """A PATH where `id -u` says ``uid`` and `apt-get` and the venv's python only log their arguments."""
    log = tmp_path / "calls.log"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in {
        "id": f'echo {uid}',
        "apt-get": f'echo "apt-get $*" >> {log}',
        "python": f'echo "python $*" >> {log}',
    }.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    env = _env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", ODIN_PY=str(bin_dir / "python"),
               ODIN_CHROMIUM=str(tmp_path / "no-chromium"))
    return env, log


@pytest.mark.parametrize("uid, args, installs", [
    (0, [], True),
    (0, ["--no-browser"], False),
    (0, ["-m", "not browser"], False),
    (1000, [], False),
])
def test_test_sh_installs_chromium_with_apt_only_as_root_and_only_for_the_browser(tmp_path, uid, args, installs):
    env, log = _fake_system(tmp_path, uid)
    proc = subprocess.run(["bash", str(SCRIPTS / "test.sh"), *args, "-q"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    calls = log.read_text().splitlines()
    apt = [c for c in calls if c.startswith("apt-get")]
    if installs:
        assert apt == ["apt-get update -qq", "apt-get install -y -qq chromium"]
        assert "installing chromium" in proc.stdout
    else:
        assert apt == []
    pytest_call = calls[-1]
    assert pytest_call.startswith("python -m pytest")
    assert ("-m not browser" in pytest_call) == bool(args)
    assert "--no-browser" not in pytest_call  # test.sh's own option, not pytest's
    # a worker per core and one more (issue 18 item 2: the suite waits on kernels and processes a quarter of
    # the time); `-n 0` after it wins
    assert f"-n {len(os.sched_getaffinity(0)) + 1} --dist worksteal" in pytest_call


def test_readme_starts_with_the_two_commands_and_says_what_test_sh_changes():
    readme = (ROOT / "README.md").read_text()
    lines = readme.splitlines()
    assert lines[2:6] == [lines[2], lines[3], lines[4], "```"] and lines[2] == "```bash"
    assert lines[3].startswith("bash scripts/quickstart.sh") and lines[4].startswith("bash scripts/test.sh")
    assert "apt-get install chromium" in readme and "as root" in readme
    assert "bash scripts/test.sh --no-browser" in readme
    assert "quickstart-run/" in readme
