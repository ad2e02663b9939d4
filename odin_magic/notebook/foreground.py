"""The kernel's own requests come first: a background drive gives way while the kernel handles one.

A run drives in a thread of the kernel's process (see :mod:`odin_magic.notebook.background`).
Every thread of that process shares one interpreter lock (the GIL), and a
dry run's transitions are mostly Python: the drive thread wants the lock all
the time. A cell's round trip in ipykernel passes through several threads
(the shell channel thread receives the request, the main thread runs it, the
IOPub thread publishes its status and result, the shell channel thread sends
the reply), and at each hand-off, and all through the cell's own Python work,
the kernel's threads share the lock with the drive: a ``1+1`` cell took about
twice as long during a run as in an idle kernel. Shortening the interpreter's
switch interval alone does not change that share, because the contention is
symmetric: the drive takes the lock back as often as it gives it up.

So the drive yields to the kernel instead: :class:`Foreground` knows when the
kernel is handling a request (ipykernel's ``dispatch_shell``, which handles every
cell and every widget message from its busy status to its idle status, in
ipykernel 7, the version required; IPython's ``pre_execute`` / ``post_execute``
events where there is no kernel), and the
drive thread calls :meth:`Foreground.give_way` after delivering each engine
event: while a request is being handled, it waits for the request's end, but
never more than :data:`GIVE_WAY_MAX` seconds after the request began, so that a
long cell (``time.sleep(60)``, ``%odin wait``, a pandas job) does not stall the
run: it drives on after that, as before. After a request ends, the drive
waits a further :data:`LINGER` (2 ms) at its next give-way point: a kernel that
has just answered a request is about to get the next one when cells run back to
back (Run All, a client executing cells in turn, a slider sending values), and
without the wait the drive takes the interpreter in the gap between the reply
and the next request, which then waits for it at every hand-off. (Measured on a
2-core machine: a ``1+1`` cell run back to back during a dry run took ×1.25–1.47
of an idle kernel's time without it, ×0.9–1.2 with it; the dry run makes fewer
records while such cells run.) A request that arrives in the wait is given way
to like any other; otherwise an idle kernel never makes the drive wait, and the
drive only hands the interpreter over for a moment at each give-way point.
While a background drive runs, the switch interval is also shortened
(:data:`DRIVE_SWITCH_INTERVAL`, restored when the last drive ends): the drive
does not wait between its steps for the kernel's threads that need the lock
only for a moment (publishing a message), and those wait less for it.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
import threading
import time
from typing import Any, Iterator

#: The longest a drive waits, counted from the start of the kernel's request, before it drives on anyway.
GIVE_WAY_MAX = 0.05
#: How long after the kernel's last request ended a drive still waits at a give-way point (the next request
#: of cells run back to back arrives within it).
LINGER = 0.002
#: sys.setswitchinterval while a background drive runs in a kernel (None: leave it alone).
DRIVE_SWITCH_INTERVAL: float | None = 0.001

_interval_lock = threading.Lock()
_interval_users = 0
_interval_saved: float | None = None


@contextlib.contextmanager
def short_switch_interval(interval: float | None = None) -> Iterator[None]:
    """The interpreter's switch interval set to ``interval`` (default :data:`DRIVE_SWITCH_INTERVAL`) for the
    block, and restored when the last block that set it ends (two projects may drive at once)."""
    global _interval_users, _interval_saved
    interval = DRIVE_SWITCH_INTERVAL if interval is None else interval
    if interval is None:
        yield
        return
    with _interval_lock:
        if _interval_users == 0:
            _interval_saved = sys.getswitchinterval()
            sys.setswitchinterval(interval)
        _interval_users += 1
    try:
        yield
    finally:
        with _interval_lock:
            _interval_users -= 1
            if _interval_users == 0 and _interval_saved is not None:
                sys.setswitchinterval(_interval_saved)
                _interval_saved = None


class Foreground:
    """Whether the kernel is handling a request now, for background work to give way to it."""

    def __init__(self, max_wait: float = GIVE_WAY_MAX, linger: float = LINGER):
        self.max_wait = max_wait
        self.linger = linger
        self._lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()
        self._depth = 0  # requests being handled (subshells can overlap)
        self._since = 0.0  # time.monotonic() when the kernel last became busy
        self._ended = float("-inf")  # time.monotonic() when the kernel last became idle

    @property
    def busy(self) -> bool:
        return not self._idle.is_set()

    def begin(self) -> None:
        with self._lock:
            if self._depth == 0:
                self._since = time.monotonic()
                self._idle.clear()
            self._depth += 1

    def end(self) -> None:
        with self._lock:
            self._depth = max(0, self._depth - 1)
            if self._depth == 0:
                self._ended = time.monotonic()
                self._idle.set()

    def give_way(self) -> None:
        """Wait while the kernel handles a request, at most ``max_wait`` seconds after it began, and until
        ``linger`` seconds after it ended; else hand the interpreter over for a moment (background threads
        only: the kernel's own thread never waits for itself)."""
        if threading.current_thread() is threading.main_thread():
            return
        if self._idle.is_set():
            # sleep(0): the interpreter to a kernel thread a request just woke, now rather than at a switch
            time.sleep(max(self._ended + self.linger - time.monotonic(), 0))
            if self._idle.is_set():
                return
        left = self._since + self.max_wait - time.monotonic()
        if left > 0:
            self._idle.wait(left)

    @contextlib.contextmanager
    def request(self) -> Iterator[None]:
        self.begin()
        try:
            yield
        finally:
            self.end()


def kernel_foreground(shell: Any) -> Foreground | None:
    """The :class:`Foreground` of ``shell``'s kernel, installed on first use; None outside IPython."""
    if shell is None:
        return None
    existing = getattr(shell, "_odin_foreground", None)
    if isinstance(existing, Foreground):
        return existing
    foreground = Foreground()
    kernel = getattr(shell, "kernel", None)
    if kernel is not None and inspect.iscoroutinefunction(getattr(kernel, "dispatch_shell", None)):
        _wrap_dispatch_shell(kernel, foreground)
    elif getattr(shell, "events", None) is not None:  # a terminal IPython: its cells
        shell.events.register("pre_execute", foreground.begin)
        shell.events.register("post_execute", foreground.end)
    else:
        return None
    shell._odin_foreground = foreground
    return foreground


def _wrap_dispatch_shell(kernel: Any, foreground: Foreground) -> None:
    """ipykernel's main thread handles each shell message (a cell, a widget's message) in ``dispatch_shell``:
    from reading it, through its busy status, the handler and the reply, to its idle status. Wrap this
    kernel's (on the instance: its class is untouched; the kernel looks it up at each message)."""
    dispatch = kernel.dispatch_shell

    async def dispatch_shell(*args: Any, **kwargs: Any) -> Any:
        with foreground.request():
            return await dispatch(*args, **kwargs)

    kernel.dispatch_shell = dispatch_shell
