"""The import rules of src/rankci, checked statically (``ast``; no module is imported).

* No import cycle among modules. Every import counts, at any depth (an import inside a function
  body is an edge like one at the top), except those under ``if TYPE_CHECKING:``. A function-level
  import that closes a cycle is a *lazy back-import*: it hides the cycle from import time without
  removing it, so it is reported like any other cycle.
* No private name crosses a module boundary: ``from rankci.a import _x`` (``_x`` not a module) and
  ``a._x`` on an imported rankci module fail wherever they appear.
* A private module (``_base``, ``_version``, ``_progress``, ``adapters/_common``, ...) is imported
  only from inside the package that contains it.

Edges: ``import rankci.a.b`` and ``from rankci.a.b import name`` are edges to ``rankci.a.b``;
``from rankci.a import b`` is an edge to ``rankci.a.b`` when ``b`` is a module file, else to the
package ``rankci.a`` (its ``__init__``). Importing ``rankci.a.b`` from outside ``rankci.a`` also
runs ``rankci/a/__init__.py``, so that is an edge to ``rankci.a`` as well; the implicit edge from a
module to its own parent packages is ignored (Python has already started importing them).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = "rankci"


@dataclass(frozen=True)
class Import:
    source: str  # importing module
    target: str  # imported rankci module
    line: int
    lazy: bool  # inside a function body
    implicit: bool  # a package __init__ run on the way to one of its submodules
    text: str  # the statement, for messages

    def where(self, files: dict[str, Path]) -> str:
        path = files[self.source].relative_to(SRC.parent)
        how = " (inside a function: a lazy back-import)" if self.lazy else ""
        via = f" (runs {self.target}/__init__.py)" if self.implicit else ""
        return f"{path}:{self.line}: {self.source} -> {self.target}{via}{how}: {self.text}"


def _discover() -> tuple[dict[str, Path], set[str]]:
    files: dict[str, Path] = {}
    packages: set[str] = set()
    for path in sorted((SRC / ROOT).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
            packages.add(".".join(parts))
        files[".".join(parts)] = path
    return files, packages


FILES, PACKAGES = _discover()


def _package_of(module: str) -> str:
    """The package a module's relative imports start from."""
    return module if module in PACKAGES else module.rpartition(".")[0]


def _existing(name: str) -> str | None:
    """The longest prefix of a dotted name that is a rankci module."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in FILES:
            return candidate
        parts.pop()
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@dataclass
class _Scan:
    imports: list[Import]
    private_names: list[str]  # messages
    module_names: dict[str, str]  # local name -> rankci module it is bound to


class _Visitor(ast.NodeVisitor):
    def __init__(self, module: str, source: str) -> None:
        self.module = module
        self.lines = source.splitlines()
        self.depth = 0
        self.scan = _Scan([], [], {})
        self._attribute_nodes: list[ast.Attribute] = []

    # ---- scopes -------------------------------------------------------------------------------
    def _function(self, node) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    # ---- imports ------------------------------------------------------------------------------
    def _text(self, node: ast.stmt) -> str:
        return " ".join(line.strip() for line in self.lines[node.lineno - 1 : node.end_lineno])

    def _edge(self, target: str, node: ast.stmt, implicit: bool = False) -> None:
        if target == self.module:
            return
        self.scan.imports.append(
            Import(self.module, target, node.lineno, self.depth > 0, implicit, self._text(node))
        )

    def _edges_to(self, target: str, node: ast.stmt) -> None:
        """An edge to ``target`` and to each enclosing package the importer is not inside."""
        self._edge(target, node)
        parts = target.split(".")
        for i in range(2, len(parts)):
            parent = ".".join(parts[:i])
            inside = self.module == parent or self.module.startswith(parent + ".")
            if parent in PACKAGES and not inside:
                self._edge(parent, node, implicit=True)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name != ROOT and not alias.name.startswith(ROOT + "."):
                continue
            target = _existing(alias.name)
            if target is None:
                continue
            self._edges_to(target, node)
            if alias.asname:
                self.scan.module_names[alias.asname] = target
            else:
                self.scan.module_names.setdefault(ROOT, ROOT)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = _package_of(self.module).split(".")
            base = base[: len(base) - (node.level - 1)]
            origin = ".".join(base + ([node.module] if node.module else []))
        else:
            origin = node.module or ""
        if origin != ROOT and not origin.startswith(ROOT + "."):
            return
        origin_module = _existing(origin)
        if origin_module is None:
            return
        for alias in node.names:
            sub = f"{origin}.{alias.name}"
            if sub in FILES:  # from PKG import SUBMODULE: an edge to the submodule only
                self._edges_to(sub, node)
                self.scan.module_names[alias.asname or alias.name] = sub
                continue
            self._edges_to(origin_module, node)
            if _private(alias.name) and origin_module != self.module:
                self.scan.private_names.append(
                    f"{FILES[self.module].relative_to(SRC.parent)}:{node.lineno}: "
                    f"{self.module} imports the private name {alias.name!r} from {origin_module}"
                )

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._attribute_nodes.append(node)
        self.generic_visit(node)

    # ---- attribute access on imported modules (best effort) -----------------------------------
    def _resolve(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return self.scan.module_names.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self._resolve(node.value)
            if base is not None and f"{base}.{node.attr}" in FILES:
                return f"{base}.{node.attr}"
        return None

    def private_attributes(self) -> list[str]:
        out = []
        for node in self._attribute_nodes:
            if not _private(node.attr):
                continue
            owner = self._resolve(node.value)
            if owner is None or owner == self.module or f"{owner}.{node.attr}" in FILES:
                continue
            out.append(
                f"{FILES[self.module].relative_to(SRC.parent)}:{node.lineno}: {self.module} uses "
                f"the private name {node.attr!r} of {owner} ({ast.unparse(node)})"
            )
        return out


def _scan_all() -> dict[str, tuple[_Scan, list[str]]]:
    out = {}
    for module, path in FILES.items():
        source = path.read_text(encoding="utf-8")
        visitor = _Visitor(module, source)
        visitor.visit(ast.parse(source, filename=str(path)))
        out[module] = (visitor.scan, visitor.private_attributes())
    return out


SCANS = _scan_all()
IMPORTS = [imp for scan, _ in SCANS.values() for imp in scan.imports]


def _strongly_connected(nodes: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm (iterative); the components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_graph_sees_the_package():
    assert {"rankci", "rankci._base", "rankci.ranking", "rankci.sequential.monitor"} <= set(FILES)
    assert {"rankci", "rankci.mixed", "rankci.sequential"} <= PACKAGES
    assert any(imp.target == "rankci.ranking" for imp in IMPORTS)
    assert any(imp.lazy for imp in IMPORTS)  # function-level imports are seen


def test_top_level_package_is_lazy():
    """``rankci/__init__.py`` loads only ``rankci._version`` at run time (PEP 562 for the rest)."""
    targets = {imp.target for imp in IMPORTS if imp.source == ROOT}
    assert targets <= {"rankci._version"}, sorted(targets)


def test_no_import_cycle():
    edges: dict[str, set[str]] = {}
    for imp in IMPORTS:
        edges.setdefault(imp.source, set()).add(imp.target)
    cycles = _strongly_connected(sorted(FILES), edges)
    if cycles:
        lines = []
        for members in cycles:
            inside = set(members)
            lines.append(f"cycle among {', '.join(members)}:")
            lines += {
                "  " + imp.where(FILES): None
                for imp in IMPORTS
                if imp.source in inside and imp.target in inside
            }
        pytest.fail(
            "import cycles (imports inside functions count: a lazy back-import only hides a "
            "cycle; move what both sides need so the dependency goes one way):\n" + "\n".join(lines)
        )


def test_no_private_name_crosses_a_module():
    problems = [msg for scan, attrs in SCANS.values() for msg in (*scan.private_names, *attrs)]
    assert not problems, "private names used outside their module:\n" + "\n".join(problems)


def test_private_modules_stay_in_their_package():
    problems: dict[str, None] = {}
    for imp in IMPORTS:
        if imp.implicit:
            continue
        parts = imp.target.split(".")
        for i, part in enumerate(parts[1:], start=1):
            if not _private(part):
                continue
            owner = ".".join(parts[:i])  # the package that contains the private module
            if not (imp.source == owner or imp.source.startswith(owner + ".")):
                problems[imp.where(FILES) + f" ({'.'.join(parts[: i + 1])} is private)"] = None
            break
    assert not problems, "private modules imported from outside their package:\n" + "\n".join(
        problems
    )


# ---- the checker itself, on small made-up modules ----------------------------------------------


def _scan_text(module: str, text: str) -> tuple[_Scan, list[str]]:
    visitor = _Visitor(module, text)
    visitor.visit(ast.parse(text))
    return visitor.scan, visitor.private_attributes()


def test_checker_resolves_submodules_type_checking_and_private_names():
    scan, attrs = _scan_text(
        "rankci.mixed.model",
        "from typing import TYPE_CHECKING\n"
        "from rankci.mixed import reml\n"
        "from rankci.evidence import bootstrap as boot\n"
        "from . import numeric\n"
        "from ..ranking import Ranking\n"
        "if TYPE_CHECKING:\n"
        "    from rankci.leaderboard import rank\n"
        "def f():\n"
        "    from rankci.data import Scores, _helper\n"
        "    return boot._chunk_rows, reml.public\n",
    )
    got = {(imp.target, imp.lazy, imp.implicit) for imp in scan.imports}
    assert got == {
        ("rankci.mixed.reml", False, False),
        ("rankci.evidence.bootstrap", False, False),
        ("rankci.evidence", False, True),
        ("rankci.mixed.numeric", False, False),
        ("rankci.ranking", False, False),
        ("rankci.data", True, False),
    }
    assert len(scan.private_names) == 1 and "'_helper'" in scan.private_names[0]
    assert len(attrs) == 1 and "_chunk_rows" in attrs[0]


def test_checker_finds_a_cycle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _strongly_connected(["a", "b", "c", "d"], edges) == [["a", "b", "c"]]
