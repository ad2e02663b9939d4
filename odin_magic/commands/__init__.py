"""The commands' arguments, declared once for both front ends (``odin`` and ``%odin``).

May import: ``core`` (and nothing heavy: the front ends load this at start-up).
"""
