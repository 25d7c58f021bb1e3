"""Subcommands of ``rankci``; each module has NAME, HELP, add_arguments(parser) and run(args)."""

from . import demo, monitor, omnibus, plan, rank, report, scores, taubest

COMMANDS = [rank, taubest, scores, plan, omnibus, monitor, report, demo]
