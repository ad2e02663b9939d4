"""The roadmap file (issue 22 item 1): parsed with located diagnostics, loaded with one-line errors,
one phase's line edited exactly and atomically."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from odin_magic.core.confine import LinkInPath
from odin_magic.core.errors import OdinError
from odin_magic.loop.roadmap import ROADMAP_FILE, load_roadmap, parse_roadmap, set_phase

GOOD = """\
# Ship the config loader
autonomy: autonomous

Some prose about the plan, kept as it is.

## M1 Parse the file
- [x] p1.1 Parse the config file
- [ ] p1.2 Report bad keys by line — blocked: needs the schema
  - [ ] an indented checkbox is prose, not a phase

## M2 Use it
```
- [ ] not-a-phase inside a code fence
```
- [ ] p2.1 Load the config at start-up
"""


def errors(text: str) -> list[str]:
    _, diags = parse_roadmap(textwrap.dedent(text), "roadmap.md")
    return [f"{d.line}:{d.field}: {d.message}" for d in diags if d.severity == "error"]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / ROADMAP_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    return path


def test_a_good_roadmap_parses_in_drive_order():
    roadmap, diags = parse_roadmap(GOOD, "roadmap.md")
    assert diags == []
    assert roadmap.title == "Ship the config loader"
    assert roadmap.autonomy == "autonomous"
    assert [(m.id, m.title, m.line) for m in roadmap.milestones] == [("M1", "Parse the file", 6), ("M2", "Use it", 11)]
    phases = roadmap.phases()
    assert [(p.id, p.done, p.milestone, p.line) for p in phases] == [
        ("p1.1", True, "M1", 7), ("p1.2", False, "M1", 8), ("p2.1", False, "M2", 15)]
    assert phases[1].title == "Report bad keys by line"
    assert phases[1].note == "blocked: needs the schema"
    assert phases[0].note is None
    assert roadmap.phase("p2.1").title == "Load the config at start-up"


def test_autonomy_defaults_to_hitl():
    roadmap, _ = parse_roadmap("# T\n## M1 One\n- [ ] a Do it\n", "roadmap.md")
    assert roadmap.autonomy == "hitl"


def test_a_missing_phase_is_named_with_a_close_spelling():
    roadmap, _ = parse_roadmap(GOOD, "roadmap.md")
    with pytest.raises(OdinError) as err:
        roadmap.phase("p1.3")
    assert "no phase 'p1.3'" in err.value.message
    assert "did you mean" in err.value.hint


def test_duplicate_ids_are_located_at_the_second_use():
    assert errors("""\
        # T
        ## M1 One
        - [ ] p1 First
        - [ ] p1 Again
        ## p1 A milestone with a phase's id
    """) == ["4:phase id: id 'p1' is already used by the phase on line 3",
             "5:milestone id: id 'p1' is already used by the phase on line 3"]


def test_a_phase_before_any_milestone_is_refused():
    assert errors("""\
        # T
        - [ ] p0 Too early
        ## M1 One
        - [ ] p1 Fine
    """) == ["2:phase p0: a phase before any milestone"]


def test_an_unknown_autonomy_mode_is_located_with_a_suggestion():
    _, diags = parse_roadmap("# T\nautonomy: autonomus\n## M1 One\n- [ ] p1 x\n", "roadmap.md")
    [d] = diags
    assert (d.line, d.column, d.field) == (2, 11, "autonomy")
    assert "unknown autonomy mode 'autonomus'" in d.message
    assert "did you mean 'autonomous'" in d.fix


def test_a_phase_id_that_is_not_a_plain_name_is_refused():
    assert errors("""\
        # T
        ## M1 One
        - [ ] p1/2 Slash
        - [ ] ../etc Dots first
    """) == ["3:phase id: 'p1/2' is not a plain name", "4:phase id: '../etc' is not a plain name"]


def test_an_empty_roadmap_is_refused():
    assert errors("") == ["1:title: the roadmap has no title", "1:milestones: the roadmap has no phase"]
    assert errors("# T\n\n## M1 One\n") == ["3:milestones: the roadmap has no phase"]


def test_other_mistakes_are_located():
    assert errors("""\
        # T
        # Another
        autonomy: hitl
        autonomy: hitl
        ##
        ## M1 One
        - [~] p1 Odd mark
        - [ ] p2 Fine
    """) == ["2:title: a second title (the first is on line 1)",
             "4:autonomy: autonomy is already set on line 3",
             "5:milestone: a milestone heading without an id",
             "7:phase: unknown checkbox mark [~]"]


def test_a_milestone_without_phases_is_a_warning():
    roadmap, diags = parse_roadmap("# T\n## M1 One\n## M2 Two\n- [ ] p Do\n", "roadmap.md")
    assert roadmap is not None
    assert [(d.severity, d.line, d.field) for d in diags] == [("warning", 2, "milestone M1")]


def test_load_roadmap_raises_one_line_naming_file_line_and_field(tmp_path):
    path = write(tmp_path, "# T\nautonomy: yolo\n## M1 One\n- [ ] p1 x\n- [ ] p1 y\n")
    with pytest.raises(OdinError) as err:
        load_roadmap(path)
    assert err.value.message == f"{path}:2: autonomy: unknown autonomy mode 'yolo' (and 1 more)"
    assert "\n" not in err.value.message
    assert "odin roadmap validate" in err.value.hint


def test_load_roadmap_keeps_its_path_and_tells_a_missing_or_binary_file(tmp_path):
    path = write(tmp_path, GOOD)
    assert load_roadmap(path).path == path
    with pytest.raises(OdinError, match="no roadmap here"):
        load_roadmap(tmp_path / "nope.md")
    path.write_bytes(b"# T\n\x00\x01")
    with pytest.raises(OdinError, match=r"roadmap.md:2: binary data"):
        load_roadmap(path)


def test_set_phase_changes_exactly_one_line(tmp_path):
    original = GOOD.replace("\n", "\r\n").encode("utf-8")
    path = write(tmp_path, "")
    path.write_bytes(original)
    set_phase(path, "p1.2", done=True, note=None)
    after = path.read_bytes()
    assert after == original.replace(
        "- [ ] p1.2 Report bad keys by line — blocked: needs the schema\r\n".encode(),
        b"- [x] p1.2 Report bad keys by line\r\n")
    set_phase(path, "p2.1", done=False, note="escalated: budget spent (3 iterations)")
    assert path.read_bytes().endswith(
        "- [ ] p2.1 Load the config at start-up — escalated: budget spent (3 iterations)\r\n".encode())
    set_phase(path, "p1.1", done=True, note="done with concerns: slow")
    roadmap = load_roadmap(path)
    assert [(p.done, p.note) for p in roadmap.phases()] == [
        (True, "done with concerns: slow"), (True, None), (False, "escalated: budget spent (3 iterations)")]
    assert not [n for n in os.listdir(path.parent) if n.endswith(".tmp")]


def test_set_phase_refuses_an_unknown_phase_a_two_line_note_and_a_planted_link(tmp_path):
    path = write(tmp_path, GOOD)
    with pytest.raises(OdinError, match="no phase 'p9'"):
        set_phase(path, "p9", done=True, note=None)
    with pytest.raises(OdinError, match="one line"):
        set_phase(path, "p1.1", done=True, note="two\nlines")
    assert path.read_text(encoding="utf-8") == GOOD
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "roadmap.md").write_text(GOOD, encoding="utf-8")
    path.unlink()
    path.parent.rmdir()
    (tmp_path / ".odin-loop").symlink_to(elsewhere)
    with pytest.raises(LinkInPath):
        set_phase(path, "p1.1", done=False, note=None)
    assert (elsewhere / "roadmap.md").read_text(encoding="utf-8") == GOOD


def test_set_phase_keeps_a_bom_prose_and_a_missing_last_newline(tmp_path):
    text = "\ufeff# T\n\nprose   \n## M1 One\n- [ ] p1 Do it   \n```\n- [ ] p1 in a fence\n```\n- [ ] p2 Last"
    path = write(tmp_path, text)
    set_phase(path, "p2", done=True, note="done: in one iteration")
    set_phase(path, "p1", done=False, note="blocked: no schema")
    assert path.read_bytes().decode("utf-8") == text.replace(
        "- [ ] p1 Do it   ", "- [ ] p1 Do it — blocked: no schema").replace(
        "- [ ] p2 Last", "- [x] p2 Last — done: in one iteration")
    set_phase(path, "p1", done=False, note=None)
    assert "- [ ] p1 Do it\n" in path.read_text(encoding="utf-8")
