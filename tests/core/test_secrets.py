"""The API key never appears in anything the project writes or sends (issue 9, item 4).

A real ``odin run`` (a subprocess started with the key in its environment)
talks through the real SDK to the local fake Messages API over HTTP. Both a
gate command and the worker's bash tool print the driver's environment
(``/proc/$PPID/environ``, every ancestor's, ``env``); afterwards no file of the
project, no recorded request body and no output of the CLI holds the key.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from odin_magic.core import secrets
from support.fake_messages import FakeMessages

KEY = "sk-ant-api03-odin-secret-test-0123456789abcdef"
TOKEN = "odin-project-db-password-4711"  # a project secret, named in ODIN_SECRET_VARS

#: Prints the shell's own environment, its parent's (the driver, for the bash tool), and the
#: secret-looking variables of every ancestor (a gate command's driver may be further up).
PRINT_ENVIRONS = (
    "env; cat /proc/$PPID/environ | tr '\\0' '\\n'; "
    "p=$$; while [ \"$p\" -gt 1 ]; do tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null | grep -a -e ^ANTHROPIC_ -e ^PROJECT_; "
    "p=$(grep '^PPid:' /proc/$p/status | cut -f2); done; true"
)

#: Redaction is the defence where a command can read the key (sandbox off, or not Linux): these loops run
#: unsandboxed; under the sandbox a command cannot find it at all (tests/core/test_sandbox.py).
LOOP = yaml.safe_dump({
    "name": "leaky",
    "max_iterations": 2,
    "sandbox": "off",
    "stages": [{"id": "build", "produces": ["out.md"],
                "gate": {"mode": "ai", "check": "out.md exists", "run": [PRINT_ENVIRONS]}}],
})


def test_the_key_printed_by_a_gate_command_and_the_bash_tool_is_never_written_or_sent(
        project: Path, write_loop, tmp_path: Path):
    write_loop(LOOP)
    fake = FakeMessages()
    fake.tool("bash", {"command": PRINT_ENVIRONS})
    fake.tool("bash", {"command": f"echo {TOKEN} > \"$ODIN_RUN_DIR/out.md\"; echo ANTHROPIC_API_KEY=$(tr '\\0' '\\n' "
                                  f"< /proc/$PPID/environ | grep ^ANTHROPIC_API_KEY= | cut -d= -f2-)"})
    fake.reply("done: out.md written")
    fake.verdict(passed=True, reasons=["out.md exists"])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "ODIN_"))}
    with fake.serve() as base_url:
        env.update(ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=base_url, ODIN_SECRET_VARS="PROJECT_DB_PASSWORD",
                   PROJECT_DB_PASSWORD=TOKEN, ODIN_MAX_RETRIES="0")
        proc = subprocess.run([sys.executable, "-m", "odin_magic", "run", "leaky", "--task", "leak it",
                               "--project", str(project)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert fake.pending == 0 and not fake.unexpected
    run_dir = next((project / ".odin-loop" / "runs").iterdir())
    state = json.loads((run_dir / "state.json").read_text())
    assert state["status"] == "done"

    # the commands really printed the environment (so the test can fail): redaction marks are there
    evidence = next((run_dir / "gates").iterdir()).read_text()
    assert "[redacted ANTHROPIC_API_KEY]" in evidence and f"ANTHROPIC_BASE_URL={base_url}" in evidence
    thread = (run_dir / "thread.json").read_text()
    assert "[redacted ANTHROPIC_API_KEY]" in thread
    sent = [json.dumps(r.body, ensure_ascii=False) for r in fake.requests]
    assert any("[redacted ANTHROPIC_API_KEY]" in body for body in sent)  # the bash tool's result went back
    assert any("[redacted PROJECT_DB_PASSWORD]" in body for body in sent)  # the judge read out.md

    # every file the project wrote (out.md is the bash command's own doing, not odin's)
    assert TOKEN in (run_dir / "out.md").read_text()
    files = [p for p in project.rglob("*") if p.is_file() and p.name != "out.md"]
    assert len(files) > 5
    for secret in (KEY, TOKEN):
        leaks = [str(p) for p in files if secret.encode() in p.read_bytes()]
        assert leaks == [], f"{secret} written to {leaks}"
        assert [i for i, body in enumerate(sent) if secret in body] == []
        assert secret not in proc.stdout + proc.stderr


def test_redaction_of_values_structures_and_short_values(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ODIN_SECRET_VARS", " PROJECT_DB_PASSWORD , SHORT")
    monkeypatch.setenv("PROJECT_DB_PASSWORD", TOKEN)
    monkeypatch.setenv("SHORT", "1")  # too short to be a secret: redacting it would destroy every number
    data = {"a": [f"x{KEY}y", ("keep", TOKEN)], KEY: 1, "n": 1}
    clean = secrets.redact(data)
    assert clean == {"a": ["x[redacted ANTHROPIC_API_KEY]y", ("keep", "[redacted PROJECT_DB_PASSWORD]")],
                     "[redacted ANTHROPIC_API_KEY]": 1, "n": 1}
    untouched = {"a": ["plain", ("1",)]}
    assert secrets.redact(untouched) is untouched


def test_a_driven_run_makes_the_driver_non_dumpable(project: Path, write_loop):
    if secrets.is_dumpable() is None:
        pytest.skip("only Linux tells whether a process is dumpable")
    write_loop()
    # a child process, so that the test's own process is left as it was
    code = ("import sys; from odin_magic import secrets; from odin_magic.engine import Engine; "
            "from odin_magic.runs.state import DryOptions; assert secrets.is_dumpable(); "
            f"Engine({str(project)!r}).start('demo', 't', dry=DryOptions(approve_all=True)); "
            "sys.exit(0 if secrets.is_dumpable() is False else 3)")
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0


#: The last line a command prints is the key line of an ancestor's environment (the driver is one):
#: it becomes the bash tool's error line and the gate's failure reason, both shown in the live view.
KEY_LAST = ("p=$$; while [ \"$p\" -gt 1 ]; do tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null | grep -a "
            "^ANTHROPIC_API_KEY=; p=$(grep '^PPid:' /proc/$p/status | cut -f2); done; exit 1")


@pytest.mark.slow
def test_the_key_never_reaches_a_notebooks_outputs_or_live_view(tmp_path: Path, monkeypatch):
    from support.nbtools import Kernel

    loops = tmp_path / ".odin-loop" / "loops"
    loops.mkdir(parents=True)
    (loops / "leaky.yaml").write_text(yaml.safe_dump({
        "name": "leaky", "max_iterations": 1, "sandbox": "off",
        "stages": [{"id": "build", "produces": ["out.md"],
                    "gate": {"mode": "ai", "check": "out.md exists", "run": [KEY_LAST]}}],
    }))
    script = tmp_path / "leaky.script.yaml"
    script.write_text(yaml.safe_dump({"stages": {"build": [
        {"tools": [{"bash": {"command": 'echo notes > "$ODIN_RUN_DIR/out.md"; ' + KEY_LAST}}]},
        {"text": "done"}]}}))
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)  # in the kernel's own environment, as a user's would be
    monkeypatch.setenv("ODIN_SCRIPT", str(script))
    kernel = Kernel(tmp_path)
    try:
        kernel.execute("%load_ext odin_magic")
        kernel.execute("%odin run leaky --task t")
        kernel.execute("%odin wait")
        kernel.execute("%odin status")
        kernel.execute("%odin runs")
        kernel.drain()
    finally:
        kernel.shutdown()
    shown = json.dumps(kernel.messages, ensure_ascii=False, default=str)
    assert "[redacted ANTHROPIC_API_KEY]" in shown  # the live view showed the lines that held it
    assert KEY not in shown
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert [str(p) for p in files if KEY.encode() in p.read_bytes()] == []
