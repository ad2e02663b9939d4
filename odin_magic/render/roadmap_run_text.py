"""The text `odin roadmap run` ends with, the same in the terminal and the notebook (docs/roadmap.md)."""

from __future__ import annotations

from pathlib import Path

_ENDINGS = {"complete": "roadmap complete", "paused": "paused: `odin roadmap run` goes on",
            "needs_person": "unattended: a phase needs a person (exit 3)",
            "escalated": "stopped: a phase is escalated (exit 1)", "blocked": "stopped: a phase is blocked (exit 1)"}


ASKS = "paused: its contract interview waits for your answer (`odin answer TEXT`, then `odin roadmap run`)"


def roadmap_run_summary(ending: str, phase: str | None, report: Path | str | None, asks: bool = False) -> str:
    """The last lines: how the command ended, at which phase, and where its report is; ``asks``: paused at a
    question of the phase's contract interview (an answer goes on, not `odin roadmap run`)."""
    at = f" at phase {phase}" if phase and ending != "complete" else ""
    lines = [f"{ASKS if asks and ending == 'paused' else _ENDINGS.get(ending, ending)}{at}"]
    if report is not None:
        lines.append(f"report: {report}")
    return "\n".join(lines)


def roadmap_run_text(lines: list[str], ending: str, phase: str | None, report: Path | str | None,
                     asks: bool = False) -> str:
    """Everything the driver told, then the summary (what the notebook shows; the terminal printed the same)."""
    return "\n".join([*lines, roadmap_run_summary(ending, phase, report, asks)])
