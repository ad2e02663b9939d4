"""Delivery: a done run becomes a branch in the user's repository, with honest commits and ``pr.md``.

``deliver(engine, run_id, options)`` checks everything before it writes anything (the run is done; a
git repository with a commit, on a branch, no rebase or merge under way; a valid branch name that does
not exist unless ``force``), then builds one commit per stage execution that changed the project (from
its before/after checkpoints; ``squash``: one), on the commit the run started on, in a temporary index
(:class:`odin_magic.runs.user_git.UserRepo`), and moves the branch there last. Never delivered: ``.odin-loop/``
(the run dir, the checkpoint store, the user's ``.git`` files a checkpoint keeps), files the repository's
``.gitignore`` ignores, and — unless ``include_later`` — files changed since the run's last checkpoint.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from odin_magic.core.atomic import write_atomic
from odin_magic.core.errors import OdinError, UsageError
from odin_magic.core.secrets import redact_text, secret_names
from odin_magic.render import delivery_text as text
from odin_magic.runs import evidence as gate_evidence
from odin_magic.runs.checkpoint_listing import TREE_GIT, shown
from odin_magic.runs.checkpoints import Checkpoints, Entry
from odin_magic.runs.completion_report import from_dict
from odin_magic.runs.state import HistoryEntry, RunState
from odin_magic.runs.user_git import UserRepo

PR_NAME = "pr.md"
ODIN_DIR = ".odin-loop/"


@dataclass(frozen=True)
class DeliverOptions:
    branch: str | None = None
    squash: bool = False
    force: bool = False
    include_later: bool = False
    pr: bool = False
    push: bool = False  # push the branch to origin (before the pull request): a CI job's delivery
    commit: bool = False  # onto the current branch (asked explicitly; the index must be clean)


@dataclass
class Step:
    """One commit to make: the stage, its changes (checkpoint path → entry, None: deleted)."""

    stage: str
    changes: dict[str, Entry | None]
    number: int = 0  # its history entry (1-based; 0: not one execution)
    added: set[str] = field(default_factory=set)  # the paths it adds

    def kind(self, path: str) -> str:
        return "D" if self.changes[path] is None else "A" if path in self.added else "M"


def deliver(engine, run_id: str | None, options: DeliverOptions, state: RunState | None = None) -> text.DeliveryResult:
    """Deliver run ``run_id`` (or the given ``state``: the engine's own at a run's end, :mod:`.run_end`)."""
    if state is None:  # asked from a front end (not the engine at the run's end): no other process may drive
        state = engine.status(run_id)
        _refuse_if_driven(engine, state)
    if state.status != "done":
        raise UsageError(f"run {state.run_id} is {state.status}, not done: only a run that ended done is delivered",
                         hint="`odin run` drives it on; `odin runs` lists the runs and their status")
    repo = UserRepo(engine.project_dir)
    branch, old = _check_repo(repo, state, options)
    store: Checkpoints = engine.checkpoints
    executions = _executions(state)
    if not executions:
        raise UsageError(f"run {state.run_id} recorded no stage execution with checkpoints: nothing to deliver",
                         hint="runs taken with checkpoints (every `odin run`) can be delivered")
    base, note = _start_commit(store, repo, executions[0][1].checkpoint)
    if options.commit and base != old:
        raise UsageError(f"{branch} has moved since run {state.run_id} started ({base[:12]} → {old[:12]}): "
                         "--commit adds the run's commits only where the run started",
                         hint="deliver it as a branch instead (no --commit) and merge or rebase that branch")
    run_dir = engine.run_dir(state.run_id)
    facts = _Facts.gather(engine, state, run_dir)
    steps, later = _steps(store, state, executions, options)
    with repo.scratch_index(base):
        ignored = _ignored(repo, steps)
        commits = _commit_all(repo, state, base, steps, ignored, facts)
    if not commits:
        raise UsageError(f"run {state.run_id} changed no file that can be delivered",
                         hint="its changes were all under .odin-loop/, ignored, or changed again after the run")
    result = text.DeliveryResult(state.run_id, branch, base, note, commits, later=sorted(map(shown, later)),
                                 later_included=options.include_later, ignored=sorted(map(shown, ignored)))
    result.pr_path = _write_pr(run_dir, repo, facts, steps, result, ignored)
    repo.set_branch(branch, commits[-1][0], old, f"odin deliver {state.run_id}")
    if options.commit:
        repo.index_to_head()
    if options.push:
        result.pr_text = push_branch(repo, branch)
    if options.pr and not result.pr_text.startswith(PUSH_FAILED):
        result.pr_text = "\n".join(filter(None, [result.pr_text, open_pr(repo, branch, text.pr_title(state),
                                                                           Path(result.pr_path))]))
    return result


def _refuse_if_driven(engine, state: RunState) -> None:
    """Delivery reads the run and takes a checkpoint of the tree: refused while another process drives this run
    (it may be delivering it at done) or the project's active run (it is changing the tree)."""
    from odin_magic.runs.store import being_driven

    active = engine.active()
    for run in dict.fromkeys([state.run_id] + ([active.run_id] if active else [])):
        if being_driven(engine.run_dir(run)):
            holder = _holder(engine.run_dir(run))
            raise UsageError(f"run {run} is being driven by {holder}: nothing was delivered",
                             hint="wait for it to pause or finish (`odin status` says where it is), then deliver again")


def _holder(run_dir: Path) -> str:
    from odin_magic.runs.store import DRIVER_NAME

    try:
        info = json.loads((run_dir / DRIVER_NAME).read_text(encoding="utf-8"))
        return f"pid {info.get('pid')} (`{info.get('command')}`)"
    except (OSError, ValueError, AttributeError):
        return "another process"


def _write_pr(run_dir: Path, repo: UserRepo, facts: "_Facts", steps: list[Step], result: text.DeliveryResult,
              ignored: set[str]) -> str:
    """pr.md in the run dir; its path."""
    later = [] if result.later_included else [f"{p} (changed after the run)" for p in result.later]
    pr = text.pr_markdown(text.PrFacts(facts.state, result.branch, _files(repo, steps, ignored),
                                       [s for _, s in result.commits], facts.completion, facts.commands,
                                       facts.mutations, facts.metrics,
                                       left_out=later + [f"{p} (ignored)" for p in result.ignored]))
    write_atomic(run_dir / PR_NAME, pr, within=run_dir)
    return str(run_dir / PR_NAME)


def _check_repo(repo: UserRepo, state: RunState, options: DeliverOptions) -> tuple[str, str | None]:
    """The branch to make and the commit it holds now (None: new); a UsageError for every refusal."""
    doing = repo.in_progress()
    if doing:
        raise UsageError(f"{doing} is under way in {repo.top}: nothing was delivered",
                         hint="finish it or abort it (git status says how), then deliver again")
    head = repo.head()
    if head.commit is None:
        raise UsageError(f"the repository {repo.top} has no commit yet: a branch needs one to start from",
                         hint="git add -A && git commit -m 'initial commit', then deliver again")
    if head.branch is None:
        raise UsageError(f"HEAD is detached in {repo.top}: delivery needs to know which branch you are on",
                         hint="git switch BRANCH (the branch the run worked on), then deliver again")
    if options.commit:
        if options.branch or options.pr or options.push:
            raise UsageError("--commit commits onto your current branch: it takes no --branch, --pr or --push",
                             hint="leave out --commit to deliver a branch (and --pr to open a pull request of it)")
        if not repo.index_clean():
            raise UsageError(f"your index in {repo.top} has staged changes: --commit needs a clean index",
                             hint="commit or unstage them (git restore --staged PATH), then deliver again")
        return head.branch, head.commit
    branch = options.branch or f"odin/{state.run_id}"
    if not repo.valid_branch_name(branch):
        raise UsageError(f"{branch!r} is not a valid git branch name",
                         hint="pick another with --branch NAME (git check-ref-format --branch NAME checks one)")
    old = repo.branch_commit(branch)
    if old is not None and not options.force:
        raise UsageError(f"branch {branch} already exists ({old[:12]}): nothing was delivered",
                         hint="--branch NAME for another name, or --force to move it")
    if old is not None and branch == head.branch:
        raise UsageError(f"branch {branch} is your current branch: delivery never moves it",
                         hint="--branch NAME for another name")
    return branch, old


def _executions(state: RunState) -> list[tuple[int, HistoryEntry]]:
    """The stage executions with checkpoints, those a revert undid left out."""
    undone: set[int] = set()
    for revert in state.reverts or []:
        undone.update(range(revert.execution, revert.point + 1))
    return [(n, e) for n, e in enumerate(state.history, start=1) if e.checkpoint and n not in undone]


def _start_commit(store: Checkpoints, repo: UserRepo, first: str) -> tuple[str, str]:
    """The commit the run started on: the user's HEAD as the run's first checkpoint keeps it (``.git/HEAD``
    and its branch's ref, under TREE_GIT); else (a run without it) the current branch's HEAD, said so."""
    entries = store.entries(first)
    blobs = store.blobs([e.sha for p, e in entries.items() if p.startswith(TREE_GIT)])
    data = {p[len(TREE_GIT):]: blobs[e.sha].decode("utf-8", "replace") for p, e in entries.items() if e.sha in blobs}
    head = data.get("HEAD", "").strip()
    sha = head
    if head.startswith("ref: "):
        ref = head[5:].strip()
        sha = data.get(ref, "").strip() or _packed(data.get("packed-refs", ""), ref)
    if sha and repo.has_commit(sha):
        return sha, "where the run started, from its first checkpoint"
    now = repo.head().commit
    return now, "the run's start commit is not recorded: the current branch's HEAD at delivery"


def _packed(packed: str, ref: str) -> str:
    for line in packed.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1] == ref:
            return parts[0]
    return ""


def _diff(before: dict[str, Entry], after: dict[str, Entry]) -> dict[str, Entry | None]:
    return {p: after.get(p) for p in sorted(set(before) | set(after))
            if before.get(p) != after.get(p) and not p.startswith(ODIN_DIR)}


def _steps(store: Checkpoints, state: RunState, executions: list[tuple[int, HistoryEntry]],
           options: DeliverOptions) -> tuple[list[Step], set[str]]:
    """The commits to make, and the run's files changed since its last checkpoint."""
    entries = functools.cache(store.entries)  # one stage's after is often the next one's before: read each once
    last = executions[-1][1]
    final_id = state.tree or last.after or last.checkpoint
    final, now = entries(final_id), entries(store.snapshot())
    first = entries(executions[0][1].checkpoint)
    steps: list[Step] = []
    for n, e in executions:
        before = entries(e.checkpoint)
        changes = _diff(before, entries(e.after or e.checkpoint))
        if changes:
            steps.append(Step(e.stage, changes, n, {p for p in changes if p not in before}))
    touched = {p for s in steps for p in s.changes}
    later = {p for p in touched if final.get(p) != now.get(p)}
    if options.squash:
        steps = [Step("squash", {p: final.get(p) for p in touched if first.get(p) != final.get(p)},
                      added={p for p in touched if p not in first})]
    if options.include_later and later:
        steps.append(Step("later", {p: now.get(p) for p in later}, added={p for p in later if p not in final}))
    elif later:
        for s in steps:
            s.changes = {p: v for p, v in s.changes.items() if p not in later}
    return [s for s in steps if s.changes], later


def _ignored(repo: UserRepo, steps: list[Step]) -> set[str]:
    added = sorted({repo.prefix + p for s in steps for p, v in s.changes.items() if v is not None})
    return repo.ignored(added)


def _commit_all(repo: UserRepo, state: RunState, base: str, steps: list[Step], ignored: set[str],
                facts: "_Facts") -> list[tuple[str, str]]:
    commits: list[tuple[str, str]] = []
    parent, tree = base, repo.tree_of(base)
    store_blobs = facts.blobs(steps)
    for i, step in enumerate(steps):
        for path, entry in step.changes.items():
            where = repo.prefix + path
            if entry is None:
                repo.drop(where)
            elif where not in ignored:
                repo.put(where, entry.mode, store_blobs[entry.sha])
        new_tree = repo.write_tree()
        if new_tree == tree:
            continue
        message = text.commit_message(state, facts.commit_text(step, repo, ignored, last=i == len(steps) - 1))
        parent, tree = repo.commit_tree(new_tree, parent, message), new_tree
        commits.append((parent, message.split("\n", 1)[0]))
    return commits


def _files(repo: UserRepo, steps: list[Step], ignored: set[str]) -> list[text.FileChange]:
    kinds: dict[str, str] = {}
    for s in steps:
        for p in s.changes:
            where = repo.prefix + p
            if where not in ignored:
                kind = s.kind(p)
                kinds[where] = kind if kind == "D" or where not in kinds else \
                    ("A" if kinds[where] in ("A", "D") else "M")
    return [text.FileChange(shown(p), k) for p, k in sorted(kinds.items())]


class _Facts:
    """What the run recorded that the messages and pr.md tell: goals, judges' reasons, gate commands,
    the last completion check, kill ratios, metrics."""

    def __init__(self, engine, state: RunState, evidence: list[dict]):
        self.engine, self.state, self.evidence = engine, state, evidence
        try:
            self.loop = engine.loop_for(state.run_id)
        except OdinError:  # a damaged copy of the loop: the messages fall back to stage ids
            self.loop = None
        self.completion = None
        self.commands: list[tuple[str, str, bool]] = []
        self.mutations: list[tuple[str, str]] = []
        self.metrics: list[tuple[str, str]] = []
        for entry, ev in zip(state.history, evidence):
            if ev.get("completion"):
                self.completion = from_dict(ev["completion"])
            for c in ev.get("commands") or []:
                if isinstance(c, dict) and c.get("cmd"):
                    self.commands.append((entry.stage, str(c["cmd"]), _passed(c)))
            m = ev.get("mutation")
            if isinstance(m, dict) and m.get("tried"):
                self.mutations.append((entry.stage, f"kill ratio {m.get('killed')}/{m.get('tried')} = "
                                                    f"{m.get('ratio') or 0:.2f} (min {m.get('min_kill_ratio')})"))
            for key in ("metric", "comparison"):  # a judge comparison is told as a metric is
                if isinstance(ev.get(key), dict) and ev[key].get("summary"):
                    self.metrics.append((entry.stage, str(ev[key]["summary"])))
        self.commands = list(dict.fromkeys(self.commands))[-20:]

    @classmethod
    def gather(cls, engine, state: RunState, run_dir: Path) -> "_Facts":
        out = []
        with gate_evidence.EvidenceReader(run_dir) as reader:
            for entry in state.history:
                try:
                    out.append(reader.read_entry(entry))
                except (OSError, ValueError):
                    out.append({})
        return cls(engine, state, out)

    def blobs(self, steps: list[Step]) -> dict[str, bytes]:
        shas = [v.sha for s in steps for v in s.changes.values() if v is not None]
        return self.engine.checkpoints.blobs(shas)

    def goal(self, stage: str) -> str:
        if stage == "squash":
            return "Deliver"
        if stage == "later":
            return "Changes made after the run"
        try:
            s = self.loop.stage(stage) if self.loop else None
        except KeyError:  # a stage the loop no longer has
            s = None
        return (s.goal or s.title or stage) if s else stage

    def commit_text(self, step: Step, repo: UserRepo, ignored: set[str], last: bool) -> text.CommitText:
        files = [text.FileChange(shown(repo.prefix + p), step.kind(p)) for p in step.changes
                 if repo.prefix + p not in ignored]
        why = []
        if step.number:
            ev = self.evidence[step.number - 1]
            verdict = ev.get("verdict") or {}
            why += [str(r) for r in (verdict.get("reasons") or [])[:3]]
            why += [f"gate passed `{c['cmd']}`" for c in ev.get("commands") or []
                    if isinstance(c, dict) and c.get("cmd") and _passed(c)][:3]
        goal = self.goal(step.stage)
        if step.stage not in ("squash", "later") and goal != step.stage:
            why.insert(0, f"stage goal: {goal}")
        return text.CommitText(step.stage, goal, files, why, text.criteria_lines(self.completion) if last else [])


def _passed(command: dict) -> bool:
    return command.get("exit_code") == 0 and not command.get("timed_out")


PUSH_FAILED = "git push failed"


def _user_env() -> dict[str, str]:
    """The user's environment for gh and git push (their credentials), less ANTHROPIC_* and the secrets."""
    secrets = set(secret_names())
    return {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_") and k not in secrets}


def push_branch(repo: UserRepo, branch: str) -> str:
    """``git push origin refs/heads/BRANCH`` with the user's credentials (hooks off); what happened, one line."""
    ref = f"refs/heads/{branch}"
    proc = subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "push", "--porcelain", "origin", f"{ref}:{ref}"],
                          cwd=repo.top, env={**_user_env(), "GIT_TERMINAL_PROMPT": "0"}, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    lines = proc.stdout.decode("utf-8", "replace").strip().splitlines()
    out = redact_text(lines[-1] if lines else "")
    if proc.returncode == 0:
        return f"pushed {branch} to origin"
    return f"{PUSH_FAILED} (exit {proc.returncode}): {out}; the branch is made here: git push -u origin {shlex.quote(branch)}"


def open_pr(repo: UserRepo, branch: str, title: str, body: Path) -> str:
    """``gh pr create`` where gh is installed and the remote is GitHub; else the commands to run."""
    remote = repo.remote_url() or ""
    push = f"git push -u origin {shlex.quote(branch)}"
    create = ["gh", "pr", "create", "--title", title, "--body-file", str(body), "--head", branch]
    gh = shutil.which("gh")
    if gh and "github.com" in remote:
        proc = subprocess.run([gh, *create[1:]], cwd=repo.top, env=_user_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, start_new_session=True)
        out = redact_text(proc.stdout.decode("utf-8", "replace").strip())
        if proc.returncode == 0:
            return f"pull request opened: {out}" if out else "pull request opened"
        return f"gh pr create failed (exit {proc.returncode}): {out}\nrun: {push} && {shlex.join(create)}"
    why = "gh is not installed" if not gh else f"the remote is not GitHub ({remote or 'no origin remote'})"
    return f"{why}; to open the pull request, run:\n  {push}\n  {shlex.join(create)}"
