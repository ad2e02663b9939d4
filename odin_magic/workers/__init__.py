"""Who does a stage's work: the :class:`~odin_magic.workers.base.Worker` protocol the engine
calls, and its workers: Claude through the ``anthropic`` SDK (``claude``, with ``client``,
``structured``, ``toolbox``, ``conversation``, ``prompts``), the offline scripted model
(``scripted``) and the dry worker (``dry``); their settings (``config``), the fast-fail
checks of a written file (``postedit``) and the choice of a worker (``factory``).

May import: ``core``, ``loop``, ``runs``.
"""
