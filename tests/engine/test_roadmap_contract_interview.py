"""`roadmap run`'s contract stage when the model cannot settle a phase's contract (issue 22 item 2): the deep
interview asks the person first (`odin answer`, resumable from .odin-loop/contracts/<phase>.interview/), then
the contract is proposed again with the answers, written, approved (hitl) and the phase runs. The real engine
and SDK: the proposals against the local fake Messages API or the scripted model, the interview's model the
scripted one, as a user would configure it."""

from __future__ import annotations

import json

import yaml

from odin_magic.cli import main
from odin_magic.engine.orchestrator import Engine
from odin_magic.engine.roadmap_driver import RoadmapDriver, RoadmapOptions
from odin_magic.engine.roadmap_interview import interview_dir, waiting_interview
from odin_magic.loop.contract import contract_path, load_contract
from odin_magic.loop.roadmap import ROADMAP_FILE, load_roadmap
from odin_magic.runs.contract_usage import interview_usage, proposal_usage
from odin_magic.runs.roadmap_progress import progress
from odin_magic.workers.config import Settings
from support.contract_interview import ANSWERS, INTERVIEW, PROPOSAL, RUN, UNSETTLED, make_project, roadmap_script
from support.fake_messages import FakeMessages


def _env(tmp_path, monkeypatch, script: dict, interview: dict | None = None) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ODIN_INTERVIEW_SCRIPT"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "roadmap.script.yaml"
    path.write_text(yaml.safe_dump(script))
    monkeypatch.setenv("ODIN_SCRIPT", str(path))
    if interview is not None:
        (tmp_path / "interview.yaml").write_text(yaml.safe_dump(interview))
        monkeypatch.setenv("ODIN_INTERVIEW_SCRIPT", str(tmp_path / "interview.yaml"))


def test_an_unsettled_contract_asks_the_interview_then_is_proposed_again_with_the_answers(project, tmp_path,
                                                                                          monkeypatch):
    make_project(project)
    _env(tmp_path, monkeypatch, yaml.safe_load(RUN), interview=INTERVIEW)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")  # the proposals' credential: the fake API's
    engine = Engine(project)
    fake = FakeMessages().reply(json.dumps(UNSETTLED)).reply(json.dumps(PROPOSAL))
    with fake.serve() as url:
        options = lambda **kw: RoadmapOptions(settings=Settings(base_url=url), **kw)  # noqa: E731
        out = RoadmapDriver(engine, options=options()).run()
        # no contract yet: the phase waits at the interview's first question, and says how to answer it
        assert (out.ending, out.phase) == ("paused", "p1") and engine.runs() == [], out.lines
        assert not contract_path(project, "p1").exists()
        assert any("I split the work into: C1 Greeting" in line for line in out.lines)
        assert any('odin answer "..."' in line for line in out.lines)
        p1 = progress(project, load_roadmap(project / ROADMAP_FILE))["p1"]
        assert (p1.status, p1.pause) == ("paused", "interview") and "odin answer" in p1.reason
        assert "Which greeting: hello or hi?" in (interview_dir(project, "p1") / "seed.json").read_text()
        # unattended: a phase whose contract needs a person's answers stops there (exit 3)
        assert RoadmapDriver(engine, options=options(unattended=True)).run().exit_code == 3
        # the answers, one at a time (each from a fresh object: the state is the files); then finished
        for n, answer in enumerate(ANSWERS):
            question = waiting_interview(project).answer(answer)
            assert (question is None) == (n == len(ANSWERS) - 1), question
        assert waiting_interview(project) is None
        assert (interview_dir(project, "p1") / "spec.md").is_file()
        out = RoadmapDriver(engine, options=options()).run()  # proposed again, written, shown for approval
        assert (out.ending, out.phase) == ("paused", "p1") and engine.runs() == [], out.lines
        assert load_contract(contract_path(project, "p1"), project).scope == ["app.py"]
        assert any("scope: app.py" in line for line in out.lines)
        out = RoadmapDriver(engine, options=options()).run()  # approved: the phase runs and is done
    assert out.ending == "complete", out.lines
    assert (project / "app.py").read_text() == "def greet():\n    return 'hello'\n"
    first, second = fake.bodies(purpose="contract", stage="p1")
    assert "greet returns exactly the word hello" not in first.text
    for seen in ("Which greeting: hello or hi?", "greet returns exactly the word hello", "only app.py changes",
                 "Given the app, when greet is called, then it says hello"):  # the answers, and the spec's criterion
        assert seen in second.text, seen


def odin(project, *argv, capsys):
    code = main([*argv, "--project", str(project)])
    out, err = capsys.readouterr()
    return code, out, err


def test_offline_the_terminal_answers_a_phases_contract_interview(project, tmp_path, monkeypatch, capsys):
    """`odin roadmap run`, `odin question`, `odin answer`: the roadmap's own script answers both the contract
    proposals (`answers: {contract: {p1: [...]}}`) and the interview (`interview: {phases: {p1: ...}}`)."""
    make_project(project)
    _env(tmp_path, monkeypatch, roadmap_script())
    code, out, _ = odin(project, "roadmap", "run", capsys=capsys)
    assert code == 0 and "the deep interview asks you first" in out and 'odin answer "..."' in out
    first = proposal_usage(project, "p1")  # the first proposal's cost (it left questions open)
    assert first is not None and first.total_tokens > 0 and first.offline_usd == first.cost_usd > 0
    # its last line says an answer goes on, not `odin roadmap run` (which would only ask the same question again)
    assert out.rstrip().splitlines()[-2].startswith("paused: its contract interview waits for your answer"), out
    code, out, _ = odin(project, "roadmap", capsys=capsys)  # the status: paused, and how to answer
    assert code == 0 and "paused" in out and "odin answer" in out, out
    code, out, _ = odin(project, "roadmap", "run", "--unattended", capsys=capsys)
    assert code == 3 and "needs a person (interview)" in out
    code, out, _ = odin(project, "question", capsys=capsys)
    assert code == 0 and "phase p1's contract interview" in out and "C1 Greeting" in out
    code, out, _ = odin(project, "answer", "confirm", capsys=capsys)
    assert code == 0 and "Which word does greet return?" in out
    for answer in ANSWERS[1:]:
        code, out, err = odin(project, "answer", answer, capsys=capsys)
        assert code == 0, err
    assert "its contract interview is finished" in out and "`odin roadmap run`" in out
    _say_the_interview_is_finished(project, capsys)
    code, out, _ = odin(project, "roadmap", "run", capsys=capsys)  # the contract, written and shown
    assert code == 0 and "scope: app.py" in out and contract_path(project, "p1").is_file()
    assert "settle these" not in out  # the script's second proposal, in this new command: nothing left open
    second = proposal_usage(project, "p1")  # the second proposal's cost added to the first's
    assert second.total_tokens > first.total_tokens and second.cost_usd > first.cost_usd
    code, out, _ = odin(project, "roadmap", capsys=capsys)
    total = second.total_tokens + interview_usage(project, "p1").total_tokens  # both proposals and the interview
    assert f"contract proposal and interview: {total} tokens, " in out, out
    code, out, _ = odin(project, "roadmap", "run", capsys=capsys)
    assert code == 0 and "roadmap complete" in out


def _say_the_interview_is_finished(project, capsys) -> None:
    """After the last answer, before `odin roadmap run`: `odin roadmap`, `odin answer` and `odin question` say the
    interview is finished and `odin roadmap run` proposes the contract (none says an answer waits)."""
    code, out, _ = odin(project, "roadmap", capsys=capsys)
    assert code == 0 and "— its contract interview is finished: `odin roadmap run` proposes" in out, out
    assert "waits for your answer" not in out, out
    for argv in (("answer", "more"), ("question",)):
        code, out, err = odin(project, *argv, capsys=capsys)
        assert code != 0 and "contract interview" in err and "finished" in err, (argv, err)
        assert "`odin roadmap run` proposes the contract" in err and "waiting for your answer" not in err, err
        assert "odin status" not in err, err


def _claude_interview(project, tmp_path, monkeypatch, **answers) -> None:
    """The project, its interview's model Claude's (its requests answered by the offline scripted Messages API)."""
    make_project(project)
    script = roadmap_script()
    del script["interview"]  # no scripted interview: the interview model is Claude's, over the scripted API
    script["answers"].update({
        "interview-propose": {"p1": [{"goal": "Greet people", "components": [{"name": "Greeting"}]}]},
        "interview-explore": {"p1": [{"findings": [{"text": "greet lives in app.py", "citation": "app.py:1"}]}]},
        "interview-question": {"p1": [{"question": "Which word does greet return?"}]}, **answers})
    _env(tmp_path, monkeypatch, script)


def test_the_contracts_model_cost_is_in_the_roadmap_and_its_report(project, tmp_path, monkeypatch, capsys):
    """The contract's model calls (its proposal, then its interview: Claude's requests answered by the offline
    scripted Messages API, through the real SDK) cost tokens: kept in the proposal's and the interview's usage
    files, shown as one figure on the phase's line of `odin roadmap` and in its totals, and in the roadmap
    report, priced as Claude would charge them and said spent by no one."""
    from odin_magic.engine.roadmap_interview import ContractInterview
    from odin_magic.engine.roadmap_report import REPORT_FILE
    from odin_magic.render.text import cost_text
    from odin_magic.runs.contract_usage import contract_cost, proposal_usage

    _claude_interview(project, tmp_path, monkeypatch)
    monkeypatch.setenv("ODIN_RECORD", str(tmp_path / "session.recording.yaml"))
    code, out, _ = odin(project, "roadmap", "run", capsys=capsys)
    assert code == 0 and "I split the work into: C1 Greeting" in out, out
    from odin_magic.workers.script_file import load_script

    recorded = load_script(tmp_path / "session.recording.yaml").answers  # the proposal's and interview's exchanges
    assert recorded["contract"]["p1"][0].json_["questions"] and recorded["interview-propose"]["p1"], recorded
    proposed, usage = proposal_usage(project, "p1"), ContractInterview(project, "p1").usage()
    assert proposed is not None and proposed.input_tokens > 0 and proposed.output_tokens > 0
    assert usage is not None and usage.input_tokens > 0 and usage.output_tokens > 0
    assert usage.offline_usd == usage.cost_usd > 0 and proposed.offline_usd == proposed.cost_usd > 0  # not spent
    cost = contract_cost(project, "p1")
    assert cost.usage.total_tokens == proposed.total_tokens + usage.total_tokens
    shown = f"contract proposal and interview: {cost.usage.total_tokens} tokens, {cost_text(cost.usage)}"
    assert shown.endswith("if run on Claude; nothing spent")
    code, out, _ = odin(project, "roadmap", capsys=capsys)
    p1 = next(line for line in out.splitlines() if "p1 Greet people" in line)
    assert code == 0 and shown in p1, out
    assert f"(contract proposals and interviews: {cost.usage.total_tokens} tokens, " in out.splitlines()[-1], out
    assert shown in (project / REPORT_FILE).read_text()
    code, out, _ = odin(project, "answer", "confirm", capsys=capsys)  # the next question: one more call
    assert code == 0 and "Which word does greet return?" in out, out
    more = contract_cost(project, "p1").usage
    assert more.total_tokens > cost.usage.total_tokens and more.cost_usd > cost.usage.cost_usd
    code, out, _ = odin(project, "roadmap", capsys=capsys)
    assert f"contract proposal and interview: {more.total_tokens} tokens, {cost_text(more)}" in out, out


def test_an_unreadable_interview_usage_never_fails_the_answer(project, tmp_path, monkeypatch, capsys):
    """usage.json damaged: `odin answer` keeps the answer and exits 0, a one-line warning naming the file and
    the fix; a failing call still says its own error; `odin roadmap` shows the interview's cost as unreadable
    (and the proposal's, when its usage file is damaged too), its totals say it is not counted."""
    _claude_interview(project, tmp_path, monkeypatch, **{"interview-score": {"p1": [{"scores": "not a mapping"}]}})
    code, out, _ = odin(project, "roadmap", "run", capsys=capsys)
    assert code == 0 and "I split the work into: C1 Greeting" in out, out
    usage = interview_dir(project, "p1") / "usage.json"
    usage.write_text("{not json")
    code, out, err = odin(project, "answer", "confirm", capsys=capsys)
    assert code == 0 and "Which word does greet return?" in out, (out, err)
    [warning] = [line for line in out.splitlines() if line.startswith("warning:")]
    assert str(usage) in warning and "delete it" in warning, warning
    assert waiting_interview(project).state().topology_confirmed_at  # the answer is kept
    code, out, _ = odin(project, "roadmap", capsys=capsys)
    shown = "contract interview: cost unreadable (.odin-loop/contracts/p1.interview/usage.json; delete it"
    assert code == 0 and shown in out and out.count("cost unreadable") == 1, out
    p1 = next(line for line in out.splitlines() if "p1 Greet people" in line)
    assert "contract proposal: " in p1 and " tokens, " in p1, p1  # the proposal's readable cost still shown
    assert "not counted: the unreadable contract cost of p1" in out.splitlines()[-1], out
    _an_unreadable_proposal_usage_is_said(project, capsys)
    usage.write_text("{not json")
    # the next answer's scoring reply does not fit: that error is said, in one line, not the usage file's
    code, out, err = odin(project, "answer", "hello", capsys=capsys)
    assert code != 0 and "usage" not in err and "score" in err and "contract interview" in err, err
    assert len(err.strip().splitlines()) == 2 and "hint: `odin question` shows" in err, err
    assert "warning: phase p1: " in out and "tokens not counted" in out, out


def _an_unreadable_proposal_usage_is_said(project, capsys) -> None:
    """The proposal's usage file damaged too: `odin roadmap` and the roadmap report say both costs are unreadable
    (which file, how to count again), and no contract figure that would leave them out silently."""
    from odin_magic.engine.roadmap_report import report_text

    proposal = project / ".odin-loop" / "contracts" / "p1.usage.json"
    kept = proposal.read_text()
    proposal.write_text("[]")
    code, out, _ = odin(project, "roadmap", capsys=capsys)
    shown = "contract proposal: cost unreadable (.odin-loop/contracts/p1.usage.json; delete it to count again"
    assert code == 0 and shown in out and out.count("cost unreadable") == 2, out
    assert " tokens, " not in next(line for line in out.splitlines() if "p1 Greet people" in line), out
    assert "contract proposals and interviews:" not in out, out
    roadmap = load_roadmap(project / ROADMAP_FILE)
    report = report_text(roadmap, progress(project, roadmap), "paused", [])
    assert shown in report and report.count("cost unreadable") == 2, report
    proposal.write_text(kept)


def test_an_unreadable_proposal_usage_never_fails_the_proposal(project, tmp_path, monkeypatch, capsys):
    """The proposals' usage file damaged before `odin roadmap run` asks the model: the proposal goes on (here
    to the interview it asks for), a one-line warning names the file and the fix."""
    _claude_interview(project, tmp_path, monkeypatch)
    proposal = project / ".odin-loop" / "contracts" / "p1.usage.json"
    proposal.parent.mkdir(parents=True, exist_ok=True)
    proposal.write_text("{not json")
    code, out, err = odin(project, "roadmap", "run", capsys=capsys)
    assert code == 0 and "I split the work into: C1 Greeting" in out, (out, err)
    [warning] = [line for line in out.splitlines() if "warning:" in line]
    assert str(proposal) in warning and "tokens not counted" in warning and "delete it" in warning, warning
