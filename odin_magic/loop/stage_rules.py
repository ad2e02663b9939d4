"""The rules of one stage that span several fields, checked on the raw data: gate loopbacks and modes,
fresh contexts and their ``consumes``, reporting roles, interview stages, artifact paths and scope globs.
"""

from __future__ import annotations

from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from odin_magic.loop.artifacts import control_character
from odin_magic.loop.diagnostics import LocatedDiagnostics, did_you_mean
from odin_magic.loop.roles import POLICIES
from odin_magic.loop.schema import BASELINE_STAGE_RE, ROLE_DEFAULT_FRESH, ROLES

INTERVIEW_LOG = "interview-log.md"


class StageRules(LocatedDiagnostics):
    """The cross-field rules of each stage, and of the loop's globs."""

    def _stage_rules(self, i: int, stage: dict, ids: dict[str, int], schedulable: bool) -> None:
        base = ("stages", i)
        sid = stage.get("id") if isinstance(stage.get("id"), str) else f"#{i}"
        self._gate_rules(base, sid, stage.get("gate"), ids, schedulable)
        fresh, how = _resolves_fresh(stage.get("agent"))
        consumes = stage.get("consumes")
        if fresh and not (isinstance(consumes, list) and consumes):
            self.error(
                base + (("consumes",) if "consumes" in stage else ("agent",)),
                f"stage {sid!r} runs in a fresh context ({how}) but declares no `consumes`",
                "list the artifacts it must read under `consumes:` (a fresh agent sees nothing else)",
            )
        role = _role_of(stage.get("agent"))
        produces = stage.get("produces")
        if role is not None and POLICIES[role].writes == "none" and isinstance(produces, list) and produces:
            self._report_rule(base, sid, role, produces)
        self._interview_rules(base, sid, stage, schedulable)
        self._glob_rules(base + ("scope",), stage.get("scope"))
        self._produces_in_scope(base, stage)
        self._artifact_paths(base, stage)

    def _gate_rules(self, base: tuple, sid: str, gate: Any, ids: dict[str, int], schedulable: bool) -> None:
        """A gate's loopback names a stage, ``mutate`` has commands to prove, a schedulable gate never pauses."""
        if not isinstance(gate, dict):
            return
        target = gate.get("on_fail")
        if isinstance(target, str) and target not in ids:
            guess = did_you_mean(target, ids)
            message = f"{target!r} is not a stage id" + (f" (did you mean {guess!r}?)" if guess else "")
            fix = f"use `on_fail: {guess}`" if guess else f"use one of: {', '.join(ids)}"
            self.error(base + ("gate", "on_fail"), message, fix)
        if gate.get("mutate") is True and not gate.get("run"):
            self.error(base + ("gate", "mutate"), "`mutate: true` proves the gate's `run` commands can fail, "
                       "but this gate has no `run` command", "add the command that tests the code under `run:`, "
                       "or drop `mutate`")
        self._measure_rules(base, sid, gate.get("measure"), ids)
        mode = gate.get("mode")
        if schedulable and mode in ("ai+human", "human"):
            self.error(
                base + ("gate", "mode"),
                f"stage {sid!r} has gate mode {mode!r}, which pauses for a human; a schedulable loop never pauses",
                "use `mode: ai`",
            )

    def _measure_rules(self, base: tuple, sid: str, measure: Any, ids: dict[str, int]) -> None:
        """``baseline: stage <id>`` names a stage that runs before this one (its figure at its end)."""
        baseline = measure.get("baseline") if isinstance(measure, dict) else None
        found = BASELINE_STAGE_RE.fullmatch(baseline.strip()) if isinstance(baseline, str) else None
        if found is None:
            return
        name, here = found.group(1), base[1]
        earlier = [k for k, v in ids.items() if v < here]
        if ids.get(name, here) < here:
            return
        guess = did_you_mean(name, earlier)
        what = "is this stage" if name == sid else "comes after this stage" if name in ids else "is not a stage id"
        self.error(base + ("gate", "measure", "baseline"),
                   f"`baseline: stage {name}` names the figure at the end of an earlier stage, but {name!r} {what}"
                   + (f" (did you mean {guess!r}?)" if guess else ""),
                   f"use `baseline: stage {guess}`" if guess else
                   f"name one of the stages before {sid!r} ({', '.join(earlier) or 'there is none'}), or leave "
                   "`baseline` out to measure the stage's before-tree")

    def _interview_rules(self, base: tuple, sid: str, stage: dict, schedulable: bool) -> None:
        """An interview waits for a person; a deep one talks inline and produces the interview log."""
        interview = stage.get("interview")
        if not isinstance(interview, dict):
            return
        fresh, how = _resolves_fresh(stage.get("agent"))
        produces = stage.get("produces")
        if schedulable:
            self.error(
                base + ("interview",),
                f"stage {sid!r} is an interview, which waits for a person; a schedulable loop never pauses",
                "remove the interview stage",
                at="key",
            )
        if interview.get("mode") == "deep":
            if fresh:
                self.error(
                    base + ("agent",),
                    f"the deep interview stage {sid!r} resolves to a fresh context ({how}); an interview talks to the user inline",
                    "remove `agent`, or use `agent: inline`",
                )
            if not (isinstance(produces, list) and INTERVIEW_LOG in produces):
                self.error(
                    base + (("produces",) if "produces" in stage else ("interview",)),
                    f"the deep interview stage {sid!r} does not produce {INTERVIEW_LOG!r}",
                    f"add '{INTERVIEW_LOG}' to its `produces` (its gate reads the convergence recorded there)",
                    at="value" if "produces" in stage else "key",
                )

    def _artifact_paths(self, base: tuple, stage: dict) -> None:
        """Every ``consumes``/``produces`` entry is a relative path inside the project."""
        for key in ("consumes", "produces"):
            entries = stage.get(key)
            if not isinstance(entries, list):
                continue
            for j, entry in enumerate(entries):
                if isinstance(entry, str):
                    problem = _path_problem(entry)
                    if problem:
                        self.error(base + (key, j), f"{entry!r} {problem}",
                                   "use a relative path inside the project, e.g. 'spec.md' or 'src/'")

    def _report_rule(self, base: tuple, sid: str, role: str, produces: list) -> None:
        """A role that may write no file (explore) reports: the engine writes its final answer to the
        stage's one document, so it may declare one `produces`, a file."""
        if len(produces) > 1:
            self.error(
                base + ("produces",),
                f"stage {sid!r} runs as {role}, which edits nothing and reports: the engine writes its final "
                f"report to the stage's single document, so it may declare one `produces`, not {len(produces)}",
                "keep one document (e.g. `produces: [survey.md]`), or use a role that writes its own files "
                "(e.g. `agent: reviewer`: writes only its produces)",
            )
        elif isinstance(produces[0], str) and produces[0].strip().endswith("/"):
            self.error(
                base + ("produces", 0),
                f"stage {sid!r} runs as {role}, which edits nothing and reports: its one `produces` is the "
                f"document the engine writes its report to, not a directory ({produces[0]!r})",
                "name a file, e.g. `produces: [survey.md]`",
            )

    def _glob_rules(self, path: tuple, globs: Any) -> None:
        """``risk`` and ``scope`` globs are project-relative, like artifact paths."""
        if not isinstance(globs, list):
            return
        for j, glob in enumerate(globs):
            problem = _path_problem(glob) if isinstance(glob, str) else None
            if problem:
                self.error(path + (j,), f"glob {glob!r} {problem.replace('artifact paths', 'globs')}",
                           "use a project-relative glob, e.g. 'migrations/**' or 'pyproject.toml'")

    def _produces_in_scope(self, base: tuple, stage: dict) -> None:
        """``scope`` narrows what a stage may change: its project-tree ``produces`` must lie inside it."""
        from odin_magic.loop.globs import configures_runner, matches, may_overlap, named

        globs, produces = stage.get("scope"), stage.get("produces")
        if not isinstance(globs, list) or not isinstance(produces, list):
            return
        globs = [g for g in globs if isinstance(g, str)]
        for j, entry in enumerate(produces):
            if not isinstance(entry, str) or _path_problem(entry):
                continue
            parts = entry.strip("/").split("/")
            if len(parts) == 1 and not entry.endswith("/") or parts[0] == "harness":
                continue  # kept in the run dir: not a change to the project
            inside = any(may_overlap(g, entry) for g in globs) if entry.endswith("/") else matches(globs, entry)
            if not inside:
                self.error(base + ("produces", j), f"{entry!r} is outside the stage's scope {globs}",
                           "add a glob for it to `scope:` (e.g. '" + (entry + "**" if entry.endswith("/") else entry) + "')")
            elif configures_runner(entry) and entry.strip() not in {named(g) for g in globs}:
                self.error(base + ("produces", j), f"{entry!r} configures the test runner: a scope allows it only "
                           f"by naming it, not through a glob of {globs}", f"add '{entry.strip()}' to `scope:`")


def _role_of(agent: Any) -> str | None:
    """The role a raw ``agent`` value names, if it names a known one."""
    role = agent.get("role") if isinstance(agent, dict) else agent
    return role if isinstance(role, str) and role in ROLES else None


def _resolves_fresh(agent: Any) -> tuple[bool, str]:
    if agent == "fresh":
        return True, "agent: fresh"
    if isinstance(agent, str) and agent in ROLE_DEFAULT_FRESH:
        return ROLE_DEFAULT_FRESH[agent], f"agent: {agent}, fresh by default"
    if isinstance(agent, dict):
        role = agent.get("role")
        fresh = agent.get("fresh")
        if fresh is True:
            return True, "fresh: true"
        if fresh is None and isinstance(role, str) and role in ROLE_DEFAULT_FRESH:
            return ROLE_DEFAULT_FRESH[role], f"role {role}, fresh by default"
    return False, ""


def _path_problem(entry: str) -> str | None:
    bad = control_character(entry)
    if bad:
        return f"contains a control character ({bad}); artifact paths have no NUL, newline, tab or other control characters"
    if not entry.strip():
        return "is an empty path"
    if entry.strip() in (".", "./"):
        return "names the whole project; name a file or a directory inside it"
    if entry.startswith("~"):
        return "starts with '~'; artifact paths are relative to the project"
    if PurePosixPath(entry).is_absolute() or PureWindowsPath(entry).is_absolute() or PureWindowsPath(entry).drive or entry.startswith("\\"):
        return "is an absolute path; artifact paths are relative and stay inside the project"
    parts = entry.replace("\\", "/").split("/")
    if ".." in parts:
        return "contains '..'; artifact paths stay inside the project"
    return None
