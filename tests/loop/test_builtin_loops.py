"""The built-in loops' gate commands do what their stages claim, run the way the engine runs them.

A small project with a harness, a known-bad stub and an implementation is laid
out by hand (standing in for what the workers would write), and each gate
command of the built-in loops is run through the engine's own
``gates.run_command`` with the engine's environment (cwd = project,
ODIN_RUN_DIR, ODIN_PROJECT_DIR, ... and ``python`` first on PATH).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from odin_magic.loop.artifacts import in_run_dir
from odin_magic.loop.catalog import LoopCatalog
from odin_magic.engine.gates import command_env, run_command

CONFTEST = '''
import os
import sys
from pathlib import Path

target = os.environ.get("ODIN_TARGET_DIR") or str(Path(os.environ["ODIN_PROJECT_DIR"]) / "src")
sys.path.insert(0, target)
'''
HARNESS_TEST = '''
from slug import slugify


def test_spaces_become_hyphens():
    """criterion 1"""
    assert slugify("Hello World") == "hello-world"


def test_lower_case():
    """criterion 2"""
    assert slugify("ABC") == "abc"
'''
MANIFEST = """\
criteria:
  - id: AC1
    priority: P0
    text: spaces become hyphens
    verify: python -m pytest -q -p no:cacheprovider "$ODIN_RUN_DIR/harness" -k spaces
"""
GOOD = 'def slugify(text):\n    return "-".join(text.lower().split())\n'
STUB = "def slugify(text):\n    return text.lower()  # forgets the hyphens\n"


@pytest.fixture
def layout(tmp_path):
    project = tmp_path / "my project"  # a space, to prove the commands quote their paths
    run_dir = project / ".odin-loop" / "runs" / "r1"
    (run_dir / "harness" / "stub").mkdir(parents=True)
    (run_dir / "harness" / "conftest.py").write_text(CONFTEST)
    (run_dir / "harness" / "test_slug.py").write_text(HARNESS_TEST)
    (run_dir / "harness" / "stub" / "slug.py").write_text(STUB)
    (run_dir / "acceptance.yaml").write_text(MANIFEST)
    (project / "src").mkdir()
    (project / "src" / "slug.py").write_text(GOOD)
    return project, run_dir


def gate_codes(project: Path, run_dir: Path, loop_name: str, stage_id: str) -> list[int | None]:
    loop = LoopCatalog(project).load(loop_name)
    stage = loop.stage(stage_id)
    env = command_env(project, run_dir, "r1", stage_id)
    return [run_command(c, project, env).exit_code for c in stage.gate.commands]


def test_tdd_harness_design_gate_needs_the_conftest_and_a_valid_manifest(layout):
    project, run_dir = layout
    assert gate_codes(project, run_dir, "spec-harness-tdd", "harness-design") == [0, 0, 0]
    (run_dir / "acceptance.yaml").write_text(MANIFEST.replace("P0", "P3"))
    assert gate_codes(project, run_dir, "spec-harness-tdd", "harness-design")[2] == 1
    (run_dir / "harness" / "conftest.py").unlink()
    assert gate_codes(project, run_dir, "spec-harness-tdd", "harness-design")[0] != 0


def test_tdd_harness_verify_passes_only_when_the_stub_is_caught(layout):
    project, run_dir = layout
    assert gate_codes(project, run_dir, "spec-harness-tdd", "harness-verify") == [0]
    # a stub the harness cannot tell from the real thing: the gate must fail
    shutil.copy(project / "src" / "slug.py", run_dir / "harness" / "stub" / "slug.py")
    assert gate_codes(project, run_dir, "spec-harness-tdd", "harness-verify") != [0]
    # a stub that does not even import is a collection error (exit 2), not a catch
    (run_dir / "harness" / "stub" / "slug.py").write_text("raise ImportError('broken')\n")
    assert gate_codes(project, run_dir, "spec-harness-tdd", "harness-verify") != [0]


def test_tdd_implement_and_test_gates(layout):
    project, run_dir = layout
    assert gate_codes(project, run_dir, "spec-harness-tdd", "implement") == [0]
    assert gate_codes(project, run_dir, "spec-harness-tdd", "test") == [0]
    (project / "src" / "slug.py").write_text(STUB)
    assert gate_codes(project, run_dir, "spec-harness-tdd", "test") != [0]
    (project / "src" / "slug.py").write_text("def slugify(:\n")
    assert gate_codes(project, run_dir, "spec-harness-tdd", "implement") != [0]


def test_bugfix_gates_want_a_failing_then_passing_regression_test(layout):
    project, run_dir = layout
    tests = project / "tests"
    tests.mkdir()
    (tests / "conftest.py").write_text("import sys, pathlib\nsys.path.insert(0, str(pathlib.Path(__file__).parent.parent / 'src'))\n")
    (tests / "test_odin_regression.py").write_text(
        "from slug import slugify\n\ndef test_trailing_space():\n    assert slugify('a b ') == 'a-b'\n"
    )
    (project / "src" / "slug.py").write_text('def slugify(text):\n    return text.lower().replace(" ", "-")\n')
    assert gate_codes(project, run_dir, "bugfix", "regression-test") == [0]  # it fails: the bug is pinned
    assert gate_codes(project, run_dir, "bugfix", "fix") != [0]
    (project / "src" / "slug.py").write_text(GOOD)
    assert gate_codes(project, run_dir, "bugfix", "regression-test") != [0]
    assert gate_codes(project, run_dir, "bugfix", "fix") == [0]
    assert gate_codes(project, run_dir, "bugfix", "test") == [0]


def test_builtin_artifacts_land_where_the_docs_say(tmp_path):
    catalog = LoopCatalog(tmp_path)  # an empty project: the built-ins, not whatever the cwd holds
    run_scoped = {"spec.md", "interview-log.md", "plan.md", "acceptance.yaml", "harness/", "harness/stub/", "harness-report.md",
                  "test-report.md", "review.md", "repro.md", "fix-notes.md", "suite-report.md", "failures.md",
                  "diagnosis.md", "repair-notes.md", "setup.md", "runner.sh", "post-edit.sh", "change-notes.md",
                  "simplify-notes.md", "verify-report.md"}
    project_scoped = {"src/", "tests/test_odin_regression.py"}
    seen = set()
    for name in ("spec-harness-tdd", "bugfix", "keep-green", "ship-change"):
        for stage in catalog.load(name).stages:
            for entry in stage.produces + stage.consumes:
                seen.add(entry)
                assert in_run_dir(entry) is (entry in run_scoped), entry
    assert seen == run_scoped | project_scoped
