"""Muninn (``odin refine``): aggregates over recorded runs, proposals as loop diffs, apply / reject.

The recorded runs are real dry runs with scripted gate failures, revisions and approvals.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from odin_magic.loop.catalog import LoopCatalog, builtin_loops_dir
from odin_magic.cli import main
from odin_magic.engine.orchestrator import Engine
from odin_magic.core.errors import LoopInvalid, OdinError
from odin_magic.learning.refine import Refinements, read_runs, refine
from odin_magic.render.refine_view import RefineDisplay, render_result
from odin_magic.runs.state import DryOptions

DOC_LOOP = """\
# a comment that a refinement keeps
name: doc
version: 1
max_iterations: 3
max_repeats: 5
stages:
  - id: draft
    produces: [draft.md]
    gate: {mode: ai, check: draft.md exists}
  - id: check
    consumes: [draft.md]
    produces: [check.md]
    gate:
      mode: ai
      check: check.md finds no gap
  - id: review
    agent: reviewer
    consumes: [draft.md, check.md]
    produces: [review.md]
    gate: {mode: ai+human, check: review.md lists no blocking finding, on_fail: draft}
"""


def record_runs(project: Path) -> list[str]:
    """Three real dry runs: one fails at the cap retrying `check`; two are revised at `review`, then approved."""
    loops = project / ".odin-loop" / "loops"
    loops.mkdir(parents=True, exist_ok=True)
    (loops / "doc.yaml").write_text(DOC_LOOP, encoding="utf-8")
    engine = Engine(project)
    ids = []
    s = engine.start("doc", "first", dry=DryOptions(gates=["check:fail"] * 4))
    assert s.status == "failed" and s.failure_reason.startswith("total_iterations")
    ids.append(s.run_id)
    s = engine.start("doc", "second", dry=DryOptions(gates=["check:fail"]))
    assert s.status == "awaiting_approval"
    engine.revise("cite the sources")
    assert engine.approve().status == "done"
    ids.append(s.run_id)
    s = engine.start("doc", "third", dry=DryOptions())
    engine.revise("Cite the sources!")
    assert engine.approve().status == "done"
    ids.append(s.run_id)
    return ids


def test_aggregates_over_recorded_runs(project):
    ids = record_runs(project)
    result = refine(project, "doc", now="2026-01-01T00:00:00")
    (stats,) = result.stats
    assert stats.runs == 3 and stats.run_ids == ids
    assert stats.outcomes == {"done": 2, "failed": 1, "abandoned": 0, "blocked": 0, "active": 0}
    assert stats.limits_hit == {"max_iterations": [ids[0]]}
    assert [s.stage for s in stats.stages] == ["draft", "check", "review"]
    check = stats.stage("check")
    assert (check.runs, check.executions, check.failures, check.first_try_passes) == (3, 7, 5, 1)
    assert check.first_try_pass_rate == pytest.approx(1 / 3, abs=0.001)
    assert check.max_consecutive_failures == 4
    (reason,) = check.failure_reasons  # five failures, one normalized reason
    assert reason.count == 5 and reason.runs == ids[:2]
    review = stats.stage("review")
    (feedback,) = review.revise_feedback  # "cite the sources" and "Cite the sources!" are one group
    assert feedback.count == 2 and feedback.runs == ids[1:]
    assert review.approvals == 2 and review.revised_runs == ids[1:]
    assert [(v.version, v.runs, v.done) for v in stats.versions] == [("1", 3, 2)]


def test_proposals_for_the_cap_the_loopback_and_the_check(project):
    ids = record_runs(project)
    result = refine(project, "doc", now="2026-01-01T00:00:00")
    by_rule = {p.rule: p for p in result.proposals}
    assert set(by_rule) == {"max_iterations", "on_fail", "check"}
    cap = by_rule["max_iterations"]
    assert cap.edits[0].value == 5 and cap.evidence.runs == [ids[0]]
    assert "-max_iterations: 3\n" in cap.diff and "+max_iterations: 5\n" in cap.diff and "+version: 2" in cap.diff
    loopback = by_rule["on_fail"]
    assert loopback.edits[0].path == ["stages", 1, "gate", "on_fail"] and loopback.edits[0].value == "draft"
    assert loopback.evidence.numbers == {"failures": 5, "max_consecutive_failures": 4}
    sharpen = by_rule["check"]
    assert "Also: cite the sources" in sharpen.edits[0].value and sharpen.evidence.runs == ids[1:]
    for p in result.proposals:  # each saved, with the diff of the YAML
        saved = yaml.safe_load((project / ".odin-loop" / "refinements" / f"{p.id}.yaml").read_text())
        assert saved["status"] == "proposed" and saved["diff"] == p.diff and saved["written_by"] == "rules"
        assert "# a comment that a refinement keeps" in p.proposed
    # a second pass proposes nothing new, and says what is still open
    again = refine(project, "doc", now="2026-01-01T00:00:01")
    assert again.proposals == [] and {p.id for p in again.still_open} == {p.id for p in result.proposals}
    assert "still open" in render_result(again)


def test_apply_bumps_the_version_keeps_history_and_refuses_a_stale_proposal(project):
    record_runs(project)
    proposals = {p.rule: p for p in refine(project, "doc", now="t").proposals}
    refinements = Refinements(project)
    before = (project / ".odin-loop" / "loops" / "doc.yaml").read_text()
    applied, path = refinements.apply(proposals["on_fail"].id, "t2")
    assert applied.status == "applied" and applied.applied_version == "2"
    loop = LoopCatalog(project).load("doc")
    assert loop.version == 2 and loop.stage("check").gate.on_fail == "draft"
    assert (project / ".odin-loop" / "loops" / ".history" / "doc.v1.yaml").read_text() == before
    assert yaml.safe_load((refinements.dir / f"{applied.id}.yaml").read_text())["status"] == "applied"
    with pytest.raises(OdinError, match="stale: it edits version 1 .* now version 2"):
        refinements.apply(proposals["max_iterations"].id, "t3")
    with pytest.raises(OdinError, match="already applied"):
        refinements.apply(applied.id, "t3")
    assert LoopCatalog(project).load("doc").max_iterations == 3  # nothing of the refused one landed
    # runs record the loop version they ran: a later refine compares versions
    Engine(project).start("doc", "fourth", dry=DryOptions(approve_all=True))
    result = refine(project, "doc", now="t4")
    stats = result.stats[0]
    assert [(v.version, v.runs) for v in stats.versions] == [("1", 3), ("2", 1)]
    (effect,) = result.effects  # the applied proposal, judged before and after
    assert (effect.proposal, effect.before.runs, effect.after.runs) == (applied.id, 3, 1)
    assert (effect.before.first_try_pass_rate, effect.after.first_try_pass_rate) == (0.75, 1.0)  # all stages
    assert f"applied {applied.id}" in render_result(result) and "-> v2: 1 run(s), 1 done" in render_result(result)
    assert [r.version for r in read_runs(project, "doc")] == ["1", "1", "1", "2"]


def test_reject_marks_the_proposal(project):
    record_runs(project)
    p = refine(project, "doc", now="t").proposals[0]
    rejected = Refinements(project).reject(p.id, "t2")
    assert rejected.status == "rejected" and rejected.rejected_at == "t2"
    with pytest.raises(OdinError, match="already rejected"):
        Refinements(project).apply(p.id, "t3")


def test_a_proposal_edited_into_an_invalid_loop_or_invalid_yaml_is_refused_with_its_line(project):
    record_runs(project)
    p = next(p for p in refine(project, "doc", now="t").proposals if p.rule == "on_fail")
    path = project / ".odin-loop" / "refinements" / f"{p.id}.yaml"
    text = path.read_text()
    head, _, body = text.partition("\nproposed: |")
    path.write_text(head + "\nproposed: |" + body.replace("on_fail: draft", "on_fail: drfat"))
    with pytest.raises(LoopInvalid) as info:
        Refinements(project).apply(p.id, "t2")
    message = info.value.message
    line = next(n for n, l in enumerate(path.read_text().splitlines(), 1) if "on_fail: drfat" in l)
    assert f"{path}:{line}:" in message and "'drfat' is not a stage id" in message
    path.write_text(text.replace("status: proposed", "status: [proposed"))
    with pytest.raises(OdinError) as info:
        Refinements(project).apply(p.id, "t2")
    assert str(path) + ":" in info.value.message and info.value.message.split(":")[1].isdigit()
    assert LoopCatalog(project).load("doc").version == 1


def test_a_built_in_is_copied_into_the_project_never_edited_in_place(project):
    builtin = (builtin_loops_dir() / "bugfix.yaml").read_text()
    for n in range(3):
        assert Engine(project).start("bugfix", f"bug {n}", dry=DryOptions(approve_all=True)).status == "done"
    (p,) = [p for p in refine(project, now="t").proposals if p.rule == "mode"]  # review approved unchanged 3 times
    assert p.base_source == "builtin"
    _, path = Refinements(project).apply(p.id, "t2")
    assert path == project.resolve() / ".odin-loop" / "loops" / "bugfix.yaml"
    assert (builtin_loops_dir() / "bugfix.yaml").read_text() == builtin
    assert (project / ".odin-loop" / "loops" / ".history" / "bugfix.v1.yaml").read_text() == builtin
    assert LoopCatalog(project).load("bugfix").stage("review").gate.mode == "ai"


def test_approved_unchanged_in_every_run_turns_ai_human_into_ai(project, write_loop):
    from support.nbtools import TINY_LOOP

    write_loop(TINY_LOOP)
    for n in range(3):
        assert Engine(project).start("tiny", f"run {n}", dry=DryOptions(approve_all=True)).status == "done"
    proposals = {p.rule: p for p in refine(project, "tiny", now="t").proposals}
    assert set(proposals) == {"mode", "max_iterations"}
    # no run came near the cap of 5: lower it
    assert proposals["max_iterations"].title == "lower max_iterations from 5 to 2"
    p = proposals["mode"]
    assert p.edits[0].value == "ai" and len(p.evidence.runs) == 3
    assert "+    gate: {mode: ai, check: no blocking findings, on_fail: write}" in p.diff


def capture(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_refine_text_json_apply_and_no_runs(project, capsys):
    code, out, err = capture(capsys, "refine", "--project", str(project))
    assert code == 1 and "no runs" in err and "Traceback" not in err
    record_runs(project)
    code, out, err = capture(capsys, "refine", "doc", "--json", "--project", str(project))
    assert code == 0, err
    data = json.loads(out)
    assert data["stats"][0]["outcomes"]["failed"] == 1 and len(data["proposals"]) == 3
    code, out, _ = capture(capsys, "refine", "list", "--project", str(project))
    assert code == 0 and "doc-1 (proposed)" in out
    code, out, err = capture(capsys, "refine", "apply", "doc-1", "--project", str(project))
    assert code == 0 and "version 2" in out
    code, out, err = capture(capsys, "refine", "apply", "doc-2", "--project", str(project))
    assert code == 1 and "stale" in err


def test_the_notebook_report_is_html_with_charts(project):
    record_runs(project)
    display = RefineDisplay(refine(project, "doc", now="t"))
    page = display._repr_html_()
    assert "data:image/png;base64," in page and "gate failures" not in page  # the charts are images
    assert "<pre>" in page and "raise max_iterations from 3 to 5" in page
    assert "loop doc: 3 run(s)" in repr(display)


CMD_LOOP = """\
name: cmd
version: 1
max_iterations: 6
stages:
  - id: build
    produces: [build.md]
    gate: {mode: ai, check: build.md exists}
  - id: test
    consumes: [build.md]
    produces: [test.md]
    gate:
      mode: ai
      check: the tests pass
      on_fail: build
      run: ["test -f green.flag || { touch green.flag; exit 1; }"]
"""


def test_a_judge_pass_that_a_later_command_undoes_proposes_a_gate_command_and_time_is_counted(project):
    from support.clocks import StepClock

    loops = project / ".odin-loop" / "loops"
    loops.mkdir(parents=True)
    (loops / "cmd.yaml").write_text(CMD_LOOP)
    for n in range(2):
        (project / "green.flag").unlink(missing_ok=True)
        state = Engine(project, clock=StepClock(10)).start("cmd", f"run {n}", dry=DryOptions(run_commands=True))
        assert state.status == "done" and state.total_iterations == 1
    result = refine(project, "cmd", now="t")
    stats = result.stats[0]
    test = stats.stage("test")
    assert test.failures == 2 and test.failure_reasons[0].text.startswith("gate command `test -f green.flag")
    assert test.seconds > 0 and stats.stage("build").seconds > 0  # from the records' clock
    (p,) = [p for p in result.proposals if p.rule == "gate_run"]
    assert p.edits[0].path == ["stages", 0, "gate", "run"]
    assert LoopCatalog(project).load("cmd").stage("build").gate.run == []
    Refinements(project).apply(p.id, "t2")
    assert [c.cmd for c in LoopCatalog(project).load("cmd").stage("build").gate.commands] == [
        "test -f green.flag || { touch green.flag; exit 1; }"]


def test_tokens_and_cost_by_stage_come_from_the_usage_records(project, write_loop):
    from test_memory import first_run

    first_run(project, write_loop)
    stats = refine(project, "mem", now="t").stats[0]
    build, review = stats.stage("build"), stats.stage("review")
    assert build.tokens > 0 and review.tokens > 0  # the fake API's usage, work and judge alike
    assert build.cost_usd > 0
    assert (build.failures, review.approvals, review.revised_runs) == (1, 1, stats.run_ids)


def test_model_written_proposals_through_a_structured_call(project):
    from support.fake_messages import FakeMessages
    from odin_magic.workers.config import Settings

    record_runs(project)
    fake = FakeMessages()
    fake.reply(json.dumps({"proposals": [
        {"title": "give the critic more to go on", "rationale": "check failed 5 times on one reason",
         "edits": [{"path": "stages.check.gate.check", "value_json": json.dumps("check.md lists each gap with its line")}]},
        {"title": "nonsense", "rationale": "-", "edits": [{"path": "stages.nosuch.goal", "value_json": "\"x\""}]},
        {"title": "breaks the loop", "rationale": "-",
         "edits": [{"path": "stages.review.gate.on_fail", "value_json": "\"nowhere\""}]},
    ]}))
    result = refine(project, "doc", now="t", settings=Settings(max_retries=0), client_factory=fake.factory(0))
    (model,) = [p for p in result.proposals if p.written_by == "model"]
    assert model.title == "give the critic more to go on" and model.rule == "model"
    assert "+      check: check.md lists each gap with its line" in model.diff
    assert any("nonsense" in n and "names no stage" in n for n in result.notices)
    assert any("breaks the loop" in n and "would not validate" in n for n in result.notices)
    (request,) = fake.requests
    assert request.headers["x-odin-purpose"] == "refine" and "max_consecutive_failures" in request.text
    assert "raise max_iterations from 3 to 5" in request.text  # the rule proposals it should not repeat
    assert "[model-written]" in render_result(result)


def test_a_stage_failing_for_unrelated_reasons_is_proposed_split(project, write_loop):
    from support.fake_messages import FakeMessages
    from test_memory import LOOP, worker

    write_loop(LOOP.format(extra="max_iterations: 6").replace("max_iterations: 4\n", ""))
    fake = FakeMessages()
    fake.tool("write", {"file_path": "docs/out.md", "content": "out"}).reply("built")
    for reason in ["the table of error codes is missing", "spelling mistakes in the introduction"] * 2:
        fake.verdict(passed=False, reasons=[reason], blocking=[reason])
        fake.reply("tried again")
    fake.verdict(passed=True, reasons=["ok"])
    fake.tool("write", {"file_path": "docs/review.md", "content": "fine"}).reply("reviewed")
    fake.verdict(passed=True, reasons=["ok"])
    engine = Engine(project, worker=worker(fake))
    assert engine.start("mem", "docs").status == "awaiting_approval"
    assert engine.approve().status == "done"
    stats = refine(project, "mem", now="t").stats[0]
    assert [g.count for g in stats.stage("build").failure_reasons] == [2, 2]
    (p,) = [p for p in Refinements(project).all("mem") if p.rule == "split"]
    loop = yaml.safe_load(p.proposed)
    assert [s["id"] for s in loop["stages"]] == ["build", "build-2", "review"]
    assert "not: the table of error codes is missing" in loop["stages"][0]["gate"]["check"]
    assert "not: spelling mistakes in the introduction" in loop["stages"][1]["gate"]["check"]
    _, path = Refinements(project).apply(p.id, "t2")
    assert LoopCatalog(project).load("mem").stage_ids() == ["build", "build-2", "review"]


def test_a_refinements_dir_linked_out_of_the_project_is_refused(project, tmp_path):
    record_runs(project)
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / ".odin-loop" / "refinements").symlink_to(outside)
    with pytest.raises(OdinError, match="refused"):
        refine(project, "doc", now="t")
    assert list(outside.iterdir()) == []


def test_blocked_and_active_runs_are_counted_as_such(project, write_loop):
    from support.nbtools import TINY_LOOP

    write_loop(TINY_LOOP)
    engine = Engine(project)
    blocked = engine.start("tiny", "one", dry=DryOptions(gates=["write:fail"] * 3))
    assert blocked.status == "blocked"
    stats = refine(project, "tiny", now="t").stats[0]
    assert stats.outcomes["blocked"] == 1 and stats.limits_hit == {"blocked (repeated)": [blocked.run_id]}
    engine.abandon()
    assert engine.start("tiny", "two", dry=DryOptions()).status == "awaiting_approval"
    stats = refine(project, "tiny", now="t2").stats[0]
    assert stats.outcomes == {"done": 0, "failed": 0, "abandoned": 1, "blocked": 0, "active": 1}


def test_an_applied_proposal_is_not_proposed_again_from_the_same_runs(project):
    record_runs(project)
    first = {p.rule: p for p in refine(project, "doc", now="t").proposals}
    refinements = Refinements(project)
    refinements.apply(first["max_iterations"].id, "t2")
    second = {p.rule: p for p in refine(project, "doc", now="t3").proposals}
    assert "max_iterations" not in second  # the run failed at 3; the cap is 5 now
    refinements.apply(second["check"].id, "t4")
    third = {p.rule for p in refine(project, "doc", now="t5").proposals}
    assert "check" not in third and "max_iterations" not in third and "on_fail" in third
