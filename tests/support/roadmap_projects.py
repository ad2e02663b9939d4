"""A roadmap project for the drive tests: roadmap.md, an app.py to fix, and one copy of the built-in
tiny-fix loop per phase (``fix-<phase>``, its apply stage ``apply-<phase>``: the scripted model's keys)."""

from __future__ import annotations

from pathlib import Path

from odin_magic.loop.catalog import builtin_loops_dir
from odin_magic.loop.roadmap import ROADMAP_FILE


#: A tiny-fix phase contract: format with phase, impact, gate (its command) and iterations.
TINY = """\
risk: tiny-fix
impact: {impact}
scope: ["app.py"]
criteria:
  - {{id: AC1, priority: P0, text: "Given the app, when greet is called, then it says hello.", verify: "grep -q hello app.py"}}
gate:
  kind: programmatic
  run: ["{gate}"]
max_iterations: {iterations}
loop: fix-{phase}
"""


def roadmap_project(project: Path, roadmap: str, phases: tuple[str, ...]) -> Path:
    """``project`` with the ``roadmap`` text and a tiny-fix loop per phase; its (empty) contracts dir."""
    contracts = project / ".odin-loop" / "contracts"
    contracts.mkdir(parents=True)
    (project / ROADMAP_FILE).write_text(roadmap)
    (project / "app.py").write_text("def greet():\n    return 'helo'\n")
    loops = project / ".odin-loop" / "loops"
    loops.mkdir()
    tiny = (builtin_loops_dir() / "tiny-fix.yaml").read_text()
    for phase in phases:
        (loops / f"fix-{phase}.yaml").write_text(
            tiny.replace("name: tiny-fix", f"name: fix-{phase}").replace("id: apply", f"id: apply-{phase}"))
    return contracts


_APP = "def greet():\n    return 'hello'\n"
#: Phase p1's worker fixes app.py; `{tamper}` is a bash command it runs first (or none).
_SCRIPT = """
stages:
  apply-p1:
    - tools:{tamper}
        - write: {{file_path: app.py, content: %r}}
        - write: {{file_path: "{{run_dir}}/change-notes.md", content: "changed app.py"}}
    - text: done
default_verdict: {{passed: true, reasons: [scripted]}}
""" % _APP
#: The worker's bash widening p1's own contract while its run drives (unsandboxed: docs/security.md).
WIDEN_P1 = "sed -i 's/scope: \\[\"app.py\"\\]/scope: [\"**\"]/' .odin-loop/contracts/p1.yaml"


def phase_blocked_on_its_contract(project: Path):
    """A two-phase autonomous roadmap whose p1 run ended done while its worker rewrote p1's contract: the driver
    blocks p1 on the contract. The driver's outcome (ODIN_SANDBOX must be off: the worker writes .odin-loop/)."""
    import json

    from odin_magic.engine.roadmap_driver import RoadmapDriver, RoadmapOptions
    from support.scripted_runs import scripted_engine

    roadmap = "# Greeter\n\nautonomy: autonomous\n\n## M1 Basics\n\n- [ ] p1 Greet with hello\n- [ ] p2 Add a farewell\n"
    contracts = roadmap_project(project, roadmap, ("p1", "p2"))
    for phase in ("p1", "p2"):
        (contracts / f"{phase}.yaml").write_text(
            TINY.format(phase=phase, impact="internal", gate="grep -q hello app.py", iterations=3))
    tamper = f"\n        - bash: {{command: {json.dumps(WIDEN_P1)}}}"
    engine, _ = scripted_engine(project, _SCRIPT.format(tamper=tamper))
    return RoadmapDriver(engine, options=RoadmapOptions()).run()
