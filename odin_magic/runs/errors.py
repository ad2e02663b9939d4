"""What can go wrong reading a run: it is damaged (:class:`RunCorrupt`) or not there (:class:`RunNotFound`)."""

from __future__ import annotations

from odin_magic.core.errors import OdinError
from odin_magic.runs.state import RunState


class RunCorrupt(OdinError):
    """A run that cannot be read: damage in its event log (not a torn last line), a log that is
    gone or empty beside a state.json, a state.json that cannot be replaced, ...

    :meth:`RunStore.load` adds what is known of the run: its state.json's last word, and whether
    the user abandoned the damaged run (``abandoned.json``). A damaged run whose state.json last
    said it was active blocks a new one until it is abandoned or moved away.
    """

    last_known: RunState | None = None
    abandoned: bool = False

    @property
    def may_be_active(self) -> bool:
        """Its state.json's last word was an active status, and the user has not abandoned it."""
        return not self.abandoned and self.last_known is not None and self.last_known.active


class RunNotFound(OdinError):
    """No run by that id (or a run id that is not a plain name)."""
