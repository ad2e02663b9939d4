"""The whole output the SDK's bash tool saves in /tmp is removed before the model hears of it (issue 20).

anthropic 2.16 keeps the head of a long output and saves all of it to ``<tmp>/bash-output-*/``, naming
the file in the result; a key a command printed sat there unredacted until the stage ended. The stage
test runs a real stage (the Claude worker and the SDK against the local fake API, a real shell) and looks
at the temporary directory at the moment the next request arrives. With an SDK that saves nothing
(< 2.16) it checks that nothing is saved and that the result names no file.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from anthropic.lib.tools.agent_toolset import BASH_OUTPUT_LIMIT

from odin_magic.core.secrets import CUT_MARK
from odin_magic.workers.saved_output import NOT_KEPT, drop_saved, remove
from odin_magic.workers.scripted import message_body, reply_response
from support.fake_messages import FakeMessages
from support.stage_jobs import Events, loop_from, stage_job

KEY = "sk-ant-api03-saved-output-must-go-0123456789abcdefABCDEF"

LOOP = """
name: saved
max_iterations: 2
stages:
  - id: build
    agent: executor
    produces: [src/]
    gate: {mode: ai, check: src exists}
"""


def saved_files() -> list[Path]:
    return [p for p in Path(tempfile.gettempdir()).glob("bash-output-*/*") if p.is_file()]


def test_the_saved_whole_output_is_gone_before_the_next_request(project: Path, monkeypatch):
    from odin_magic.workers.claude import ClaudeWorker
    from odin_magic.workers.config import Settings

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    (project / "key.txt").write_text(KEY)
    before = set(saved_files())
    holding_the_key: list[list[Path]] = []

    def finish(body: dict):
        holding_the_key.append([p for p in set(saved_files()) - before if KEY.encode() in p.read_bytes()])
        return reply_response(body, message_body(model=body["model"], content=[{"type": "text", "text": "done"}],
                                                 stop_reason="end_turn", usage={"input_tokens": 1, "output_tokens": 1}))

    fake = FakeMessages()
    command = f"cat key.txt; head -c {3 * BASH_OUTPUT_LIMIT} /dev/zero | tr '\\0' x; echo; cat key.txt"
    fake.tool("bash", {"command": command}).raw(finish)
    job = stage_job(loop_from(LOOP), "build", project)
    ClaudeWorker(Settings(), client_factory=fake.factory()).perform(job, Events())

    assert holding_the_key == [[]]  # the request after the call came, and no saved file held the key then
    result = json.dumps(fake.requests[1].body["messages"][-1]["content"][0])
    assert CUT_MARK.search(result) and "saved to:" not in result and "bash-output-" not in result
    if "lines truncated]" in result:  # an SDK that keeps the head (2.16) and saved the rest
        assert NOT_KEPT.strip() in result


def test_drop_saved_removes_the_file_and_its_folder_and_rewrites_the_sentence():
    folder = Path(tempfile.mkdtemp(prefix="bash-output-", dir=os.path.realpath(tempfile.gettempdir())))
    path = folder / "tmpabc.txt"
    path.write_text(KEY)
    text = (f"head\n\n... [3 lines truncated] Full output saved to: {path} — use read with view_range to read "
            "specific portions. ...")
    assert drop_saved(text) == f"head\n\n... [3 lines truncated] {NOT_KEPT}..."
    assert not folder.exists()
    assert drop_saved("no cut here") == "no cut here"


def test_remove_leaves_what_is_not_the_sdks_and_never_follows_a_link(tmp_path: Path):
    elsewhere = tmp_path / "bash-output-x"  # the right name, not under the temporary directory
    elsewhere.mkdir()
    (elsewhere / "a.txt").write_text("mine")
    assert remove(elsewhere / "a.txt") is False and (elsewhere / "a.txt").exists()

    target = tmp_path / "target"
    target.mkdir()
    (target / "b.txt").write_text("mine")
    link = Path(os.path.realpath(tempfile.gettempdir())) / f"bash-output-link-{os.getpid()}"
    link.symlink_to(target, target_is_directory=True)  # a command replaced the SDK's folder with a link
    try:
        assert remove(link / "b.txt") is False
        assert (target / "b.txt").read_text() == "mine"
    finally:
        link.unlink()
