"""The service's structure (issue 24), checked statically with :mod:`ast`: one authorisation for
the routes and the fast paths, routes only in the routers, no positional published state."""

from __future__ import annotations

import ast
from pathlib import Path

SERVICE = Path(__file__).resolve().parents[2] / "src" / "rankci" / "service"
ROUTERS = ("routes_admin", "routes_boards", "routes_pages", "routes_scores")
VERBS = {"get", "post", "put", "patch", "delete", "head", "options", "api_route", "route"}


def _tree(name: str) -> ast.Module:
    return ast.parse((SERVICE / f"{name}.py").read_text(encoding="utf-8"))


def _function(tree: ast.AST, name: str) -> ast.AST:
    found = [
        node
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name
    ]
    assert len(found) == 1, name
    return found[0]


def _called(node: ast.AST) -> set[str]:
    names = set()
    for call in ast.walk(node):
        if isinstance(call, ast.Call):
            func = call.func
            names.add(func.id if isinstance(func, ast.Name) else getattr(func, "attr", ""))
    return names


def _token_checks(tree: ast.AST) -> list[int]:
    """Lines that check a token with the registry directly (not through deps.authorize)."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        owner = node.value
        owner_name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
        if node.attr in ("check_cached", "check_admin") or (
            node.attr == "check" and owner_name == "service"
        ):
            lines.append(node.lineno)
    return lines


def test_the_routes_and_the_fast_paths_share_one_authorisation():
    deps = _tree("deps")
    assert "check_cached" in {
        node.attr
        for node in ast.walk(_function(deps, "authorize"))
        if isinstance(node, ast.Attribute)
    }
    assert "authorize" in _called(_function(deps, "authorized"))
    (access,) = [n for n in deps.body if isinstance(n, ast.ClassDef) and n.name == "BoardAccess"]
    assert "authorized" in _called(_function(access, "__call__"))  # deps.reader and deps.writer
    assert "authorize" in _called(_function(_tree("posting"), "_answer"))
    # nobody else asks the registry about a token
    for path in sorted(SERVICE.glob("*.py")):
        if path.stem in ("deps", "registry"):
            continue
        lines = _token_checks(ast.parse(path.read_text(encoding="utf-8")))
        assert not lines, f"{path.name} checks tokens itself at lines {lines}: use deps"


def _routes(tree: ast.AST) -> list[str]:
    paths = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                if (
                    isinstance(decorator, ast.Call)
                    and isinstance(decorator.func, ast.Attribute)
                    and decorator.func.attr in VERBS
                ):
                    paths.append(decorator.args[0].value)
    return paths


def test_routes_live_in_the_routers_and_create_app_only_assembles():
    assert _routes(_tree("app")) == []
    create_app = _function(_tree("app"), "create_app")
    nested = [
        node.name
        for node in ast.walk(create_app)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not create_app
    ]
    assert nested == []  # no closures: the routes read the state through deps.Context
    found = {name: _routes(_tree(name)) for name in ROUTERS}
    assert all(found.values()), found
    every = [path for paths in found.values() for path in paths]
    assert "/api/boards/{board}/scores" in found["routes_scores"]
    assert "/api/boards/{board}/leaderboard" in found["routes_boards"]
    assert "/api/health" in found["routes_admin"] and "/docs" in found["routes_pages"]
    # issue 29: models joining an open board, and votes posted to a votes board
    assert "/api/boards/{board}/models" in found["routes_scores"]
    assert "/api/boards/{board}/votes" in found["routes_scores"]
    # issue 29: a model withdrawn by its owner, and a board's history and export
    assert "/api/boards/{board}/models/{model}/withdraw" in found["routes_scores"]
    assert any(path.endswith("/export") for path in every), every
    assert any(path.endswith("/history") for path in every), every
    # issue 29: an item found broken, voided from now on
    assert "/api/boards/{board}/items/{item}/void" in every, every
    assert len(every) == 25
    for path in sorted(SERVICE.glob("*.py")):
        if path.stem not in ROUTERS:
            assert _routes(ast.parse(path.read_text(encoding="utf-8"))) == [], path.name


def test_the_published_state_is_named_not_positional():
    published = _tree("published")
    subscripts = [
        node.lineno
        for node in ast.walk(published)
        if isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr in ("state", "snapshot")
        or isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id in ("state", "before", "snapshot")
    ]
    assert subscripts == []
    classes = {node.name for node in published.body if isinstance(node, ast.ClassDef)}
    assert {"PublishedState", "LookSnapshot"} <= classes
