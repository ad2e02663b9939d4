"""The Anthropic SDK client as the workers use it: made with the secrets' redaction, its credentials
checked, run from sync code, its usage counted, and its failures told as resumable errors.

Everything that calls the model (the Claude worker, the structured questions, the interview model)
takes its client and its error texts from here.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any, Awaitable, Callable, TypeVar

import anthropic
import httpx2
from anthropic import AsyncAnthropic

from odin_magic.core.errors import ConfigError
from odin_magic.core.secrets import redact_request, register
from odin_magic.runs.state import Usage
from odin_magic.workers.base import WorkerError
from odin_magic.workers.config import Settings

ClientFactory = Callable[[], AsyncAnthropic]
T = TypeVar("T")


def has_credentials(client: AsyncAnthropic) -> bool:
    """Whether the SDK found a credential (key, token, profile or federation) for ``client``."""
    return bool(client.api_key or client.auth_token or getattr(client, "credentials", None))


def default_client_factory(settings: Settings) -> ClientFactory:
    def make() -> AsyncAnthropic:
        client = AsyncAnthropic(base_url=settings.base_url, max_retries=settings.max_retries, timeout=settings.timeout,
                                middleware=[redact_request])
        register(client.api_key, "ANTHROPIC_API_KEY")  # also when it came from a profile, not the environment
        register(client.auth_token, "ANTHROPIC_AUTH_TOKEN")
        return client

    return make


def require_credentials(settings: Settings) -> None:
    """Raise :class:`ConfigError` before any stage starts when no API credential is available."""
    try:
        probe = AsyncAnthropic(base_url=settings.base_url, max_retries=0)
    except anthropic.AnthropicError as exc:  # e.g. a profile that names a missing or unsafe config file
        raise ConfigError(
            f"the Anthropic credentials cannot be loaded: {exc}",
            hint="set ANTHROPIC_API_KEY in the environment, or fix the SDK profile it names",
        ) from None
    if not has_credentials(probe):
        raise ConfigError(
            "no Anthropic API key found: the Claude worker cannot call the model",
            hint="set ANTHROPIC_API_KEY in the environment (or ANTHROPIC_AUTH_TOKEN, or an SDK profile via "
            "ANTHROPIC_PROFILE); to run offline, set ODIN_SCRIPT to a scripted-model YAML, or start a dry run",
        )


def run_coroutine(factory: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion from sync code, also inside a running event loop (Jupyter)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())  # type: ignore[arg-type]
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="odin-worker") as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()  # type: ignore[arg-type]


def usage_of(message: Any) -> Usage:
    u = getattr(message, "usage", None)
    if u is None:
        return Usage()
    return Usage(
        input_tokens=u.input_tokens or 0,
        output_tokens=u.output_tokens or 0,
        cache_creation_input_tokens=getattr(u, "cache_creation_input_tokens", None) or 0,
        cache_read_input_tokens=getattr(u, "cache_read_input_tokens", None) or 0,
    )


def api_message(exc: Exception) -> str:
    """The API's own error text (``overloaded_error: Overloaded``), not the SDK's dump of the body."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error") if isinstance(body.get("error"), dict) else body
        message, kind = error.get("message"), error.get("type")
        if message:
            return f"{kind}: {message}" if kind else str(message)
    return str(getattr(exc, "message", exc))


def api_failure(exc: Exception, settings: Settings, what: str, model: str | None = None) -> WorkerError:
    """A clear, resumable WorkerError for an SDK exception (``model``: the one called, default the settings')."""
    again = "The run stays resumable: `odin run` (or %odin run) performs this step again."
    n = settings.max_retries
    retries = f"after {n} {'retry' if n == 1 else 'retries'}"
    detail = api_message(exc)
    if isinstance(exc, anthropic.AuthenticationError):
        return WorkerError(f"{what}: the API rejected the credentials (401: {detail}). Check ANTHROPIC_API_KEY. {again}")
    if isinstance(exc, anthropic.PermissionDeniedError):
        return WorkerError(f"{what}: the API key may not use this model or endpoint (403: {detail}). {again}")
    if isinstance(exc, anthropic.NotFoundError):
        return WorkerError(f"{what}: not found (404: {detail}); is the model name {model or settings.model!r} right? {again}")
    if isinstance(exc, anthropic.BadRequestError):
        hint = " Lower ODIN_CONTEXT_BUDGET so the inline thread is trimmed sooner." if "too long" in detail else ""
        return WorkerError(f"{what}: the API refused the request (400: {detail}).{hint} {again}")
    if isinstance(exc, anthropic.APIStatusError) and exc.status_code < 400:
        # an `error` event inside a reply that had begun (HTTP 200): the SDK cannot retry those
        return WorkerError(f"{what}: the API reported an error in the middle of its reply ({detail}). {again}")
    if isinstance(exc, anthropic.APIStatusError):
        return WorkerError(f"{what}: the API answered {exc.status_code} {retries} ({detail}). {again}")
    if isinstance(exc, anthropic.APITimeoutError):
        return WorkerError(f"{what}: the API timed out {retries}. {again}")
    if isinstance(exc, anthropic.APIConnectionError) and isinstance(exc.__cause__, (httpx2.RemoteProtocolError, httpx2.ReadError)):
        return WorkerError(f"{what}: the connection dropped before the reply was complete, {retries} ({exc.__cause__}). {again}")
    if isinstance(exc, anthropic.APIConnectionError):
        where = f"{settings.base_url} (ANTHROPIC_BASE_URL)" if settings.base_url else "the Anthropic API"
        return WorkerError(f"{what}: cannot reach {where} {retries} ({exc}). {again}")
    return WorkerError(f"{what}: {type(exc).__name__}: {exc}. {again}")


def malformed_reply(exc: Exception, what: str) -> WorkerError:
    """A resumable WorkerError for a reply the SDK could not read (not JSON, not server-sent events)."""
    detail = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
    return WorkerError(
        f"{what}: the API sent a malformed reply ({detail}). "
        "The run stays resumable: `odin run` (or %odin run) performs this step again."
    )


__all__ = [
    "ClientFactory", "api_failure", "api_message", "default_client_factory", "has_credentials", "malformed_reply",
    "require_credentials", "run_coroutine", "usage_of",
]
