"""Subcommands of ``rankci``; each module has NAME, HELP, add_arguments(parser) and run(args)."""

from . import benchmarks, demo, plan, rank, report, scores

COMMANDS = [rank, scores, plan, benchmarks, report, demo]
