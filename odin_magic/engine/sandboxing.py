"""The sandbox at a run's start: refused when ``sandbox: bwrap`` cannot run here, told when the
run is unsandboxed (:mod:`odin_magic.core.sandbox`)."""

from __future__ import annotations

from odin_magic.core.sandbox import chosen_mode, resolve
from odin_magic.loop.schema import Loop
from odin_magic.runs.records import RecordType


def check(loop: Loop) -> str | None:
    """The warning line when ``loop``'s run will be unsandboxed; raises
    :class:`~odin_magic.core.sandbox.SandboxUnavailable` (a clear error) for ``bwrap`` where it cannot run."""
    return resolve(chosen_mode(loop.sandbox)).warning


#: what a notice is about, in its record: the report finds the run-start sandbox warning by it
SANDBOX_NOTICE = "sandbox"


def tell(engine, s, warning: str | None) -> None:
    """Record and show the run-start warning (the live view and the report show notices)."""
    if warning:
        engine._record(s, RecordType.NOTICE, text=warning, about=SANDBOX_NOTICE)
        engine._emit("notice", s.state, text=warning)
