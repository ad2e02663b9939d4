"""Renderings that front ends share: status, runs and events as text (``text``), display
objects that are HTML in a notebook and text in a terminal (``displays``), matplotlib charts
(``charts``), loops and the memory as text (``loop_text``), the report of a run that ended
(``run_report``) and refine's report (``refine_view``).

May import: ``core``, ``loop``, ``runs``, ``workers``, ``interview``, ``learning``,
``authoring``. Never a front end, never the engine.
"""
