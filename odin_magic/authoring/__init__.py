"""Writing a new loop: ``odin new``'s questions, answers and the loop YAML they make
(``new_loop``).

May import: ``core``, ``loop``, ``runs``, ``workers``.

The names of ``new_loop`` are importable from the package itself, loaded on first use.
"""

from __future__ import annotations

import importlib
from typing import Any


def __getattr__(name: str) -> Any:
    module = importlib.import_module("odin_magic.authoring.new_loop")
    try:
        return getattr(module, name)
    except AttributeError:
        raise AttributeError(f"module 'odin_magic.authoring' has no attribute {name!r}") from None
