"""The example roadmap (issue 22 item 7): two milestones, three phases — a tiny fix, a standard feature and a
risky user-facing change — each with a contract that validates against the loop catalog."""

from __future__ import annotations

import shutil

from odin_magic.loop.contract import contract_path, validate_contract_text
from odin_magic.loop.roadmap import ROADMAP_FILE, load_roadmap
from support import REPO

EXAMPLE = REPO / "example_notebooks" / "roadmap"


def test_the_example_roadmap_and_its_contracts_validate_in_a_project(tmp_path):
    shutil.copytree(EXAMPLE / "project", tmp_path, dirs_exist_ok=True)
    (tmp_path / ".odin-loop").mkdir()
    shutil.copy(EXAMPLE / "roadmap.md", tmp_path / ROADMAP_FILE)
    shutil.copytree(EXAMPLE / "contracts", tmp_path / ".odin-loop" / "contracts")
    roadmap = load_roadmap(tmp_path / ROADMAP_FILE)
    assert [m.id for m in roadmap.milestones] == ["M1", "M2"] and roadmap.autonomy == "autonomous"
    contracts = {}
    for phase in roadmap.phases():
        path = contract_path(tmp_path, phase.id)
        report = validate_contract_text(path.read_text(encoding="utf-8"), str(path), tmp_path)
        assert report.ok, report.format()
        contracts[phase.id] = report.contract
    assert [c.risk for c in contracts.values()] == ["tiny-fix", "standard", "risky"]
    # every phase names the short tiny-fix loop, so that roadmap.ipynb runs offline in seconds; without `loop:`
    # the standard and risky phases would run spec-harness-tdd
    assert [c.loop_name for c in contracts.values()] == ["tiny-fix", "tiny-fix", "tiny-fix"]
    assert [c.model_copy(update={"loop": None}).loop_name for c in contracts.values()] == [
        "tiny-fix", "spec-harness-tdd", "spec-harness-tdd"]
    assert contracts["p2.1"].needs_person and contracts["p2.1"].sensor_on
    assert not contracts["p1.1"].needs_person and not contracts["p1.2"].needs_person
