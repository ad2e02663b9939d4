"""Golden request bodies (issue 25, "keep prompts reviewable"): one request per kind, as the real SDK sends it.

The scripted quickstart (example_notebooks/quickstart.script.yaml, loop spec-harness-tdd) runs in-process
through the real engine, Claude worker, interview model and SDK against the offline scripted Messages API
(no kernel). Two changes to the script give the kinds it would not reach: the interview's replies go through
the Messages API (``answers: {interview-<purpose>: ...}``, the same rounds as its ``interview:`` section), and
the review's judge first answers NEEDS_CONTEXT, so a read-only explorer runs. Run-specific values (paths, run
ids, tool_use ids, times, durations) are masked. Any change to what the model sees shows up as a diff of
tests/golden/requests/*.json; after an intended change, regenerate them with

    ODIN_UPDATE_GOLDEN=1 python -m pytest tests/golden/test_golden_requests.py
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from odin_magic.engine.orchestrator import Engine
from odin_magic.interview.claude import ClaudeInterviewModel
from odin_magic.interview.runner import DeepInterviewRunner
from odin_magic.workers.claude import ClaudeWorker
from odin_magic.workers.config import Settings
from odin_magic.workers.scripted import ScriptedModel, load_script
from support import REPO

GOLDEN = Path(__file__).parent / "requests"
QUICKSTART = REPO / "example_notebooks" / "quickstart.script.yaml"
TASK = "a tiny calculator module: add(a, b) and divide(a, b); dividing by zero raises ValueError"
ANSWERS = ("confirm", "1", "raise ValueError", "standard library only, under src/")
KINDS = ("interview-question", "interview-scoring", "planner", "executor", "critic", "reviewer", "judge",
         "retry", "explorer")
#: environment variables by which pytest tells it runs on CI (and then prints more in its summary)
PYTEST_CI_MARKERS = ("CI", "BUILD_NUMBER")
UPDATE_HINT = "if the change is intended, regenerate them: ODIN_UPDATE_GOLDEN=1 python -m pytest tests/golden"


def interview_answers(interview: dict[str, Any]) -> dict[str, Any]:
    """The quickstart's ``interview:`` section as replies of the Messages API (``answers: interview-<purpose>``)."""
    rounds = [interview["rounds"][n] for n in sorted(interview["rounds"])]

    def assessment(a: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in a.items() if k not in ("scores", "criteria")}
        out["scores"] = [{"component": c, "rationale": "settled by the answer", **s} for c, s in a["scores"].items()]
        out["criteria"] = [{"component": c, "text": t} for c, texts in (a.get("criteria") or {}).items() for t in texts]
        return out

    def on(replies: list[Any]) -> dict[str, Any]:
        return {"interview": replies}

    return {
        "interview-propose": on([{"goal": interview["goal"], "components": interview["components"]}]),
        "interview-question": on([{"question": r["question"], "offer_candidates": bool(r.get("offer_candidates"))}
                                  for r in rounds]),
        "interview-research": on([{"candidates": r["candidates"]} for r in rounds if r.get("candidates")]),
        "interview-score": on([assessment(r["assessment"]) for r in rounds]),
    }


def golden_script(path: Path) -> Path:
    script = yaml.safe_load(QUICKSTART.read_text())
    script["answers"] = interview_answers(script.pop("interview"))
    done = script["judge"]["review"]
    script["judge"]["review"] = [
        {"status": "NEEDS_CONTEXT", "passed": False, "reasons": ["cannot tell whether divide is documented"],
         "questions": ["Does src/calc.py document what divide(a, 0) does?"]},
        done,
    ]
    script["stages"]["review.context"] = [
        {"tools": [{"read": {"file_path": "src/calc.py"}}]},
        {"text": "src/calc.py: divide raises ValueError on b == 0 (line 6); no docstring says so."},
    ]
    path.write_text(yaml.safe_dump(script, sort_keys=False), encoding="utf-8")
    return path


def run_quickstart(tmp_path: Path) -> list[dict[str, Any]]:
    project = tmp_path / "project"
    project.mkdir()
    script = golden_script(tmp_path / "script.yaml")
    model = ScriptedModel(load_script(script), source=str(script), project_dir=project)
    settings = Settings.from_env(env={})
    engine = Engine(project, worker=ClaudeWorker(settings, client_factory=model.client_factory(max_retries=0)))
    engine.interview_runner = DeepInterviewRunner(
        lambda: ClaudeInterviewModel(settings, model.client_factory(max_retries=0), project),
        record=engine.record_interview, clock=engine.clock)
    state = engine.start("spec-harness-tdd", TASK)
    for answer in ANSWERS:
        state = engine.answer(answer)
    while state.status == "awaiting_approval":
        state = engine.approve()
    assert state.status == "done", state.failure_reason
    return [mask(body, project, tmp_path) for body in model.requests]


def mask(body: dict[str, Any], project: Path, tmp_path: Path) -> dict[str, Any]:
    text = json.dumps(body)
    for real, shown in ((str(project.resolve()), "<project>"), (str(project), "<project>"),
                        (str(tmp_path.resolve()), "<tmp>"), (str(tmp_path), "<tmp>")):
        text = text.replace(real, shown)
    for pattern, shown in ((r"\d{8}-\d{6}(?:-\d+)?-spec-harness-tdd", "<run-id>"), (r"toolu_\w+", "toolu_<id>"),
                           (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?", "<time>"),
                           (r"\d+\.\d+s\]", "<s>s]"), (r"\d+\.\d+ ?s\b", "<s> s")):
        text = re.sub(pattern, shown, text)
    return _without_runner_output(json.loads(text))


#: where a retry brief quotes a command's own output: how pytest lays a traceback out changes between its
#: releases (CI runs the newest and the oldest supported), so the quote is masked; what odin writes around it stays
QUOTED_OUTPUT = "Its output (the relevant part):\n"
JUDGE_QUOTE = "The judge's blocking findings (verbatim):"


def _without_runner_output(data: Any) -> Any:
    if isinstance(data, str) and QUOTED_OUTPUT in data:
        head, _, rest = data.partition(QUOTED_OUTPUT)
        after = rest.find(JUDGE_QUOTE)  # what follows the quote, when the judge failed the gate too
        return head + QUOTED_OUTPUT + "<the command's output, as its runner printed it>" + (
            "\n\n" + rest[after:] if after >= 0 else "")
    if isinstance(data, dict):
        return {k: _without_runner_output(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_without_runner_output(v) for v in data]
    return data


def _brief(body: dict[str, Any]) -> str:
    """The text of the last user message (a stage's brief on its first request)."""
    last = body["messages"][-1]
    content = last["content"]
    if isinstance(content, str):
        return content
    return "\n".join(block.get("text", "") for block in content if isinstance(block, dict))


def _system(body: dict[str, Any]) -> str:
    system = body.get("system", "")
    return system if isinstance(system, str) else " ".join(block["text"] for block in system)


def kind_of(body: dict[str, Any]) -> str | None:
    brief = _brief(body)
    if "output_config" in body:
        if "Ask exactly ONE question" in brief:
            return "interview-question"
        if "Re-score" in brief:
            return "interview-scoring"
        return "judge" if "gate judge" in _system(body) else None
    stages = {"# Stage plan:": "planner", "# Stage harness-design:": "executor", "# Stage harness-verify:": "critic",
              "# Stage review:": "reviewer", "# Stage review.context": "explorer"}
    if brief.startswith("# Stage implement:") and "The last attempt did not pass" in brief:
        return "retry"
    return next((kind for head, kind in stages.items() if brief.startswith(head)), None)


def one_per_kind(bodies: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for body in bodies:
        kind = kind_of(body)
        if kind is not None and kind not in found:
            found[kind] = body
    return found


def _first_difference(golden: Path, sent: str, around: int = 300) -> str:
    """Where the sent body first departs from the golden file, with some context (a brief is one long line)."""
    gold = golden.read_text(encoding="utf-8") if golden.is_file() else ""
    at = next((i for i, (a, b) in enumerate(zip(gold, sent)) if a != b), min(len(gold), len(sent)))
    line = gold.count("\n", 0, at) + 1
    return (f"first difference at line {line}, character {at}:\n"
            f"golden: …{gold[max(0, at - around):at + around]!r}…\nsent:   …{sent[max(0, at - around):at + around]!r}…")


@pytest.mark.slow
def test_request_bodies_match_the_golden_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # the harness's pytest lays its summary out by where it runs: on CI (CI or BUILD_NUMBER set) it adds each
    # failure's message to the "FAILED" line that the gate's reason quotes, and it cuts lines to the terminal width
    for name in PYTEST_CI_MARKERS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "80")
    found = one_per_kind(run_quickstart(tmp_path))
    assert set(found) == set(KINDS), f"kinds not reached: {sorted(set(KINDS) - set(found))}"
    rendered = {kind: json.dumps(found[kind], indent=1, ensure_ascii=False) + "\n" for kind in KINDS}
    if os.environ.get("ODIN_UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(parents=True, exist_ok=True)
        for kind, text in rendered.items():
            (GOLDEN / f"{kind}.json").write_text(text, encoding="utf-8")
    changed = [kind for kind, text in rendered.items()
               if not (GOLDEN / f"{kind}.json").is_file() or (GOLDEN / f"{kind}.json").read_text(encoding="utf-8") != text]
    first = _first_difference(GOLDEN / f"{changed[0]}.json", rendered[changed[0]]) if changed else ""
    assert not changed, (f"what the model is sent changed for: {', '.join(changed)} "
                         f"(tests/golden/requests/<kind>.json); {UPDATE_HINT}\n{first[:4000]}")
