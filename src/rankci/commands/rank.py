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
    group = parser.add_argument_group("out of core (rankci.outofcore, docs/outofcore.md)")
    group.add_argument(
        "--out-of-core",
        action="store_true",
        help="reduce DATA, a Parquet file or directory (one score per model per item, every "
        "item in one file), file by file to sufficient statistics: memory is one file, not the "
        "table. Automatic when DATA is a directory holding only .parquet files",
    )
    group.add_argument(
        "--dask",
        metavar="SCHEDULER",
        help="the out-of-core reduction on a Dask cluster: a scheduler address, or 'local' for "
        "a LocalCluster (needs pip install 'rankci[dask]'); implies --out-of-core",
    )


def parquet_directory(path: str) -> bool:
    """Whether ``path`` is a directory whose files are all ``.parquet`` (at least one)."""
    import os

    if not os.path.isdir(path):
        return False
    files = [
        name
        for root, _, names in os.walk(path)
        for name in names
        if not name.startswith((".", "_"))
    ]
    return bool(files) and all(name.endswith(".parquet") for name in files)


def run_out_of_core(args: argparse.Namespace) -> int:
    from rankci.outofcore import rank_dataset

    common = method_options(args)
    options = {k: v for k, v in common.items() if k not in ("unit", "missing", "test")}
    extra = sorted(set(options) - {"coverage", "alpha", "delta", "multiplicity", "rng"})
    if extra:
        raise ValueError(f"--out-of-core takes no test option (got {extra[0]})")
    if args.test not in ("t", "z"):
        raise ValueError(
            f"the out-of-core path (a Parquet directory, --out-of-core, --dask) runs the paired "
            f"t or z: pass --test t (or --test z), not --test {args.test} (auto's exact sign test "
            "on 0/1 items is in memory only: read a smaller table without --out-of-core)"
        )
    test = args.test
    columns = {
        name: value
        for name, value in (
            ("model", args.model_col),
            ("item", args.item_col),
            ("score", args.score_col),
        )
        if value
    }
    result = rank_dataset(
        args.data,
        test=test,
        unit=common["unit"],
        missing=common["missing"],
        dask=args.dask,
        **options,
        **columns,
    )
    emit(render_ranking(result, args.format, args.top_k, pairs=args.pairs), args)
    return 0


def run(args: argparse.Namespace) -> int:
    from rankci.leaderboard import rank, rank_by_cluster

    if args.by_cluster and args.unit == "cluster":
        raise ValueError(
            "--by-cluster ranks within each cluster, so one cluster cannot be the unit: drop "
            "--unit cluster to rank within each cluster on its items (or use --unit prompt), or "
            "drop --by-cluster to rank over all clusters with the clusters as units"
        )
    if (
        args.out_of_core
        or args.dask
        or (isinstance(args.data, str) and parquet_directory(args.data))
    ):
        return run_out_of_core(args)
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
