"""A role's tools: the SDK's agent toolset, filtered and wrapped by the role's policy.

A role is offered only the tools it may use (a model offered a tool plans with
it, and a refused call costs a turn; see docs/claude-worker.md). Each call goes
through :class:`RoleToolbox`, which

* expands ``$ODIN_RUN_DIR`` and ``$ODIN_PROJECT_DIR`` (or ``${...}``) in a file
  tool's path to the real directory, and refuses any other ``$`` or a leading
  ``~`` with a message that names the real path to use;
* refuses a tool the role may not use, or a write outside the role's scope
  (never, whatever the role, below the engine's ``.odin-loop/`` or ``.git/``
  but the stage's produces), with a clear tool error (the model sees it) and a
  ``tool_refused`` event;
* never lets a file tool read a file no command may read (``.odin-loop/memory.key``,
  :data:`odin_magic.core.sandbox.HIDDEN`): read refuses it, grep leaves its lines out;
* gives a file that write or edit is about to change an inode of its own when
  it has other hard links, so a link to a file elsewhere leads nowhere;
* streams one ``tool`` line per call to the sink;
* shows the model our descriptions of the tools (:mod:`odin_magic.workers.tool_texts`) and
  ``read``'s result with numbered lines;
* runs the SDK's own implementation otherwise (file tools confined to the
  project dir and the run dir, symlink-safe).

:meth:`RoleToolbox.aclose` ends the bash tool's shell: the Messages tool runner
does not, so the worker calls it when the stage ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Callable, NoReturn

from pydantic import ValidationError

from anthropic.lib.tools import BetaAsyncFunctionTool, ToolError, beta_async_tool
from anthropic.lib.tools._beta_functions import aclose_runnable_tool
from anthropic.lib.tools.agent_toolset import AgentToolContext, beta_agent_toolset_20260401, resolve_path

from odin_magic.core.commands import command_env, run_command
from odin_magic.loop.schema import GateCommand
from odin_magic.core.processes import shell_guard_env
from odin_magic.core.encoding import printable
from odin_magic.core.sandbox import HIDDEN, PROTECTED, SandboxPolicy, wrap
from odin_magic.workers.saved_output import drop_saved
from odin_magic.workers.tool_texts import numbered, presented
from odin_magic.workers.postedit import EditCheck, check_edit, failure_message
from odin_magic.loop.roles import ALL_TOOLS, WRITE_TOOLS, RolePolicy, write_allowed
from odin_magic.core.secrets import redact, redact_cut
from odin_magic.runs import activity

#: Checks a file just written (its real path, and the path as the model named it).
EditChecker = Callable[[Path, str], list[EditCheck]]

#: The argument of each file tool that names a path.
PATH_ARGS = {"read": "file_path", "write": "file_path", "edit": "file_path", "glob": "path", "grep": "path"}
_VARIABLE = re.compile(r"\$(?:\{(\w*)\}|(\w*))")


def place_variables(ctx: AgentToolContext) -> dict[str, str]:
    """The variables a file tool's path may hold: ``ODIN_PROJECT_DIR`` and ``ODIN_RUN_DIR``, as bash sees them."""
    env = ctx.env or {}
    found = {"ODIN_PROJECT_DIR": env.get("ODIN_PROJECT_DIR") or str(ctx.workdir)}
    run_dir = env.get("ODIN_RUN_DIR") or (str(ctx.allowed_roots[0]) if ctx.allowed_roots else "")
    if run_dir:
        found["ODIN_RUN_DIR"] = run_dir
    return found


def expand_path(value: str, variables: dict[str, str]) -> str:
    """``value`` with ``$ODIN_RUN_DIR`` / ``${ODIN_PROJECT_DIR}`` replaced by the real directory.

    Raises ValueError, naming the real paths to use, for a leading ``~`` or any other ``$``."""
    known = "; ".join(f"${name} is {path}" for name, path in sorted(variables.items()))
    use = (f"name the file relative to the project directory ({variables['ODIN_PROJECT_DIR']}) or by its "
           f"real absolute path ({known})")
    if value.startswith("~"):
        raise ValueError(f"the path {value!r} starts with '~', which the file tools do not expand: {use}")

    def replace(match: re.Match[str]) -> str:
        name = match.group(1) if match.group(1) is not None else match.group(2)
        if name in variables:
            return variables[name]
        raise ValueError(f"the path {value!r} holds {match.group(0)!r}, which the file tools do not expand "
                         f"(only $ODIN_RUN_DIR and $ODIN_PROJECT_DIR): {use}")

    return _VARIABLE.sub(replace, value)


def own_inode(target: Path) -> None:
    """Give ``target`` an inode of its own when it has other hard links (``st_nlink > 1``): its content is
    copied to a new file in the same directory, which replaces it atomically. A write or edit that follows
    changes only this name, never the file a link such as ``ln /elsewhere/f src/f`` points at."""
    try:
        st = os.lstat(target)
    except OSError:
        return
    if not stat.S_ISREG(st.st_mode) or st.st_nlink <= 1:
        return
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".odin-unlink")
    try:
        with os.fdopen(fd, "wb") as out, open(target, "rb") as src:
            shutil.copyfileobj(src, out)
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def bash_environment(project_dir: Path, run_dir: Path, run_id: str, stage_id: str,
                     sandbox: SandboxPolicy | None = None) -> dict[str, str]:
    """The bash tool's environment: the gate commands' own (so the model can run a gate command
    exactly as the gate will; it carries no ``ANTHROPIC_*`` variable). The shell puts itself
    under odin's shell guard (a process group of its own that dies with the driver,
    :mod:`odin_magic.core.processes`), which runs the real shell under bwrap when ``sandbox`` is active
    (see :func:`shell_placeholders`)."""
    env = command_env(project_dir, run_dir, run_id, stage_id, sandbox)
    env.setdefault("ODIN_TARGET_DIR", str(project_dir / "src"))
    env.update(shell_guard_env(run_dir))
    return env


def sandbox_shell(env: dict[str, str], project_dir: Path) -> list[Path]:
    """Put the bash tool's real shell under bwrap when ``env`` carries an active sandbox policy; the
    empty files made so that its ``produces`` can be bound (drop them at the stage's end:
    :func:`odin_magic.core.sandbox.drop_placeholders`)."""
    boxed = wrap(["/bin/bash", "--noprofile", "--norc"], project_dir, env)
    if boxed.argv[0] != "/bin/bash":
        env.update(shell_guard_env(Path(env["ODIN_RUN_DIR"]), boxed.argv))
    return boxed.created


def edit_checker(commands: list[GateCommand], project_dir: Path, env: dict[str, str]) -> EditChecker:
    """The fast-fail check of a stage's writes: the file's own parse check, then the loop's
    ``post_edit`` commands, run like gate commands (process group, timeout) in the project dir."""

    def run(command: GateCommand, extra: dict[str, str]) -> tuple[bool, str]:
        ev = run_command(command, project_dir, {**env, **extra})
        if ev.timed_out:
            return False, f"timed out after {command.timeout:g} s"
        return ev.ok, (ev.stderr_tail.strip() or ev.stdout_tail.strip() or f"exit {ev.exit_code}")

    project = Path(project_dir).resolve()

    def check(path: Path, shown: str) -> list[EditCheck]:
        real = path.resolve()
        in_project = real.is_relative_to(project) and ".odin-loop" not in real.relative_to(project).parts
        return check_edit(path, shown, commands if in_project else [], run)  # post_edit is for project files

    return check


def describe_call(name: str, args: dict[str, Any]) -> str:
    """One short line for a tool call, every character a terminal would act on escaped (a model's ESC or bidi
    override never reaches the live view or a terminal as such)."""
    return printable(_call_line(name, args))


def _call_line(name: str, args: dict[str, Any]) -> str:

    def short(value: Any, limit: int = 120) -> str:
        text = str(value).strip().splitlines()[0] if str(value).strip() else ""
        return text if len(text) <= limit else text[: limit - 1] + "…"

    if name == "bash":
        if args.get("restart"):
            return "bash: (restart)"
        return f"bash: {short(args.get('command', ''))}"
    if name == "write":
        return f"write {args.get('file_path')} ({len(str(args.get('content', '')))} chars)"
    if name == "edit":
        return f"edit {args.get('file_path')}"
    if name == "read":
        rng = args.get("view_range")
        return f"read {args.get('file_path')}" + (f" {rng}" if rng else "")
    if name == "glob":
        return f"glob {args.get('pattern')}" + (f" in {args['path']}" if args.get("path") else "")
    if name == "grep":
        return f"grep {short(args.get('pattern'), 60)}" + (f" in {args['path']}" if args.get("path") else "")
    return f"{name} {short(args)}"


@dataclass(frozen=True)
class ToolReports:
    """Where a toolbox tells what happens: each call (one line), each refused call, each tool error."""

    on_call: Callable[[str], None]
    on_refused: Callable[[str], None]
    on_error: Callable[[str], None] | None = None
    on_result: Callable[[str, str, str], None] | None = None  # (call, how it ended, its result): the tool log


class RoleToolbox:
    """The tools of one stage execution."""

    def __init__(
        self,
        ctx: AgentToolContext,
        policy: RolePolicy,
        *,
        produces: list[Path],
        stub_dir: Path,
        reports: ToolReports,
        check_edit: EditChecker | None = None,
    ):
        self.ctx = ctx
        self.policy = policy
        self.produces = [self._canonical(p) for p in produces]
        self.stub_dir = self._canonical(stub_dir)
        project = Path(ctx.workdir)
        self.owned = tuple(self._canonical(project / name) for name in PROTECTED)  # the engine's: produces only
        self.hidden = tuple(self._canonical(project / name) for name in HIDDEN)  # never read by a tool
        self._on_call = reports.on_call
        self._on_refused = reports.on_refused
        self._on_error = reports.on_error
        self._on_result = reports.on_result
        self._check_edit = check_edit
        self.refusals: list[str] = []
        self.edit_checks: list[EditCheck] = []  # every fast-fail check made after a write or edit
        self._variables = place_variables(ctx)
        self._sdk_tools = beta_agent_toolset_20260401(ctx)
        # only the tools the role may use are offered; the others stay here to be closed
        self.tools = [self._wrap(tool) for tool in self._sdk_tools if policy.allows_tool(tool.name)]
        env = ctx.env or {}  # when the stage's own tools act (attribution: odin_magic.runs.activity)
        self.activity = activity.begin(self._variables.get("ODIN_RUN_DIR", ""), env.get("ODIN_STAGE", ""),
                                       boxed="ODIN_GUARD_SANDBOX" in env)

    def _canonical(self, path: Path) -> Path:
        try:
            return resolve_path(self.ctx, str(path))
        except ValueError:
            return Path(os.path.realpath(path))

    @property
    def names(self) -> list[str]:
        """The tools offered to the model."""
        return [tool.name for tool in self.tools]

    def _record(self, message: str) -> str:
        message = redact(message)
        self.refusals.append(message)
        self._on_refused(message)  # the live view's tool_refused line, and tool-refusals.jsonl
        return message

    def _refuse(self, message: str) -> NoReturn:
        raise ToolError(f"refused: {self._record(message)}")

    def unknown_tool(self, name: str) -> None:
        """A call to a tool that is not offered: the tool runner answers it with a tool error; it is recorded here."""
        if name in ALL_TOOLS:
            self._record(f"the {self.policy.name} role may not use the {name} tool, which it is not offered "
                         f"(its tools are: {', '.join(self.names)})")
        else:
            self._record(f"there is no tool named {name!r} (the tools are: {', '.join(self.names)})")

    def _expanded(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """``args`` with the place variables of the tool's path expanded; a path they cannot fix is refused."""
        key = PATH_ARGS.get(name)
        value = args.get(key) if key else None
        if not isinstance(value, str) or ("$" not in value and not value.startswith("~")):
            return args
        try:
            return {**args, key: expand_path(value, self._variables)}
        except ValueError as exc:
            self._refuse(f"{name}: {exc}")

    def _check_paths(self, name: str, args: dict[str, Any]) -> Path | None:
        """The SDK's own confinement, checked first so that a path that leaves the project (and the
        run dir) is refused and recorded like any other refusal; the tool's path, resolved (None: it has none)."""
        key = PATH_ARGS.get(name)
        value = args.get(key) if key else None
        target = None
        if isinstance(value, str) and value:
            try:
                target = resolve_path(self.ctx, value)
            except ValueError as exc:
                self._refuse(f"{name}: {exc}")
        pattern = args.get("pattern")
        if name == "glob" and isinstance(pattern, str) and (
            PurePosixPath(pattern).is_absolute() or ".." in PurePosixPath(pattern).parts
        ):
            self._refuse(f"glob: the pattern {pattern!r} would leave the project (absolute, or with '..')")
        return target

    def _check(self, name: str, args: dict[str, Any]) -> None:
        role = self.policy.name  # only the tools the role is offered reach here (RoleToolbox.tools)
        target = self._check_paths(name, args)
        if target is None:
            return
        value = args[PATH_ARGS[name]]
        if target in self.hidden:
            self._refuse(f"{name}: {value} is the key that seals the project's memory; no tool or command reads it")
        if name in WRITE_TOOLS and not write_allowed(self.policy, target, self.produces, self.stub_dir, self.owned):
            self._refuse(f"the {role} role may not {name} {value}: {self.policy.describe()}")

    def _unhidden(self, text: str) -> str:
        """grep's result without the lines of a hidden file (``<path>:<line>:<text>``, its path as searched)."""
        prefixes = tuple(f"{path}:" for path in self.hidden)
        lines = text.split("\n")
        kept = [line for line in lines if not line.startswith(prefixes)]
        if len(kept) == len(lines):
            return text
        return "\n".join(kept) if any(line.strip() for line in kept) else "no matches"

    def _wrap(self, tool: BetaAsyncFunctionTool[Any]) -> BetaAsyncFunctionTool[Any]:
        name = tool.name
        schema = tool.input_schema

        async def call(**kwargs: Any) -> Any:
            args = {k: v for k, v in kwargs.items() if v is not None}
            line = redact(describe_call(name, redact(args)))  # redacted before the line cuts a long argument
            self._on_call(line)
            try:
                with self.activity.acting(name):
                    result = await self._invoke(tool, name, args)
            except ToolError as exc:
                self._log(line, _ended(name, exc), exc.content)
                raise
            self._log(line, "exit 0" if name == "bash" else "ok", result)
            return result

        call.__name__ = name
        description, schema = presented(name, tool.description, dict(schema))  # our texts, not the SDK's
        return beta_async_tool(name=name, description=description, input_schema=schema)(call)

    def _log(self, line: str, status: str, content: Any) -> None:
        if self._on_result is not None:
            self._on_result(line, status, content if isinstance(content, str) else _text_of(content))

    async def _invoke(self, tool: BetaAsyncFunctionTool[Any], name: str, args: dict[str, Any]) -> Any:
        """The checked call: place variables expanded, the role's rules applied, the result redacted."""
        args = self._expanded(name, args)
        self._check(name, args)
        if name in WRITE_TOOLS:
            await self._own_inode(str(args.get("file_path", "")))
        try:
            # what a tool returns goes into the next request and thread.json: no secret in it, nor a piece
            # of one where the SDK cut a long output
            result = redact_cut(await tool.call(args))
            if name == "bash" and isinstance(result, str):  # the whole output the SDK saved in /tmp: removed
                result = drop_saved(result)
            if name == "grep" and isinstance(result, str):
                result = self._unhidden(result)
            if name == "read" and isinstance(result, str):  # numbered, so that a finding can cite a line
                result = numbered(result, max(1, int((args.get("view_range") or [1])[0])))
        except ToolError as exc:
            clean = redact_cut(exc.content)
            if name == "bash" and isinstance(clean, str):
                clean = drop_saved(clean)
            if self._on_error is not None:
                text = clean if isinstance(clean, str) else str(redact(str(exc)))
                first = text.strip().splitlines()[-1:] or [""]
                self._on_error(f"{name} failed: {first[0][:200]}")
            if clean is exc.content:
                raise
            raise ToolError(clean) from None
        except ValueError as exc:
            if isinstance(exc.__cause__, ValidationError):  # the model's arguments do not fit the tool
                self._refuse(f"invalid arguments for the {name} tool: {_argument_problems(exc.__cause__)}")
            raise self._failed(name, exc) from None
        except Exception as exc:  # a tool's own failure: a tool error for the model, no traceback
            raise self._failed(name, exc) from None
        if name in WRITE_TOOLS and self._check_edit is not None:
            await self._fast_fail(str(args.get("file_path", "")))
        return result

    def _failed(self, name: str, exc: Exception) -> ToolError:
        text = redact(f"{name} failed: {type(exc).__name__}: {exc}")
        if self._on_error is not None:
            self._on_error(text.splitlines()[0][:200])
        return ToolError(text)

    async def _own_inode(self, file_path: str) -> None:
        """Before a write or edit: a target with other hard links gets an inode of its own (:func:`own_inode`)."""
        try:
            target = resolve_path(self.ctx, file_path)
        except ValueError:
            return  # not a usable path: the SDK tool says why
        self.activity.wrote(target)
        try:
            await asyncio.to_thread(own_inode, target)
        except OSError as exc:
            self._refuse(f"{file_path} has other hard links and could not be given a copy of its own ({exc.strerror or exc})")

    async def _fast_fail(self, file_path: str) -> None:
        """Check the file just written; a failed check goes back to the model as the tool's error."""
        try:
            target = resolve_path(self.ctx, file_path)
        except ValueError:
            return
        checks = await asyncio.to_thread(self._check_edit, target, file_path)
        self.edit_checks.extend(checks)
        message = failure_message(checks)
        if message is not None:
            message = redact(message)  # a command's output may print a secret
            if self._on_error is not None:
                self._on_error(message.splitlines()[0][:300])
            raise ToolError(message)

    async def aclose(self) -> None:
        """End what the tools hold (the bash tool's shell), whatever happened in the stage."""
        for tool in self._sdk_tools:
            await aclose_runnable_tool(tool)
        self.activity.close()


def _argument_problems(exc: ValidationError) -> str:
    """``file_path: missing required argument; nonsense: unexpected keyword argument``."""
    parts = []
    for err in exc.errors(include_url=False)[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg'][0].lower()}{err['msg'][1:]}")
    more = exc.error_count() - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def _ended(name: str, exc: ToolError) -> str:
    """How a failed call ended, for the tool log: refused, a non-zero exit (bash), or an error."""
    text = exc.content if isinstance(exc.content, str) else _text_of(exc.content)
    if text.startswith("refused:"):
        return "refused"
    return "non-zero exit" if name == "bash" and not text.startswith("bash: ") else "error"


def _text_of(content: Any) -> str:
    """The text of a tool result given as content blocks."""
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) if isinstance(b, dict) else str(getattr(b, "text", b)) for b in content)
    return str(content)
