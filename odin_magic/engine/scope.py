"""Scope: which files a stage may change, and which changes need a human's sign-off.

After a stage's work the engine compares the checkpoints before and after it
(:mod:`odin_magic.runs.checkpoints`) and checks every changed file the stage made, whichever
of its tools changed it (a file tool or ``bash``). A change made outside the run (odin's own output file,
an editor's save while the stage's tools were idle: :mod:`odin_magic.engine.attribution`) is not the
stage's: never checked against its scope, never reverted.

* **The role's write rule**: explore writes nothing; planner and reviewer
  their ``produces``; critic its ``produces`` (and ``harness/stub/``, which is
  in the run dir); executor — and a stage without a role — anywhere.
* **The stage's ``scope:``** (a list of globs, optional) narrows that rule: a
  change must also match one of its globs. For an executor it narrows
  "anywhere"; for the other roles it narrows their ``produces`` (a ``produces``
  entry outside the scope is a validation error).

The user's repository (``.git/``: its hooks, config, branches and HEAD, which checkpoints keep; see
:mod:`odin_magic.runs.checkpoint_listing`) is no stage's to change, whatever its role or scope: a hook a
worker writes would run at the user's next commit, a commit it makes would stay in the user's history.

**The test runner's configuration** (:func:`configures_runner`): a file that decides how the tests run —
``conftest.py``, pytest's own configuration files, what Python's ``site`` reads at start — at any depth,
and a ``pyproject.toml`` whose ``[tool.pytest]`` tables the change alters. A declared ``scope:`` allows one
only by naming its path (``tests/conftest.py``), never through a glob (``tests/**``, ``**``): a
``conftest.py`` that turns every test into a pass would otherwise let a stage that writes both its tests and
its code pass its own gate. A stage without a ``scope:`` is not narrowed (its role's rule decides).

Notebooks (``*.ipynb``) are the user's: Jupyter saves them while stages run, so
they are never reverted as out of scope (see :data:`PROTECTED`).

A change outside what the stage may write is reverted to the checkpoint and the
gate fails with the list ("reviewer changed src/app.py outside its scope:
reverted").

**Risk**: a loop-level ``risk:`` list of globs (``migrations/**``,
``.github/**``, ``pyproject.toml``): a stage whose changes match one pauses for
human sign-off after its gate passes, even when its gate mode is ``ai``.

Globs are project-relative, with ``/`` separators: ``*`` and ``?`` match within
one path segment, ``**`` any number of segments, and a pattern ending in ``/``
matches everything under that directory.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from odin_magic.loop.artifacts import placements
from odin_magic.runs.checkpoints import Change, Checkpoints, StageCheckpoint
from odin_magic.runs.checkpoint_listing import USER_GIT
from odin_magic.loop.schema import Loop, Stage
from odin_magic.loop.globs import glob_regex, literal_prefix, matches, may_overlap  # noqa: F401 - handed on
from odin_magic.loop.globs import could_touch_risk  # noqa: F401 - handed on
from odin_magic.loop.globs import PYPROJECT, RUNNER_FILES, configures_runner, named  # noqa: F401 - handed on
from odin_magic.loop.roles import policy_for


#: The user's own documents: a notebook open in Jupyter is saved while stages run, so a change to one
#: is never taken for a stage's and never reverted unasked (scope, BLOCKED, revert without --force).
PROTECTED = ("**/*.ipynb",)


def protected(path: str) -> bool:
    return matches(PROTECTED, path)


def runner_changes(changes: list[Change], checkpoints: Checkpoints, ckpt: StageCheckpoint) -> frozenset[str]:
    """The changed paths that configure the test runner: by name, and each ``pyproject.toml`` whose
    ``[tool.pytest]`` tables differ between the stage's checkpoints."""
    found = {c.path for c in changes if configures_runner(c.path)}
    tomls = [c.path for c in changes if PurePosixPath(c.path).name == PYPROJECT]
    if tomls:
        before, after = checkpoints.entries(ckpt.before), checkpoints.entries(ckpt.after)
        shas = [e.sha for side in (before, after) for path in tomls if (e := side.get(path))]
        blobs = checkpoints.blobs(shas)
        for path in tomls:
            old, new = (blobs.get(e.sha) if (e := side.get(path)) else None for side in (before, after))
            if pytest_tables(old) != pytest_tables(new):
                found.add(path)
    return frozenset(found)


def pytest_tables(data: bytes | None) -> object:
    """A ``pyproject.toml``'s ``[tool.pytest]`` tables (``ini_options`` among them); {} for none, and for a file
    that is no TOML (pytest refuses to run on it)."""
    try:
        parsed = tomllib.loads(data.decode("utf-8")) if data is not None else {}
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}
    tool = parsed.get("tool")
    return tool.get("pytest", {}) if isinstance(tool, dict) else {}


@dataclass(frozen=True)
class ScopeRule:
    """What one stage may change in the project tree."""

    who: str  # the role, or inline/fresh
    anywhere: bool  # the role may write anywhere (before ``scope`` narrows it)
    produces: tuple[str, ...]  # project-relative produces (directories end in "/")
    scope: tuple[str, ...] | None

    def allows(self, path: str) -> bool:
        by_role = self.anywhere or matches(self.produces, path)
        return by_role and (self.scope is None or matches(self.scope, path))

    def refuses_runner(self, path: str) -> bool:
        """Whether ``path`` (a change that configures the test runner) is refused: a declared scope allows one
        only by naming it; without a scope the role's rule decides."""
        return self.scope is not None and path not in {named(p) for p in self.scope}

    def describe(self) -> str:
        role = "anywhere" if self.anywhere else (", ".join(self.produces) or "nothing")
        return role if self.scope is None else f"{role}, within scope {', '.join(self.scope)}"


def rule_for(stage: Stage, project_dir: Path, run_dir: Path) -> ScopeRule:
    agent = stage.resolved_agent
    policy = policy_for(agent)
    produces = []
    if policy.writes != "none":
        for entry, p in placements(stage.produces, project_dir, run_dir, stage.id).items():
            try:
                rel = p.path.relative_to(project_dir).as_posix()
            except ValueError:
                continue
            if not rel.startswith(".odin-loop/"):
                produces.append(rel + "/" if p.is_dir else rel)
    return ScopeRule(who=agent.label, anywhere=policy.writes == "anywhere", produces=tuple(produces),
                     scope=tuple(stage.scope) if stage.scope is not None else None)


def violations(rule: ScopeRule, changes: list[Change], guarded: frozenset[str] = frozenset(),
               runner: frozenset[str] = frozenset()) -> list[Change]:
    """The changes the stage may not make: the user's .git, what its rule does not allow, the ``guarded``
    paths (the test runner's configuration of frozen tests, :func:`odin_magic.engine.frozen.guarded`) and the
    ``runner`` paths (those that configure the test runner, :func:`runner_changes`) its scope does not name."""
    return [c for c in changes
            if user_git(c.path) or c.path in guarded or (c.path in runner and rule.refuses_runner(c.path))
            or (not rule.allows(c.path) and not protected(c.path))]


def user_git(path: str) -> bool:
    """A file of the user's own repository: never in any stage's scope."""
    return path.startswith(USER_GIT)


def violation_reason(rule: ScopeRule, bad: list[Change], guarded: frozenset[str] = frozenset(),
                     runner: frozenset[str] = frozenset(), scope_of: str = "the stage's scope") -> str:
    """``scope_of``: where the stage's scope is declared, said in the hint to name a runner file there (a roadmap
    phase's run: its contract file, and how a changed contract applies)."""
    listed = ", ".join(f"{c.path} ({c.kind})" for c in bad[:20]) + (f" and {len(bad) - 20} more" if len(bad) > 20 else "")
    why = ("; the test runner's configuration of frozen tests is theirs: only the stage that produces them may "
           "change it") if any(c.path in guarded for c in bad) else ""
    config = [c.path for c in bad if c.path in runner and c.path not in guarded and rule.refuses_runner(c.path)]
    if config:
        why += (f"; {', '.join(config[:5])} configure{'s' if len(config) == 1 else ''} the test runner: a scope "
                f"allows such a file only by naming it, not through a glob (add {config[0]} to {scope_of})")
    outside = any(user_git(c.path) or (not rule.allows(c.path) and not protected(c.path)) for c in bad)
    where = "outside its scope" if outside else "that it may not change"  # within its globs: runner files
    return f"{rule.who} changed {listed} {where} ({rule.describe()}): reverted{why}"


def risky(loop: Loop, changes: list[Change]) -> list[str]:
    """The changed paths that match the loop's ``risk`` globs."""
    return [c.path for c in changes if loop.risk and matches(loop.risk, c.path)]
