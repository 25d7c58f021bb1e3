"""``rankci rank DATA --votes``: DATA is a vote table; a Bradley-Terry board through max-t / Holm.

Not a command of its own (no ``NAME``): ``rankci rank`` adds these flags and hands over when
``--votes`` is given. The vote file is read by :func:`load_votes` (through
:func:`rankci.votes.read_votes`, every layout it knows); ``rankci rank`` also hands over
without ``--votes`` when DATA is recognised as a vote table.
"""

from __future__ import annotations

import argparse

TIES = ("half", "davidson", "rao-kupper")
COVARIANCES = ("auto", "model", "sandwich", "cluster", "bootstrap")


def add_vote_arguments(
    parser: argparse.ArgumentParser, board: bool = True, probes: bool = True
) -> None:
    """The flags of a vote table (used with ``--votes``); ``board=False`` (``rankci check``)
    leaves out what only a drawn board uses (--probes, --elo-anchor, --elo-rating);
    ``probes=False`` (``rankci report``, which draws the probes unless --no-probes) --probes."""
    group = parser.add_argument_group("votes (DATA a table of pairwise votes, with --votes)")
    group.add_argument(
        "--votes",
        action="store_true",
        help="DATA is a vote table: columns model_a, model_b, winner (model_a / model_b / tie / "
        "tie (bothbad)), optional prompt, voter, position and numeric covariates; --cluster-col "
        "names the cluster column of the clustered covariance (default: prompt, else voter; "
        "'none' for none)",
    )
    for role in ("model-a", "model-b", "winner"):
        group.add_argument(
            f"--{role}-col",
            help=f"battles: the {role.replace('-', '_')} column "
            f"(default: {role.replace('-', '_')})",
        )
    group.add_argument(
        "--ties",
        default="half",
        choices=TIES,
        help="tie convention: half a win to each side (LMArena), Davidson or Rao-Kupper",
    )
    group.add_argument(
        "--position",
        action="store_true",
        help="fit a first-position effect (column position, else model_a first)",
    )
    group.add_argument(
        "--covariates",
        nargs="+",
        default=[],
        metavar="NAME",
        help="style control: NAME_a / NAME_b columns (normalised differences) or a NAME column",
    )
    group.add_argument(
        "--vote-covariance",
        default="auto",
        choices=COVARIANCES,
        help="covariance of the strengths (auto: clustered by the cluster column, else "
        "sandwich; --covariance is max-t's for scores)",
    )
    group.add_argument(
        "--bootstrap-reps",
        type=int,
        default=200,
        metavar="N",
        help="re-fits of --covariance bootstrap",
    )
    if not board:
        return
    if probes:
        group.add_argument(
            "--probes",
            action="store_true",
            help="also run the probes (connectivity, separation, position, "
            "intransitivity, voters, votes needed), each with its test and threshold",
        )
    group.add_argument(
        "--elo-anchor", metavar="MODEL", help="the model whose Elo display is --elo-rating"
    )
    group.add_argument(
        "--elo-rating",
        type=float,
        default=1000.0,
        metavar="R",
        help="Elo display of the anchor (default 1000; the mean without --elo-anchor)",
    )


def load_votes(args: argparse.Namespace, layout: str = "auto"):
    """DATA -> :class:`rankci.votes.Votes` through :func:`rankci.votes.read_votes` (every layout it
    knows, ``layout`` as found or forced with ``--layout``), with its reading summary on stderr."""
    import sys

    from rankci.votes.read import read_votes, reading_summary

    votes = read_votes(
        args.data,
        layout=layout,
        format=args.input_format,
        model_a=args.model_a_col,
        model_b=args.model_b_col,
        winner=args.winner_col,
    )
    print(f"rankci: {reading_summary(votes)}", file=sys.stderr)
    return votes


def vote_layout_of(args: argparse.Namespace, layout: str = "auto") -> str:
    """The vote layout to read: as detected, or as ``--layout`` names it."""
    if layout == "auto" and args.layout not in ("auto", "long", "wide"):
        return args.layout  # --layout names a vote layout
    return layout


def vote_cluster(args: argparse.Namespace) -> str | None:
    """``--cluster-col`` for the clustered covariance (``auto``: prompt, else voter; ``none``)."""
    cluster = getattr(args, "cluster_col", None) or "auto"
    return None if cluster.lower() == "none" else cluster


def vote_ranking(args: argparse.Namespace, layout: str = "auto"):
    """DATA read as votes and ranked as the flags say: ``(votes, ranking)`` (``rankci rank`` and
    ``rankci report``)."""
    from rankci.votes import rank_votes

    if args.multiplicity not in ("max-t", "holm"):
        raise ValueError(
            f"--multiplicity {args.multiplicity} is not offered for votes; use max-t or holm"
        )
    votes = load_votes(args, vote_layout_of(args, layout))
    cluster = vote_cluster(args)
    ranking = rank_votes(
        votes,
        alpha=args.alpha,
        multiplicity=args.multiplicity,
        coverage=args.coverage,
        delta=args.delta,
        ties=args.ties,
        position=args.position,
        covariates=args.covariates,
        covariance=args.vote_covariance,
        cluster=cluster,
        bootstrap_reps=args.bootstrap_reps,
        draws=getattr(args, "draws", None) or 1000,
        seed=args.seed,
        elo_anchor=args.elo_anchor,
        elo_rating=args.elo_rating,
    )
    return votes, ranking


def run_votes(args: argparse.Namespace, layout: str = "auto") -> int:
    """``rankci rank`` on a vote table: the Bradley-Terry board (``layout``: as detected)."""
    from rankci.commands.output import emit, ranking_json, target_sentence, with_target
    from rankci.commands.tables import display_frame, markdown_table, text_table

    votes, ranking = vote_ranking(args, layout)
    probes = None
    if args.probes:
        from rankci.votes.probes import probe_votes

        probes = probe_votes(votes, ranking=ranking, alpha=args.alpha, rng=ranking.spec.seed)
    if args.format == "json":
        payload = with_target(ranking.to_dict(args.top_k, pairs=args.pairs), "vote")
        if probes is not None:
            payload["probes"] = probes
        emit(ranking_json(payload), args)
        return 0
    if args.format == "csv":
        emit(ranking.to_frame(args.top_k).to_csv(index=False), args)
        return 0
    spec = ranking.spec
    head = (
        f"{ranking.n_models} models, {ranking.n_units} votes; Bradley-Terry ({spec.ties} ties), "
        f"{spec.covariance} covariance"
        + (f" by {spec.cluster}" if spec.cluster else "")
        + f", {spec.multiplicity}, {ranking.coverage} coverage, alpha = {ranking.alpha:g}"
    )
    lines = [head]
    frame = display_frame(ranking, args.top_k).rename(columns={"rank_ub": "Rank (UB)"})
    for name, c in ranking.details.get("coefficients", {}).items():
        lines.append(
            f"{name}: {c['estimate']:+.4f} log-odds [{c['lower']:+.4f}, {c['upper']:+.4f}]"
        )
    note = (
        "Rank (UB) is LMArena's overlap rule (1 + models whose marginal 95% interval lies wholly "
        "above); it carries no joint guarantee. The rank interval does."
    )
    table = markdown_table(frame) if args.format == "markdown" else text_table(frame)
    probe_lines = []
    if probes is not None:
        probe_lines = ["", "probes (flagged when the threshold is crossed):"] + [
            f"  {name}: {'FLAGGED' if p['flagged'] else 'ok'} - {p['message']} "
            f"[{p['test']}; threshold: {p['threshold']}]"
            for name, p in probes.items()
            if isinstance(p, dict)
        ]
    aim = target_sentence("vote")
    emit("\n".join([*lines, "", table, "", ranking.guarantee, aim, note, *probe_lines]), args)
    return 0
