"""Driving a run in a background thread, so that a notebook kernel stays usable.

A thread (not an asyncio task) because a cell that blocks, such as a long
``time.sleep`` or a pandas call, would stall a task on the kernel's event loop
but does not stall a thread. One drive call at a time per project; engine
events fan out to whoever listens (the live view, a text printer); the result
or the error of each call is kept for :meth:`BackgroundDrive.wait`.
"""

from __future__ import annotations

import sys
import threading
import traceback
from typing import Any, Callable

from odin_magic.core.errors import RunRefused
from odin_magic.runs.events import EngineEvent
from odin_magic.core.secrets import redact_text

Subscriber = Callable[[EngineEvent], None]
Finisher = Callable[["DriveOutcome"], None]


class EventFanout:
    """An engine listener that forwards each event to every subscriber.

    A subscriber that raises is reported once to stderr and dropped: a broken
    view must never stop a run.
    """

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []
        self._lock = threading.Lock()

    def subscribe(self, fn: Subscriber) -> None:
        with self._lock:
            if fn not in self._subscribers:
                self._subscribers.append(fn)

    def unsubscribe(self, fn: Subscriber) -> None:
        with self._lock:
            if fn in self._subscribers:
                self._subscribers.remove(fn)

    def __call__(self, event: EngineEvent) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for fn in subscribers:
            try:
                fn(event)
            except Exception:  # a view's bug: report it, keep the run going
                print(f"odin: a live view failed and was detached:\n{traceback.format_exc()}", file=sys.__stderr__)
                self.unsubscribe(fn)


class DriveOutcome:
    """How one background call ended: its result (a RunState) or its error."""

    def __init__(self, label: str, result: Any = None, error: BaseException | None = None):
        self.label = label
        self.result = result
        self.error = error

    @property
    def ok(self) -> bool:
        return self.error is None


class BackgroundDrive:
    """Runs one engine call at a time in a daemon thread.

    ``submit(label, call)`` returns at once; ``wait()`` blocks until the call
    ends and returns its :class:`DriveOutcome`. ``on_finish`` callbacks run in
    the background thread when a call ends.
    """

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._done = threading.Event()
        self._done.set()
        self._lock = threading.Lock()
        self.outcome: DriveOutcome | None = None
        self.label: str | None = None
        self._finishers: list[Finisher] = []

    @property
    def busy(self) -> bool:
        return not self._done.is_set()

    def on_finish(self, fn: Finisher) -> None:
        self._finishers.append(fn)

    def refuse_if_busy(self) -> None:
        """Raise :class:`RunRefused` while a call is running."""
        if self.busy:
            raise RunRefused(
                f"the run is busy ({self.label}) in the background",
                hint="wait for it (%odin wait), or end it after the current step with %odin stop",
            )

    def submit(self, label: str, call: Callable[[], Any]) -> None:
        with self._lock:
            self.refuse_if_busy()
            self._done.clear()
            self.label = label
            self.outcome = None
            self._thread = threading.Thread(target=self._work, args=(label, call), name=f"odin-{label}", daemon=True)
            self._thread.start()

    def _work(self, label: str, call: Callable[[], Any]) -> None:
        try:
            outcome = DriveOutcome(label, result=call())
        except BaseException as exc:  # kept for wait(); shown by the finishers
            outcome = DriveOutcome(label, error=exc)
        self.outcome = outcome
        for fn in list(self._finishers):
            try:
                fn(outcome)
            except Exception:
                print(f"odin: reporting the end of {label} failed:\n{traceback.format_exc()}", file=sys.__stderr__)
        self._done.set()

    def wait(self, timeout: float | None = None) -> DriveOutcome | None:
        """Block until the current call ends (None if ``timeout`` passed first)."""
        if not self._done.wait(timeout):
            return None
        return self.outcome


class Coalescer:
    """Runs ``work`` in a daemon thread of its own when asked, at most once every ``interval`` seconds.

    ``request()`` returns at once (it never runs ``work`` on the caller's
    thread); requests that arrive while ``work`` runs or waits for its next
    turn are folded into that one run. Used for the run charts: a gate asks for
    a redraw, the drive goes on, and the chart is redrawn at most once a second
    off the drive's thread. ``settle(timeout)`` waits until every request so
    far has been served (the end of a drive, tests: an event, never a sleep).
    """

    def __init__(self, work: Callable[[], None], interval: float = 1.0, name: str = "odin-coalescer"):
        self._work = work
        self.interval = interval
        self._name = name
        self._cond = threading.Condition()
        self._asked = 0  # requests so far
        self._served = 0  # requests already covered by a run of work
        self._thread: threading.Thread | None = None
        self._last = float("-inf")  # time.monotonic() when work last started
        self._closed = False

    def request(self, now: bool = False) -> None:
        """Ask for a run of ``work``; ``now``: without waiting for the interval (e.g. at the end of a drive)."""
        with self._cond:
            if self._closed:
                return
            self._asked += 1
            if now:
                self._last = float("-inf")
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def close(self) -> None:
        """No more work: the thread ends (a request already waiting is dropped)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def settle(self, timeout: float | None = None) -> bool:
        """Block until every request made so far has been served; False if ``timeout`` passed first."""
        with self._cond:
            target = self._asked
            return self._cond.wait_for(lambda: self._served >= target, timeout)

    def _loop(self) -> None:
        import time

        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._asked > self._served or self._closed)
                while not self._closed and (delay := self._last + self.interval - time.monotonic()) > 0:
                    self._cond.wait(delay)  # a request(now=True) resets _last and wakes this
                if self._closed:
                    self._served = self._asked
                    self._thread = None
                    self._cond.notify_all()
                    return
                target, self._last = self._asked, time.monotonic()
            try:
                self._work()
            except Exception:  # a chart that cannot be drawn must not stop the next one
                print(f"odin: {self._name} failed:\n{traceback.format_exc()}", file=sys.__stderr__)
            with self._cond:
                self._served = target
                self._cond.notify_all()


class StreamRouter:
    """``sys.stdout`` / ``sys.stderr`` stand-in: writes from background threads go to a sink.

    A drive's own output goes to its view through events, but libraries it
    uses may still write to ``sys.stderr`` from their threads (a logging
    warning, say). In a kernel that text would land in whichever cell is
    running. While ``route()`` returns a sink (a drive is busy), writes from
    any thread other than the main one go to that sink instead; everything
    else passes through to the original stream.
    """

    def __init__(self, original, name: str, route: Callable[[], Callable[[str, str], None] | None]):
        self.original = original
        self.name = name  # "stdout" or "stderr"
        self.route = route

    def write(self, text: str) -> int:
        if threading.current_thread() is not threading.main_thread():
            sink = self.route()
            if sink is not None:
                sink(self.name, redact_text(text))
                return len(text)
        return self.original.write(text)

    def __getattr__(self, name: str):
        return getattr(self.original, name)


def install_stream_router(route: Callable[[], Callable[[str, str], None] | None]) -> None:
    """Put :class:`StreamRouter` in front of ``sys.stdout`` and ``sys.stderr`` (once)."""
    for name in ("stdout", "stderr"):
        current = getattr(sys, name)
        if isinstance(current, StreamRouter):
            current.route = route
        else:
            setattr(sys, name, StreamRouter(current, name, route))


def uninstall_stream_router() -> None:
    for name in ("stdout", "stderr"):
        current = getattr(sys, name)
        if isinstance(current, StreamRouter):
            setattr(sys, name, current.original)
