"""The live view's metric chart costs the same at each gate decision however long the run: it reads only the
evidence line(s) of the new history entries (counted by the evidence reader itself), and its series is the
one the full read (``%odin status``, the report) gives. A line changed after it was written is skipped by
both. Driven through the real engine, Claude worker and SDK against the offline scripted model."""

from __future__ import annotations

from odin_magic.notebook.actions import NotebookRunner
from odin_magic.runs.evidence import EvidenceReader
from odin_magic.runs.metric_history import read_series

from support.metric_runs import make_project, tune_loop, tune_script
from support.scripted_runs import scripted_engine

EVALUATIONS = 8


def _driven_with_live_chart(project, write_loop):
    """A run of EVALUATIONS failing metric gates, the live view's chart source called at each gate decision;
    (engine, state, source, evidence lines read per decision, whether each call drew)."""
    make_project(project, speed="200")
    loop = tune_loop("repeat: 1, target: 100", max_iterations=EVALUATIONS - 1)
    write_loop(loop.replace("memory: false", f"memory: false\n    max_repeats: {EVALUATIONS + 1}"))
    reads: list[int] = []
    drew: list[bool] = []

    def listener(event) -> None:
        if event.kind in ("gate_passed", "gate_failed"):
            state = engine.status(event.run_id)
            before = EvidenceReader.total_read
            drew.append(source(state) is not None)
            reads.append(EvidenceReader.total_read - before)

    engine, _ = scripted_engine(project, tune_script(*(str(199 - k) for k in range(EVALUATIONS))), listener)
    runner = NotebookRunner(project, lambda d, listener: engine)
    source = runner.metric_chart_source({"tune"})
    state = engine.start("tune", "make it faster")
    return engine, state, source, reads, drew


def test_each_gate_decision_reads_only_its_new_evidence_and_the_series_is_the_full_reads(project, write_loop):
    engine, state, source, reads, drew = _driven_with_live_chart(project, write_loop)
    assert len(state.history) == EVALUATIONS and len(reads) == EVALUATIONS
    assert reads == [1] * EVALUATIONS  # constant: not the 1, 2, 3 ... of a full read at each decision
    assert drew == [True] * EVALUATIONS  # each decision gave the series a point: drawn again
    full = read_series(engine.run_dir(state.run_id), state.history, {"tune"})
    assert source.cursor.series == full and len(full[0].points) == EVALUATIONS
    before = EvidenceReader.total_read
    assert source(state) is None and EvidenceReader.total_read == before  # nothing new: nothing read, nor drawn


def test_a_line_changed_before_it_is_read_is_skipped_as_the_full_read_skips_it(project, write_loop):
    engine, state, _, _, _ = _driven_with_live_chart(project, write_loop)
    run_dir = engine.run_dir(state.run_id)
    entry = state.history[3]
    name, _, offset = entry.evidence.partition("#")
    raw = bytearray((run_dir / name).read_bytes())
    at = raw.index(b'"figure":', int(offset)) + len(b'"figure":')
    raw[at] = ord("9") if raw[at] != ord("9") else ord("8")  # one digit of the figure: same length, other hash
    (run_dir / name).write_bytes(bytes(raw))
    fresh = NotebookRunner(engine.project_dir, lambda d, listener: engine).metric_chart_source({"tune"})
    assert fresh(state) is not None
    full = read_series(run_dir, state.history, {"tune"})
    assert fresh.cursor.series == full
    assert [p.entry for p in full[0].points] == [n for n in range(1, EVALUATIONS + 1) if n != 4]
