"""``rankci rank DATA``: rank intervals, tiers and top-k status from paired tests + Holm."""

from __future__ import annotations

import argparse

from rankci.commands.flags import add_alpha_argument, add_data_arguments, add_output_arguments
from rankci.commands.loading import load_data
from rankci.commands.output import emit
from rankci.commands.tables import render_clusters, render_ranking
from rankci.method import COVARIANCES, COVERAGES, MULTIPLICITIES, RESAMPLINGS, TESTS, UNITS

NAME = "rank"
HELP = "rank intervals, tiers and top-k status from paired tests (Holm or max-t step-down)"
OUTPUT_FORMATS = ("table", "json", "csv", "markdown")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_data_arguments(parser)
    add_method_arguments(parser)
    add_output_arguments(parser, OUTPUT_FORMATS)


def add_method_arguments(parser: argparse.ArgumentParser) -> None:
    group = add_evidence_arguments(parser)
    group.add_argument(
        "--coverage",
        default="simultaneous",
        choices=COVERAGES,
        help="simultaneous (all statements at once) or marginal (one model at a time)",
    )
    group.add_argument(
        "--by-cluster",
        action="store_true",
        help="rank intervals within each cluster (unit item or prompt)",
    )
    group.add_argument(
        "--filter-uninformative",
        action="store_true",
        help="drop clusters where nearly all models reach the top ranks, "
        "splitting alpha 0.3/0.7 between the screen and the ranking",
    )
    group.add_argument(
        "--alpha-split",
        type=float,
        nargs=2,
        default=(0.3, 0.7),
        metavar=("FILTER", "RANK"),
        help="alpha fractions for the screen and the ranking",
    )
    group.add_argument("--top-k", type=int, metavar="K", help="also report top-K status")
    parser.add_argument(
        "--pairs",
        action="store_true",
        help="json: the certified relation as the full list of [better, worse] pairs instead of "
        "the compact per-model runs (docs/json.md); large on big boards",
    )


def add_evidence_arguments(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """Options that say how the pairwise evidence is obtained (shared with ``taubest``)."""
    group = parser.add_argument_group("method")
    group.add_argument(
        "--unit",
        default="item",
        choices=UNITS,
        help="unit of analysis: what the inference extends to (default: item)",
    )
    group.add_argument("--test", default="t", choices=TESTS, help="paired test (default: t)")
    add_alpha_argument(group)
    group.add_argument(
        "--delta",
        type=float,
        default=0.0,
        help="indifference margin: certify only differences larger than this",
    )
    group.add_argument(
        "--missing",
        default="complete",
        choices=("complete", "pairwise"),
        help="items scored by every model (default) or pair by pair",
    )
    group.add_argument(
        "--multiplicity",
        default="holm",
        choices=MULTIPLICITIES,
        help="holm (default; valid under any dependence), bonferroni, or max-t "
        "(Romano-Wolf step-down with critical values from the joint law of the "
        "statistics: tighter, asymptotic; test t only)",
    )
    group.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed for the bootstrap and permutation tests and the max-t draws (default 0; "
        "recorded in the output)",
    )
    group.add_argument(
        "--reps",
        type=int,
        help="resamples (bootstrap, permutation); default 9999, or more where the board needs "
        "them to reach Holm's first threshold",
    )
    group.add_argument("--trim", type=float, default=0.2, help="trimming proportion for yuen")
    group.add_argument(
        "--exact-bound-n",
        type=int,
        default=30,
        metavar="N",
        help="t and z with scores in [0, 1]: a pair with at most N units is never given a "
        "p-value below Hoeffding's exact bound, which holds for every score distribution "
        "(default 30; 0 gives the plain asymptotic tests)",
    )
    maxt = parser.add_argument_group("max-t (with --multiplicity max-t)")
    maxt.add_argument(
        "--draws", type=int, default=1000, help="draws for the max-t critical values (default 1000)"
    )
    maxt.add_argument(
        "--resampling",
        default="gaussian",
        choices=RESAMPLINGS,
        help="gaussian: N(0, Sigma) multiplier draws (default); bootstrap: resample "
        "items (or clusters)",
    )
    maxt.add_argument(
        "--covariance",
        default="independent",
        choices=COVARIANCES,
        help="covariance of the model means: independent units (default) or "
        "cluster-robust over the cluster column",
    )
    maxt.add_argument(
        "--single-step",
        action="store_true",
        help="one critical value for all pairs instead of the step-down",
    )
    return group


def test_options(args: argparse.Namespace) -> dict:
    if args.multiplicity == "max-t":
        return {
            "draws": args.draws,
            "resampling": args.resampling,
            "covariance": args.covariance,
            "stepdown": not args.single_step,
        }
    if args.test in ("bootstrap", "permutation"):
        return {} if args.reps is None else {"reps": args.reps}
    if args.test == "yuen":
        return {"trim": args.trim}
    if args.test in ("t", "z") and args.exact_bound_n != 30:
        return {"exact_bound_n": args.exact_bound_n}
    return {}


def method_options(args: argparse.Namespace) -> dict:
    """Keyword arguments of :func:`rankci.rank` from the method options."""
    return dict(
        unit=args.unit,
        test=args.test,
        coverage=args.coverage,
        alpha=args.alpha,
        delta=args.delta,
        missing=args.missing,
        multiplicity=args.multiplicity,
        rng=args.seed,
        **test_options(args),
    )


def run(args: argparse.Namespace) -> int:
    from rankci.leaderboard import rank, rank_by_cluster

    scores = load_data(args)
    common = method_options(args)
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
