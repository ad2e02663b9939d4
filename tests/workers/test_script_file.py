"""A scripted-model file's mistakes: one located error (file, line of the key or value, the field as
written, a fix), found when the script is loaded, in Python, `odin run` and a notebook alike."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from anthropic.lib.tools.agent_toolset import AgentToolContext, beta_agent_toolset_20260401

from odin_magic.cli import main
from odin_magic.core.errors import ConfigError
from odin_magic.workers.claude import ClaudeWorker
from odin_magic.workers.config import Settings
from odin_magic.workers.factory import make_worker
from odin_magic.workers.script_file import agent_tool_schemas
from odin_magic.workers.scripted import ScriptedModel, load_script

from support import REPO
from support.stage_jobs import Events, loop_from, stage_job

LOOP = """
name: scripted
max_iterations: 3
stages:
  - id: write
    agent: executor
    produces: [note.md]
    gate: {mode: ai, check: note.md says hello}
"""


def script_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "script.yaml"
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def load_error(path: Path) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_script(path)
    return info.value


# (the script, the error's message after the file name, its hint)
BROKEN = {
    "a typo'd key, at its own line (not the next), by its path as written (no implied `turns`)": (
        """
        stages:
          write:
            - text: hi
              tool:
                - write: {file_path: a.md, content: hi}
        """,
        ":4:7: stages.write[0].tool: unknown key 'tool' (did you mean 'tools'?)",
        "rename it to 'tools'",
    ),
    "a tool argument the tool does not take": (
        """
        stages:
          fix:
            attempts:
              - turns:
                  - tools:
                      - edit:
                          file_path: src/calc.py
                          old_str: "a"
                          new_string: "b"
        """,
        ":8:19: stages.fix.attempts[0].turns[0].tools[0].edit.old_str: "
        "the edit tool takes no argument 'old_str' (did you mean 'old_string'?)",
        "rename it to 'old_string'",
    ),
    "an unknown tool name": (
        """
        stages:
          w: [{tools: [{wrte: {file_path: a, content: b}}]}]
        """,
        ":2:17: stages.w[0].tools[0].wrte: there is no tool named 'wrte' (did you mean 'write'?)",
        "use one of the tools: bash, read, write, edit, glob, grep",
    ),
    "a tool argument of the wrong type": (
        """
        stages:
          test:
            - tools:
                - bash: {command: "python -m pytest -q", timeout_ms: "600000"}
        """,
        ":4:62: stages.test[0].tools[0].bash.timeout_ms: the bash tool's 'timeout_ms' is a whole number, "
        "not '600000' (a quoted value is text)",
        "write a whole number without quotes",
    ),
    "a missing tool argument": (
        """
        stages:
          fix:
            - tools: [{edit: {file_path: a.py, new_string: b}}]
        """,
        ":3:16: stages.fix[0].tools[0].edit: the edit tool needs the argument 'old_string'",
        "add `old_string: ...`",
    ),
    "a turn field of the wrong type": (
        """
        stages:
          test:
            - text: [a, b]
        """,
        ":3:13: stages.test[0].text: expected text, got a list",
        "write text",
    ),
    "a tool call written as a turn (no `tools:`)": (
        """
        stages:
          implement:
            - write: {file_path: a, content: b}
        """,
        ":3:7: stages.implement[0].write: unknown key 'write': a tool call goes under `tools:`",
        "write it as `tools: [{write: {...}}]`",
    ),
    "a turn that is not a mapping": (
        """
        stages:
          w: [hi]
        """,
        ":2:7: stages.w[0]: expected a mapping, got 'hi'",
        "a turn is a mapping such as `{text: ...}` or `{tools: [...]}`",
    ),
    "an attempt without turns": (
        """
        stages:
          w: {turns: []}
        """,
        ":2:14: stages.w.turns: an attempt needs at least one turn",
        "add a turn, e.g. `- text: done`",
    ),
    "a verdict's value, in the one-verdict shorthand": (
        """
        judge:
          write: {passed: maybe}
        """,
        ":2:19: judge.write.passed: not a verdict: input should be a valid boolean, unable to interpret input; "
        "got 'maybe'",
        "a verdict needs passed: true|false (script a bad answer with `malformed:`)",
    ),
    "a verdict's misspelt key, which the judge would drop": (
        """
        judge:
          write:
            - {passed: true, reason: [fine]}
        """,
        ":3:22: judge.write[0].reason: not a verdict: unknown key 'reason' (did you mean 'reasons'?)",
        "rename it to 'reasons'",
    ),
    "a scripted HTTP error without its status": (
        """
        stages:
          w:
            - error: {message: overloaded}
        """,
        ":3:14: stages.w[0].error.status: missing required key 'status'",
        "add `status: 529` (an HTTP error status, 400 to 599)",
    ),
    "answers that are not by stage": (
        """
        answers:
          interview-score: [1, 2]
        """,
        ":2:20: answers.interview-score: expected a mapping, got a list",
        "write a mapping",
    ),
    "invalid YAML": ("stages: [unclosed\n", ":2:1: invalid YAML", "fix the YAML syntax at this line"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_each_mistake_is_one_error_at_the_line_of_its_key_or_value(tmp_path: Path, case: str):
    text, message, hint = BROKEN[case]
    path = script_file(tmp_path, text)
    error = load_error(path)
    if case == "invalid YAML":
        assert error.message.startswith(f"{path}{message}")
    else:
        assert error.message == f"{path}{message}"
    assert error.hint == hint


def test_an_attempt_written_like_a_turn_says_what_an_attempt_is(tmp_path: Path):
    path = script_file(tmp_path, """
        stages:
          implement:
            attempts:
              - turns: [{text: one}]
              - text: two
    """)
    error = load_error(path)
    assert error.message.splitlines() == [
        f"{path}: 2 problems in the script",
        f"{path}:5:9: error: stages.implement.attempts[1].turns: missing required key 'turns' -- fix: a stage is a "
        "list of turns (`- text: ...`), `{turns: [...]}` or `{attempts: [{turns: [...]}, ...]}`",
        f"{path}:5:9: error: stages.implement.attempts[1].text: unknown key 'text' in an attempt: an attempt is "
        "`{turns: [...]}` -- fix: put it in a turn: `- turns: [{text: ...}]`",
    ]


def test_every_mistake_is_listed_in_one_error_in_file_order(tmp_path: Path):
    """The format first (every such mistake at once), then the verdicts and tool calls of a well-formed script."""
    path = script_file(tmp_path, """
        stages:
          w:
            - text: [a]
            - txt: done
    """)
    lines = load_error(path).message.splitlines()
    assert lines[0] == f"{path}: 2 problems in the script"
    assert [line.split(": error: ")[0] for line in lines[1:]] == [f"{path}:3:13", f"{path}:4:7"]
    path = script_file(tmp_path, """
        judge:
          w: [{passed: true, reson: [x]}]
        stages:
          w:
            - tools: [{read: {path: a}}]
    """)
    lines = load_error(path).message.splitlines()
    assert lines[0] == f"{path}: 2 problems in the script"
    assert [line.split(": error: ")[0] for line in lines[1:]] == [f"{path}:2:22", f"{path}:5:23"]
    assert "did you mean 'reasons'" in lines[1] and "did you mean 'file_path'" in lines[2]


def test_a_misspelt_argument_is_not_also_reported_missing(tmp_path: Path):
    path = script_file(tmp_path, "stages:\n  w: [{tools: [{write: {file_path: a, contents: b}}]}]\n")
    error = load_error(path)
    assert "did you mean 'content'" in error.message and "needs the argument" not in error.message


def test_every_shorthand_still_loads(tmp_path: Path):
    path = script_file(tmp_path, """
        stages:
          bare: [{text: a}, {tools: [{bash: {command: ls, timeout_ms: 600000}}]}]
          one: {turns: [{tools: [{read: {file_path: a, view_range: [1, 2]}}]}]}
          many:
            attempts:
              - turns: [{tools: [{edit: {file_path: a, old_string: x, new_string: y, replace_all: true}}]}]
              - turns: [{tools: [{glob: {pattern: "*.py"}}, {grep: {pattern: x, path: src}}]}]
          error: [{error: {status: 529}}]
        judge:
          bare: {passed: true}
          many: [{malformed: nope}, {json: {passed: false, reasons: [r]}}]
        default_verdict: {passed: true, reasons: [scripted]}
        answers:
          author: {new: {json: {kind: x}}}
    """)
    script = load_script(path)
    assert [len(script.stages[s]) for s in ("bare", "one", "many", "error")] == [1, 1, 2, 1]
    assert len(script.stages["bare"][0].turns) == 2
    assert script.judge["bare"][0].json_ == {"passed": True}
    assert script.judge["many"][0].malformed == "nope" and script.default_verdict.json_["reasons"] == ["scripted"]
    assert script.answers["author"]["new"][0].json_ == {"kind": "x"}


def test_the_argument_check_uses_the_sdk_tools_own_schemas():
    """The schemas are read from the SDK's tool objects (the toolset the toolbox offers), not written here."""
    tools = beta_agent_toolset_20260401(AgentToolContext(workdir="."))
    assert agent_tool_schemas() == {tool.name: tool.input_schema for tool in tools}
    assert set(agent_tool_schemas()["edit"]["properties"]) == {"file_path", "old_string", "new_string", "replace_all"}


def test_a_bad_script_stops_the_worker_before_any_request(project: Path, tmp_path: Path):
    path = script_file(tmp_path, "stages:\n  w: [{tools: [{edit: {file_path: a, old_str: x, new_string: y}}]}]\n")
    with pytest.raises(ConfigError, match=r"script.yaml:2:38: stages.w\[0\].tools\[0\].edit.old_str"):
        make_worker(Settings(script=path), project)


def test_odin_run_with_a_bad_script_prints_one_located_error_and_starts_nothing(capsys, project, write_loop,
                                                                                 tmp_path, monkeypatch):
    write_loop()
    path = script_file(tmp_path, "stages:\n  spec:\n    - text: hi\n      tool: []\n")
    monkeypatch.setenv("ODIN_SCRIPT", str(path))
    code = main(["run", "demo", "--task", "t", "--project", str(project)])
    out, err = capsys.readouterr()
    assert code == 1
    assert err.splitlines() == [
        f"odin: {path}:4:7: stages.spec[0].tool: unknown key 'tool' (did you mean 'tools'?)",
        "  hint: rename it to 'tools'",
    ]
    assert "▶" not in out and not (project / ".odin-loop" / "runs").exists()


def test_a_notebook_run_with_a_bad_script_says_the_same_in_the_cell(project, write_loop, tmp_path):
    from IPython.core.error import UsageError
    from IPython.testing import globalipapp

    ip = globalipapp.start_ipython() or globalipapp.get_ipython()
    ip.run_line_magic("load_ext", "odin_magic")
    write_loop()
    path = script_file(tmp_path, "stages:\n  spec: [{tools: [{wrte: {file_path: a, content: b}}]}]\n")
    ip.run_line_magic("odin", f"config project={project} script={path}")
    try:
        with pytest.raises(UsageError) as info:
            ip.run_line_magic("odin", "run demo --task t")
    finally:
        ip.run_line_magic("odin", "config script=default project=default")
    assert f"{path}:2:20: stages.spec[0].tools[0].wrte: there is no tool named 'wrte'" in str(info.value)
    assert "Traceback" not in str(info.value)
    assert not (project / ".odin-loop" / "runs").exists()


def test_the_documented_bash_timeout_is_the_sdks_and_timeout_ms_is_its_argument():
    """The docs name where the default comes from (the installed SDK's constant, whose value changes between
    its releases) and the argument that raises it."""
    from anthropic.lib.tools import agent_toolset

    doc = (REPO / "docs" / "scripted-model.md").read_text(encoding="utf-8")
    assert "BASH_DEFAULT_TIMEOUT" in doc and hasattr(agent_toolset, "BASH_DEFAULT_TIMEOUT")
    assert "timeout_ms" in doc and "timeout_ms" in agent_tool_schemas()["bash"]["properties"]


def test_a_scripted_timeout_ms_reaches_the_sdks_bash_tool(project: Path, tmp_path: Path):
    """The toolbox hands `timeout_ms` to the SDK's bash: a 1 ms timeout stops a command that would take 30 s
    (and its shell: the next call restarts it), a large one lets a command run."""
    path = script_file(tmp_path, """
        stages:
          write:
            - tools: [{bash: {command: "sleep 30", timeout_ms: 1}}]
            - tools: [{bash: {command: "echo no shell"}}]
            - tools: [{bash: {restart: true}}]
            - tools: [{bash: {command: "echo a new shell", timeout_ms: 900000}}]
            - text: done
    """)
    model = ScriptedModel.from_file(path)
    worker = ClaudeWorker(Settings(), client_factory=model.client_factory())
    events = Events()
    worker.perform(stage_job(loop_from(LOOP), "write", project), events)
    results = [block for body in model.requests for message in body["messages"] if isinstance(message["content"], list)
               for block in message["content"] if block.get("type") == "tool_result"]
    results = list({block["tool_use_id"]: block for block in results}.values())  # a request may repeat earlier ones
    texts = [json.dumps(block["content"]) for block in results]
    assert "timed out" in texts[0].lower() and results[0].get("is_error")  # the SDK's words vary by release
    assert "restart" in texts[1].lower()  # as documented: the shell is gone until a restart
    assert "a new shell" in texts[-1]
