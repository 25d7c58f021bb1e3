"""Subcommands of ``rankci``; each module has NAME, HELP, add_arguments(parser) and run(args)."""

from . import demo, rank, taubest

COMMANDS = [rank, taubest, demo]
