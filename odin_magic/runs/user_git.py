"""The user's own git repository, as delivery writes to it: objects, a temporary index, one ref at the end.

Nothing here checks out, touches the user's index (``.git/index``), working tree or current branch: every
tree is built in a temporary index file (``GIT_INDEX_FILE``) from plumbing (``read-tree``, ``update-index
--cacheinfo``, ``hash-object -w``, ``write-tree``, ``commit-tree``), and the branch is made by one
``update-ref`` last, so a failure half-way leaves objects no ref names (git's ``gc`` removes them), never
a branch. The gits run as the checkpoint store's do (:mod:`odin_magic.runs.checkpoint_git`): hooks and
fsmonitor off on the command line, an environment built from nothing but ``PATH``, ``HOME`` (the user's
identity in their config) and the locale: no ``ANTHROPIC_*`` variable, no configured secret.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from odin_magic.core.errors import UsageError

#: git configuration given on every command line: nothing of the user's runs (hooks, fsmonitor, signing)
CONFIG_ARGS = [
    arg for key_value in (
        "core.hooksPath=/dev/null", "core.fsmonitor=false", "core.untrackedCache=false", "commit.gpgSign=false",
        "core.pager=cat", "gc.auto=0", "maintenance.auto=false", "core.autocrlf=false", "core.quotepath=off",
        "core.editor=true", "core.askPass=true", "credential.helper=", "core.useReplaceRefs=false",
    ) for arg in ("-c", key_value)
]
#: files in the git dir that say a rebase, merge, cherry-pick or revert is under way
IN_PROGRESS = {"rebase-merge": "a rebase", "rebase-apply": "a rebase", "MERGE_HEAD": "a merge",
               "CHERRY_PICK_HEAD": "a cherry-pick", "REVERT_HEAD": "a revert", "BISECT_LOG": "a bisect"}
ZERO = "0" * 40
FALLBACK_NAME, FALLBACK_EMAIL = "odin", "odin@localhost"


def user_env() -> dict[str, str]:
    """The whole environment of a git on the user's repository."""
    env = {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0",
           "GIT_OPTIONAL_LOCKS": "0", "GIT_CONFIG_NOSYSTEM": "1", "GIT_NO_REPLACE_OBJECTS": "1"}
    if os.environ.get("HOME"):
        env["HOME"] = os.environ["HOME"]
    return env


@dataclass(frozen=True)
class Head:
    """Where the user's repository is: its branch (None: detached) and commit (None: no commit yet)."""

    branch: str | None
    commit: str | None


class UserRepo:
    """The git repository the project is in (``UsageError`` when there is none)."""

    def __init__(self, project_dir: Path | str):
        self.project_dir = Path(project_dir).resolve()
        self.env = user_env()
        self.index: Path | None = None  # the temporary index while a tree is built (:meth:`scratch_index`)
        self._identity: dict[str, str] | None = None  # read once (:meth:`identity`)
        proc = self._run("rev-parse", "--show-toplevel", "--absolute-git-dir", "--show-prefix", cwd=self.project_dir)
        if proc.returncode != 0:
            raise UsageError(f"{self.project_dir} is not in a git repository: a run is delivered as a git branch",
                             hint="git init && git add -A && git commit -m 'initial commit', then deliver again")
        top, git_dir, *prefix = proc.stdout.decode("utf-8", "surrogateescape").split("\n")
        self.top, self.git_dir = Path(top), Path(git_dir)
        self.prefix = prefix[0] if prefix else ""  # the project's folder in the repository ("" at its top)

    # -- git ---------------------------------------------------------------------------

    def _run(self, *args: str, input: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
        env = dict(self.env)
        if self.index is not None:
            env["GIT_INDEX_FILE"] = str(self.index)
        try:
            return subprocess.run(["git", *CONFIG_ARGS, *args], cwd=cwd or self.top, env=env, input=input,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        except FileNotFoundError:
            raise UsageError("delivering a run needs git, and no `git` program was found",
                             hint="install git (e.g. apt-get install git) and try again") from None

    def git(self, *args: str, input: bytes | None = None) -> str:
        proc = self._run(*args, input=input)
        if proc.returncode != 0:
            detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise UsageError(f"git {args[0]} failed in {self.top}: {detail[-1] if detail else 'exit ' + str(proc.returncode)}",
                             hint="nothing was delivered; fix the repository and deliver again")
        return proc.stdout.decode("utf-8", "surrogateescape")

    def ok(self, *args: str) -> bool:
        return self._run(*args).returncode == 0

    # -- where the repository is -------------------------------------------------------

    def head(self) -> Head:
        branch = self._run("symbolic-ref", "-q", "--short", "HEAD")
        commit = self._run("rev-parse", "-q", "--verify", "HEAD^{commit}")
        return Head(branch.stdout.decode().strip() or None if branch.returncode == 0 else None,
                    commit.stdout.decode().strip() or None if commit.returncode == 0 else None)

    def in_progress(self) -> str | None:
        """What is under way in the repository (``"a rebase"``), or None."""
        for name, what in IN_PROGRESS.items():
            if (self.git_dir / name).exists():
                return what
        return None

    def valid_branch_name(self, name: str) -> bool:
        return not name.startswith("-") and self.ok("check-ref-format", f"refs/heads/{name}")

    def branch_commit(self, name: str) -> str | None:
        proc = self._run("rev-parse", "-q", "--verify", f"refs/heads/{name}^{{commit}}")
        return proc.stdout.decode().strip() if proc.returncode == 0 else None

    def has_commit(self, sha: str) -> bool:
        return self.ok("cat-file", "-e", f"{sha}^{{commit}}")

    def index_clean(self) -> bool:
        """The user's index holds nothing staged against HEAD."""
        return self.ok("diff-index", "--cached", "--quiet", "HEAD", "--")

    def identity(self) -> dict[str, str]:
        """Author and committer from the user's config, or odin's own when none is set (read once)."""
        if self._identity is not None:
            return self._identity
        name = self._run("config", "user.name").stdout.decode().strip() or FALLBACK_NAME
        email = self._run("config", "user.email").stdout.decode().strip() or FALLBACK_EMAIL
        self._identity = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name,
                          "GIT_COMMITTER_EMAIL": email}
        return self._identity

    def remote_url(self, name: str = "origin") -> str | None:
        proc = self._run("remote", "get-url", name)
        return proc.stdout.decode().strip() if proc.returncode == 0 else None

    # -- building commits --------------------------------------------------------------

    @contextmanager
    def scratch_index(self, commit: str) -> Iterator[None]:
        """A temporary index holding ``commit``'s tree for the duration (the user's index never read)."""
        fd, name = tempfile.mkstemp(prefix="odin-deliver-", suffix=".index")
        os.close(fd)
        os.unlink(name)  # git makes it; an empty file is not an index
        self.index = Path(name)
        try:
            self.git("read-tree", commit)
            yield
        finally:
            self.index = None
            Path(name).unlink(missing_ok=True)

    def put(self, path: str, mode: str, data: bytes) -> None:
        """``path`` (repository-relative) in the temporary index, holding ``data``."""
        sha = self.git("hash-object", "-w", "--no-filters", "--stdin", input=data).strip()
        self.git("update-index", "--add", "-z", "--index-info",
                 input=f"{mode} {sha}\t{path}\0".encode("utf-8", "surrogateescape"))

    def drop(self, path: str) -> None:
        self.git("update-index", "-z", "--force-remove", "--stdin", input=path.encode("utf-8", "surrogateescape") + b"\0")

    def ignored(self, paths: list[str]) -> set[str]:
        """The ``paths`` the repository's ignore rules ignore (a path in the index never is)."""
        if not paths:
            return set()
        proc = self._run("check-ignore", "-z", "--stdin", input=b"".join(p.encode("utf-8", "surrogateescape") + b"\0"
                                                                         for p in paths))
        return {p.decode("utf-8", "surrogateescape") for p in proc.stdout.split(b"\0") if p}

    def write_tree(self) -> str:
        return self.git("write-tree").strip()

    def commit_tree(self, tree: str, parent: str, message: str) -> str:
        saved = self.env
        self.env = {**saved, **self.identity()}
        try:
            return self.git("commit-tree", tree, "-p", parent, "-F", "-", input=message.encode("utf-8")).strip()
        finally:
            self.env = saved

    def tree_of(self, commit: str) -> str:
        return self.git("rev-parse", f"{commit}^{{tree}}").strip()

    def set_branch(self, name: str, commit: str, old: str | None, message: str) -> None:
        """``refs/heads/name`` to ``commit``, only if it is still ``old`` (None: it must not exist)."""
        self.git("update-ref", "-m", message, f"refs/heads/{name}", commit, old or ZERO)

    def index_to_head(self) -> None:
        """``--commit`` only: the user's own index made the new HEAD's tree (as ``git commit`` leaves it);
        the working tree is not touched."""
        self.git("read-tree", "HEAD")
        self._run("update-index", "-q", "--refresh")
