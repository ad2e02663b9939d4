"""Figures read from a command's output: a number found by a regular expression (its one group, the last
match) or at a path into JSON printed on stdout; refused unless it is a finite number. Several samples make
one figure: their median, and their spread (the largest minus the smallest).

A metric gate (``odin_magic.engine.metric_gate``) measures with these; nothing here runs a command.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from typing import Any

#: The output's tail quoted when no figure is found in it.
QUOTED_CHARS = 400


class NoFigure(ValueError):
    """The output holds no figure that can be used (no match, not a number, nan, inf, empty)."""


def finite(value: Any, what: str) -> float:
    """``value`` (a number, or text that spells one) as a finite float; :class:`NoFigure` otherwise."""
    if isinstance(value, bool) or value is None:
        raise NoFigure(f"{what} is {json.dumps(value)}, not a number")
    if isinstance(value, str):
        text = value.strip().replace(",", "").replace("_", "")
        if not text:
            raise NoFigure(f"{what} is empty, not a number")
        try:
            number = float(text)
        except ValueError:
            raise NoFigure(f"{what} is {value.strip()[:80]!r}, not a number") from None
    elif isinstance(value, (int, float)):
        number = float(value)
    else:
        raise NoFigure(f"{what} is a {type(value).__name__}, not a number")
    if not math.isfinite(number):
        raise NoFigure(f"{what} is {number}, not a finite number: refused as a measurement")
    return number


def tail(text: str, chars: int = QUOTED_CHARS) -> str:
    """The end of ``text`` on one line, for a reason."""
    flat = " ⏎ ".join(line.strip() for line in text.strip().splitlines() if line.strip())
    return flat if len(flat) <= chars else "…" + flat[-chars:]


def by_regex(pattern: str, stdout: str, stderr: str = "") -> float:
    """The one group of ``pattern``'s last match in ``stdout`` (else in ``stderr``)."""
    rx = re.compile(pattern, re.MULTILINE)
    for text in (stdout, stderr):
        matches = list(rx.finditer(text))
        if matches:
            return finite(matches[-1].group(1), f"the regex's group ({matches[-1].group(0).strip()[:80]!r})")
    output = (stdout + "\n" + stderr).strip()
    raise NoFigure(f"the regex {pattern!r} matched nothing in: {tail(output) or '(no output)'}")


def json_path(path: str) -> list[str | int]:
    """``a.b.0.c`` as its steps (a whole number steps into a list)."""
    return [int(step) if step.isdigit() else step for step in path.split(".")]


def by_json(path: str, stdout: str) -> float:
    """The number at ``path`` in the JSON printed on stdout (the whole output, else its last line that is JSON)."""
    data = _json_of(stdout)
    node: Any = data
    for step in json_path(path):
        if isinstance(step, int) and isinstance(node, list) and step < len(node):
            node = node[step]
        elif isinstance(node, dict) and str(step) in node:
            node = node[str(step)]
        else:
            raise NoFigure(f"the JSON on stdout has nothing at {path!r} (at {step!r}): {tail(stdout)}")
    return finite(node, f"the JSON value at {path!r}")


def _json_of(stdout: str) -> Any:
    try:
        return json.loads(stdout)
    except ValueError:
        pass
    for line in reversed(stdout.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    raise NoFigure(f"no JSON on stdout: {tail(stdout) or '(no output)'}")


def median_and_spread(samples: list[float]) -> tuple[float, float]:
    """The figure of several samples (their median) and how far apart they are (largest minus smallest)."""
    if not samples:
        raise ValueError("no samples")
    return statistics.median(samples), max(samples) - min(samples)


def amount(spec: float | str | None, base: float | None) -> float:
    """An amount (``tolerance``, ``min_improvement``) in the figure's unit: ``"2%"`` of ``|base|``, or the number
    itself; 0 when not given (or a percentage with no base to take it of)."""
    if spec is None:
        return 0.0
    if isinstance(spec, str) and spec.endswith("%"):
        return abs(base) * float(spec[:-1]) / 100 if base is not None else 0.0
    return float(spec)


def shown(value: float) -> str:
    """A figure for a reason: at most 4 significant digits, no trailing zeros."""
    return f"{value:.4g}" if abs(value) < 1e6 else f"{value:.6g}"
