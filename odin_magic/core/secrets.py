"""Secrets: the values that must never be written or sent, and their redaction.

A *secret* is the exact value of a configured secret variable:

* ``ANTHROPIC_API_KEY`` and ``ANTHROPIC_AUTH_TOKEN`` (always);
* every variable named in ``ODIN_SECRET_VARS`` (comma-separated names), for
  the project's own secrets (a database password a gate command uses, say);
* a credential registered at run time (:func:`register`): the key the SDK
  resolved for a client, which may come from a profile rather than the
  environment.

Values shorter than :data:`MIN_LENGTH` characters are not treated as secrets
(redacting ``"1"`` everywhere would destroy every file and keep nothing safe).

Every string the engine persists (the event log, state.json, gate evidence,
thread.json, interview files, tool refusals), streams to a live view, shows
as an error, or sends to the API as content passes :func:`redact` at one of a
few choke points (see ``docs/engine.md``, "Secrets"). Redaction replaces the
exact value with ``[redacted ANTHROPIC_API_KEY]``; an *encoded* form of a
secret (base64, split in pieces, reversed) is not recognised.

:func:`protect_process` additionally makes the driver non-dumpable on Linux,
so that ``/proc/<driver>/environ`` (where a child could read the key the
driver was started with) is readable by root only. It is no defence against a
child running as root (the usual case in a container): redaction is.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from typing import Any, Mapping

#: Variables whose values are always secret.
SECRET_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
#: Names further secret variables (comma-separated).
EXTRA_VARS = "ODIN_SECRET_VARS"
#: Values shorter than this are not redacted.
MIN_LENGTH = 8

_registered: dict[str, str] = {}
_lock = threading.Lock()


def register(value: str | None, name: str = "credential") -> None:
    """Treat ``value`` as a secret from now on (e.g. the key the SDK resolved for a client)."""
    if isinstance(value, str) and len(value) >= MIN_LENGTH:
        with _lock:
            _registered.setdefault(value, name)


def secret_names(env: Mapping[str, str] | None = None) -> list[str]:
    """The names of the secret variables: :data:`SECRET_VARS` plus those in ``ODIN_SECRET_VARS``."""
    env = os.environ if env is None else env
    extra = [n.strip() for n in env.get(EXTRA_VARS, "").split(",") if n.strip()]
    return [*SECRET_VARS, *(n for n in extra if n not in SECRET_VARS)]


def secret_values(env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """Every secret as ``(value, name)``, longest value first (so a secret inside another goes with it)."""
    env = os.environ if env is None else env
    found: dict[str, str] = {}
    for name in secret_names(env):
        value = env.get(name)
        if value and len(value) >= MIN_LENGTH:
            found.setdefault(value, name)
    with _lock:
        for value, name in _registered.items():
            found.setdefault(value, name)
    return sorted(found.items(), key=lambda item: -len(item[0]))


def redact_text(text: str, found: list[tuple[str, str]] | None = None) -> str:
    """``text`` with every secret's exact value replaced by ``[redacted NAME]``."""
    for value, name in secret_values() if found is None else found:
        if value in text:
            text = text.replace(value, f"[redacted {name}]")
    return text


def redact(data: Any, found: list[tuple[str, str]] | None = None) -> Any:
    """``data`` (strings, and dicts, lists and tuples of them, keys included) with every secret redacted.

    Returns ``data`` itself when nothing had to change, a redacted copy otherwise.
    """
    found = secret_values() if found is None else found
    if not found:
        return data
    return _redact(data, found)


def _redact(data: Any, found: list[tuple[str, str]]) -> Any:
    if isinstance(data, str):
        return redact_text(data, found)
    if isinstance(data, dict):
        out = {}
        changed = False
        for key, value in data.items():
            k, v = _redact(key, found), _redact(value, found)
            changed = changed or k is not key or v is not value
            out[k] = v
        return out if changed else data
    if isinstance(data, (list, tuple)):
        items = [_redact(v, found) for v in data]
        if all(a is b for a, b in zip(items, data)):
            return data
        return items if isinstance(data, list) else tuple(items)
    return data


def contains_secret(text: str) -> bool:
    return any(value in text for value, _ in secret_values())


# -- the SDK's request middleware ----------------------------------------------------------


async def redact_request(request: Any, call_next: Any) -> Any:
    """SDK client middleware: the JSON body of every request is redacted before it is sent.

    The last line of defence for "content sent to the API": the briefs, the
    tool results and the thread are redacted where they are made, this catches
    whatever else (an artifact read into a judge brief, say)."""
    body = request.json
    if body is not None:
        clean = redact(body)
        if clean is not body:
            request = request.copy(body=clean)
    return await call_next(request)


# -- the process -----------------------------------------------------------------------------

PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3
_protected = False


def _libc() -> Any | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None


def protect_process() -> bool:
    """Make this process non-dumpable (Linux): its ``/proc/PID/environ`` becomes readable by root only.

    Children do not inherit it (``execve`` resets it), so gate commands and the
    bash tool run as usual. True when the process is (now) non-dumpable.
    Root, as in most containers, can still read it: see the module docstring.
    """
    global _protected
    if _protected:
        return True
    libc = _libc()
    if libc is None:
        return False
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        return False
    _protected = True
    return True


def is_dumpable() -> bool | None:
    """Whether this process is dumpable (None where that cannot be told)."""
    libc = _libc()
    if libc is None:
        return None
    return libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1


__all__ = [
    "SECRET_VARS", "EXTRA_VARS", "MIN_LENGTH", "register", "secret_names", "secret_values", "redact",
    "redact_text", "contains_secret", "redact_request", "protect_process", "is_dumpable",
]
