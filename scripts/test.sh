#!/usr/bin/env bash
# Sets up the venv (see setup.sh) and runs the whole test suite with pytest.
#
# What it changes on the system:
#   - the venv (.venv beside this repository, or $ODIN_VENV): created if missing, and
#     odin-magic with its test extras pip-installed into it (editable);
#   - as root, when Debian's chromium is missing (/usr/bin/chromium, needed by the one browser
#     test), `apt-get update` and `apt-get install chromium` with its dependencies, system-wide;
#   - as root, when git is missing (the checkpoints, odin_magic/runs/checkpoints.py, need it),
#     `apt-get install git` the same way;
#   - as root, when bwrap is missing (the sandbox of a stage's commands, odin_magic/core/sandbox.py,
#     and its tests need it), `apt-get install bubblewrap` the same way.
#   Not as root, nothing outside the venv: the browser test is then skipped.
#
# `bash scripts/test.sh --no-browser` leaves the browser out: no chromium, and pytest -m "not browser".
# Other arguments go to pytest (`-m "not browser"` given directly also skips the chromium step).
# The suite runs on every core (pytest-xdist, --dist worksteal: an idle worker takes tests queued for a
# busy one), with one worker more than the cores this process may use: about a quarter of the suite's
# time is spent waiting on kernels and child processes. `-n 0` among the arguments runs it in one process
# (it comes last, so it wins); ODIN_TEST_WORKERS=N sets the number of workers.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
chromium="${ODIN_CHROMIUM:-/usr/bin/chromium}"
browser=yes
workers="${ODIN_TEST_WORKERS:-$(( $(nproc 2>/dev/null || echo 1) + 1 ))}"
args=(-n "$workers" --dist worksteal)
for arg in "$@"; do
  if [ "$arg" = "--no-browser" ]; then
    browser=no
    args+=(-m "not browser")
  else
    [ "$arg" = "not browser" ] && browser=no
    args+=("$arg")
  fi
done
source "$repo/scripts/setup.sh"
if [ "$browser" = yes ] && [ ! -x "$chromium" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing chromium for the browser test (apt-get, system-wide; --no-browser skips this)"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
if ! command -v git >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing git for the checkpoints (apt)"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq git >/dev/null
fi
if ! command -v bwrap >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing bubblewrap for the sandbox (apt)"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null
fi
cd "$repo"
exec "$ODIN_PY" -m pytest ${args[@]+"${args[@]}"}
