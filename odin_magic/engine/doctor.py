"""``odin doctor``: what the engine will do in this project, checked before a run.

It tells whether the sandbox of the stages' commands works here (:mod:`odin_magic.core.sandbox`: bubblewrap,
with the reason when it does not) and the regression gate's choice (:mod:`odin_magic.engine.regression`): the command chosen for
the project and why, the other test commands the project offers (which lose), whether the chosen command's
program can run here, and each loop of the catalog whose ``regression:`` overrides the project's choice.

The result is plain data (``to_dict``, printed by ``odin doctor --json``); :mod:`odin_magic.render.doctor`
tells it as text, the same in a terminal and a notebook. ``problems`` are what would stop a run (what, fix):
the CLI exits 1 when there is one.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from odin_magic.core import sandbox
from odin_magic.core.errors import OdinError
from odin_magic.engine.regression import Suite, candidates, suite_for
from odin_magic.loop.catalog import LoopCatalog


@dataclass
class Doctor:
    project: str
    regression: dict | None  # the project's suite (Suite.to_dict, with "runs_here"), None: none detected
    also_found: list[dict] = field(default_factory=list)  # the other candidates, in the order of choice
    loops: list[dict] = field(default_factory=list)  # loops whose regression: overrides the project's choice
    problems: list[dict] = field(default_factory=list)  # {"what", "fix"}
    sandbox: dict = field(default_factory=dict)  # {"works", "reason", "setting"}: see sandbox_check

    def to_dict(self) -> dict:
        return {"project": self.project, "sandbox": self.sandbox, "regression": self.regression,
                "also_found": self.also_found, "loops": self.loops, "problems": self.problems}


def sandbox_check(problems: list[dict]) -> dict:
    """Whether bubblewrap works here and why not; the user's ``ODIN_SANDBOX`` (None: each loop's ``sandbox:``).
    ``ODIN_SANDBOX=bwrap`` where it cannot run is a problem (every run would be refused)."""
    found = sandbox.probe()
    try:
        setting = sandbox.user_mode()
    except OdinError as exc:
        problems.append({"what": exc.message, "fix": exc.hint or ""})
        setting = None
    if setting == "bwrap" and not found.works:
        problems.append({"what": f"{sandbox.USER_VAR}=bwrap, but {found.reason}: every run would be refused",
                         "fix": f"{sandbox.INSTALL_HINT}, or set {sandbox.USER_VAR}=auto"})
    return {"works": found.works, "reason": found.reason, "setting": setting}


def missing_program(command: str) -> str | None:
    """What of ``command`` cannot run here: its program not on the gate's PATH (the interpreter's directory
    first, as the gate has it), or the module of ``python -m MODULE`` not installed; None when it can run or
    when that cannot be told from the command alone (a shell construct)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if not words or any(c in command for c in "|&;<>()$`") or "=" in words[0]:
        return None
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    if shutil.which(words[0], path=path) is None:
        return f"program {words[0]} is not on PATH"
    if words[0].startswith("python") and len(words) > 2 and words[1] == "-m":
        module = words[2]
        if importlib.util.find_spec(module.split(".")[0]) is None:
            return f"module {module} is not installed"
    return None


def _chosen(suite: Suite, problems: list[dict]) -> dict:
    out = dict(suite.to_dict(), runs_here=True)
    missing = missing_program(suite.command.cmd)
    if missing is not None:
        out["runs_here"] = False
        out["missing"] = missing
        problems.append({"what": f"the regression command `{suite.command.cmd}` (from {suite.why}) cannot run "
                                 f"here: {missing}; the regression gate would block every run before done",
                         "fix": "install what it needs, or set `regression:` in the loop to a command that runs "
                                "here (`regression: false` turns the suite off)"})
    return out


def _loop_overrides(project: Path) -> list[dict]:
    catalog = LoopCatalog(project)
    out = []
    for entry in catalog.entries():
        if not entry.valid:
            continue
        try:
            loop = catalog.load(entry.name)
        except OdinError:
            continue
        if loop.regression is True:
            continue
        suite = suite_for(loop.regression, project)
        out.append({"loop": entry.name, "source": entry.source,
                    "regression": suite.to_dict() if suite is not None else None})
    return out


def diagnose(project: Path) -> Doctor:
    """The project's checks (see the module docstring)."""
    project = Path(project)
    found = candidates(project)
    problems: list[dict] = []
    boxed = sandbox_check(problems)
    chosen = _chosen(found[0], problems) if found else None
    return Doctor(project=str(project.resolve()), regression=chosen, sandbox=boxed,
                  also_found=[s.to_dict() for s in found[1:]], loops=_loop_overrides(project), problems=problems)
