"""kill -9 at random moments: resuming always reaches the history of an uninterrupted run."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from odin_magic.engine import Engine
from odin_magic.state import DryOptions
from odin_magic.store import RunStore

GATES = "test:fail,implement:fail,test:fail,spec:fail"
STAGE_DELAY = 0.02
TIME_BUDGET_S = 30.0
MIN_KILLS = 24
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


@pytest.mark.slow
def test_sigkill_at_random_moments_then_resume(tmp_path, write_loop):
    rng = random.Random(int(os.environ.get("ODIN_CRASH_SEED", "3")))
    reference_dir = tmp_path / "reference"
    write_loop(into=reference_dir)
    reference = Engine(reference_dir).start(
        "demo", "t", dry=DryOptions(gates=GATES.split(","), approve_all=True))
    assert reference.status == "done" and reference.total_iterations == 4
    expected = comparable(reference)


    kills = runs = 0
    deadline = time.monotonic() + TIME_BUDGET_S
    while kills < MIN_KILLS or time.monotonic() < deadline - TIME_BUDGET_S / 2:
        if time.monotonic() > deadline:
            break
        project = tmp_path / f"p{runs}"
        write_loop(into=project)
        store = RunStore(project)
        start = odin(project, "run", "demo", "--task", "t", "--dry", "--approve-all", "--gates", GATES,
                     "--stage-delay", str(STAGE_DELAY))
        resume = odin(project, "run")
        for attempt in range(KILLS_PER_RUN + 1):
            ids = store.run_ids()
            if ids and not store.load(ids[-1]).state.active:
                break
            proc = subprocess.Popen(start if not ids else resume, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            try:
                # the last attempt runs to the end; the others are killed at a random moment
                proc.wait(timeout=None if attempt == KILLS_PER_RUN else rng.uniform(0.15, 1.0))
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                kills += 1
            else:
                err = proc.stderr.read().decode()
                assert proc.returncode == 0, err
            proc.stderr.close()
            for run_id in store.run_ids():  # never a half-written state.json
                state_file = store.run_dir(run_id) / "state.json"
                if state_file.exists():
                    json.loads(state_file.read_text())
        ids = store.run_ids()
        if not ids or store.load(ids[-1]).state.active:  # finish without interruption
            subprocess.run(resume if ids else start, check=True, stdout=subprocess.DEVNULL)
        ids = store.run_ids()
        assert len(ids) == 1, f"exactly one run was created in {project}: {ids}"
        final = store.load(ids[0]).state
        assert comparable(final) == expected, f"run {runs} in {project} diverged after kills"
        runs += 1
    print(f"{kills} kills over {runs} runs")
    assert kills >= MIN_KILLS, f"only {kills} kills in {TIME_BUDGET_S} s"
