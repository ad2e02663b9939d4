"""docs/writing-loops.md's field reference lists every field of every loop model, with its default."""

from __future__ import annotations

import re
import typing

from pydantic import BaseModel

from odin_magic.loop.schema import Loop
from support import REPO

DOC = REPO / "docs" / "writing-loops.md"


def models_of(model: type[BaseModel], found: dict[str, type[BaseModel]] | None = None) -> dict[str, type[BaseModel]]:
    """``model`` and every model its fields can hold, walked through lists, unions and Annotated."""
    found = {} if found is None else found
    found[model.__name__] = model

    def walk(tp) -> None:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if tp.__name__ not in found:
                models_of(tp, found)
            return
        for arg in typing.get_args(tp):
            walk(arg)

    for field in model.model_fields.values():
        walk(field.annotation)
    return found


def documented() -> dict[str, dict[str, list[str]]]:
    """``{model: {field: [cells]}}`` from the tables under '## Field reference'."""
    text = DOC.read_text(encoding="utf-8").split("\n## Field reference\n", 1)[1]
    tables: dict[str, dict[str, list[str]]] = {}
    for section in re.split(r"\n### ", text)[1:]:
        name = section.split("\n", 1)[0].strip("` ")
        rows = {}
        for line in section.splitlines():
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            if cells and re.fullmatch(r"`\w+`", cells[0]):
                rows[cells[0].strip("`")] = cells
        tables[name] = rows
    return tables


def shown(value) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + ", ".join(shown(v) for v in value) + "]"
    return str(value)


def test_every_schema_model_and_field_is_in_the_reference_with_its_default():
    models = models_of(Loop)
    assert {"Loop", "Stage", "Gate", "GateCommand", "AgentRef", "Interview", "Budget"} <= set(models)
    tables = documented()
    assert set(tables) == set(models), "one '### `Model`' table per model of the schema, no other"
    for name, model in models.items():
        fields = {info.alias or key: info for key, info in model.model_fields.items()}  # as a loop file spells them
        assert set(tables[name]) == set(fields), f"{name}: documented fields differ from the schema's"
        for field_name, info in fields.items():
            default = tables[name][field_name][2]
            if info.is_required():
                assert default == "required", f"{name}.{field_name} is required"
            else:
                value = info.default_factory() if info.default_factory is not None else info.default
                assert default == f"`{shown(value)}`", f"{name}.{field_name}: default {shown(value)}"


def test_the_fields_verification_md_explains_are_in_the_main_tables_too():
    text = DOC.read_text(encoding="utf-8").split("\n## Field reference\n", 1)[0]
    for field in ("mutate", "min_kill_ratio", "regression", "acceptance"):
        assert f"| `{field}` |" in text
