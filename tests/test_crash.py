"""kill -9 at random moments: resuming always reaches the history of an uninterrupted run."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys

import pytest

from odin_magic.engine import Engine
from odin_magic.state import DryOptions
from odin_magic.store import RunStore

GATES = "test:fail,implement:fail,test:fail,spec:fail"
STAGE_DELAY = 0.1  # the dry stages sleep a little, so kills land inside stages as well as between them
RUNS = 3
KILLS_PER_RUN = 6


def comparable(state) -> dict:
    """What must survive any crash: history (without timestamps), counters, outcome, remaining script."""
    return {
        "history": [{k: v for k, v in e.model_dump(exclude_none=True).items() if k != "at"} for e in state.history],
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
