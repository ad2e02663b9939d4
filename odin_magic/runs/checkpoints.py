"""Checkpoints of the project tree: a shadow git repository under ``.odin-loop/``.

The engine records a checkpoint before every stage execution and another after
its work, and so knows what the stage added, modified and deleted (a drive
hands a checkpoint on where nothing can have changed since it was taken:
``odin_magic.engine.stage``; ``odin simulate`` takes none). The shadow
repository (``.odin-loop/checkpoints.git``) is driven by git plumbing with its
own ``GIT_DIR`` and index file (``.odin-loop/checkpoints.index``) over the
project directory as work tree: the user's own repository, index, branches,
stash and working files are never touched, and a project that is not a git
repository works the same way. What the project's ``.gitignore`` files ignore
is left out, and so are ``.odin-loop/`` itself, ``.git/`` and the caches that
running tests leaves behind (``__pycache__/``, ``*.pyc``, ``.pytest_cache/``,
``.ipynb_checkpoints/``).

A checkpoint id is a git tree id (content-addressed: the same tree is the same
id). Nothing here ever runs ``git gc``; ``gc.auto`` is off.

Restoring a checkpoint is journaled: the tree being left is checkpointed, a
journal naming both trees is written atomically, the files are replaced one by
one (each atomically), and the journal is removed. A crash in between leaves the
journal; the next :class:`Checkpoints` opened on the project finishes the
restore (roll forward), so the tree ends as the new one, never a mix.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import stat
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from odin_magic.core.confine import Confinement
from odin_magic.core.errors import OdinError
from odin_magic.core.atomic import read_nofollow, umask, write_atomic
from odin_magic.runs import checkpoint_listing as listing
from odin_magic.runs.checkpoint_git import CONFIG_ARGS, keep, pin, pinned_env, remove

GIT_DIR_NAME = "checkpoints.git"
INDEX_NAME = "checkpoints.index"
JOURNAL_NAME = "restore.journal.json"
#: git's processes start a session of their own (see Checkpoints._git)
OWN_SESSION = {"start_new_session": True}
#: left out of every checkpoint, besides what the project's .gitignore files ignore
EXCLUDED = (".odin-loop/", ".git/", "__pycache__/", "*.pyc", ".pytest_cache/", ".ipynb_checkpoints/")
LARGE_FILE = 50 << 20  # files larger than this when the store is made are left out of checkpoints
PRIME_LIMIT = LARGE_FILE
LARGE_LIST_LIMIT = 16 << 20  # info/large-files is read no further than this
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

ChangeKind = Literal["added", "modified", "deleted"]


class CheckpointError(OdinError):
    """The checkpoint store cannot do its job (git missing, the store damaged, files unreadable)."""


def _os_error(exc: Exception) -> str:
    """An error in one line: an OSError as its reason and file (no errno tuple)."""
    if isinstance(exc, OSError) and exc.strerror:
        name = exc.filename2 or exc.filename  # os.replace(tmp, path): the path, not the temporary file
        return f"{exc.strerror}: {name}" if name else exc.strerror
    return str(exc)


@dataclass(frozen=True)
class Change:
    """One file a stage changed, with line counts (None for a binary file)."""

    path: str
    kind: ChangeKind
    added: int | None
    deleted: int | None

    @property
    def binary(self) -> bool:
        return self.added is None

    def to_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        counts = "binary" if self.binary else f"+{self.added} -{self.deleted}"
        return f"{self.kind[0].upper()} {self.path} ({counts})"


@dataclass(frozen=True)
class StageCheckpoint:
    """One stage execution's checkpoints: before its work, after it, and what changed in between."""

    before: str
    after: str
    changes: list[Change]


@dataclass(frozen=True)
class Entry:
    mode: str
    sha: str


def _pinned(method):
    """A public operation of :class:`Checkpoints`: the store's config and exclude file are pinned once before
    it (``checkpoint_git.pin``), not again by the operations it calls nor before each of its gits."""
    @functools.wraps(method)
    def operation(self: "Checkpoints", *args, **kwargs):
        if self._pinning:
            return method(self, *args, **kwargs)
        self._pinning = True
        try:
            self._pin()
            return method(self, *args, **kwargs)
        finally:
            self._pinning = False
    return operation


EXCLUDE_TEXT = "".join(f"/{p}\n" if p == ".odin-loop/" else f"{p}\n" for p in EXCLUDED)


class Checkpoints:
    """The project's checkpoint store. Opening it finishes a restore a crash interrupted."""

    def __init__(self, project_dir: Path | str):
        self.project_dir = Path(project_dir).resolve()
        self.root = self.project_dir / ".odin-loop"
        self.git_dir = self.root / GIT_DIR_NAME
        self.index = self.root / INDEX_NAME
        self.journal = self.root / JOURNAL_NAME
        self.large_files = self.git_dir / "info" / "large-files"
        self.stage_rules = self.git_dir / "info" / "stage-rules"
        self._env = pinned_env(self.git_dir, self.index, self.project_dir)
        # the project's .gitignore files decide, not the user's global excludes file; files larger than
        # LARGE_FILE when the store was made are listed in info/large-files and left out
        self._config = [*CONFIG_ARGS, "-c", f"core.excludesFile={self.large_files}"]
        self._ready = False
        self._large: str | None = None  # info/large-files as this process first read it
        self._index_print: str | None = None  # the index as this process's last snapshot left it
        self._rules: tuple[str, bytes] | None = None  # (tree, the ignore rules pinned at it)
        self._pinning = False  # inside a public operation that pinned the store

    # -- git ---------------------------------------------------------------------------
    # Every git runs in a session of its own (OWN_SESSION): a notebook's interrupt button sends SIGINT to
    # the kernel's whole process group, and a checkpoint taken by a run driving in the background of that
    # kernel must not die of the user's Ctrl-C on a cell (git is short-lived: nothing is left behind).

    def _git(self, *args: str, input: bytes | None = None, what: str = "") -> bytes:
        proc = self._run(*args, input=input)
        if proc.returncode != 0:
            raise self._failure(args[0], proc.stderr.decode("utf-8", "replace"), what)
        return proc.stdout

    def _run(self, *args: str, input: bytes | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
        """One git over the store (pinned once by the public operation that runs it: :func:`_pinned`)."""
        try:
            return subprocess.run(["git", *self._config, *args], cwd=self.project_dir, env=env or self._env,
                                  input=input, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **OWN_SESSION)
        except FileNotFoundError:
            raise CheckpointError("checkpoints need git, and no `git` program was found",
                                  hint="install git (e.g. apt-get install git) and try again") from None

    def _pin(self) -> None:
        if not self._ready:
            return  # ensure() pins once the store exists
        try:
            pin(self.git_dir, EXCLUDE_TEXT)
            if self._large is None:
                self._large = self._read_large()
            if self._large:
                keep(self.large_files, self._large, self.git_dir)
            else:
                remove(self.large_files, self.git_dir)
        except OSError as exc:
            raise CheckpointError(f"the checkpoint store {self.git_dir} cannot be written ({_os_error(exc)})",
                                  hint=f"make {self.root} writable, then try again") from None

    def _read_large(self) -> str:
        """``info/large-files`` as found (only a regular file, and only its first LARGE_LIST_LIMIT bytes)."""
        try:
            return read_nofollow(self.large_files, LARGE_LIST_LIMIT).decode("utf-8", "replace")
        except OSError:
            return ""

    def _failure(self, command: str, stderr: str, what: str) -> CheckpointError:
        lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and not ln.startswith("warning:")]
        detail = next((ln for ln in lines if "Permission denied" in ln or "unable to" in ln.lower()), lines[-1] if lines else "")
        if "Permission denied" in detail or "failed to insert" in stderr or "unable to index file" in stderr:
            return CheckpointError(f"cannot read the project's files to checkpoint them: {detail}",
                                   hint="make them readable, or list them in .gitignore so that checkpoints leave them out")
        if "index file" in stderr:
            return CheckpointError(f"the checkpoint index {self.index} is damaged ({detail})",
                                   hint=f"remove {self.index}: it is rebuilt from the project's files at the next "
                                        "checkpoint, and every checkpoint is kept")
        return CheckpointError(
            f"the checkpoint store {self.git_dir} is damaged ({what or 'git ' + command}: {detail})",
            hint=f"move {self.git_dir} and {self.index} away (a new store is made; earlier checkpoints are lost)")

    def ensure(self) -> "Checkpoints":
        """Create the store if needed and finish an interrupted restore."""
        if self._ready:
            return self
        if not (self.git_dir / "HEAD").is_file():
            self.root.mkdir(parents=True, exist_ok=True)
            proc = subprocess.run(["git", "init", "-q", "--bare", "--template=", str(self.git_dir)], env={
                k: v for k, v in self._env.items() if k not in ("GIT_DIR", "GIT_COMMON_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")},
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, **OWN_SESSION)
            if proc.returncode != 0:
                raise self._failure("init", proc.stderr.decode("utf-8", "replace"), "creating the store")
        self._ready = True
        self._pin()
        if self.journal.is_file():
            self._roll_forward()
        return self

    # -- taking checkpoints ----------------------------------------------------------------

    @_pinned
    def snapshot(self, rules_from: str | None = None) -> str:
        """Checkpoint the project tree now; returns the checkpoint id (a git tree id).

        ``rules_from``: a checkpoint whose ``.gitignore`` files decide what is ignored (a stage's "before"),
        instead of the files as they are now (see ``checkpoint_listing``)."""
        self.ensure()
        (self.git_dir / "index.lock").unlink(missing_ok=True)  # left by a killed driver (one driver at a time)
        self.index.with_name(self.index.name + ".lock").unlink(missing_ok=True)
        if self._index_print is None or self._index_print != self._fingerprint():
            # first use in this process, or written by someone else since (damaged, or a worker's flags
            # that hide a file): rebuilt from the files; the objects of the store are kept
            self.index.unlink(missing_ok=True)
        if not self.index.is_file() and not any((self.git_dir / "objects" / "pack").glob("*.pack")):
            self._prime()
        what = "recording the tree"
        self._git("add", "-u", "--", ".", what=what)  # tracked files: ignore rules never apply to them
        new = self._untracked(rules_from)
        if new:
            self._git("update-index", "--add", "-z", "--stdin", input=b"".join(p + b"\0" for p in new), what=what)
        kept = listing.user_git_files(self.project_dir)
        if kept:
            shas = self._git("hash-object", "-w", "--no-filters", "--stdin-paths",
                             input="".join(f"{full}\n" for _, _, full in kept).encode("utf-8", "surrogateescape"),
                             what=what).decode().split()
            info = "".join(f"{mode} {sha}\t{path}\0" for (path, mode, _), sha in zip(kept, shas))
            self._git("update-index", "-z", "--index-info", input=info.encode("utf-8", "surrogateescape"), what=what)
        tree = self._git("write-tree", what=what).decode().strip()
        self._index_print = self._fingerprint()
        return tree

    def _fingerprint(self) -> str:
        try:
            return hashlib.sha256(self.index.read_bytes()).hexdigest()
        except OSError:
            return ""

    def _untracked(self, rules_from: str | None) -> list[bytes]:
        """The files git does not track yet that the checkpoint takes: not ignored (by the rules of
        ``rules_from``, else of the tree now), nested repositories' files listed one by one."""
        if rules_from is None:
            excludes = ["--exclude-standard"]
        else:
            self._pin_rules(rules_from)
            excludes = [arg for f in (self.stage_rules, self.large_files, self.git_dir / "info" / "exclude")
                        if f.is_file() for arg in ("-X", str(f))]
        listed = [p for p in self._git("ls-files", "-z", "-o", *excludes, what="listing the tree").split(b"\0") if p]
        nested = [p for p in listed if p.endswith(b"/")]
        if not nested:
            return listed
        inside = [os.fsencode(f) for folder in nested for f in listing.nested_files(self.project_dir, os.fsdecode(folder))]
        return [p for p in listed if not p.endswith(b"/")] + self._not_ignored(inside, rules_from)

    def _not_ignored(self, paths: list[bytes], rules_from: str | None) -> list[bytes]:
        if not paths:
            return []
        env, config = self._env, []
        if rules_from is not None:  # the pinned rules only: an empty work tree has no .gitignore of its own
            empty = self.git_dir / "info" / "empty"
            empty.mkdir(parents=True, exist_ok=True)
            env, config = {**self._env, "GIT_WORK_TREE": str(empty)}, ["-c", f"core.excludesFile={self.stage_rules}"]
        proc = self._run(*config, "check-ignore", "--no-index", "-z", "--stdin", input=b"".join(p + b"\0" for p in paths),
                         env=env)
        if proc.returncode not in (0, 1):
            raise self._failure("check-ignore", proc.stderr.decode("utf-8", "replace"), "listing the tree")
        ignored = set(proc.stdout.split(b"\0"))
        return [p for p in paths if p not in ignored]

    def _pin_rules(self, tree: str) -> None:
        """Write the ignore rules of ``tree``'s ``.gitignore`` files as ``info/stage-rules`` (read back, and
        written again whenever it differs)."""
        if self._rules is None or self._rules[0] != tree:
            found = {path: entry.sha for path, entry in self.entries(tree).items() if listing.is_gitignore(path)}
            blobs = self.blobs(list(found.values()))
            self._rules = (tree, listing.root_rules({p: blobs[sha] for p, sha in found.items()}))
        keep(self.stage_rules, self._rules[1], self.git_dir)  # never through a worker's link

    def _prime(self) -> None:
        """Before the first checkpoint: store every file's content in ONE pack (``git fast-import``), so
        that ``git add`` finds the objects and writes no loose object per file (4x faster on 5,000 files)."""
        listed = self._git("ls-files", "-z", "-o", "--exclude-standard", what="listing the tree").split(b"\0")
        large, primed = [], []  # one lstat per file: regular files only (not links), by size
        for name in filter(None, listed):
            path = self.project_dir / os.fsdecode(name)
            try:
                info = path.lstat()
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode):
                continue
            if info.st_size > LARGE_FILE:
                large.append("/" + listing.escape_glob(os.fsdecode(name)))
            if info.st_size <= PRIME_LIMIT:
                primed.append(path)
        if large:
            self._large = "# larger than %d MB when checkpoints began: left out\n" % (LARGE_FILE >> 20) \
                + "".join(f"{p}\n" for p in large)
            write_atomic(self.large_files, self._large, within=self.git_dir)
        try:
            proc = subprocess.Popen(["git", *self._config, "fast-import", "--quiet"], cwd=self.project_dir, env=self._env,
                                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    **OWN_SESSION)
        except FileNotFoundError:
            return  # _git reports the missing program
        try:
            for path in primed:
                try:
                    data = path.read_bytes()
                except OSError:
                    continue  # `git add` reports what cannot be read
                proc.stdin.write(b"blob\ndata %d\n" % len(data) + data + b"\n")
            proc.stdin.close()
        except BrokenPipeError:
            pass
        proc.wait()  # a failure here only costs speed: `git add` writes what is missing

    @_pinned
    def exists(self, checkpoint: str) -> bool:
        self.ensure()
        try:
            return self._git("cat-file", "-t", checkpoint).decode().strip() == "tree"
        except CheckpointError:
            return False

    def require(self, checkpoint: str) -> None:
        if not self.exists(checkpoint):
            raise CheckpointError(f"checkpoint {checkpoint[:12]} is not in the checkpoint store {self.git_dir}",
                                  hint="the store was moved or damaged; this point can no longer be restored")

    # -- comparing -------------------------------------------------------------------------

    @_pinned
    def changes(self, before: str, after: str) -> list[Change]:
        """What changed from ``before`` to ``after``: each file with its kind and line counts."""
        if before == after:
            return []
        raw = self._git("diff-tree", "-r", "-z", "--no-renames", "--name-status", before, after).split(b"\0")
        kinds: dict[str, ChangeKind] = {}
        for status, path in zip(raw[0::2], raw[1::2]):
            if status:
                kinds[path.decode("utf-8", "surrogateescape")] = {"A": "added", "D": "deleted"}.get(status.decode(), "modified")
        counts: dict[str, tuple[int | None, int | None]] = {}
        for item in self._git("diff-tree", "-r", "-z", "--no-renames", "--numstat", before, after).split(b"\0"):
            if item.count(b"\t") >= 2:
                a, d, path = item.split(b"\t", 2)
                counts[path.decode("utf-8", "surrogateescape")] = (
                    None if a == b"-" else int(a), None if d == b"-" else int(d))
        return sorted((Change(listing.shown(listing.to_user(p)), k, *counts.get(p, (0, 0))) for p, k in kinds.items()),
                      key=lambda c: c.path)

    @_pinned
    def diff(self, before: str, after: str, paths: list[str] | None = None, errors: str = "replace") -> str:
        """The unified diff from ``before`` to ``after`` (binary files named, not shown), of ``paths`` (named as
        :meth:`changes` names them) or every file; ``errors`` decodes it (``"surrogateescape"`` keeps the bytes
        of a file name that is not UTF-8)."""
        picked = self._tree_paths(paths, before, after)
        if picked == []:
            return ""
        out = self._git("--literal-pathspecs", "diff-tree", "-r", "-p", "--no-renames", "--no-color", "--no-ext-diff",
                        before, after, "--", *(picked or []))
        return _user_names(out.decode("utf-8", errors))

    def _tree_paths(self, paths: list[str] | None, *trees: str) -> list[str] | None:
        """The real tree paths of ``trees`` that ``paths`` (as changes name them: :func:`listing.shown`) stand
        for; None for every path."""
        if not paths:
            return None
        wanted = {listing.to_tree(p) for p in paths}
        return sorted({p for tree in trees for p in self.entries(tree) if listing.shown(p) in wanted})

    @_pinned
    def changed_lines(self, before: str, after: str, paths: list[str] | None = None) -> dict[str, list[tuple[int, int]]]:
        """The lines of ``after`` that differ from ``before``, per changed file: inclusive ``(first, last)`` ranges
        from the hunks of the diff (no context lines). A hunk that only deletes lines marks the lines on both
        sides of the gap; an added file is all changed; a deleted or binary file has no entry."""
        picked = self._tree_paths(paths, before, after)
        if before == after or picked == []:
            return {}
        out = self._git("--literal-pathspecs", "diff-tree", "-r", "-p", "-U0", "--no-renames", "--no-color",
                        "--no-ext-diff", before, after, "--", *(picked or []))
        ranges = hunk_ranges(_user_names(out.decode("utf-8", "surrogateescape")))
        return {listing.shown(path): lines for path, lines in ranges.items()}

    @_pinned
    def entries(self, checkpoint: str) -> dict[str, Entry]:
        out: dict[str, Entry] = {}
        for item in self._git("ls-tree", "-r", "-z", "--full-tree", checkpoint).split(b"\0"):
            if not item:
                continue
            meta, path = item.split(b"\t", 1)
            mode, _kind, sha = meta.decode().split()
            out[path.decode("utf-8", "surrogateescape")] = Entry(mode, sha)
        return out

    # -- restoring -------------------------------------------------------------------------

    @_pinned
    def restore(self, target: str, paths: list[str] | None = None) -> list[Change]:
        """Make the project tree (or just ``paths`` of it) byte for byte ``target``; returns what changed.

        Journaled (see the module docstring): a crash leaves a journal that the next opening rolls forward.
        A write that fails part-way (a full disk, no permission) puts the tree back as it was and is one
        :class:`CheckpointError`.
        """
        self.require(target)
        if self.journal.is_symlink() or (self.journal.exists() and not self.journal.is_file()):
            kind = "link" if self.journal.is_symlink() else "directory"
            raise CheckpointError(f"{self.journal} is a {kind}, not odin's restore journal: nothing was changed",
                                  hint=f"remove it (rm -r '{self.journal}'), then try again")
        current = self.snapshot()
        if paths is not None:
            target = self._mixed(current, target, [listing.to_tree(p) for p in paths])
        if current == target:
            return []
        try:
            self._apply(current, target, journal=True)
        except (OSError, CheckpointError) as exc:
            if not self.journal.exists():  # failed before the first write: nothing changed
                if isinstance(exc, CheckpointError):
                    raise
                raise CheckpointError(f"the files could not be restored: {_os_error(exc)}; nothing changed",
                                      hint="mend what the error names, then try again") from None
            raise self._put_back(current, exc) from None
        self.journal.unlink(missing_ok=True)
        return self.changes(current, target)

    def _put_back(self, before: str, exc: Exception) -> CheckpointError:
        """A restore that failed part-way: the tree made ``before`` again and the journal removed; the error to
        raise. When even that fails, the journal stays (the next opening finishes the restore) and says so."""
        what = f"the files could not be restored ({_os_error(exc)})"
        try:
            self._apply(self.snapshot(), before)
        except (OSError, CheckpointError) as again:
            return CheckpointError(f"{what}, nor put back as they were ({_os_error(again)}): the next odin "
                                   "command finishes the restore", hint="mend what the errors name first")
        self.journal.unlink(missing_ok=True)
        return CheckpointError(f"{what}; the files are as they were", hint="mend what the error names, then try again")

    def _mixed(self, current: str, target: str, paths: list[str]) -> str:
        """A tree equal to ``current`` except that ``paths`` (tree paths named as :func:`listing.shown` names them)
        are as in ``target`` (written to a scratch index, under their real bytes)."""
        now, then = self.entries(current), self.entries(target)
        chosen = set(paths)
        lines = [f"{e.mode} {e.sha}\t{p}" for p, e in now.items() if listing.shown(p) not in chosen]
        lines += [f"{e.mode} {e.sha}\t{p}" for p, e in then.items() if listing.shown(p) in chosen]
        scratch = self.root / (INDEX_NAME + ".scratch")
        env = {**self._env, "GIT_INDEX_FILE": str(scratch)}
        try:
            scratch.unlink(missing_ok=True)
            for args, data in ((["update-index", "-z", "--index-info"], "".join(ln + "\0" for ln in lines).encode("utf-8", "surrogateescape")),
                               (["write-tree"], None)):
                proc = self._run(*args, input=data, env=env)
                if proc.returncode != 0:
                    raise self._failure(args[0], proc.stderr.decode("utf-8", "replace"), "restoring files")
            return proc.stdout.decode().strip()
        finally:
            scratch.unlink(missing_ok=True)

    def _roll_forward(self) -> None:
        try:
            target = json.loads(self.journal.read_text())["to"]
        except (OSError, ValueError, KeyError, TypeError):
            self.journal.unlink(missing_ok=True)  # torn before it was complete: nothing was changed yet
            return
        self._apply(self.snapshot(), target)
        self.journal.unlink(missing_ok=True)

    def _apply(self, current: str, target: str, journal: bool = False) -> None:
        """Make the tree ``target``; with ``journal``, the journal is written once every blob is read (a damaged
        store fails before anything changes, and leaves no journal to roll forward)."""
        now, then = self.entries(current), self.entries(target)
        wanted = {p: e for p, e in then.items() if now.get(p) != e}
        blobs = self.blobs([e.sha for e in wanted.values()])
        if journal:
            write_atomic(self.journal, json.dumps({"from": current, "to": target}))
        # removals first, deepest first: a file or link where the target has a directory goes before the
        # directory's files are written (and never leads a write through a link)
        for path in sorted(set(now) - set(then), reverse=True):
            full = self._inside(path)
            if full.is_symlink() or full.exists():
                full.unlink()
            self._prune(full.parent)
        inside = Confinement([self.project_dir])  # the project's real path resolved once for every write
        for path, entry in sorted(wanted.items()):
            self._write(path, entry, blobs[entry.sha], inside)

    def blobs(self, shas: list[str]) -> dict[str, bytes]:
        """The bytes of each blob (by its sha) of the store, read in one `git cat-file --batch`."""
        if not shas:
            return {}
        unique = list(dict.fromkeys(shas))
        out = self._git("cat-file", "--batch", input="".join(s + "\n" for s in unique).encode(), what="reading a checkpoint")
        blobs: dict[str, bytes] = {}
        pos = 0
        for sha in unique:
            end = out.index(b"\n", pos)
            header = out[pos:end].split()
            if len(header) != 3:
                raise CheckpointError(f"the checkpoint store {self.git_dir} is damaged (object {sha[:12]} is missing)",
                                      hint=f"move {self.git_dir} away; earlier checkpoints are lost")
            size = int(header[2])
            blobs[sha] = out[end + 1:end + 1 + size]
            if hashlib.sha1(b"blob %d\0" % size + blobs[sha]).hexdigest() != sha:  # rewritten in place
                raise CheckpointError(f"the checkpoint store {self.git_dir} is damaged (object {sha[:12]} does not "
                                      "hold what its name says)", hint=f"move {self.git_dir} away; earlier "
                                      "checkpoints are lost")
            pos = end + 1 + size + 1
        return blobs

    def _inside(self, path: str) -> Path:
        rel = PurePosixPath(listing.to_user(path))  # the user's repository files are kept under TREE_GIT
        if rel.is_absolute() or ".." in rel.parts:
            raise CheckpointError(f"checkpoint path {path!r} leaves the project", hint="the store is damaged")
        return self.project_dir.joinpath(*rel.parts)

    def _write(self, path: str, entry: Entry, data: bytes, inside: Confinement) -> None:
        full = self._inside(path)
        if full.is_dir() and not full.is_symlink():
            shutil.rmtree(full)
        full.parent.mkdir(parents=True, exist_ok=True)
        if not inside.contains(full.parent):
            raise CheckpointError(f"restoring {path}: its folder leads out of the project through a symbolic "
                                  "link; nothing is written there", hint="replace the link with a folder, then try again")
        tmp = full.with_name(f".{full.name}.odin-restore.tmp")
        tmp.unlink(missing_ok=True)
        try:
            if entry.mode == "120000":
                os.symlink(data.decode("utf-8", "surrogateescape"), tmp)
            else:
                with open(tmp, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.chmod(tmp, (0o777 if entry.mode == "100755" else 0o666) & ~umask())
            os.replace(tmp, full)
        except BaseException:
            tmp.unlink(missing_ok=True)  # no half-written file left in the user's tree
            raise

    def _prune(self, directory: Path) -> None:
        """Remove directories a restore emptied, up to the project directory."""
        while directory != self.project_dir and directory.is_relative_to(self.project_dir):
            try:
                directory.rmdir()
            except OSError:
                return
            directory = directory.parent


def hunk_ranges(diff: str) -> dict[str, list[tuple[int, int]]]:
    """Per file of a ``-U0`` unified diff, the new-side line ranges of its hunks (see :meth:`Checkpoints.changed_lines`)."""
    ranges: dict[str, list[tuple[int, int]]] = {}
    path = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            name = line[4:]
            path = name[2:] if name.startswith("b/") else None  # /dev/null: a deleted file
            if path is not None:
                ranges.setdefault(path, [])
        elif line.startswith("@@ ") and path is not None:
            new = line.split(" ")[2]  # +start[,count]
            start, _, count = new[1:].partition(",")
            first, n = int(start), int(count or 1)
            ranges[path].append((first, first + n - 1) if n else (max(first, 1), first + 1))
    return {p: r for p, r in ranges.items() if r}


def _user_names(diff: str) -> str:
    """A diff's file names as changes name them (the user's repository files as ``.git/...``)."""
    if listing.TREE_GIT not in diff:
        return diff
    for side in ("a/", "b/"):
        diff = diff.replace(f" {side}{listing.TREE_GIT}", f" {side}{listing.USER_GIT}")
    return diff

