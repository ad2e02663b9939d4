"""A done run in a real git repository, for the delivery tests (odin deliver, %odin deliver): a three-stage
loop run through the real engine against the offline scripted model; what of the user's delivery must not
touch (``user_side``)."""

from __future__ import annotations

import hashlib
import subprocess
import textwrap
from pathlib import Path

from support.scripted_runs import scripted_engine

SECRET = "sk-ant-api03-deliverysecret-0123456789"

LOOP = """
name: ship
max_iterations: 6
stages:
  - id: plan
    agent: planner
    goal: Write the acceptance criteria
    produces: [acceptance.yaml]
    gate: {mode: ai, check: criteria written}
  - id: build
    goal: Print the new greeting
    gate: {mode: ai, check: built, run: ["grep -q new app.py"]}
  - id: docs
    goal: Document the greeting
    gate: {mode: ai, check: documented}
"""

MANIFEST = ("criteria:\\n  - id: AC1\\n    priority: P0\\n    text: the greeting is new\\n"
            "    verify: grep -q new app.py\\n  - id: AC2\\n    priority: P1\\n    text: a changelog exists\\n"
            "    verify: test -f CHANGELOG\\n")

SCRIPT = f"""
stages:
  plan:
    - tools: [{{write: {{file_path: "$ODIN_RUN_DIR/acceptance.yaml", content: "{MANIFEST}"}}}}]
    - text: planned
  build:
    - tools:
        - write: {{file_path: app.py, content: "print('new')\\n"}}
        - bash: {{command: "rm old.txt && mkdir -p src && printf 'x = 1\\\\n' > src/util.py"}}
    - text: built
  docs:
    - tools: [{{write: {{file_path: README.md, content: "# greeting\\n"}}}}]
    - text: documented
default_verdict: {{status: DONE, passed: true, reasons: ["app.py prints the new greeting"],
                  non_blocking: ["the greeting is not translated"]}}
"""


def git(project: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(["git", *args], cwd=project, check=check, capture_output=True, text=True).stdout


def init_repo(project: Path, top: Path | None = None) -> None:
    """A repository at ``top`` (default: the project) whose first commit holds the project's files."""
    top = top or project
    git(top, "init", "-q", "-b", "main")
    git(top, "config", "user.name", "Test User")
    git(top, "config", "user.email", "test@example.com")
    (project / "app.py").write_text("print('old')\n")
    (project / "old.txt").write_text("to be removed\n")
    (project / ".gitignore").write_text("*.log\n")
    git(top, "add", "-A")
    git(top, "commit", "-qm", "initial")


def run_loop(project: Path, task: str = "say a new greeting"):
    loops = project / ".odin-loop" / "loops"
    loops.mkdir(parents=True, exist_ok=True)
    (loops / "ship.yaml").write_text(textwrap.dedent(LOOP))
    engine, _ = scripted_engine(project, SCRIPT)
    state = engine.start("ship", task)
    assert state.status == "done", state.failure_reason
    return engine, state


def user_side(project: Path, refs: bool = False) -> dict:
    """Everything of the user's that delivery must not touch: HEAD, current branch, index bytes, every
    file outside .odin-loop/ and .git/, git status (and, ``refs``, every ref: a refusal makes no branch)."""
    status = git(project, "status", "--porcelain")  # first: it may refresh the index's stat data
    files = {}
    for p in sorted(project.rglob("*")):
        rel = p.relative_to(project)
        if rel.parts[0] in (".odin-loop", ".git") or not p.is_file():
            continue
        files[rel.as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return {"head": git(project, "rev-parse", "HEAD", check=False), "branch": git(project, "symbolic-ref", "-q", "HEAD", check=False),
            "index": (project / ".git" / "index").read_bytes() if (project / ".git" / "index").exists() else b"",
            "files": files, "status": status,
            "refs": git(project, "for-each-ref", check=False) if refs else ""}
