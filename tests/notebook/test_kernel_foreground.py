"""A background drive gives way to the kernel's requests (issue 14: a cell during a run stays quick).

While the kernel handles a cell or a widget message, the drive waits before its next event, at most
``max_wait`` seconds after the request began (a long cell never stalls the run); the interpreter's switch
interval is shortened while a drive runs in a kernel and restored when it ends. See odin_magic/notebook/foreground.py.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from typing import Iterator

from support.loops import pingpong_loop
from support.nbtools import Kernel, text_of
from odin_magic.engine.orchestrator import Engine
from odin_magic.notebook.foreground import Foreground, short_switch_interval
from odin_magic.notebook.actions import NotebookRunner
from odin_magic.runs.state import DryOptions

#: a loop that goes round for as long as the test lets it (its check stage fails each time)
ROUNDS_LOOP = pingpong_loop("rounds", 100000000)
#: enough failing checks for any test's rounds; a longer --gates line only costs time (shlex reads a long
#: token in quadratic time: 100000 of them took 40 s to parse)
GATES = ",".join(["check:fail"] * 5000)


def write_rounds_loop(project) -> None:
    loops = project / ".odin-loop" / "loops"
    loops.mkdir(parents=True, exist_ok=True)
    (loops / "rounds.yaml").write_text(ROUNDS_LOOP, encoding="utf-8")


class EventCounter:
    """Subscribed to a runner's events: ``reached`` is set once ``n`` events arrived after ``arm()``."""

    def __init__(self, n: int):
        self.n, self.count, self.reached = n, 0, threading.Event()

    def __call__(self, event) -> None:
        self.count += 1
        if self.count >= self.n:
            self.reached.set()


@contextlib.contextmanager
def rounds_drive(project, max_wait: float) -> Iterator[tuple[NotebookRunner, Foreground]]:
    """A runner driving the rounds loop in the background, its drive giving way to ``foreground``; stopped
    after the block."""
    write_rounds_loop(project)
    foreground = Foreground(max_wait=max_wait)
    runner = NotebookRunner(project, lambda d, listener: Engine(d, listener=listener), foreground=foreground)
    runner.start("rounds", "t", dry=DryOptions(gates=GATES.split(",")))
    try:
        yield runner, foreground
    finally:
        runner.stop()
        runner.wait(60)


def test_a_drive_waits_while_the_kernel_handles_a_request_and_drives_on_after(tmp_path):
    with rounds_drive(tmp_path, max_wait=600) as (runner, foreground):
        going = EventCounter(3)  # the drive is under way before the request arrives
        runner.fanout.subscribe(going)
        assert going.reached.wait(60), "the drive never started"
        foreground.begin()  # as the wrapped dispatch_shell does when a cell arrives
        held = EventCounter(3)  # at most the event in flight when the request began gets through
        runner.fanout.subscribe(held)
        assert not held.reached.wait(1.0), f"{held.count} events while the kernel handled a request"
        after = EventCounter(3)
        runner.fanout.subscribe(after)
        foreground.end()  # and when the request is over
        assert after.reached.wait(60), "the drive did not go on after the request"
        assert runner.drive.busy


def test_a_long_request_does_not_stall_the_run(tmp_path):
    with rounds_drive(tmp_path, max_wait=0.05) as (runner, foreground):
        with foreground.request():  # a cell that takes as long as the drive needs to make 20 events
            events = EventCounter(20)
            runner.fanout.subscribe(events)
            assert events.reached.wait(60), "the run stalled while a long cell ran"


def test_the_kernel_thread_itself_never_waits():
    foreground = Foreground(max_wait=600)
    with foreground.request():
        ender = threading.Timer(30, foreground.end)  # were the main thread to wait, only this would end it
        ender.start()
        foreground.give_way()  # the main thread handles the request: returns at once (no deadlock)
        assert foreground.busy, "give_way waited for the request it was called from to end"
        ender.cancel()
    assert not foreground.busy


def test_in_an_idle_kernel_a_drive_hands_the_interpreter_over_at_each_point_it_gives_way():
    """A kernel thread that an arriving request wakes gets the interpreter at the drive's next give-way point,
    not at the next forced switch (set here to 5 s: only a hand-over lets it run while the drive spins)."""
    foreground, woke, ran = Foreground(), threading.Event(), threading.Event()
    seen: list[int | None] = []

    def kernel_thread() -> None:
        woke.wait()
        ran.set()

    def drive() -> None:
        for calls in range(1_000_000):
            if ran.is_set():
                seen.append(calls)
                return
            if calls == 10:
                woke.set()  # a request arrives while the drive runs
            foreground.give_way()  # the kernel is idle: never a wait
        seen.append(None)  # the kernel thread never ran while the drive went on

    threading.Thread(target=kernel_thread, daemon=True).start()
    before = sys.getswitchinterval()
    sys.setswitchinterval(5)
    try:
        driver = threading.Thread(target=drive, daemon=True)
        driver.start()
        driver.join(120)
    finally:
        sys.setswitchinterval(before)
    assert seen and seen[0] is not None and seen[0] < 10_000  # a few calls after the wake-up, not a forced switch



def in_background(call) -> threading.Event:
    """``call`` on a thread of its own (a drive's); the event is set when it has returned."""
    done = threading.Event()

    def run() -> None:
        call()
        done.set()

    threading.Thread(target=run, daemon=True).start()
    return done


def test_just_after_a_request_a_drive_waits_for_the_next_one_a_moment():
    """Cells run back to back: after a request ends, the drive's next give-way point waits ``linger``, and a
    request that arrives meanwhile is waited for like any other."""
    foreground = Foreground(max_wait=600, linger=0.3)
    with foreground.request():
        before_end = time.monotonic()
    assert in_background(foreground.give_way).wait(60)
    assert time.monotonic() - before_end >= 0.3 - 0.01  # the linger, counted from the request's end

    with foreground.request():
        pass
    waiting = in_background(foreground.give_way)  # in the linger ...
    foreground.begin()  # ... the next request arrives
    assert not waiting.wait(1.0), "the drive went on while the next request was handled"
    foreground.end()
    assert waiting.wait(60)


def test_the_switch_interval_is_restored_when_the_last_drive_ends():
    before = sys.getswitchinterval()
    with short_switch_interval(0.0007):
        assert sys.getswitchinterval() == 0.0007
        with short_switch_interval(0.0007):  # a second project driving at the same time
            pass
        assert sys.getswitchinterval() == 0.0007  # still one drive going
    assert sys.getswitchinterval() == before


CELL_RUNNER = "_odin_runner = get_ipython().magics_manager.registry['OdinMagics'].runner()"


@contextlib.contextmanager
def rounds_kernel(project, first: str = "", run_options: str = "") -> Iterator[Kernel]:
    """A real kernel with odin loaded (and ``first`` run with it), the rounds loop driving in its background;
    shut down after the block."""
    write_rounds_loop(project)
    kernel = Kernel(project)
    try:
        kernel.execute("%load_ext odin_magic\n" + first)
        kernel.execute(f"%odin run rounds --task t --dry {run_options} --gates {GATES}")
        yield kernel
    finally:
        kernel.shutdown()


def test_in_a_kernel_a_drive_gives_way_to_cells_and_shortens_the_switch_interval_only_while_it_drives(tmp_path):
    with rounds_kernel(tmp_path, first="import sys, json, threading\n_before = sys.getswitchinterval()") as k:
        k.execute(CELL_RUNNER)
        seen = json.loads(text_of(k.execute(
            "print(json.dumps({'busy': _odin_runner.drive.busy, 'interval': sys.getswitchinterval(),"
            " 'before': _before}))")))
        assert seen["busy"], "the run should still be driving"
        assert seen["interval"] < seen["before"]  # shortened while the drive runs in the background
        # a cell that waits for the run's next events: the run waits for the cell instead (max_wait: long;
        # set in a cell of its own, before: the drive reads it when the next cell begins)
        cell = (
            "_n = [0]; _reached = threading.Event()\n"
            "def _count(event):\n"
            "    _n[0] += 1\n"
            "    if _n[0] >= 3: _reached.set()\n"
            "_odin_runner.fanout.subscribe(_count)\n"
            "print(json.dumps({{'reached': _reached.wait({timeout}), 'events': _n[0]}}))\n"
            "_odin_runner.fanout.unsubscribe(_count)")
        k.execute("_odin_runner.foreground.max_wait = 600")
        held = json.loads(text_of(k.execute(cell.format(timeout=1.0))))
        assert not held["reached"], f"the run made {held['events']} events while a cell ran"
        # the same cell with the default bound: after max_wait the run drives on during the cell
        k.execute("_odin_runner.foreground.max_wait = 0.05")
        going = json.loads(text_of(k.execute(cell.format(timeout=60), timeout=120)))
        assert going["reached"], "the run stalled while a long cell ran"
        k.execute("%odin stop\n%odin wait --timeout 120", timeout=180)  # longer than the wait it asks for
        after = json.loads(text_of(k.execute(
            "print(json.dumps({'busy': _odin_runner.drive.busy, 'interval': sys.getswitchinterval()}))")))
        assert not after["busy"] and after["interval"] == seen["before"]  # restored when the drive ended


def test_interrupting_a_wait_stops_the_wait_not_the_run_and_shows_no_traceback(tmp_path):
    with rounds_kernel(tmp_path, run_options="--stage-delay 0.05") as kernel:
        # Ctrl-C (what the notebook's interrupt button sends: SIGINT) some events into the wait
        outputs = kernel.execute(CELL_RUNNER + "\n" + (
            "import os, signal\n"
            "_seen = []\n"
            "_odin_runner.fanout.subscribe(lambda e: _seen.append(e) or len(_seen) == 20 "
            "and os.kill(os.getpid(), signal.SIGINT))\n"
            "get_ipython().run_line_magic('odin', 'wait --timeout 600')"), allow_error=True)
        assert not [m for m in outputs if m["msg_type"] == "error"]  # no traceback: one UsageError line
        assert "UsageError: stopped waiting (interrupted); the run goes on in the background" in text_of(outputs)
        assert "running" in text_of(kernel.execute("%odin status"))  # the run goes on
        kernel.execute("%odin stop\n%odin wait --timeout 60", timeout=120)  # longer than the wait it asks for
