"""What the tests share: the fake Messages API, notebook helpers, scripted runs, stage jobs,
interview loops, and where things are (:data:`REPO`, :data:`TESTS`, :data:`FIXTURES`)."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures"
