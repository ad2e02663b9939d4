"""The notebook front end: ``%odin`` / ``%%odin`` (``magics`` and its ``*_magics``), what they
call (``actions``), the live view and the approval panel (``widgets``), the background drive
(``background``) and its yielding to the kernel (``foreground``), the ``%odin new`` form
(``new_loop_form``) and the interview's question panel (``interview_panel``).

May import: every layer but ``cli``.
"""
