"""Loop resolution: the project's loop first, then the built-in; listing; loading with validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from odin_magic.loop.catalog import LoopCatalog, builtin_loops_dir
from odin_magic.core.errors import LoopInvalid, LoopNotFound, UsageError
from odin_magic.loop.schema import Loop
from support import FIXTURES

FIXTURES = FIXTURES / "loops"
BUILTINS = {"bugfix", "keep-green", "optimize", "ship-change", "spec-harness-tdd", "tiny-fix"}


def _project_loop(project: Path, name: str, text: str) -> Path:
    loops = project / ".odin-loop" / "loops"
    loops.mkdir(parents=True, exist_ok=True)
    path = loops / f"{name}.yaml"
    path.write_text(text)
    return path


def _good_text(name: str, description: str = "A project loop.") -> str:
    text = (FIXTURES / "metadata-good.yaml").read_text()
    return text.replace("name: metadata-good", f"name: {name}").replace(
        "description: A fixture for one validation rule.", f"description: {description}"
    )


def test_builtin_dir_holds_the_builtin_loops():
    names = {p.stem for p in builtin_loops_dir().glob("*.yaml")}
    assert names == BUILTINS


def test_builtins_resolve_and_load_in_an_empty_project(tmp_path):
    catalog = LoopCatalog(tmp_path)
    for name in BUILTINS:
        assert catalog.resolve(name) == builtin_loops_dir() / f"{name}.yaml"
        loop = catalog.load(name)
        assert isinstance(loop, Loop) and loop.name == name


def test_project_loop_overrides_a_builtin(tmp_path):
    path = _project_loop(tmp_path, "bugfix", _good_text("bugfix", "Our own bugfix."))
    catalog = LoopCatalog(tmp_path)
    assert catalog.resolve("bugfix") == path
    assert catalog.load("bugfix").description == "Our own bugfix."


def test_unknown_name_lists_the_known_loops(tmp_path):
    with pytest.raises(LoopNotFound) as info:
        LoopCatalog(tmp_path).resolve("nope")
    assert isinstance(info.value, UsageError)
    assert "spec-harness-tdd" in info.value.hint


@pytest.mark.parametrize("name", ["../secret", "a/b", "", ".hidden", "x y"])
def test_path_like_names_are_refused(tmp_path, name):
    with pytest.raises(LoopNotFound):
        LoopCatalog(tmp_path).resolve(name)


def test_loading_an_invalid_loop_raises_with_the_report(tmp_path):
    _project_loop(tmp_path, "broken", (FIXTURES / "on-fail-target-bad.yaml").read_text())
    with pytest.raises(LoopInvalid) as info:
        LoopCatalog(tmp_path).load("broken")
    report = info.value.report
    assert not report.ok
    assert "broken.yaml:19:16" in str(info.value)
    assert "did you mean 'build'?" in str(info.value)


def test_entries_show_source_override_validity_and_counts(tmp_path):
    _project_loop(tmp_path, "bugfix", _good_text("bugfix", "Our own bugfix."))
    _project_loop(tmp_path, "mine", _good_text("mine"))
    _project_loop(tmp_path, "broken", "name: broken\nstages: [\n")
    entries = {e.name: e for e in LoopCatalog(tmp_path).entries()}
    assert set(entries) == BUILTINS | {"mine", "broken"}
    assert [e.name for e in LoopCatalog(tmp_path).entries()] == sorted(entries)

    bugfix = entries["bugfix"]
    assert (bugfix.source, bugfix.overrides_builtin, bugfix.valid) == ("project", True, True)
    assert bugfix.description == "Our own bugfix." and bugfix.stage_count == 2

    mine = entries["mine"]
    assert (mine.source, mine.overrides_builtin, mine.valid) == ("project", False, True)

    broken = entries["broken"]
    assert (broken.source, broken.valid) == ("project", False) and broken.error_count == 1

    tdd = entries["spec-harness-tdd"]
    assert (tdd.source, tdd.overrides_builtin, tdd.valid, tdd.stage_count) == ("builtin", False, True, 7)
    assert tdd.description and tdd.path.endswith("spec-harness-tdd.yaml")
    assert tdd.to_dict()["name"] == "spec-harness-tdd"


def test_a_project_loop_through_a_link_out_of_the_project_is_refused_and_listed_invalid(tmp_path, capsys):
    """A name is not a path: .odin-loop/loops (or one loop file) linking outside the project is never read."""
    from odin_magic.cli import main as odin_main
    from odin_magic.core.confine import PathEscapes

    project, outside = tmp_path / "project", tmp_path / "outside"
    _project_loop(outside, "theirs", _good_text("theirs"))
    project.mkdir()
    (project / ".odin-loop").mkdir()
    (project / ".odin-loop" / "loops").symlink_to(outside / ".odin-loop" / "loops")
    catalog = LoopCatalog(project)
    with pytest.raises(PathEscapes) as info:
        catalog.load("theirs")
    assert "loops is a symbolic link to" in str(info.value) and str(outside) in str(info.value)
    listed = {e.name: e for e in catalog.entries()}
    assert not listed["theirs"].valid and listed["theirs"].source == "project"
    assert listed["spec-harness-tdd"].valid  # the built-ins are still there

    assert odin_main(["run", "theirs", "--task", "t", "--dry", "--project", str(project)]) == 1
    err = capsys.readouterr().err
    assert "refused" in err and "Traceback" not in err

    (project / ".odin-loop" / "loops").unlink()  # a real folder, one file in it linking out
    (project / ".odin-loop" / "loops").mkdir()
    (project / ".odin-loop" / "loops" / "theirs.yaml").symlink_to(outside / ".odin-loop" / "loops" / "theirs.yaml")
    with pytest.raises(PathEscapes, match="theirs.yaml is a symbolic link"):
        catalog.resolve("theirs")
    (project / "shared.yaml").write_text(_good_text("mine"))  # a link that stays inside is fine
    (project / ".odin-loop" / "loops" / "mine.yaml").symlink_to(project / "shared.yaml")
    assert catalog.load("mine").name == "mine"
