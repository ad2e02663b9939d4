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

A text that was *cut* may hold a piece of a secret where it was cut. Where odin
cuts a text, it should redact first; as a safety net, :func:`redact` also
redacts every piece of :data:`FRAGMENT_LENGTH` or more characters of a secret
beside a cut mark (:data:`CUT_MARK`: the SDK's ``[output truncated]`` or ``... [N lines truncated]``, odin's
``…``). Where someone else cut a text (the SDK's bash tool keeps the tail of a
long output, its grep the head), :func:`redact_cut` also redacts such a piece
at the start or the end of the text.

:func:`protect_process` additionally makes the driver non-dumpable on Linux,
so that ``/proc/<driver>/environ`` (where a child could read the key the
driver was started with) is readable by root only. It is no defence against a
child running as root (the usual case in a container): redaction is.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import sys
import threading
from typing import Any, Mapping

#: Variables whose values are always secret.
SECRET_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
#: Names further secret variables (comma-separated).
EXTRA_VARS = "ODIN_SECRET_VARS"
#: Values shorter than this are not redacted.
MIN_LENGTH = 8
#: A piece of a secret this long or longer at a cut edge is redacted (:func:`redact_cut`).
FRAGMENT_LENGTH = 16
#: Where a text was cut: the SDK's ``[output truncated]`` (before the tail bash keeps, anthropic < 2.16),
#: ``... [N lines truncated]`` (after the head bash keeps, anthropic 2.16) and ``[output truncated at N bytes]``
#: (after the head grep keeps), the judge context's ``[… N more characters cut``, and odin's ``…``.
CUT_MARK = re.compile(r"\[output truncated(?: at \d+ bytes)?\]|\.\.\. \[\d+ lines truncated\]"
                      r"|\[… \d+ more characters cut|…")

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
    """``text`` with every secret's exact value replaced by ``[redacted NAME]``, and every piece of one of
    :data:`FRAGMENT_LENGTH` or more characters beside a :data:`CUT_MARK`."""
    found = secret_values() if found is None else found
    for value, name in found:
        if value in text:
            text = text.replace(value, f"[redacted {name}]")
    if found and ("…" in text or "[output truncated" in text or "lines truncated]" in text):
        text = _redact_edges(text, found, ends=False)
    return text


def redact(data: Any, found: list[tuple[str, str]] | None = None) -> Any:
    """``data`` (strings, and dicts, lists and tuples of them, keys included) with every secret redacted.

    Returns ``data`` itself when nothing had to change, a redacted copy otherwise.
    """
    found = secret_values() if found is None else found
    if not found:
        return data
    return _redact(data, found)


def _redact(data: Any, found: list[tuple[str, str]], text: Any = redact_text) -> Any:
    if isinstance(data, str):
        return text(data, found)
    if isinstance(data, dict):
        out = {}
        changed = False
        for key, value in data.items():
            k, v = _redact(key, found, text), _redact(value, found, text)
            changed = changed or k is not key or v is not value
            out[k] = v
        return out if changed else data
    if isinstance(data, (list, tuple)):
        items = [_redact(v, found, text) for v in data]
        if all(a is b for a, b in zip(items, data)):
            return data
        return items if isinstance(data, list) else tuple(items)
    return data


def redact_cut(data: Any, found: list[tuple[str, str]] | None = None) -> Any:
    """``data`` as :func:`redact` gives it, and in each of its strings every piece of a secret of
    :data:`FRAGMENT_LENGTH` or more characters at a cut edge also redacted: a secret's end at the start of the
    string or just after a :data:`CUT_MARK`, its beginning at the end of the string or just before one."""
    found = secret_values() if found is None else found
    if not found:
        return data
    return _redact(data, found, lambda text, f: _redact_edges(redact_text(text, f), f, ends=True))


def _redact_edges(text: str, found: list[tuple[str, str]], ends: bool) -> str:
    """``text`` with every piece of a secret beside a cut mark, and at its ``ends``, redacted."""
    edges = [(0, True), (len(text), False)] if ends else []  # (where, whether a secret's end may start there)
    for mark in CUT_MARK.finditer(text):
        before, after = mark.start(), mark.end()
        while before > 0 and text[before - 1].isspace():
            before -= 1
        while after < len(text) and text[after].isspace():
            after += 1
        edges += [(before, False), (after, True)]
    pieces = []
    for where, starts in edges:
        n, name = max(((_piece(text, where, value, starts), name) for value, name in found), default=(0, ""))
        if n:
            pieces.append((where, where + n, name) if starts else (where - n, where, name))
    kept: list[tuple[int, int, str]] = []
    for piece in sorted(pieces):
        if not kept or piece[0] >= kept[-1][1]:  # the first of two that overlap
            kept.append(piece)
    for start, end, name in reversed(kept):  # from the end, so that the places hold
        text = text[:start] + f"[redacted {name}]" + text[end:]
    return text


def _piece(text: str, where: int, value: str, starts: bool) -> int:
    """The length of the longest piece (at least :data:`FRAGMENT_LENGTH`) of ``value`` at ``where`` in
    ``text``: its end starting there (``starts``), or its beginning ending there."""
    least = text[where:where + FRAGMENT_LENGTH] if starts else text[max(0, where - FRAGMENT_LENGTH):where]
    if len(least) < FRAGMENT_LENGTH or least not in value:  # the usual case, found fast
        return 0
    for n in range(len(value), FRAGMENT_LENGTH - 1, -1):
        if text.startswith(value[-n:], where) if starts else text.endswith(value[:n], 0, where):
            return n
    return 0


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
    "redact_text", "redact_cut", "FRAGMENT_LENGTH", "CUT_MARK", "contains_secret", "redact_request",
    "protect_process", "is_dumpable",
]
