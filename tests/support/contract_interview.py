"""A roadmap phase whose contract the model cannot settle, and the scripted interview that settles it
(the contract-interview tests of the engine, the terminal and the notebook share it)."""

from __future__ import annotations

from odin_magic.loop.roadmap import ROADMAP_FILE

ROADMAP = "# Greeter\n\nautonomy: hitl\n\n## M1 Basics\n\n- [ ] p1 Greet people\n"
CHECK = "python -m check_greet"
QUESTIONS = ["Which greeting: hello or hi?", "Which file holds it?"]
PROPOSAL = {"risk": "tiny-fix", "impact": "internal", "scope": ["app.py"],
            "criteria": [{"id": "AC1", "priority": "P0", "text": "Given the app, when greet is called, then it "
                          "says hello.", "verify": CHECK}],
            "gate_commands": [CHECK], "max_iterations": 2}
UNSETTLED = {**PROPOSAL, "questions": QUESTIONS}

#: The phase's interview (the scripted interview format, docs/interview.md): the topology, then three rounds.
INTERVIEW = {"phases": {"p1": {
    "goal": "Greet people with the word the team uses",
    "components": ["Greeting"],
    "findings": ["greet lives in app.py (app.py:1)"],
    "rounds": {
        "1": {"question": "Which word does greet return?",
              "assessment": {"scores": {"Greeting": {"goal": .9, "constraints": .9, "criteria": .9, "context": .9}},
                             "criteria": {"Greeting": ["Given the app, when greet is called, then it says hello"]}}},
        "default": {"question": "Anything else greet must not do?",
                    "assessment": {"scores": {"Greeting": {"goal": .95, "constraints": .95, "criteria": .95,
                                                           "context": .95}}}},
    }}}}
ANSWERS = ["confirm", "greet returns exactly the word hello", "only app.py changes", "nothing else"]

RUN = """
stages:
  apply:
    - tools:
        - write: {file_path: app.py, content: "def greet():\\n    return 'hello'\\n"}
        - write: {file_path: "{run_dir}/change-notes.md", content: "greet says hello"}
    - text: done
judge:
  apply: {status: DONE, passed: true, reasons: [greets]}
default_verdict: {passed: true, reasons: [scripted]}
"""


def make_project(project) -> None:
    (project / ".odin-loop").mkdir()
    (project / ROADMAP_FILE).write_text(ROADMAP)
    (project / "app.py").write_text("def greet():\n    return 'helo'\n")
    (project / "check_greet.py").write_text("import app\n\nassert app.greet() == 'hello', app.greet()\n")


def roadmap_script() -> dict:
    """The roadmap's own script: the run, both contract proposals in order, the phase's interview."""
    import yaml

    script = yaml.safe_load(RUN)
    script["answers"] = {"contract": {"p1": [{"json": UNSETTLED}, {"json": PROPOSAL}]}}
    script["interview"] = INTERVIEW
    return script
