"""Small, exact edits to a loop file's text that keep everything else (comments, layout, order).

A refinement changes one or two values of a loop (``max_iterations``, a gate's
``check``, ``mode`` or ``on_fail``, ``version``); rewriting the whole file
through a YAML dumper would lose its comments and turn the proposal's diff
into noise. :func:`set_value` finds the node through PyYAML's composer (which
knows each node's exact span), replaces just that span, or inserts a new
``key: value`` before the mapping's first key; the edited text is parsed
again to prove the edit says what was meant.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

_PLAIN = re.compile(r"^[A-Za-z_./][A-Za-z0-9 _./+()-]*[A-Za-z0-9_./)]$|^[A-Za-z_]$")
_RESERVED = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"}


class EditError(ValueError):
    """An edit that cannot be made to this text (the path is not there, or the result reads differently)."""


def render(value: Any, flow: bool = False) -> str:
    """``value`` as a YAML scalar or flow sequence that reads back as ``value``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(render(v, True) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{render(k, True)}: {render(v, True)}" for k, v in value.items()) + "}"
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in _RESERVED and not (flow and any(c in text for c in ",[]{}")) \
            and ": " not in text and " #" not in text:
        return text
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar


def _find(root: yaml.Node, path: tuple) -> yaml.Node | None:
    node = root
    for step in path:
        if isinstance(node, yaml.MappingNode) and isinstance(step, str):
            node = next((v for k, v in node.value if getattr(k, "value", None) == step), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and 0 <= step < len(node.value):
            node = node.value[step]
        else:
            return None
        if node is None:
            return None
    return node


def _flow_context(text: str, index: int) -> bool:
    """Whether position ``index`` sits inside a flow collection (``{...}`` or ``[...]``) on its line."""
    line_start = text.rfind("\n", 0, index) + 1
    before = text[line_start:index]
    return before.count("{") + before.count("[") > before.count("}") + before.count("]")


def set_value(text: str, path: tuple, value: Any) -> str:
    """``text`` with the value at ``path`` set to ``value`` (the last key is added when missing)."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if root is None:
        raise EditError("the loop file is empty")
    node = _find(root, path)
    if node is not None:
        start, end = node.start_mark.index, node.end_mark.index
        span = text[start:end]
        tail = span[len(span.rstrip()):] if isinstance(node, yaml.ScalarNode) and node.style in ("|", ">") else ""
        if isinstance(node, (yaml.SequenceNode, yaml.MappingNode)) and not node.flow_style:
            tail = span[len(span.rstrip()):]
            column = node.start_mark.column
            if isinstance(value, list):
                new = "".join(("" if i == 0 else " " * column) + "- " + render(v) + "\n" for i, v in enumerate(value))
                edited = text[:start] + new + text[end:].lstrip("\n") if tail else text[:start] + new.rstrip("\n") + text[end:]
                return _checked(edited, path, value)
        new = render(value, flow=_flow_context(text, start)) + tail
        edited = text[:start] + new + text[end:]
    else:
        parent = _find(root, path[:-1])
        if not isinstance(parent, yaml.MappingNode) or not parent.value:
            raise EditError(f"no mapping at {'.'.join(map(str, path[:-1])) or 'the top'} to add {path[-1]!r} to")
        first_key = parent.value[0][0]
        at = first_key.start_mark.index
        if parent.flow_style:
            insert = f"{path[-1]}: {render(value, flow=True)}, "
        else:
            insert = f"{path[-1]}: {render(value)}\n" + " " * first_key.start_mark.column
        edited = text[:at] + insert + text[at:]
    return _checked(edited, path, value)


def _checked(edited: str, path: tuple, value: Any) -> str:
    data = yaml.safe_load(edited)
    for step in path:
        data = data[step]
    if data != value:
        raise EditError(f"editing {'.'.join(map(str, path))} did not produce {value!r}")
    return edited


def bump_version(version: Any) -> Any:
    """The next version: 1 -> 2, None -> 2, '1.4' -> '1.5', 'v3' -> 'v4'."""
    if version is None:
        return 2
    if isinstance(version, bool):
        return 2
    if isinstance(version, int):
        return version + 1
    if isinstance(version, float):
        return int(version) + 1
    text = str(version)
    match = re.search(r"(\d+)(?!.*\d)", text)
    if match:
        return text[: match.start()] + str(int(match.group(1)) + 1) + text[match.end():]
    return text + ".1"


def duplicate_item(text: str, path: tuple) -> str:
    """``text`` with the block-sequence item at ``path`` (e.g. ``("stages", 2)``) copied right after itself."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    seq = _find(root, path[:-1]) if root is not None else None
    if not isinstance(seq, yaml.SequenceNode) or seq.flow_style or not 0 <= path[-1] < len(seq.value):
        raise EditError(f"no block list item at {'.'.join(map(str, path))}")
    item = seq.value[path[-1]]
    start = text.rfind("\n", 0, item.start_mark.index) + 1  # the item's line, its "- " included
    end = len(text[: item.end_mark.index].rstrip())  # the item's last character, then its line's end
    end = text.find("\n", end) + 1 or len(text)
    block = text[start:end]
    block = block.rstrip("\n") + "\n"
    edited = text[:end] + ("" if text[:end].endswith("\n") else "\n") + block + text[end:]
    if len(_find(yaml.compose(edited, Loader=yaml.SafeLoader), path[:-1]).value) != len(seq.value) + 1:
        raise EditError("the copied item did not land in the list")
    return edited


def remove_key(text: str, path: tuple) -> str:
    """``text`` without the key at ``path`` (its value with it) in a block or flow mapping."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    parent = _find(root, path[:-1]) if root is not None else None
    if not isinstance(parent, yaml.MappingNode):
        raise EditError(f"no mapping at {'.'.join(map(str, path[:-1])) or 'the top'}")
    pairs = parent.value
    at = next((i for i, (k, _) in enumerate(pairs) if getattr(k, "value", None) == path[-1]), None)
    if at is None:
        raise EditError(f"no key {path[-1]!r} at {'.'.join(map(str, path[:-1])) or 'the top'}")
    if len(pairs) == 1:
        raise EditError(f"{path[-1]!r} is the only key of its mapping")
    key, value = pairs[at]
    if parent.flow_style:  # `{a: 1, measure: {...}, b: 2}`: the pair and one comma go
        start, end = key.start_mark.index, value.end_mark.index
        rest = text[end:]
        gap = len(rest) - len(rest.lstrip(" ,")) if at + 1 < len(pairs) else 0
        if at + 1 == len(pairs):
            before = text[:start].rstrip()
            start = len(before) - 1 if before.endswith(",") else start
        edited = text[:start] + text[end + gap:]
    else:  # the key's lines, to the end of its value's last line
        start = text.rfind("\n", 0, key.start_mark.index) + 1
        end = len(text[:value.end_mark.index].rstrip())
        end = text.find("\n", end) + 1 or len(text)
        edited = text[:start] + text[end:]
    data = yaml.safe_load(edited)
    for step in path[:-1]:
        data = data[step]
    if not isinstance(data, dict) or path[-1] in data or len(data) != len(pairs) - 1:
        raise EditError(f"removing {'.'.join(map(str, path))} did not leave the rest as it was")
    return edited
