"""Worker settings from arguments and the environment; the price table."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from odin_magic.workers.config import DEFAULT_MODEL, Settings
from odin_magic.core.errors import ConfigError
from odin_magic.runs.state import Usage


def test_defaults_use_a_current_model_the_sdk_does_not_deprecate():
    from anthropic._data import DEPRECATED_MODELS

    settings = Settings.from_env(env={})
    assert settings.model == DEFAULT_MODEL
    assert DEFAULT_MODEL not in DEPRECATED_MODELS  # whatever the installed SDK lists today
    assert settings.script is None and settings.base_url is None
    assert "api_key" not in Settings.model_fields  # the key is never a setting


def test_arguments_override_the_environment():
    env = {"ODIN_MODEL": "claude-haiku-4-5", "ODIN_MAX_TOKENS": "2000", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
           "ODIN_CONTEXT_BUDGET": "50000", "ODIN_MAX_RETRIES": "7"}
    settings = Settings.from_env(env=env, max_tokens=3000, model=None)
    assert settings.model == "claude-haiku-4-5"  # None arguments are ignored
    assert settings.max_tokens == 3000
    assert (settings.base_url, settings.context_budget, settings.max_retries) == ("http://127.0.0.1:9", 50000, 7)


def test_prices_estimate_cost_and_can_be_overridden(tmp_path: Path):
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cache_creation_input_tokens=1_000_000,
                  cache_read_input_tokens=1_000_000)
    settings = Settings.from_env(env={})
    assert settings.cost("claude-sonnet-5-5", usage) == pytest.approx(3 + 15 + 3.75 + 0.3)
    assert settings.cost("claude-opus-4-8", usage) == pytest.approx(5 + 25 + 6.25 + 0.5)
    assert settings.cost("some-other-model", usage) == 0.0
    inline = Settings.from_env(env={"ODIN_PRICES": '{"claude-sonnet-5-5": {"input": 1, "output": 2}}'})
    assert inline.cost("claude-sonnet-5-5", usage) == pytest.approx(1 + 2 + 1.25 + 0.1)  # cache: 1.25x / 0.1x input
    assert inline.cost("claude-sonnet-4-6", usage) == pytest.approx(3 + 15 + 3.75 + 0.3)  # the family default stays
    table = tmp_path / "prices.yaml"
    table.write_text("my-model: {input: 10, output: 20, cache_write: 0, cache_read: 0}\n")
    from_file = Settings.from_env(env={"ODIN_PRICES": str(table)})
    assert from_file.cost("my-model", usage) == pytest.approx(30)


@pytest.mark.parametrize(
    "env, expected",
    [
        ({"ODIN_MAX_TOKENS": "lots"}, "environment variable ODIN_MAX_TOKENS"),
        ({"ODIN_MAX_TOKENS": "0"}, "ODIN_MAX_TOKENS"),
        ({"ODIN_PRICES": "/no/such/prices.json"}, "neither inline JSON nor a readable file"),
        ({"ODIN_PRICES": '{"m": {"input": "free"}}'}, "price of 'm'"),
        ({"ODIN_PRICES": "[1, 2]"}, "must be a mapping"),
        ({"ODIN_PRICES": '{"m": {"input": 1'}, "ODIN_PRICES: not valid JSON/YAML at line 1"),
        ({"ODIN_PRICES": '{"m": {"input": 1, "output": 2, "cache_wirte": 3}}'}, "price of 'm'.cache_wirte"),
    ],
)
def test_bad_settings_are_config_errors_naming_the_variable(env: dict, expected: str):
    with pytest.raises(ConfigError) as info:
        Settings.from_env(env=env)
    assert expected in str(info.value)


def test_an_unreadable_price_file_is_a_config_error(tmp_path: Path):
    table = tmp_path / "prices.json"
    table.write_bytes(b"\xff\xfe binary \xd0")
    with pytest.raises(ConfigError, match="cannot read the price table"):
        Settings.from_env(env={"ODIN_PRICES": str(table)})


def test_unknown_argument_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown worker setting 'modle'"):
        Settings.from_env(env={}, modle="x")


def _offline_client():
    import anthropic
    import httpx2

    reject = httpx2.MockTransport(lambda request: httpx2.Response(400, json={"type": "error", "error": {
        "type": "invalid_request_error", "message": "offline"}}))
    return anthropic.Anthropic(api_key="x", max_retries=0, http_client=httpx2.Client(transport=reject))


def _ask(client, model):
    import anthropic

    with pytest.raises(anthropic.BadRequestError):
        client.messages.create(model=model, max_tokens=1, messages=[{"role": "user", "content": "hi"}])


def test_default_model_raises_no_deprecation_warning_in_the_sdk():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        _ask(_offline_client(), DEFAULT_MODEL)


def test_a_model_the_installed_sdk_deprecates_does_warn():
    """The check above is real: a name the installed SDK lists as deprecated does warn.

    Which names are deprecated is the SDK's data and changes between releases, so the
    name is taken from the installed SDK, never written here."""
    from anthropic._data import DEPRECATED_MODELS

    if not DEPRECATED_MODELS:
        pytest.skip("the installed anthropic SDK lists no deprecated model")
    deprecated = sorted(DEPRECATED_MODELS)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        with pytest.raises(DeprecationWarning):
            _ask(_offline_client(), deprecated)
