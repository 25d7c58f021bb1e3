"""Subcommands of ``rankci``: every module of this package that defines ``NAME`` is one.

A command module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args)``; the
modules without ``NAME`` hold what the commands share (:mod:`~rankci.commands.flags`,
:mod:`~rankci.commands.loading`, :mod:`~rankci.commands.messages`,
:mod:`~rankci.commands.output`, :mod:`~rankci.commands.tables`). :func:`discover` finds the
commands, so adding one is adding its module (and its line in README.md).

>>> [command.NAME for command in discover()][:3]
['rank', 'taubest', 'scores']
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

__all__ = ["COMMANDS", "FIRST", "discover"]

#: the order of ``rankci --help``: these first, any other command after them by name
FIRST = (
    "rank",
    "taubest",
    "scores",
    "plan",
    "omnibus",
    "benchmarks",
    "check",
    "monitor",
    "report",
    "serve",
    "demo",
)


def discover() -> list[ModuleType]:
    """The command modules of this package, in the order of ``rankci --help``.

    Importing them is cheap: each keeps numpy, pandas and the statistics inside ``run``.
    """
    modules = [
        importlib.import_module(f"{__name__}.{info.name}")
        for info in pkgutil.iter_modules(__path__)
        if not info.name.startswith("_")
    ]
    commands = [module for module in modules if hasattr(module, "NAME")]

    def position(module: ModuleType) -> tuple[int, str]:
        name = module.NAME
        return (FIRST.index(name) if name in FIRST else len(FIRST), name)

    return sorted(commands, key=position)


def __getattr__(name: str):
    if name == "COMMANDS":  # found on first use, then a plain attribute
        value = globals()["COMMANDS"] = discover()
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
