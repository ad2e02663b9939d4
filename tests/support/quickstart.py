"""What the executed quickstart notebook must show: checked on the notebook scripts/quickstart.sh executes and
saves (tests/project/test_scripts.py), so the quickstart runs in a kernel once per check, not once more."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from support.nbtools import outputs_text

#: what the executed quickstart may weigh, saved (issue 18 item 10: it was 1.78 MB, 842 KB of it widget state)
QUICKSTART_BYTES = 300_000
STATUS_CELL = re.compile(r"%odin (status|\w+ .*--wait)\s*$")


def the_quickstart_ran_spec_harness_tdd_to_done_offline(nb, project: Path) -> None:
    """The deep interview ran in the notebook, the run reached done (verified: manifest, kill ratio, criteria,
    report), and its files are in ``project`` (the notebook's folder)."""
    texts = outputs_text(nb)
    # the deep interview ran in the notebook: its questions shown, answered by `%odin answer` cells
    answer_cells = [t for c, t in zip((c for c in nb.cells if c.cell_type == "code"), texts)
                    if c.source.startswith("%odin answer")]
    assert len(answer_cells) == 4
    assert "Round 1 | Component: Arithmetic" in answer_cells[0]  # confirming round 0 brings round 1
    assert "What must divide(a, 0) do?" in answer_cells[1]
    assert "awaiting_approval" in answer_cells[-1] and "ambiguity 0.10 vs threshold 0.15" in answer_cells[-1]
    assert any("## Convergence" in t for t in texts)  # the spec the interview wrote, printed
    assert any("✅ done" in t for t in texts)
    assert any("divide(1, 0) raises ValueError" in t for t in texts)
    # done means verified: the manifest, the kill ratio, each criterion, and the run's report (issue 13)
    joined = "\n".join(texts)
    assert "- id: AC3" in joined and "✅ AC3 P0" in joined
    assert re.search(r"kill ratio (\d+)/\1 = 1\.00 \(min 0\.6\)", joined), joined
    assert "## Acceptance criteria" in joined and "## Gates proven able to fail" in joined
    assert not any("Unknown child process" in t for t in texts)  # background noise stays out of cells
    run_dir = next((project / ".odin-loop" / "runs").iterdir())
    state = json.loads((run_dir / "state.json").read_text())
    assert state["status"] == "done"
    assert [e["stage"] for e in state["history"] if e["gate"] == "approved"] == ["interview", "plan", "review"]
    assert state["total_iterations"] == 1  # the first implementation failed the harness once
    assert state["interview"]["rounds"] == 3 and state["interview"]["ambiguity"] <= 0.15
    assert (project / "src" / "calc.py").is_file()  # the deliverable, beside the notebook
    for doc in ("spec.md", "interview-log.md", "plan.md", "review.md"):
        assert (run_dir / doc).is_file()


def shown_texts(output) -> list[str]:
    """An output's text and markdown, and its HTML as text (tags as line breaks)."""
    data = output.get("data", {})
    texts = [output.get("text", ""), data.get("text/plain", ""), data.get("text/markdown", "")]
    return texts + [html.unescape(re.sub(r"<[^>]+>", "\n", data.get("text/html", "")))]


def the_notebook_is_light_and_says_each_thing_once(nb, saved: Path) -> None:
    """The executed quickstart ``nb``, as written to disk at ``saved``: under QUICKSTART_BYTES; each cell that
    waits for the run (or asks for its status) shows the status once; widget state is saved only for widgets an
    output still shows; the cost reads the same way throughout."""
    size = saved.stat().st_size
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    assert size < QUICKSTART_BYTES, f"{size} bytes, {len(json.dumps(state))} of them widget state"
    shown_widgets = set()
    status_cells = [c for c in nb.cells if c.cell_type == "code" and STATUS_CELL.match(c.source.strip())]
    assert len(status_cells) == 9
    for c in status_cells:
        statuses = [o for o in c.outputs if o.get("data", {}).get("text/plain", "").startswith("run      ")]
        assert len(statuses) == 1, (c.source, [o.output_type for o in c.outputs])
    for c in nb.cells:
        for o in c.get("outputs", []):
            view = o.get("data", {}).get("application/vnd.jupyter.widget-view+json")
            if view:
                shown_widgets.add(view["model_id"])
    assert shown_widgets <= set(state)  # every widget an output shows can be shown again
    texts = [t for c in nb.cells for o in c.get("outputs", []) for t in shown_texts(o)]
    costs = [m.group(1).strip() for t in texts for line in t.splitlines() if (m := re.search(r"tokens, (.+)$", line))]
    assert costs and all(cost.endswith("if run on Claude; nothing spent") for cost in costs), costs
    assert not any("$0.0000" in t for t in texts)
