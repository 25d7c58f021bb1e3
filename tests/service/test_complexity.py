"""No function in ``src/rankci/service`` has a McCabe complexity over 15 (issue 24).

The complexity is computed here with :mod:`ast`, counted as ruff's C901 (``mccabe``) counts it,
so that the check needs no tool: 1 for the function, plus 1 for each ``if`` and ``elif``, each
``for`` and ``while`` (``async`` too), each ``except`` handler, a ``try``'s ``else``, each
``case`` of a ``match`` (minus 1 when the last one is irrefutable), and, for each function or
class defined inside it, what that one adds (a nested function: 1 plus its own branches).
Boolean operators, conditional expressions and comprehensions are not counted, as in C901.
``ruff check --select C901 --config 'lint.mccabe.max-complexity=15' src/rankci/service``
reports the same functions.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

SERVICE = Path(__file__).resolve().parents[2] / "src" / "rankci" / "service"
LIMIT = 15
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _irrefutable(case: ast.match_case) -> bool:
    pattern = case.pattern
    while isinstance(pattern, ast.MatchAs) and pattern.pattern is not None:
        pattern = pattern.pattern  # `case (x as y)`
    if isinstance(pattern, ast.MatchOr):
        return any(_irrefutable(ast.match_case(p, None, [])) for p in pattern.patterns)
    return case.guard is None and isinstance(pattern, ast.MatchAs) and pattern.pattern is None


def _branches(body: list[ast.stmt]) -> int:
    """The decision points of a block of statements, nested blocks included."""
    n = 0
    for stmt in body:
        if isinstance(stmt, ast.If):
            n += 1 + _branches(stmt.body)
            orelse = stmt.orelse
            while len(orelse) == 1 and isinstance(orelse[0], ast.If):  # elif
                n += 1 + _branches(orelse[0].body)
                orelse = orelse[0].orelse
            n += _branches(orelse)
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            n += 1 + _branches(stmt.body) + _branches(stmt.orelse)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            n += _branches(stmt.body)
        elif isinstance(stmt, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            n += _branches(stmt.body) + _branches(stmt.orelse) + _branches(stmt.finalbody)
            n += 1 if stmt.orelse else 0
            n += sum(1 + _branches(handler.body) for handler in stmt.handlers)
        elif isinstance(stmt, ast.Match):
            n += sum(1 + _branches(case.body) for case in stmt.cases)
            n -= 1 if stmt.cases and _irrefutable(stmt.cases[-1]) else 0
        elif isinstance(stmt, FUNCTIONS):
            n += 1 + _branches(stmt.body)
        elif isinstance(stmt, ast.ClassDef):
            n += _branches(stmt.body)
    return n


def complexity(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The McCabe complexity of one function, as ruff's C901 counts it."""
    return 1 + _branches(function.body)


def too_complex(source: str, limit: int = LIMIT) -> list[tuple[str, int, int]]:
    """(name, line, complexity) of every function of ``source`` over ``limit``, nested ones
    included (each is also counted on its own)."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, FUNCTIONS):
            value = complexity(node)
            if value > limit:
                found.append((node.name, node.lineno, value))
    return found


def _only(source: str) -> int:
    tree = ast.parse(textwrap.dedent(source))
    (function,) = [node for node in tree.body if isinstance(node, FUNCTIONS)]
    return complexity(function)


# Each expected value below is counted by hand from the rule in the module's text.
CASES = [
    ("def f(x):\n    return x\n", 1),
    ("def f(x):\n    return 1 if x and x > 2 or not x else [y for y in x if y]\n", 1),
    (
        """
        def f(x):
            if x == 1:
                return 1
            elif x == 2:
                return 2
            elif x == 3:
                return 3
            else:
                if x:
                    return 4
        """,
        5,
    ),
    (
        """
        async def f(xs):
            for x in xs:
                while x:
                    x -= 1
            else:
                pass
            async for y in xs:
                pass
            with open(xs) as h:
                if h:
                    pass
        """,
        5,
    ),
    (
        """
        def f(x):
            try:
                x()
            except ValueError:
                pass
            except (KeyError, TypeError):
                if x:
                    pass
            else:
                pass
            finally:
                for _ in x:
                    pass
        """,
        6,
    ),
    (
        """
        def f(x):
            def g(y):
                if y:
                    return y
            class C:
                def m(self):
                    while True:
                        break
            return g
        """,
        5,
    ),
    (
        """
        def f(x):
            match x:
                case 1:
                    return 1
                case [a, b] if a:
                    return 2
                case _:
                    return 3
        """,
        3,
    ),
    (
        """
        def f(x):
            match x:
                case 1:
                    return 1
                case {"a": a}:
                    return a
        """,
        3,
    ),
]


@pytest.mark.parametrize(("source", "expected"), CASES)
def test_the_counter_counts_like_mccabe(source, expected):
    assert _only(source) == expected


def test_the_check_refuses_a_function_over_the_limit():
    branches = "".join(f"    if x == {k}:\n        return {k}\n" for k in range(LIMIT))
    at_limit = f"def at_limit(x):\n{branches}    return x\n"  # 1 + 15 ifs = 16
    assert _only(at_limit) == LIMIT + 1
    assert too_complex(at_limit) == [("at_limit", 1, LIMIT + 1)]
    one_less = at_limit.replace("    if x == 0:\n        return 0\n", "")
    assert _only(one_less) == LIMIT and too_complex(one_less) == []
    nested = "def outer():\n" + textwrap.indent(at_limit, "    ") + "    return at_limit\n"
    assert too_complex(nested) == [("outer", 1, LIMIT + 2), ("at_limit", 2, LIMIT + 1)]


def test_the_check_sees_every_module_of_the_service():
    modules = sorted(SERVICE.glob("*.py"))
    names = {path.stem for path in modules}
    assert {"app", "board", "commits", "posting", "published", "registry", "spec"} <= names
    functions = [
        node.name
        for path in modules
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, FUNCTIONS)
    ]
    assert len(functions) > 150 and "create_app" in functions


def test_no_function_in_the_service_is_over_complexity_15():
    over = [
        f"{path.relative_to(SERVICE.parents[2])}:{line} {name} has complexity {value} > {LIMIT}"
        for path in sorted(SERVICE.glob("*.py"))
        for name, line, value in too_complex(path.read_text(encoding="utf-8"))
    ]
    assert not over, "split these functions:\n" + "\n".join(over)
