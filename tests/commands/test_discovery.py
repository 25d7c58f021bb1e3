"""Commands are found, not listed: every module of rankci.commands that defines NAME is one."""

from __future__ import annotations

import ast
from pathlib import Path

import rankci.commands
from rankci.cli import build_parser
from rankci.commands import FIRST, discover

PACKAGE = Path(rankci.commands.__file__).parent


def _defines_name(path: Path) -> str | None:
    """The NAME a module assigns at its top level, read from its source (no import)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "NAME" for t in node.targets
        ):
            return ast.literal_eval(node.value)
    return None


def test_every_module_with_a_name_is_a_command_and_no_other():
    expected = {
        name
        for path in PACKAGE.glob("*.py")
        if not path.name.startswith("_") and (name := _defines_name(path)) is not None
    }
    assert {command.NAME for command in discover()} == expected
    assert "tables" not in expected and "flags" not in expected  # the shared helpers
    for command in discover():
        assert callable(command.add_arguments) and callable(command.run) and command.HELP


def test_help_lists_the_known_commands_first_in_their_order():
    names = [command.NAME for command in discover()]
    known = [name for name in FIRST if name in names]
    assert names[: len(known)] == known
    assert names[len(known) :] == sorted(names[len(known) :])
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert list(sub.choices) == names


def test_commands_is_the_discovered_list():
    assert [c.NAME for c in rankci.commands.COMMANDS] == [c.NAME for c in discover()]
