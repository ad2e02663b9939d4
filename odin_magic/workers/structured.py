"""Structured model outputs in which every reply is counted, including the ones that fail validation.

``messages.parse(output_format=M)`` validates the reply before returning it, so a
reply that does not fit ``M`` raises and takes its usage with it: the tokens were
spent, but nothing could count them. Here the request carries the same JSON
schema (the SDK's own ``transform_schema`` of the pydantic model, exactly what
``messages.parse`` sends), the reply comes back whole, and the pydantic model
validates its text afterwards: the caller counts the usage of every reply, then
decides what to do with an invalid one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Structured(Generic[M]):
    """One reply: the message (with its usage), and the validated value or why there is none."""

    reply: Any
    value: M | None
    error: ValidationError | None = None

    @property
    def refused(self) -> bool:
        return self.reply.stop_reason == "refusal"


def reply_text(message: Any) -> str:
    return "".join(b.text for b in message.content if b.type == "text")


async def ask_structured(client: Any, output: type[M], **params: Any) -> Structured[M]:
    """``client.messages.create`` with ``output``'s JSON schema as the output format; the reply is
    validated by ``output`` after it is returned. API errors propagate as the SDK raises them; a
    body that is not a message (``{}``, a list, an HTML page) is a ``ValueError``."""
    from anthropic import transform_schema  # the SDK only where a model is asked: `odin status` never loads it

    schema = transform_schema(output)
    reply = await client.messages.create(
        **params, output_config={"format": {"type": "json_schema", "schema": schema}}
    )
    if getattr(reply, "type", None) != "message" or not isinstance(getattr(reply, "content", None), list):
        raise ValueError(f"the reply is not a Messages API message (got {type(reply).__name__})")
    if reply.stop_reason == "refusal":
        return Structured(reply, None)
    try:
        return Structured(reply, output.model_validate_json(reply_text(reply)))
    except ValidationError as exc:
        return Structured(reply, None, exc)


@dataclass(frozen=True)
class Retry:
    """Why a reply gave no value, and the messages to ask again with."""

    problem: str
    messages: list[dict[str, Any]]


async def ask_until_valid(client: Any, output: type[M], request: dict[str, Any],
                          count: Callable[[Any], None], again: Callable[[Structured[M], int], Retry]) -> M | None:
    """Ask (:func:`ask_structured`, ``request`` the ``messages.create`` arguments) at most twice: ``count``
    sees every reply (its usage was spent, valid or not), ``again(answer, attempt)`` tells why a reply
    without a value failed and what to send next. The value, or None after two replies without one. API
    errors and a body that is not a message propagate as :func:`ask_structured` raises them."""
    for attempt in (1, 2):
        answer = await ask_structured(client, output, **request)
        count(answer.reply)
        if answer.value is not None:
            return answer.value
        request = {**request, "messages": again(answer, attempt).messages}
    return None


async def ask_or_fail(client: Any, output: Any, request: dict[str, Any], count: Callable[[Any], None],
                      again: Callable[[Any, int], Any], failure: tuple[Any, str, str | None, Callable[[], Any]]):
    """:func:`ask_until_valid` on ``client`` (closed afterwards), an API failure or a
    body that is not a message turned into a resumable WorkerError; ``failure``: the settings, what was asked
    (for the message), the model called (None: the settings') and the usage spent so far (the error carries it)."""
    import anthropic

    from odin_magic.workers.client import api_failure, malformed_reply

    settings, what, model, spent = failure
    try:
        return await ask_until_valid(client, output, request, count, again)
    except anthropic.AnthropicError as exc:
        err = api_failure(exc, settings, what, model)
        err.usage = spent()
        raise err from exc
    except ValueError as exc:  # a body that is not JSON, or not a message
        err = malformed_reply(exc, what)
        err.usage = spent()
        raise err from exc
    finally:
        await client.close()


@dataclass(frozen=True)
class Question:
    """One structured question outside a run: what is sent, and what a failure says (``what`` was being
    asked, and the ``hint`` of every :class:`~odin_magic.core.errors.OdinError`)."""

    system: Any
    content: str
    headers: dict[str, str]
    what: str
    hint: str


async def ask_twice(settings: Any, client_factory: Any, output: type[M], question: Question,
                    count: Callable[[Any], None] | None = None) -> M:
    """One structured question outside a run (``odin new --describe``, ``refine --model``): asked again
    once, with the reason, when the reply does not fit ``output``. Every failure is an
    :class:`~odin_magic.core.errors.OdinError` that says ``question.what`` and ``question.hint``. ``count``
    sees every reply (its usage was spent, whether it fit or not)."""
    import anthropic

    from odin_magic.core.errors import OdinError
    from odin_magic.workers.client import api_failure, default_client_factory

    what, hint = question.what, question.hint
    content = question.content

    def again(answer: Structured[M], attempt: int) -> Retry:
        nonlocal content
        why = answer.error.errors()[0]["msg"] if answer.error is not None else "it was refused"
        content += f"\n\nYour last answer did not fit the schema ({why}). Answer again."
        return Retry(why, [{"role": "user", "content": content}])

    client = (client_factory or default_client_factory(settings))()
    request = {"model": settings.model, "max_tokens": min(settings.max_tokens, 4096), "system": question.system,
               "messages": [{"role": "user", "content": content}], "extra_headers": question.headers}
    try:
        value = await ask_until_valid(client, output, request, count or (lambda reply: None), again)
    except anthropic.AnthropicError as exc:
        raise OdinError(str(api_failure(exc, settings, what)), hint=hint) from None
    except ValueError as exc:  # a body that is not a message
        raise OdinError(f"{what}: the API's reply is not a message ({exc})", hint=hint) from None
    finally:
        await client.close()
    if value is None:
        raise OdinError(f"{what}: the model gave no usable answer twice", hint=hint)
    return value
