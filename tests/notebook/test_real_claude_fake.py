"""real-claude.ipynb end to end in a real kernel, against a local fake of the Messages API (issue 25): the
notebook a user runs with a key, run here with a dummy key and ANTHROPIC_BASE_URL pointing at the scripted
model served on 127.0.0.1. No request leaves the machine."""

from __future__ import annotations

import json
from pathlib import Path

from support.fake_messages import serve_handle
from support.nbtools import execute_notebook, outputs_text
from odin_magic.workers.scripted import ScriptedModel, load_script

KEY = "sk-ant-fake-real-claude-notebook-key-0123456789"
SCRIPT = """\
version: 1
stages:
  implement:
    - tools:
        - write: {file_path: src/greet.py, content: "def greet(name):\\n    return 'Hello, ' + name + '!'\\n"}
    - text: greet.py written; the gate command passes.
  review:
    - tools:
        - read: {file_path: src/greet.py}
    - tools:
        - write: {file_path: "{run_dir}/review.md", content: "# Review\\n\\nNo blocking findings.\\n"}
    - text: reviewed
default_verdict: {status: DONE, passed: true}
"""


def test_the_real_claude_notebook_runs_end_to_end_against_a_local_fake_api(tmp_path: Path, monkeypatch):
    script = tmp_path / "fake.script.yaml"
    script.write_text(SCRIPT, encoding="utf-8")
    model = ScriptedModel(load_script(script), source=str(script), project_dir=tmp_path)
    for var in ("ODIN_SCRIPT", "ODIN_INTERVIEW_SCRIPT", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    with serve_handle(model.handle) as url:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        nb = execute_notebook("real-claude.ipynb", tmp_path)
    shown = "\n".join(outputs_text(nb))
    assert (tmp_path / "src" / "greet.py").read_text().startswith("def greet(name):")
    assert "✅ done" in shown and KEY not in shown and KEY not in json.dumps(nb)
    kinds = {"worker turn" if body.get("tools") else "judge" for body in model.requests}
    assert kinds == {"worker turn", "judge"}  # the worker's turns and the gate judges went through the fake API
