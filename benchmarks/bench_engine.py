"""The engine's cost per stage transition (issue 14), in one run.

A transition is one stage execution with the dry worker (no model, no delay)
plus its gate: placeholder check, its evidence line, one fsync'd event-log record.
The run is first given a history of N entries (10, 1,000, 10,000 and 100,000
by default) to show whether the cost grows with the history's length. Prints:

* median and p90 per transition at each size, and beside it the median with the real checkpoints on
  (a shadow git repository, issue 11) in a project of 5,000 files where the stages change nothing after
  their first placeholders (the figure a user feels), bytes written per transition
  (``wchar`` of /proc/self/io: every write() the engine makes) and the peak
  memory (VmHWM) of a fresh process that resumes the run (its history built
  beforehand by another process) and drives it; then the time and peak
  memory of another fresh process that loads the run with its state.json
  missing (the state folded from the log alone, as after damage);
* the floor: one appended, fsync'd record, measured here and now;
* ``odin simulate`` per transition (a throwaway directory: no checkpoints);
* the same chain on LangGraph + SqliteSaver (``durability="sync"``), with a
  plain list reducer and with its DeltaChannel, when langgraph and
  langgraph-checkpoint-sqlite are installed (they are not dependencies);
* start-up: ``odin --help`` against a bare interpreter, ``%load_ext
  odin_magic`` in a fresh kernel against a bare cell;
* a ``1+1`` cell's latency in a real kernel, idle and while a dry run with
  the live view and charts on drives in the background: 200 cells a side in a
  fresh kernel per round, ``--rounds`` rounds (every round's ratio is printed,
  the round with the median ratio in full), after ``os.sync()`` so that the
  writeback of the runs measured before is not charged to the cells.

Project checkpoints cost a git snapshot when a stage may have changed the
tree (a tool call, a command, an artifact written) and nothing otherwise: the
table's first columns replace them with a stand-in that records nothing (the
engine's own bookkeeping), its "with ckpts" column keeps the real ones. The
kernel line uses the stand-in unless ``--git-checkpoints`` is given.

    .venv/bin/python benchmarks/bench_engine.py [--sizes 10,1000,10000,100000] [--transitions 300]
        [--rounds N] [--no-langgraph] [--no-kernel] [--git-checkpoints (the kernel line)]

The whole run takes about four minutes on a quiet machine, LangGraph's list
reducer at 100,000 entries most of it; ``--sizes 10,1000,10000`` leaves the
largest size out. Figures are noisy on a shared machine.
Prints figures; it is not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

LOOP = """\
name: bench
max_iterations: 100000000
max_repeats: 100000000
stages:
  - id: build
    produces: [notes.md]
    gate: {mode: ai, check: notes exist}
  - id: check
    produces: [report.md]
    gate: {mode: ai, check: the report is green, on_fail: build}
"""

TARGETS = ("targets: odin --help and %load_ext <= 100 ms over bare; <= 0.7 ms median on ext4; <= 1.2x growth 10 -> 100,000; <= 2 KB written per transition; "
           "<= 150 MB peak at 100,000; faster than both LangGraph variants; with ckpts <= 3 ms; odin simulate >= 1.5x faster "
           "than LangGraph; 1+1 during a run <= 1.3x idle")


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def _wchar() -> int:
    with open("/proc/self/io") as f:
        return int(next(line for line in f if line.startswith("wchar")).split()[1])


#: the project's size when the real checkpoints are measured (issue 18: a dry transition in a project of 5,000
#: files where nothing changed)
PROJECT_FILES = 5000


def write_project(project: Path, files: int = 0) -> None:
    loops = project / ".odin-loop" / "loops"
    loops.mkdir(parents=True, exist_ok=True)
    (loops / "bench.yaml").write_text(LOOP)
    for i in range(files):  # a source tree: 50 packages of 100 modules
        module = project / "src" / f"pkg{i // 100}" / f"mod{i % 100}.py"
        module.parent.mkdir(parents=True, exist_ok=True)
        module.write_text(f"def f{i}(x):\n    return x + {i}\n")


class NoCheckpoints:
    """Stands in for the shadow-git checkpoints: records nothing, changes nothing."""

    def snapshot(self, rules_from: str | None = None) -> str:
        return "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's empty tree

    def exists(self, checkpoint: str) -> bool:
        return True

    def changes(self, before: str, after: str) -> list:
        return []

    def restore(self, checkpoint: str) -> list:
        return []


def grow_history(store, run_id: str, n: int) -> None:
    """Give the run ``n`` history entries as a long run would have them: gate records appended to its log
    (written in bulk here, one fsync), then state.json brought up to date by a driver opening the run."""
    from odin_magic.runs.store import LOG_NAME, last_record

    log = store.run_dir(run_id) / LOG_NAME
    seq = last_record(log)["seq"]
    at = "2026-01-01T00:00:00"
    with open(log, "ab") as f:
        chunk = []
        for i in range(n):
            seq += 1
            stage, result = ("build", "pass") if i % 2 == 0 else ("check", "fail")
            entry = {"stage": stage, "result": result, "gate": "ai", "at": at, "evidence": f"gates/evidence.jsonl#{i * 420}"}
            changes = {"feedback": None, "status": "running", "current_stage": "check" if stage == "build" else "build"}
            if result == "fail":
                entry["reason"] = "dry run: scripted failure (check:fail)"
            chunk.append(json.dumps({"seq": seq, "at": at, "type": "gate", "stage": stage, "entry": entry, "set": changes},
                                    separators=(",", ":")))
            if len(chunk) >= 5000:
                f.write(("\n".join(chunk) + "\n").encode())
                chunk = []
        if chunk:
            f.write(("\n".join(chunk) + "\n").encode())
        f.flush()
        os.fsync(f.fileno())
    handle, _ = store.open(run_id, "bench", at)  # folds the new records in from the log's end
    handle.close()  # and saves state.json


def prepare_run(project: Path, history: int, transitions: int, files: int = 0) -> float:
    """A project with a dry run of the bench loop stopped at its start, given ``history`` entries
    (run by --prepare in a process of its own: building the history is not the run's memory)."""
    from odin_magic.engine.orchestrator import Engine
    from odin_magic.runs.state import DryOptions
    from odin_magic.runs.store import RunStore

    write_project(project, files)
    script = ["check:fail"] * (transitions + 10)  # every check fails: build -> check -> build -> ...
    engine = Engine(project)
    engine._checkpoints = NoCheckpoints()
    engine.listener = lambda e: e.kind == "run_started" and engine.request_stop()
    state = engine.start("bench", "benchmark", dry=DryOptions(gates=script))
    t0 = time.perf_counter()
    grow_history(RunStore(project), state.run_id, history)
    return time.perf_counter() - t0


def _peak_rss_mb() -> float:
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("VmHWM")).split()[1]) / 1024


def measure_engine(history: int, transitions: int, git_checkpoints: bool) -> dict:
    """One size: a fresh process (this one) resumes the prepared run and drives ``transitions`` transitions."""
    with tempfile.TemporaryDirectory(prefix="odin-bench-") as tmp:
        project = Path(tmp)
        files = PROJECT_FILES if git_checkpoints else 0
        grow_s = _child(["--prepare", f"{tmp}:{history}:{files}", "--transitions", str(transitions)])["grow_s"]
        from odin_magic.engine.orchestrator import Engine
        from odin_magic.runs.store import RunStore

        engine = Engine(project)
        if not git_checkpoints:
            engine._checkpoints = NoCheckpoints()
        store = RunStore(project)
        run_id = store.run_ids()[-1]  # the run's state is loaded by the engine alone

        stamps: list[float] = []
        wchar: list[int] = []

        def listen(event):
            if event.kind in ("gate_passed", "gate_failed"):
                stamps.append(time.perf_counter())
                wchar.append(_wchar())
                if len(stamps) > transitions:
                    engine.request_stop()

        engine.listener = listen
        stamps.append(time.perf_counter())
        wchar.append(_wchar())
        engine.run()
        gaps = [b - a for a, b in zip(stamps, stamps[1:])][1:]  # the first includes opening the run
        # bytes between the first and the last gate: periodic state.json refreshes included, the refresh
        # at the end of the drive (a stop) not: that one is per drive, not per transition
        written = (wchar[-1] - wchar[1]) / max(1, len(wchar) - 2)
        peak_mb = _peak_rss_mb()  # the drive's process: resuming, driving, the final state.json
        run_dir = store.run_dir(run_id)
        t0 = time.perf_counter()
        store.load(run_id)
        load_s = time.perf_counter() - t0
        state_kb = (run_dir / "state.json").stat().st_size / 1024
        (run_dir / "state.json").unlink()  # a fresh process rebuilds the state from the log alone
        rebuild = _child(["--rebuild", str(run_dir)])
        return {
            "history": history, "n": len(gaps), "median_ms": statistics.median(gaps) * 1000,
            "p90_ms": _pct(gaps, 0.9) * 1000, "bytes_per_transition": written,
            "peak_mb": peak_mb,
            "state_kb": state_kb, "load_ms": load_s * 1000, "grow_s": grow_s,
            "rebuild_ms": rebuild["ms"], "rebuild_peak_mb": rebuild["peak_mb"],
        }


def rebuild_from_log(run_dir: Path) -> dict:
    """Load a run whose state.json is missing (a fresh process: this one): the state is folded from the log."""
    from odin_magic.runs.store import load_run

    t0 = time.perf_counter()
    load_run(run_dir)
    return {"ms": (time.perf_counter() - t0) * 1000, "peak_mb": _peak_rss_mb()}


def fsync_floor(records: int = 400) -> dict:
    """One appended, fdatasync'd record of a gate record's size, on the file system the runs use."""
    line = (json.dumps({"seq": 1, "at": "2026-01-01T00:00:00", "type": "gate", "pad": "x" * 300}) + "\n").encode()
    sync = getattr(os, "fdatasync", os.fsync)
    with tempfile.TemporaryDirectory(prefix="odin-bench-") as tmp:
        with open(Path(tmp) / "log.jsonl", "ab", buffering=0) as f:
            gaps = []
            for _ in range(records):
                t0 = time.perf_counter()
                f.write(line)
                sync(f.fileno())
                gaps.append(time.perf_counter() - t0)
    return {"median_ms": statistics.median(gaps) * 1000, "p90_ms": _pct(gaps, 0.9) * 1000}


def measure_simulate(transitions: int) -> dict:
    """``odin simulate`` of the bench loop (build passes, check fails back to build), per transition."""
    from odin_magic.engine.orchestrator import simulate

    stamps: list[float] = []

    def listen(event):
        if event.kind in ("gate_passed", "gate_failed"):
            stamps.append(time.perf_counter())

    with tempfile.TemporaryDirectory(prefix="odin-bench-sim-") as tmp:
        write_project(Path(tmp))
        simulate(tmp, "bench", ",".join(["check:fail"] * (transitions // 2)), listener=listen)
    gaps = [b - a for a, b in zip(stamps, stamps[1:])][1:]  # the first includes the throwaway run's creation
    return {"n": len(gaps), "median_ms": statistics.median(gaps) * 1000, "p90_ms": _pct(gaps, 0.9) * 1000}


# -- LangGraph ---------------------------------------------------------------------------


def measure_langgraph(history: int, transitions: int, delta: bool) -> dict:
    """The same chain (build passes, check fails back to build) on LangGraph with SqliteSaver, durability sync."""
    import operator
    import sqlite3
    from typing import Annotated, TypedDict

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, StateGraph

    if delta:
        from langgraph.channels.delta import DeltaChannel

        def extend(state, writes):
            out = list(state or [])
            for w in writes:
                out.extend(w)
            return out

        History = Annotated[list, DeltaChannel(extend)]
    else:
        History = Annotated[list, operator.add]

    S = TypedDict("S", {"history": History, "current_stage": str, "iterations": dict,  # noqa: N806
                        "total_iterations": int, "steps": int}, total=False)

    at = "2026-01-01T00:00:00"

    def build(s: dict) -> dict:
        return {"history": [{"stage": "build", "result": "pass", "gate": "ai", "at": at}],
                "current_stage": "check", "steps": s.get("steps", 0) + 1}

    def check(s: dict) -> dict:
        n = s.get("iterations", {}).get("check", 0) + 1
        return {"history": [{"stage": "check", "result": "fail", "gate": "ai", "at": at,
                             "reason": "scripted failure"}],
                "current_stage": "build", "iterations": {"check": n},
                "total_iterations": s.get("total_iterations", 0) + 1, "steps": s.get("steps", 0) + 1}

    g = StateGraph(S)
    g.add_node("build", build)
    g.add_node("check", check)
    g.set_entry_point("build")
    g.add_edge("build", "check")
    g.add_conditional_edges("check", lambda s: END if s.get("steps", 0) >= transitions else "build")
    with tempfile.TemporaryDirectory(prefix="odin-bench-lg-") as tmp:
        conn = sqlite3.connect(str(Path(tmp) / "cp.sqlite"), check_same_thread=False)
        saver = SqliteSaver(conn)
        app = g.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "bench"}, "recursion_limit": transitions + 10}
        seed = [{"stage": "build", "result": "pass", "gate": "ai", "at": at} for _ in range(history)]
        app.update_state(config, {"history": seed, "steps": 0}, as_node="check")  # the history so far
        stamps = [time.perf_counter()]
        for _ in app.stream(None, config, durability="sync", stream_mode="updates"):
            stamps.append(time.perf_counter())
        conn.close()
    gaps = [b - a for a, b in zip(stamps, stamps[1:])][1:]
    return {"history": history, "n": len(gaps), "median_ms": statistics.median(gaps) * 1000,
            "p90_ms": _pct(gaps, 0.9) * 1000, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def langgraph_version() -> str | None:
    try:
        from importlib.metadata import version

        import langgraph.checkpoint.sqlite  # noqa: F401

        return f"langgraph {version('langgraph')}, langgraph-checkpoint-sqlite {version('langgraph-checkpoint-sqlite')}"
    except ImportError:
        return None


# -- a kernel ----------------------------------------------------------------------------------


KERNEL_STAND_IN = """\
import odin_magic.notebook.magics as _odin_magics

class _NoCheckpoints:
    def snapshot(self, rules_from=None): return "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    def exists(self, checkpoint): return True
    def changes(self, before, after): return []
    def restore(self, checkpoint): return []

_odin_magics.ENGINE_SETUP.append(lambda engine, magics: setattr(engine, "_checkpoints", _NoCheckpoints()))
"""


def kernel_latency(cells: int = 200, git_checkpoints: bool = False) -> dict:
    """A `1+1` cell's round trip in a real kernel: idle, then while a dry run with widgets and charts drives."""
    from jupyter_client.manager import start_new_kernel

    from odin_magic.runs.store import RunStore, last_record

    def run(kc, code: str) -> float:
        t0 = time.perf_counter()
        msg_id = kc.execute(code)
        while True:
            reply = kc.get_shell_msg(timeout=120)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        elapsed = time.perf_counter() - t0
        assert reply["content"]["status"] == "ok", reply["content"]
        while True:  # drain what the cell (and the live view) sent
            try:
                kc.get_iopub_msg(timeout=0)
            except Exception:
                break
        return elapsed

    with tempfile.TemporaryDirectory(prefix="odin-bench-kernel-") as tmp:
        project = Path(tmp)
        write_project(project)
        km, kc = start_new_kernel(kernel_name="python3", cwd=str(project))
        try:
            run(kc, "%load_ext odin_magic\n%config OdinMagics.charts = True")
            if not git_checkpoints:
                run(kc, KERNEL_STAND_IN)
            for _ in range(3):
                run(kc, "1+1")
            idle = [run(kc, "1+1") for _ in range(cells)]
            gates = ",".join(["check:fail"] * 100000)
            run(kc, f"%odin run bench --task bench --dry --gates {gates}")
            store = RunStore(project)
            log = None
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # until the run has made some gates
                ids = store.run_ids()
                if ids:
                    log = store.run_dir(ids[-1]) / "events.jsonl"
                    if (last_record(log) or {}).get("seq", 0) > 20:
                        break
                time.sleep(0.05)
            seq0, t0 = last_record(log)["seq"], time.perf_counter()
            busy = [run(kc, "1+1") for _ in range(cells)]
            rate = (last_record(log)["seq"] - seq0) / (time.perf_counter() - t0)
            run(kc, "%odin stop\n%odin wait --timeout 60")
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    return {"idle_ms": statistics.median(idle) * 1000, "busy_ms": statistics.median(busy) * 1000,
            "busy_p90_ms": _pct(busy, 0.9) * 1000, "records_per_s": rate}


def startup(runs: int = 10) -> dict:
    """`odin --help` against a bare interpreter, and `%load_ext odin_magic` in a fresh kernel against a bare
    cell there (issue 14: each at most 100 ms more), measured side by side."""
    from jupyter_client.manager import start_new_kernel

    odin = str(Path(sys.executable).with_name("odin"))
    bare, helped = [], []
    for _ in range(runs):
        for cmd, out in (([sys.executable, "-c", "pass"], bare), ([odin, "--help"], helped)):
            t0 = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            out.append(time.perf_counter() - t0)
    cell, ext = [], []
    for _ in range(3):
        km, kc = start_new_kernel(kernel_name="python3")
        try:
            for code, out in (("pass", cell), ("%load_ext odin_magic", ext)):
                t0 = time.perf_counter()
                reply = kc.execute_interactive(code, timeout=120, output_hook=lambda msg: None)
                out.append(time.perf_counter() - t0)
                assert reply["content"]["status"] == "ok", reply["content"]
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    ms = lambda xs: statistics.median(xs) * 1000  # noqa: E731
    return {"bare_ms": ms(bare), "help_ms": ms(helped), "cell_ms": ms(cell), "load_ext_ms": ms(ext)}


# -- the report ------------------------------------------------------------------------------


def _child(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"benchmark child {args} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _at_least_one(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of rounds, 1 or more")
    return int(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transitions", type=int, default=300)
    parser.add_argument("--sizes", default="10,1000,10000,100000")
    parser.add_argument("--no-langgraph", action="store_true")
    parser.add_argument("--no-kernel", action="store_true")
    parser.add_argument("--git-checkpoints", action="store_true",
                        help="the kernel line with the real shadow-git checkpoints (the table shows both)")
    parser.add_argument("--rounds", type=_at_least_one, default=3, metavar="N",
                        help="each size is measured N times, interleaved with the others (the machine's load "
                        "changes): the round with the median median is shown; the kernel line too, N fresh kernels")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # engine:N, simulate:0, lg:N, lgdelta:N (a child process)
    parser.add_argument("--prepare", help=argparse.SUPPRESS)  # DIR:N (a child process)
    parser.add_argument("--rebuild", help=argparse.SUPPRESS)  # RUN_DIR (a child process)
    args = parser.parse_args()
    if args.rebuild:
        print(json.dumps(rebuild_from_log(Path(args.rebuild))))
        return
    if args.prepare:
        where, n, files = args.prepare.rsplit(":", 2)
        print(json.dumps({"grow_s": prepare_run(Path(where), int(n), args.transitions, int(files))}))
        return
    if args.one:
        kind, n = args.one.split(":")
        if kind == "engine":
            print(json.dumps(measure_engine(int(n), args.transitions, args.git_checkpoints)))
        elif kind == "simulate":
            print(json.dumps(measure_simulate(args.transitions)))
        else:
            print(json.dumps(measure_langgraph(int(n), min(args.transitions, 100), delta=kind == "lgdelta")))
        return

    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"odin-magic engine, dry worker, {args.transitions} transitions per size, {args.rounds} rounds; "
          f"checkpoints replaced by a stand-in, and real (\"with ckpts\") in a project of {PROJECT_FILES:,} files")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (shared: figures are noisy)")
    floor = fsync_floor()
    print(f"floor: one appended fdatasync'd record: median {floor['median_ms']:.3f} ms, p90 {floor['p90_ms']:.3f} ms")
    runs: dict[int, list[dict]] = {n: [] for n in sizes}
    real: dict[int, list[dict]] = {n: [] for n in sizes}  # the same with the real checkpoints
    for _ in range(args.rounds):
        for n in sizes:
            runs[n].append(_child(["--one", f"engine:{n}", "--transitions", str(args.transitions)]))
            real[n].append(_child(["--one", f"engine:{n}", "--transitions", str(args.transitions), "--git-checkpoints"]))
    median = lambda xs: sorted(xs, key=lambda r: r["median_ms"])[len(xs) // 2]  # noqa: E731
    rows = [median(runs[n]) for n in sizes]
    with_ckpts = [median(real[n]) for n in sizes]
    print(f"\n{'history':>8}  {'median':>9}  {'p90':>9}  {'with ckpts':>10}  {'written':>10}  {'peak':>8}  {'state.json':>10}"
          f"  {'load':>8}  {'rebuild':>9}  {'its peak':>8}")
    for r, c in zip(rows, with_ckpts):
        print(f"{r['history']:>8}  {r['median_ms']:>7.3f}ms  {r['p90_ms']:>7.3f}ms  {c['median_ms']:>8.3f}ms  "
              f"{r['bytes_per_transition']:>8.0f} B  {r['peak_mb']:>5.0f} MB  {r['state_kb']:>8.0f}KB  {r['load_ms']:>6.1f}ms"
              f"  {r['rebuild_ms']:>7.1f}ms  {r['rebuild_peak_mb']:>5.0f} MB")
    print("with ckpts: the median with the real checkpoints (a shadow git repository) in a project of "
          f"{PROJECT_FILES:,} files; peak: VmHWM of the process that resumes the run and drives it; load: "
          "`store.load` of the run after; rebuild: a fresh process loading it with state.json missing (folded from "
          "the log alone)")
    if len(rows) > 1:
        print(f"growth {rows[0]['history']} -> {rows[-1]['history']} entries: "
              f"x{rows[-1]['median_ms'] / rows[0]['median_ms']:.2f} (median)")

    sims = sorted((_child(["--one", "simulate:0", "--transitions", str(args.transitions)]) for _ in range(args.rounds)),
                  key=lambda r: r["median_ms"])
    sim = sims[len(sims) // 2]
    print(f"\nodin simulate: median {sim['median_ms']:.3f} ms per transition, p90 {sim['p90_ms']:.3f} ms "
          f"({sim['n']} transitions; a throwaway directory, no checkpoints)")

    if not args.no_langgraph:
        version = langgraph_version()
        if version is None:
            print("\nLangGraph: skipped (langgraph and langgraph-checkpoint-sqlite are not installed; "
                  "they are not dependencies: `pip install langgraph langgraph-checkpoint-sqlite` to compare)")
        else:
            print(f"\nLangGraph + SqliteSaver, durability='sync' ({version}), "
                  f"{min(args.transitions, 100)} steps per size; odin's median beside it")
            print(f"{'history':>8}  {'list reducer':>22}  {'DeltaChannel':>22}  {'odin':>9}  {'with ckpts':>10}"
                  f"  {'simulate':>9}")
            for r, c in zip(rows, with_ckpts):
                plain = _child(["--one", f"lg:{r['history']}", "--transitions", str(args.transitions)])
                delta = _child(["--one", f"lgdelta:{r['history']}", "--transitions", str(args.transitions)])
                print(f"{r['history']:>8}  {plain['median_ms']:>8.3f}ms p90 {plain['p90_ms']:>7.3f}  "
                      f"{delta['median_ms']:>8.3f}ms p90 {delta['p90_ms']:>7.3f}  {r['median_ms']:>7.3f}ms  "
                      f"{c['median_ms']:>8.3f}ms  {sim['median_ms']:>7.3f}ms")

    if not args.no_kernel:
        st = startup()
        print(f"\nstart-up: `odin --help` {st['help_ms']:.0f} ms against a bare interpreter's {st['bare_ms']:.0f} ms "
              f"(+{st['help_ms'] - st['bare_ms']:.0f} ms); `%load_ext odin_magic` in a fresh kernel "
              f"{st['load_ext_ms']:.0f} ms against a bare cell's {st['cell_ms']:.0f} ms "
              f"(+{st['load_ext_ms'] - st['cell_ms']:.0f} ms)")
        os.sync()  # the runs measured above leave megabytes to write back: not during the cells
        rounds = [kernel_latency(git_checkpoints=args.git_checkpoints) for _ in range(args.rounds)]
        for k in rounds:
            k["ratio"] = k["busy_ms"] / k["idle_ms"]
        k = sorted(rounds, key=lambda r: r["ratio"])[len(rounds) // 2]
        print(f"\nkernel: `1+1` idle {k['idle_ms']:.1f} ms; during a dry run with the live view and charts "
              f"({'git checkpoints' if args.git_checkpoints else 'checkpoints: the stand-in'}) "
              f"{k['busy_ms']:.1f} ms (p90 {k['busy_p90_ms']:.1f} ms), x{k['ratio']:.2f}; "
              f"the run meanwhile appended {k['records_per_s']:.0f} records/s "
              f"(the median of {len(rounds)} rounds: {', '.join('x%.2f' % r['ratio'] for r in rounds)})")
    print("\n" + TARGETS)


if __name__ == "__main__":
    main()
