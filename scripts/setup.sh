#!/usr/bin/env bash
# Creates (or reuses) a virtual environment with odin-magic and its test extras.
# ODIN_VENV picks the venv's path (default: .venv beside this repository).
# ODIN_CONSTRAINTS=path installs with that pip constraints file (`pip install -c path`), e.g.
# ci/constraints-oldest.txt, the oldest supported version of every dependency: pip then installs
# (or moves an existing venv's packages to) exactly those versions, so give it a venv of its own:
#   ODIN_VENV=/tmp/oldest ODIN_CONSTRAINTS=ci/constraints-oldest.txt bash scripts/test.sh
# ODIN_PY=/path/to/python uses that interpreter as it is instead (it must already have
# odin-magic and its test extras): no venv is created and pip is not run (nor ODIN_CONSTRAINTS used).
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
  constraints=()
  if [ -n "${ODIN_CONSTRAINTS:-}" ]; then
    if [ ! -f "$ODIN_CONSTRAINTS" ]; then
      echo "ODIN_CONSTRAINTS=$ODIN_CONSTRAINTS is not a file" >&2
      exit 2
    fi
    constraints=(-c "$ODIN_CONSTRAINTS")
  fi
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
  fi
  # pip's own exit status decides (set -e); only its harmless index-location warnings are filtered out
  "$venv/bin/python" -m pip install -q --disable-pip-version-check ${constraints[@]+"${constraints[@]}"} -e "$repo[test]" \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
  export ODIN_PY="$venv/bin/python"
fi
