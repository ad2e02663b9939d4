"""Sizes that keep the code readable, checked over the AST: no module over 600 lines, no
function over 60 lines, no function with more than 6 parameters (``self`` and ``cls`` not
counted)."""

from __future__ import annotations

import ast

from support import REPO

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 60
MAX_PARAMETERS = 6


def sources():
    for path in sorted((REPO / "odin_magic").rglob("*.py")):
        yield path.relative_to(REPO), path.read_text(encoding="utf-8")


def functions(text: str):
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = fn.args
    names = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
    names += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
    return len(names) - (1 if names[:1] in (["self"], ["cls"]) else 0)


def test_no_module_is_over_600_lines():
    long = [f"{path}: {text.count(chr(10))} lines" for path, text in sources() if text.count("\n") > MAX_FILE_LINES]
    assert long == [], "split these modules by concern:\n" + "\n".join(long)


def test_no_function_is_over_60_lines():
    long = [f"{path}:{fn.lineno} {fn.name}: {fn.end_lineno - fn.lineno + 1} lines"
            for path, text in sources() for fn in functions(text) if fn.end_lineno - fn.lineno + 1 > MAX_FUNCTION_LINES]
    assert long == [], "\n".join(long)


def test_no_function_takes_more_than_6_parameters():
    many = [f"{path}:{fn.lineno} {fn.name}: {parameters(fn)} parameters"
            for path, text in sources() for fn in functions(text) if parameters(fn) > MAX_PARAMETERS]
    assert many == [], "group them (a dataclass of options) or split the function:\n" + "\n".join(many)


def test_the_counts_see_what_they_count():
    fn = next(functions("class A:\n    def f(self, a, b, *c, d, **e):\n        pass\n"))
    assert parameters(fn) == 5
    assert parameters(next(functions("def g(a, b):\n    pass\n"))) == 2
