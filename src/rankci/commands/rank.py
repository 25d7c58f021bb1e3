"""``rankci rank DATA``: rank intervals, tiers and top-k status from paired tests + Holm."""

from __future__ import annotations

import argparse

from rankci.commands.fdr_table import (
    add_qvalue_argument,
    check_qvalue_flags,
    render_with_qvalues,
)
from rankci.commands.flags import add_data_arguments, add_output_arguments
from rankci.commands.loading import load_data
from rankci.commands.method_flags import add_method_arguments, method_options
from rankci.commands.output import emit
from rankci.commands.ppi_flags import add_ppi_arguments, ppi_requested, run_rank
from rankci.commands.tables import render_clusters, render_ranking

NAME = "rank"
HELP = "rank intervals, tiers and top-k status from paired tests (Holm or max-t step-down)"
OUTPUT_FORMATS = ("table", "json", "csv", "markdown")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_data_arguments(parser)
    add_method_arguments(parser)
    add_qvalue_argument(parser)
    add_ppi_arguments(parser, per_pair=True)
    add_output_arguments(parser, OUTPUT_FORMATS)


def run(args: argparse.Namespace) -> int:
    from rankci.leaderboard import rank, rank_by_cluster

    if ppi_requested(args):  # judge scores corrected by human labels
        return run_rank(args)
    common = method_options(args)  # a bad option fails before the data are read
    check_qvalue_flags(args)
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
        if args.q_values is None:
            emit(render_ranking(result, args.format, args.top_k, pairs=args.pairs), args)
        else:  # the FWER output unchanged, then the FDR table, each column labelled
            text = render_with_qvalues(
                result, scores, args.q_values, args.format, args.top_k, args.pairs
            )
            emit(text, args)
    return 0
