"""Executing a notebook without a browser (``scripts/quickstart.sh``, the tests): nbclient, saving what
JupyterLab would save.

JupyterLab forgets a widget when its comm closes (a live view that froze closes its widgets), so the
notebook it saves holds the state of the widgets still open only. nbclient keeps every comm's state
until the end and saves it all; :class:`HeadlessClient` forgets a comm's state and buffers when the
comm closes. Not imported by ``%load_ext odin_magic``: nbclient loads only here.
"""

from __future__ import annotations

from nbclient import NotebookClient


class HeadlessClient(NotebookClient):
    """A :class:`nbclient.NotebookClient` whose saved widget state is that of the widgets still open."""

    def handle_comm_msg(self, outs, msg, cell_index) -> None:
        super().handle_comm_msg(outs, msg, cell_index)
        if msg["msg_type"] == "comm_close":
            comm_id = msg["content"]["comm_id"]
            self.widget_state.pop(comm_id, None)
            self.widget_buffers.pop(comm_id, None)
            self.comm_objects.pop(comm_id, None)
