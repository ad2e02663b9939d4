"""The approval panel at a roadmap phase boundary (issue 22 item 6): the contract with Start / Skip / Edit contract;
each button's handler does what `%odin roadmap run` (`--skip PHASE`) does, and Save writes only a valid contract."""

from __future__ import annotations

import argparse
import hashlib

import pytest
import yaml

from odin_magic.loop.contract import contract_path, load_contract
from odin_magic.loop.roadmap import ROADMAP_FILE, load_roadmap
from odin_magic.notebook.roadmap_panel import PhasePanel
from odin_magic.notebook.roadmap_run import drive_again
from odin_magic.runs.roadmap_progress import progress, read_records

ROADMAP = "# Greeter\n\nautonomy: hitl\n\n## M1 Basics\n\n- [ ] p1 Greet with hello\n- [ ] p2 Greet louder\n"
CONTRACT = ("risk: tiny-fix\nscope: [app.py]\ncriteria:\n  - {id: AC1, priority: P0, text: 'Given the app, then it says "
            "hello.', verify: grep -q hello app.py}\ngate: {kind: programmatic, run: [\"grep -q hello app.py\"]}\n")
SCRIPT = {"stages": {"apply": [
    {"tools": [{"write": {"file_path": "app.py", "content": "def greet():\n    return 'hello'\n"}},
               {"write": {"file_path": "{run_dir}/change-notes.md", "content": "greet says hello"}}]},
    {"text": "done"}]}, "default_verdict": {"passed": True, "reasons": ["scripted"]}}


@pytest.fixture
def magics(ip, tmp_path):
    (tmp_path / ".odin-loop" / "contracts").mkdir(parents=True)
    (tmp_path / ROADMAP_FILE).write_text(ROADMAP, encoding="utf-8")
    for phase in ("p1", "p2"):
        contract_path(tmp_path, phase).write_text(CONTRACT, encoding="utf-8")
    script = tmp_path / "roadmap.script.yaml"
    script.write_text(yaml.safe_dump(SCRIPT), encoding="utf-8")
    ip.run_line_magic("odin", f"config project={tmp_path} script={script}")
    magics = ip.magics_manager.registry["OdinMagics"]
    yield magics
    magics.project, magics.script = "", None


def _panel(magics, project, phase):
    return PhasePanel(project, phase, load_contract(contract_path(project, phase)),
                      lambda skip: drive_again(magics, argparse.Namespace(action="run"), skip))


def test_edit_start_and_skip_at_a_phase_boundary(ip, magics, tmp_path):
    shown = repr(ip.run_line_magic("odin", "roadmap run"))
    assert "phase p1 (Greet with hello) waits for you before it starts" in shown, shown
    panel = _panel(magics, tmp_path, "p1")
    assert "risk</th><td>tiny-fix" in panel.contract_view.value and "AC1" in panel.contract_view.value
    assert "max_iterations 3" in panel.contract_view.value
    # Edit contract: the file's text; an invalid edit is refused at its line and the file stays as it was
    panel.edit()
    assert panel.editor.value == CONTRACT and panel.edit_box.layout.display == "flex"
    panel.editor.value = CONTRACT.replace("risk: tiny-fix", "risk: huge")
    assert panel.save() is False
    assert "p1.yaml:1:7: error: risk" in panel.message.value and contract_path(tmp_path, "p1").read_text() == CONTRACT
    panel.editor.value = CONTRACT + "max_iterations: 2\n"
    assert panel.save() is True
    assert load_contract(contract_path(tmp_path, "p1")).max_iterations == 2 and "max_iterations 2" in panel.contract_view.value
    # Start: `%odin roadmap run` again: p1 runs under the saved contract and is done; p2 waits before it starts
    panel.start()
    assert all(b.disabled for b in panel.buttons)
    roadmap = load_roadmap(tmp_path / ROADMAP_FILE)
    assert [p.done for p in roadmap.phases()] == [True, False]
    states = progress(tmp_path, roadmap)
    assert states["p2"].status == "paused" and states["p2"].pause == "start"
    runs = list(states["p1"].runs)
    # the edit saved at the pause is the contract p1's run is sealed with (roadmap.jsonl), not a tampering
    started = next(r for r in read_records(tmp_path) if r.type == "started" and r.phase == "p1")
    assert started.contract_sha256 == hashlib.sha256((CONTRACT + "max_iterations: 2\n").encode()).hexdigest()
    assert not states["p1"].contract_changed
    panel.start()  # a second click on a used panel drives nothing
    assert progress(tmp_path, load_roadmap(tmp_path / ROADMAP_FILE))["p1"].runs == runs
    # Skip: `%odin roadmap run --skip p2`: p2 is skipped without a run, and the roadmap is complete
    _panel(magics, tmp_path, "p2").skip()
    states = progress(tmp_path, load_roadmap(tmp_path / ROADMAP_FILE))
    assert states["p2"].status == "skipped" and states["p2"].runs == []
    assert "roadmap complete" in repr(ip.run_line_magic("odin", "roadmap run"))
    shown = ip.run_line_magic("odin", "roadmap")  # with the roadmap chart (phases over time) below the table
    assert "class='odin-roadmap-chart'" in shown._repr_html_() and "data:image/png;base64," in shown._repr_html_()
    assert "odin-roadmap-chart" not in repr(shown)  # the text stays the CLI's
