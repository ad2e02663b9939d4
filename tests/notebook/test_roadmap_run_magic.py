"""`%odin roadmap run` (issue 22 item 3) in the notebook: the driver in the cell with the notebook's engine (the
scripted model chosen by `%odin config script=`); its text/plain is what `odin roadmap run` prints."""

from __future__ import annotations

import contextlib
import io

import pytest
import yaml

from odin_magic.cli import main
from odin_magic.loop.roadmap import ROADMAP_FILE, load_roadmap

ROADMAP = "# Greeter\n\nautonomy: autonomous\n\n## M1 Basics\n\n- [ ] p1 Greet with hello\n"
CONTRACT = "risk: tiny-fix\nscope: [app.py]\ngate: {kind: programmatic, run: [\"grep -q hello app.py\"]}\n"
SCRIPT = {"stages": {"apply": [
    {"tools": [{"write": {"file_path": "app.py", "content": "def greet():\n    return 'hello'\n"}},
               {"write": {"file_path": "{run_dir}/change-notes.md", "content": "greet says hello"}}]},
    {"text": "done"}]}, "default_verdict": {"passed": True, "reasons": ["scripted"]}}


@pytest.fixture
def magics(ip, tmp_path):
    (tmp_path / ".odin-loop" / "contracts").mkdir(parents=True)
    (tmp_path / ROADMAP_FILE).write_text(ROADMAP, encoding="utf-8")
    (tmp_path / ".odin-loop" / "contracts" / "p1.yaml").write_text(CONTRACT, encoding="utf-8")
    script = tmp_path / "roadmap.script.yaml"
    script.write_text(yaml.safe_dump(SCRIPT), encoding="utf-8")
    ip.run_line_magic("odin", f"config project={tmp_path} script={script}")
    magics = ip.magics_manager.registry["OdinMagics"]
    yield magics
    magics.project, magics.script = "", None


def test_roadmap_run_in_the_notebook_and_its_plain_text_is_the_cli(ip, magics, tmp_path):
    shown = repr(ip.run_line_magic("odin", "roadmap run"))
    assert "phase p1 done (run " in shown and "roadmap complete" in shown, shown
    assert load_roadmap(tmp_path / ROADMAP_FILE).phases()[0].done
    assert (tmp_path / "app.py").read_text() == "def greet():\n    return 'hello'\n"
    again = ip.run_line_magic("odin", "roadmap run")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["roadmap", "run", "--project", str(tmp_path)])
    assert code == 0 and repr(again).strip() == out.getvalue().strip()


def test_percent_odin_answer_answers_a_phases_contract_interview(ip, tmp_path, capsys):
    """A phase whose contract the model cannot settle: `%odin roadmap run` shows the interview's question,
    `%odin answer` answers it (no run waits for one), then `%odin roadmap run` writes the contract."""
    from odin_magic.loop.contract import contract_path
    from support.contract_interview import ANSWERS

    project = _interview_project(ip, tmp_path)
    magics = ip.magics_manager.registry["OdinMagics"]
    try:
        shown = repr(ip.run_line_magic("odin", "roadmap run"))
        assert "the deep interview asks you first" in shown and "%odin answer" in shown, shown
        capsys.readouterr()
        ip.run_line_magic("odin", "answer confirm")
        assert "Which word does greet return?" in capsys.readouterr().out
        for answer in ANSWERS[1:]:
            ip.run_line_magic("odin", f"answer {answer}")
        assert "`%odin roadmap run`" in capsys.readouterr().out
        shown = repr(ip.run_line_magic("odin", "roadmap run"))
        assert "scope: app.py" in shown and contract_path(project, "p1").is_file(), shown
    finally:
        magics.project, magics.script = "", None


def test_percent_odin_answer_at_a_roadmap_pause_says_what_the_pause_wants(ip, magics, tmp_path):
    """hitl: the roadmap waits before p1 starts; no run is active and no question waits. `%odin answer` (and
    `%odin approve`) say the roadmap's pause is what waits, and `%odin roadmap run` goes on, as the terminal does."""
    from IPython.core.error import UsageError

    (tmp_path / ROADMAP_FILE).write_text(ROADMAP.replace("autonomous", "hitl"), encoding="utf-8")
    magics.widgets = False
    try:
        shown = repr(ip.run_line_magic("odin", "roadmap run"))
        assert "waits for you before it starts" in shown, shown
        for line in ("answer yes", "approve"):
            with pytest.raises(UsageError) as info:
                ip.run_line_magic("odin", line)
            said = str(info.value)
            assert "the roadmap is paused at phase p1 (before it starts)" in said, said
            assert "`%odin roadmap run` approves the pause and goes on" in said and "%odin run LOOP" not in said, said
    finally:
        magics.widgets = None


def _interview_project(ip, tmp_path):
    """A phase whose contract the model cannot settle, `%odin config` set to the roadmap's script."""
    from support.contract_interview import make_project, roadmap_script

    project = tmp_path / "p"
    project.mkdir()
    make_project(project)
    script = tmp_path / "roadmap.script.yaml"
    script.write_text(yaml.safe_dump(roadmap_script()), encoding="utf-8")
    ip.run_line_magic("odin", f"config project={project} script={script}")
    return project


def test_percent_odin_question_shows_a_phases_contract_interview_question(ip, tmp_path, capsys):
    """At the contract interview's pause, `%odin question` shows its waiting question as `odin question` does
    (not "no question waiting"); once the interview is finished, it says none waits."""
    from IPython.core.error import UsageError
    from support.contract_interview import ANSWERS

    project = _interview_project(ip, tmp_path)
    magics = ip.magics_manager.registry["OdinMagics"]
    magics.widgets = False
    try:
        ip.run_line_magic("odin", "roadmap run")
        shown = repr(ip.run_line_magic("odin", "question"))
        assert "phase p1's contract interview" in shown and "C1 Greeting" in shown, shown
        assert "→ %odin answer" in shown, shown
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            assert main(["question", "--project", str(project)]) == 0
        assert shown.strip().replace("%odin", "odin").replace("odin answer ...", 'odin answer "..."') \
            == out.getvalue().strip()
        ip.run_line_magic("odin", "answer confirm")
        assert "Which word does greet return?" in repr(ip.run_line_magic("odin", "question"))
        for answer in ANSWERS[1:]:
            ip.run_line_magic("odin", f"answer {answer}")
        for line in ("question", "answer more"):  # finished: `%odin roadmap run` proposes the contract
            with pytest.raises(UsageError) as info:
                ip.run_line_magic("odin", line)
            said = str(info.value)
            assert "contract interview" in said and "finished" in said and "waiting for your answer" not in said
            assert "`%odin roadmap run` proposes the contract" in said and "status" not in said, said
        shown = repr(ip.run_line_magic("odin", "roadmap"))
        assert "contract interview is finished" in shown and "waits for your answer" not in shown, shown
    finally:
        magics.project, magics.script, magics.widgets = "", None, None


def _shown_panels(cap) -> list:
    """The contract-interview panels a cell displayed (their widgets, found by the model id displayed)."""
    import warnings

    import ipywidgets as w

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Widget.widgets: the live widgets by model id
        live = w.Widget.widgets
    ids = [o.data["application/vnd.jupyter.widget-view+json"]["model_id"] for o in cap.outputs
           if "application/vnd.jupyter.widget-view+json" in o.data]
    return [live[i] for i in ids if "odin-contract-question" in live[i]._dom_classes]


def _widget(widget, kind, description: str | None = None):
    """The first ``kind`` of widget (labelled ``description``) in the widget tree, as a person sees it."""
    todo = [widget]
    while todo:
        node = todo.pop(0)
        if isinstance(node, kind) and description in (None, node.description):
            return node
        todo.extend(getattr(node, "children", ()))
    raise AssertionError(f"no {kind.__name__} {description or ''}")


def _button(widget, description: str):
    import ipywidgets as w

    return _widget(widget, w.Button, description)


def test_with_widgets_the_contract_interview_shows_its_question_panel_and_its_buttons_answer(ip, tmp_path):
    """`%odin roadmap run` stopping at the contract interview, and `%odin question` there, show the interview's
    QuestionPanel; its buttons answer the contract interview as `%odin answer` does, the next question replacing
    the last, until the interview is finished and `%odin roadmap run` writes the contract."""
    import ipywidgets as w
    from IPython.utils.capture import capture_output

    from odin_magic.engine.roadmap_interview import waiting_interview
    from odin_magic.loop.contract import contract_path
    from support.contract_interview import ANSWERS

    project = _interview_project(ip, tmp_path)
    magics = ip.magics_manager.registry["OdinMagics"]
    magics.widgets = True
    try:
        with capture_output() as cap:
            ip.run_line_magic("odin", "roadmap run")
        assert "the deep interview asks you first" in cap.outputs[0].data["text/plain"]
        [panel] = _shown_panels(cap)
        _button(panel, "Confirm topology").click()  # `%odin answer confirm`
        state = waiting_interview(project).state()
        assert state.pending.text == "Which word does greet return?" and state.topology_confirmed_at
        with capture_output() as cap:  # `%odin question` there: the same panel, at the waiting question
            ip.run_line_magic("odin", "question")
        assert "Which word does greet return?" in cap.outputs[0].data["text/plain"]
        [panel] = _shown_panels(cap)
        for answer in ANSWERS[1:]:
            _widget(panel, w.Textarea).value = answer
            _button(panel, "Send answer").click()
        assert waiting_interview(project) is None
        said = panel.children[0].value
        assert "its contract interview is finished" in said and "`%odin roadmap run`" in said, said
        assert [r.answer for r in state.__class__.model_validate_json(
            (project / ".odin-loop/contracts/p1.interview/interview-p1.json").read_text()).rounds] == ANSWERS[1:]
        ip.run_line_magic("odin", "roadmap run")
        assert contract_path(project, "p1").is_file()
    finally:
        magics.project, magics.script, magics.widgets = "", None, None


def test_a_stale_contract_question_panel_sends_nothing(ip, tmp_path):
    """A panel whose question was answered elsewhere (`%odin answer`, a newer panel shown by `%odin question`)
    answers nothing with its buttons: it says the question was already answered and `%odin question` shows the
    current one; the waiting question stays as it was."""
    import ipywidgets as w
    from IPython.utils.capture import capture_output

    from odin_magic.engine.roadmap_interview import waiting_interview

    project = _interview_project(ip, tmp_path)
    magics = ip.magics_manager.registry["OdinMagics"]
    magics.widgets = True
    try:
        with capture_output() as cap:
            ip.run_line_magic("odin", "roadmap run")
        [old] = _shown_panels(cap)  # the topology
        with capture_output():
            ip.run_line_magic("odin", "answer confirm")  # answered in the cell (as a terminal would)
        with capture_output() as cap:
            ip.run_line_magic("odin", "question")
        [newer] = _shown_panels(cap)  # round 1
        _button(old, "Confirm topology").click()
        state = waiting_interview(project).state()
        assert state.pending.text == "Which word does greet return?" and state.rounds == [], state.rounds
        said = old.children[0].value
        assert "this question was already answered; `%odin question` shows the current one" in said, said
        _widget(newer, w.Textarea).value = "greet returns exactly the word hello"
        _button(newer, "Send answer").click()  # the newer panel answers: round 2 waits
        assert waiting_interview(project).state().pending.round == 2
    finally:
        magics.project, magics.script, magics.widgets = "", None, None


def test_percent_odin_answer_when_the_roadmap_stops_at_an_escalated_phase_names_it(ip, magics, tmp_path):
    """p1's gate never passes within its one iteration: escalated, the roadmap stops. `%odin answer` (and
    `%odin approve`) name that phase and what decides it, not "start a run", as the terminal does."""
    from IPython.core.error import UsageError

    contract = tmp_path / ".odin-loop" / "contracts" / "p1.yaml"
    contract.write_text(CONTRACT.replace("hello", "goodbye") + "max_iterations: 1\n", encoding="utf-8")
    magics.widgets = False
    try:
        shown = repr(ip.run_line_magic("odin", "roadmap run"))
        assert "ESCALATED" in shown, shown
        for line in ("answer yes", "approve"):
            with pytest.raises(UsageError) as info:
                ip.run_line_magic("odin", line)
            said = str(info.value)
            assert "the roadmap stops at phase p1, escalated" in said, said
            assert "roadmap run --retry p1" in said and "--task" not in said, said
    finally:
        magics.widgets = None


def test_percent_odin_status_of_a_done_run_whose_phase_is_blocked_on_its_contract_says_so(ip, tmp_path, monkeypatch):
    """As `odin status`: the run ended done, its phase is blocked because the worker rewrote the contract while the
    run drove; `%odin status` says the phase is blocked and how to go on (`%odin roadmap run --accept-contract`)."""
    from support.roadmap_projects import phase_blocked_on_its_contract

    monkeypatch.setenv("ODIN_SANDBOX", "off")  # the worker's bash may write .odin-loop/ (docs/security.md)
    project = tmp_path / "p"
    project.mkdir()
    assert phase_blocked_on_its_contract(project).ending == "blocked"
    magics = ip.magics_manager.registry["OdinMagics"]
    ip.run_line_magic("odin", f"config project={project}")
    try:
        shown = ip.run_line_magic("odin", "status")
        for said in (repr(shown), shown._repr_html_()):
            assert "its roadmap phase p1 is blocked" in said and "%odin roadmap run --accept-contract p1" in said, said
    finally:
        magics.project = ""


def test_interrupting_percent_odin_roadmap_run_says_it_resumes_in_one_line(ip, magics, tmp_path, monkeypatch):
    """The kernel's interrupt (SIGINT) while p1's gate command runs: one line, as Ctrl-C in `odin roadmap run`
    says it (the run saved where it stopped, `%odin roadmap run` resumes it), no traceback."""
    import os

    from IPython.core.error import UsageError

    monkeypatch.setenv("ODIN_SANDBOX", "off")  # the gate's kill must see this process (no pid namespace)
    contract = tmp_path / ".odin-loop" / "contracts" / "p1.yaml"  # the gate interrupts the kernel (this process)
    contract.write_text(CONTRACT.replace('run: ["grep -q hello app.py"]', f'run: ["kill -INT {os.getpid()}; sleep 5"]'))
    with pytest.raises(UsageError) as info:
        ip.run_line_magic("odin", "roadmap run")
    said = str(info.value)
    assert said.startswith("interrupted; run ") and "is saved where it stopped: `%odin roadmap run` resumes it" in said
