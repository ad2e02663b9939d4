# odin-magic: the bash tool's shell sources this at its start (BASH_ENV) and becomes the
# shell guard of odin_magic/core/processes.py (its own process group, dies with the driver).
unset BASH_ENV
if [ "$PPID" = "${ODIN_GUARD_DRIVER:-}" ] && [ -n "${ODIN_GUARD_PYTHON:-}" ] && [ -f "${ODIN_GUARD_SCRIPT:-}" ]; then
    shopt -s execfail  # should the guard not start, carry on as a plain shell
    exec "$ODIN_GUARD_PYTHON" -I "$ODIN_GUARD_SCRIPT" shell-guard
    shopt -u execfail
fi
unset ODIN_GUARD_PYTHON ODIN_GUARD_SCRIPT ODIN_GUARD_DRIVER ODIN_GUARD_RECORDS
