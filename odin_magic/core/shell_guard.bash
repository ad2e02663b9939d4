# odin-magic: the bash tool's shell sources this at its start (BASH_ENV) and becomes the
# shell guard of odin_magic/core/processes.py (its own process group, dies with the driver;
# the real shell under bwrap when the sandbox is on).
unset BASH_ENV
if [ "$PPID" = "${ODIN_GUARD_DRIVER:-}" ] && [ -n "${ODIN_GUARD_PYTHON:-}" ] && [ -f "${ODIN_GUARD_SCRIPT:-}" ]; then
    shopt -s execfail  # should the guard not start, carry on as a plain shell (unless sandboxed)
    exec "$ODIN_GUARD_PYTHON" -I "$ODIN_GUARD_SCRIPT" shell-guard
    shopt -u execfail
fi
# Not the guard (not started by the driver, the guard missing, or its exec failed). With the sandbox on,
# the real shell runs only under the guard's bwrap: never carry on outside it.
if [ -n "${ODIN_GUARD_SANDBOX:-}" ]; then
    echo "odin: the bash tool's sandbox could not start" >&2
    exit 126
fi
unset ODIN_GUARD_PYTHON ODIN_GUARD_SCRIPT ODIN_GUARD_DRIVER ODIN_GUARD_RECORDS ODIN_GUARD_SANDBOX
