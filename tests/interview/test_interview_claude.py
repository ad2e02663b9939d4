"""The Claude interview model: the real SDK's messages.parse against the offline scripted Messages API."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from odin_magic.workers.config import Settings
from odin_magic.interview import InterviewPlace, InterviewSession
from odin_magic.interview.claude import ClaudeInterviewModel, make_interview_model, project_digest
from odin_magic.interview.scripted import ScriptedInterviewModel
from odin_magic.loop.schema import Stage
from odin_magic.workers.base import WorkerError
from odin_magic.workers.scripted import ScriptedModel, load_script

SCRIPT = """
answers:
  interview-propose:
    interview: [{goal: Review CSV imports, components: [{name: Ingestion}, {name: Export}]}]
  interview-question:
    interview:
      - {question: "Which formats arrive?", offer_candidates: true}
      - {question: "Who reads the export?"}
      - {question: "What is a duplicate?"}
  interview-research:
    interview:
      - candidates: [{answer: CSV only, confidence: high}, {answer: CSV and XLSX, confidence: medium}]
  interview-score:
    interview:
      - malformed: "not json at all"
      - scores: [{component: Ingestion, goal: .9, constraints: .9, criteria: .9}]
        entities: [{name: Row, type: core, fields: [id, amount]}]
        criteria: [{component: Ingestion, text: "Given a CSV of 3 rows, when imported, then 3 rows are stored"}]
      - scores: [{component: Export, goal: .9, constraints: .9, criteria: .8}]
        criteria: [{component: Export, text: "Given 2 rows, when exported, then the CSV has 3 lines"}]
      - scores: []
"""


def stage() -> Stage:
    return Stage.model_validate({"id": "interview", "interview": {"mode": "deep", "challenges": []},
                                 "produces": ["spec.md", "interview-log.md"],
                                 "gate": {"mode": "ai+human", "check": "converged"}})


def test_a_whole_interview_through_messages_parse(tmp_path):
    (tmp_path / "script.yaml").write_text(SCRIPT)
    fake = ScriptedModel(load_script(tmp_path / "script.yaml"))
    model = ClaudeInterviewModel(Settings(model="claude-test"), fake.client_factory(max_retries=0), tmp_path)
    s = InterviewSession.open(InterviewPlace(run_dir=tmp_path / "run", project_dir=tmp_path, stage=stage(), task="csv review"),
                              model)
    q = s.start()
    assert q.kind == "topology" and "C1 Ingestion, C2 Export" in q.text
    q = s.answer("confirm")
    assert q.text == "Which formats arrive?" and [o.answer for o in q.options] == ["CSV only", "CSV and XLSX"]
    q = s.answer("1")  # the first score reply is malformed: asked again once, then it fits
    assert q.round == 2 and q.component == "Export"
    q = s.answer("the accountant")
    assert q.round == 3
    assert s.answer("same bank reference") is None
    assert s.summary().ambiguity == 0.13  # Export: 1 - (.36 + .27 + .24)
    # every request asked for the output type's JSON schema and carried the routing headers
    first = fake.requests[0]
    assert first["output_config"]["format"]["type"] == "json_schema"
    assert "components" in first["output_config"]["format"]["schema"]["properties"]
    assert first["model"] == "claude-test"
    assert "Task: csv review" in first["messages"][0]["content"]
    assert s.take_usage().output_tokens > 0


def test_an_unusable_reply_twice_is_a_worker_error_and_the_question_stays(tmp_path):
    script = tmp_path / "script.yaml"
    script.write_text("""
answers:
  interview-propose:
    interview: [{goal: g, components: [{name: Ingestion}]}]
  interview-question:
    interview: [{question: "Which formats?"}]
  interview-score:
    interview: [{malformed: "nope"}]
""")
    fake = ScriptedModel(load_script(script))
    model = ClaudeInterviewModel(Settings(model="claude-test"), fake.client_factory(max_retries=0))
    s = InterviewSession.open(InterviewPlace(run_dir=tmp_path / "run", project_dir=tmp_path, stage=stage(), task="t"), model)
    s.start()
    s.answer("confirm")
    with pytest.raises(WorkerError, match="no usable reply twice"):
        s.answer("CSV")
    assert s.pending.round == 1 and s.state.round == 0


def test_project_digest_is_bounded_and_numbered(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "io.py").write_text("import csv\n\ndef parse(path):\n    ...\n")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "hidden.py").write_text("x = 1\n")
    digest = project_digest(tmp_path)
    assert "- app/io.py" in digest and "3: def parse(path):" in digest
    assert "hidden.py" not in digest
    assert len(project_digest(tmp_path, budget=50)) < 200


def test_model_selection(tmp_path):
    interview_script = tmp_path / "interview.yaml"
    interview_script.write_text("components: [A]\n")
    chosen = make_interview_model(Settings(), tmp_path, env={"ODIN_INTERVIEW_SCRIPT": "interview.yaml"})
    assert isinstance(chosen, ScriptedInterviewModel)
    (tmp_path / "worker.yaml").write_text(yaml.safe_dump({"stages": {}}))
    chosen = make_interview_model(Settings(script=Path("worker.yaml")), tmp_path, env={})
    assert isinstance(chosen, ClaudeInterviewModel)
    (tmp_path / "both.yaml").write_text(yaml.safe_dump({"stages": {}, "interview": {"components": ["A"]}}))
    chosen = make_interview_model(Settings(script=Path("both.yaml")), tmp_path, env={})
    assert isinstance(chosen, ScriptedInterviewModel) and chosen.script == {"components": ["A"]}


def test_a_scripted_interview_s_usage_costs_what_it_would_on_claude(tmp_path):
    """Issue 18 item 10: offline, the interview's tokens are priced as the worker's are (≈ ... if run on Claude;
    nothing spent), so a run's cost reads the same from its first question on."""
    from odin_magic.interview.protocol import InterviewBrief
    from odin_magic.render.text import cost_text

    (tmp_path / "interview.yaml").write_text("components: [A]\n")
    brief = InterviewBrief(task="t", stage_title="i", stage_goal="g", stage_prompt="p", mode="greenfield",
                           weights={"goal": 1.0}, round=0)
    for settings, env in ((Settings(), {"ODIN_INTERVIEW_SCRIPT": "interview.yaml"}),
                          (Settings(script=Path("interview.yaml")), {})):
        (tmp_path / "interview.yaml").write_text(yaml.safe_dump({"stages": {}, "interview": {"components": ["A"]}})
                                                 if settings.script else "components: [A]\n")
        usage = make_interview_model(settings, tmp_path, env=env).propose_components(brief).usage
        assert usage.total_tokens and usage.cost_usd == usage.offline_usd > 0
        assert cost_text(usage).endswith("if run on Claude; nothing spent")


EXPLORE_SCRIPT = """
stages:
  interview-explore:
    - turns:
        - tools: [{read: {file_path: app/io.py}}]
        - tools: [{write: {file_path: app/io.py, content: "overwritten"}}]
        - text: "Parsing lives in app/io.py:3 (def parse(path)); each row becomes a dict."
answers:
  interview-propose:
    interview: [{goal: g, components: [{name: Ingestion}]}]
  interview-explore:
    interview: [{findings: [{text: "CSV parsing lives in parse()", citation: "app/io.py:3"}]}]
"""


def brownfield(tmp_path: Path, script: str):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "io.py").write_text("import csv\n\ndef parse(path):\n    return list(csv.DictReader(open(path)))\n")
    (tmp_path / "script.yaml").write_text(script)
    fake = ScriptedModel(load_script(tmp_path / "script.yaml"))
    model = ClaudeInterviewModel(Settings(model="claude-test"), fake.client_factory(max_retries=0), tmp_path)
    s = InterviewSession.open(InterviewPlace(run_dir=tmp_path / ".odin-loop" / "runs" / "r1", project_dir=tmp_path, stage=stage(),
                              task="csv review"), model)
    return s, fake


def test_brownfield_findings_come_from_a_read_only_explore_agent(tmp_path):
    s, fake = brownfield(tmp_path, EXPLORE_SCRIPT)
    s.start()
    assert s.state.mode == "brownfield"
    log = (tmp_path / ".odin-loop" / "runs" / "r1" / "interview-log.md").read_text()
    assert "## Context findings\n- CSV parsing lives in parse() (app/io.py:3)" in log
    agent_calls = [b for b in fake.requests if b.get("tools")]
    # read-only: the agent's write was refused by the explore role's policy
    assert (tmp_path / "app" / "io.py").read_text().startswith("import csv")
    refusals = (tmp_path / ".odin-loop" / "runs" / "r1" / "tool-refusals.jsonl").read_text()
    assert '"role": "explore"' in refusals and '"stage": "interview-explore"' in refusals
    # the agent really read the file, and its report went to the structuring call
    assert any("def parse(path)" in str(b["messages"]) for b in agent_calls)
    assert any("Parsing lives in app/io.py:3" in str(b["messages"]) and b.get("output_config")
               for b in fake.requests)


def test_without_an_explore_agent_a_bounded_read_of_the_project_stands_in(tmp_path):
    script = EXPLORE_SCRIPT.split("answers:")[0].replace("interview-explore", "elsewhere") + "answers:" + \
        EXPLORE_SCRIPT.split("answers:")[1]
    s, fake = brownfield(tmp_path, script)
    s.start()
    structuring = [b for b in fake.requests if b.get("output_config") and "read-only exploration" in str(b["messages"])]
    assert structuring and "3: def parse(path):" in str(structuring[0]["messages"])
    assert s.state.findings[0].citation == "app/io.py:3"


def test_the_scoring_request_has_anchors_and_a_rationale_before_the_scores(tmp_path):
    """Issue 25, item 9: anchors for 0.3, 0.6 and 0.9; a component's rationale comes before its scores in the
    schema (a model writes fields in order); never ask again what the transcript settles."""
    (tmp_path / "script.yaml").write_text(SCRIPT)
    fake = ScriptedModel(load_script(tmp_path / "script.yaml"))
    model = ClaudeInterviewModel(Settings(model="claude-test"), fake.client_factory(max_retries=0), tmp_path)
    s = InterviewSession.open(InterviewPlace(run_dir=tmp_path / "run", project_dir=tmp_path, stage=stage(), task="csv review"),
                              model)
    s.start()
    s.answer("confirm")
    s.answer("1")
    score = next(body for body in fake.requests if "Re-score" in str(body["messages"]))
    system = " ".join(block["text"] for block in score["system"]) if isinstance(score["system"], list) else score["system"]
    system = " ".join(system.split())
    for anchor in ("0.3 = named but vague", "0.6 = the main case is settled", "0.9 = a tester could write the checks"):
        assert anchor in system, anchor
    assert "Never ask again what the transcript already settles" in system
    schema = score["output_config"]["format"]["schema"]
    fields = list(schema["$defs"]["ScoreUpdate"]["properties"])
    assert fields.index("rationale") < min(fields.index(d) for d in ("goal", "constraints", "criteria", "context"))
    question = next(body for body in fake.requests if "Ask exactly ONE question" in str(body["messages"]))
    assert "not one the transcript already answers" in str(question["messages"])
