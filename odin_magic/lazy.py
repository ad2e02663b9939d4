"""Callables whose module loads on first call: front ends start quickly and import what a command uses.

``Engine = lazy("odin_magic.engine", "Engine")`` stands for the engine's class
in a module that only calls it; the engine (and pydantic, YAML, the
validator...) loads the first time it is called, not when the front end is
imported (``odin --help``, ``%load_ext odin_magic``). Only for names that are
called: an exception class in an ``except`` or a class in ``isinstance`` must
be imported for real, where it is used.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable


def lazy(module: str, name: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"{module}.{name}, imported on first call."
    return call


class LazyModule:
    """A stand-in for a module, imported when one of its attributes is first read
    (``au = LazyModule("odin_magic.authoring")``; ``au.write_loop(...)``)."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)
