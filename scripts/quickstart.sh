#!/usr/bin/env bash
# Sets up the venv (see setup.sh) and runs the quickstart notebook headlessly, offline,
# with the scripted model, in a fresh copy: quickstart-run/ beside this repository
# (or $ODIN_QUICKSTART_DIR), removed and recreated on every run, so the script can be
# run again and again. It prints where the results are.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${ODIN_QUICKSTART_DIR:-$repo/quickstart-run}"
marker=".odin-quickstart"
if [ -e "$out" ] && [ ! -e "$out/$marker" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
  echo "quickstart: $out exists and was not made by this script; move it away (or set ODIN_QUICKSTART_DIR)" >&2
  exit 2
fi
source "$repo/scripts/setup.sh"
rm -rf "$out"
mkdir -p "$out"
touch "$out/$marker"
cp "$repo/example_notebooks/quickstart.ipynb" "$repo/example_notebooks/quickstart.script.yaml" "$out/"
cd "$out"
# the kernel's own stderr (its start-up warnings, and tracebacks some ipykernel releases print while shutting
# down) goes to kernel.log; it is shown here only when the notebook failed
"$ODIN_PY" - "$out" <<'PY'
import sys
from pathlib import Path

import nbformat
from nbclient.exceptions import CellExecutionError

from odin_magic.notebook.headless import HeadlessClient  # nbclient, saving only the widgets still open

out = Path(sys.argv[1])
nb = nbformat.read(out / "quickstart.ipynb", as_version=4)
log = out / "kernel.log"
with open(log, "wb") as kernel_stderr:
    try:
        HeadlessClient(nb, kernel_name="python3", timeout=600,
                       resources={"metadata": {"path": str(out)}}).execute(stderr=kernel_stderr)
        failed = None
    except CellExecutionError as exc:
        failed = str(exc).strip().splitlines()[-1] if str(exc).strip() else "a cell failed"
if failed:
    tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-20:]
    if tail:
        print("the kernel's stderr (last lines of kernel.log):", *tail, sep="\n  ", file=sys.stderr)
nbformat.write(nb, out / "quickstart.ipynb")
runs = sorted((out / ".odin-loop" / "runs").glob("*"))
print(("quickstart FAILED: " + failed) if failed else "quickstart ran (offline, scripted model).")
print(f"Results, in {out}/ (recreated on every run):")
print("  quickstart.ipynb          the notebook with its outputs")
print("  kernel.log                the kernel's own messages (start-up warnings)")
if (out / "src" / "calc.py").is_file():
    print("  src/calc.py               the code the run delivered")
if runs:
    print(f"  .odin-loop/runs/{runs[-1].name}/   the run: state.json, spec.md, plan.md, review.md, events.jsonl")
odin = Path(sys.executable).with_name("odin")
odin = str(odin) if odin.is_file() else f"{sys.executable} -m odin_magic"
print(f"The run's checklist: {odin} status --project {out}")
sys.exit(1 if failed else 0)
PY
