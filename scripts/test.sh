#!/usr/bin/env bash
# Sets up the venv (see setup.sh) and runs the whole test suite with pytest.
# Browser tests need Debian's chromium at /usr/bin/chromium: as root this script
# installs it with apt when it is missing; the same for git, which checkpoints
# (odin_magic/checkpoints.py) need. Extra arguments go to pytest.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$repo/scripts/setup.sh"
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing chromium for the browser tests (apt)"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
if ! command -v git >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing git for the checkpoints (apt)"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq git >/dev/null
fi
cd "$repo"
exec "$ODIN_PY" -m pytest "$@"
