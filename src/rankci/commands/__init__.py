"""Subcommands of ``rankci``; each module has NAME, HELP, add_arguments(parser) and run(args)."""

from rankci.commands import (
    benchmarks,
    check,
    demo,
    monitor,
    omnibus,
    plan,
    rank,
    report,
    scores,
    serve,
    taubest,
)

COMMANDS = [
    rank,
    taubest,
    scores,
    plan,
    omnibus,
    benchmarks,
    check,
    monitor,
    report,
    serve,
    demo,
]
