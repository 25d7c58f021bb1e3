"""``rankci demo``: the main analysis on the bundled MMLU-Pro data."""

from __future__ import annotations

import argparse
import sys

from rankci.commands.tables import render_ranking

NAME = "demo"
HELP = "rank the 32 models of the bundled MMLU-Pro data (real per-question results)"


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
        default="rankci-report.html",
        metavar="FILE",
        help="also write the HTML report here (default: rankci-report.html)",
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
    if not args.no_report:
        from rankci.report import write_report

        path = write_report(
            scores,
            args.report,
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
