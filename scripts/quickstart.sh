#!/usr/bin/env bash
# Sets up the venv (see setup.sh) and runs the quickstart notebook headlessly,
# offline, with the scripted model. The executed notebook is written beside the
# original as quickstart.out.ipynb; the run's artifacts land in example_notebooks/.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$repo/scripts/setup.sh"
cd "$repo/example_notebooks"
"$ODIN_PY" - <<'PY'
import nbformat
from nbclient import NotebookClient

nb = nbformat.read("quickstart.ipynb", as_version=4)
NotebookClient(nb, kernel_name="python3", timeout=600, resources={"metadata": {"path": "."}}).execute()
nbformat.write(nb, "quickstart.out.ipynb")
print("quickstart ran: see example_notebooks/quickstart.out.ipynb and example_notebooks/.odin-loop/")
PY
