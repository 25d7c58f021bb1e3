"""Subcommands of ``rankci``; each module has NAME, HELP, add_arguments(parser) and run(args)."""

from . import demo, omnibus, plan, rank, report, scores

COMMANDS = [rank, scores, plan, omnibus, report, demo]
