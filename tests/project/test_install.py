"""A real, non-editable ``pip install .`` into a fresh venv finds its built-in loops from anywhere.

The fresh venv borrows the dev venv's third-party packages through a ``.pth``
line (so the test needs no network), but odin-magic itself comes only from the
wheel that pip builds: the test checks that ``odin_magic`` is imported from
the new venv's site-packages, not from the source tree.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest
from support import REPO

ROOT = REPO


def _run(cmd, cwd, env=None, timeout=300):
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.mark.slow
def test_wheel_install_lists_builtin_loops_from_another_directory(tmp_path):
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path)
    python = venv / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=tmp_path).strip())
    # Dependencies (pydantic, pyyaml, hatchling, ...) come from the dev environment; a plain path
    # line does not run the dev venv's own .pth files, so its editable odin_magic stays invisible.
    (site / "_dev_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    # With hatchling at hand (it is in the test extras) the wheel builds offline; without it
    # pip fetches the build backend into an isolated build environment.
    offline = importlib.util.find_spec("hatchling") is not None
    build = ["--no-build-isolation", "--no-index"] if offline else []
    _run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", *build, "--quiet", str(ROOT)],
        cwd=tmp_path,
        env=env,
    )

    elsewhere = tmp_path / "somewhere-else"
    elsewhere.mkdir()
    installed = Path(_run([str(python), "-c", "import odin_magic; print(odin_magic.__file__)"], cwd=elsewhere, env=env).strip())
    assert installed.is_relative_to(venv), f"odin_magic came from {installed}, not from the installed wheel"

    out = _run([str(venv / "bin" / "odin"), "list", "--json"], cwd=elsewhere, env=env)
    loops = {entry["name"]: entry for entry in json.loads(out)["loops"]}
    assert {"spec-harness-tdd", "bugfix", "keep-green"} <= set(loops)
    for name in ("spec-harness-tdd", "bugfix", "keep-green"):
        entry = loops[name]
        assert entry["source"] == "builtin" and entry["valid"] is True
        assert Path(entry["path"]).is_relative_to(venv)

    # the schema ships beside the loops, so the loops' `$schema=./loop.schema.json` resolves
    assert (installed.parent / "loops" / "loop.schema.json").is_file()
    out = _run([str(venv / "bin" / "odin"), "validate", str(installed.parent / "loops" / "spec-harness-tdd.yaml")],
               cwd=elsewhere, env=env)
    assert "ok (0 error(s)" in out


def _requirements_closure(requirements: list[str]) -> list[importlib.metadata.Distribution]:
    """The installed distributions ``requirements`` need, transitively (no extras)."""
    from packaging.requirements import Requirement

    found: dict[str, importlib.metadata.Distribution] = {}
    todo = list(requirements)
    while todo:
        req = Requirement(todo.pop())
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        key = re.sub(r"[-_.]+", "-", req.name).lower()
        if key in found:
            continue
        found[key] = dist = importlib.metadata.distribution(req.name)
        todo.extend(dist.requires or [])
    return list(found.values())


def _plain_install_venv(tmp_path: Path) -> Path:
    """A venv with ``pip install <wheel>`` (no extras, no index) whose dependencies are exactly those
    pyproject declares: their installed files, borrowed from the dev venv by symlink, and nothing else
    (so a runtime dependency missing from pyproject is missing here too)."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    borrowed = tmp_path / "borrowed"
    borrowed.mkdir()
    for dist in _requirements_closure(declared):
        site = Path(dist.locate_file(""))
        for top in {Path(f).parts[0] for f in dist.files or () if ".." not in Path(f).parts}:
            if top != "__pycache__" and not (borrowed / top).exists() and (site / top).exists():
                (borrowed / top).symlink_to(site / top)

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path)
    python = venv / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=tmp_path).strip())
    (site / "_borrowed_dependencies.pth").write_text(f"{borrowed}\n")

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    wheels = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "--quiet",
          "-w", str(wheels), str(ROOT)], cwd=tmp_path, env=env)
    [wheel] = wheels.glob("odin_magic-*.whl")
    # pip resolves the wheel's dependencies against what the venv has; --no-index: nothing is fetched
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-index", "--quiet", str(wheel)],
         cwd=tmp_path, env=env)
    return venv


@pytest.mark.slow
def test_quickstart_runs_in_a_kernel_of_a_plain_install(tmp_path, monkeypatch):
    """pytest is a runtime dependency: the built-in loops' gates run `python -m pytest` in the kernel's env."""
    from nbclient.exceptions import CellExecutionError
    from support.nbtools import execute_notebook, outputs_text, without_model_key

    venv = _plain_install_venv(tmp_path)
    kernels = tmp_path / "jupyter" / "kernels" / "odin-plain"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(json.dumps({
        "argv": [str(venv / "bin" / "python"), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "plain install", "language": "python",
    }))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    without_model_key(monkeypatch)
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert str(venv) not in os.environ.get("PATH", "")  # the venv is not on PATH: only the kernel knows it

    project = tmp_path / "project"
    project.mkdir()
    try:
        nb = execute_notebook("quickstart.ipynb", project, extra=("quickstart.script.yaml",), kernel_name="odin-plain",
                              cells=["import odin_magic, sys; print('FROM', odin_magic.__file__, sys.executable)"])
    except CellExecutionError:
        nb = None  # a failed run ends the notebook early: the run's state says why
    run_dir = next((project / ".odin-loop" / "runs").iterdir())
    state = json.loads((run_dir / "state.json").read_text())
    reasons = [e.get("reason", "") for e in state["history"]]
    assert not any("No module named pytest" in r for r in reasons), reasons
    assert state["status"] == "done", state.get("failure") or reasons
    assert state["total_iterations"] == 1  # only the loopback the script plans
    where = outputs_text(nb)[-1].split()
    assert Path(where[1]).is_relative_to(venv) and Path(where[2]).is_relative_to(venv), where
