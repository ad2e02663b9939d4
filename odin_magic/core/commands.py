"""Running one shell command with its evidence: in a process group of its own that never
outlives the driver (:mod:`odin_magic.core.processes`), in an environment without the
Anthropic key, its output's tails kept with every secret redacted.

Gate commands, acceptance criteria, the regression suite, mutants and the worker's
``post_edit`` checks all run through :func:`run_command`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Protocol

from odin_magic.core.processes import GuardedCommand, Output
from odin_magic.core.sandbox import SEAM_VARS, SandboxPolicy, SandboxUnavailable, clean_env
from odin_magic.core.secrets import redact_cut

DEFAULT_COMMAND_TIMEOUT = 600.0
TAIL_CHARS = 4000


class CommandSpec(Protocol):
    """What :func:`run_command` needs of a command (a loop's ``GateCommand`` is one)."""

    cmd: str
    timeout: float | None


@dataclass(frozen=True)
class CommandEvidence:
    """One ``gate.run`` command's outcome (the tails of its output are kept)."""

    cmd: str
    exit_code: int | None  # None: timed out or could not start
    timed_out: bool
    duration_s: float
    stdout_tail: str
    stderr_tail: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


def _tail(f) -> str:
    """The last characters of a command's output, every configured secret redacted
    (a command can read the driver's environment, e.g. ``cat /proc/$PPID/environ``), before it is cut, and
    a piece of one where the reading began too."""
    f.seek(0, os.SEEK_END)
    size = f.tell()
    f.seek(max(0, size - TAIL_CHARS * 4))
    text = f.read().decode("utf-8", errors="replace")
    return redact_cut(text)[-TAIL_CHARS:]


#: Set by ipykernel; inherited, they make pytest and friends write colour codes
#: into the evidence, the history's failure reasons and the status text.
_FORCED_COLOUR = ("FORCE_COLOR", "CLICOLOR_FORCE", "CLICOLOR")


def command_env(project_dir: Path, run_dir: Path, run_id: str, stage_id: str,
                sandbox: SandboxPolicy | None = None) -> dict[str, str]:
    """The environment of gate commands (and of the worker's bash tool): the process's own,
    less every ``ANTHROPIC_*`` variable, so that ``env`` or ``$ANTHROPIC_API_KEY`` does not show the key.

    A command can still find it elsewhere (``/proc/$PPID/environ`` when run as root, a
    file): what it prints is redacted (:mod:`odin_magic.core.secrets`) before it is recorded.
    With an active ``sandbox`` policy, it carries the policy (:mod:`odin_magic.core.sandbox`: the
    command then runs under bwrap) and no configured secret either."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ANTHROPIC_") and k not in _FORCED_COLOUR and k not in SEAM_VARS}
    if sandbox is not None and sandbox.active:
        env = clean_env(env)
        env.update(sandbox.env_vars())
    env.update(
        ODIN_PROJECT_DIR=str(project_dir),
        ODIN_RUN_DIR=str(run_dir),
        ODIN_RUN_ID=run_id,
        ODIN_STAGE=stage_id,
        PATH=os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""),
    )
    return env


class CommandEnv(Mapping):
    """:func:`command_env`, copied from the process's environment when first used: a stage whose gate runs
    no command (a judge-only gate, a dry run) does not pay for it at every transition."""

    def __init__(self, project_dir: Path, run_dir: Path, run_id: str, stage_id: str,
                 sandbox: SandboxPolicy | None = None):
        self._args = (project_dir, run_dir, run_id, stage_id, sandbox)
        self._env: dict[str, str] | None = None

    def _built(self) -> dict[str, str]:
        if self._env is None:
            self._env = command_env(*self._args)
        return self._env

    def __getitem__(self, key: str) -> str:
        return self._built()[key]

    def __iter__(self):
        return iter(self._built())

    def __len__(self) -> int:
        return len(self._built())


def run_command(command: CommandSpec, cwd: Path, env: Mapping[str, str]) -> CommandEvidence:
    """Run one shell command in a process group of its own that never outlives the driver
    (:mod:`odin_magic.core.processes`): recorded in the run dir (``env["ODIN_RUN_DIR"]``) before it
    runs, killed whole when it ends, times out or is interrupted."""
    timeout = command.timeout or DEFAULT_COMMAND_TIMEOUT
    started = time.monotonic()
    run_dir = Path(env["ODIN_RUN_DIR"]) if env.get("ODIN_RUN_DIR") and os.path.isdir(env["ODIN_RUN_DIR"]) else None
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            guarded = GuardedCommand(command.cmd, cwd=cwd, env=env, output=Output(out, err), record_dir=run_dir)
        except (OSError, SandboxUnavailable) as exc:
            return CommandEvidence(command.cmd, None, False, 0.0, "", f"could not start: {exc}")
        timed_out = False
        try:
            code: int | None = guarded.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            code = None
        finally:  # what it left running, or all of it (timed out, or e.g. KeyboardInterrupt): nothing stays behind
            guarded.kill()
        stderr = _tail(err)
        if timed_out:
            stderr = (stderr + f"\n[odin] killed after {timeout:g} s (timeout)").lstrip("\n")
        return CommandEvidence(
            cmd=command.cmd, exit_code=code, timed_out=timed_out,
            duration_s=round(time.monotonic() - started, 3), stdout_tail=_tail(out), stderr_tail=stderr,
        )
