"""Safe YAML loading for loop files, with the line and column of every node.

A loop file comes from a user, a notebook cell or a downloaded example, so it
is treated as untrusted input. :func:`load_yaml` builds plain Python data
(dicts, lists, strings, numbers, booleans, None) straight from the parser's
event stream, never through a constructor that could run code, and it keeps a
:class:`NodeInfo` tree beside the data so that a diagnostic can point at the
line and column of any field path.

Hostile inputs end in a :class:`YamlError` (an :class:`~odin_magic.core.errors.OdinError`)
that names the line, never in a traceback:

* more than :data:`MAX_BYTES` of text;
* bytes that are not UTF-8 text (NUL bytes, binary garbage);
* nesting deeper than :data:`MAX_DEPTH`;
* aliases that would expand to more than :data:`MAX_NODES` nodes (a "billion laughs" bomb);
* a key given twice in one mapping;
* a tag other than YAML's plain data types (e.g. ``!!python/object``);
* more than one document, or a mapping key that is not a scalar.

A UTF-8 byte-order mark at the start is accepted and dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.events import (
    AliasEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

from odin_magic.core.errors import OdinError

MAX_BYTES = 1024 * 1024
MAX_DEPTH = 64
MAX_NODES = 20_000  # a real loop file has a few hundred

_TAG = "tag:yaml.org,2002:"
_ALLOWED_SCALAR_TAGS = {_TAG + t for t in ("str", "int", "float", "bool", "null")}
_ALLOWED_COLLECTION_TAGS = {_TAG + "map", _TAG + "seq"}
_MERGE_TAG = _TAG + "merge"
_STR = _TAG + "str"

try:  # libyaml is much faster on large inputs; the pure-Python parser behaves the same
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Loader = yaml.SafeLoader

Path = tuple  # a field path: keys (str) and list indexes (int)


class YamlError(OdinError):
    """The text is not loadable as a loop file's YAML; ``line``/``column`` are 1-based."""

    def __init__(self, message: str, line: int = 1, column: int = 1, hint: str | None = None):
        super().__init__(message, hint)
        self.line = line
        self.column = column


@dataclass(eq=False)
class NodeInfo:
    """Where a node sits in the text (1-based), and where its key sits when it is a mapping value."""

    line: int
    column: int
    key_line: int
    key_column: int
    kind: str = "scalar"  # scalar | map | seq
    children: dict | list | None = None
    size: int = 1  # nodes in this subtree, aliases expanded


@dataclass
class YamlDocument:
    """Loaded data plus the positions of its nodes."""

    data: Any
    root: NodeInfo | None = None
    _empty: NodeInfo = field(default_factory=lambda: NodeInfo(1, 1, 1, 1))

    def locate(self, path: Path) -> tuple[NodeInfo, bool]:
        """The node at ``path``, or its nearest existing ancestor; the flag says whether it was found."""
        node = self.root or self._empty
        for step in path:
            kids = node.children
            if isinstance(kids, dict) and step in kids:
                node = kids[step]
            elif isinstance(kids, list) and isinstance(step, int) and 0 <= step < len(kids):
                node = kids[step]
            else:
                return node, False
        return node, True

    def position(self, path: Path) -> tuple[int, int]:
        """Line and column of the value at ``path`` (or of the nearest ancestor that exists)."""
        node, _ = self.locate(path)
        return node.line, node.column

    def key_position(self, path: Path) -> tuple[int, int]:
        """Line and column of the key that introduces ``path`` (the value itself for a list item)."""
        node, _ = self.locate(path)
        return node.key_line, node.key_column


def _tab_indent(text: str, line: int) -> tuple[int, int] | None:
    """Where a tab indents the line a parse error points at, or the nearest line above it (1-based)."""
    lines = text.splitlines()
    for n in range(min(line, len(lines)), 0, -1):
        body = lines[n - 1]
        indent = body[: len(body) - len(body.lstrip(" \t"))]
        if "\t" in indent and body.strip():
            return n, indent.index("\t") + 1
        if body.strip() and n < line:
            return None  # a line above indented with spaces only: the tab is not the cause
    return None


def _offset_position(text: str, offset: int) -> tuple[int, int]:
    """Line and column (1-based) of a character offset in ``text``."""
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _mark(mark) -> tuple[int, int]:
    if mark is None:
        return 1, 1
    return mark.line + 1, mark.column + 1


class _Builder:
    """Turns parser events into data and a NodeInfo tree, enforcing the limits."""

    def __init__(self) -> None:
        self.resolver = Resolver()
        self.constructor = SafeConstructor()
        self.anchors: dict[str, tuple[Any, NodeInfo]] = {}
        self.total = 0
        self.aliased = False  # whether an alias has added to the total
        # one frame per open mapping or list: its data, NodeInfo, anchor, pending key, merges, keys seen
        self.stack: list[dict] = []
        self.result: tuple[Any, NodeInfo] | None = None
        self.documents = 0

    # -- limits ---------------------------------------------------------------
    def _count(self, n: int, line: int, column: int, *, alias: bool = False) -> None:
        self.total += n
        self.aliased = self.aliased or alias
        if self.total > MAX_NODES:
            if self.aliased:
                raise YamlError(
                    f"the document expands to more than {MAX_NODES} nodes (aliases included)",
                    line,
                    column,
                    hint="a loop file is small; remove the anchors/aliases that multiply its content",
                )
            raise YamlError(
                f"the document has more than {MAX_NODES} values",
                line,
                column,
                hint="a loop file holds a few hundred values; check that this is the right file",
            )

    # -- events ---------------------------------------------------------------
    def feed(self, event) -> None:
        line, column = _mark(event.start_mark)
        if isinstance(event, ScalarEvent):
            self._count(1, line, column)
            value = self._scalar(event, line, column)
            info = NodeInfo(line, column, line, column)
            self._add(value, info, line, column, anchor=event.anchor, is_merge=self._is_merge(event))
        elif isinstance(event, DocumentStartEvent):
            self.documents += 1
            if self.documents > 1:
                raise YamlError(
                    "more than one YAML document ('---') in the file",
                    line,
                    column,
                    hint="a loop file holds exactly one document; remove the extra '---' section",
                )
        elif isinstance(event, AliasEvent):
            if event.anchor not in self.anchors:
                raise YamlError(f"unknown alias '*{event.anchor}'", line, column, hint="define the anchor '&' before using it")
            value, info = self.anchors[event.anchor]
            self._count(info.size, line, column, alias=True)
            alias_info = NodeInfo(line, column, line, column, info.kind, info.children, info.size)
            self._add(value, alias_info, line, column)
        elif isinstance(event, (MappingStartEvent, SequenceStartEvent)):
            self._start_collection(event, line, column)
        elif isinstance(event, (MappingEndEvent, SequenceEndEvent)):
            self._end_collection(line, column)

    def _start_collection(self, event, line: int, column: int) -> None:
        """A mapping or a list begins: checked (tag, not a key, depth) and pushed as a frame."""
        self._count(1, line, column)
        is_map = isinstance(event, MappingStartEvent)
        allowed = _TAG + ("map" if is_map else "seq")
        if event.tag not in (None, "!", allowed):
            self._refuse_tag(event.tag, line, column)
        if self._expecting_key():
            raise YamlError(
                "a mapping key must be a plain value, not a " + ("mapping" if is_map else "list"),
                line,
                column,
                hint="write keys as plain words, e.g. 'gate:'",
            )
        if len(self.stack) >= MAX_DEPTH:
            raise YamlError(
                f"nesting deeper than {MAX_DEPTH} levels",
                line,
                column,
                hint="a loop file is only a few levels deep; flatten the structure",
            )
        kind = "map" if is_map else "seq"
        self.stack.append(
            {
                "kind": kind,
                "data": {} if is_map else [],
                "info": NodeInfo(line, column, line, column, kind, {} if is_map else []),
                "anchor": event.anchor,
                "key": _NO_KEY,
                "key_pos": (line, column),
                "key_is_merge": False,
                "merges": [],
                "keys": {},
            }
        )

    def _end_collection(self, line: int, column: int) -> None:
        """A mapping or a list ends: its merges applied, its size counted, added to its parent."""
        frame = self.stack.pop()
        data, info = frame["data"], frame["info"]
        if frame["kind"] == "map":
            for merged, merged_info in frame["merges"]:
                for k, v in merged.items():
                    if k not in data:
                        data[k] = v
                        info.children[k] = merged_info.children[k]
        info.size = 1 + sum(child.size for child in (info.children.values() if isinstance(info.children, dict) else info.children))
        self._add(data, info, line, column, anchor=frame["anchor"])

    # -- helpers --------------------------------------------------------------
    def _expecting_key(self) -> bool:
        return bool(self.stack) and self.stack[-1]["kind"] == "map" and self.stack[-1]["key"] is _NO_KEY

    @staticmethod
    def _is_merge(event) -> bool:
        return event.tag is None and event.implicit[0] and event.value == "<<"

    def _refuse_tag(self, tag: str, line: int, column: int) -> None:
        shown = tag.replace(_TAG, "!!")
        raise YamlError(
            f"the tag {shown} is not allowed: a loop file holds plain data only",
            line,
            column,
            hint="remove the tag; use plain strings, numbers, lists and mappings",
        )

    def _scalar(self, event, line: int, column: int) -> Any:
        tag = event.tag
        if tag in (None, "!"):
            if tag is None and event.implicit[0]:
                tag = self.resolver.resolve(ScalarNode, event.value, (True, False))
            else:
                tag = _TAG + "str"
        if tag == _MERGE_TAG and event.value == "<<":
            return "<<"
        if tag not in _ALLOWED_SCALAR_TAGS:
            if event.tag is not None:
                self._refuse_tag(tag, line, column)
            # An implicit type we do not accept (a date, a timestamp): keep the text.
            return event.value
        if tag == _STR:
            return event.value
        node = ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
        try:
            return SafeConstructor.yaml_constructors[tag](self.constructor, node)
        except (yaml.YAMLError, ValueError) as exc:
            raise YamlError(f"cannot read the value {event.value!r}: {exc}", line, column) from None

    def _add(self, value, info: NodeInfo, line, column, *, anchor=None, is_merge=False) -> None:
        """A finished node (``anchor``: the name it is anchored under) into its parent, or as the result."""
        if anchor:
            self.anchors[anchor] = (value, info)
        if not self.stack:
            self.result = (value, info)
            return
        frame = self.stack[-1]
        if frame["kind"] == "seq":
            frame["data"].append(value)
            frame["info"].children.append(info)
            return
        if frame["key"] is _NO_KEY:  # this value is a key
            try:
                hash(value)
            except TypeError:
                raise YamlError(
                    "a mapping key must be a plain value", line, column, hint="write keys as plain words, e.g. 'gate:'"
                ) from None
            frame["key"] = value
            frame["key_pos"] = (line, column)
            frame["key_is_merge"] = is_merge
            return
        key, (key_line, key_column) = frame["key"], frame["key_pos"]
        frame["key"] = _NO_KEY
        if frame["key_is_merge"]:
            sources = [(value, info)]
            if isinstance(value, list):
                sources = list(zip(value, info.children or []))
            for merged, merged_info in sources:
                if not isinstance(merged, dict):
                    raise YamlError(
                        "a merge key '<<' must be followed by a mapping or a list of mappings",
                        key_line,
                        key_column,
                    )
                frame["merges"].append((merged, merged_info))
            return
        if key in frame["keys"]:
            first_line, first_column = frame["keys"][key]
            raise YamlError(
                f"duplicate key {key!r} (first given on line {first_line}, column {first_column})",
                key_line,
                key_column,
                hint="give each key once per mapping; delete or merge one of them",
            )
        frame["keys"][key] = (key_line, key_column)
        frame["data"][key] = value
        info.key_line, info.key_column = key_line, key_column
        frame["info"].children[key] = info


class _NoKey:
    def __repr__(self) -> str:  # pragma: no cover
        return "<no key>"


_NO_KEY = _NoKey()


def decode_text(raw: bytes) -> str:
    """Decode a file's bytes as UTF-8 text (a BOM is dropped), refusing binary data."""
    if len(raw) > MAX_BYTES:
        raise YamlError(
            f"the file is over the {MAX_BYTES // 1024} KiB limit for a loop file",
            hint="a loop file is a few kilobytes of YAML; check that this is the right file",
        )
    nul = raw.find(b"\x00")
    if nul >= 0:
        line = raw.count(b"\n", 0, nul) + 1
        raise YamlError(
            f"binary data (a NUL byte at offset {nul}): this is not a text file",
            line,
            1,
            hint="a loop file is UTF-8 YAML text",
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise YamlError(
            f"the file is not UTF-8 text (invalid byte at offset {exc.start})",
            line,
            1,
            hint="save the loop file as UTF-8",
        ) from None
    return text


def load_yaml(text: str) -> YamlDocument:
    """Parse ``text`` as one YAML document of plain data, with positions; raise :class:`YamlError`."""
    if len(text) > MAX_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise YamlError(
            f"the text is over the {MAX_BYTES // 1024} KiB limit for a loop file",
            hint="a loop file is a few kilobytes of YAML",
        )
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\x00" in text:
        nul = text.index("\x00")
        raise YamlError(
            "binary data (a NUL character): this is not YAML text",
            *_offset_position(text, nul),
            hint="a loop file is UTF-8 YAML text",
        )
    builder = _Builder()
    try:
        for event in yaml.parse(text, Loader=_Loader):
            builder.feed(event)
    except YamlError:
        raise
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = _mark(mark)
        tab = _tab_indent(text, line)
        if tab is not None:
            raise YamlError("a tab in the indentation (YAML indents with spaces only)", tab[0], tab[1],
                            hint="tab: use spaces to indent") from None
        problem = exc.problem or exc.context or "invalid YAML"
        if exc.context and exc.problem:
            problem = f"{exc.problem} ({exc.context})"
        raise YamlError(f"invalid YAML: {problem}", line, column, hint="fix the YAML syntax at this line") from None
    except yaml.reader.ReaderError as exc:
        pos = exc.position if isinstance(exc.position, int) else 0
        line, column = _offset_position(text, pos)
        char = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
        raise YamlError(
            f"the control character U+{char:04X} is not allowed in YAML text",
            line,
            column,
            hint="remove the control character (is this a binary file?)",
        ) from None
    except yaml.YAMLError as exc:
        raise YamlError(f"invalid YAML: {exc}", hint="fix the YAML syntax") from None
    except RecursionError:  # pragma: no cover - MAX_DEPTH stops nesting long before this
        raise YamlError(f"nesting deeper than {MAX_DEPTH} levels") from None
    if builder.result is None:
        return YamlDocument(data=None, root=None)
    data, root = builder.result
    return YamlDocument(data=data, root=root)
