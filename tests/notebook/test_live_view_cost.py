"""The live view's work per gate does not grow with the run (issue 14 item 3): verdicts are appended a
page at a time, evidence is read when its section opens, charts are redrawn off the drive's thread."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
import time

from support.nbtools import write_tiny_loop
from odin_magic.notebook.background import Coalescer
from odin_magic.engine.orchestrator import Engine
from odin_magic.runs.events import EngineEvent
from odin_magic.notebook.actions import NotebookRunner
from odin_magic.runs.state import DryOptions
from odin_magic.notebook.widgets import VERDICT_PAGE, VERDICT_PAGES, RunView, ViewSources
from odin_magic.runs.evidence import EVIDENCE_LOG


class NoActions:
    def approve(self) -> None: ...
    def revise(self, feedback: str) -> None: ...
    def stop(self) -> None: ...
    def answer(self, text: str) -> None: ...


def test_a_verdict_rerenders_only_its_page_and_the_view_keeps_the_latest_pages(tmp_path):
    view = RunView(None, tmp_path, NoActions())
    gates = VERDICT_PAGE * VERDICT_PAGES + 30
    for i in range(gates - 1):
        view.handle_event(EngineEvent("gate_failed", "r", "build", f"failure {i}", {"next_stage": "build"}))
    pages = view.verdict_pages.pages.children[1:]
    before = [p.value for p in pages]
    view.handle_event(EngineEvent("gate_passed", "r", "build", "ai"))
    after = [p.value for p in view.verdict_pages.pages.children[1:]]
    assert len(after) == VERDICT_PAGES and after[:-1] == before[:-1]  # only the page being filled changed
    assert after[-1] != before[-1] and after[-1].count("<details>") <= VERDICT_PAGE
    assert len(view.verdicts) <= VERDICT_PAGE * VERDICT_PAGES
    assert view.verdicts[-1].passed and f"({gates})" in view.verdicts_box.get_title(0)
    hidden = gates - len(view.verdicts)
    assert f"{hidden} earlier gate verdict(s) not shown" in view.verdict_pages.note.value


def test_evidence_is_read_when_the_verdicts_section_is_opened(tmp_path):
    write_tiny_loop(tmp_path)
    engine = Engine(tmp_path)
    state = engine.start("tiny", "t", dry=DryOptions(gates=["review:fail"], approve_all=True))
    run_dir = engine.run_dir(state.run_id)
    log = run_dir / EVIDENCE_LOG
    raw = bytearray(log.read_bytes())
    for entry in state.history:  # what the evidence says now, after the view was opened (same offsets)
        if entry.evidence:
            start = int(entry.evidence.partition("#")[2])
            end = raw.index(b"\n", start)
            data = json.loads(raw[start:end])
            line = json.dumps({"stage": data["stage"], "passed": data["passed"], "verdict": data["verdict"],
                               "reason": f"read at opening: {entry.stage}"}).encode()
            assert len(line) <= end - start
            raw[start:end] = line.ljust(end - start)
    # the view is given entries sealed for the rewritten lines (the evidence seal refuses a line whose hash
    # differs), and opened before they are on disk: what it shows was read when the section was opened
    sealed = state.model_copy(update={"history": [
        dataclasses.replace(e, evidence_sha256=hashlib.sha256(raw[int(e.evidence.partition("#")[2]):][
            :e.evidence_bytes]).hexdigest()) if e.evidence and e.evidence_bytes else e for e in state.history]})
    view = RunView(engine.catalog.load("tiny"), tmp_path, NoActions(), sealed,
                   sources=ViewSources(run_dir_for=engine.run_dir))
    log.write_bytes(bytes(raw))
    assert view.verdicts == []
    view.verdicts_box.selected_index = 0
    assert [v.reasons[0] for v in view.verdicts] == [
        f"read at opening: {e.stage}" for e in state.history if e.evidence]


def test_charts_are_redrawn_off_the_drive_thread_and_never_hold_it_up(tmp_path):
    write_tiny_loop(tmp_path)
    runner = NotebookRunner(tmp_path, lambda d, listener: Engine(d, listener=listener))
    entered, release, done = threading.Event(), threading.Event(), threading.Event()
    drawn: list[tuple[str, str]] = []

    class HeldChart:
        """A chart whose first drawing takes until the test releases it."""

        def update(self, state) -> None:
            drawn.append((threading.current_thread().name, state.status))
            entered.set()
            release.wait(60)

    gates: list[str] = []
    runner.fanout.subscribe(lambda e: gates.append(e.kind) if e.kind in ("gate_passed", "gate_failed") else None)
    runner.fanout.subscribe(lambda e: done.set() if e.kind == "done" else None)
    runner.attach(None, [HeldChart()])
    runner.start("tiny", "t", dry=DryOptions(gates=["review:fail"] * 2, approve_all=True))
    try:
        assert done.wait(60), "the run did not finish while a chart was being drawn"
        assert entered.wait(60)  # a chart was being drawn meanwhile
    finally:
        release.set()
    outcome = runner.drive.wait(60)
    assert outcome is not None and outcome.ok and outcome.result.status == "done"
    assert all(name == "odin-charts" for name, _ in drawn)
    assert drawn[-1][1] == "done"  # the drive's end draws the final state
    assert len(drawn) < len(gates)  # requests made while a drawing ran were folded into one


def test_a_coalescer_folds_requests_and_keeps_its_interval():
    started: list[float] = []
    release, running = threading.Event(), threading.Event()
    coalescer = Coalescer(lambda: (started.append(time.monotonic()), running.set(), release.wait(30)), interval=0.2)
    coalescer.request()
    assert running.wait(30)
    for _ in range(50):
        coalescer.request()  # while the first run is held
    release.set()
    assert coalescer.settle(30)
    assert len(started) == 2  # the first request, then one run for the 50 that came meanwhile
    assert started[1] - started[0] >= 0.2
    coalescer.request(now=True)
    assert coalescer.settle(30) and len(started) == 3
