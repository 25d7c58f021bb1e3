"""``rankci report DATA -o report.html``: a self-contained HTML leaderboard report."""

from __future__ import annotations

import argparse
import sys

from ..cli import add_data_arguments, load_data
from ..report import write_report
from .rank import add_method_arguments, method_options

NAME = "report"
HELP = "write a self-contained HTML report: leaderboard, rank intervals, tiers, plots, method"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_data_arguments(parser)
    add_method_arguments(parser)
    parser.add_argument(
        "-o",
        "--output",
        default="rankci-report.html",
        metavar="FILE",
        help="where to write the report (default: rankci-report.html)",
    )
    parser.add_argument("--title", default="Leaderboard with rank intervals")
    parser.add_argument(
        "--no-clusters", action="store_true", help="leave out the per-cluster rank intervals"
    )


def run(args: argparse.Namespace) -> int:
    scores = load_data(args)
    path = write_report(
        scores,
        args.output,
        title=args.title,
        k=args.top_k,
        by_cluster=not args.no_clusters and not args.by_cluster,
        filter_uninformative=args.filter_uninformative,
        alpha_split=tuple(args.alpha_split),
        **method_options(args),
    )
    print(f"report written to {path}", file=sys.stderr)
    return 0
