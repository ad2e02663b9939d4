"""``%odin config``: the notebook's settings shown, or set (``KEY=VALUE``, all or nothing).

The settings are :class:`~odin_magic.notebook.magics.OdinMagics`' traitlets (``%config OdinMagics.model = ...``
sets them too); :class:`ConfigMagics` is a part of it, which provides them, ``settings()``, ``project_dir``
and ``use_widgets()``.
"""

from __future__ import annotations

import os
from pathlib import Path

from IPython.core.error import UsageError

from odin_magic.notebook.project import notebook_dir
from odin_magic.render.displays import MessageDisplay

#: What ``%odin config KEY=`` suggests when the value is missing.
_CONFIG_EXAMPLES = {"project": "..", "model": "claude-sonnet-5-5", "judge_model": "claude-sonnet-5-5",
                    "max_tokens": "8000", "base_url": "http://127.0.0.1:8000", "script": "quickstart.script.yaml",
                    "record": "run.recording.yaml", "widgets": "false", "charts": "false"}


class ConfigMagics:
    """``%odin config [KEY=VALUE ...]``."""

    _CONFIG_KEYS = ("project", "model", "judge_model", "max_tokens", "base_url", "script", "record", "widgets", "charts")

    def _cmd_config(self, args):
        before = {key: getattr(self, key) for key in self._CONFIG_KEYS}
        try:
            for item in args.assignments:
                key, sep, value = item.partition("=")
                key = key.strip()
                if not sep or key not in self._CONFIG_KEYS:
                    raise UsageError(f"config takes KEY=VALUE with KEY one of {', '.join(self._CONFIG_KEYS)}; got {item!r}")
                self._set(key, value.strip())
            if args.assignments:
                self.settings()  # validate now: a bad value is reported here, not at the next run
        except Exception:
            # all or nothing: a refused assignment leaves every previous value in force
            for key, value in before.items():
                if getattr(self, key) != value:
                    setattr(self, key, value)
            raise
        return ConfigDisplay(self._config_items())

    def _set(self, key: str, value: str) -> None:
        if not value:  # `model=` would silently fall back to the default: say so instead
            raise UsageError(f"{key}= needs a value, e.g. {key}={_CONFIG_EXAMPLES[key]}; "
                             f"{key}=default goes back to the default")
        if value == "default":
            setattr(self, key, self.traits()[key].default())
        elif key == "project":
            path = Path(value).expanduser()
            path = path if path.is_absolute() else notebook_dir(self.shell) / path
            if not path.is_dir():
                raise UsageError(f"project directory does not exist: {path}")
            self.project = str(path.resolve())
        elif key == "max_tokens":
            try:
                self.max_tokens = int(value) if value else None
            except ValueError:
                raise UsageError(f"max_tokens must be a whole number, got {value!r}") from None
        elif key in ("widgets", "charts"):
            if value.lower() not in ("true", "false", "1", "0", "on", "off", "yes", "no"):
                raise UsageError(f"{key} must be true or false, got {value!r}")
            setattr(self, key, value.lower() in ("true", "1", "on", "yes"))
        else:
            setattr(self, key, value or None)

    def _config_items(self) -> list[tuple[str, str]]:
        settings = self.settings()
        return [
            ("project", str(self.project_dir) + ("" if self.project else "  (the notebook's directory)")),
            ("model", settings.model),
            ("judge_model", settings.verdict_model),
            ("max_tokens", str(settings.max_tokens)),
            ("base_url", settings.base_url or "(SDK default)"),
            ("script", str(settings.script) if settings.script else "(none: a real model)"),
            ("record", str(settings.record) if settings.record else "(off)"),
            ("widgets", str(self.use_widgets())),
            ("charts", str(self.charts)),
            ("api key", "set in the environment" if os.environ.get("ANTHROPIC_API_KEY") else "not set"),
        ]


class ConfigDisplay(MessageDisplay):
    def __init__(self, items: list[tuple[str, str]]):
        super().__init__("\n".join(f"{k:>12}: {v}" for k, v in items))
        self.items = items

    def html(self) -> str:
        import html

        rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in self.items)
        return f"<table class='odin-t'>{rows}</table>"

