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

from .errors import RunRefused
from .events import EngineEvent

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

    def submit(self, label: str, call: Callable[[], Any]) -> None:
        with self._lock:
            if self.busy:
                raise RunRefused(
                    f"the run is busy ({self.label}) in the background",
                    hint="wait for it (%odin wait), or end it after the current step with %odin stop",
                )
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
