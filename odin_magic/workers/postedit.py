"""Fast-fail checks of a file a worker has just written or edited (seed 001's PostToolEdit hook).

Each write or edit by a worker's file tools is checked at once, so that a
syntax error goes back to the model as the tool's result instead of surfacing
many turns later in a gate:

* ``.py`` files must compile (``compile()``, as ``py_compile`` does, without
  writing a ``.pyc``);
* ``.json`` / ``.yaml`` / ``.yml`` / ``.toml`` files must parse;
* the loop's optional ``post_edit:`` commands run in the project directory with
  ``$ODIN_EDITED_FILE`` naming the edited file, each with a short timeout
  (:data:`POST_EDIT_TIMEOUT` unless the command says otherwise).

:func:`check_edit` returns one :class:`EditCheck` per check made; the stage
evidence records them all (``edit_checks``).
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import yaml

from odin_magic.loop.schema import GateCommand

POST_EDIT_TIMEOUT = 30.0
DETAIL_CHARS = 1500

#: Runs one command (cwd and env given) and returns (ok, detail); the gate runner in production.
CommandRunner = Callable[[GateCommand, dict[str, str]], tuple[bool, str]]


@dataclass(frozen=True)
class EditCheck:
    """One check of one edited file."""

    path: str  # as the worker named it
    check: str  # "compile" | "json" | "yaml" | "toml" | "post_edit: CMD"
    ok: bool
    detail: str = ""  # why it failed (empty when it passed)

    def to_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        return f"{self.path}: {self.check} {'ok' if self.ok else 'FAILED: ' + self.detail}"


def _syntax(text: str, path: Path) -> str | None:
    try:
        compile(text, str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        return f"{exc.msg} ({where})"
    except ValueError as exc:  # e.g. source with NUL bytes
        return str(exc)
    return None


def _json(text: str, path: Path) -> str | None:
    try:
        json.loads(text)
    except ValueError as exc:
        return str(exc)
    return None


def _yaml(text: str, path: Path) -> str | None:
    try:  # the syntax only: application tags (mkdocs' !!python/name, CloudFormation's !Ref) are fine
        for _ in yaml.compose_all(text, Loader=yaml.SafeLoader):
            pass
    except yaml.YAMLError as exc:
        return " ".join(str(exc).split())
    return None


def _toml(text: str, path: Path) -> str | None:
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return str(exc)
    return None


#: file suffix -> (check name, parser returning an error or None)
PARSERS: dict[str, tuple[str, Callable[[str, Path], str | None]]] = {
    ".py": ("compile", _syntax),
    ".json": ("json", _json),
    ".yaml": ("yaml", _yaml),
    ".yml": ("yaml", _yaml),
    ".toml": ("toml", _toml),
}


def parse_check(path: Path, shown: str) -> EditCheck | None:
    """The built-in check for ``path``'s file type, or None when its type has none."""
    kind = PARSERS.get(path.suffix.lower())
    if kind is None or not path.is_file():
        return None
    name, parser = kind
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return EditCheck(shown, name, False, f"cannot be read as UTF-8 text: {exc}")
    problem = parser(text, path)
    return EditCheck(shown, name, problem is None, (problem or "")[:DETAIL_CHARS])


def check_edit(
    path: Path,
    shown: str,
    commands: list[GateCommand],
    run: CommandRunner,
) -> list[EditCheck]:
    """Every check of the file a worker just wrote at ``path`` (named ``shown`` to the model).

    The built-in parse check comes first; the ``post_edit`` commands run only when it
    passed (a file that does not parse tells the model enough). ``commands`` is empty
    for files outside the project tree (the run dir's documents): the caller decides.
    """
    checks: list[EditCheck] = []
    parsed = parse_check(path, shown)
    if parsed is not None:
        checks.append(parsed)
        if not parsed.ok:
            return checks
    for command in commands:
        if command.timeout is None:
            command = GateCommand(cmd=command.cmd, timeout=POST_EDIT_TIMEOUT)
        ok, detail = run(command, {"ODIN_EDITED_FILE": str(path)})
        checks.append(EditCheck(shown, f"post_edit: {command.cmd}", ok, "" if ok else detail[-DETAIL_CHARS:]))
        if not ok:
            break
    return checks


def failure_message(checks: list[EditCheck]) -> str | None:
    """What the model is told when a check failed (None when all passed)."""
    failed = [c for c in checks if not c.ok]
    if not failed:
        return None
    first = failed[0]
    return (f"the file was written, but the fast-fail check `{first.check}` of {first.path} failed: "
            f"{first.detail}\nFix {first.path} before going on.")
