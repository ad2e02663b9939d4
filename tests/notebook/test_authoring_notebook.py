"""``%odin new`` / ``%odin refine`` / ``%odin memory`` in a real kernel: the form widget driven through its
widgets, one step at a time, with its preview; the refine report and its Apply panel."""

from __future__ import annotations

import textwrap

import pytest

from support.nbtools import Kernel, final_text_of, text_of, without_model_key
from odin_magic.loop.catalog import LoopCatalog


@pytest.fixture
def kernel(project, monkeypatch):
    without_model_key(monkeypatch)
    k = Kernel(project)
    k.execute("%load_ext odin_magic")
    yield k
    k.shutdown()


FILL_THE_FORM = textwrap.dedent("""\
    form = %odin new notes
    steps = []
    form.kind.value = "documentation"
    form.next.click(); steps.append(form.step)
    form.stages_text.value = "draft: Write the notes.\\nreview: Independent review of the notes."
    form.next.click(); steps.append(form.step)
    form.gate_rows["draft"]["check"].value = "notes cover every point"
    form.gate_rows["review"]["check"].value = "review.md lists no blocking finding"
    form.gate_rows["review"]["mode"].value = "ai+human"
    form.next.click(); steps.append(form.step)
    form.loopback_rows["review"].value = "draft"
    form.next.click(); steps.append(form.step)
    form.max_iterations.value = 3
    form.next.click(); steps.append(form.step)
    roles = {sid: dd.value for sid, dd in form.role_rows.items()}
    form.next.click(); steps.append(form.step)
    print("steps", steps, "roles", roles)
    print("diagram bytes", len(form.diagram.value))
    print(form.preview.value)
""")


def test_the_form_asks_one_question_at_a_time_previews_and_writes_a_loop_that_runs(kernel, project):
    out = text_of(kernel.execute(FILL_THE_FORM))
    assert "steps [1, 2, 3, 4, 5, 6]" in out
    assert "'review': 'reviewer'" in out and "'draft': 'inline'" in out  # question 6's defaults
    assert int(out.split("diagram bytes ")[1].split()[0]) > 1000  # the loop picture was drawn
    assert "on_fail: draft" in out and "max_iterations: 3" in out  # the live YAML preview
    assert not (project / ".odin-loop" / "loops" / "notes.yaml").exists()  # nothing written yet
    out = text_of(kernel.execute("form.write_button.click(); print(form.message.value)"))
    assert "wrote" in out
    loop = LoopCatalog(project).load("notes")
    assert loop.stage("review").gate.on_fail == "draft" and loop.stage("review").agent == "reviewer"
    out = final_text_of(kernel.execute("%odin run notes --task 'the notes' --dry --approve-all --wait"))
    assert "done" in out


def test_a_problem_sends_the_form_back_to_its_question(kernel, project):
    code = textwrap.dedent("""\
        form = %odin new broken
        form.kind.value = "coding"
        form.stages_text.value = "audit: Audit the repository."
        form.go(2); form.gate_rows["audit"]["check"].value = "audit.md lists every finding"
        form.go(5); form.role_rows["audit"].value = "reviewer"
        form.go(6); form.write_button.click()
        print("step", form.step); print(form.message.value)
    """)
    out = text_of(kernel.execute(code))
    assert "step 5" in out and "question 6 (roles)" in out and "consumes" in out  # the validator's message
    assert not (project / ".odin-loop" / "loops" / "broken.yaml").exists()
    out = text_of(kernel.execute("%odin new ../escape", allow_error=True))
    assert "not a loop name" in out and "Traceback" not in out


def test_refine_report_and_the_apply_panel_in_a_kernel(kernel, project):
    loops = project / ".odin-loop" / "loops"
    loops.mkdir(parents=True)
    (loops / "tiny.yaml").write_text(textwrap.dedent("""\
        name: tiny
        version: 1
        max_iterations: 2
        max_repeats: 9
        stages:
          - id: write
            produces: [notes.md]
            gate: {mode: ai, check: notes.md exists}
          - id: check
            consumes: [notes.md]
            produces: [check.md]
            gate: {mode: ai, check: check.md finds no gap}
    """))
    kernel.execute("%odin run tiny --task one --dry --gates check:fail,check:fail,check:fail --wait")
    outputs = kernel.execute("%odin refine tiny")
    html = "".join(m["content"]["data"].get("text/html", "") for m in outputs if m["msg_type"] == "display_data")
    assert "data:image/png;base64," in html and "raise max_iterations from 2 to 4" in html
    out = text_of(kernel.execute(textwrap.dedent("""\
        import ipywidgets as w
        panels = [c for c in w.Widget.widgets.values() if "odin-proposal" in getattr(c, "_dom_classes", ())]
        panel = next(p for p in panels if "max_iterations" in p.children[0].value)
        panel.apply_button.click()
        print(panel.status.value)
    """)))
    assert "applied tiny-" in out and "version 2" in out
    assert LoopCatalog(project).load("tiny").max_iterations == 4
    assert (loops / ".history" / "tiny.v1.yaml").is_file()
    out = text_of(kernel.execute("%odin memory"))
    assert "no memory yet" in out  # a dry run leaves none
