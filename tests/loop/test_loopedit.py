"""Exact edits of a loop file's text: only the named value changes; comments, layout and order stay."""

from __future__ import annotations

import pytest
import yaml

from odin_magic.loop.loopedit import EditError, bump_version, duplicate_item, set_value

TEXT = """\
# keep me
name: x
max_iterations: 3   # and me
stages:
  - id: a
    gate: {mode: ai, check: "a, b"}
  - id: b
    gate:
      mode: ai+human
      check: >-
        a long folded
        check

      on_fail: a
"""


def test_replacing_scalars_keeps_everything_else():
    out = set_value(TEXT, ("max_iterations",), 5)
    assert out == TEXT.replace("max_iterations: 3", "max_iterations: 5")
    out = set_value(TEXT, ("stages", 1, "gate", "check"), "short: with a colon")
    assert '      check: "short: with a colon"\n\n      on_fail: a' in out  # the blank line after it stays
    assert yaml.safe_load(out)["stages"][1]["gate"]["check"] == "short: with a colon"


def test_adding_keys_to_block_and_flow_mappings():
    out = set_value(TEXT, ("stages", 0, "gate", "on_fail"), "b")
    assert '    gate: {on_fail: b, mode: ai, check: "a, b"}' in out
    out = set_value(out, ("stages", 0, "gate", "run"), ["pytest -q", "a, b"])
    assert yaml.safe_load(out)["stages"][0]["gate"]["run"] == ["pytest -q", "a, b"]
    out = set_value(TEXT, ("version",), 2)
    assert out.startswith("# keep me\nversion: 2\nname: x\n")
    with pytest.raises(EditError):
        set_value(TEXT, ("stages", 7, "gate", "mode"), "ai")


def test_values_that_need_quotes_read_back_exactly():
    for value in ["yes", "true", "3", "a # b", "x: y", "[not a list]", "ünïcode ok", "-dash"]:
        out = set_value(TEXT, ("stages", 0, "gate", "check"), value)
        assert yaml.safe_load(out)["stages"][0]["gate"]["check"] == value


def test_duplicating_a_stage():
    out = duplicate_item(TEXT, ("stages", 0))
    assert [s["id"] for s in yaml.safe_load(out)["stages"]] == ["a", "a", "b"]
    assert out.startswith("# keep me\n")


@pytest.mark.parametrize("old, new", [(None, 2), (1, 2), (1.5, 2), ("1.4", "1.5"), ("v3", "v4"), ("beta", "beta.1")])
def test_bump_version(old, new):
    assert bump_version(old) == new
