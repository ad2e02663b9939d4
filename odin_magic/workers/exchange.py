"""What a request to the model carried, as a recording keeps it and a replay checks it.

A recorded run (:mod:`odin_magic.workers.recording`) notes beside each reply a *fingerprint* of the request
it answered: the newest message of the request (a stage's brief, the tool results of the previous turn, a
judge's brief), with what legitimately differs between two runs of the same loop taken out: the run dir,
the run id and the project dir become placeholders, tool-call ids are dropped, every number becomes ``0``
(durations, timestamps, counts of seconds) and runs of white space become one space. The scripted model
(:mod:`odin_magic.workers.scripted`) computes the same fingerprint of each request of a replay; when the
two differ, the replay has departed from its recording, and it says where and how.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

SUMMARY_CHARS = 100
_NUMBER = re.compile(r"\d+")
_SPACE = re.compile(r"\s+")


#: ``x-odin-run-id`` of a request that is no run's (a roadmap phase's contract proposal, whose ``x-odin-run-dir``
#: is the contracts dir): it has no run id, and a recording it goes into is not started over for it.
NO_RUN = "-"


def run_id_of(headers: Any) -> str:
    """The run id a request's headers name: ``x-odin-run-id`` when sent (``-``: no run's, the empty id), else
    the name of its ``x-odin-run-dir``. The recorder and the scripted model read it alike, so a recorded
    request's fingerprint and its replay's agree."""
    given = headers.get("x-odin-run-id")
    if given is not None:
        return "" if given == NO_RUN else given
    run_dir = headers.get("x-odin-run-dir") or ""
    return Path(run_dir).name if run_dir else ""


def placeholders(text: str, tokens: dict[str, str]) -> str:
    """``text`` with the values of ``tokens`` (``run_dir``, ``run_id``, ``project_dir``) written as
    ``{run_dir}`` ...: the absolute run dir first, then the relative one, the project, the run id."""
    project, run_dir, run_id = tokens.get("project_dir"), tokens.get("run_dir"), tokens.get("run_id")
    if project and run_dir:
        text = text.replace(f"{project}/{run_dir}", "{project_dir}/{run_dir}")
    if run_dir and run_dir != ".":
        text = text.replace(run_dir, "{run_dir}")
    if project:
        text = text.replace(project, "{project_dir}")
    if run_id and run_id != ".":
        text = text.replace(run_id, "{run_id}")
    return text


def with_placeholders(value: Any, tokens: dict[str, str]) -> Any:
    """``value`` (strings, lists and dicts of them) with :func:`placeholders` applied to every string."""
    if isinstance(value, str):
        return placeholders(value, tokens)
    if isinstance(value, list):
        return [with_placeholders(v, tokens) for v in value]
    if isinstance(value, dict):
        return {k: with_placeholders(v, tokens) for k, v in value.items()}
    return value


def _block_text(block: Any) -> str:
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return json.dumps(block, sort_keys=True)
    kind = block.get("type")
    if kind == "text":
        return block.get("text", "")
    if kind == "tool_result":
        inner = block.get("content")
        text = inner if isinstance(inner, str) else " ".join(_block_text(b) for b in inner or [])
        return f"[tool_result{' error' if block.get('is_error') else ''}] {text}"
    return json.dumps({k: v for k, v in block.items() if k not in ("id", "tool_use_id", "cache_control")},
                      sort_keys=True)


def newest_text(body: dict[str, Any]) -> str:
    """The newest message of a request body, as text (its blocks joined)."""
    messages = body.get("messages") or []
    if not messages:
        return ""
    content = messages[-1].get("content")
    if isinstance(content, str):
        return content
    return "\n".join(_block_text(b) for b in content or [])


def normal(text: str, tokens: dict[str, str]) -> str:
    return _SPACE.sub(" ", _NUMBER.sub("0", placeholders(text, tokens))).strip()


def fingerprint(body: dict[str, Any], tokens: dict[str, str]) -> dict[str, str]:
    """``{digest, sent}``: a digest of the request's newest message (normalised) and its first words."""
    text = normal(newest_text(body), tokens)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return {"digest": digest, "sent": summary(text)}


def summary(text: str) -> str:
    return text if len(text) <= SUMMARY_CHARS else text[:SUMMARY_CHARS] + "…"


__all__ = ["fingerprint", "newest_text", "normal", "placeholders", "summary", "with_placeholders"]
