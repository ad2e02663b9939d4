"""Where the notebook's project is: the notebook's own directory, and paths relative to the project."""

from __future__ import annotations

import os
from pathlib import Path


def notebook_dir(shell) -> Path:
    """The notebook's own directory where the kernel knows it, else the working directory."""
    ns = getattr(shell, "user_ns", {}) or {}
    for candidate in (ns.get("__vsc_ipynb_file__"), ns.get("__session__"), os.environ.get("JPY_SESSION_NAME")):
        if isinstance(candidate, str) and candidate:
            path = Path(candidate).expanduser()
            if path.is_absolute() and path.parent.is_dir():
                return path.parent.resolve()
    return Path.cwd().resolve()


def abs_path(path: str | None, base: Path) -> Path | None:
    """``path`` (``~`` expanded) relative to ``base`` unless absolute; None for no path."""
    if not path:
        return None
    p = Path(path).expanduser()
    return p if p.is_absolute() else (base / p)
