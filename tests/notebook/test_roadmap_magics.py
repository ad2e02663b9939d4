"""`%odin roadmap new` (issue 22 item 1) in the notebook: the scripted model proposes, the proposal waits, and
only Accept (the panel's button, or `%odin roadmap accept`) writes .odin-loop/roadmap.md."""

from __future__ import annotations

import pytest
import yaml
from IPython.core.error import UsageError

from odin_magic.authoring.roadmap_new import PROPOSAL_FILE
from odin_magic.loop.roadmap import ROADMAP_FILE, load_roadmap

PROPOSAL = {"title": "Config loader", "milestones": [
    {"id": "M1", "title": "Read it", "phases": [{"id": "p1.1", "title": "Parse the config file"}]},
    {"id": "M2", "title": "Use it", "phases": [{"id": "p2.1", "title": "Load it at start-up"}]}]}


@pytest.fixture
def magics(ip, tmp_path):
    (tmp_path / "spec.md").write_text("# Spec\nA config loader.\n", encoding="utf-8")
    script = tmp_path / "roadmap.script.yaml"
    script.write_text(yaml.safe_dump({"answers": {"roadmap": {"new": [{"json": PROPOSAL}]}}}), encoding="utf-8")
    ip.run_line_magic("odin", f"config project={tmp_path} script={script}")
    magics = ip.magics_manager.registry["OdinMagics"]
    yield magics
    magics.project, magics.script, magics.widgets = "", None, None


def test_without_widgets_the_proposal_waits_for_accept(ip, magics, tmp_path):
    magics.widgets = False
    shown = repr(ip.run_line_magic("odin", "roadmap new --from spec.md"))
    assert "proposed roadmap (not written yet" in shown and "%odin roadmap accept" in shown
    assert (tmp_path / PROPOSAL_FILE).is_file() and not (tmp_path / ROADMAP_FILE).exists()
    assert "wrote" in repr(ip.run_line_magic("odin", "roadmap accept"))
    assert [p.id for p in load_roadmap(tmp_path / ROADMAP_FILE).phases()] == ["p1.1", "p2.1"]
    assert not (tmp_path / PROPOSAL_FILE).exists()
    with pytest.raises(UsageError, match="already exists"):
        ip.run_line_magic("odin", "roadmap new --from spec.md")
    with pytest.raises(UsageError, match="no roadmap proposal is waiting"):
        ip.run_line_magic("odin", "roadmap accept")
    shown = ip.run_line_magic("odin", "roadmap")
    assert "<progress value='0' max='1'" in shown._repr_html_() and "M2 Use it" in repr(shown)


def test_the_panel_writes_on_accept_and_nothing_on_discard(ip, magics, tmp_path):
    magics.widgets = True
    panel = ip.run_line_magic("odin", "roadmap new --from spec.md")
    panel.discard_button.click()
    assert "discarded" in panel.status.value and panel.accept_button.disabled
    assert not (tmp_path / PROPOSAL_FILE).exists() and not (tmp_path / ROADMAP_FILE).exists()
    panel = ip.run_line_magic("odin", "roadmap new --from spec.md")
    assert "- [ ] p1.1 Parse the config file" in panel.children[0].value  # the Markdown, folded
    assert "<progress value='0' max='1'" in panel.children[0].value  # drawn as the roadmap view draws it
    panel.accept_button.click()
    assert "wrote" in panel.status.value
    assert load_roadmap(tmp_path / ROADMAP_FILE).title == "Config loader"


def test_an_option_for_another_action_is_one_line(ip, magics):
    with pytest.raises(UsageError, match="--from is for `%odin roadmap new`"):
        ip.run_line_magic("odin", "roadmap validate --from spec.md")


def test_a_misspelt_action_is_named_with_a_suggestion_as_the_terminal_says_it(ip, magics):
    with pytest.raises(UsageError) as info:
        ip.run_line_magic("odin", "roadmap rnu")
    assert str(info.value) == ("unknown action 'rnu' (did you mean 'run'?); `%odin roadmap --help` lists the "
                               "actions")
