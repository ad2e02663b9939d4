"""`%odin roadmap` in a real kernel (issue 22 item 6): milestones with progress bars and each phase's run linked
to its report; a proposal's Accept / Discard panel as a widget, accepted through its button."""

from __future__ import annotations

import pytest
import yaml

from odin_magic.loop.roadmap import ROADMAP_FILE, load_roadmap
from support.nbtools import Kernel, text_of, without_model_key, write_tiny_loop

ROADMAP = "# Notes\n## M1 Write\n- [ ] p1.1 Write the notes\n- [ ] p1.2 Review them\n## M2 Ship\n- [ ] p2.1 Ship\n"
PROPOSAL = {"title": "Notes", "milestones": [{"id": "M1", "title": "Write", "phases": [
    {"id": "p1.1", "title": "Write the notes"}]}]}


@pytest.fixture
def kernel(project, monkeypatch):
    without_model_key(monkeypatch)
    k = Kernel(project)
    k.execute("%load_ext odin_magic")
    yield k
    k.shutdown()


def test_the_roadmap_renders_with_progress_bars_and_report_links(kernel, project):
    write_tiny_loop(project)
    (project / ROADMAP_FILE).write_text(ROADMAP, encoding="utf-8")
    kernel.execute("%odin run tiny --task 'roadmap phase p1.1: Write the notes' --dry --approve-all --wait")
    (result,) = [m for m in kernel.execute("%odin roadmap") if m["msg_type"] == "execute_result"]
    page, plain = result["content"]["data"]["text/html"], result["content"]["data"]["text/plain"]
    assert "<progress value='1' max='2'" in page and "<progress value='0' max='1'" in page
    assert "href='.odin-loop/runs/" in page and "/report.md'" in page
    assert "[x] p1.1 Write the notes" in plain and "report: .odin-loop/runs/" in plain


def test_a_proposal_waits_in_a_panel_until_accept(kernel, project):
    (project / "spec.md").write_text("# Spec\nNotes.\n", encoding="utf-8")
    script = project / "roadmap.script.yaml"
    script.write_text(yaml.safe_dump({"answers": {"roadmap": {"new": [{"json": PROPOSAL}]}}}), encoding="utf-8")
    kernel.execute('%config OdinMagics.script = "roadmap.script.yaml"')
    shown = kernel.execute("panel = %odin roadmap new --from spec.md\npanel")
    assert any("application/vnd.jupyter.widget-view+json" in m["content"].get("data", {}) for m in shown)
    assert not (project / ROADMAP_FILE).exists()
    out = text_of(kernel.execute("panel.accept_button.click(); print(panel.status.value)"))
    assert "wrote" in out
    assert load_roadmap(project / ROADMAP_FILE).phases()[0].id == "p1.1"
