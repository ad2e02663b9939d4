"""The interview's fixed numbers that front ends show (no imports: status and views load it cheaply)."""

#: Rounds before which the interview never stops early: the stop condition is checked from this round on.
EARLY_EXIT_FROM_ROUND = 3
