"""Helpers for the notebook tests: a tiny test loop, and a real kernel driven over jupyter_client."""

from __future__ import annotations

import os
import queue
import shutil
import sys
import tempfile
import time
from pathlib import Path

from support import REPO

TINY_LOOP = """\
name: tiny
version: 1
description: A tiny loop for tests.
max_iterations: 5
stages:
  - id: write
    goal: Write the notes.
    produces: [notes.md]
    gate: {mode: ai, check: notes.md exists}
  - id: review
    goal: Review the notes.
    agent: reviewer
    consumes: [notes.md]
    produces: [review.md]
    gate: {mode: ai+human, check: no blocking findings, on_fail: write}
  - id: finish
    goal: Finish.
    produces: [done.md]
    gate: {mode: ai, check: done.md exists}
"""

NOTEBOOKS = REPO / "example_notebooks"
INTERVIEW_SCRIPT = NOTEBOOKS / "interview.script.yaml"
# a kernel's first cell for an interview project: the scripted interviewer answers, no model
INTERVIEW_SETUP = '%load_ext odin_magic\n%config OdinMagics.script = "interview.script.yaml"'
#: a cell's guard against a kernel that never answers: not a speed claim (a quick cell takes well under a second
#: on a quiet machine; on a loaded CI machine, a kernel test's cell has taken over a minute)
CELL_TIMEOUT = 180
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def write_tiny_loop(project: Path) -> Path:
    path = project / ".odin-loop" / "loops" / "tiny.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(TINY_LOOP, encoding="utf-8")
    return path


def execute_notebook(name: str, where: Path, extra: tuple[str, ...] = (), kernel_name: str = "python3", cells=()):
    """Copy the example notebook ``name`` (and the ``extra`` files it reads) to ``where`` and execute it
    there in a real kernel (nbclient, saving the state of the widgets still open, as JupyterLab does), with the
    code ``cells`` appended; the executed notebook."""
    import nbformat

    from odin_magic.notebook.headless import HeadlessClient

    for file in (name, *extra):
        shutil.copy(NOTEBOOKS / file, where / file)
    nb = nbformat.read(where / name, as_version=4)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    nb.cells.extend(nbformat.v4.new_code_cell(source) for source in cells)
    HeadlessClient(nb, kernel_name=kernel_name, timeout=300, resources={"metadata": {"path": str(where)}}).execute()
    return nb


def outputs_text(nb) -> list[str]:
    """The text each code cell of an executed notebook shows, one string per cell."""
    texts = []
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        parts = []
        for o in c.outputs:
            if o.output_type == "stream":
                parts.append(o.text)
            elif "data" in o:
                parts.append(o.data.get("text/plain", ""))
        texts.append("".join(parts))
    return texts


def without_model_key(monkeypatch) -> None:
    """No API key or script from the environment reaches the kernels a test starts."""
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ODIN_SCRIPT", "ODIN_INTERVIEW_SCRIPT"):
        monkeypatch.delenv(var, raising=False)


def write_interview_project(project: Path, monkeypatch) -> None:
    """The ``talk`` loop (an interview alone) and the example notebook's interview script, no model key."""
    from support.interview_loops import INTERVIEW_ONLY_LOOP

    without_model_key(monkeypatch)
    shutil.copy(INTERVIEW_SCRIPT, project / INTERVIEW_SCRIPT.name)
    loops = project / ".odin-loop" / "loops"
    loops.mkdir(parents=True, exist_ok=True)
    (loops / "talk.yaml").write_text(INTERVIEW_ONLY_LOOP, encoding="utf-8")


class Kernel:
    """A real IPython kernel (ipykernel) in ``cwd``; ``execute`` returns that cell's outputs.

    Every iopub message is also kept in ``messages`` so that tests can see what
    background work sent while other cells ran (``execute_interactive`` would
    drop messages of other cells).
    """

    def __init__(self, cwd: Path):
        from jupyter_client.manager import KernelManager

        self.km = KernelManager(kernel_name="python3")
        env = {k: v for k, v in os.environ.items() if k != "JPY_SESSION_NAME"}
        # the kernel's stderr: kept out of the test's output, shown when a cell does not finish
        self.stderr = tempfile.TemporaryFile()
        self.km.start_kernel(cwd=str(cwd), env=env, stderr=self.stderr)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        self.messages: list[dict] = []

    def execute(self, code: str, timeout: float = CELL_TIMEOUT, allow_error: bool = False) -> list[dict]:
        """Run ``code`` and return its outputs once the kernel is idle again; ``timeout`` only guards against a
        kernel that never answers (a test that waits inside the cell gives more than it waits)."""
        msg_id = self.kc.execute(code)
        outputs: list[dict] = []
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"cell did not finish in {timeout} s:\n{code}\n{self._diagnosis(msg_id)}")
            try:
                msg = self.kc.get_iopub_msg(timeout=remaining)
            except queue.Empty:
                continue
            self.messages.append(msg)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind = msg["msg_type"]
            if kind == "status" and msg["content"]["execution_state"] == "idle":
                break
            if kind in ("stream", "display_data", "execute_result", "error", "update_display_data"):
                outputs.append(msg)
        if not allow_error:
            errors = [m for m in outputs if m["msg_type"] == "error"]
            if errors:
                c = errors[0]["content"]
                raise AssertionError(f"cell failed: {c['ename']}: {c['evalue']}\n{code}")
        return outputs

    def _diagnosis(self, msg_id: str) -> str:
        """What a cell that did not finish left behind: whether the kernel replied on the shell channel (if it did,
        the cell ran and its idle status was lost), the last iopub message, and the kernel's stderr."""
        try:
            reply = self.kc.get_shell_msg(timeout=1)
            replied = reply["parent_header"].get("msg_id") == msg_id
        except queue.Empty:
            replied = False
        last = self.messages[-1]["msg_type"] if self.messages else "none"
        self.stderr.seek(0)
        err = self.stderr.read().decode("utf-8", "replace").strip().splitlines()[-30:]
        return "\n".join([f"shell reply received: {replied}; last iopub message: {last}",
                          "kernel stderr:", *err])

    def drain(self) -> None:
        """Collect the iopub messages background work sent so far: a round trip through an empty cell.

        iopub is one ordered stream (the kernel's threads queue onto one IOPub thread), so once
        that cell's idle status arrives, everything sent before it is in ``messages``: no waiting
        for a quiet spell.
        """
        self.execute("pass")

    def restart(self) -> None:
        self.km.restart_kernel(now=True)
        self.kc.wait_for_ready(timeout=60)

    def shutdown(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)
        self.stderr.close()


def text_of(outputs: list[dict]) -> str:
    """The text a cell shows. ``update_display_data`` is left out: it re-draws an earlier
    display (found by its display id, wherever it is) and adds nothing to this cell."""
    parts = []
    for msg in outputs:
        c = msg["content"]
        if msg["msg_type"] == "stream":
            parts.append(c["text"])
        elif msg["msg_type"] in ("display_data", "execute_result"):
            parts.append(c["data"].get("text/plain", ""))
        elif msg["msg_type"] == "error":
            parts.append(f"{c['ename']}: {c['evalue']}")
    return "".join(parts)


def final_text_of(outputs: list[dict]) -> str:
    """The text a cell shows once it is done: like :func:`text_of`, with each of the cell's displays as its
    latest ``update_display_data`` left it (a live view re-draws itself at pauses and ends, and freezes into the
    run's status)."""
    latest = {}
    for msg in outputs:
        display_id = (msg["content"].get("transient") or {}).get("display_id")
        if msg["msg_type"] == "update_display_data" and display_id:
            latest[display_id] = msg
    shown = []
    for msg in outputs:
        if msg["msg_type"] == "update_display_data":
            continue
        display_id = (msg["content"].get("transient") or {}).get("display_id")
        if display_id in latest:
            msg = {**msg, "content": {**msg["content"], "data": latest[display_id]["content"]["data"]}}
        shown.append(msg)
    return text_of(shown)


def python() -> str:
    return sys.executable
