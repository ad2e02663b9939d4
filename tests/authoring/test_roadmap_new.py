"""`odin roadmap new` (issue 22 item 1): a roadmap proposed by the model through a structured call (the real SDK
against the local fake API, or the scripted model), written only once the user accepts it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from odin_magic.authoring import roadmap_new as rn
from odin_magic.loop.roadmap import ROADMAP_FILE, load_roadmap
from odin_magic.workers.config import Settings
from support.fake_messages import FakeMessages

PROPOSAL = {
    "title": "Config loader",
    "milestones": [
        {"id": "M1", "title": "Read it", "phases": [
            {"id": "p1.1", "title": "Fix the typo in the default path"},
            {"id": "p1.2", "title": "Parse the config file — with includes"}]},
        {"id": "M2", "title": "Use it", "phases": [{"id": "p2.1", "title": "Load the config\nat start-up"}]},
    ],
}


@pytest.fixture
def project(tmp_path):
    (tmp_path / "spec.md").write_text("# Spec\nA config loader: parse, include, load at start-up.\n")
    return tmp_path


def script(project: Path, proposal: dict = PROPOSAL) -> Path:
    path = project / "roadmap.script.yaml"
    path.write_text(yaml.safe_dump({"answers": {"roadmap": {"new": [{"json": proposal}]}}}), encoding="utf-8")
    return path


def odin(project: Path, *argv: str, stdin: str = "", env: dict | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "ODIN_SCRIPT")}
    return subprocess.run([sys.executable, "-m", "odin_magic", *argv, "--project", str(project)], input=stdin,
                          capture_output=True, text=True, env={**base, **(env or {})}, timeout=120, cwd=project)


def test_the_model_proposes_a_roadmap_through_a_structured_call_and_is_asked_again_when_it_does_not_fit(project):
    bad = {**PROPOSAL, "milestones": [{"id": "M1", "title": "x", "phases": [{"id": "p 1", "title": "x"}]}]}
    fake = FakeMessages().reply(json.dumps(bad)).reply(json.dumps(PROPOSAL))
    source = rn.source_of(project, spec="spec.md", run=None, answers=None)
    text = rn.propose_roadmap(source, Settings(), fake.factory())
    first, second = fake.requests
    assert first.headers["x-odin-purpose"] == "roadmap" and first.headers["x-odin-stage"] == "new"
    assert {"title", "milestones"} <= set(first.body["output_config"]["format"]["schema"]["properties"])
    assert "A config loader: parse, include" in first.text
    assert "not a plain name" in second.text  # the reason it was asked again
    assert text.splitlines()[:4] == ["# Config loader", "autonomy: hitl", "", "## M1 Read it"]
    assert "- [ ] p1.2 Parse the config file - with includes" in text  # no note separator in a title
    assert "- [ ] p2.1 Load the config at start-up" in text  # one line


def test_duplicate_ids_in_a_proposal_are_asked_again_then_refused(project):
    dup = {"title": "T", "milestones": [{"id": "M1", "title": "a", "phases": [{"id": "M1", "title": "b"}]}]}
    fake = FakeMessages().reply(json.dumps(dup)).reply(json.dumps(dup))
    with pytest.raises(rn.OdinError, match="no usable answer twice"):
        rn.propose_roadmap(rn.Source("spec", "x"), Settings(), fake.factory())
    assert "used twice" in fake.requests[1].text


def test_offline_odin_roadmap_new_writes_only_what_the_user_accepts(project):
    env = {"ODIN_SCRIPT": str(script(project))}
    declined = odin(project, "roadmap", "new", "--from", "spec.md", stdin="n\n", env=env)
    assert declined.returncode == 1 and "discarded: nothing written" in declined.stdout
    assert "proposed roadmap (not written yet" in declined.stdout and "- [ ] p1.1 Fix the typo" in declined.stdout
    assert not (project / ROADMAP_FILE).exists()
    accepted = odin(project, "roadmap", "new", "--from", "spec.md", stdin="y\n", env=env)
    assert accepted.returncode == 0, accepted.stderr
    roadmap = load_roadmap(project / ROADMAP_FILE)
    assert [p.id for p in roadmap.phases()] == ["p1.1", "p1.2", "p2.1"] and roadmap.autonomy == "hitl"
    again = odin(project, "roadmap", "new", "--answers", "spec.md", "--yes", env=env)
    assert again.returncode == 2 and "already exists" in again.stderr and "--force" in again.stderr
    forced = odin(project, "roadmap", "new", "--answers", "spec.md", "--yes", "--force", env=env)
    assert forced.returncode == 0 and "wrote" in forced.stdout


def test_bad_sources_are_one_line_each(project):
    env = {"ODIN_SCRIPT": str(script(project))}
    for argv, told in ((("--from", "nope.md"), "cannot read the spec"), ((), "takes one source"),
                       (("--from", "spec.md", "--answers", "spec.md"), "takes one source"),
                       (("--from-run", "nope"), "no run 'nope'")):
        result = odin(project, "roadmap", "new", *argv, "--yes", env=env)
        assert result.returncode != 0 and told in result.stderr, (argv, result.stderr)
        assert "Traceback" not in result.stderr
    no_model = odin(project, "roadmap", "new", "--from", "spec.md", "--yes")
    assert no_model.returncode == 1 and "none is configured" in no_model.stderr
    assert not (project / ROADMAP_FILE).exists()


def test_from_run_takes_a_done_runs_spec_and_refuses_a_run_that_did_not_finish(project):
    from odin_magic.cli import main
    from odin_magic.runs.store import RunStore
    from support.nbtools import write_tiny_loop

    write_tiny_loop(project)
    assert main(["run", "tiny", "--task", "notes", "--dry", "--approve-all", "--project", str(project)]) == 0
    (done,) = RunStore(project).run_ids()
    with pytest.raises(rn.UsageError, match="has no spec.md"):
        rn.source_of(project, spec=None, run=done, answers=None)
    (RunStore(project).run_dir(done) / "spec.md").write_text("# Spec of the run\nNotes, reviewed.\n")
    source = rn.source_of(project, spec=None, run=done, answers=None)
    assert source.label == f"spec of run {done}" and "Notes, reviewed." in source.text
    assert main(["run", "tiny", "--task", "more", "--dry", "--project", str(project)]) == 0  # pauses at review
    paused = [r for r in RunStore(project).run_ids() if r != done][0]
    with pytest.raises(rn.UsageError, match="awaiting_approval: a roadmap is proposed from a finished run"):
        rn.source_of(project, spec=None, run=paused, answers=None)
