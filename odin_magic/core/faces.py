"""A package's face: the names of one of its modules, importable from the package itself and
loaded on first use (PEP 562), so that importing a light sibling does not load the heavy module.

``odin_magic.engine`` hands on ``engine.orchestrator``'s names (``from odin_magic.engine import
Engine``), ``odin_magic.loop`` those of ``loop.schema``, ``odin_magic.authoring`` those of
``authoring.new_loop``: the names each had as a single module before the layered layout.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable


def hand_on(package: str, module: str) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package`` that hands on the names of ``module``."""

    def __getattr__(name: str) -> Any:
        try:
            return getattr(importlib.import_module(module), name)
        except AttributeError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    return __getattr__
