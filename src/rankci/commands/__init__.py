"""Subcommands of ``rankci``; each module has NAME, HELP, add_arguments(parser) and run(args)."""

from . import benchmarks, demo, rank, report

COMMANDS = [rank, benchmarks, report, demo]
