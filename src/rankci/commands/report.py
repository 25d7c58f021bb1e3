"""``rankci report DATA -o report.html``: a self-contained HTML leaderboard report."""

from __future__ import annotations

import argparse
import sys

from rankci.commands.flags import add_data_arguments
from rankci.commands.loading import VoteTableError, load_data
from rankci.commands.method_flags import add_method_arguments, method_options
from rankci.commands.votes_rank import add_vote_arguments

NAME = "report"
TITLE = "Leaderboard with rank intervals"
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
    parser.add_argument("--title", default=TITLE)
    parser.add_argument(
        "--no-clusters", action="store_true", help="leave out the per-cluster rank intervals"
    )
    parser.add_argument(
        "--score-method",
        default="auto",
        choices=("auto", "bootstrap", "bca", "normal", "cluster", "cluster-bootstrap",
                 "cluster-wild", "wilson", "clopper-pearson", "none"),
        help="score intervals in the table (default: auto, as rankci scores: clopper-pearson "
        "when every score is 0 or 1, else the percentile bootstrap seeded by --seed)",
    )
    parser.add_argument(
        "--monitor",
        action="store_true",
        help="add the anytime-valid monitor: replay the items in a random order (--order-seed), "
        "retiring models by --retire (default topk with k = --top-k or 3)",
    )
    parser.add_argument("--order-seed", type=int, default=0, help="item order of the replay")
    parser.add_argument(
        "--retire",
        default="topk",
        help="retirement rule of the monitor replay (none, topk, topk-safe, ...)",
    )
    parser.add_argument("--look-every", default="1%", help="items between looks, or P%%")
    parser.add_argument(
        "--no-omnibus",
        action="store_true",
        help="leave out the omnibus tests and variance components",
    )
    add_vote_arguments(parser, probes=False)
    parser.add_argument(
        "--no-probes",
        action="store_true",
        help="votes: leave out the probes (connectivity, separation, position, intransitivity, "
        "voters, votes needed), which the arena board draws by default",
    )


def run(args: argparse.Namespace) -> int:
    from rankci.report import write_report

    monitor = _monitor_options(args)  # a bad monitor flag fails before the data are read
    if args.votes:
        return run_arena(args)
    try:
        scores = load_data(args)
    except VoteTableError as found:  # recognised as votes, as rankci rank recognises them
        return run_arena(args, found.layout)
    path = write_report(
        scores,
        args.output,
        title=args.title,
        k=args.top_k,
        by_cluster=not args.no_clusters and not args.by_cluster,
        score_intervals=None if args.score_method == "none" else args.score_method,
        omnibus=not args.no_omnibus,
        monitor=monitor,
        filter_uninformative=args.filter_uninformative,
        alpha_split=tuple(args.alpha_split),
        **{**method_options(args), "rng": 0 if args.seed is None else args.seed},
    )
    print(f"report written to {path}", file=sys.stderr)
    return 0


def run_arena(args: argparse.Namespace, layout: str = "auto") -> int:
    """The arena board of a vote table (rankci.report.arena): the vote ranking of ``rankci rank``
    with the same flags, the probes unless --no-probes."""
    from rankci.commands.votes_rank import vote_ranking
    from rankci.report.arena import write_arena_report

    if args.monitor:
        raise ValueError(
            "--monitor replays scores item by item; for votes use rankci monitor's arena "
            "(docs/arena-monitor.md)"
        )
    votes, ranking = vote_ranking(args, layout)
    probes = None
    if not args.no_probes:
        from rankci.votes.probes import probe_votes

        probes = probe_votes(votes, ranking=ranking, alpha=args.alpha, rng=ranking.spec.seed)
    title = args.title
    if title == TITLE:
        title = "Arena board with rank intervals"
    path = write_arena_report(ranking, args.output, votes=votes, probes=probes, title=title,
                              k=args.top_k)
    print(f"report written to {path}", file=sys.stderr)
    return 0


def _monitor_options(args: argparse.Namespace) -> dict | None:
    """The replay's settings, checked now in the words of the flags (``--look-every``,
    ``--retire``), so that a bad value is an error before any work, not a note in the page."""
    if not args.monitor:
        return None
    from rankci.commands.monitor import parse_retire
    from rankci.sequential.spec import MonitorSpec

    rule, width = parse_retire(args.retire)
    values = {"look_every": args.look_every, "retire": rule, "width": width}
    if rule != "none":
        values["k"] = args.top_k or 3
    spec = MonitorSpec.from_flags(values)
    options = {"order_seed": args.order_seed, "look_every": spec.look_every, "retire": rule}
    if width:
        options["width"] = width
    if rule != "none":
        options["k"] = spec.k
    return options
