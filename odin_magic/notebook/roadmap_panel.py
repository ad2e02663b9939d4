"""The approval panel at a roadmap phase boundary (issue 22 item 6): when `%odin roadmap run` pauses before a
phase, its contract (risk, impact, scope, criteria, gate, budget) with **Start**, **Skip** and **Edit contract**.

Start is `%odin roadmap run` again (it approves the pause); Skip is `%odin roadmap run --skip PHASE`; Edit contract
opens the contract file's text, and Save writes it only when it validates (each error at its line otherwise).
The buttons' handlers are methods (``start``, ``skip``, ``save``) so that tests call them as a click does."""

from __future__ import annotations

import html
import threading
from pathlib import Path
from typing import Any, Callable

from odin_magic.core.atomic import write_atomic
from odin_magic.loop.contract import Contract, contract_path, validate_contract_text


def contract_html(phase_id: str, contract: Contract) -> str:
    """The contract as the panel shows it: a small table and the criteria."""
    budget = f"max_iterations {contract.max_iterations}" + (f", max ${contract.max_usd:g}" if contract.max_usd else "")
    gate = contract.gate.kind + "".join(f"; <code>{html.escape(c.cmd)}</code>" for c in contract.gate.run)
    rows = [("risk", html.escape(contract.risk)), ("impact", html.escape(contract.impact)),
            ("loop", html.escape(contract.loop_name)),
            ("scope", ", ".join(f"<code>{html.escape(g)}</code>" for g in contract.scope)),
            ("gate", gate), ("budget", budget), ("mutation sensor", "on" if contract.sensor_on else "off")]
    table = "".join(f"<tr><th style='text-align:left;padding-right:8px'>{k}</th><td>{v}</td></tr>" for k, v in rows)
    criteria = "".join(f"<li><b>{html.escape(c.id)}</b> ({c.priority}) {html.escape(c.text)} "
                       f"<small>verify: <code>{html.escape(c.verify)}</code></small></li>" for c in contract.criteria)
    return (f"<h4 style='margin:4px 0'>⏸ phase <code>{html.escape(phase_id)}</code> waits for you before it starts"
            f"</h4><table>{table}</table>" + (f"<b>Acceptance criteria</b><ul>{criteria}</ul>" if criteria else ""))


class PhasePanel:
    """The contract of the phase the roadmap waits before, with Start / Skip / Edit contract.

    ``drive(skip)`` runs the roadmap (``skip``: the phase to mark skipped, else None) and returns what to show."""

    def __init__(self, project_dir: Path, phase_id: str, contract: Contract, drive: Callable[[str | None], Any]):
        import ipywidgets as w

        self.project_dir, self.phase_id, self.drive = Path(project_dir), phase_id, drive
        self.path = contract_path(self.project_dir, phase_id)
        auto = w.Layout(width="auto")
        self.start_button = w.Button(description="Start", button_style="success", icon="play", layout=auto,
                                     tooltip="approve: the same as %odin roadmap run")
        self.skip_button = w.Button(description="Skip", button_style="warning", icon="forward", layout=auto,
                                    tooltip=f"%odin roadmap run --skip {phase_id}")
        self.edit_button = w.Button(description="Edit contract", icon="edit", layout=auto)
        self.save_button = w.Button(description="Save contract", button_style="primary", icon="save", layout=auto)
        self.editor = w.Textarea(layout=w.Layout(width="100%", height="260px"))
        self.edit_box = w.VBox([w.HTML(f"<code>{html.escape(str(self.path))}</code>"), self.editor,
                                self.save_button])
        self.edit_box.layout.display = "none"
        self.contract_view = w.HTML(contract_html(phase_id, contract))
        self.message = w.HTML()
        self.output = w.Output()
        self.buttons = (self.start_button, self.skip_button, self.edit_button)
        self._clicked = threading.Lock()
        self.start_button.on_click(lambda _b: self.start())
        self.skip_button.on_click(lambda _b: self.skip())
        self.edit_button.on_click(lambda _b: self.edit())
        self.save_button.on_click(lambda _b: self.save())
        self.widget = w.VBox([self.contract_view, w.HBox(list(self.buttons)), self.edit_box, self.message,
                              self.output], layout=w.Layout(border="1px solid #e0a040", padding="6px", margin="6px 0"))
        self.widget.add_class("odin-roadmap-phase")

    def start(self) -> None:
        self._go(None, f"Started: phase {self.phase_id} runs (as %odin roadmap run).")

    def skip(self) -> None:
        self._go(self.phase_id, f"Skipped: phase {self.phase_id} (as %odin roadmap run --skip {self.phase_id}).")

    def _go(self, skip: str | None, said: str) -> None:
        if not self._clicked.acquire(blocking=False):
            return  # a second click while the first is handled: no double drive
        for b in (*self.buttons, self.save_button):
            b.disabled = True
        self.message.value = html.escape(said)
        from IPython.display import display

        # a click has no cell: what the drive displays (its text, the next pause's panel) goes in this panel's output
        with self.output:
            try:
                shown = self.drive(skip)
            except Exception as exc:  # an OdinError (the roadmap changed meanwhile): shown, never raised
                self.message.value = f"<span style='color:#c33'>{html.escape(getattr(exc, 'message', str(exc)))}</span>"
                return
            if shown is not None:  # None: the drive displayed its text and panel itself
                display(shown)

    def edit(self) -> None:
        """Show the contract file's text to edit (its text now: an edit outside the panel is not lost)."""
        self.editor.value = self.path.read_text(encoding="utf-8") if self.path.is_file() else ""
        self.edit_box.layout.display = "flex"

    def save(self) -> bool:
        """Write the edited contract when it validates (the contract shown again); its located errors otherwise."""
        report = validate_contract_text(self.editor.value, str(self.path), self.project_dir)
        if not report.ok or report.contract is None:
            errors = "\n".join(str(d) for d in report.errors)
            self.message.value = (f"<span style='color:#c33'>not saved: the contract does not validate</span>"
                                  f"<pre>{html.escape(errors)}</pre>")
            return False
        write_atomic(self.path, self.editor.value, within=self.project_dir / ".odin-loop")
        self.contract_view.value = contract_html(self.phase_id, report.contract)
        self.message.value = html.escape(f"saved {self.path.name}: Start runs the phase under it")
        return True
