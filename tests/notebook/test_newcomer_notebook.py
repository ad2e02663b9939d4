"""Issue 10 in a real kernel (nbclient): outputs that read right in JupyterLab and in a saved
notebook (help as preformatted text, the live view's text/plain, simulate's summary), a task of
whitespace refused before any panel, the default loop named, ``%odin wait`` after ``abandon``."""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient

from support.nbtools import write_tiny_loop

pytestmark = pytest.mark.slow

CELLS = {
    "load": "%load_ext odin_magic",
    "help": "%odin help",
    "bare": "%odin",
    "help_run": "%odin help run",
    "simulate": "%odin simulate tiny --gates review:fail",
    "blank_task": '%odin run tiny --task "   " --dry',
    "run": "%odin run tiny --task 'write notes' --dry --wait",
    "abandon": "%odin abandon",
    "wait": "%odin wait",
    "default": "%odin run --task 'a default loop run' --dry --wait",
    "end": "%odin abandon",
}


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    where = tmp_path_factory.mktemp("newcomer")
    write_tiny_loop(where)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    for name, source in CELLS.items():
        c = nbformat.v4.new_code_cell(source)
        c.metadata["name"] = name
        if name == "blank_task":
            c.metadata["tags"] = ["raises-exception"]
        nb.cells.append(c)
    NotebookClient(nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(where)}}).execute()
    return {c.metadata["name"]: c.outputs for c in nb.cells}


def data_of(outputs, mime: str) -> str:
    return "".join(o.get("data", {}).get(mime, "") for o in outputs if o.output_type in ("execute_result", "display_data"))


def streams(outputs) -> str:
    return "".join(o.text for o in outputs if o.output_type == "stream")


def test_help_renders_as_preformatted_text(executed):
    for name, expected in (("help", "%odin run"), ("bare", "%odin run"), ("help_run", "--task")):
        html = data_of(executed[name], "text/html")
        assert "<pre>" in html and expected in html, name
        assert "<p>" not in html, name  # one paragraph would collapse the lines


def test_simulate_prints_the_cli_summary_not_a_dict(executed):
    text = data_of(executed["simulate"], "text/plain")
    assert "loopbacks  1  (review 1)" in text and "{" not in text
    assert "path       write → review → write → review → finish" in text


def test_a_whitespace_task_is_refused_before_any_panel(executed):
    outs = executed["blank_task"]
    said = streams(outs) + "".join(o.get("evalue", "") for o in outs if o.output_type == "error")
    assert "a new run needs a task" in said  # IPython's one-line UsageError
    assert not [o for o in outs if o.output_type == "display_data"]  # no live view, no panel


def test_the_live_view_text_is_the_status_where_widgets_cannot_render(executed):
    views = [o for o in executed["run"] if o.output_type == "display_data" and "tiny" in o.data.get("text/plain", "")]
    assert len(views) == 1 and not [o for o in executed["run"] if o.output_type == "execute_result"]  # shown once
    text = views[0].data["text/plain"]
    assert not text.startswith("VBox(") and "VBox" not in text
    # the latest status, saved with the notebook: a later cell abandoned the run, and the view froze into it
    assert "abandoned" in text and "%odin approve" not in text
    assert "application/vnd.jupyter.widget-view+json" not in views[0].data and "abandoned" in views[0].data["text/html"]


def test_wait_after_abandon_shows_the_run_abandoned(executed):
    text = data_of(executed["wait"], "text/plain")
    assert "abandoned" in text
    assert "awaiting approval" not in text and "%odin approve" not in text


def test_the_notebook_says_which_loop_it_defaulted_to(executed):
    assert "starting the default loop spec-harness-tdd" in streams(executed["default"])
