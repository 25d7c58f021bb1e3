"""``rankci rank DATA``: rank intervals, tiers and top-k status from paired tests + Holm."""

from __future__ import annotations

import argparse

from rankci.commands.flags import add_data_arguments, add_output_arguments
from rankci.commands.loading import load_data
from rankci.commands.method_flags import add_method_arguments, method_options
from rankci.commands.output import emit
from rankci.commands.tables import render_clusters, render_ranking
from rankci.commands.votes_rank import add_vote_arguments, run_votes

NAME = "rank"
HELP = "rank intervals, tiers and top-k status from paired tests (Holm or max-t step-down)"
OUTPUT_FORMATS = ("table", "json", "csv", "markdown")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_data_arguments(parser)
    add_method_arguments(parser)
    add_vote_arguments(parser)
    add_output_arguments(parser, OUTPUT_FORMATS)


def run(args: argparse.Namespace) -> int:
    from rankci.leaderboard import rank, rank_by_cluster

    if args.votes:  # DATA is a vote table: the Bradley-Terry board
        return run_votes(args)
    common = method_options(args)  # a bad option fails before the data are read
    scores = load_data(args)
    if args.by_cluster:
        result = rank_by_cluster(scores, **common)
        emit(render_clusters(result, args.format, args.top_k, pairs=args.pairs), args)
    else:
        result = rank(
            scores,
            filter_uninformative=args.filter_uninformative,
            alpha_split=tuple(args.alpha_split),
            **common,
        )
        emit(render_ranking(result, args.format, args.top_k, pairs=args.pairs), args)
    return 0
