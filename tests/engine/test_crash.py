"""kill -9 at random moments: resuming always reaches the history of an uninterrupted run."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys

import pytest

from odin_magic.engine.orchestrator import Engine
from odin_magic.runs.state import DryOptions
from odin_magic.runs.store import RunStore

GATES = "test:fail,implement:fail,test:fail,spec:fail"
STAGE_DELAY = 0.1  # the dry stages sleep a little, so kills land inside stages as well as between them
RUNS = 3
KILLS_PER_RUN = 6


def comparable(state) -> dict:
    """What must survive any crash: history (without timestamps), counters, outcome, remaining script."""
    return {
        # the time, and the evidence line's seal (its bytes carry durations): not the same in two runs
        "history": [{k: v for k, v in e.model_dump(exclude_none=True).items()
                     if k not in ("at", "evidence_sha256", "evidence_bytes")} for e in state.history],
        "iterations": state.iterations,
        "total_iterations": state.total_iterations,
        "status": state.status,
        "current_stage": state.current_stage,
        "artifacts": sorted(state.artifacts),
        "dry_gates": state.dry.gates,
    }


def odin(project, *args) -> list[str]:
    return [sys.executable, "-m", "odin_magic", *args, "--project", str(project)]


def history_of(store: RunStore) -> tuple[str, list[dict]]:
    """The project's one run: its id and its comparable history (state.json must be whole JSON)."""
    ids = store.run_ids()
    assert len(ids) == 1, f"exactly one run, never a second one: {ids}"
    json.loads((store.run_dir(ids[0]) / "state.json").read_text())  # never a half-written state.json
    return ids[0], comparable(store.load(ids[0]).state)["history"]


@pytest.mark.slow
def test_sigkill_at_random_moments_then_resume(tmp_path, write_loop):
    """Each run is started, then killed with SIGKILL a few times, each time once the driver has
    printed a random number (1-4) of event lines (waiting on its output, never on a clock), and
    resumed with a plain `odin run`. Every kill must leave a whole state.json and a history that is a
    prefix of the uninterrupted run's; every resume continues the same run from where the kill left
    it; the run ends exactly as the uninterrupted one did."""
    rng = random.Random(int(os.environ.get("ODIN_CRASH_SEED", "3")))
    reference_dir = tmp_path / "reference"
    write_loop(into=reference_dir)
    reference = Engine(reference_dir).start(
        "demo", "t", dry=DryOptions(gates=GATES.split(","), approve_all=True))
    assert reference.status == "done" and reference.total_iterations == 4
    expected = comparable(reference)

    kills = 0
    for run in range(RUNS):
        project = tmp_path / f"p{run}"
        write_loop(into=project)
        store = RunStore(project)
        start = odin(project, "run", "demo", "--task", "t", "--dry", "--approve-all", "--gates", GATES,
                     "--stage-delay", str(STAGE_DELAY))
        resume = odin(project, "run")
        before: list[dict] = []
        for attempt in range(KILLS_PER_RUN + 1):
            last = attempt == KILLS_PER_RUN  # the last attempt runs to the end
            proc = subprocess.Popen(start if attempt == 0 else resume, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
            kill_after = None if last else rng.randint(1, 4)
            lines = 0
            for _ in proc.stdout:  # each line is an event the driver has recorded
                lines += 1
                if lines == kill_after:
                    proc.send_signal(signal.SIGKILL)
                    break
            proc.wait()
            killed = proc.returncode == -signal.SIGKILL
            err = proc.stderr.read()
            proc.stdout.close()
            proc.stderr.close()
            assert killed or proc.returncode == 0, f"run {run} attempt {attempt}: exit {proc.returncode}\n{err}"
            assert "Traceback" not in err, err
            run_id, after = history_of(store)
            # what this process did: it continued the same run from where the last one stopped,
            # and whatever it recorded is what the uninterrupted run recorded at that point
            assert after[: len(before)] == before, f"run {run} attempt {attempt} rewrote history"
            assert after == expected["history"][: len(after)], f"run {run} attempt {attempt} diverged"
            before = after
            if killed:
                kills += 1
                continue
            final = store.load(run_id).state
            assert comparable(final) == expected, f"run {run} in {project} ended differently"
            break
    print(f"{kills} kills over {RUNS} runs")
    assert kills > 0  # a kill needs only that a driver printed an event line before it finished


@pytest.mark.slow
def test_a_kill_between_a_transition_and_the_next_refresh_shows_the_true_state_at_once(project, write_loop):
    """state.json is refreshed at pauses, ends and stops, not after every transition: a driver killed
    in between leaves it behind the log, and `odin status` / `odin runs` still show the log's state, quietly."""
    from odin_magic.runs.store import fold, read_log

    write_loop()
    driver = subprocess.Popen(
        odin(project, "run", "demo", "--task", "t", "--dry", "--approve-all", "--stage-delay", "1"),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        for line in driver.stdout:  # wait on the event: spec was approved, implement's 1 s stage begins
            if line.split()[-1:] == ["implement"]:  # "▶ implement" (its gate's records may refresh state.json)
                break
        else:
            pytest.fail("the run ended before implement began")
        driver.send_signal(signal.SIGKILL)
    finally:
        driver.kill()
        driver.wait()
        driver.stdout.close()

    store = RunStore(project)
    [run_id] = store.run_ids()
    run_dir = store.run_dir(run_id)
    records, _, _ = read_log(run_dir / "events.jsonl")
    truth = fold(records).to_json()
    on_disk = (run_dir / "state.json").read_bytes()
    assert json.loads(on_disk)["log_seq"] < records[-1]["seq"], "the kill left state.json behind the log"
    assert [e["stage"] for e in truth["history"]] == ["spec", "spec"] and truth["current_stage"] == "implement"

    status = subprocess.run(odin(project, "status", "--json"), capture_output=True, text=True, check=True)
    assert json.loads(status.stdout) == truth and "note:" not in status.stderr
    runs = subprocess.run(odin(project, "runs", "--json"), capture_output=True, text=True, check=True)
    assert json.loads(runs.stdout) == [truth] and "note:" not in runs.stderr
    assert (run_dir / "state.json").read_bytes() == on_disk  # readers write nothing

    subprocess.run(odin(project, "run"), check=True, stdout=subprocess.DEVNULL)  # and it resumes
    final = store.load(run_id).state
    assert final.status == "done" and [e.stage for e in final.history] == ["spec", "spec", "implement", "test"]
