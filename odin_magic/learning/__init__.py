"""What runs teach: Muninn's refinement of a loop from its runs (``refine``, with the model's
proposals in ``refine_model``) and the project's memory of decisions and lessons
(``memory``).

May import: ``core``, ``loop``, ``runs``, ``workers``, ``interview``.
"""
