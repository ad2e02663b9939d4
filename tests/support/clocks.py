"""A clock for tests that moves on each time it is read."""

from __future__ import annotations

from datetime import datetime, timedelta


class StepClock:
    """A clock that moves forward ``step`` seconds each time it is read."""

    def __init__(self, step: float):
        self.now = datetime(2026, 6, 14, 14, 35, 1)
        self.step = timedelta(seconds=step)

    def __call__(self):
        self.now += self.step
        return self.now
