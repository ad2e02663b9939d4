"""``%odin new`` in a notebook: the seven questions as a form, one step at a time.

Beside the form, a live YAML preview and the loop picture (``%odin show``'s
diagram) follow the answers as they come in. "Write loop" validates through
:mod:`odin_magic.authoring`; a problem sends the form back to the question it
names. Proposed answers (from a model, see :func:`authoring.propose_answers`)
prefill the form, and the user accepts or edits each.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import ipywidgets as w

from odin_magic.authoring import new_loop as au
from odin_magic.render.charts import loop_diagram, png_bytes
from odin_magic.render.displays import PASSED, html_mark
from odin_magic.core.errors import OdinError

_ROLE_CHOICES = ["inline", "fresh", "explore", "planner", "executor", "critic", "reviewer"]
_RETRY = "(retry the stage)"


class NewLoopForm(w.VBox):
    """The authoring form. Its widgets are attributes, so a test (or a user) can drive it from code."""

    def __init__(self, project_dir: Path, name: str, proposal: au.Answers | None = None, force: bool = False):
        super().__init__()
        self.add_class("odin-new")
        self.project_dir = Path(project_dir)
        self.name = au.check_name(name)
        self.step = 0
        self.written: Path | None = None
        self._drawn = ""
        data: dict[str, Any] = proposal.model_dump(mode="json") if proposal else {}
        self._gates = {g["stage"]: g for g in data.get("gates", [])}
        self._loopbacks = {lb["stage"]: lb["to"] for lb in data.get("on_fail", [])}
        self._roles = {r["stage"]: r["role"] for r in data.get("roles", [])}
        iv = data.get("interview") or {}

        self.title = w.HTML()
        self.kind = w.Text(value=data.get("kind", ""), placeholder="kind of work, e.g. general coding",
                           description="kind", layout=w.Layout(width="95%"))
        self.description = w.Text(value=data.get("description") or "", placeholder="one sentence (optional)",
                                  description="description", layout=w.Layout(width="95%"))
        self.stages_text = w.Textarea(
            value="\n".join(f"{s['id']}: {s['goal']}" for s in data.get("stages", [])),
            placeholder="one stage per line, as id: goal", layout=w.Layout(width="95%", height="8em"))
        self.max_iterations = w.BoundedIntText(value=data.get("max_iterations", 5), min=1, max=1000,
                                               description="max_iterations")
        self.interview = w.Checkbox(value=bool(iv.get("enabled")), description="open with a deep interview")
        self.threshold = w.BoundedFloatText(value=iv.get("threshold", 0.15), min=0.01, max=0.99, step=0.01,
                                            description="threshold")
        self.challenges = w.Text(value=", ".join(iv.get("challenges") or au.DEFAULT_CHALLENGES), description="challenges")
        self.auto_assist = w.Checkbox(value=iv.get("auto_assist", True), description="auto_assist")
        self.force = w.Checkbox(value=force, description="replace an existing loop (--force)")
        self.gate_rows: dict[str, dict[str, w.Widget]] = {}
        self.loopback_rows: dict[str, w.Dropdown] = {}
        self.role_rows: dict[str, w.Dropdown] = {}
        self.body = w.VBox()
        self.back = w.Button(description="Back", icon="arrow-left")
        self.next = w.Button(description="Next", icon="arrow-right", button_style="primary")
        self.write_button = w.Button(description="Write loop", button_style="success", icon="check")
        self.message = w.HTML()
        self.preview = w.HTML()
        self.diagram = w.Image(format="png", layout=w.Layout(max_width="100%"))
        self.back.on_click(lambda _: self.go(self.step - 1))
        self.next.on_click(lambda _: self.go(self.step + 1))
        self.write_button.on_click(lambda _: self.write())
        for widget in (self.kind, self.description, self.stages_text, self.max_iterations, self.interview,
                       self.threshold, self.challenges, self.auto_assist):
            widget.observe(lambda _: self.refresh(), names="value")
        buttons = w.HBox([self.back, self.next, self.write_button])
        self.children = [self.title, self.body, buttons, self.message,
                         w.HTML("<b>Preview</b>"), self.diagram, self.preview]
        self.go(0)

    # -- steps ---------------------------------------------------------------------------------

    def stage_ids(self) -> list[str]:
        return [sid for sid, _ in self._stage_lines()]

    def _stage_lines(self) -> list[tuple[str, str]]:
        out = []
        for line in self.stages_text.value.splitlines():
            if line.strip():
                sid, _, goal = line.partition(":")
                out.append((sid.strip(), goal.strip() or sid.strip()))
        return out

    def go(self, step: int) -> None:
        self._keep_rows()
        self.step = max(0, min(step, len(au.QUESTIONS) - 1))
        q = au.QUESTIONS[self.step]
        self.title.value = (f"<b>odin new {html.escape(self.name)}</b> · question {q.number} of {len(au.QUESTIONS)}"
                            f"<br>{html.escape(q.text)}")
        self.body.children = getattr(self, "_body_" + q.key)()
        self.back.disabled = self.step == 0
        self.next.disabled = self.step == len(au.QUESTIONS) - 1
        self.refresh()

    def _body_kind(self):
        return [self.kind, self.description]

    def _body_stages(self):
        return [self.stages_text]

    def _body_gates(self):
        rows = []
        for sid in self.stage_ids():
            if sid not in self.gate_rows:
                g = self._gates.get(sid, {})
                self.gate_rows[sid] = {
                    "check": w.Text(value=g.get("check", ""), placeholder=f"check for {sid}",
                                    layout=w.Layout(width="50%")),
                    "mode": w.Dropdown(options=["ai", "ai+human"], value=g.get("mode", "ai"),
                                       layout=w.Layout(width="10em")),
                    "run": w.Text(value="; ".join(g.get("run", [])), placeholder="commands, ; separated (optional)",
                                  layout=w.Layout(width="30%")),
                }
                for widget in self.gate_rows[sid].values():
                    widget.observe(lambda _: self.refresh(), names="value")
            row = self.gate_rows[sid]
            rows.append(w.HBox([w.Label(sid, layout=w.Layout(width="9em")), row["check"], row["mode"], row["run"]]))
        return rows or [w.HTML("(answer question 2 first: the stages)")]

    def _body_on_fail(self):
        rows = []
        ids = self.stage_ids()
        for sid in ids:
            current = self._loopbacks.get(sid)
            options = [_RETRY] + [i for i in ids if i != sid]
            dd = w.Dropdown(options=options, value=current if current in options else _RETRY)
            dd.observe(lambda _: self.refresh(), names="value")
            self.loopback_rows[sid] = dd
            rows.append(w.HBox([w.Label(f"{sid} fails →", layout=w.Layout(width="12em")), dd]))
        return rows or [w.HTML("(answer question 2 first: the stages)")]

    def _body_max_iterations(self):
        return [self.max_iterations]

    def _body_roles(self):
        rows = []
        for sid, goal in self._stage_lines():
            current = self._roles.get(sid) or au.default_role(au.StageAnswer.model_construct(id=sid, goal=goal))
            dd = w.Dropdown(options=_ROLE_CHOICES, value=current if current in _ROLE_CHOICES else "inline")
            dd.observe(lambda _: self.refresh(), names="value")
            self.role_rows[sid] = dd
            rows.append(w.HBox([w.Label(sid, layout=w.Layout(width="9em")), dd]))
        return rows or [w.HTML("(answer question 2 first: the stages)")]

    def _body_interview(self):
        return [self.interview, self.threshold, self.challenges, self.auto_assist, self.force]

    def _keep_rows(self) -> None:
        """What the per-stage rows say, kept across steps (and across edits of the stage list)."""
        for sid, row in self.gate_rows.items():
            self._gates[sid] = {"stage": sid, "check": row["check"].value, "mode": row["mode"].value,
                                "run": [c.strip() for c in row["run"].value.split(";") if c.strip()]}
        for sid, dd in self.loopback_rows.items():
            if dd.value == _RETRY:
                self._loopbacks.pop(sid, None)
            else:
                self._loopbacks[sid] = dd.value
        for sid, dd in self.role_rows.items():
            self._roles[sid] = dd.value

    # -- answers, preview, writing -------------------------------------------------------------

    def answers_data(self) -> dict[str, Any]:
        """The answers so far, in the answers-file shape."""
        self._keep_rows()
        ids = self.stage_ids()
        data: dict[str, Any] = {
            "kind": self.kind.value.strip(),
            "stages": [{"id": sid, "goal": goal} for sid, goal in self._stage_lines()],
            "gates": [{**{k: v for k, v in self._gates[sid].items() if k != "stage"}, "stage": sid}
                      for sid in ids if sid in self._gates and self._gates[sid].get("check", "").strip()],
            "on_fail": [{"stage": sid, "to": to} for sid, to in self._loopbacks.items() if sid in ids],
            "max_iterations": self.max_iterations.value,
            "roles": [{"stage": sid, "role": role} for sid, role in self._roles.items() if sid in ids],
            "interview": {"enabled": self.interview.value, "threshold": self.threshold.value,
                          "challenges": [c.strip() for c in self.challenges.value.split(",") if c.strip()],
                          "auto_assist": self.auto_assist.value},
        }
        if self.description.value.strip():
            data["description"] = self.description.value.strip()
        return data

    def refresh(self) -> None:
        """Re-draw the YAML preview and the loop picture from the answers so far (unanswered gates shown as '…')."""
        data = self.answers_data()
        gated = {g["stage"] for g in data["gates"]}
        data["gates"] += [{"stage": sid, "check": "…"} for sid in self.stage_ids() if sid not in gated]
        data["kind"] = data["kind"] or "…"
        try:
            d = au.draft(self.name, au.parse_answers(data, "the form"))
        except (au.AnswersInvalid, OdinError) as exc:
            self.preview.value = f"<pre class='odin-muted'>{html.escape(getattr(exc, 'message', str(exc)))}</pre>"
            return
        self.preview.value = f"<pre>{html.escape(d.text)}</pre>"
        if d.report.loop is not None and d.text != self._drawn:  # the picture changes only with the loop
            self._drawn = d.text
            self.diagram.value = png_bytes(loop_diagram(d.report.loop), dpi=60)

    def write(self) -> Path | None:
        """Validate and write the loop; on a problem, go back to the question it names."""
        try:
            answers = au.parse_answers(self.answers_data(), "the form")
            self.written, text = au.write_loop(self.project_dir, self.name, answers, force=self.force.value)
        except au.AnswersInvalid as exc:
            self.go(exc.problems[0].question.number - 1)
            self.message.value = ("<span style='color:#b00'>" + "<br>".join(html.escape(str(p)) for p in exc.problems)
                                  + "</span>")
            return None
        except OdinError as exc:
            self.message.value = f"<span style='color:#b00'>{html.escape(exc.message)}</span>" + (
                f"<br>hint: {html.escape(exc.hint)}" if exc.hint else "")
            return None
        self.message.value = (f"{html_mark(PASSED)} wrote {html.escape(str(self.written))}. Start it: "
                              f"<code>%odin run {html.escape(self.name)} --task \"...\"</code> "
                              f"(add <code>--dry</code> to try it offline)")
        self.preview.value = f"<pre>{html.escape(text)}</pre>"
        return self.written
