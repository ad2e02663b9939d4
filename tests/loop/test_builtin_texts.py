"""What the built-in loops tell a model (issue 25, item 8): nothing that points at odin-magic's own docs,
the acceptance.yaml structure inline, and the critic's deliberately wrong stub labelled where a later
stage reads the harness."""

from __future__ import annotations

from pathlib import Path

import yaml

from odin_magic.loop.catalog import builtin_loops_dir
from odin_magic.workers.prompts import read_artifact


def _stages():
    for path in sorted(builtin_loops_dir().glob("*.yaml")):
        for stage in yaml.safe_load(path.read_text())["stages"]:
            yield path.stem, stage


def test_no_builtin_prompt_points_at_odin_magic_docs():
    for loop, stage in _stages():
        assert "docs/" not in (stage.get("prompt") or ""), (loop, stage["id"])


def test_harness_design_inlines_the_manifest_structure_and_keeps_the_interview_ids():
    prompt = next(s["prompt"] for loop, s in _stages() if loop == "spec-harness-tdd" and s["id"] == "harness-design")
    for needed in ("criteria:", "- id: AC1", "priority: P0", "verify:", "already", "keep its ids"):
        assert needed in prompt, needed


def test_the_critics_stub_is_labelled_when_a_stage_reads_the_harness(tmp_path: Path):
    project, run_dir = tmp_path / "p", tmp_path / "p" / ".odin-loop" / "runs" / "r"
    (run_dir / "harness" / "stub").mkdir(parents=True)
    (run_dir / "harness" / "test_calc.py").write_text("def test_add(): ...\n")
    (run_dir / "harness" / "stub" / "calc.py").write_text("def add(a, b): return a - b\n")
    text = read_artifact(run_dir / "harness", roots=(project, run_dir))
    assert "--- stub/calc.py (known-bad stub: do not copy) ---" in text
    assert "--- test_calc.py ---" in text
