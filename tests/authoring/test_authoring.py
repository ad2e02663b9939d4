"""``odin new``: authoring a loop from the seven questions' answers (file, prompts, model proposal)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from support.fake_messages import FakeMessages
from odin_magic.authoring import new_loop as au
from odin_magic.loop.catalog import LoopCatalog
from odin_magic.cli import main
from odin_magic.workers.config import Settings
from odin_magic.engine.orchestrator import Engine
from odin_magic.runs.state import DryOptions
from odin_magic.loop.validation import validate_file

ANSWERS = """\
kind: documentation
stages:
  draft: Write a first draft of the document.
  critique: Attack the draft for gaps.
  review: Independent review before sign-off.
gates:
  draft: {check: draft.md covers every point of the task}
  critique: {check: critique.md lists no blocking finding, run: ["true"]}
  review: {mode: ai+human, check: review.md lists no blocking finding}
on_fail:
  critique: draft
  review: draft
max_iterations: 4
roles:
  draft: executor
interview: {threshold: 0.2}
"""


def write_answers(where: Path, text: str = ANSWERS) -> Path:
    path = where / "answers.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_new_from_an_answers_file_writes_a_valid_loop_that_runs_dry_to_done(project, capsys):
    answers = write_answers(project)
    code, out, err = run(capsys, "new", "docs", "--answers", str(answers), "--project", str(project))
    assert code == 0, err
    path = project / ".odin-loop" / "loops" / "docs.yaml"
    report = validate_file(path)
    assert report.ok, report.format()
    loop = report.loop
    # every answer landed where the seven questions say
    assert [s.id for s in loop.stages] == ["interview", "draft", "critique", "review"]
    assert loop.stage("interview").interview.threshold == 0.2
    assert loop.stage("interview").interview.challenges == ["contrarian@4", "simplifier@6", "ontologist@8"]
    assert loop.stage("critique").gate.on_fail == "draft" and loop.stage("critique").gate.commands[0].cmd == "true"
    assert loop.stage("review").gate.mode == "ai+human"
    assert loop.max_iterations == 4
    assert loop.stage("draft").agent == "executor"
    assert loop.stage("critique").agent == "critic"  # an adversarial check defaults to critic
    assert loop.stage("review").agent == "reviewer"  # an independent review defaults to reviewer
    assert loop.stage("draft").consumes == ["spec.md"]
    # echoed back, and offered to start
    assert "name: docs" in out and "odin run docs" in out
    state = Engine(project).start("docs", "write the docs", dry=DryOptions(approve_all=True))
    assert state.status == "done"


def test_new_never_overwrites_without_force(project, capsys):
    answers = write_answers(project)
    assert run(capsys, "new", "docs", "--answers", str(answers), "--project", str(project))[0] == 0
    path = project / ".odin-loop" / "loops" / "docs.yaml"
    path.write_text(path.read_text() + "# mine\n")
    code, out, err = run(capsys, "new", "docs", "--answers", str(answers), "--project", str(project))
    assert code == 2 and "already exists" in err and "--force" in err
    assert path.read_text().endswith("# mine\n")
    code, _, err = run(capsys, "new", "docs", "--answers", str(answers), "--project", str(project), "--force")
    assert code == 0, err
    assert not path.read_text().endswith("# mine\n")


@pytest.mark.parametrize("edit, question, where", [
    (lambda t: t.replace("stages:", "steps:"), "question 2 (stages)", "no answer"),
    (lambda t: t.replace("mode: ai+human", "mode: maybe"), "question 3 (gates)", "answers.yaml:9:"),
    (lambda t: t.replace("review: draft", "review: drfat"), "question 4 (on_fail)", "'drfat'"),
    (lambda t: t.replace("  critique: {check", "  critic: {check"), "question 3 (gates)", "no gate"),
    (lambda t: t.replace("  draft: executor", "  draft: boss"), "question 6 (roles)", "answers.yaml:15:"),
    (lambda t: t.replace("kind: documentation\n", "kind: documentation\ncolour: red\n"), "question", "'colour'"),
])
def test_a_missing_or_wrong_answer_names_its_question(project, capsys, edit, question, where):
    answers = write_answers(project, edit(ANSWERS))
    code, out, err = run(capsys, "new", "docs", "--answers", str(answers), "--project", str(project))
    assert code == 1, err
    assert question in err and where in err
    assert "Traceback" not in err
    assert not (project / ".odin-loop" / "loops" / "docs.yaml").exists()


def test_every_problem_of_an_answers_file_is_told_at_once_and_max_iterations_defaults_as_the_prompts_do(
        project, capsys):
    """Issue 18 item 8: a missing answer no longer hides a typo elsewhere; max_iterations defaults to 5 (the
    prompts' default); an empty check is worded as the loop validator words it."""
    text = ANSWERS.replace("max_iterations: 4\n", "").replace("review: draft", "review: drfat")
    text = text.replace("kind: documentation", "kind: ''")
    answers = write_answers(project, text)
    code, _, err = run(capsys, "new", "docs", "--answers", str(answers), "--project", str(project))
    assert code == 1
    assert "'drfat'" in err and "kind: must not be empty" in err  # both, in one go
    assert "max_iterations" not in err and "String should have" not in err
    answers = write_answers(project, ANSWERS.replace("max_iterations: 4\n", ""))
    code, _, err = run(capsys, "new", "docs", "--answers", str(answers), "--project", str(project))
    assert code == 0, err
    assert "max_iterations: 5" in (project / ".odin-loop" / "loops" / "docs.yaml").read_text()


def test_the_validator_drives_the_re_ask(project):
    """A fresh-context role on the first stage has nothing to consume: the loop validator says so, and the
    problem goes back to question 6 (the role)."""
    answers = au.parse_answers(yaml.safe_load(textwrap.dedent("""\
        kind: coding
        stages: {audit: Audit the repository.}
        gates: {audit: {check: audit.md lists every finding}}
        max_iterations: 2
        """)))
    d = au.draft("audit", answers)
    assert not d.report.ok
    assert {p.question.key for p in d.problems} == {"roles"}
    assert "consumes" in str(d.problems[0])
    with pytest.raises(au.AnswersInvalid):
        au.write_loop(project, "audit", answers)
    assert not (project / ".odin-loop").exists()


def odin(project: Path, *argv: str, stdin: str = "", env: dict | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "ODIN_SCRIPT")}
    return subprocess.run([sys.executable, "-m", "odin_magic", *argv, "--project", str(project)], input=stdin,
                          capture_output=True, text=True, env={**base, **(env or {})}, timeout=120)


def test_new_in_a_terminal_asks_the_seven_questions_and_re_asks_what_fails(project):
    lines = [
        "coding",                                  # 1 kind
        "build: Write the code.", "check: Run the tests.", "",  # 2 stages
        "the code exists", "", "-",                # 3 build gate: check, mode (default ai), commands
        "the tests pass", "ai", "true",            #   check gate
        "-", "nowhere",                            # 4 on_fail: build retries, check -> an unknown stage
        "3",                                       # 5 max_iterations
        "executor", "critic",                      # 6 roles
        "n",                                       # 7 no interview
        "build",                                   # re-ask question 4: check -> build
        "build",                                   #   (build's loopback asked again; build itself is fine)
    ]
    # the re-ask asks question 4 for each stage again: build keeps "-", check gets "build"
    lines[-2:] = ["-", "build"]
    result = odin(project, "new", "tdd", stdin="\n".join(lines) + "\n")
    assert result.returncode == 0, result.stderr + result.stdout
    assert "1. What kind of work" in result.stdout and "7. Does the loop open" in result.stdout
    assert "question 4 (on_fail)" in result.stdout  # the re-ask said why
    loop = LoopCatalog(project).load("tdd")
    assert loop.stage("check").gate.on_fail == "build" and loop.stage("check").agent == "critic"
    assert loop.max_iterations == 3


def test_input_that_ends_early_is_a_clear_error(project):
    result = odin(project, "new", "tdd", stdin="coding\n")
    assert result.returncode == 2 and "input ended" in result.stderr and "Traceback" not in result.stderr


PROPOSAL = {
    "kind": "python library",
    "stages": [{"id": "plan", "goal": "Plan the change."}, {"id": "build", "goal": "Implement it."},
               {"id": "qa", "goal": "Independent QA of the change."}],
    "gates": [{"stage": "plan", "mode": "ai+human", "check": "plan.md names every file to change"},
              {"stage": "build", "mode": "ai", "check": "the tests pass", "run": ["true"]},
              {"stage": "qa", "mode": "ai", "check": "qa.md lists no blocking finding"}],
    "on_fail": [{"stage": "qa", "to": "build"}],
    "max_iterations": 6,
    "roles": [{"stage": "plan", "role": "planner"}, {"stage": "build", "role": "executor"},
              {"stage": "qa", "role": "reviewer"}],
    "interview": {"enabled": False, "threshold": 0.15, "challenges": [], "auto_assist": True},
}


def test_a_model_proposes_the_answers_through_a_structured_call():
    fake = FakeMessages().reply(json.dumps(PROPOSAL))
    answers = au.propose_answers("a small python library change", Settings(), fake.factory())
    assert answers.stage_ids() == ["plan", "build", "qa"] and answers.max_iterations == 6
    (request,) = fake.requests
    assert request.headers["x-odin-purpose"] == "author"
    schema = request.body["output_config"]["format"]["schema"]
    assert {"kind", "stages", "gates", "max_iterations"} <= set(schema["properties"])
    assert "a small python library change" in request.text


def test_offline_the_scripted_model_proposes_and_enter_accepts_each_answer(project):
    script = project / "author.script.yaml"
    script.write_text(yaml.safe_dump({"answers": {"author": {"new": [{"json": PROPOSAL}]}}}), encoding="utf-8")
    # Enter everywhere: keep the stages, then accept every proposed answer
    result = odin(project, "new", "lib", "--describe", "a small python library change", stdin="\n" * 40,
                  env={"ODIN_SCRIPT": str(script)})
    assert result.returncode == 0, result.stderr + result.stdout
    assert "a model proposed answers" in result.stdout
    loop = LoopCatalog(project).load("lib")
    assert [s.id for s in loop.stages] == ["plan", "build", "qa"]
    assert loop.stage("plan").gate.mode == "ai+human" and loop.stage("qa").gate.on_fail == "build"
    assert loop.stage("qa").agent == "reviewer" and loop.max_iterations == 6


def test_percent_odin_new_in_a_terminal_ipython_asks_the_prompts(tmp_path, monkeypatch):
    """No widgets (a terminal IPython): %odin new asks the seven questions as prompts; --answers skips them."""
    from IPython.testing import globalipapp
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython() or globalipapp.get_ipython()
    ip.run_line_magic("load_ext", "odin_magic")
    magics = ip.magics_manager.registry["OdinMagics"]
    ip.run_line_magic("odin", f"config project={tmp_path}")
    try:
        replies = iter(["coding", "build: Write the code.", "", "the code exists", "", "-", "-", "2", "", "n"])
        monkeypatch.setattr("builtins.input", lambda prompt="": next(replies))
        shown = ip.run_line_magic("odin", "new tiny-term")
        assert "wrote" in repr(shown) and "name: tiny-term" in repr(shown)
        assert LoopCatalog(tmp_path).load("tiny-term").max_iterations == 2
        write_answers(tmp_path)
        shown = ip.run_line_magic("odin", "new docs --answers answers.yaml")
        assert "wrote .odin-loop/loops/docs.yaml" in repr(shown)
        monkeypatch.setattr("builtins.input", lambda prompt="": (_ for _ in ()).throw(EOFError))
        from IPython.core.error import UsageError as IPyUsageError

        with pytest.raises(IPyUsageError, match="input ended"):
            ip.run_line_magic("odin", "new cut-short")
    finally:
        magics.project = ""


def test_the_form_starts_from_a_models_proposal_and_writes_it(project):
    from odin_magic.notebook.new_loop_form import NewLoopForm

    proposal = au.parse_answers(PROPOSAL)
    form = NewLoopForm(project, "lib", proposal)
    assert form.kind.value == "python library" and form.max_iterations.value == 6
    assert form.stages_text.value.splitlines() == ["plan: Plan the change.", "build: Implement it.",
                                                   "qa: Independent QA of the change."]
    form.go(2)
    assert form.gate_rows["plan"]["mode"].value == "ai+human" and form.gate_rows["build"]["run"].value == "true"
    form.go(3)
    assert form.loopback_rows["qa"].value == "build"
    form.go(5)
    assert {k: d.value for k, d in form.role_rows.items()} == {"plan": "planner", "build": "executor", "qa": "reviewer"}
    form.gate_rows["qa"]["check"].value = "qa.md lists no blocking finding, with evidence"  # the user edits one
    assert "with evidence" in form.preview.value  # the preview follows
    assert form.write() is not None
    loop = LoopCatalog(project).load("lib")
    assert loop.stage("qa").gate.check == "qa.md lists no blocking finding, with evidence"
    assert loop.stage("plan").agent == "planner" and loop.stage("qa").gate.on_fail == "build"
