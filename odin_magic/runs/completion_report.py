"""What was checked before a run may end, as data: the acceptance criteria's results, the
regression suite's result, and their form in the gate evidence (``to_dict`` / :func:`from_dict`).

The engine fills these in (:mod:`odin_magic.engine.completion`,
:mod:`odin_magic.engine.regression`); status and the run's report read them back.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

from odin_magic.runs.state import Usage

CriterionStatus = Literal["pass", "fail", "could-not-run", "skipped"]


@dataclass
class RegressionResult:
    """The outcome of the regression gate (``suite`` None: no suite, or turned off)."""

    command: str | None
    why: str
    ran: bool = False
    passed: bool = True
    exit_code: int | None = None
    could_not_run: bool = False  # the command could not start, timed out, or its program is missing
    failing: list[str] = field(default_factory=list)  # failing tests, where the runner names them
    tail: str = ""

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def mark(self) -> str:
        """✅ passed, ❌ failed, – not run (no tick on what did not run)."""
        if not self.ran:
            return "–"
        return "✅" if self.passed else "❌"

    def describe(self) -> str:
        if not self.ran:
            return f"regression suite: {self.why}"
        if self.passed:
            return f"regression suite passed: `{self.command}`"
        more = f", and {len(self.failing) - 10} more" if len(self.failing) > 10 else ""
        named = f": {', '.join(self.failing[:10])}{more}" if self.failing else ""
        return f"regression suite `{self.command}` failed (exit {self.exit_code}){named}"


@dataclass
class CriterionResult:
    id: str
    priority: str
    text: str
    verify: str
    status: CriterionStatus
    detail: str = ""
    component: str | None = None
    duration_s: float = 0.0

    @property
    def mark(self) -> str:
        return {"pass": "✅", "fail": "❌", "skipped": "–"}.get(self.status, "⚠")


@dataclass
class CompletionReport:
    """Everything checked before done; ``problems`` are environment problems (what, fix)."""

    criteria: list[CriterionResult] = field(default_factory=list)
    regression: RegressionResult | None = None
    manifest: str = ""  # what became of the manifest: "acceptance.yaml: 3 criteria", "no acceptance.yaml", ...
    problems: list[tuple[str, str]] = field(default_factory=list)
    judge_usage: Usage = field(default_factory=Usage)
    code_stage: str | None = None  # where a failure sends the run (the stage whose work is judged)

    @property
    def failing_p0(self) -> list[CriterionResult]:
        return [c for c in self.criteria if c.priority == "P0" and c.status == "fail"]

    @property
    def passed(self) -> bool:
        regression_ok = self.regression is None or self.regression.passed
        return not self.failing_p0 and regression_ok and not self.problems

    @property
    def environment(self) -> bool:
        """True when what failed is the environment (nothing the worker can fix)."""
        return bool(self.problems)

    def reason(self) -> str | None:
        """Why the run may not end yet (None when it may)."""
        if self.problems:
            return "; ".join(what for what, _ in self.problems)
        parts = []
        if self.failing_p0:
            parts.append("acceptance criteria failed: " + "; ".join(
                f"{c.id} ({c.text[:80]}): {c.detail[:200]}" for c in self.failing_p0))
        if self.regression is not None and not self.regression.passed:
            parts.append(self.regression.describe() + (f": {self.regression.tail[-300:].strip()}"
                                                        if not self.regression.failing else ""))
        return "; ".join(parts) or None

    def fix(self) -> str:
        return "; ".join(fix for _, fix in self.problems)

    def to_dict(self) -> dict:
        return {
            "passed": self.passed,
            "manifest": self.manifest,
            "criteria": [asdict(c) for c in self.criteria],
            "regression": self.regression.to_dict() if self.regression else None,
            "problems": [{"what": w, "fix": f} for w, f in self.problems],
            "code_stage": self.code_stage,
        }

    def lines(self) -> list[str]:
        """Plain-text lines for the terminal and the report."""
        out = [self.manifest] if self.manifest else []
        for c in self.criteria:
            out.append(f"{c.mark} {c.id} [{c.priority}] {c.text}" + (f" — {c.detail}" if c.status != "pass" and c.detail else ""))
        if self.regression is not None:
            out.append(f"{self.regression.mark} {self.regression.describe()}")
        out += [f"⚠ {what} — {fix}" for what, fix in self.problems]
        return out


def from_dict(data: dict) -> CompletionReport:
    """A :class:`CompletionReport` back from its evidence (``to_dict``)."""
    fields = set(CriterionResult.__dataclass_fields__)
    reg = data.get("regression")
    return CompletionReport(
        criteria=[CriterionResult(**{k: v for k, v in c.items() if k in fields}) for c in data.get("criteria") or []],
        regression=RegressionResult(**{k: v for k, v in reg.items() if k in RegressionResult.__dataclass_fields__})
        if reg else None,
        manifest=data.get("manifest") or "",
        problems=[(p.get("what", ""), p.get("fix", "")) for p in data.get("problems") or []],
        code_stage=data.get("code_stage"),
    )
