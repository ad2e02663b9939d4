"""Round 0: the user's answer to "is this how the work splits up?".

A small grammar, one or more edits separated by ``;`` or new lines:

    confirm                   lock the topology as shown (also: ok, yes)
    merge A, B [as NAME]      two or more components become one
    split A -> X, Y           one component becomes several
    defer C                   C stays recorded but out of scope this run
    add NAME                  a component the model missed
    rename A -> NAME

Components are named by name (case-insensitive) or by id (``C2``). Edits
without ``confirm`` are applied and the topology is asked about again; an
answer that ends with ``confirm`` applies its edits and locks the result.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from odin_magic.core.errors import OdinError
from odin_magic.interview.models import Component, InterviewState

MAX_COMPONENTS = 6
GRAMMAR_HINT = (
    "answer `confirm`, or edits such as `merge A, B`, `split A -> X, Y`, `defer C`, "
    "`add NAME`, `rename A -> NAME` (several separated by ';', end with '; confirm' to lock)"
)


class TopologyEditError(OdinError):
    """A round-0 answer that cannot be applied to the proposed topology."""


@dataclass(frozen=True)
class TopologyEdit:
    verb: str  # confirm | merge | split | defer | add | rename
    names: tuple[str, ...] = ()
    into: tuple[str, ...] = ()


_CONFIRM = {"confirm", "confirmed", "ok", "okay", "yes", "y", "lgtm", "looks good"}


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in re.split(r"[,]", text) if n.strip())


def parse_topology_answer(text: str) -> list[TopologyEdit]:
    parts = [p.strip() for p in re.split(r"[;\n]", text) if p.strip()]
    if not parts:
        raise TopologyEditError("the topology answer is empty", hint=GRAMMAR_HINT)
    edits: list[TopologyEdit] = []
    for part in parts:
        low = part.casefold().rstrip(".!")
        if low in _CONFIRM:
            edits.append(TopologyEdit("confirm"))
            continue
        verb, _, rest = part.partition(" ")
        verb = verb.casefold()
        rest = rest.strip()
        if verb == "merge":
            pieces = re.split(r"\s+as\s+", rest, maxsplit=1, flags=re.I)
            names = _names(pieces[0])
            if len(names) < 2:
                raise TopologyEditError(f"`{part}` merges fewer than two components", hint="e.g. `merge Ingestion, Normalization`")
            edits.append(TopologyEdit("merge", names, (pieces[1].strip(),) if len(pieces) > 1 and pieces[1].strip() else ()))
        elif verb in ("split", "rename"):
            if "->" not in rest:
                raise TopologyEditError(f"`{part}` needs '->'", hint=f"e.g. `{verb} A -> X, Y`" if verb == "split" else "e.g. `rename A -> B`")
            left, right = (s.strip() for s in rest.split("->", 1))
            into = _names(right)
            if not left or not into:
                raise TopologyEditError(f"`{part}` is incomplete", hint=GRAMMAR_HINT)
            if verb == "split" and len(into) < 2:
                raise TopologyEditError(f"`{part}` splits into fewer than two components", hint="e.g. `split UI -> Review UI, Admin UI`")
            if verb == "rename" and len(into) != 1:
                raise TopologyEditError(f"`{part}` renames to more than one name", hint="e.g. `rename UI -> Review UI`")
            edits.append(TopologyEdit(verb, (left,), into))
        elif verb in ("defer", "add"):
            names = _names(rest)
            if not names:
                raise TopologyEditError(f"`{part}` names no component", hint=GRAMMAR_HINT)
            edits.append(TopologyEdit(verb, names))
        else:
            raise TopologyEditError(f"cannot read `{part}` as a topology edit", hint=GRAMMAR_HINT)
    return edits


def _find(state: InterviewState, name: str) -> Component:
    found = state.component(name)
    if found is None:
        known = ", ".join(f"{c.id} {c.name}" for c in state.components)
        raise TopologyEditError(f"no component named {name!r} in the topology", hint=f"components: {known}")
    return found


def _check_new_name(state: InterviewState, name: str, allow: set[str] = frozenset()) -> None:
    existing = state.component(name)
    if existing is not None and existing.id not in allow:
        raise TopologyEditError(f"a component named {name!r} already exists ({existing.id})", hint="pick another name")
    if re.fullmatch(r"[Cc]\d+", name):
        raise TopologyEditError(f"{name!r} looks like a component id", hint="give the component a descriptive name")


def _new_component(state: InterviewState, name: str, summary: str = "") -> Component:
    comp = Component(id=f"C{state.next_component}", name=name, summary=summary)
    state.next_component += 1
    return comp


def apply_topology_edits(state: InterviewState, edits: list[TopologyEdit]) -> bool:
    """Apply ``edits`` to ``state.components`` in place (all or nothing); True when the answer confirms."""
    work = state.model_copy(deep=True)
    confirm = False
    for edit in edits:
        if edit.verb == "confirm":
            confirm = True
            continue
        if edit.verb == "merge":
            parts = [_find(work, n) for n in edit.names]
            if len({p.id for p in parts}) != len(parts):
                raise TopologyEditError("a merge names the same component twice", hint="name each component once")
            name = edit.into[0] if edit.into else " + ".join(p.name for p in parts)
            _check_new_name(work, name, allow={p.id for p in parts})
            merged = _new_component(work, name, "; ".join(p.summary for p in parts if p.summary))
            first = work.components.index(parts[0])
            ids = {p.id for p in parts}
            work.components = [c for c in work.components if c.id not in ids]
            work.components.insert(min(first, len(work.components)), merged)
        elif edit.verb == "split":
            part = _find(work, edit.names[0])
            if len({n.casefold() for n in edit.into}) != len(edit.into):
                raise TopologyEditError("a split names the same new component twice", hint="give each part its own name")
            for n in edit.into:
                _check_new_name(work, n, allow={part.id})
            at = work.components.index(part)
            new = [_new_component(work, n) for n in edit.into]
            work.components[at : at + 1] = new
        elif edit.verb == "defer":
            for n in edit.names:
                _find(work, n).status = "deferred"
        elif edit.verb == "add":
            for n in edit.names:
                _check_new_name(work, n)
                work.components.append(_new_component(work, n))
        elif edit.verb == "rename":
            part = _find(work, edit.names[0])
            _check_new_name(work, edit.into[0], allow={part.id})
            part.name = edit.into[0]
    if len(work.components) > MAX_COMPONENTS:
        raise TopologyEditError(
            f"the topology would have {len(work.components)} components; at most {MAX_COMPONENTS} are allowed",
            hint="merge or defer some components",
        )
    if not work.active:  # refused at once, not only when the topology is confirmed
        raise TopologyEditError("every component is deferred: nothing would be left to build",
                                hint="keep at least one component active")
    state.components = work.components
    state.next_component = work.next_component
    return confirm
