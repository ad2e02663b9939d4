"""Issue 10 item 12: the HTML views' stage and verdict marks render without an emoji font.

Every character the HTML views use beyond ASCII must be in DejaVu Sans (the font Debian's chromium
falls back on; matplotlib ships a copy, read here with fontTools): no ✅ 🔄 ⏸ ⬜ ❌ ⛔, which need an
emoji font. The terminal keeps those symbols (and falls back to ASCII where its encoding cannot hold
them: odin_magic.core.encoding)."""

from __future__ import annotations

import os
import threading

import matplotlib
import pytest
from fontTools.ttLib import TTFont

from support.nbtools import write_tiny_loop
from odin_magic.render.displays import RunsDisplay, StatusDisplay, VerdictRecord, VerdictsDisplay
from odin_magic.engine.orchestrator import Engine
from odin_magic.render.text import render_status
from odin_magic.runs.state import DryOptions
from odin_magic.notebook.widgets import AnswerPanel, RunView


@pytest.fixture(scope="module")
def dejavu() -> set[int]:
    return set(TTFont(os.path.join(matplotlib.get_data_path(), "fonts/ttf/DejaVuSans.ttf")).getBestCmap())


def uncovered(html: str, cmap: set[int]) -> set[str]:
    return {ch for ch in html if ord(ch) > 127 and ord(ch) not in cmap}


class Actions:
    def approve(self): pass
    def revise(self, feedback): pass
    def stop(self): pass
    def answer(self, text): pass


def test_every_mark_in_the_html_views_is_in_a_common_font(tmp_path, dejavu):
    write_tiny_loop(tmp_path)
    engine = Engine(tmp_path)
    loop = engine.catalog.load("tiny")
    view = RunView(loop, tmp_path, Actions(), state_source=lambda: engine.status())
    engine.listener = view.handle_event
    paused = engine.start("tiny", "write notes", dry=DryOptions(gates=["review:fail"]))  # passed, looped, paused
    view.show_state(paused)
    htmls = [StatusDisplay(paused, loop)._repr_html_(), view.checklist.value, view.verdicts_html.value,
             view.approval.widget.children[0].value, RunsDisplay([paused])._repr_html_(),
             VerdictsDisplay([VerdictRecord("write", False, reasons=["r"])])._repr_html_(),
             AnswerPanel("interview", "Which format?", Actions()).widget.children[0].value]
    done = engine.approve()  # done
    view.show_state(done)
    htmls += [StatusDisplay(done, loop)._repr_html_(), view.checklist.value, view.status_line.value]
    blocked = Engine(tmp_path / "blocked")
    write_tiny_loop(tmp_path / "blocked")
    htmls.append(StatusDisplay(blocked.start("tiny", "t", dry=DryOptions(gates=["write:fail"] * 3)), loop)
                 ._repr_html_())  # the same failure three times: blocked
    assert "■" in htmls[-1]
    looped = Engine(tmp_path / "looped")
    write_tiny_loop(tmp_path / "looped")
    looped.listener = lambda e: e.kind == "gate_failed" and looped.request_stop()
    htmls.append(StatusDisplay(looped.start("tiny", "t", dry=DryOptions(gates=["write:fail"])), loop)._repr_html_())
    for html in htmls:
        assert not uncovered(html, dejavu), (uncovered(html, dejavu), html)
    assert "✓" in htmls[0] and "‖" in htmls[0] and "○" in htmls[0]  # the marks, in HTML
    assert "↻" in htmls[-1] and "✗" in htmls[5]


def test_the_terminal_keeps_its_symbols(tmp_path):
    write_tiny_loop(tmp_path)
    engine = Engine(tmp_path)
    state = engine.start("tiny", "write notes", dry=DryOptions())
    text = render_status(state, engine.loop_for(state.run_id))
    assert "✅ write" in text and "⏸ review" in text and "⬜ finish" in text
    assert "✅ write" in repr(StatusDisplay(state, engine.loop_for(state.run_id)))


def test_the_terminal_falls_back_to_ascii_where_its_encoding_cannot_hold_the_symbols(tmp_path):
    import subprocess
    import sys

    write_tiny_loop(tmp_path)
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    env.pop("ANTHROPIC_API_KEY", None)
    shown = []
    for args in (["run", "tiny", "--task", "t", "--dry", "--gates", "review:fail"], ["status"], ["runs"]):
        done = subprocess.run([sys.executable, "-m", "odin_magic", *args, "--project", str(tmp_path)],
                              capture_output=True, env=env, timeout=120)
        assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")
        shown.append(done.stdout.decode("ascii"))  # pure ASCII
    run, status, _ = shown
    assert "[loop] review gate failed: dry run: scripted failure (review:fail) -> write" in run
    assert "[ok] review gate passed; awaiting approval" in run
    assert "[ok] write" in status and "[wait] review" in status and "[ ] finish" in status
