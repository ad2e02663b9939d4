#!/usr/bin/env bash
# Creates (or reuses) a virtual environment with odin-magic and its test extras.
# ODIN_VENV picks the venv's path (default: .venv beside this repository).
# ODIN_PY=/path/to/python uses that interpreter as it is instead (it must already have
# odin-magic and its test extras): no venv is created and pip is not run.
# Sourced by quickstart.sh and test.sh; prints nothing but pip's errors.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -n "${ODIN_PY:-}" ]; then
  if [ ! -x "$ODIN_PY" ]; then
    echo "ODIN_PY=$ODIN_PY is not an executable python; unset it to use a venv" >&2
    exit 2
  fi
else
  venv="${ODIN_VENV:-$repo/.venv}"
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
  fi
  # pip's own exit status decides (set -e); only its harmless index-location warnings are filtered out
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -e "$repo[test]" \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
  export ODIN_PY="$venv/bin/python"
fi
