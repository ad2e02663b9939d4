"""``odin doctor`` and ``%odin doctor``: the engine's checks of a project (``odin_magic.engine.doctor``'s
``to_dict``) as text, the same words in a terminal and a notebook."""

from __future__ import annotations

from odin_magic.render.displays import TextBlockDisplay


def _suite(data: dict) -> str:
    return f"`{data['command']}` ({data['why']})"


def _sandbox(box: dict) -> list[str]:
    if not box:
        return []
    setting = f" (ODIN_SANDBOX={box['setting']})" if box.get("setting") else ""
    if box.get("works"):
        line = "sandbox: bubblewrap works here: a stage's commands run under bwrap (unless a loop says `sandbox: off`)"
        return [line + (f"; the setting turns it off{setting}" if box.get("setting") == "off" else "")]
    return [f"sandbox: does not work here: {box.get('reason')}",
            f"  runs with `sandbox: auto` are unsandboxed (told at their start){setting}"]


def render_doctor(data: dict) -> str:
    """The text ``odin doctor`` prints."""
    lines = [f"project: {data['project']}", *_sandbox(data.get("sandbox") or {}), ""]
    chosen = data.get("regression")
    if chosen is None:
        lines.append("regression suite: none detected (the project declares no test command and has no "
                     "tests/ of Python files); a loop's `regression:` can name one")
    else:
        declared = "declared by the project" if chosen.get("declared", True) else "no declared test command"
        lines.append(f"regression suite: `{chosen['command']}`")
        lines.append(f"  chosen from: {chosen['why']} ({declared})")
    if data.get("also_found"):
        lines.append("  not chosen (later in the order of choice): "
                     + "; ".join(_suite(s) for s in data["also_found"]))
    if data.get("loops"):
        lines += ["", "loops whose `regression:` overrides the project's choice:"]
        for loop in data["loops"]:
            reg = loop.get("regression")
            told = _suite(reg) if reg else "off (`regression: false`)"
            lines.append(f"  {loop['loop']} ({loop['source']}): {told}")
    if data.get("problems"):
        lines.append("")
        lines += [f"⚠ {p['what']} — {p['fix']}" for p in data["problems"]]
    else:
        lines += ["", "no problems found"]
    return "\n".join(lines)


class DoctorDisplay(TextBlockDisplay):
    """``%odin doctor``: :func:`render_doctor`'s text (in a notebook, preformatted HTML); ``data`` as checked."""

    def __init__(self, data: dict):
        super().__init__(render_doctor(data))
        self.data = data
