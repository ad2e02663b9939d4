"""Safe YAML loading: positions per field path, and every hostile input ends in a clear YamlError."""

from __future__ import annotations

import pytest

from odin_magic.core.errors import OdinError
from odin_magic.loop.yamlsource import MAX_BYTES, MAX_DEPTH, MAX_NODES, YamlError, decode_text, load_yaml


def test_plain_data_with_positions_of_values_and_keys():
    doc = load_yaml("name: demo\nstages:\n  - id: a\n    gate: {mode: ai, check: ok}\n")
    assert doc.data == {"name": "demo", "stages": [{"id": "a", "gate": {"mode": "ai", "check": "ok"}}]}
    assert doc.position(("name",)) == (1, 7)
    assert doc.key_position(("name",)) == (1, 1)
    assert doc.position(("stages", 0, "id")) == (3, 9)
    assert doc.position(("stages", 0, "gate", "check")) == (4, 29)
    assert doc.key_position(("stages", 0, "gate")) == (4, 5)


def test_locate_falls_back_to_the_nearest_existing_ancestor():
    doc = load_yaml("stages:\n  - id: a\n    gate:\n      check: x\n")
    node, found = doc.locate(("stages", 0, "gate", "mode"))
    assert not found
    assert (node.line, node.column) == (4, 7)  # the gate mapping, where the missing key belongs


def test_utf8_bom_loads_normally():
    raw = "\ufeffname: demo\n".encode("utf-8")
    doc = load_yaml(decode_text(raw))
    assert doc.data == {"name": "demo"}
    assert doc.position(("name",)) == (1, 7)
    assert load_yaml("\ufeffname: demo\n").data == {"name": "demo"}


def test_anchors_aliases_and_merge_keys_are_plain_data():
    doc = load_yaml("base: &g {mode: ai, check: ok}\nother:\n  <<: *g\n  check: better\n")
    assert doc.data["other"] == {"mode": "ai", "check": "better"}
    assert doc.position(("other", "check")) == (4, 10)


def test_timestamps_stay_text():
    assert load_yaml("version: 2026-01-02\n").data == {"version": "2026-01-02"}


def test_empty_text_is_none():
    assert load_yaml("").data is None
    assert load_yaml("# only a comment\n").data is None


def _fails(text: str) -> YamlError:
    with pytest.raises(YamlError) as info:
        load_yaml(text)
    err = info.value
    assert isinstance(err, OdinError)
    assert err.line >= 1 and err.column >= 1
    return err


def test_python_tags_are_refused_and_never_run(tmp_path):
    marker = tmp_path / "pwned"
    err = _fails(f'name: !!python/object/apply:os.system ["touch {marker}"]\n')
    assert "!!python/object/apply:os.system" in err.message and "not allowed" in err.message
    assert (err.line, err.column) == (1, 7)
    assert not marker.exists()
    _fails("x: !!python/name:os.system\n")
    _fails("x: !!python/object:collections.OrderedDict {}\n")
    _fails("x: !custom thing\n")
    _fails("x: !!set {a, b}\n")


def test_duplicate_keys_name_both_places():
    err = _fails("name: a\nversion: 1\nname: b\n")
    assert "duplicate key 'name'" in err.message and "line 1" in err.message
    assert (err.line, err.column) == (3, 1)


def test_duplicate_keys_in_nested_mappings():
    err = _fails("stages:\n  - id: a\n    gate: {mode: ai, mode: human}\n")
    assert err.line == 3


def test_alias_bomb_is_stopped_quickly():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 10):
        ref = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([ref] * 10)}]")
    err = _fails("\n".join(lines) + "\n")
    assert str(MAX_NODES) in err.message
    assert "alias" in err.message


def test_too_many_plain_values_are_refused_without_blaming_aliases():
    err = _fails("stages:\n" + "".join(f"  - {i}\n" for i in range(MAX_NODES + 10)))
    assert f"more than {MAX_NODES} values" in err.message and "alias" not in err.message + (err.hint or "")


def test_deep_nesting_is_refused():
    err = _fails("[" * 100 + "]" * 100)
    assert f"deeper than {MAX_DEPTH}" in err.message
    err = _fails("[" * 100_000 + "]" * 100_000)  # the parser's own limit may speak first
    assert "nesting" in err.message
    err = _fails("".join("  " * i + f"k{i}:\n" for i in range(200)) + "  " * 200 + "v\n")
    assert "deeper" in err.message


def test_text_over_the_size_limit_is_refused_before_parsing():
    err = _fails("a: " + "x" * MAX_BYTES + "\n")
    assert "limit" in err.message
    with pytest.raises(YamlError):
        decode_text(b"a: b\n" * (MAX_BYTES // 4))


def test_binary_garbage_is_refused():
    with pytest.raises(YamlError) as info:
        decode_text(b"name: x\n\x00\x01\x02\xff\xfe")
    assert "binary" in info.value.message and info.value.line == 2
    with pytest.raises(YamlError) as info:
        decode_text(b"name: \xff\xfe\xfd\n")
    assert "UTF-8" in info.value.message
    err = _fails("name: x\n\x00garbage")
    assert "binary" in err.message
    err = _fails("name: \x07bell\n")
    assert "U+0007" in err.message


def test_syntax_errors_name_the_line():
    err = _fails("name: x\nstages:\n  - id: a\n   bad: [1, 2\n")
    assert err.message.startswith("invalid YAML")
    assert err.line >= 3


def test_more_than_one_document_is_refused():
    err = _fails("name: a\n---\nname: b\n")
    assert err.line == 2


def test_non_scalar_keys_are_refused():
    _fails("? [a, b]\n: 1\n")
    _fails("? {a: 1}\n: 1\n")
    _fails("base: &l [1]\n*l : 2\n")


def test_unknown_alias_is_a_clear_error():
    err = _fails("a: *nowhere\n")
    assert "nowhere" in err.message
