"""Extended thinking in a stage's worker turns: whether a stage thinks, and with what budget.

Every role but ``explore`` thinks by default (a stage without a role works as the
executor), with the settings' budget (``ODIN_THINKING``, default 4000 tokens; 0 or
``off`` turns it off). A stage's ``thinking`` field decides for that stage: ``false``
off, ``true`` on (with the settings' budget, or 4000 when the settings turn it off),
a number its budget. The API wants a budget of at least 1024 tokens and below the
request's ``max_tokens``: the budget is cut to leave 1024 tokens for the answer, and
thinking is off when ``max_tokens`` leaves no room for both.
"""

from __future__ import annotations

from typing import Any

from odin_magic.loop.schema import Stage
from odin_magic.workers.config import Settings

#: The roles that think by default (``None``: a stage without a role, which works as the executor).
THINKING_ROLES = frozenset({None, "planner", "executor", "critic", "reviewer"})
MIN_BUDGET = 1024  # the API's minimum budget, and what is left for the answer
DEFAULT_BUDGET = 4_000


def thinking_budget(settings: Settings, stage: Stage) -> int:
    """The thinking budget of ``stage``'s worker turns, within ``settings.max_tokens``; 0: no thinking."""
    wanted = stage.thinking
    if wanted is False:
        return 0
    if wanted is None:
        budget = settings.thinking_budget if stage.resolved_agent.role in THINKING_ROLES else 0
    elif wanted is True:
        budget = settings.thinking_budget or DEFAULT_BUDGET
    else:
        budget = wanted
    budget = min(budget, settings.max_tokens - MIN_BUDGET)
    return budget if budget >= MIN_BUDGET else 0


def thinking_request(settings: Settings, stage: Stage) -> dict[str, Any]:
    """The request arguments that turn thinking on for ``stage``'s worker turns (none when it is off)."""
    budget = thinking_budget(settings, stage)
    return {"thinking": {"type": "enabled", "budget_tokens": budget}} if budget else {}
