"""Defaults the front ends name before anything heavy loads (``%load_ext``, ``odin --help``)."""

#: The loop a run starts when none is named (seed 000).
DEFAULT_LOOP = "spec-harness-tdd"
