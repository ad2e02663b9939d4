"""Writing a new loop: ``odin new``'s questions, answers and the loop YAML they make
(``new_loop``); a roadmap proposed by the model for ``odin roadmap new`` (``roadmap_new``).

May import: ``core``, ``loop``, ``runs``, ``workers``.

The names of ``new_loop`` are importable from the package itself, loaded on first use.
"""

from odin_magic.core.faces import hand_on

__getattr__ = hand_on(__name__, "odin_magic.authoring.new_loop")
