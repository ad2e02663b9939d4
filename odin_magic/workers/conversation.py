"""A run's inline conversation thread, persisted in the run dir (``thread.json``).

Inline stages continue one conversation per run. It lives in the run dir, not
on the server, so a restarted kernel or a resumed run continues it exactly; it
is written atomically and only when a stage finished, so a stage that failed
half way leaves the thread as it was and simply runs again.

The thread is kept within a token budget: when it would outgrow it, the oldest
stage exchanges are dropped and replaced by a short summary of each (the
stage's own closing text), so a long run never fails on context length.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from odin_magic.core.atomic import write_atomic

THREAD_FILE = "thread.json"
#: Characters per token, for the budget estimate (conservative for English and code).
CHARS_PER_TOKEN = 3.5
SUMMARY_CHARS = 1_200  # kept of each dropped stage's closing text


def estimate_tokens(data: Any) -> int:
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return int(len(text) / CHARS_PER_TOKEN) + 1


def _messages(value: Any) -> list[dict[str, Any]]:
    """A saved segment's messages, checked: a list of ``{role: user|assistant, content}``."""
    if not isinstance(value, list) or not all(
        isinstance(m, dict) and m.get("role") in ("user", "assistant") and "content" in m for m in value
    ):
        raise TypeError("a segment's messages are not a list of {role, content} messages")
    return list(value)


@dataclass
class Segment:
    """One inline stage execution: the messages it added and its closing text."""

    stage: str
    messages: list[dict[str, Any]]
    summary: str = ""


@dataclass
class RunThread:
    path: Path
    summary: str = ""  # what dropped segments said, oldest first
    segments: list[Segment] = field(default_factory=list)

    @classmethod
    def load(cls, run_dir: Path) -> "RunThread":
        path = Path(run_dir) / THREAD_FILE
        if not path.is_file():
            return cls(path=path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            segments = [Segment(s["stage"], _messages(s["messages"]), s.get("summary", "")) for s in data["segments"]]
            return cls(path=path, summary=str(data.get("summary", "")), segments=segments)
        except (ValueError, KeyError, TypeError) as exc:
            # A damaged thread must not stop the run: keep it aside and start a fresh one.
            damaged = path.with_name(f"{THREAD_FILE}.damaged")
            os.replace(path, damaged)
            thread = cls(path=path)
            thread.summary = f"(The earlier conversation could not be read ({exc}); it was set aside as {damaged.name}.)"
            return thread

    def save(self) -> None:
        """Write thread.json atomically; no configured secret's value is written."""
        data = {
            "version": 1,
            "summary": self.summary,
            "segments": [{"stage": s.stage, "summary": s.summary, "messages": s.messages} for s in self.segments],
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, json.dumps(data, ensure_ascii=False), within=self.path.parent)  # never through a link

    def history(self) -> list[dict[str, Any]]:
        return [m for s in self.segments for m in s.messages]

    def fit(self, budget_tokens: int, reserve_tokens: int) -> list[str]:
        """Drop the oldest segments (into the summary) until the thread plus ``reserve_tokens`` fits.

        Returns the stages whose turns were dropped.
        """
        dropped: list[str] = []
        while self.segments and estimate_tokens(self.history()) + estimate_tokens(self.summary) + reserve_tokens > budget_tokens:
            seg = self.segments.pop(0)
            note = seg.summary.strip() or "(no closing summary)"
            if len(note) > SUMMARY_CHARS:
                note = note[: SUMMARY_CHARS - 1] + "…"
            self.summary = (self.summary + f"\n- stage {seg.stage}: {note}").strip()
            dropped.append(seg.stage)
        # The summary itself is bounded too: keep its most recent part.
        limit = int(budget_tokens * CHARS_PER_TOKEN / 4)
        if len(self.summary) > limit:
            self.summary = "…" + self.summary[-limit:]
        return dropped

    def request_messages(self, new_user_content: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The messages to send: the summary (if any), the kept history, then the new stage's message."""
        history = [dict(m) for m in self.history()]
        preface = []
        if self.summary:
            preface = [{"type": "text", "text": "Summary of earlier stages of this run "
                        "(their full turns were trimmed to stay within the context budget):\n" + self.summary}]
        if history:
            first = history[0]
            content = first["content"]
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            history[0] = {**first, "content": preface + list(content)}
            return history + [{"role": "user", "content": new_user_content}]
        return [{"role": "user", "content": preface + new_user_content}]

    def add_segment(self, stage: str, messages: list[dict[str, Any]], summary: str) -> None:
        self.segments.append(Segment(stage, messages, summary))
