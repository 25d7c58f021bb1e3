"""``rankci rank DATA``: rank intervals, tiers and top-k status from paired tests + Holm."""

from __future__ import annotations

import argparse

from rankci.commands.fdr_table import (
    add_qvalue_argument,
    check_qvalue_flags,
    render_with_qvalues,
)
from rankci.commands.flags import add_data_arguments, add_output_arguments
from rankci.commands.loading import VoteTableError, load_data
from rankci.commands.method_flags import add_method_arguments, method_options
from rankci.commands.output import emit
from rankci.commands.ppi_flags import add_ppi_arguments, ppi_requested, run_rank
from rankci.commands.tables import render_clusters, render_ranking
from rankci.commands.votes_rank import add_vote_arguments, run_votes

NAME = "rank"
HELP = "rank intervals, tiers and top-k status from paired tests (Holm or max-t step-down)"
OUTPUT_FORMATS = ("table", "json", "csv", "markdown")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_data_arguments(parser)
    add_method_arguments(parser)
    add_qvalue_argument(parser)
    add_vote_arguments(parser)
    add_ppi_arguments(parser, per_pair=True)
    add_output_arguments(parser, OUTPUT_FORMATS)


def run(args: argparse.Namespace) -> int:
    from rankci.leaderboard import rank, rank_by_cluster

    if args.by_cluster and args.unit == "cluster":
        raise ValueError(
            "--by-cluster ranks within each cluster, so one cluster cannot be the unit: drop "
            "--unit cluster to rank within each cluster on its items (or use --unit prompt), or "
            "drop --by-cluster to rank over all clusters with the clusters as units"
        )
    if args.votes:  # DATA is a vote table: the Bradley-Terry board
        return run_votes(args)
    if ppi_requested(args):  # judge scores corrected by human labels
        return run_rank(args)
    common = method_options(args)  # a bad option fails before the data are read
    check_qvalue_flags(args)
    try:
        scores = load_data(args)
    except VoteTableError as found:  # recognised as votes, as a wide or long table is recognised
        return run_votes(args, layout=found.layout)
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
        if args.q_values is None:
            emit(render_ranking(result, args.format, args.top_k, pairs=args.pairs), args)
        else:  # the FWER output unchanged, then the FDR table, each column labelled
            text = render_with_qvalues(
                result, scores, args.q_values, args.format, args.top_k, args.pairs
            )
            emit(text, args)
    return 0
