"""The headless executor saves what JupyterLab saves: the state of the widgets still open (no kernel needed:
the comm messages are handed to it as a kernel would send them)."""

from __future__ import annotations

import nbformat

from odin_magic.notebook.headless import HeadlessClient


def comm(kind: str, comm_id: str, state: dict | None = None) -> dict:
    data = {} if state is None else {"state": state, "buffer_paths": []}
    return {"msg_type": kind, "header": {"msg_type": kind}, "parent_header": {},
            "content": {"comm_id": comm_id, "target_name": "jupyter.widget", "data": data}, "buffers": []}


def test_a_closed_widget_s_state_is_not_saved():
    client = HeadlessClient(nbformat.v4.new_notebook())
    model = {"_model_name": "HTMLModel", "_model_module": "@jupyter-widgets/controls",
             "_model_module_version": "2.0.0", "value": "x" * 1000}
    for comm_id in ("kept", "closed"):
        client.handle_comm_msg([], comm("comm_open", comm_id, dict(model)), 0)
    client.handle_comm_msg([], comm("comm_msg", "closed", {"value": "y" * 1000}), 0)
    client.handle_comm_msg([], comm("comm_close", "closed"), 0)
    client.set_widgets_metadata()
    saved = client.nb.metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"]
    assert list(saved) == ["kept"] and saved["kept"]["state"]["value"] == "x" * 1000
