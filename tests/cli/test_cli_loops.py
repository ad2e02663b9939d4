"""The loop commands of the ``odin`` CLI: exit codes, the JSON shape, list, show and schema."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from odin_magic.cli import main
from odin_magic.cli.loops import schema_text
from support import FIXTURES, REPO

ROOT = REPO
LOOPS = ROOT / "loops"
FIXTURES = FIXTURES / "loops"
BUILTIN_FILES = sorted(str(p) for p in LOOPS.glob("*.yaml"))


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_validate_builtin_loops_exits_0(capsys):
    code, out, _ = run(capsys, "validate", *BUILTIN_FILES)
    assert code == 0
    assert f"{len(BUILTIN_FILES)} file(s) checked, 0 invalid" in out and len(BUILTIN_FILES) == 6


def test_validate_broken_loop_exits_1_and_names_its_line(capsys):
    bad = str(FIXTURES / "on-fail-target-bad.yaml")
    code, out, _ = run(capsys, "validate", bad)
    assert code == 1
    assert f"{bad}:19:16: error: stages[1].gate.on_fail: 'biuld' is not a stage id (did you mean 'build'?)" in out


def test_warnings_alone_exit_0(capsys):
    code, out, _ = run(capsys, "validate", str(FIXTURES / "metadata-bad.yaml"))
    assert code == 0 and "warning: version" in out


def test_one_bad_file_among_good_ones_exits_1(capsys):
    code, out, _ = run(capsys, "validate", *BUILTIN_FILES, str(FIXTURES / "gate-mode-bad.yaml"))
    assert code == 1 and f"{len(BUILTIN_FILES) + 1} file(s) checked, 1 invalid" in out


@pytest.mark.parametrize("make", ["missing", "directory"])
def test_missing_or_unreadable_file_exits_2(capsys, tmp_path, make):
    target = tmp_path / "nope.yaml" if make == "missing" else tmp_path  # a directory without loop files
    code, out, err = run(capsys, "validate", BUILTIN_FILES[0], str(target))
    assert code == 2
    assert str(target) in err and str(target) not in out
    assert f"{BUILTIN_FILES[0]}: loop 'bugfix' ok" in out  # the readable file is still checked and reported
    assert "1 file(s) checked, 0 invalid; 1 missing or unreadable" in out


def test_every_readable_file_is_reported_beside_a_missing_one(capsys, tmp_path):
    bad = str(FIXTURES / "gate-mode-bad.yaml")
    missing = str(tmp_path / "missing.yaml")
    code, out, err = run(capsys, "validate", BUILTIN_FILES[0], missing, bad)
    assert code == 2  # missing wins over invalid
    assert f"{BUILTIN_FILES[0]}: loop 'bugfix' ok" in out and f"{bad}:" in out and "INVALID" in out
    assert f"odin: {missing}: no such file" in err
    assert "2 file(s) checked, 1 invalid; 1 missing or unreadable" in out


def test_validate_json_always_prints_the_report(capsys, tmp_path):
    missing = str(tmp_path / "missing.yaml")
    code, out, err = run(capsys, "validate", "--json", BUILTIN_FILES[0], missing)
    assert code == 2 and err == ""
    data = json.loads(out)
    assert data["all_ok"] is False
    first, second = data["results"]
    assert first["ok"] is True and first["readable"] is True and first["loop"] == "bugfix"
    assert second == {"path": missing, "loop": None, "ok": False, "readable": False, "errors": [], "warnings": [],
                      "error": f"{missing}: no such file", "hint": second["hint"]}
    code, out, _ = run(capsys, "validate", "--json", "nosuch", "--project", str(tmp_path))
    assert code == 2 and json.loads(out)["results"][0]["error"].startswith("no loop named 'nosuch'")


def test_validate_a_directory_checks_the_loops_in_it(capsys, tmp_path, monkeypatch):
    code, out, _ = run(capsys, "validate", str(LOOPS))
    assert code == 0
    for path in BUILTIN_FILES:
        assert f"{path}: loop '{Path(path).stem}' ok" in out
    assert f"{len(BUILTIN_FILES)} file(s) checked, 0 invalid" in out
    _project_loop(tmp_path, "broken", "name: broken\nmax_iterations: 0\nstages: []\n")
    monkeypatch.chdir(tmp_path / ".odin-loop" / "loops")
    code, out, _ = run(capsys, "validate", ".")
    assert code == 1 and "broken.yaml: loop 'broken' INVALID" in out


def test_a_tab_in_the_indentation_says_use_spaces(capsys, tmp_path):
    path = tmp_path / "tabbed.yaml"
    path.write_text("name: tabbed\nmax_iterations: 2\nstages:\n  - id: a\n\tproduces: [a.md]\n")
    code, out, _ = run(capsys, "validate", str(path))
    assert code == 1
    assert f"{path}:5:1: error: a tab in the indentation" in out and "tab: use spaces" in out


def test_bad_arguments_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["validate", "--bogus"])  # no argument at all: the project's loops
    assert info.value.code == 2


def test_schedulable_flag(capsys):
    code, _, _ = run(capsys, "validate", "--schedulable", str(LOOPS / "keep-green.yaml"))
    assert code == 0
    code, out, _ = run(capsys, "validate", "--schedulable", str(LOOPS / "spec-harness-tdd.yaml"))
    assert code == 1 and "schedulable loop never pauses" in out


def test_validate_json_shape(capsys):
    bad = str(FIXTURES / "unknown-key-bad.yaml")
    code, out, _ = run(capsys, "validate", "--json", str(LOOPS / "bugfix.yaml"), bad)
    assert code == 1
    data = json.loads(out)
    assert set(data) == {"all_ok", "results"} and data["all_ok"] is False
    good, broken = data["results"]
    for result in data["results"]:
        assert set(result) == {"path", "loop", "ok", "readable", "errors", "warnings"}
    assert (good["loop"], good["ok"], good["errors"], good["warnings"]) == ("bugfix", True, [], [])
    assert broken["ok"] is False and broken["path"] == bad
    [err] = broken["errors"]
    assert (err["line"], err["column"], err["field"]) == (19, 7, "stages[1].gate.on_fial")
    assert set(err) == {"severity", "file", "line", "column", "field", "message", "fix"}


def test_validate_json_all_ok(capsys):
    code, out, _ = run(capsys, "validate", "--json", *BUILTIN_FILES)
    assert code == 0 and json.loads(out)["all_ok"] is True


def test_schema_is_the_generated_one_and_the_checked_in_file_matches(capsys):
    code, out, _ = run(capsys, "schema")
    assert code == 0
    assert out == schema_text()
    assert (LOOPS / "loop.schema.json").read_text() == out, "regenerate with: odin schema > loops/loop.schema.json"


def test_schema_accepts_the_builtin_loops_and_rejects_a_typo(capsys):
    schema = json.loads(schema_text())
    for path in BUILTIN_FILES:
        jsonschema.validate(yaml.safe_load(Path(path).read_text()), schema)
    bad = yaml.safe_load((FIXTURES / "unknown-key-bad.yaml").read_text())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def _project_loop(project: Path, name: str, text: str) -> None:
    loops = project / ".odin-loop" / "loops"
    loops.mkdir(parents=True, exist_ok=True)
    (loops / f"{name}.yaml").write_text(text)


def test_list_json_with_a_project_override(capsys, tmp_path):
    text = (FIXTURES / "metadata-good.yaml").read_text().replace("name: metadata-good", "name: bugfix")
    _project_loop(tmp_path, "bugfix", text)
    code, out, _ = run(capsys, "list", "--project", str(tmp_path), "--json")
    assert code == 0
    data = json.loads(out)
    loops = {e["name"]: e for e in data["loops"]}
    assert set(loops) == {"bugfix", "keep-green", "optimize", "ship-change", "spec-harness-tdd", "tiny-fix"}
    assert loops["bugfix"]["source"] == "project" and loops["bugfix"]["overrides_builtin"] is True
    assert loops["bugfix"]["stage_count"] == 2 and loops["bugfix"]["valid"] is True
    assert loops["keep-green"]["source"] == "builtin" and loops["keep-green"]["overrides_builtin"] is False
    assert loops["spec-harness-tdd"]["stage_count"] == 7
    for entry in data["loops"]:
        assert {"name", "description", "stage_count", "source", "overrides_builtin", "valid"} <= set(entry)


def test_list_marks_the_active_runs_loop(capsys, tmp_path):
    from odin_magic.engine.orchestrator import Engine

    code, out, _ = run(capsys, "list", "--project", str(tmp_path), "--json")
    assert json.loads(out)["active_loop"] is None
    assert not (tmp_path / ".odin-loop").exists()  # listing leaves no trace

    state = Engine(tmp_path).start("bugfix", "a dry run that pauses at the review", dry=True)
    assert state.status == "awaiting_approval"
    code, out, _ = run(capsys, "list", "--project", str(tmp_path), "--json")
    data = json.loads(out)
    assert data["active_loop"] == "bugfix"
    assert [e["name"] for e in data["loops"] if e["active"]] == ["bugfix"]
    code, out, _ = run(capsys, "list", "--project", str(tmp_path))
    assert [ln for ln in out.splitlines() if "<- active run" in ln][0].startswith("bugfix ")


def test_list_text(capsys, tmp_path):
    _project_loop(tmp_path, "broken", "name: broken\nmax_iterations: 0\nstages: []\n")
    code, out, _ = run(capsys, "list", "--project", str(tmp_path))
    assert code == 0
    assert "spec-harness-tdd" in out and "7 stages" in out and "builtin" in out
    _project_loop(tmp_path, "single", "name: single\nmax_iterations: 1\nstages:\n"
                  "  - id: only\n    produces: [a.md]\n    gate: {mode: ai, check: a.md exists}\n")
    code, out, _ = run(capsys, "list", "--project", str(tmp_path))
    [line] = [ln for ln in out.splitlines() if ln.startswith("single ")]
    assert " 1 stage " in line and "1 stages" not in line
    assert "broken" in out and "INVALID (2 error(s))" in out
    assert "`odin validate broken` shows what to fix" in out


def test_validate_takes_loop_names_as_list_shows_them(capsys, tmp_path):
    _project_loop(tmp_path, "broken", "name: broken\nmax_iterations: 0\nstages: []\n")
    code, out, _ = run(capsys, "validate", "bugfix", "broken", "--project", str(tmp_path))
    assert code == 1
    assert "loops/bugfix.yaml: loop 'bugfix' ok" in out
    assert ".odin-loop/loops/broken.yaml:2:" in out and "max_iterations" in out
    code, out, err = run(capsys, "validate", "--schedulable", "keep-green", "--project", str(tmp_path))
    assert code == 0
    code, out, err = run(capsys, "validate", "nosuch", "--project", str(tmp_path))
    assert code == 2 and "no loop named 'nosuch'" in err and "bugfix" in err and out == ""


def test_list_with_a_missing_project_exits_2(capsys, tmp_path):
    code, _, err = run(capsys, "list", "--project", str(tmp_path / "nowhere"))
    assert code == 2 and "no such project directory" in err


def test_show_prints_stages_gates_roles_and_loopbacks(capsys, tmp_path):
    code, out, _ = run(capsys, "show", "spec-harness-tdd", "--project", str(tmp_path))
    assert code == 0
    lines = out.splitlines()
    order = [ln.split()[1] for ln in lines if ln[:3].strip().rstrip(".").isdigit()]
    assert order == ["interview", "plan", "harness-design", "harness-verify", "implement", "test", "review"]
    assert any("harness-verify" in ln and "gate ai " in ln and "critic (fresh)" in ln for ln in lines)
    assert any("review" in ln and "gate ai+human" in ln and "pauses for approval" in ln for ln in lines)
    assert "  harness-verify --fail--> harness-design" in lines
    assert "  test --fail--> implement" in lines
    assert "  review --fail--> implement" in lines
    assert "max_iterations 15" in out


def test_show_a_file_path_and_an_invalid_loop(capsys):
    code, out, _ = run(capsys, "show", str(LOOPS / "keep-green.yaml"))
    assert code == 0 and "verify --fail--> repair" in out
    code, out, _ = run(capsys, "show", str(FIXTURES / "gate-mode-bad.yaml"))
    assert code == 1 and "'auto' is not allowed" in out


def test_show_unknown_loop_exits_2(capsys, tmp_path):
    code, _, err = run(capsys, "show", "no-such-loop", "--project", str(tmp_path))
    assert code == 2 and "no loop named 'no-such-loop'" in err


def test_show_a_missing_path_or_a_directory_exits_2(capsys, tmp_path):
    code, _, err = run(capsys, "show", str(tmp_path / "gone.yaml"))
    assert code == 2 and "no such file" in err
    code, _, err = run(capsys, "show", str(tmp_path) + "/")
    assert code == 2 and "is not a file" in err


def test_console_entry_point_runs_as_a_module(tmp_path):
    bad = FIXTURES / "gate-fields-bad.yaml"
    proc = subprocess.run(
        [sys.executable, "-m", "odin_magic", "validate", str(bad)],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
    )
    assert proc.returncode == 1
    assert f"{bad}:10:7: error: stages[0].gate.mode: missing required key 'mode'" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_validate_without_arguments_checks_the_projects_loops_as_the_notebook_does(capsys, project, write_loop):
    """Issue 18 item 7: `odin validate` and `%odin validate` agree: no argument, the project's loops."""
    code, _, err = run(capsys, "validate", "--project", str(project))
    assert code == 2 and "no project loops to validate" in err and "odin validate LOOP" in err
    write_loop()
    (project / ".odin-loop" / "loops" / "broken.yaml").write_text("name: broken\nstages: []\n", encoding="utf-8")
    code, out, _ = run(capsys, "validate", "--project", str(project))
    assert code == 1 and "demo.yaml" in out and "broken.yaml" in out and "2 file(s) checked, 1 invalid" in out
