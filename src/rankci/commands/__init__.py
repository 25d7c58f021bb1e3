"""Subcommands of ``rankci``; each module has NAME, HELP, add_arguments(parser) and run(args)."""

from . import demo, omnibus, rank

COMMANDS = [rank, omnibus, demo]
