"""A dry run's placeholders are valid for their file type: the project's own pytest still passes."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

import nbformat
import yaml

from odin_magic.engine.orchestrator import Engine
from odin_magic.runs.state import DryOptions

TYPED_LOOP = """
name: typed
max_iterations: 2
stages:
  - id: write
    produces: [src/helper.py, tests/test_new.py, tests/feature_test.py, conf/settings.json, conf/ci.yaml,
               conf/tool.toml, notes/explore.ipynb, web/app.js, notes/readme.md]
    gate: {mode: ai, check: the files exist}
"""


def test_placeholders_parse_as_their_file_type_and_the_projects_pytest_passes(project, write_loop):
    (project / "tests").mkdir()
    (project / "tests" / "test_mine.py").write_text("def test_mine():\n    assert 1 + 1 == 2\n")
    write_loop(TYPED_LOOP)
    assert Engine(project).start("typed", "t", dry=DryOptions(approve_all=True)).status == "done"
    # the built-in bugfix loop writes the README's example, tests/test_odin_regression.py, in the project
    Engine(project).start("bugfix", "t", dry=DryOptions(approve_all=True))
    assert (project / "tests" / "test_odin_regression.py").is_file()

    for name in ("src/helper.py", "tests/test_new.py", "tests/feature_test.py", "tests/test_odin_regression.py"):
        compile((project / name).read_text(), name, "exec")  # a SyntaxError fails the test
    assert json.loads((project / "conf/settings.json").read_text())
    yaml.safe_load((project / "conf/ci.yaml").read_text())
    tomllib.loads((project / "conf/tool.toml").read_text())
    nbformat.validate(nbformat.reads((project / "notes/explore.ipynb").read_text(), as_version=4))
    assert (project / "web/app.js").read_text().startswith("// Placeholder written by an odin dry run")
    assert (project / "notes/readme.md").read_text().startswith("Placeholder written by an odin dry run")

    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                          cwd=project, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed, 3 skipped" in proc.stdout  # the user's own test runs; the placeholders' tests are skipped
