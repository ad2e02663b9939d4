"""``odin validate-manifest`` and ``odin schedule`` (issue 13 items 1 and 7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from odin_magic.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_validate_manifest_names_the_line_and_field(capsys, tmp_path: Path):
    bad = tmp_path / "acceptance.yaml"
    bad.write_text("criteria:\n  - id: AC1\n    priority: P7\n    text: adds\n    verify: 'true'\n")
    code, out, _ = run(capsys, "validate-manifest", str(bad), "--project", str(tmp_path))
    assert code == 1
    assert f"{bad}:3:15: error: criteria[0].priority:" in out and "'P0' or 'P1'" in out
    bad.write_text("criteria:\n  - id: AC1\n    priority: P0\n    text: adds\n    verify: 'true'\n")
    code, out, _ = run(capsys, "validate-manifest", str(bad), "--project", str(tmp_path))
    assert code == 0 and "acceptance manifest ok" in out


def test_validate_manifest_of_a_missing_file_is_a_usage_error(capsys, tmp_path: Path):
    code, _, err = run(capsys, "validate-manifest", str(tmp_path / "nope.yaml"), "--project", str(tmp_path))
    assert code == 2 and "no such file" in err and "Traceback" not in err


def test_schedule_prints_cron_and_systemd_and_installs_nothing(capsys, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-schedule-test-value")
    code, out, _ = run(capsys, "schedule", "keep-green", "--task", "keep main green", "--every", "6h",
                       "--project", str(tmp_path))
    assert code == 0
    cron = next(line for line in out.splitlines() if line.startswith("0 */6 * * *"))
    assert "run keep-green --task 'keep main green' --unattended" in cron
    assert "OnCalendar=*-*-* 00/6:00:00" in out and "[Timer]" in out and "Type=oneshot" in out
    assert '. "$HOME/.config/odin-magic/env"' in cron  # the key comes from the environment file
    assert "sk-ant-schedule-test-value" not in out  # the key is read from the env file when it runs
    assert not (tmp_path / ".odin-loop").exists()


def test_schedule_refuses_a_loop_that_would_wait_for_a_person(capsys, tmp_path: Path):
    code, out, err = run(capsys, "schedule", "spec-harness-tdd", "--task", "x", "--project", str(tmp_path))
    assert code == 2 and "cannot run unattended" in err
    # why, in the words of what was asked: no "INVALID", no option the user never passed
    assert "pauses for a human" in err and "INVALID" not in err and "drop --schedulable" not in err


def test_schedule_refuses_a_period_cron_cannot_say(capsys, tmp_path: Path):
    code, _, err = run(capsys, "schedule", "keep-green", "--task", "x", "--every", "7m", "--project", str(tmp_path))
    assert code == 2 and "divide 60" in err
    code, _, err = run(capsys, "schedule", "keep-green", "--task", "x", "--every", "daily", "--project", str(tmp_path))
    assert code == 2 and "15m, 6h, 1d" in err
    code, _, err = run(capsys, "schedule", "keep-green", "--task", "x", "--every", "3d", "--project", str(tmp_path))
    assert code == 2 and "week (7d)" in err


def test_schedule_escapes_what_cron_and_systemd_would_expand(capsys, tmp_path: Path):
    code, out, _ = run(capsys, "schedule", "keep-green", "--task", "reach 100% for $HOME", "--every", "7d",
                       "--project", str(tmp_path))
    assert code == 0
    cron = next(line for line in out.splitlines() if line.startswith("0 3 * * 0 "))
    assert "reach 100\\% for $HOME" in cron and "100%" not in cron.replace("\\%", "")
    exec_start = next(line for line in out.splitlines() if line.startswith("ExecStart="))
    assert "reach 100%% for $$HOME" in exec_start
    assert "OnCalendar=Sun *-*-* 03:00:00" in out


def test_report_prints_the_report_or_its_paths(capsys, tmp_path: Path):
    code, _, _ = run(capsys, "run", "keep-green", "--task", "stay green", "--dry", "--project", str(tmp_path))
    assert code == 0
    code, out, _ = run(capsys, "report", "--project", str(tmp_path))
    assert code == 0 and out.startswith("# Run ") and "- **status**: done" in out
    code, out, _ = run(capsys, "report", "--open", "--project", str(tmp_path))
    md, nb = out.splitlines()
    assert code == 0 and md.endswith("report.md") and nb.endswith("report.ipynb") and Path(nb).is_file()


def test_report_of_a_paused_run_says_when_it_comes(capsys, tmp_path: Path):
    run(capsys, "run", "bugfix", "--task", "fix it", "--dry", "--project", str(tmp_path))
    code, _, err = run(capsys, "report", "--project", str(tmp_path))
    assert code == 2 and "no report yet" in err and "written when it ends" in err


UNATTENDED = """\
name: nightly
version: 1
description: lint then test, nobody watching
max_iterations: 2
regression: false
stages:
  - id: check
    produces: [notes.md]
    gate:
      mode: ai
      check: the checks pass
      run: [no_such_program_odin_nightly]
"""


def test_unattended_refuses_a_loop_that_could_wait_for_a_person(capsys, tmp_path: Path):
    code, _, err = run(capsys, "run", "bugfix", "--task", "fix it", "--dry", "--unattended", "--project", str(tmp_path))
    assert code == 1 and "cannot run unattended" in err and "--schedulable" in err
    assert not (tmp_path / ".odin-loop" / "runs").exists() or not any((tmp_path / ".odin-loop" / "runs").iterdir())


def test_unattended_exits_0_only_on_done(capsys, tmp_path: Path):
    code, _, _ = run(capsys, "run", "keep-green", "--task", "stay green", "--dry", "--unattended",
                     "--project", str(tmp_path))
    assert code == 0


def test_unattended_block_ends_the_run_blocked_with_its_report_exit_3(capsys, tmp_path: Path):
    loops = tmp_path / ".odin-loop" / "loops"
    loops.mkdir(parents=True)
    (loops / "nightly.yaml").write_text(UNATTENDED)
    code, out, err = run(capsys, "run", "nightly", "--task", "nightly check", "--dry", "--run-commands",
                         "--unattended", "--project", str(tmp_path))
    assert code == 3, out + err
    code, out, _ = run(capsys, "report", "--project", str(tmp_path))
    assert "- **status**: blocked" in out and "no_such_program_odin_nightly" in out


def test_an_unattended_drive_turns_a_pause_into_a_block_and_run_puts_it_back(tmp_path: Path):
    from odin_magic.engine.orchestrator import Engine

    engine = Engine(tmp_path)
    engine.unattended = True
    state = engine.start("bugfix", "fix it", dry=True)
    assert state.status == "blocked" and state.blocked.kind == "unattended"
    paused_at = state.current_stage
    assert (engine.run_dir(state.run_id) / "report.md").is_file()
    attended = Engine(tmp_path)
    state = attended.run()
    assert state.status == "awaiting_approval" and state.current_stage == paused_at


def test_the_crontab_line_runs_without_an_environment_file(capsys, tmp_path: Path):
    """The key may come from elsewhere (a profile): a missing env file must not stop the scheduled run."""
    import subprocess

    code, out, _ = run(capsys, "schedule", "keep-green", "--task", "x", "--every", "6h", "--project", str(tmp_path))
    assert code == 0
    cron = next(line for line in out.splitlines() if line.startswith("0 */6 * * *"))
    command = cron.split(" ", 5)[5]
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / ".odin-loop").mkdir()  # a project odin has been used in
    subprocess.run(["sh", "-c", command], env={"HOME": str(home), "PATH": "/usr/bin:/bin"}, timeout=120)
    log = tmp_path / ".odin-loop" / "schedule.log"
    assert log.is_file()  # it got past the env file to the run
    assert "no Anthropic API key found" in log.read_text()  # odin itself ran (the shell's >> alone makes the log)


def test_an_unattended_dry_run_with_approve_all_approves_its_pauses(tmp_path: Path):
    from odin_magic.engine.orchestrator import Engine
    from odin_magic.runs.state import DryOptions

    engine = Engine(tmp_path)
    engine.unattended = True
    state = engine.start("bugfix", "fix it", dry=DryOptions(approve_all=True))
    assert state.status == "done", state.blocked


@pytest.mark.parametrize("argv", [["keep-green", "--task", "fix it\n* * * * * rm -rf ~"], ["keep\tgreen", "--task", "x"]])
def test_schedule_refuses_a_control_character_in_the_task_or_loop(capsys, tmp_path: Path, argv):
    """Issue 20 item 5: a newline in --task printed a second crontab line running its own command."""
    code, out, err = run(capsys, "schedule", *argv, "--project", str(tmp_path))
    assert code == 2 and "control character" in err and out == ""
