"""``rankci demo``: the main analysis on the bundled MMLU-Pro data."""

from __future__ import annotations

import argparse

from .. import datasets
from ..leaderboard import rank
from .rank import render_ranking

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


def run(args: argparse.Namespace) -> int:
    load = datasets.load_mmlu_pro if args.dataset == "mmlu-pro" else datasets.load_chembench
    scores = load()
    ranking = rank(scores)
    source = (
        "MMLU-Pro (TIGER-AI-Lab, Apache-2.0)"
        if args.dataset == "mmlu-pro"
        else ("ChemBench (lamalab-org, MIT)")
    )
    if args.format == "table":
        print(f"rankci demo: {source}, {scores!r}\n")
    print(render_ranking(ranking, args.format))
    return 0
