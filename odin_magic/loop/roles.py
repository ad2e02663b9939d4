"""Role personas and each role's tool policy.

The persona (a Markdown file) shapes how a worker behaves; the policy decides
what it may do, and code enforces it: a call outside the policy is refused
with a clear tool error, whatever the prompt says.

=========  ===============================  ===================================================================
role       tools                            may write
=========  ===============================  ===================================================================
explore    read glob grep                   nothing
planner    read glob grep write edit        only its stage's ``produces``
executor   read write edit glob grep bash   anything in the project (in .odin-loop/ and .git/: its produces)
critic     read glob grep bash write edit   the run's stub area ``harness/stub/`` and its ``produces``
reviewer   read glob grep bash write edit   only its ``produces`` (its report)
(none)     as executor                      as executor (``inline`` / ``fresh``)
=========  ===============================  ===================================================================

File tools are confined to the project directory (plus the run directory) by
the SDK's agent toolset, symlink-safe; below ``.odin-loop/`` and ``.git/`` no
role writes anything but its stage's produces (:func:`write_allowed`). ``bash``
cannot be confined by a path policy: a role that has it can change files through
the shell; run untrusted work in a sandbox.

A project overrides a persona with ``.odin-loop/agents/<role>.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal, Sequence

from odin_magic.core.confine import check_confined
from odin_magic.core.errors import ConfigError
from odin_magic.loop.schema import ROLES, ResolvedAgent

ALL_TOOLS: tuple[str, ...] = ("bash", "read", "write", "edit", "glob", "grep")
WRITE_TOOLS = frozenset({"write", "edit"})
#: The critic's known-bad implementations, in the run dir; the harness's tests stay out of its reach.
STUB_DIR = "harness/stub"

#: What a role's ``write`` / ``edit`` may touch.
WriteScope = Literal["none", "produces", "stub+produces", "anywhere"]


@dataclass(frozen=True)
class RolePolicy:
    name: str  # the role, or "inline"/"fresh" for a stage without one
    tools: frozenset[str]
    writes: WriteScope

    def allows_tool(self, tool: str) -> bool:
        return tool in self.tools

    def describe(self) -> str:
        tools = ", ".join(t for t in ALL_TOOLS if t in self.tools)
        where = {
            "none": "You may not write or edit any file.",
            "produces": "You may write or edit only this stage's produces.",
            "stub+produces": "You may write or edit only under the run's harness/stub/ directory (never the "
            "harness's tests) and this stage's produces.",
            "anywhere": "You may write and edit files in the project; in .odin-loop/ (the run directory "
            "included) and .git/, only this stage's produces.",
        }[self.writes]
        return f"Tools you may use: {tools}. {where}"


_READ = frozenset({"read", "glob", "grep"})

POLICIES: dict[str, RolePolicy] = {
    "explore": RolePolicy("explore", _READ, "none"),
    "planner": RolePolicy("planner", _READ | WRITE_TOOLS, "produces"),
    "executor": RolePolicy("executor", frozenset(ALL_TOOLS), "anywhere"),
    "critic": RolePolicy("critic", _READ | {"bash"} | WRITE_TOOLS, "stub+produces"),
    "reviewer": RolePolicy("reviewer", _READ | {"bash"} | WRITE_TOOLS, "produces"),
}


def policy_for(agent: ResolvedAgent) -> RolePolicy:
    """The tool policy of whoever runs a stage (no role: the executor's tools)."""
    if agent.role:
        return POLICIES[agent.role]
    base = POLICIES["executor"]
    return RolePolicy(agent.label, base.tools, base.writes)


def persona_override_path(project_dir: Path, role: str) -> Path:
    return Path(project_dir) / ".odin-loop" / "agents" / f"{role}.md"


def load_persona(role: str | None, project_dir: Path) -> str:
    """The persona text for ``role``: the project's override, else the shipped one ('' for no role)."""
    if role is None:
        return ""
    if role not in ROLES:
        raise ConfigError(f"unknown role {role!r}", hint=f"use one of {', '.join(ROLES)}")
    override = persona_override_path(project_dir, role)
    if override.is_file():
        check_confined(override, [project_dir], f"the {role} persona override", base=project_dir)
        try:
            text = override.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"{override}: cannot read the persona override ({exc})",
                hint="make it a readable UTF-8 Markdown file, or remove it to use the built-in persona",
            ) from None
        if text.strip():
            return text.strip()
    return resources.files("odin_magic.loop").joinpath("personas", f"{role}.md").read_text(encoding="utf-8").strip()


def write_allowed(policy: RolePolicy, target: Path, produces: list[Path], stub_dir: Path,
                  owned: Sequence[Path]) -> bool:
    """Whether ``policy`` lets a write/edit touch ``target`` (all paths canonical).

    A ``produces`` entry that is a directory (``src/``; the engine creates it
    before the stage runs) admits everything below it. Below an ``owned`` root
    (the engine's: the project's ``.odin-loop/`` and ``.git/``: the run's log,
    evidence, harness, loop, memory, checkpoints) only the stage's produces (and
    the critic's stub area) may be written, whatever the role: the same rule as
    in the sandbox, where bash sees those roots read-only.
    """
    if policy.writes == "none":
        return False
    for allowed in produces:
        if target == allowed or (allowed.is_dir() and target.is_relative_to(allowed)):
            return True
    if policy.writes == "stub+produces" and target.is_relative_to(stub_dir):
        return True
    if any(target.is_relative_to(root) for root in owned):
        return False
    return policy.writes == "anywhere"
