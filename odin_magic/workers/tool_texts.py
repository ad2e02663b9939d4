"""What the model is told about each tool: its description and its input schema's texts.

The SDK's agent toolset describes its tools in one line ("Run a command in a persistent bash
shell.") and names its input schemas after its own classes
(``BetaManagedAgentsAgentToolset20260401BashInput``, "the runner-side bash session"). A model uses
a tool well when it knows where it runs, what the variables mean, when a call stops, what is cut
and how a failure comes back, so :func:`presented` replaces those texts with ours. The facts below
are the SDK's own behaviour (``anthropic.lib.tools.agent_toolset``: a 120 s default bash timeout,
the last 100 KiB of output, a non-zero exit raised as a tool error, ``view_range`` 1-based and
inclusive) and the toolbox's (numbered ``read`` lines, ``$ODIN_*`` expanded in paths).

The texts are the same in every run (no path of a run in them), so they stay in the cached prefix.
"""

from __future__ import annotations

import copy
from typing import Any

_PLACES = ("Paths are relative to the project directory (the working directory), or absolute; in a path, "
           "$ODIN_PROJECT_DIR and $ODIN_RUN_DIR (the run directory) are expanded, nothing else ($HOME, ~) is.")

DESCRIPTIONS: dict[str, str] = {
    "bash": (
        "Run a shell command in a persistent bash session: the current directory and exported variables carry "
        "over to the next call. The shell starts in the project directory. Its environment holds "
        "$ODIN_PROJECT_DIR (the project directory), $ODIN_RUN_DIR (the run directory, where the run's documents "
        "and harness live) and $ODIN_TARGET_DIR (the code under test, by default $ODIN_PROJECT_DIR/src): "
        "run a gate command exactly as it is written. stdin is empty. A command is stopped after 120 seconds "
        "unless you pass timeout_ms (milliseconds; e.g. 600000 for a long test suite). The result is stdout "
        "and stderr together; a very long one is cut, and a line says so: to see another part, narrow the command (| tail -n 100, | grep PATTERN). "
        "A command that exits non-zero comes back as an error result holding its output. "
        "restart: true starts a fresh shell (when the shell is stuck)."
    ),
    "read": (
        "Read a text file. The result is its lines numbered from 1, each as '<number><TAB><line>'; the numbers "
        "and the tab are not part of the file (leave them out of edit's old_string), and cite a line by its "
        "number. view_range: [first, last] reads only those lines, 1-based and inclusive (last = -1: to the end "
        "of the file); a file over 256 KiB can only be read with a view_range. Images (.png, .jpg, .gif, .webp) "
        "and PDFs come back as content blocks. " + _PLACES
    ),
    "write": ("Write a whole file (its previous content is replaced), creating missing parent directories. "
              + _PLACES),
    "edit": (
        "Replace text in a file: old_string must occur in it exactly once (as it is in the file, without read's "
        "line numbers), unless replace_all is true, which replaces every occurrence. " + _PLACES
    ),
    "glob": (
        "List the files matching a glob pattern (** matches any number of directories), newest first, at most "
        "200. The pattern is relative (no absolute path, no '..'); path is the directory to search in (default: "
        "the project directory). " + _PLACES
    ),
    "grep": (
        "Search file contents for a regular expression; each match comes back as 'path:line number:line'. path "
        "is a file or directory to search (default: the project directory). Output beyond 100 KiB is cut, with a "
        "line saying so. " + _PLACES
    ),
}

FIELDS: dict[str, dict[str, str]] = {
    "bash": {"command": "The command line to run.",
             "restart": "true to end the shell and start a fresh one (no command).",
             "timeout_ms": "How long the command may run, in milliseconds (default 120000)."},
    "read": {"file_path": "The file to read.",
             "view_range": "[first, last]: the lines to read, 1-based and inclusive; last = -1 reads to the end."},
    "write": {"file_path": "The file to write.", "content": "The file's whole new content."},
    "edit": {"file_path": "The file to edit.", "old_string": "The exact text to replace.",
             "new_string": "The text to put in its place.", "replace_all": "true to replace every occurrence."},
    "glob": {"pattern": "A relative glob pattern, e.g. src/**/*.py.",
             "path": "The directory to search in (default: the project directory)."},
    "grep": {"pattern": "A regular expression.",
             "path": "The file or directory to search (default: the project directory)."},
}


def presented(name: str, description: str | None, schema: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The description and input schema the model is shown for tool ``name``: ours, without the SDK's
    class names and internals (its own kept for a tool this module does not know)."""
    if name not in DESCRIPTIONS:
        return description, schema
    shown = copy.deepcopy(dict(schema))
    shown["title"] = f"{name} input"
    shown["description"] = f"The arguments of the {name} tool."
    for field, prop in shown.get("properties", {}).items():
        prop.pop("title", None)
        if field in FIELDS[name]:
            prop["description"] = FIELDS[name][field]
    return DESCRIPTIONS[name], shown


def numbered(text: str, first: int = 1) -> str:
    """``text`` with each line prefixed by its number (``first`` for the first) and a tab."""
    if not text:
        return text
    body, end = (text[:-1], "\n") if text.endswith("\n") else (text, "")
    return "\n".join(f"{number}\t{line}" for number, line in enumerate(body.split("\n"), start=first)) + end
