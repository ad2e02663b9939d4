"""Errors a user can cause and fix. Front ends print them as one clear message, never a traceback."""

from __future__ import annotations

from odin_magic.core.secrets import redact_text


class OdinError(Exception):
    """A user-facing error: ``message`` says what is wrong, ``hint`` what to do."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None):
        # an error may quote a command's output or an API answer: no secret in it
        message = redact_text(message)
        hint = redact_text(hint) if hint else hint
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message


class UsageError(OdinError):
    """Bad arguments, or a file that cannot be read."""

    exit_code = 2


class LoopNotFound(UsageError):
    pass


class LoopInvalid(OdinError):
    """A loop file has blocking errors; ``report`` holds the diagnostics."""

    def __init__(self, message: str, report=None, hint: str | None = None):
        super().__init__(message, hint)
        self.report = report


class RunRefused(OdinError):
    """The action is not allowed in the run's current state (e.g. another run is active)."""


class NoActiveRun(OdinError):
    pass


class RunLocked(OdinError):
    """Another process is driving this run."""


class ConfigError(OdinError):
    """Missing or invalid configuration (e.g. no API key)."""
