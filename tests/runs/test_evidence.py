"""Gate evidence: one line per evaluation in gates/evidence.jsonl, named by offset (odin_magic/runs/evidence.py)."""

from __future__ import annotations

import hashlib
import json

import pytest

from odin_magic.runs import evidence
from odin_magic.engine.orchestrator import Engine
from odin_magic.runs.evidence import EVIDENCE_LOG, EvidenceLog
from odin_magic.runs.state import DryOptions


def test_each_evaluation_is_a_line_named_by_its_offset(tmp_path):
    log = EvidenceLog(tmp_path)
    first = log.append({"stage": "a", "evaluation": 1})
    second = log.append({"stage": "b", "evaluation": 2, "reason": "é"})
    log.close()
    raw = (tmp_path / EVIDENCE_LOG).read_bytes()
    lines = raw.splitlines(keepends=True)
    assert first.path == f"{EVIDENCE_LOG}#0" and second.path == f"{EVIDENCE_LOG}#{len(lines[0])}"
    assert second.sha256 == hashlib.sha256(lines[1]).hexdigest()
    assert evidence.read(tmp_path, second.path) == {"stage": "b", "evaluation": 2, "reason": "é"}
    assert evidence.read(tmp_path, first.path)["stage"] == "a"


def test_a_reopened_log_continues_after_what_is_there_and_ends_a_torn_line(tmp_path):
    log = EvidenceLog(tmp_path)
    log.append({"n": 1})
    log.close()
    with open(tmp_path / EVIDENCE_LOG, "ab") as f:
        f.write(b'{"n": 2, "torn')  # a crash in the middle of an append
    again = EvidenceLog(tmp_path)
    ref = again.append({"n": 3})
    again.close()
    assert evidence.read(tmp_path, ref.path) == {"n": 3}
    lines = (tmp_path / EVIDENCE_LOG).read_bytes().splitlines()
    assert json.loads(lines[0]) == {"n": 1} and json.loads(lines[2]) == {"n": 3}


def test_older_runs_name_a_file_of_its_own(tmp_path):
    (tmp_path / "gates").mkdir()
    (tmp_path / "gates" / "0001-build.json").write_text(json.dumps({"stage": "build", "passed": True}, indent=1))
    assert evidence.read(tmp_path, "gates/0001-build.json") == {"stage": "build", "passed": True}


@pytest.mark.parametrize("ref", ["state.json", "gates/../state.json", "gates/evidence.jsonl#x", "/etc/passwd"])
def test_a_reference_that_is_not_evidence_is_refused(tmp_path, ref):
    (tmp_path / "state.json").write_text("{}")
    (tmp_path / "gates").mkdir()
    (tmp_path / EVIDENCE_LOG).write_text('{"n": 1}\n')
    with pytest.raises(ValueError):
        evidence.read(tmp_path, ref)


def test_an_offset_without_a_whole_line_is_not_evidence(tmp_path):
    (tmp_path / "gates").mkdir()
    (tmp_path / EVIDENCE_LOG).write_bytes(b'{"n": 1}\n{"n": 2')
    with pytest.raises(ValueError):
        evidence.read(tmp_path, f"{EVIDENCE_LOG}#9")


def test_a_secret_never_reaches_the_evidence(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-evidence-secret-value")
    log = EvidenceLog(tmp_path)
    ref = log.append({"reason": "the key is sk-ant-evidence-secret-value"})
    log.close()
    assert b"sk-ant-evidence-secret-value" not in (tmp_path / EVIDENCE_LOG).read_bytes()
    assert "redacted" in evidence.read(tmp_path, ref.path)["reason"]


def test_a_run_writes_no_file_per_evaluation(project, write_loop):
    """Creating a file per gate costs ext4 a journal commit next to the log's fsync: a run appends to one."""
    write_loop()
    engine = Engine(project)
    state = engine.start("demo", "t", dry=DryOptions(gates=["test:fail"], approve_all=True))
    run_dir = engine.run_dir(state.run_id)
    assert sorted(p.name for p in (run_dir / "gates").iterdir()) == ["evidence.jsonl"]
    refs = [e.evidence for e in state.history if e.evidence]
    assert len(refs) == len(set(refs)) >= 3
    assert [evidence.read(run_dir, r)["stage"] for r in refs] == [e.stage for e in state.history if e.evidence]


def test_the_driver_cuts_off_lines_no_gate_record_names(tmp_path):
    log = EvidenceLog(tmp_path)
    named = log.append({"n": 1}).path
    log.append({"n": "evaluated, then a crash before its record"})
    log.close()
    with open(tmp_path / EVIDENCE_LOG, "ab") as f:
        f.write(b'{"n": "torn')
    again = EvidenceLog(tmp_path, named, cut_unnamed=True)
    ref = again.append({"n": 2})
    again.close()
    assert ref.path == f"{EVIDENCE_LOG}#{len(json.dumps({'n': 1}, separators=(',', ':'))) + 1}"
    assert [json.loads(line) for line in (tmp_path / EVIDENCE_LOG).read_bytes().splitlines()] == [{"n": 1}, {"n": 2}]
    fresh = EvidenceLog(tmp_path, None, cut_unnamed=True)  # no record names any line: all of it goes
    assert fresh.append({"n": 3}).path == f"{EVIDENCE_LOG}#0"
    fresh.close()


def test_a_crash_between_an_evaluation_and_its_record_resumes_to_the_same_references(tmp_path, write_loop):
    """The re-run evaluation's evidence takes the place it has in a run that never crashed."""
    script = ["test:fail"]

    def drive(crash: bool):
        project = tmp_path / ("crashed" if crash else "reference")
        project.mkdir()
        write_loop(into=project)
        engine = Engine(project)
        state = engine.start("demo", "t", dry=DryOptions(gates=script))  # pauses at the first ai+human gate
        assert state.status == "awaiting_approval"
        run_dir = engine.run_dir(state.run_id)
        if crash:  # what a kill -9 after the next evaluation, before its record, leaves behind
            with open(run_dir / EVIDENCE_LOG, "ab") as f:
                f.write(b'{"stage":"implement","evaluation":99,"passed":true}\n{"stage":"impl')
        while state.active:
            state = engine.approve()
        return state, run_dir

    reference, _ = drive(crash=False)
    state, run_dir = drive(crash=True)
    assert state.status == reference.status == "done"
    assert [e.evidence for e in state.history] == [e.evidence for e in reference.history]
    assert b'"evaluation":99' not in (run_dir / EVIDENCE_LOG).read_bytes()
    assert all(evidence.read(run_dir, e.evidence)["stage"] == e.stage for e in state.history if e.evidence)
