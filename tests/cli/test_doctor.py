"""``odin doctor`` and ``%odin doctor`` (issue 21 item 3): which command the regression gate runs in the
project and why, the commands that lose, whether the chosen one can run here, and the loops whose
``regression:`` overrides it; the same text in a terminal and a notebook. Real temporary projects."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from IPython.testing import globalipapp
from IPython.testing.globalipapp import start_ipython

from odin_magic.cli import main
from odin_magic.render.doctor import DoctorDisplay

from support.loops import DEMO_LOOP

MORE_ITERTOOLS_LIKE = {  # a Makefile and tox both run unittest; pytest would collect tests/
    "Makefile": "test:\n\tpython -m unittest\n",
    "tox.ini": "[tox]\nenvlist = py3\n\n[testenv]\ncommands = python -m unittest\n",
    "tests/test_a.py": "def test_a():\n    pass\n",
}


def put(project: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text, encoding="utf-8")
    return project


def doctor(project: Path, capsys, *extra: str) -> tuple[int, str]:
    code = main(["doctor", "--project", str(project), *extra])
    return code, capsys.readouterr().out


def test_the_declared_command_is_chosen_and_the_others_named(project: Path, capsys):
    put(project, MORE_ITERTOOLS_LIKE)
    code, out = doctor(project, capsys)
    assert code == 0
    assert "regression suite: `make test`\n  chosen from: Makefile test target (declared by the project)" in out
    assert "not chosen (later in the order of choice): `tox` (tox.ini)" in out
    assert "python -m pytest" not in out  # the guess from tests/ never competes with a declared command
    assert out.rstrip().endswith("no problems found")


def test_json_says_the_same(project: Path, capsys):
    put(project, MORE_ITERTOOLS_LIKE)
    code, out = doctor(project, capsys, "--json")
    data = json.loads(out)
    assert code == 0 and data["project"] == str(project.resolve())
    assert data["regression"] == {"command": "make test", "why": "Makefile test target", "declared": True,
                                  "runs_here": True}
    assert data["also_found"] == [{"command": "tox", "why": "tox.ini", "declared": True}]
    assert data["loops"] == [] and data["problems"] == []


def test_a_guess_says_it_is_one(project: Path, capsys):
    put(project, {"tests/test_a.py": "def test_a():\n    pass\n"})
    code, out = doctor(project, capsys)
    assert code == 0
    assert "regression suite: `python -m pytest -q -p no:cacheprovider`" in out
    assert "chosen from: tests/ holds Python files (a guess: the project declares no test command) " \
           "(no declared test command)" in out


def test_no_suite_is_said_so(project: Path, capsys):
    code, out = doctor(project, capsys)
    assert code == 0 and "regression suite: none detected" in out


def test_a_declared_command_that_cannot_run_here_is_a_problem(project: Path, capsys, monkeypatch, tmp_path: Path):
    bare = tmp_path / "bin"
    bare.mkdir()
    monkeypatch.setenv("PATH", str(bare))
    if shutil.which("tox", path=os.path.dirname(sys.executable)):
        pytest.skip("tox is installed next to the interpreter")
    put(project, {"tox.ini": MORE_ITERTOOLS_LIKE["tox.ini"], "tests/test_a.py": ""})
    code, out = doctor(project, capsys)
    assert code == 1
    assert "⚠ the regression command `tox` (from tox.ini) cannot run here: program tox is not on PATH" in out
    assert "set `regression:` in the loop" in out


def test_loops_whose_regression_overrides_the_project_are_listed(project: Path, capsys, write_loop):
    put(project, MORE_ITERTOOLS_LIKE)
    write_loop(DEMO_LOOP.replace("name: demo", "name: own\nregression: python -m unittest -f"))
    write_loop(DEMO_LOOP.replace("name: demo", "name: quiet\nregression: false"))
    write_loop(DEMO_LOOP)  # the default: the project's choice, not listed
    code, out = doctor(project, capsys)
    assert code == 0
    assert ("loops whose `regression:` overrides the project's choice:\n"
            "  own (project): `python -m unittest -f` (the loop's regression command)\n"
            "  quiet (project): off (`regression: false`)\n") in out
    assert "demo" not in out
    code, out = doctor(project, capsys, "--json")
    assert [(loop["loop"], loop["regression"] and loop["regression"]["command"]) for loop in json.loads(out)["loops"]] \
        == [("own", "python -m unittest -f"), ("quiet", None)]


def test_the_notebook_shows_what_the_terminal_prints(project: Path, capsys):
    put(project, MORE_ITERTOOLS_LIKE)
    _, printed = doctor(project, capsys)
    ip = start_ipython() or globalipapp.get_ipython()
    ip.run_line_magic("load_ext", "odin_magic")
    magics = ip.magics_manager.registry["OdinMagics"]
    try:
        ip.run_line_magic("odin", f"config project={project}")
        shown = ip.run_line_magic("odin", "doctor")
    finally:
        magics.project = ""
    assert isinstance(shown, DoctorDisplay)
    assert shown.text() == printed.rstrip("\n")
    assert "Makefile test target" in shown._repr_html_() and shown._repr_html_().count("<pre>") == 1


def test_the_sandbox_is_reported_with_the_reason_when_it_does_not_work(project: Path, capsys, monkeypatch):
    from odin_magic.core import sandbox

    code, out = doctor(project, capsys)
    assert code == 0 and "sandbox: bubblewrap works here" in out  # bwrap runs on this machine (scripts/test.sh)
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setenv("ODIN_SANDBOX", "bwrap")
    sandbox.probe.cache_clear()
    try:
        code, out = doctor(project, capsys)
        data = json.loads(doctor(project, capsys, "--json")[1])
    finally:
        monkeypatch.undo()
        sandbox.probe.cache_clear()
    assert code == 1 and "sandbox: does not work here: the sandbox needs Linux (bubblewrap); this is darwin" in out
    assert "ODIN_SANDBOX=bwrap, but the sandbox needs Linux" in out  # a problem: every run would be refused
    assert data["sandbox"] == {"works": False, "reason": "the sandbox needs Linux (bubblewrap); this is darwin",
                               "setting": "bwrap"}
