"""The work dedupe() does on a fixed input, printed last: the lines of Python it executes.

A count, not a timing: the same on every machine and every run, so the quickstart's metric gate decides on
the change, never on noise. A real project's bench prints a time (see docs/metrics.md, "Noise")."""

import sys

from slow import dedupe

DATA = [i % 150 for i in range(600)]
lines = 0


def trace(frame, event, arg):
    global lines
    if event == "line":
        lines += 1
    return trace


sys.settrace(trace)
dedupe(DATA)
sys.settrace(None)
print(f"dedupe: {lines} lines executed")
