"""The whole output that the SDK's bash tool saves beside a long result is removed at once.

From anthropic 2.16 the bash tool keeps the head of a long output and saves all of it (up to some
MiB) to ``<tmp>/bash-output-*/tmp*.txt``, naming that file in the result. odin redacts every secret
from what a tool returns (:func:`odin_magic.core.secrets.redact_cut`), but that file holds the output
as the command printed it: a key a command printed would sit there, outside the project, unredacted,
for the rest of the stage. A worker could not read it anyway (the file tools are confined to the
project and the run dir; a sandboxed shell has a /tmp of its own). So :func:`drop_saved` removes the
file and its folder as soon as the result comes back, and replaces the sentence that names it with
one the model can act on. With an SDK that saves nothing it changes nothing.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path

#: The SDK's sentence naming the saved file (``agent_toolset._save_output``).
SAVED = re.compile(r"(?:Full output|First \d+ MiB of output) saved to: (?P<path>/\S+?\.txt) — "
                   r"use read with view_range to read specific portions\. ")

#: What the model reads instead.
NOT_KEPT = ("The rest was not kept: to see another part, narrow the command (| tail -n 100, | grep PATTERN) "
            "or write its output to a file in the project and read parts of it. ")

PREFIX = "bash-output-"


def drop_saved(text: str) -> str:
    """``text`` without the saved-file sentence, the file it names removed (when it is the SDK's)."""
    found = SAVED.search(text)
    if found is None:
        return text
    remove(Path(found["path"]))
    return text[:found.start()] + NOT_KEPT + text[found.end():]


def remove(path: Path) -> bool:
    """Removes a saved output and its folder, if they are where the SDK saves them; never follows a link.

    The folder is opened without following a link (a command may have replaced it with a link to
    another directory) and the file unlinked relative to it; anything else is left alone."""
    folder = path.parent
    if folder.name[:len(PREFIX)] != PREFIX or str(folder.parent) != os.path.realpath(tempfile.gettempdir()):
        return False
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path.name, dir_fd=fd)
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        os.rmdir(folder)  # a real, now empty directory; a link put there since is refused by rmdir
    return True
