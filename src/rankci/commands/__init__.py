"""Subcommands of ``rankci``; each module has NAME, HELP, add_arguments(parser) and run(args)."""

from . import benchmarks, demo, monitor, omnibus, plan, rank, report, scores

COMMANDS = [rank, scores, plan, omnibus, benchmarks, monitor, report, demo]
