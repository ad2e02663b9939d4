"""`odin roadmap` and `odin roadmap validate` (issue 22 item 1): located errors, exit codes, one line each."""

from __future__ import annotations

from odin_magic.cli import main
from odin_magic.loop.roadmap import ROADMAP_FILE

ROADMAP = "# T\n## M1 One\n- [ ] p1.1 Do it\n- [ ] p1.2 Then this\n"
BAD_CONTRACT = "risk: tiny-fix\nimpact: internal\nscope: [src/x.py]\nmax_iterations: 0\nloop: no-such-loop\n"


def odin(project, *argv, capsys):
    code = main([*argv, "--project", str(project)])
    out, err = capsys.readouterr()
    return code, out, err


def test_without_a_roadmap_it_says_how_to_make_one(project, capsys):
    code, out, err = odin(project, "roadmap", capsys=capsys)
    assert code == 1 and out == ""
    assert err.splitlines()[0].endswith(f"{ROADMAP_FILE}: no roadmap here")
    assert "odin roadmap new --from spec.md" in err and "Traceback" not in err


def test_roadmap_run_without_a_roadmap_says_what_odin_roadmap_says(project, capsys):
    code, out, err = odin(project, "roadmap", "run", capsys=capsys)
    assert code == 1 and out == ""
    assert err.splitlines()[0].endswith(f"{ROADMAP_FILE}: no roadmap here")  # the same words as `odin roadmap`
    assert "odin roadmap new --from spec.md" in err and "Traceback" not in err


def test_validate_checks_the_roadmap_and_the_contracts_its_phases_have(project, capsys):
    (project / ".odin-loop" / "contracts").mkdir(parents=True)
    (project / ROADMAP_FILE).write_text(ROADMAP, encoding="utf-8")
    code, out, _ = odin(project, "roadmap", "validate", capsys=capsys)
    assert code == 0 and "roadmap 'T', 2 phase(s) ok (0 error(s), 0 warning(s))" in out
    (project / ".odin-loop" / "contracts" / "p1.2.yaml").write_text(BAD_CONTRACT, encoding="utf-8")
    code, out, _ = odin(project, "roadmap", "validate", capsys=capsys)
    assert code == 1
    assert "p1.2.yaml:4:" in out and "max_iterations" in out
    assert "p1.2.yaml: contract INVALID" in out


def test_validate_locates_every_error_of_a_roadmap(project, capsys):
    (project / "other.md").write_text("# T\nautonomy: sometimes\n## M1 x\n- [ ] a/b c\n- [ ] p d\n- [ ] p e\n")
    code, out, _ = odin(project, "roadmap", "validate", "other.md", capsys=capsys)
    assert code == 1
    assert out.splitlines() == [
        "other.md:2:11: error: autonomy: unknown autonomy mode 'sometimes' -- fix: write 'autonomy: hitl' or "
        "'autonomy: autonomous'",
        "other.md:4:7: error: phase id: 'a/b' is not a plain name -- fix: an id is letters, digits, '.', '_' or "
        "'-', starting with a letter or digit (e.g. p1.2)",
        "other.md:6:7: error: phase id: id 'p' is already used by the phase on line 5 -- fix: give every "
        "milestone and phase its own id",
        "other.md: roadmap INVALID (3 error(s), 0 warning(s))",
    ]


def test_an_invalid_roadmap_stops_show_with_one_located_line(project, capsys):
    (project / ".odin-loop").mkdir()
    (project / ROADMAP_FILE).write_text("# T\n- [ ] p0 early\n## M1 x\n- [ ] p1 y\n", encoding="utf-8")
    code, _, err = odin(project, "roadmap", capsys=capsys)
    assert code == 1 and err.splitlines()[0].endswith("roadmap.md:2: phase p0: a phase before any milestone")
    code, _, err = odin(project, "roadmap", "show", "--yes", capsys=capsys)
    assert code == 2 and "--yes is for `odin roadmap new`" in err


def test_ctrl_c_during_odin_roadmap_run_says_that_odin_roadmap_run_resumes(tmp_path):
    """The example roadmap with its offline script: Ctrl-C as the first phase's stage works, then the same
    command resumes that phase's run (the run was saved where it stopped)."""
    import os
    import shutil
    import signal
    import subprocess
    import sys
    from pathlib import Path

    examples = Path(__file__).resolve().parents[2] / "example_notebooks"
    project = tmp_path / "wc"
    shutil.copytree(examples / "roadmap" / "project", project)
    shutil.copytree(examples / "roadmap" / "contracts", project / ".odin-loop" / "contracts")
    shutil.copy(examples / "roadmap" / "roadmap.md", project / ROADMAP_FILE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["ODIN_SCRIPT"] = str(examples / "roadmap.script.yaml")
    command = [sys.executable, "-m", "odin_magic", "roadmap", "run", "--project", str(project)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    for line in proc.stdout:  # wait on the event: the first phase's stage has started
        if line.startswith("▶ apply"):
            break
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "is saved where it stopped: `odin roadmap run` resumes it" in err and "Traceback" not in err
    # the same command resumes that phase's run: its first line says so (then it is stopped again: the rest of
    # the roadmap, which nothing here asserts on, is not driven)
    resumed = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    first = resumed.stdout.readline()
    resumed.send_signal(signal.SIGINT)
    rest, err = resumed.communicate(timeout=120)
    assert first.startswith("resuming phase p1.1: run "), first + rest[:300] + err


def test_a_roadmap_that_is_a_link_is_refused_in_one_line_naming_it(project, capsys):
    """Not "Too many levels of symbolic links": odin never reads a roadmap through a link, and says so."""
    (project / "real.md").write_text(ROADMAP)
    (project / ".odin-loop").mkdir(exist_ok=True)
    (project / ROADMAP_FILE).symlink_to(project / "real.md")
    for argv in (["roadmap"], ["roadmap", "run"], ["roadmap", "validate"]):
        code, out, err = odin(project, *argv, capsys=capsys)
        assert code == 1, argv
        said = (err or out).splitlines()[0]
        assert f"{ROADMAP_FILE}" in said and "is a link (to " in said and ": refused" in said, (argv, said)
        assert "Too many levels" not in err + out and "Traceback" not in err, argv


def test_a_misspelt_roadmap_action_is_named_with_a_suggestion(project, capsys):
    """As `odin stauts` is: one line with a "did you mean", not argparse's list of choices."""
    import pytest

    with pytest.raises(SystemExit) as info:
        main(["roadmap", "rnu", "--project", str(project)])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "invalid choice" not in err
    assert ("odin roadmap: error: unknown action 'rnu' (did you mean 'run'?); `odin roadmap --help` lists the "
            "actions") in err


def test_the_terminal_has_the_notebooks_actions_and_decides_a_waiting_proposal(project, capsys):
    """`%odin roadmap new` leaves its proposal in .odin-loop/roadmap.proposed.md: `odin roadmap accept` /
    `discard` decide it from a terminal; the two front ends list the same actions."""
    from odin_magic.authoring.roadmap_new import PROPOSAL_FILE
    from odin_magic.cli import build_parser
    from odin_magic.notebook.parser import SUBPARSERS

    def actions(parser):
        return next(a.choices for a in parser._actions if a.dest == "action")

    terminal = next(a for a in build_parser()._actions if a.dest == "command").choices["roadmap"]
    assert list(actions(terminal)) == list(actions(SUBPARSERS["roadmap"]))
    (project / ".odin-loop").mkdir(exist_ok=True)
    (project / PROPOSAL_FILE).write_text(ROADMAP)
    code, out, err = odin(project, "roadmap", "accept", capsys=capsys)
    assert code == 0 and f"wrote {project / ROADMAP_FILE}" in out, err
    assert (project / ROADMAP_FILE).read_text() == ROADMAP and not (project / PROPOSAL_FILE).exists()
    (project / PROPOSAL_FILE).write_text(ROADMAP)
    code, out, _ = odin(project, "roadmap", "discard", capsys=capsys)
    assert code == 0 and "discarded: nothing written" in out and not (project / PROPOSAL_FILE).exists()
    code, _, err = odin(project, "roadmap", "discard", capsys=capsys)
    assert code != 0 and "no roadmap proposal is waiting" in err and "Traceback" not in err


def test_accepting_a_proposal_that_is_no_roadmap_writes_nothing_even_with_force(project, capsys):
    """A proposal edited by hand into something that is no roadmap is refused with its first problem: the
    roadmap in place stays (with --force too), the proposal waits to be fixed or discarded."""
    from odin_magic.authoring.roadmap_new import PROPOSAL_FILE

    (project / ".odin-loop").mkdir(exist_ok=True)
    (project / ROADMAP_FILE).write_text(ROADMAP)
    (project / PROPOSAL_FILE).write_text("junk\n")
    code, _, err = odin(project, "roadmap", "accept", "--force", capsys=capsys)
    assert code != 0 and "the waiting proposal is no valid roadmap" in err and PROPOSAL_FILE in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 2, err
    assert (project / ROADMAP_FILE).read_text() == ROADMAP and (project / PROPOSAL_FILE).is_file()
    (project / PROPOSAL_FILE).write_text(ROADMAP)
    code, _, err = odin(project, "roadmap", "accept", capsys=capsys)
    assert code != 0 and "odin roadmap accept never overwrites a roadmap" in err, err
