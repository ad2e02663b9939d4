"""Every example notebook executes in a real kernel (nbclient), each in a copy in tmp_path. The quickstart is
executed by scripts/quickstart.sh, and what it shows is checked there (tests/project/test_scripts.py)."""

from __future__ import annotations

import os

import pytest

from support.nbtools import execute_notebook, outputs_text

pytestmark = pytest.mark.slow


def test_authoring_writes_validates_draws_and_simulates_a_loop(tmp_path):
    nb = execute_notebook("authoring.ipynb", tmp_path)
    texts = outputs_text(nb)
    joined = "\n".join(texts)
    assert "on_fial" in joined and "nothing saved" in joined
    assert "saved to .odin-loop/loops/doc-review.yaml" in joined
    assert "draft → critique → draft → critique → draft → critique → polish" in joined
    assert (tmp_path / ".odin-loop" / "loops" / "doc-review.yaml").is_file()
    pngs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    assert pngs, "show draws the loop"
    assert "✅ done" in joined
    # part 2: new -> dry runs -> refine -> apply
    from odin_magic.loop.catalog import LoopCatalog

    assert "wrote .odin-loop/loops/release-notes.yaml" in joined
    refine_html = "".join(o.get("data", {}).get("text/html", "") for c in nb.cells if c.cell_type == "code"
                          for o in c.outputs if "%odin refine release-notes" in c.source)
    assert "loop release-notes: 3 run(s): 2 done, 1 failed" in refine_html and "data:image/png" in refine_html
    for title in ("raise max_iterations from 2 to 4", "loop check back to draft", "sharpen the check of review"):
        assert title in refine_html
    assert "applied release-notes-1" in joined
    assert "is stale" in joined  # the last cell: a proposal made against version 1
    loop = LoopCatalog(tmp_path).load("release-notes")
    assert loop.version == 2 and loop.max_iterations == 4
    assert (tmp_path / ".odin-loop" / "loops" / ".history" / "release-notes.v1.yaml").is_file()


@pytest.mark.skipif(not os.environ.get("ANTHROPIC_API_KEY"), reason="real-claude.ipynb calls the Anthropic API: "
                    "set ANTHROPIC_API_KEY to run it")
def test_real_claude_notebook(tmp_path):
    nb = execute_notebook("real-claude.ipynb", tmp_path)
    assert (tmp_path / "greet.py").is_file()
    assert any("done" in t for t in outputs_text(nb))


def test_real_claude_notebook_stops_at_its_first_cell_without_a_key(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    from nbclient.exceptions import CellExecutionError

    with pytest.raises(CellExecutionError, match="set ANTHROPIC_API_KEY"):
        execute_notebook("real-claude.ipynb", tmp_path)
    assert not (tmp_path / ".odin-loop").exists()  # nothing ran
