"""Damaged runs (issue 9, item 7): a state.json that is a directory or unreadable, an event log that is
gone or empty, and output the terminal cannot encode: a clear report, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from odin_magic.cli import main
from odin_magic.engine.orchestrator import Engine
from odin_magic.core.errors import RunRefused


def odin(capsys, *args):
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def paused(project, write_loop, capsys):
    """A dry run of the demo loop, paused for approval at its first stage; its run dir."""
    write_loop()
    code, _, _ = odin(capsys, "run", "demo", "--task", "build a thing", "--dry", "--project", str(project))
    assert code == 0
    [run_dir] = (project / ".odin-loop" / "runs").iterdir()
    return run_dir


def test_a_state_json_that_is_a_directory_is_reported_not_a_traceback(capsys, project, paused):
    (paused / "state.json").unlink()
    (paused / "state.json").mkdir()

    for command in ("status", "runs"):
        code, out, err = odin(capsys, command, "--project", str(project))
        assert code == 0, err
        assert "state.json could not be read" in err and "rebuilt from its event log" in err
        assert "demo" in out

    code, out, err = odin(capsys, "run", "--project", str(project))
    assert code == 1
    assert "state.json is a directory" in err and "move it away" in err
    (paused / "state.json").rmdir()  # as the hint says: then the run goes on, rebuilt from its log
    code, out, err = odin(capsys, "approve", "--project", str(project))
    assert code == 0 and "rebuilt from its event log" in err
    assert (paused / "state.json").is_file()


def test_an_unreadable_state_json_is_rebuilt_from_the_log(capsys, project, paused):
    (paused / "state.json").unlink()
    os.symlink("state.json", paused / "state.json")  # a loop of links: reading it fails with ELOOP

    code, out, err = odin(capsys, "status", "--project", str(project))

    assert code == 0
    assert "state.json could not be read" in err and "awaiting" in out


@pytest.mark.parametrize("damage", ["deleted", "emptied"])
def test_a_run_whose_log_is_lost_is_listed_as_damaged_and_blocks_until_abandoned(capsys, project, paused, damage):
    log = paused / "events.jsonl"
    if damage == "deleted":
        log.unlink()
    else:
        log.write_bytes(b"")
    run_id = paused.name

    code, out, err = odin(capsys, "runs", "--project", str(project))
    assert code == 0
    assert run_id in out and "damaged" in out and "no runs yet" not in out
    assert "events.jsonl) is missing or empty" in err

    # it may still be active: no new run starts beside it, through the CLI or the engine
    code, out, err = odin(capsys, "run", "demo", "--task", "another", "--dry", "--project", str(project))
    assert code == 1 and "damaged and may still be active" in err and "odin abandon" in err
    with pytest.raises(RunRefused, match="damaged"):
        Engine(project).start("demo", "another", dry=True)
    code, out, err = odin(capsys, "run", "--project", str(project))
    assert code == 1 and "damaged" in err

    code, out, err = odin(capsys, "abandon", "--project", str(project))
    assert code == 0 and "abandoned" in out
    assert (paused / "abandoned.json").is_file() and (paused / "state.json").is_file()  # its files stay

    code, out, err = odin(capsys, "run", "demo", "--task", "another", "--dry", "--project", str(project))
    assert code == 0, err
    code, out, err = odin(capsys, "runs", "--project", str(project))
    assert "damaged (abandoned)" in out and "another" in out


def test_output_the_stream_cannot_encode_falls_back_to_ascii_symbols(project, paused, tmp_path):
    out_file = tmp_path / "status.txt"
    env = {**os.environ, "PYTHONIOENCODING": "cp1252"}
    with open(out_file, "wb") as fh:
        done = subprocess.run([sys.executable, "-m", "odin_magic", "status", "--project", str(project)],
                              stdout=fh, stderr=subprocess.PIPE, env=env, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"Traceback" not in done.stderr
    text = out_file.read_bytes().decode("cp1252")
    assert "[ok]" in text or "[wait]" in text
    assert "UnicodeEncodeError" not in text


def test_the_notebook_can_abandon_a_damaged_active_run(project, paused):
    from IPython.core.error import UsageError
    from IPython.testing import globalipapp

    shell = globalipapp.start_ipython() or globalipapp.get_ipython()
    shell.run_line_magic("load_ext", "odin_magic")
    magics = shell.magics_manager.registry["OdinMagics"]
    (paused / "events.jsonl").unlink()
    try:
        shell.run_line_magic("odin", f"config project={project}")
        with pytest.raises(UsageError, match="damaged and may still be active"):
            shell.run_line_magic("odin", 'run demo --task "another" --dry')
        shown = shell.run_line_magic("odin", "abandon")
        assert paused.name in repr(shown)
        assert (paused / "abandoned.json").is_file()
    finally:
        runner = magics.runner()
        runner.stop()
        runner.wait(30)
        magics.project = ""
