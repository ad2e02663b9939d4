"""A real, non-editable ``pip install .`` into a fresh venv finds its built-in loops from anywhere.

The fresh venv borrows the dev venv's third-party packages through a ``.pth``
line (so the test needs no network), but odin-magic itself comes only from the
wheel that pip builds: the test checks that ``odin_magic`` is imported from
the new venv's site-packages, not from the source tree.

The quickstart in a kernel of a plain install (support.plain_install): the second run of
tests/project/test_scripts.py::test_quickstart_sh_runs_again_and_again_in_a_fresh_copy.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import sysconfig
from pathlib import Path

import pytest
from support import REPO
from support.plain_install import run_ok

ROOT = REPO


@pytest.mark.slow
def test_wheel_install_lists_builtin_loops_from_another_directory(tmp_path):
    venv = tmp_path / "venv"
    run_ok([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path)
    python = venv / "bin" / "python"
    site = Path(run_ok([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                       cwd=tmp_path).strip())
    # Dependencies (pydantic, pyyaml, hatchling, ...) come from the dev environment; a plain path
    # line does not run the dev venv's own .pth files, so its editable odin_magic stays invisible.
    (site / "_dev_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    # With hatchling at hand (it is in the test extras) the wheel builds offline; without it
    # pip fetches the build backend into an isolated build environment.
    offline = importlib.util.find_spec("hatchling") is not None
    build = ["--no-build-isolation", "--no-index"] if offline else []
    run_ok(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", *build, "--quiet", str(ROOT)],
        cwd=tmp_path,
        env=env,
    )

    elsewhere = tmp_path / "somewhere-else"
    elsewhere.mkdir()
    installed = Path(run_ok([str(python), "-c", "import odin_magic; print(odin_magic.__file__)"],
                            cwd=elsewhere, env=env).strip())
    assert installed.is_relative_to(venv), f"odin_magic came from {installed}, not from the installed wheel"

    out = run_ok([str(venv / "bin" / "odin"), "list", "--json"], cwd=elsewhere, env=env)
    loops = {entry["name"]: entry for entry in json.loads(out)["loops"]}
    assert {"spec-harness-tdd", "bugfix", "keep-green"} <= set(loops)
    for name in ("spec-harness-tdd", "bugfix", "keep-green"):
        entry = loops[name]
        assert entry["source"] == "builtin" and entry["valid"] is True
        assert Path(entry["path"]).is_relative_to(venv)

    # the schema ships beside the loops, so the loops' `$schema=./loop.schema.json` resolves
    assert (installed.parent / "loops" / "loop.schema.json").is_file()
    out = run_ok([str(venv / "bin" / "odin"), "validate", str(installed.parent / "loops" / "spec-harness-tdd.yaml")],
               cwd=elsewhere, env=env)
    assert "ok (0 error(s)" in out
