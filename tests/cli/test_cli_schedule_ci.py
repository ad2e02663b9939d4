"""``odin schedule --github-actions`` / ``--gitlab-ci`` (issue 24, item 5): the printed workflow parses as YAML
with the keys each CI requires, and a hostile task round-trips exactly through the YAML and the shell: the
extracted shell line runs in a real bash against a fake ``odin`` on PATH that records the argv it got."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from odin_magic.cli import main

HOSTILE = "it's \"quoted\" $HOME ${{ secrets.X }} `id` $(id) ; rm -rf / # 100% \\ back {{ x }} ${PATH} '"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def odin_argv(tmp_path: Path, line: str) -> list[str]:
    """The argv ``odin`` receives when bash runs ``line`` (a fake odin on PATH writes it, NUL-separated)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "odin"
    fake.write_text(f"#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done > {tmp_path / 'argv'}\n")
    fake.chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HOME": "/nonexistent-home"}
    subprocess.run(["bash", "-e", "-c", line], env=env, check=True, cwd=tmp_path)
    return (tmp_path / "argv").read_bytes().decode().split("\0")[:-1]


def test_github_actions_workflow_has_the_keys_and_the_token(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-ci-test-value")
    code, out, _ = run(capsys, "schedule", "keep-green", "--task", "keep main green", "--every", "6h",
                       "--github-actions", "--project", str(tmp_path))
    assert code == 0
    wf = yaml.safe_load(out)
    assert [s["cron"] for s in wf["on"]["schedule"]] == ["0 */6 * * *"]
    assert wf["permissions"] == {"contents": "write", "pull-requests": "write"}
    job = wf["jobs"]["odin"]
    assert job["runs-on"] == "ubuntu-latest" and isinstance(job["steps"], list)
    steps = job["steps"]
    assert all(("uses" in s) != ("run" in s) for s in steps)  # each step is an action or a command
    uses = [s["uses"].split("@")[0] for s in steps if "uses" in s]
    assert uses == ["actions/checkout", "actions/setup-python", "actions/upload-artifact"]
    runs = {s.get("name"): s for s in steps if "run" in s}
    assert runs["Install odin-magic"]["run"] == "python -m pip install odin-magic"
    odin = runs["Run keep-green unattended"]
    assert odin["run"].strip() == "odin run keep-green --task 'keep main green' --unattended"
    assert odin["env"] == {"ANTHROPIC_API_KEY": "${{ secrets.ANTHROPIC_API_KEY }}"}
    pr = runs["Open the pull request"]
    assert pr["env"] == {"GH_TOKEN": "${{ github.token }}"} and "odin deliver" in pr["run"] and "--pr" in pr["run"]
    upload = steps[-1]
    assert upload["if"] == "always()" and upload["with"]["path"] == ".odin-loop/runs/"
    assert upload["with"]["include-hidden-files"] is True  # .odin-loop is a hidden directory
    assert "sk-ant-ci-test-value" not in out and not (tmp_path / ".odin-loop").exists()


def test_gitlab_ci_job_runs_in_scheduled_pipelines(capsys, tmp_path):
    code, out, _ = run(capsys, "schedule", "keep-green", "--task", "keep main green", "--every", "1d",
                       "--gitlab-ci", "--project", str(tmp_path))
    assert code == 0
    ci = yaml.safe_load(out)
    job = ci["odin-keep-green"]
    assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "schedule"'}]
    assert all(isinstance(line, str) for line in job["script"])
    assert "odin run keep-green --task 'keep main green' --unattended" in [line.strip() for line in job["script"]]
    assert job["artifacts"]["paths"] == [".odin-loop/runs/"] and job["artifacts"]["when"] == "always"
    assert '"0 3 * * *"' in out  # the pipeline schedule's cron, said in the header


@pytest.mark.parametrize("flag", ["--github-actions", "--gitlab-ci"])
def test_a_hostile_task_round_trips_through_the_yaml_and_the_shell(capsys, tmp_path, flag):
    code, out, _ = run(capsys, "schedule", "keep-green", "--task", HOSTILE, flag, "--project", str(tmp_path))
    assert code == 0
    data = yaml.safe_load(out)
    if flag == "--github-actions":
        lines = [s["run"] for s in data["jobs"]["odin"]["steps"] if "odin run" in s.get("run", "")]
        assert "${{" not in lines[0]  # GitHub evaluates ${{ … }} inside run: too: none of the task's is left
    else:
        lines = [line for line in data["odin-keep-green"]["script"] if "odin run" in line]
    [line] = lines
    assert odin_argv(tmp_path, line) == ["run", "keep-green", "--task", HOSTILE.strip(), "--unattended"]


@pytest.mark.parametrize("task", ["two\nlines", "a\ttab", "cr\rhere"])
@pytest.mark.parametrize("flag", ["--github-actions", "--gitlab-ci"])
def test_a_task_with_a_control_character_is_refused(capsys, tmp_path, flag, task):
    code, out, err = run(capsys, "schedule", "keep-green", "--task", task, flag, "--project", str(tmp_path))
    assert code == 2 and out == "" and "control character" in err and "Traceback" not in err


def test_ci_workflows_refuse_a_loop_that_would_wait_for_a_person(capsys, tmp_path):
    code, out, err = run(capsys, "schedule", "spec-harness-tdd", "--task", "x", "--github-actions",
                         "--project", str(tmp_path))
    assert code == 2 and out == "" and "cannot run unattended" in err


def test_the_github_and_gitlab_flags_exclude_each_other(capsys, tmp_path):
    with pytest.raises(SystemExit) as caught:
        main(["schedule", "keep-green", "--task", "x", "--github-actions", "--gitlab-ci", "--project", str(tmp_path)])
    assert caught.value.code == 2 and "not allowed with" in capsys.readouterr().err
