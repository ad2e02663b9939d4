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
