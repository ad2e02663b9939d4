"""A plain install of odin-magic: a fresh venv with ``pip install <wheel>`` (no extras, not editable) whose
dependencies are exactly those pyproject declares, borrowed from the dev venv (no network).
Used by tests/project/test_install.py and by the second run of scripts/quickstart.sh (test_scripts.py)."""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from support import REPO


def run_ok(cmd, cwd, env=None, timeout=300) -> str:
    """``cmd``'s stdout; it must exit 0."""
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def requirements_closure(requirements: list[str]) -> list[importlib.metadata.Distribution]:
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


def plain_install_venv(tmp_path: Path) -> Path:
    """``tmp_path``/venv (``tmp_path`` is made if need be): a venv with ``pip install <wheel>`` (no extras, no
    index) whose dependencies are exactly those pyproject declares: their installed files, borrowed from the dev
    venv by symlink, and nothing else (so a runtime dependency missing from pyproject is missing here too)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    borrowed = tmp_path / "borrowed"
    borrowed.mkdir()
    for dist in requirements_closure(declared):
        site = Path(dist.locate_file(""))
        for top in {Path(f).parts[0] for f in dist.files or () if ".." not in Path(f).parts}:
            if top != "__pycache__" and not (borrowed / top).exists() and (site / top).exists():
                (borrowed / top).symlink_to(site / top)

    venv = tmp_path / "venv"
    run_ok([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path)
    python = venv / "bin" / "python"
    site = Path(run_ok([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                       cwd=tmp_path).strip())
    (site / "_borrowed_dependencies.pth").write_text(f"{borrowed}\n")

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    wheels = tmp_path / "wheels"
    run_ok([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "--quiet",
            "-w", str(wheels), str(REPO)], cwd=tmp_path, env=env)
    [wheel] = wheels.glob("odin_magic-*.whl")
    # pip resolves the wheel's dependencies against what the venv has; --no-index: nothing is fetched
    run_ok([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-index", "--quiet", str(wheel)],
           cwd=tmp_path, env=env)
    return venv
