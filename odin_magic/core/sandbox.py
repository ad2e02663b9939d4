"""The sandbox of the commands a stage runs: the policy and the bubblewrap command line.

Every command odin runs for a stage (gate commands, ``post_edit``, the regression
suite, mutants, the worker's bash tool) runs under ``bwrap`` when the sandbox is on:

* the whole filesystem read-only, ``/dev`` and a fresh ``/proc``, a new empty ``/run`` (no docker.sock, no
  session bus; with the network, the resolver's files), a private ``/tmp`` where only what the command needs of
  the host's is shown read-only (its PATH, odin's Python and its ``sys.path`` with the links in it, the run dir:
  a venv or linked dependencies there still work), never a host socket; new names are its own;
* the command's working tree (the project, or a mutation scratch copy) writable, its
  ``.odin-loop/`` and ``.git/`` read-only again, except the run-dir artifacts the stage
  ``produces``, bound writable one by one;
* a PID namespace of its own (no ``/proc`` of the driver; everything dies with it), a new
  session, no network unless the loop or stage says ``network: true``;
* an environment without the API key or any configured secret (:mod:`odin_magic.core.secrets`).

The mode is ``auto`` (bwrap when it works here, else off with a warning), ``bwrap``
(an error at run start when it does not work) or ``off``. The user setting, the
``ODIN_SANDBOX`` environment variable, wins over the loop's ``sandbox:`` when given.

The seam: the resolved policy travels in the command environment
(:meth:`SandboxPolicy.env_vars`: ``ODIN_SANDBOX_ACTIVE``, ``ODIN_SANDBOX_WRITE``,
``ODIN_NETWORK``) built by :func:`odin_magic.core.commands.command_env`;
:class:`odin_magic.core.processes.GuardedCommand` and the bash tool's shell guard
wrap their command with :func:`wrap` when it says so.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal, Mapping

from odin_magic.core.errors import ConfigError, OdinError
from odin_magic.core.secrets import secret_names, secret_values

Mode = Literal["auto", "bwrap", "off"]
MODES: tuple[str, ...] = ("auto", "bwrap", "off")
USER_VAR = "ODIN_SANDBOX"  # the user setting: auto | bwrap | off
ACTIVE_VAR = "ODIN_SANDBOX_ACTIVE"  # "1": wrap the command with bwrap
WRITE_VAR = "ODIN_SANDBOX_WRITE"  # os.pathsep-joined absolute paths bound writable
NETWORK_VAR = "ODIN_NETWORK"  # "1": keep the network
SEAM_VARS = (ACTIVE_VAR, WRITE_VAR, NETWORK_VAR)
PROTECTED = (".odin-loop", ".git")  # read-only inside the working tree
INSTALL_HINT = "install bubblewrap (apt install bubblewrap)"
OFF_ALLOWS = ("commands and the worker's bash can write anywhere you can (.odin-loop/, .git/, your home, /tmp), "
              "reach the network and see odin's processes; what odin still detects: docs/security.md, "
              "\"Without the sandbox\"")


class SandboxUnavailable(OdinError):
    """``sandbox: bwrap`` was asked for where bubblewrap cannot run."""


class ProtectedLink(SandboxUnavailable):
    """The working tree's ``.git`` or ``.odin-loop`` is a symbolic link: it cannot be protected, nothing runs."""


@dataclass(frozen=True)
class Probe:
    works: bool
    reason: str  # why not (empty when it works)
    bwrap: str | None = None  # the program's path


def _probe_command(bwrap: str) -> list[str]:
    return [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            "--unshare-pid", "--unshare-net", "--die-with-parent", "--new-session", "true"]


@functools.cache
def probe() -> Probe:
    """Whether bwrap works here (tried once per process by running ``bwrap ... true``), and why not."""
    if not sys.platform.startswith("linux"):
        return Probe(False, f"the sandbox needs Linux (bubblewrap); this is {sys.platform}")
    bwrap = shutil.which("bwrap") or next((p for p in ("/usr/bin/bwrap", "/bin/bwrap") if os.access(p, os.X_OK)), None)
    if bwrap is None:
        return Probe(False, f"bwrap is not installed: {INSTALL_HINT}")
    try:
        done = subprocess.run(_probe_command(bwrap), capture_output=True, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Probe(False, f"bwrap could not start: {exc}", bwrap)
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return Probe(False, f"bwrap cannot create its namespaces here ({said[-1] if said else f'exit {done.returncode}'}): "
                     "user namespaces are refused (kernel.unprivileged_userns_clone=0, "
                     "kernel.apparmor_restrict_unprivileged_userns=1, or a container without them)", bwrap)
    return Probe(True, "", bwrap)


def user_mode(env: Mapping[str, str] | None = None) -> str | None:
    """The user setting (``ODIN_SANDBOX``), when given."""
    raw = (os.environ if env is None else env).get(USER_VAR, "").strip().lower()
    if not raw:
        return None
    if raw not in MODES:
        raise ConfigError(f"invalid environment variable {USER_VAR}: {raw!r}",
                          hint=f"set {USER_VAR} to one of: {', '.join(MODES)} (or unset it to use the loop's `sandbox:`)")
    return raw


def chosen_mode(loop_mode: str, env: Mapping[str, str] | None = None) -> str:
    """The mode in force: the user setting when given, else the loop's."""
    return user_mode(env) or loop_mode


@dataclass(frozen=True)
class Resolution:
    active: bool
    warning: str | None  # one line for the run's start when the run is unsandboxed


def resolve(mode: str) -> Resolution:
    """``auto | bwrap | off`` made definite here; :class:`SandboxUnavailable` for ``bwrap`` where it cannot run."""
    if mode == "off":
        return Resolution(False, f"sandbox off: this run is unsandboxed; {OFF_ALLOWS}")
    found = probe()
    if found.works:
        return Resolution(True, None)
    if mode == "bwrap":
        raise SandboxUnavailable(f"sandbox: bwrap was asked for, but {found.reason}",
                                 hint=f"{INSTALL_HINT}, or set `sandbox: auto` (or {USER_VAR}=auto) to run unsandboxed")
    return Resolution(False, f"sandbox unavailable ({found.reason}): this run is unsandboxed; {OFF_ALLOWS}")


@dataclass(frozen=True)
class SandboxPolicy:
    """What one stage's commands may do: sandboxed or not, the extra writable paths, the network."""

    active: bool
    writable: tuple[str, ...] = ()  # absolute paths; a directory's ends with "/"
    network: bool = False

    def env_vars(self) -> dict[str, str]:
        if not self.active:
            return {}
        return {ACTIVE_VAR: "1", WRITE_VAR: os.pathsep.join(str(p) for p in self.writable),
                NETWORK_VAR: "1" if self.network else "0"}


def stage_policy(mode: str, writable: list[tuple[Path, bool]], network: bool) -> SandboxPolicy:
    """The policy of a stage whose loop (or user) chose ``mode``: ``writable`` are its run-dir ``produces``
    as (absolute path, is a directory)."""
    paths = tuple(str(p).rstrip(os.sep) + (os.sep if is_dir else "") for p, is_dir in writable)
    return SandboxPolicy(resolve(mode).active, paths, network)


# -- the command line ----------------------------------------------------------------------------


def _root_of(cwd: Path, env: Mapping[str, str]) -> Path:
    """The writable working tree: the project when ``cwd`` is in it, else ``cwd`` (a scratch copy)."""
    cwd = Path(cwd).resolve()
    project = env.get("ODIN_PROJECT_DIR")
    if project:
        root = Path(project).resolve()
        if cwd == root or cwd.is_relative_to(root):
            return root
    return cwd


def _make_sources(writable: list[str]) -> list[Path]:
    """Create each missing writable path (a directory for a name ending in ``/``; else an empty file) so
    that bwrap can bind it; returns the files it created (see :func:`drop_placeholders`)."""
    created = []
    for entry in writable:
        path = Path(entry)
        if path.exists() or path.is_symlink():
            continue
        try:
            if entry.endswith(os.sep):
                path.mkdir(parents=True, exist_ok=True)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.touch(exist_ok=False)
                created.append(path)
        except OSError:
            continue
    return created


def drop_placeholders(created: list[Path]) -> None:
    """Remove the empty files :func:`wrap` created to bind, when the command left them empty
    (so that a ``produces`` the stage did not write is still missing)."""
    for path in created:
        try:
            if path.is_file() and not path.is_symlink() and path.stat().st_size == 0:
                path.unlink()
        except OSError:
            continue


def _plain(path: Path, run_dir: str | None) -> bool:
    """Whether ``path`` is in the run dir, with no symbolic link on the way (a planted link is never bound)."""
    if not run_dir or not path.is_relative_to(run_dir):
        return False
    real_run = Path(os.path.realpath(run_dir))
    return Path(os.path.realpath(path)) == real_run / path.relative_to(run_dir)


def _tmp_dir(path: str) -> str | None:
    """``path``'s real path reduced to an existing directory under ``/tmp`` (a file's own directory), or None:
    outside ``/tmp``, ``/tmp`` itself, a socket, or a directory that holds a socket (an agent's, X11's, tmux's)."""
    real = os.path.realpath(path)
    try:
        if stat.S_ISSOCK(os.stat(real).st_mode):
            return None
    except OSError:
        pass
    while real.startswith("/tmp/") and not os.path.isdir(real):
        real = os.path.dirname(real)
    if not real.startswith("/tmp/") or not os.access(real, os.R_OK | os.X_OK):
        return None
    try:
        with os.scandir(real) as entries:  # d_type: no stat per entry; a socket is neither a file, a dir nor a link
            if any(not (e.is_dir(follow_symlinks=False) or e.is_file(follow_symlinks=False) or e.is_symlink())
                   for e in entries):
                return None
    except OSError:
        return None
    return real


@functools.lru_cache(maxsize=64)
def _links_in(directory: str, mtime_ns: int) -> tuple[str, ...]:
    try:
        with os.scandir(directory) as entries:
            return tuple(e.path for e in entries if e.is_symlink())
    except OSError:
        return ()


def _linked_from(directory: str) -> tuple[str, ...]:
    """The symbolic links directly in ``directory`` (a venv's dependencies linked from another venv); scanned
    again only when the directory changed (its mtime)."""
    try:
        return _links_in(directory, os.stat(directory).st_mtime_ns)
    except OSError:
        return ()


def _under_tmp(env: Mapping[str, str]) -> list[str]:
    """What the private ``/tmp`` would hide that a command needs, bound again read-only: its PATH entries (a
    ``bin`` entry's prefix: a venv), odin's Python (``sys.prefix``, ``sys.base_prefix``, each ``sys.path`` entry
    and the targets of the links directly in them), the run dir (whose harness a mutant's command in a scratch
    copy runs). Nothing else of the host's ``/tmp``: not its sockets (an ssh agent, X11), not others' files."""
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p]
    wanted = [*path, *(os.path.dirname(p) for p in path if os.path.basename(p.rstrip(os.sep)) == "bin"),
              sys.prefix, sys.base_prefix, env.get("ODIN_RUN_DIR", "")]
    for entry in filter(None, sys.path):
        wanted += [entry, *_linked_from(entry)]
    found: list[str] = []
    for real in sorted({d for d in map(_tmp_dir, dict.fromkeys(filter(None, wanted))) if d}):
        if not any(real.startswith(f + os.sep) for f in found):  # an ancestor is bound already
            found.append(real)
    return found


def _run_dir_args(network: bool) -> list[str]:
    """A new, empty ``/run`` (no docker.sock, no session bus); with the network, the resolver's files back."""
    args = ["--tmpfs", "/run"]
    if network:
        keep = {"/run/systemd/resolve", os.path.dirname(os.path.realpath("/etc/resolv.conf"))}
        for directory in sorted(keep):
            if directory.startswith("/run/") and os.path.isdir(directory):
                args += ["--ro-bind", directory, directory]
    return args


def bwrap_args(root: Path, writable: list[str], network: bool, env: Mapping[str, str] | None = None,
               chdir: Path | None = None) -> list[str]:
    """bwrap's options (without the program): see the module docstring; the command starts in ``chdir``
    (default: ``root``)."""
    args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *_run_dir_args(network), "--tmpfs", "/tmp"]
    for shown in _under_tmp(env or {}):
        args += ["--ro-bind-try", shown, shown]  # -try: a folder gone since it was listed is no failure
    args += ["--bind", str(root), str(root)]
    for name in PROTECTED:
        inner = root / name
        if inner.exists() and not inner.is_symlink():  # a link: refused by wrap (_refuse_links)
            args += ["--ro-bind", str(inner), str(inner)]
    for path in map(Path, writable):
        if path.exists() and not path.is_symlink():  # bwrap refuses a missing source
            args += ["--bind", str(path), str(path)]
    for secret in HIDDEN:  # readable in the project, but never by a command: empty in the sandbox
        if (root / secret).is_file() and not (root / secret).is_symlink():
            args += ["--ro-bind", "/dev/null", str(root / secret)]
    args += ["--unshare-pid", "--die-with-parent", "--new-session"]
    if not network:
        args.append("--unshare-net")
    args += ["--chdir", str(chdir or root)]
    return args


#: Files of the project no command may read (the key that seals project memory: learning/memory_seal.py)
HIDDEN = (".odin-loop/memory.key",)

#: The host's sockets these name (an ssh agent, the session bus, ``/run/user/$UID``) are not in the sandbox.
HOST_SOCKET_VARS = ("SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR")


def _unwanted(env: Mapping[str, str]) -> Callable[[str, str], bool]:
    """Whether a variable of ``env`` may not be in a sandboxed command's environment (see :func:`clean_env`)."""
    names = set(secret_names(env)) | set(secret_names()) | set(HOST_SOCKET_VARS)
    values = {v for v, _ in secret_values(env)} | {v for v, _ in secret_values()}
    return lambda k, v: k.startswith("ANTHROPIC_") or k in names or v in values


def clean_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without any secret (no ``ANTHROPIC_*``, no configured secret variable, no value that is a secret)
    and without the variables naming the host's sockets (:data:`HOST_SOCKET_VARS`)."""
    unwanted = _unwanted(env)
    return {k: v for k, v in env.items() if not unwanted(k, v)}


def _checked(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` as it is when clean (:func:`odin_magic.core.commands.command_env` cleaned it), else cleaned: a
    dirty environment handed to :func:`wrap` never reaches the command."""
    unwanted = _unwanted(env)
    return clean_env(env) if any(unwanted(k, v) for k, v in env.items()) else dict(env)


def _refuse_links(root: Path) -> None:
    """:class:`ProtectedLink` when the tree's ``.git`` or ``.odin-loop`` is a link (a worker may have moved it
    into the writable tree and linked it back): it would be written through the link."""
    for name in PROTECTED:
        inner = root / name
        if inner.is_symlink():
            raise ProtectedLink(f"the sandbox refuses to run commands: {name} is a symbolic link "
                                f"(to {os.readlink(inner)}), so it cannot be made read-only",
                                hint=f"replace {inner} with the directory itself")


@dataclass(frozen=True)
class Wrapped:
    argv: list[str]
    env: dict[str, str]
    created: list[Path]  # placeholders to drop once the command ended


def wrap(argv: list[str], cwd: Path, env: Mapping[str, str]) -> Wrapped:
    """``argv`` under bwrap when ``env`` carries an active policy (:meth:`SandboxPolicy.env_vars`), else as it is."""
    if env.get(ACTIVE_VAR) != "1":
        return Wrapped(list(argv), dict(env), [])
    found = probe()
    if not found.works or found.bwrap is None:
        raise SandboxUnavailable(f"the sandbox is on, but {found.reason}", hint=INSTALL_HINT)
    cwd = Path(cwd)
    root = _root_of(cwd, env)
    _refuse_links(root)
    writable = [p for p in env.get(WRITE_VAR, "").split(os.pathsep) if p and _plain(Path(p), env.get("ODIN_RUN_DIR"))]
    created = _make_sources(writable)
    args = bwrap_args(root, writable, env.get(NETWORK_VAR) == "1", env, chdir=cwd.resolve())
    return Wrapped([found.bwrap, *args, "--", *argv], _checked(env), created)
