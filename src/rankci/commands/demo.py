"""``rankci demo``: the main analysis on the bundled MMLU-Pro data."""

from __future__ import annotations

import argparse
import sys

from rankci.commands.tables import render_ranking

NAME = "demo"
HELP = "rank the 32 models of the bundled MMLU-Pro data (real per-question results)"
DEFAULT_REPORT = "rankci-report.html"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dataset",
        default="mmlu-pro",
        choices=("mmlu-pro", "chembench"),
        help="bundled dataset (default: mmlu-pro)",
    )
    parser.add_argument("--format", default="table", choices=("table", "json", "markdown", "csv"))
    parser.add_argument(
        "--report",
        metavar="FILE",
        help=f"also write the HTML report here (default: {DEFAULT_REPORT}, left out with a note "
        "when the current folder is not writable)",
    )
    parser.add_argument("--no-report", action="store_true", help="do not write the HTML report")


def run(args: argparse.Namespace) -> int:
    from rankci import datasets
    from rankci.leaderboard import rank

    load = datasets.load_mmlu_pro if args.dataset == "mmlu-pro" else datasets.load_chembench
    from rankci.commands.loading import reading_summary

    scores = load()
    print(f"rankci: {reading_summary(scores, 'the bundled ' + args.dataset)}", file=sys.stderr)
    ranking = rank(scores)
    source = (
        "MMLU-Pro (TIGER-AI-Lab, Apache-2.0)"
        if args.dataset == "mmlu-pro"
        else ("ChemBench (lamalab-org, MIT)")
    )
    if args.format == "table":
        print(f"rankci demo: {source}, {scores!r}\n")
    print(render_ranking(ranking, args.format))
    report = _report_path(args)
    if report is not None:
        from rankci.report import write_report

        path = write_report(
            scores,
            report,
            ranking=ranking,
            title=f"{source}: leaderboard with rank intervals",
            k=3,
            monitor={"retire": "topk", "k": 3, "look_every": "1%"},
        )
        print(
            f"\nHTML report: {path.resolve()}",
            file=sys.stderr if args.format != "table" else sys.stdout,
        )
    return 0


def _report_path(args: argparse.Namespace) -> str | None:
    """Where the report goes: ``--report FILE`` (checked before any work, like every output),
    else the default in the current folder; None with ``--no-report``, or, said on stderr, when
    the current folder cannot be written (the demo's ranking needs no file)."""
    if args.no_report:
        return None
    if args.report is not None:
        return args.report
    import os

    folder = os.getcwd()
    if os.access(folder, os.W_OK) and not (
        os.path.exists(DEFAULT_REPORT) and not os.access(DEFAULT_REPORT, os.W_OK)
    ):
        return DEFAULT_REPORT
    print(
        f"rankci: the HTML report was not written: the current folder ({folder}) is not "
        "writable; pass --report FILE to write it elsewhere, or --no-report",
        file=sys.stderr,
    )
    return None
