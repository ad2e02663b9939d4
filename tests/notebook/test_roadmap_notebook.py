"""example_notebooks/roadmap.ipynb (issue 22 item 7) in a real kernel (nbclient): the example roadmap driven to the
end offline by its scripted model, with the pauses the autonomy mode asks for approved by `%odin roadmap run`."""

from __future__ import annotations

import shutil

import pytest

from odin_magic.learning.memory import Memory
from odin_magic.loop.roadmap import ROADMAP_FILE, load_roadmap
from odin_magic.runs.roadmap_progress import progress
from support.nbtools import NOTEBOOKS, execute_notebook, outputs_text, without_model_key

pytestmark = pytest.mark.slow


def test_the_roadmap_notebook_takes_every_phase_to_done_offline(tmp_path, monkeypatch):
    without_model_key(monkeypatch)
    monkeypatch.delenv("ODIN_MODEL", raising=False)
    shutil.copytree(NOTEBOOKS / "roadmap", tmp_path / "roadmap")
    nb = execute_notebook("roadmap.ipynb", tmp_path, extra=("roadmap.script.yaml",))
    texts = outputs_text(nb)
    cells = [c.source.strip() for c in nb.cells if c.cell_type == "code"]
    shown = dict(enumerate(texts))
    runs = [shown[i] for i, source in enumerate(cells) if source == "%odin roadmap run"]
    views = [shown[i] for i, source in enumerate(cells) if source == "%odin roadmap"]
    assert len(runs) == 3 and len(views) == 2
    assert "3 phase(s): 3 pending" in views[0]
    # autonomous: p1.1 and p1.2 back to back; the user-facing p2.1 waits before it starts, showing its contract
    assert "phase p1.1 done" in runs[0] and "phase p1.2 done with concerns" in runs[0], runs[0]
    assert "phase p2.1 (Print the counts as JSON instead of plain text) waits for you before it starts" in runs[0]
    assert "risk risky, impact user-facing" in runs[0]
    # approved: p2.1 runs (the sensor on its gate), DONE, and a risky phase waits for a sign-off
    assert "a risky phase needs a person's sign-off" in runs[1], runs[1]
    assert "roadmap complete" in runs[2], runs[2]
    assert "3 phase(s): 2 done, 1 done with concerns" in views[1], views[1]
    project = tmp_path / "wordcount"
    roadmap = load_roadmap(project / ROADMAP_FILE)
    assert all(phase.done for phase in roadmap.phases())
    states = progress(project, roadmap)
    assert [states[p].status for p in ("p1.1", "p1.2", "p2.1")] == ["done", "done_with_concerns", "done"]
    assert all(len(states[p].runs) == 1 for p in states)  # each phase ran once: no loopback, nothing redone
    assert any(e.kind == "lesson" and "--lines" in e.text for e in Memory(project).entries())
    assert '{"words": 3, "lines": 2}' in texts[-1]  # the shipped code prints JSON
