"""Worker settings: which model, how many tokens, where the API lives, what a token costs.

Settings come from arguments first, then the environment:

=====================  =======================================================
``ODIN_MODEL``         model name (default :data:`DEFAULT_MODEL`)
``ODIN_JUDGE_MODEL``   model for gate judgments (default: the same model)
``ODIN_MAX_TOKENS``    max output tokens per model call
``ANTHROPIC_BASE_URL`` API base URL (the SDK reads it too)
``ODIN_PRICES``        price overrides: inline JSON, or a path to a JSON/YAML file,
                       ``{"<model or family>": {"input": 3, "output": 15, ...}}``
``ODIN_SCRIPT``        path of a scripted-model YAML: run offline, no API key needed
``ODIN_RECORD``        path of a YAML file to record every model exchange into, as a
                       scripted-model script that replays the run (docs/scripted-model.md);
                       a roadmap phase's contract proposal and interview are recorded too
``ODIN_CONTEXT_BUDGET`` token budget of a run's inline conversation thread
``ODIN_MAX_RETRIES``   SDK retries for 429/5xx/529/timeouts
``ODIN_TIMEOUT``       seconds per API request
``ODIN_MAX_TURNS``     model turns one stage may take
``ODIN_THINKING``      extended thinking budget of worker turns (tokens, >= 1024;
                       ``0`` or ``off`` turns it off; default 4000)
=====================  =======================================================

The API key is deliberately NOT a setting: it comes only from the environment
(``ANTHROPIC_API_KEY`` / ``ANTHROPIC_AUTH_TOKEN``) or the SDK's own credential
sources (profiles), and is never stored by odin-magic.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from odin_magic.core.errors import ConfigError
from odin_magic.runs.state import Usage

#: A current Claude model that the SDK (2.14) knows and does not deprecate.
DEFAULT_MODEL = "claude-sonnet-5-5"


class ModelPrice(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(extra="forbid")

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_write: float | None = Field(default=None, ge=0, description="default: 1.25 x input")
    cache_read: float | None = Field(default=None, ge=0, description="default: 0.1 x input")

    def cost(self, usage: Usage) -> float:
        write = self.cache_write if self.cache_write is not None else self.input * 1.25
        read = self.cache_read if self.cache_read is not None else self.input * 0.1
        usd = (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_creation_input_tokens * write
            + usage.cache_read_input_tokens * read
        ) / 1_000_000
        return round(usd, 6)


#: Estimated list prices, USD per million tokens. Keys are exact model names or
#: family prefixes (the longest matching key wins). Override with ODIN_PRICES.
DEFAULT_PRICES: dict[str, ModelPrice] = {
    "claude-opus": ModelPrice(input=5.0, output=25.0, cache_write=6.25, cache_read=0.5),
    "claude-sonnet": ModelPrice(input=3.0, output=15.0, cache_write=3.75, cache_read=0.3),
    "claude-haiku": ModelPrice(input=1.0, output=5.0, cache_write=1.25, cache_read=0.1),
    "scripted": ModelPrice(input=0.0, output=0.0, cache_write=0.0, cache_read=0.0),
}


class Settings(BaseModel):
    """What the Claude worker needs to know; never holds a credential."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(default=DEFAULT_MODEL, min_length=1)
    judge_model: str | None = Field(default=None, description="default: model")
    max_tokens: int = Field(default=16_000, ge=1, le=200_000)
    base_url: str | None = None
    prices: dict[str, ModelPrice] = Field(default_factory=lambda: dict(DEFAULT_PRICES))
    script: Path | None = Field(default=None, description="scripted-model YAML: offline, no API key")
    record: Path | None = Field(default=None, description="record every model exchange here, as a script")
    context_budget: int = Field(default=150_000, ge=2_000, description="tokens the inline thread may hold")
    max_retries: int = Field(default=4, ge=0, le=20)
    timeout: float = Field(default=600.0, gt=0)
    max_turns: int = Field(default=80, ge=1, description="model turns one stage may take")
    thinking_budget: int = Field(default=4_000, ge=0, description="extended thinking tokens per worker turn; 0: off")

    @field_validator("prices", mode="before")
    @classmethod
    def _merge_prices(cls, value: Any) -> Any:
        if value is None:
            return dict(DEFAULT_PRICES)
        if isinstance(value, Mapping):
            merged: dict[str, Any] = dict(DEFAULT_PRICES)
            merged.update(value)
            return merged
        return value

    @field_validator("thinking_budget", mode="before")
    @classmethod
    def _thinking_off(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in ("off", "false", "no", "none"):
            return 0
        return value

    @field_validator("thinking_budget")
    @classmethod
    def _thinking_minimum(cls, value: int) -> int:
        if 0 < value < 1024:
            raise ValueError("the thinking budget is 0 (off) or at least 1024 tokens, the API's minimum")
        return value

    @property
    def verdict_model(self) -> str:
        return self.judge_model or self.model

    def price_for(self, model: str) -> ModelPrice | None:
        best = None
        for key, price in self.prices.items():
            if model == key or model.startswith(key):
                if best is None or len(key) > len(best[0]):
                    best = (key, price)
        return best[1] if best else None

    def cost(self, model: str, usage: Usage) -> float:
        """Estimated USD of ``usage`` on ``model`` (0 when the price table does not know it)."""
        price = self.price_for(model)
        return price.cost(usage) if price else 0.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> "Settings":
        """Settings from ``overrides`` (``None`` values ignored), then ``env`` (default ``os.environ``)."""
        env = os.environ if env is None else env
        data: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for field, var in _ENV_VARS.items():
            raw = env.get(var)
            if raw is not None and raw.strip() != "":
                data[field] = raw.strip()
                sources[field] = f"environment variable {var}"
        if "prices" in data:
            data["prices"] = _load_prices(data["prices"])
        for key, value in overrides.items():
            if value is None:
                continue
            if key not in cls.model_fields:
                raise ConfigError(
                    f"unknown worker setting {key!r}",
                    hint=f"known settings: {', '.join(sorted(cls.model_fields))}",
                )
            if key == "prices" and isinstance(value, (str, Path)):
                value = _load_prices(str(value))
            data[key] = value
            sources[key] = f"argument {key}"
        try:
            return cls(**data)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = str(err["loc"][0]) if err["loc"] else "settings"
            where = sources.get(field, f"setting {field}")
            raise ConfigError(
                f"invalid {where}: {err['msg']} (got {err.get('input')!r})",
                hint=f"fix {where}; docs/claude-worker.md lists the settings and their values",
            ) from None


_ENV_VARS = {
    "model": "ODIN_MODEL",
    "judge_model": "ODIN_JUDGE_MODEL",
    "max_tokens": "ODIN_MAX_TOKENS",
    "base_url": "ANTHROPIC_BASE_URL",
    "prices": "ODIN_PRICES",
    "script": "ODIN_SCRIPT",
    "record": "ODIN_RECORD",
    "context_budget": "ODIN_CONTEXT_BUDGET",
    "max_retries": "ODIN_MAX_RETRIES",
    "timeout": "ODIN_TIMEOUT",
    "max_turns": "ODIN_MAX_TURNS",
    "thinking_budget": "ODIN_THINKING",
}


def _load_prices(raw: str) -> dict[str, Any]:
    """ODIN_PRICES: inline JSON, or the path of a JSON/YAML file holding the same mapping."""
    text = raw.strip()
    source = "ODIN_PRICES"
    if not text.startswith(("{", "[")):
        path = Path(text).expanduser()
        if not path.is_file():
            raise ConfigError(
                f"ODIN_PRICES={raw!r} is neither inline JSON nor a readable file",
                hint='set it to JSON such as {"claude-sonnet-5-5": {"input": 3, "output": 15}} or to a file path',
            )
        source = str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"ODIN_PRICES: cannot read the price table {path}: {exc}",
                hint="point ODIN_PRICES at a UTF-8 JSON or YAML file",
            ) from None
    try:
        data = yaml.safe_load(text)  # JSON is YAML
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid syntax"
        raise ConfigError(f"{source}: not valid JSON/YAML{where}: {problem}", hint="fix the price table") from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: the price table must be a mapping of model name to prices",
            hint='e.g. {"claude-sonnet-5-5": {"input": 3, "output": 15, "cache_write": 3.75, "cache_read": 0.3}}',
        )
    out: dict[str, Any] = {}
    for model, price in data.items():
        try:
            out[str(model)] = ModelPrice.model_validate(price)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"])
            raise ConfigError(
                f"{source}: price of {model!r}{'.' + loc if loc else ''}: {err['msg']}",
                hint="each model needs numeric `input` and `output` prices (USD per million tokens); "
                "`cache_write` and `cache_read` are optional, and no other key is allowed",
            ) from None
    return out


def usage_with_cost(settings: Settings, model: str, usage: Usage) -> Usage:
    """``usage`` with its estimated cost filled in from the price table; with ``settings.script`` (the
    offline scripted model answered) that cost is also ``offline_usd``: what it would cost on Claude."""
    cost = settings.cost(model, usage)
    return usage.model_copy(update={"cost_usd": cost, "offline_usd": cost if settings.script is not None else 0.0})

