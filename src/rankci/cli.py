"""The ``rankci`` command: the parser and ``main``; the subcommands are in :mod:`rankci.commands`.

Every subcommand module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args)``
returning an exit status; bad input ends with ``rankci: error: ...`` and status 2. What they
share is in :mod:`rankci.commands.flags`, ``loading``, ``messages``, ``output`` and ``tables``.
Nothing here, nor in building the parser, imports numpy or pandas: each command imports what it
needs when it runs.
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings
from collections.abc import Sequence

__all__ = ["main", "build_parser"]


#: what argparse must read as a (negative) number, not as a flag: -1, -.5, -1e3, -inf, -infinity
_NEGATIVE_NUMBER = re.compile(
    r"^-(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|[iI][nN][fF]([iI][nN][iI][tT][yY])?)$"
)


class _Parser(argparse.ArgumentParser):
    """argparse, reading ``-inf`` and ``-1e3`` as values (``--bounds -inf inf``), not as flags.

    argparse's own test for a negative number knows only ``-1`` and ``-1.5``; every subcommand's
    parser is of this class too (``add_subparsers`` makes its children of the parent's class).
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_NUMBER


def build_parser() -> argparse.ArgumentParser:
    from rankci._version import __version__
    from rankci.commands import COMMANDS

    parser = _Parser(
        prog="rankci",
        description="How much of a model leaderboard do your data support? Rank intervals, "
        "top-k sets and tiers with stated guarantees.",
    )
    parser.add_argument("--version", action="version", version=f"rankci {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for command in COMMANDS:
        child = sub.add_parser(command.NAME, help=command.HELP, description=command.HELP)
        command.add_arguments(child)
        child.set_defaults(run=command.run)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    from rankci.commands.messages import cli_message

    print(f"rankci: warning: {cli_message(str(message))}", file=sys.stderr)


def _os_message(error: OSError) -> str:
    """``[Errno 2] No such file or directory: 'x'`` -> ``No such file or directory: 'x'``."""
    if error.strerror and error.filename is not None:
        return f"{error.strerror}: {str(error.filename)!r}"
    return str(error)


def main(argv: Sequence[str] | None = None) -> int:
    from rankci.commands.messages import cli_message
    from rankci.commands.output import check_output_paths

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        check_output_paths(args)  # before any work: a bad -o fails now, not after the analysis
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning  # one line per warning, no source excerpt
            return int(args.run(args) or 0)
    except BrokenPipeError:  # e.g. `rankci rank ... | head`
        return 0
    except ValueError as error:
        print(f"rankci: error: {cli_message(str(error), args)}", file=sys.stderr)
        return 2
    except OSError as error:  # a missing DATA file, an unreadable or unwritable path
        print(f"rankci: error: {_os_message(error)}", file=sys.stderr)
        return 2
