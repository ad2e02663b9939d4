"""Every validation rule: a good fixture passes clean, a bad one fails at the right line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odin_magic.core.errors import UsageError
from odin_magic.loop.schema import Loop
from odin_magic.loop.validation import Diagnostic, reports_to_json, validate_file, validate_text
from support import FIXTURES, REPO

FIXTURES = FIXTURES / "loops"
LOOPS = REPO / "loops"

# rule -> the diagnostics its bad fixture must produce: (severity, field, line, column, words in the message)
RULES: dict[str, list[tuple[str, str, int, int, str]]] = {
    "required-keys": [
        ("error", "name", 1, 1, "missing required key 'name'"),
        ("error", "max_iterations", 1, 1, "missing required key 'max_iterations'"),
    ],
    "stages-required": [("error", "stages", 5, 9, "at least one stage")],
    "stage-id": [("error", "stages[0].id", 6, 5, "missing required key 'id'")],
    "gate-fields": [
        ("error", "stages[0].gate.mode", 10, 7, "missing required key 'mode'"),
        ("error", "stages[0].gate.check", 10, 14, "must not be empty"),
    ],
    "gate-mode": [("error", "stages[0].gate.mode", 10, 13, "'auto' is not allowed")],
    "unique-ids": [("error", "stages[1].id", 12, 9, "'build' is already used by stages[0]")],
    "on-fail-target": [("error", "stages[1].gate.on_fail", 19, 16, "'biuld' is not a stage id (did you mean 'build'?)")],
    "agent": [
        ("error", "stages[0].agent", 7, 12, "(did you mean 'executor'?)"),
        ("error", "stages[1].agent.role", 13, 19, "'judge' is not allowed"),
    ],
    "fresh-consumes": [("error", "stages[1].agent", 13, 12, "fresh context (agent: reviewer, fresh by default) but declares no `consumes`")],
    "interview-inline": [("error", "stages[0].agent", 7, 12, "resolves to a fresh context")],
    "interview-log": [("error", "stages[0].produces", 11, 15, "does not produce 'interview-log.md'")],
    "interview-threshold": [("error", "stages[0].interview.threshold", 9, 18, "less than 1")],
    "interview-challenges": [("error", "stages[0].interview.challenges", 10, 19, "'devil@5'")],
    "unknown-key": [("error", "stages[1].gate.on_fial", 19, 7, "unknown key 'on_fial' (did you mean 'on_fail'?)")],
    "artifact-paths": [
        ("error", "stages[0].produces[0]", 8, 16, "absolute path"),
        ("error", "stages[0].produces[1]", 8, 29, "contains '..'"),
    ],
    "gate-run": [("error", "stages[0].gate.run[0].timeout", 13, 47, "greater than 0")],
    "limits": [
        ("error", "max_iterations", 4, 17, "greater than or equal to 1"),
        ("error", "budget.max_dollars", 5, 30, "unknown key 'max_dollars'"),
    ],
    "name-matches": [("warning", "name", 1, 7, "'something-else' does not match the file name 'name-matches-bad'")],
    "metadata": [
        ("warning", "version", 1, 1, "no `version`"),
        ("warning", "description", 1, 1, "no `description`"),
    ],
    "reachable": [
        ("error", "stages[2].id", 20, 9, "already used"),
        ("warning", "stages[3]", 26, 5, "'publish' can never run"),
    ],
    "writing-role": [
        ("error", "stages[0].produces", 9, 15, "it may declare one `produces`, not 2"),
        ("error", "stages[1].produces[0]", 15, 16, "not a directory ('audit/')"),
    ],
    "schedulable": [
        ("error", "stages[0].interview", 7, 5, "is an interview"),
        ("error", "stages[0].gate.mode", 13, 13, "'ai+human', which pauses"),
        ("error", "stages[2].gate.mode", 26, 13, "'ai+human', which pauses"),
    ],
}


def _check(stem: str):
    return validate_file(FIXTURES / f"{stem}.yaml", schedulable=stem.startswith("schedulable"))


@pytest.mark.parametrize("rule", sorted(RULES))
def test_good_fixture_is_clean(rule):
    report = _check(f"{rule}-good")
    assert report.errors == [] and report.warnings == [], report.format()
    assert report.ok
    assert isinstance(report.loop, Loop)
    assert report.loop.name == f"{rule}-good"


@pytest.mark.parametrize("rule", sorted(RULES))
def test_bad_fixture_fails_at_the_right_place(rule):
    report = _check(f"{rule}-bad")
    found = [(d.severity, d.field, d.line, d.column, d.message) for d in report.errors + report.warnings]
    assert len(found) == len(RULES[rule]), report.format()
    for severity, field, line, column, words in RULES[rule]:
        assert any(
            (s, f, ln, c) == (severity, field, line, column) and words in m for s, f, ln, c, m in found
        ), f"expected {severity} {field} at {line}:{column} containing {words!r}; got:\n{report.format()}"
    has_errors = any(expected[0] == "error" for expected in RULES[rule])
    assert report.ok is (not has_errors)
    assert (report.loop is None) is has_errors
    for d in report.errors + report.warnings:
        assert d.file.endswith(f"{rule}-bad.yaml")
        assert d.fix, f"{d} has no fix"


def test_every_fixture_belongs_to_a_rule():
    stems = {p.stem for p in FIXTURES.glob("*.yaml")}
    expected = {f"{rule}-{kind}" for rule in RULES for kind in ("good", "bad")}
    assert stems == expected


def test_human_is_an_alias_of_ai_plus_human():
    report = _check("gate-mode-good")
    build = report.loop.stage("build")
    assert build.gate.mode == "human" and build.gate.pauses
    assert report.loop.stage("review").gate.pauses


def test_diagnostic_reads_as_one_line():
    d = Diagnostic("error", "loops/x.yaml", 12, 5, "stages[3].gate.on_fail",
                   "'implemnt' is not a stage id (did you mean 'implement'?)", "use `on_fail: implement`")
    assert str(d) == (
        "loops/x.yaml:12:5: error: stages[3].gate.on_fail: 'implemnt' is not a stage id "
        "(did you mean 'implement'?) -- fix: use `on_fail: implement`"
    )


def test_unknown_key_at_the_wrong_level_points_to_its_home():
    text = (FIXTURES / "unknown-key-good.yaml").read_text().replace("      on_fail: build", "    on_fial: build")
    report = validate_text(text, "cell")
    [err] = report.errors
    assert err.field == "stages[1].on_fial"
    assert "did you mean 'on_fail'? it belongs under `stages[].gate`" in err.message


def test_a_right_key_at_the_wrong_level_says_where_it_belongs():
    text = (FIXTURES / "unknown-key-good.yaml").read_text().replace("      on_fail: build", "    on_fail: build")
    [err] = validate_text(text, "cell").errors
    assert err.field == "stages[1].on_fail" and (err.line, err.column) == (19, 5)
    assert err.message == "'on_fail' does not belong here: it belongs under `stages[].gate`"


def test_unknown_key_without_a_close_match_lists_the_allowed_keys():
    text = "name: x\nversion: 1\ndescription: d\nmax_iterations: 2\nzebra: 1\nstages:\n  - id: a\n    gate: {mode: ai, check: c}\n"
    [err] = validate_text(text, "cell").errors
    assert err.field == "zebra" and (err.line, err.column) == (5, 1)
    assert "allowed here are: name, version" in err.fix


def test_wrong_types_name_what_was_found():
    text = "name: x\nversion: [1]\ndescription: d\nmax_iterations: many\nbudget: 5\nstages:\n  - id: a\n    consumes: spec.md\n    gate: {mode: ai, check: c, run: [{cmd: x}, 7]}\n"
    report = validate_text(text, "cell")
    got = {d.field: d for d in report.errors}
    assert set(got) == {"version", "max_iterations", "budget", "stages[0].consumes", "stages[0].gate.run[1]"}
    assert "string or a number" in got["version"].message and got["version"].line == 2
    assert "'many'" in got["max_iterations"].message
    assert "expected a mapping" in got["budget"].message
    assert "expected a list" in got["stages[0].consumes"].message
    assert got["stages[0].gate.run[1]"].line == 9


def test_agent_mapping_with_a_bad_fresh_value():
    text = "name: x\nversion: 1\ndescription: d\nmax_iterations: 2\nstages:\n  - id: a\n    agent: {role: critic, fresh: maybe}\n    consumes: [x.md]\n    gate: {mode: ai, check: c}\n"
    [err] = validate_text(text, "cell").errors
    assert err.field == "stages[0].agent.fresh" and "true or false" in err.message


def test_top_level_must_be_a_mapping():
    for text, words in (("", "empty"), ("- a\n- b\n", "a list"), ("just text\n", "not a mapping")):
        [err] = validate_text(text, "cell").errors
        assert words in err.message and err.line == 1


def test_a_long_value_is_quoted_by_its_start_only():
    [err] = validate_text("word " * 5000, "cell").errors
    assert "not a mapping" in err.message and "(24999 characters)" in err.message and len(err.message) < 200
    [err] = validate_text("name: x\nmax_iterations: " + "many " * 100 + "\nstages: []\n", "cell").errors[:1]
    assert "max_iterations" in err.field and len(err.message) < 200


def test_validate_text_reports_positions_of_the_given_text():
    text = (FIXTURES / "on-fail-target-bad.yaml").read_text()
    report = validate_text("\n\n" + text, "<cell>", expected_name="on-fail-target-bad")
    [err] = report.errors
    assert (err.file, err.line, err.column) == ("<cell>", 21, 16)
    assert report.warnings == []


def test_validate_text_checks_the_name_only_when_asked():
    text = (FIXTURES / "name-matches-bad.yaml").read_text()
    assert validate_text(text, "<cell>").warnings == []
    assert len(validate_text(text, "<cell>", expected_name="other").warnings) == 1


def test_yaml_errors_become_diagnostics():
    report = validate_text("name: a\nname: b\n", "<cell>")
    [err] = report.errors
    assert (err.line, err.column) == (2, 1) and "duplicate key" in err.message
    assert report.loop is None and not report.ok


@pytest.mark.parametrize(
    "content, words",
    [
        (b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01garbage", "binary"),
        (b"name: \xc3\x28\n", "not UTF-8"),
        (b"name: !!python/object/apply:os.system ['echo hi']\n", "not allowed"),
        (b"a: &a [x,x,x,x,x,x,x,x,x,x]\n" + b"".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n".encode() for i in range(8)
        ), "expands"),
        (b"[" * 200 + b"]" * 200, "nesting"),
        (b"k: 1\nk: 2\n", "duplicate key"),
    ],
)
def test_hostile_files_end_in_one_clear_error(tmp_path, content, words):
    path = tmp_path / "hostile.yaml"
    path.write_bytes(content)
    report = validate_file(path)
    assert not report.ok
    assert len(report.errors) == 1
    assert words in report.errors[0].message
    assert report.errors[0].fix


def test_file_over_one_mebibyte_is_refused_without_parsing(tmp_path):
    path = tmp_path / "huge.yaml"
    path.write_bytes(b"name: x\n" + b"# padding\n" * 120_000)
    [err] = validate_file(path).errors
    assert "limit" in err.message and (err.line, err.column) == (1, 1)


def test_bom_file_is_valid(tmp_path):
    path = tmp_path / "metadata-good.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + (FIXTURES / "metadata-good.yaml").read_bytes())
    report = validate_file(path)
    assert report.ok and report.warnings == []


def test_missing_file_or_directory_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError):
        validate_file(tmp_path / "nope.yaml")
    with pytest.raises(UsageError):
        validate_file(tmp_path)


def test_json_shape():
    reports = [_check("on-fail-target-bad"), _check("metadata-bad")]
    data = json.loads(reports_to_json(reports))
    assert data["all_ok"] is False
    bad, warned = data["results"]
    assert set(bad) == {"path", "loop", "ok", "readable", "errors", "warnings"}
    assert bad["loop"] == "on-fail-target-bad" and bad["ok"] is False
    assert bad["errors"][0] == {
        "severity": "error", "file": bad["path"], "line": 19, "column": 16, "field": "stages[1].gate.on_fail",
        "message": "'biuld' is not a stage id (did you mean 'build'?)", "fix": "use `on_fail: build`",
    }
    assert warned["ok"] is True and len(warned["warnings"]) == 2


@pytest.mark.parametrize("path", sorted(LOOPS.glob("*.yaml")), ids=lambda p: p.stem)
def test_builtin_loops_are_valid_without_warnings(path):
    report = validate_file(path)
    assert report.ok and report.warnings == [], report.format()
    assert report.loop.name == path.stem
    assert path.read_text().startswith("# yaml-language-server: $schema=./loop.schema.json\n")


def test_only_the_builtin_loops_that_never_wait_for_a_person_are_schedulable():
    schedulable = [p.stem for p in sorted(LOOPS.glob("*.yaml")) if validate_file(p, schedulable=True).ok]
    assert schedulable == ["keep-green", "ship-change", "tiny-fix"]


def test_default_loop_has_the_seed_stages():
    loop = validate_file(LOOPS / "spec-harness-tdd.yaml").loop
    assert loop.max_iterations == 15
    shape = [(s.id, s.resolved_agent.label, s.gate.mode, s.gate.on_fail) for s in loop.stages]
    assert shape == [
        ("interview", "inline", "ai+human", None),
        ("plan", "planner", "ai+human", None),
        ("harness-design", "executor", "ai", None),
        ("harness-verify", "critic", "ai", "harness-design"),
        ("implement", "executor", "ai", None),
        ("test", "executor", "ai", "implement"),
        ("review", "reviewer", "ai+human", "implement"),
    ]
    assert loop.stage("interview").interview.mode == "deep"
    assert {"spec.md", "interview-log.md"} <= set(loop.stage("interview").produces)
    assert "review.md" in loop.stage("review").produces
    assert "src/" in loop.stage("implement").produces
    assert loop.stage("test").gate.commands[0].cmd == 'python -m pytest -q -p no:cacheprovider "$ODIN_RUN_DIR/harness"'
    verify = " ".join(loop.stage("harness-verify").gate.commands[0].cmd.split())
    assert verify == (
        'ODIN_TARGET_DIR="$ODIN_RUN_DIR/harness/stub" python -m pytest -q -p no:cacheprovider '
        '"$ODIN_RUN_DIR/harness"; test $? -eq 1'
    )


def test_the_example_loop_in_the_docs_is_valid():
    text = (REPO / "docs" / "writing-loops.md").read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```yaml\n")[1:]]
    examples = [b for b in blocks if b.startswith("# yaml-language-server") and "\nname:" in b]
    assert examples
    for example in examples:
        report = validate_text(example, "docs/writing-loops.md", expected_name="docs-fix")
        assert report.ok and report.warnings == [], report.format()


def test_mangled_loops_never_raise_and_always_point_inside_the_text():
    """Deterministic fuzzing: cut, duplicate and retype pieces of the built-in loops."""
    import random

    rng = random.Random(20260614)
    sources = [p.read_text() for p in sorted(LOOPS.glob("*.yaml"))]
    junk = ["", " ", "\n", ":", "- ", "{", "]", "&a ", "*a", "!!str ", "'", '"', "\t", "agent: ", "on_fail: x\n",
            "gate:\n", "  ", "null", "[1, 2]", "{role: critic}", "\x00", "\ufeff", "<<: *a\n"]
    for _ in range(300):
        text = rng.choice(sources)
        lines = text.splitlines(keepends=True)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(lines))
            action = rng.randrange(4)
            if action == 0:
                del lines[i]
            elif action == 1:
                lines.insert(i, lines[rng.randrange(len(lines))])
            elif action == 2:
                j = rng.randrange(len(lines[i]) + 1)
                lines[i] = lines[i][:j] + rng.choice(junk) + lines[i][j:]
            else:
                lines[i] = lines[i].replace("ai", rng.choice(["ai+human", "human", "aii", "7", ""]), 1)
            if not lines:
                lines = ["\n"]
        mangled = "".join(lines)
        report = validate_text(mangled, "fuzz")
        line_count = mangled.count("\n") + 2
        for d in report.errors + report.warnings:
            assert 1 <= d.line <= line_count and d.column >= 1, (d, mangled)
            assert d.message and d.severity in ("error", "warning")
        assert (report.loop is not None) == report.ok


def test_budget_says_which_limit_a_run_is_past():
    from odin_magic.loop.schema import Budget

    budget = Budget(max_tokens=1000, max_usd=0.5)
    assert budget.exceeded(1000, 0.5) is None  # at the limit is still within it
    assert budget.exceeded(1001, 0.0) == "1001 tokens used, budget max_tokens 1000"
    assert budget.exceeded(10, 0.75) == "$0.7500 spent, budget max_usd 0.5"
    assert Budget(max_usd=1).exceeded(10**9, 0.1) is None


def test_a_command_timeout_above_a_day_is_a_located_error(tmp_path):
    """Issue 20 item 5: a gate command's or post_edit's timeout of `.inf` or 100000 s is a located validation
    error, never an OverflowError in the driver."""
    from odin_magic.loop.validation import validate_file

    path = tmp_path / "t.yaml"
    path.write_text("name: t\nmax_iterations: 2\nstages:\n  - id: a\n    produces: [a.md]\n"
                    "    gate: {mode: ai, check: ok, run: [{cmd: 'true', timeout: .inf}]}\n"
                    "post_edit:\n  - {cmd: 'true', timeout: 100000}\n")
    report = validate_file(path)
    located = sorted((d.line, d.field) for d in report.errors)
    assert located == [(6, "stages[0].gate.run[0].timeout"), (8, "post_edit[0].timeout")]
    assert all("at most 86400 seconds" in d.message for d in report.errors)
