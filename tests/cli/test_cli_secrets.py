"""The CLI never echoes a secret (issue 20, part 5): what it prints (its usage errors, its messages, a diff of
a file whose name or content holds the key) has every configured secret redacted."""

from __future__ import annotations

import pytest

from odin_magic.cli import main
from support.scripted_runs import scripted_engine

KEY = "sk-ant-api03-the-cli-never-echoes-me-0123456789abcdef"
TOKEN = "project-db-password-0123456789"
MARK = "[redacted ANTHROPIC_API_KEY]"


@pytest.fixture(autouse=True)
def secrets(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("PROJECT_DB", TOKEN)
    monkeypatch.setenv("ODIN_SECRET_VARS", "PROJECT_DB")


def odin(capsys, *argv: str) -> tuple[int, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code
    out, err = capsys.readouterr()
    text = out + err
    assert KEY not in text and TOKEN not in text, text
    return code, text


@pytest.mark.parametrize("argv", [
    [KEY],  # not a command: argparse's invalid choice
    ["validate", KEY],  # no such file
    ["show", KEY],  # no such loop
    ["run", KEY, "--task", "t", "--dry"],
    ["run", "bugfix", "--task", "t", "--gates", KEY],
    ["list", f"--{KEY}"],  # not an option
    ["diff", KEY],
    ["schedule", "bugfix", "--task", "t", "--every", KEY],
    ["run", "bugfix", "--task", f"fix {KEY}", "--dry", "--gates", f"nosuch:{TOKEN}"],
])
def test_an_argument_that_holds_a_secret_is_not_echoed(capsys, project, argv):
    code, text = odin(capsys, *argv, "--project", str(project))  # odin() checks that no secret is in what it printed
    assert code != 0 and text.strip(), text


SCRIPT = f"""
stages:
  build:
    - tools:
        - write: {{file_path: src/{KEY}.py, content: "TOKEN = '{TOKEN}'\\n"}}
        - write: {{file_path: src/app.py, content: "KEY = '{KEY}'\\n"}}
    - text: built
default_verdict: {{status: DONE, passed: true}}
"""

LOOP = """
name: one
max_iterations: 2
stages:
  - id: build
    produces: [src/]
    gate: {mode: ai+human, check: built}
"""


def test_a_diff_of_files_whose_name_or_content_holds_a_secret_is_redacted(capsys, project, write_loop):
    write_loop(LOOP)
    engine, _ = scripted_engine(project, SCRIPT)
    engine.start("one", "t")
    assert (project / "src" / f"{KEY}.py").is_file()
    code, text = odin(capsys, "diff", "build", "--project", str(project))
    assert code == 0 and f"src/{MARK}.py" in text and f"KEY = '{MARK}'" in text
    assert "TOKEN = '[redacted PROJECT_DB]'" in text
